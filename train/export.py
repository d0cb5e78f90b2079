"""Export a checkpoint as a Hugging Face transformers Llama model (safetensors + config.json +
a fast tokenizer.json that reproduces the SentencePiece ids exactly, see tokenizer/hf.py, and
the SentencePiece model itself), so AutoTokenizer, AutoModelForCausalLM, lm-eval-harness and the
rest of the HF ecosystem load it by default.

Our architecture is Llama's: RMSNorm, rotate-half rotary embeddings, SwiGLU (gate, up, down),
no biases, tied embeddings. Parameter names map one to one. The exported vocabulary is the real
one, not the padded one we train with: the padding rows are left out, because a transformers
model would put them in its softmax (we mask them), so log-probabilities (lm-eval-harness's
scores) would no longer equal ours.
"""
from __future__ import annotations

import json
import os
import shutil
from typing import Optional

import torch

from c4forge.core.io import current_umask
from c4forge.core.outdir import OutputKind, hook_from_env, resolve, write_directory
from c4forge.tokenizer.hf import hf_tokenizer_files
from c4forge.tokenizer.kinds import HF_CONFIG, HF_FILE, HF_SPECIAL_MAP, Tokenizer
from c4forge.tokenizer.load import tokenizer_settings, tokenizer_user_symbols
from c4forge.train.checkpoint import CheckpointError, load_model, run_tokenizer

_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn.wq.weight": "self_attn.q_proj.weight",
    "attn.wk.weight": "self_attn.k_proj.weight",
    "attn.wv.weight": "self_attn.v_proj.weight",
    "attn.wo.weight": "self_attn.o_proj.weight",
    "mlp_norm.weight": "post_attention_layernorm.weight",
    "mlp.gate.weight": "mlp.gate_proj.weight",
    "mlp.up.weight": "mlp.up_proj.weight",
    "mlp.down.weight": "mlp.down_proj.weight",
}


def hf_state_dict(model) -> dict[str, torch.Tensor]:
    out = {"model.embed_tokens.weight": model.embed.weight[: model.config.vocab_size],
           "model.norm.weight": model.norm.weight}
    for i, block in enumerate(model.blocks):
        for ours, theirs in _NAMES.items():
            module = block
            for part in ours.split(".")[:-1]:
                module = getattr(module, part)
            out[f"model.layers.{i}.{theirs}"] = getattr(module, ours.split(".")[-1])
    return {k: v.detach().to(torch.float32).contiguous().clone() for k, v in out.items()}


def hf_config(model_config, eos_id: int = 2, pad_id: int = 0, bos_id: Optional[int] = None) -> dict:
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": model_config.vocab_size, "hidden_size": model_config.d_model,
        "intermediate_size": model_config.ffn_dim, "num_hidden_layers": model_config.n_layers,
        "num_attention_heads": model_config.n_heads, "num_key_value_heads": model_config.kv_heads,
        "head_dim": model_config.head_dim, "hidden_act": "silu",
        "max_position_embeddings": model_config.max_seq_len, "rms_norm_eps": model_config.norm_eps,
        "rope_theta": model_config.rope_theta, "tie_word_embeddings": True,
        "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32",
        "bos_token_id": eos_id if bos_id is None else bos_id, "eos_token_id": eos_id,
        "pad_token_id": pad_id,
    }


def export_tokenizer(tok: Tokenizer, max_length: int) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The tokenizer files of an export: (files copied as they are, files written), so that
    AutoTokenizer gives the ids the run trained on. A c4forge SentencePiece tokenizer: its model
    and the fast-tokenizer files of tokenizer/hf.py. A Hugging Face tokenizer (a user's, or
    ``tokenizer train --library tokenizers``): the user's tokenizer.json byte for byte, and a
    tokenizer_config.json (theirs, when it was beside it, made a PreTrainedTokenizerFast's) naming
    the EOS and BOS the shards used."""
    if tok.file.endswith(".json"):
        return [(tok.file, HF_FILE)], hf_config_files(tok, max_length)
    info = tokenizer_settings(tok.spec.path) if tok.kind == "c4forge" else None
    if not info or info.get("file"):
        raise CheckpointError(
            f"train export writes transformers tokenizers for c4forge and Hugging Face tokenizers; "
            f"this run's is a {tok.kind} file ({os.path.basename(tok.file)}): convert it to a "
            "tokenizer.json (transformers' converters) and pass it with --tokenizer")
    model_file = resolve(tok.spec.path, info, "tokenizer.model")
    return ([(model_file, "tokenizer.model")],
            hf_tokenizer_files(model_file, info["model_type"], tokenizer_user_symbols(info),
                               model_max_length=max_length))


def hf_config_files(tok: Tokenizer, max_length: int) -> dict[str, str]:
    """tokenizer_config.json and special_tokens_map.json for a user's tokenizer.json."""
    folder = os.path.dirname(tok.file)
    try:
        with open(os.path.join(folder, HF_CONFIG), encoding="utf-8") as handle:
            theirs = json.load(handle)
    except (OSError, ValueError):
        theirs = {}
    theirs = theirs if isinstance(theirs, dict) else {}
    names = {i: t for t, i in tok.special_ids.items()}
    eos = names.get(tok.eos_id) or tok.library.id_to_token(tok.eos_id)  # type: ignore[attr-defined]
    specials = {"eos_token": eos}
    if tok.bos_id is not None:
        specials["bos_token"] = names.get(tok.bos_id) or tok.library.id_to_token(tok.bos_id)  # type: ignore[attr-defined]
    elif "bos_token" not in theirs:
        specials["bos_token"] = eos  # the document start in training: the EOS of the one before
    kept = {k: v for k, v in theirs.items() if k not in ("tokenizer_class", "auto_map", "tokenizer_file")}
    config = {**kept, "tokenizer_class": "PreTrainedTokenizerFast", **specials,
              "clean_up_tokenization_spaces": False, "model_max_length": max_length}
    return {HF_CONFIG: json.dumps(config, indent=2, ensure_ascii=False) + "\n",
            HF_SPECIAL_MAP: json.dumps({k: v for k, v in config.items() if k.endswith("_token")},
                                       indent=2, ensure_ascii=False) + "\n"}


EXPORT_FORMAT = "c4forge-export"
EXPORT_MANIFEST = "c4forge-export.json"


def _export_files(manifest: dict) -> list[str]:
    return list(manifest.get("files") or [])


EXPORT_KIND = OutputKind("export", EXPORT_MANIFEST, EXPORT_FORMAT, _export_files)


def export_hf(checkpoint: str, output: str, tokenizer_dir: str = None,
              overwrite: bool = False) -> str:
    """Write the export into ``output`` following the output-directory rule of
    :mod:`c4forge.core.outdir`: a new or empty directory, or (with ``overwrite``) an earlier export,
    whose own files alone are replaced."""
    from safetensors.torch import save_file  # lazy: safetensors, only for `train export`


    model, config = load_model(checkpoint)
    objective = config.get("objective", "causal")
    if objective not in ("causal", "prefix_lm"):
        raise CheckpointError(
            f"a {objective} run has no transformers class that reproduces it: our encoder and "
            "encoder-decoder use rotary embeddings, RMSNorm and SwiGLU (BERT/BART use learned "
            "positions and LayerNorm, T5 relative position buckets); only decoder runs export (Llama)")
    tok = run_tokenizer(checkpoint, config, tokenizer_dir)
    copies, tokenizer_files = export_tokenizer(tok, model.config.max_seq_len)
    pad_id = next((tok.special_ids[p] for p in ("<pad>", "[PAD]") if p in tok.special_ids), tok.eos_id)
    bos_id = tok.eos_id if tok.bos_id is None else tok.bos_id

    def fill(tmp: str) -> dict:
        weights = os.path.join(tmp, "model.safetensors")
        save_file(hf_state_dict(model), weights, metadata={"format": "pt"})
        os.chmod(weights, 0o666 & ~current_umask())  # safetensors writes 0600: follow the umask
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as handle:
            json.dump(hf_config(model.config, tok.eos_id, pad_id, bos_id), handle, indent=2)
        for source, name in copies:
            shutil.copyfile(source, os.path.join(tmp, name))
        for name, text in tokenizer_files.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        with open(os.path.join(tmp, "generation_config.json"), "w", encoding="utf-8") as handle:
            json.dump({"bos_token_id": bos_id, "eos_token_id": tok.eos_id, "pad_token_id": pad_id},
                      handle, indent=2)
        return {"format": EXPORT_FORMAT, "version": 1,
                "files": ["model.safetensors", "config.json", *(n for _, n in copies), *tokenizer_files,
                          "generation_config.json"],
                "checkpoint": os.path.abspath(checkpoint),
                "tokenizer_model_sha256": tok.sha256, "tokenizer_kind": tok.kind}

    write_directory(output, EXPORT_KIND, overwrite, fill, hook_from_env())
    return output
