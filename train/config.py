"""The trainer's config: model shape presets and training settings, from YAML plus key=value
overrides (``train run --config FILE.yaml optim.lr=3e-4``)."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Literal, Optional

from c4forge.core.io import output_path
from c4forge.core.settings import (
    NON_NEGATIVE,
    OPEN_UNIT_INTERVAL,
    POSITIVE,
    POSITIVE_INT_OR_NULL,
    UNIT_INTERVAL,
    ConfigError,
    apply_settings,
    check_fields,
    load_yaml_mapping,
    merge_settings,
    parse_overrides,
    setting,
)
from c4forge.train.loggers import LoggingConfig

Kernel = Literal["auto", "torch", "triton"]  # "triton" fused kernels, "torch" reference


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A decoder-only LM: RMSNorm, rotary embeddings, SwiGLU MLP, no biases, tied embeddings.

    vocab_size: the tokenizer's; the embedding is padded to a multiple of 64 (pad_vocab_to).
    d_ff: SwiGLU hidden size; None = 8/3 * d_model rounded up to a multiple of 64.
    n_kv_heads: grouped-query attention; None = n_heads.
    attention: "sdpa" (exact masked SDPA, CPU and GPU), "flex" (FlexAttention document mask,
        GPU), "auto" (flex on CUDA when available, else sdpa).
    rmsnorm/rope/swiglu/cross_entropy: "torch" (reference), "triton" (fused kernels), "auto"
        (train.kernels.CUDA_DEFAULTS on CUDA when triton imports and the model is not compiled,
        else torch).
    encoder_layers/decoder_layers: the encoder-decoder's stacks (objectives span, denoise);
        None = n_layers each (T5's "2P parameters, M FLOPs" row).
    """

    vocab_size: int = setting(8000, POSITIVE)
    d_model: int = setting(128, POSITIVE)
    n_layers: int = setting(2, POSITIVE)
    n_heads: int = setting(4, POSITIVE)
    n_kv_heads: Optional[int] = setting(None, POSITIVE_INT_OR_NULL)
    d_ff: Optional[int] = setting(None, POSITIVE_INT_OR_NULL)
    max_seq_len: int = setting(256, POSITIVE)
    rope_theta: float = setting(10000.0, POSITIVE)
    norm_eps: float = setting(1e-5, POSITIVE)
    init_std: float = setting(0.02, NON_NEGATIVE)
    pad_vocab_to: int = setting(64, POSITIVE)
    attention: Literal["auto", "sdpa", "flex"] = "auto"
    rmsnorm: Kernel = "auto"
    rope: Kernel = "auto"
    swiglu: Kernel = "auto"
    cross_entropy: Kernel = "auto"
    ce_chunk_tokens: int = setting(4096, POSITIVE)
    encoder_layers: Optional[int] = setting(None, POSITIVE_INT_OR_NULL)
    decoder_layers: Optional[int] = setting(None, POSITIVE_INT_OR_NULL)

    @property
    def encoder_depth(self) -> int:
        return self.encoder_layers or self.n_layers

    @property
    def decoder_depth(self) -> int:
        return self.decoder_layers or self.n_layers

    @property
    def padded_vocab(self) -> int:
        m = self.pad_vocab_to
        return -(-self.vocab_size // m) * m

    @property
    def ffn_dim(self) -> int:
        if self.d_ff:
            return self.d_ff
        return -(-int(8 * self.d_model / 3) // 64) * 64

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


MODEL_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {"d_model": 128, "n_layers": 2, "n_heads": 4, "max_seq_len": 256},
    "small": {"d_model": 256, "n_layers": 4, "n_heads": 4, "max_seq_len": 512},
    "124M": {"d_model": 768, "n_layers": 12, "n_heads": 12, "max_seq_len": 1024},
    "350M": {"d_model": 1024, "n_layers": 24, "n_heads": 16, "max_seq_len": 1024},
    "760M": {"d_model": 1536, "n_layers": 24, "n_heads": 16, "max_seq_len": 1024},
}


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """train: a token directory (from `tokenizer encode`), or a weighted mixture of them
        (``a@0.8,b@0.2`` or a YAML list of {path, weight}; see train.data.mixture).
    validation: one token directory; *_split: the splits read.
    tokenizer: the tokenizer of a Megatron dataset given as train/validation (its path, as
        `tokenizer encode --tokenizer` takes it; c4forge token directories name their own).
    packing: "concat" (concatenate and chunk) or "best_fit" (whole documents, padded).
    batch_size: sequences per micro-batch per process; grad_accum: micro-batches per step.
    best_fit_chunk: documents packed together by best_fit (larger packs tighter; README).
    prefetch: batches a background thread assembles ahead (0: none)."""

    train: Any = ""
    train_split: str = "train"
    validation: str = ""
    validation_split: str = "validation"
    tokenizer: str = ""
    seq_len: int = setting(256, POSITIVE)
    batch_size: int = setting(8, POSITIVE)
    grad_accum: int = setting(1, POSITIVE)
    packing: Literal["concat", "best_fit"] = "concat"
    best_fit_chunk: int = setting(8192, POSITIVE)
    prefetch: int = setting(2, NON_NEGATIVE)


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """AdamW with linear warmup then cosine decay to min_lr_ratio * lr."""

    lr: float = setting(3e-3, POSITIVE)
    min_lr_ratio: float = setting(0.1, UNIT_INTERVAL)
    warmup_steps: int = setting(20, NON_NEGATIVE)
    weight_decay: float = setting(0.1, NON_NEGATIVE)
    beta1: float = setting(0.9, UNIT_INTERVAL)
    beta2: float = setting(0.95, UNIT_INTERVAL)
    eps: float = setting(1e-8, POSITIVE)
    grad_clip: float = setting(1.0, POSITIVE)


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """The objectives' settings (train.objectives), each at its paper's default.

    mlm_probability: share of tokens BERT selects (80% <mask>, 10% random, 10% kept).
    mlm_unit: "token" (BERT), "word" (whole-word masking), "span" (SpanBERT: geometric spans).
    noise_density, mean_span_length: T5 span corruption.
    denoise_ratio, poisson_lambda, permute_sentences: BART text infilling and sentence permutation.
    """

    mlm_probability: float = setting(0.15, OPEN_UNIT_INTERVAL)
    mlm_unit: Literal["token", "word", "span"] = "token"
    noise_density: float = setting(0.15, OPEN_UNIT_INTERVAL)
    mean_span_length: float = setting(3.0, POSITIVE)
    denoise_ratio: float = setting(0.3, OPEN_UNIT_INTERVAL)
    poisson_lambda: float = setting(3.0, POSITIVE)
    permute_sentences: bool = True


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """steps: optimizer steps (or derive from max_tokens). precision: "auto" (bf16 autocast on
    CUDA, fp32 on CPU), "bf16", "fp32". distributed: "ddp" or "fsdp" under torchrun.
    objective: causal (GPT), prefix_lm, mlm (BERT), span (T5), denoise (BART); see
    train.objectives. masking: their settings. seed: the initial weights and, unless
    data_seed is set, the document order and the objective's masks; data_seed: those two alone
    (runs that differ only in seed then read the same data in the same order, and two corpora
    with the same number of documents get the same permutation). profile_steps: profile the
    run's last N steps with torch.profiler into RUN/profile.txt (train.profiling; 0: off)."""

    model_preset: str = "tiny"
    objective: str = "causal"
    masking: MaskingConfig = MaskingConfig()
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    optim: OptimConfig = OptimConfig()
    out_dir: str = "runs/tiny"
    steps: int = 100  # > 0 unless max_tokens is set: checked in check_combinations
    max_tokens: int = setting(0, NON_NEGATIVE)
    seed: int = 0
    data_seed: Optional[int] = None
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    compile: bool = False
    distributed: Literal["ddp", "fsdp"] = "ddp"
    eval_every: int = setting(50, POSITIVE)
    eval_batches: int = setting(20, POSITIVE)
    checkpoint_every: int = setting(50, POSITIVE)
    log_every: int = setting(10, POSITIVE)
    profile_steps: int = setting(0, NON_NEGATIVE)
    progress: bool = True
    logging: LoggingConfig = LoggingConfig()

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def build_train_config(file: Optional[str] = None, overrides: Iterable[str] = (),
                       base: Optional[dict[str, Any]] = None) -> TrainConfig:
    """Defaults, then the YAML file, then ``key=value`` overrides. ``model_preset`` fills the
    model's shape before the file's and overrides' own model settings apply."""
    data: dict[str, Any] = dict(base or {})
    if file:
        data = merge_settings(data, load_yaml_mapping(file))
    data = merge_settings(data, parse_overrides(overrides))
    preset = data.get("model_preset", TrainConfig.model_preset)
    if not isinstance(preset, str) or preset not in MODEL_PRESETS:
        raise ConfigError(f"unknown model_preset {preset!r}; choose from {', '.join(MODEL_PRESETS)}")
    model = merge_settings(dict(MODEL_PRESETS[preset]), data.get("model") or {}, "model.")
    data["model"] = model
    config = apply_settings(TrainConfig(), data)
    config = dataclasses.replace(config, out_dir=output_path(config.out_dir))
    check_fields(config)
    check_combinations(config)
    if config.data.train not in ("", None):
        from c4forge.train.data.mixture import (  # lazy: numpy: the train CLI reads configs without it
            MixtureError,
            mixture_entries,
        )

        try:
            mixture_entries(config.data.train)
        except MixtureError as exc:
            raise ConfigError(str(exc)) from exc
    check_attention(config.model.attention)
    if config.data.seq_len > config.model.max_seq_len:
        raise ConfigError(f"data.seq_len {config.data.seq_len} > model.max_seq_len {config.model.max_seq_len}")
    return config


def check_attention(attention: str) -> None:
    """``model.attention`` is one the machine can train with: FlexAttention has no backward on
    the CPU, so ``flex`` without CUDA is refused here, before anything is built."""
    if attention == "flex":
        import torch  # lazy: torch: the config loads without it (`train --help`, the ablation's planning)

        if not torch.cuda.is_available():
            raise ConfigError("model.attention=flex needs a CUDA GPU (FlexAttention cannot train on "
                              "the CPU); use model.attention=sdpa (exact, any device) or auto")


def check_combinations(config: TrainConfig) -> None:
    """The rules that join several settings (each field's own rule is beside it, checked by
    ``check_fields``): a step count or a token budget, heads that divide the width, an
    objective that is registered."""
    if isinstance(config.steps, bool) or not isinstance(config.steps, int):
        raise ConfigError(f"steps={config.steps!r}: must be a number")
    if config.max_tokens == 0 and config.steps <= 0:
        raise ConfigError(f"steps={config.steps!r}: must be > 0 (or set max_tokens)")
    if config.model.d_model % config.model.n_heads:
        raise ConfigError(f"model.d_model {config.model.d_model} is not divisible by "
                          f"model.n_heads {config.model.n_heads}")
    if config.model.n_heads % config.model.kv_heads:
        raise ConfigError(f"model.n_heads {config.model.n_heads} is not divisible by "
                          f"model.n_kv_heads {config.model.kv_heads}")
    from c4forge.train.objectives import OBJECTIVES  # lazy: numpy: the train CLI reads configs without it

    if config.objective not in OBJECTIVES:
        raise ConfigError(f"objective={config.objective!r}: choose from {', '.join(OBJECTIVES)}")
