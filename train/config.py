"""The trainer's config: model shape presets and training settings, from YAML plus key=value
overrides (``train run --config FILE.yaml optim.lr=3e-4``)."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Optional

from c4forge.core.io import output_path
from c4forge.core.settings import (
    ConfigError,
    apply_settings,
    load_yaml_mapping,
    merge_settings,
    parse_overrides,
)
from c4forge.train.loggers import LoggingConfig

KERNEL_CHOICES = ("auto", "torch", "triton")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A decoder-only LM: RMSNorm, rotary embeddings, SwiGLU MLP, no biases, tied embeddings.

    vocab_size: the tokenizer's; the embedding is padded to a multiple of 64 (pad_vocab_to).
    d_ff: SwiGLU hidden size; None = 8/3 * d_model rounded up to a multiple of 64.
    n_kv_heads: grouped-query attention; None = n_heads.
    attention: "sdpa" (exact masked SDPA, CPU and GPU), "flex" (FlexAttention document mask,
        GPU), "auto" (flex on CUDA when available, else sdpa).
    rmsnorm/rope/swiglu/cross_entropy: "torch" (reference), "triton" (fused kernels), "auto"
        (triton on CUDA when triton imports, else torch).
    encoder_layers/decoder_layers: the encoder-decoder's stacks (objectives span, denoise);
        None = n_layers each (T5's "2P parameters, M FLOPs" row).
    """

    vocab_size: int = 8000
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: Optional[int] = None
    d_ff: Optional[int] = None
    max_seq_len: int = 256
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    init_std: float = 0.02
    pad_vocab_to: int = 64
    attention: str = "auto"
    rmsnorm: str = "auto"
    rope: str = "auto"
    swiglu: str = "auto"
    cross_entropy: str = "auto"
    ce_chunk_tokens: int = 4096
    encoder_layers: Optional[int] = None
    decoder_layers: Optional[int] = None

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
    packing: "concat" (concatenate and chunk) or "best_fit" (whole documents, padded).
    batch_size: sequences per micro-batch per process; grad_accum: micro-batches per step.
    best_fit_chunk: documents packed together by best_fit (larger packs tighter; README).
    prefetch: batches a background thread assembles ahead (0: none)."""

    train: Any = ""
    train_split: str = "train"
    validation: str = ""
    validation_split: str = "validation"
    seq_len: int = 256
    batch_size: int = 8
    grad_accum: int = 1
    packing: str = "concat"
    best_fit_chunk: int = 8192
    prefetch: int = 2


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """AdamW with linear warmup then cosine decay to min_lr_ratio * lr."""

    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 20
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """The objectives' settings (train.objectives), each at its paper's default.

    mlm_probability: share of tokens BERT selects (80% <mask>, 10% random, 10% kept).
    mlm_unit: "token" (BERT), "word" (whole-word masking), "span" (SpanBERT: geometric spans).
    noise_density, mean_span_length: T5 span corruption.
    denoise_ratio, poisson_lambda, permute_sentences: BART text infilling and sentence permutation.
    """

    mlm_probability: float = 0.15
    mlm_unit: str = "token"
    noise_density: float = 0.15
    mean_span_length: float = 3.0
    denoise_ratio: float = 0.3
    poisson_lambda: float = 3.0
    permute_sentences: bool = True


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """steps: optimizer steps (or derive from max_tokens). precision: "auto" (bf16 autocast on
    CUDA, fp32 on CPU), "bf16", "fp32". distributed: "ddp" or "fsdp" under torchrun.
    objective: causal (GPT), prefix_lm, mlm (BERT), span (T5), denoise (BART); see
    train.objectives. masking: their settings. seed: the initial weights and, unless
    data_seed is set, the document order and the objective's masks; data_seed: those two alone
    (runs that differ only in seed then read the same data in the same order, and two corpora
    with the same number of documents get the same permutation)."""

    model_preset: str = "tiny"
    objective: str = "causal"
    masking: MaskingConfig = MaskingConfig()
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    optim: OptimConfig = OptimConfig()
    out_dir: str = "runs/tiny"
    steps: int = 100
    max_tokens: int = 0
    seed: int = 0
    data_seed: Optional[int] = None
    precision: str = "auto"
    compile: bool = False
    distributed: str = "ddp"
    eval_every: int = 50
    eval_batches: int = 20
    checkpoint_every: int = 50
    log_every: int = 10
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
    if config.data.packing not in ("concat", "best_fit"):
        raise ConfigError("data.packing must be concat or best_fit")
    if config.data.train not in ("", None):
        from c4forge.train.data.mixture import (  # lazy: numpy: the train CLI reads configs without it
            MixtureError,
            mixture_entries,
        )

        try:
            mixture_entries(config.data.train)
        except MixtureError as exc:
            raise ConfigError(str(exc)) from exc
    for name in ("rmsnorm", "rope", "swiglu", "cross_entropy"):
        if getattr(config.model, name) not in KERNEL_CHOICES:
            raise ConfigError(f"model.{name} must be one of {', '.join(KERNEL_CHOICES)}")
    validate_numbers(config)
    check_attention(config.model.attention)
    if config.data.seq_len > config.model.max_seq_len:
        raise ConfigError(f"data.seq_len {config.data.seq_len} > model.max_seq_len {config.model.max_seq_len}")
    return config


def check_attention(attention: str) -> None:
    """``model.attention`` is one the machine can train with: FlexAttention has no backward on
    the CPU, so ``flex`` without CUDA is refused here, before anything is built."""
    if attention not in ("auto", "sdpa", "flex"):
        raise ConfigError(f"model.attention={attention!r}: choose auto, sdpa or flex")
    if attention == "flex":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("model.attention=flex needs a CUDA GPU (FlexAttention cannot train on "
                              "the CPU); use model.attention=sdpa (exact, any device) or auto")


_POSITIVE = ("data.seq_len", "data.batch_size", "data.grad_accum", "data.best_fit_chunk", "model.d_model", "model.n_layers",
             "model.n_heads", "model.max_seq_len", "model.pad_vocab_to", "model.ce_chunk_tokens",
             "model.vocab_size", "model.rope_theta", "model.norm_eps", "optim.lr", "optim.eps",
             "optim.grad_clip", "eval_every", "eval_batches", "checkpoint_every", "log_every")
_NON_NEGATIVE = ("data.prefetch", "max_tokens", "optim.warmup_steps", "optim.weight_decay", "model.init_std")
_UNIT = ("optim.min_lr_ratio", "optim.beta1", "optim.beta2")


def _get(config: TrainConfig, dotted: str):
    value = config
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def validate_numbers(config: TrainConfig) -> None:
    """Every numeric setting in range, with a message naming it (``batch_size=0`` would divide
    by zero, ``steps=-5`` would silently train nothing)."""
    def bad(name, value, rule):
        raise ConfigError(f"{name}={value!r}: must be {rule}")

    for name in _POSITIVE + _NON_NEGATIVE + _UNIT + ("steps",):
        value = _get(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bad(name, value, "a number")
        if value != value:  # NaN
            bad(name, value, "a number")
    for name in _POSITIVE:
        if _get(config, name) <= 0:
            bad(name, _get(config, name), "> 0")
    for name in _NON_NEGATIVE:
        if _get(config, name) < 0:
            bad(name, _get(config, name), ">= 0")
    for name in _UNIT:
        if not 0 <= _get(config, name) <= 1:
            bad(name, _get(config, name), "between 0 and 1")
    if config.max_tokens == 0 and config.steps <= 0:
        bad("steps", config.steps, "> 0 (or set max_tokens)")
    for name in ("n_kv_heads", "d_ff"):
        value = getattr(config.model, name)
        if value is not None and (not isinstance(value, int) or value <= 0):
            bad(f"model.{name}", value, "a positive integer or null")
    if config.model.d_model % config.model.n_heads:
        raise ConfigError(f"model.d_model {config.model.d_model} is not divisible by "
                          f"model.n_heads {config.model.n_heads}")
    if config.model.n_heads % config.model.kv_heads:
        raise ConfigError(f"model.n_heads {config.model.n_heads} is not divisible by "
                          f"model.n_kv_heads {config.model.kv_heads}")
    if config.precision not in ("auto", "bf16", "fp32"):
        raise ConfigError(f"precision={config.precision!r}: choose auto, bf16 or fp32")
    from c4forge.train.objectives import OBJECTIVES  # lazy: numpy: the train CLI reads configs without it

    if config.objective not in OBJECTIVES:
        raise ConfigError(f"objective={config.objective!r}: choose from {', '.join(OBJECTIVES)}")
    if config.masking.mlm_unit not in ("token", "word", "span"):
        raise ConfigError(f"masking.mlm_unit={config.masking.mlm_unit!r}: choose token, word or span")
    for name in ("mlm_probability", "noise_density", "denoise_ratio"):
        value = getattr(config.masking, name)
        if not isinstance(value, (int, float)) or not 0 < value < 1:
            bad(f"masking.{name}", value, "between 0 and 1 (exclusive)")
    for name in ("mean_span_length", "poisson_lambda"):
        value = getattr(config.masking, name)
        if not isinstance(value, (int, float)) or value <= 0:
            bad(f"masking.{name}", value, "> 0")
    for name in ("encoder_layers", "decoder_layers"):
        value = getattr(config.model, name)
        if value is not None and (not isinstance(value, int) or value <= 0):
            bad(f"model.{name}", value, "a positive integer or null")
    if config.distributed not in ("ddp", "fsdp"):
        raise ConfigError(f"distributed={config.distributed!r}: choose ddp or fsdp")
