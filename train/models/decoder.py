"""The decoder-only LM (and the encoder built from it) in the style of current models: RMSNorm, rotary embeddings, SwiGLU MLP, no
biases, tied input/output embeddings, attention masked per document.

Attention never crosses a document boundary: each token sees only earlier tokens with the same
document id. On CUDA this is a FlexAttention block mask; everywhere it can be an exact masked
SDPA (a boolean (B, 1, T, T) mask: same document and causal), the CPU path and the test oracle.
Padding tokens (document id -1) attend only to themselves and are ignored by the loss.
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.nn.attention.flex_attention import flex_attention
except ImportError:  # torch < 2.5: no FlexAttention; _flex_available says so and sdpa is used
    flex_attention = None

from c4forge.train.config import ModelConfig
from c4forge.train.kernels import resolve
from c4forge.train.kernels.linear_ce import linear_cross_entropy_torch
from c4forge.train.kernels.rmsnorm import rmsnorm_torch
from c4forge.train.kernels.rope import rope_tables, rope_torch
from c4forge.train.kernels.swiglu import swiglu_torch


def kernel_table(config: ModelConfig, device_type: str, compiled: bool = False) -> dict[str, object]:
    """The functions each kernel choice resolves to on this device; in a compiled model a Triton
    kernel runs outside the compiled graph (train.kernels says why)."""
    chosen = {name: resolve(getattr(config, name), device_type, name, compiled)
              for name in ("rmsnorm", "rope", "swiglu", "cross_entropy")}
    table = {"rmsnorm": rmsnorm_torch, "rope": rope_torch, "swiglu": swiglu_torch,
             "cross_entropy": linear_cross_entropy_torch, "chosen": chosen}
    if "triton" in chosen.values():
        from c4forge.train.kernels import triton_ops  # lazy: triton, only when the Triton kernels are on

        for name, impl in chosen.items():
            if impl == "triton":
                kernel = getattr(triton_ops, name)
                table[name] = torch.compiler.disable(kernel) if compiled else kernel
    return table


def attention_mask(doc_ids: torch.Tensor, bidirectional: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Boolean (B, 1, T, T): query i may see key j iff same document and (j <= i, or key j is
    ``bidirectional``: a prefix-LM prefix, every token of an encoder); pads see themselves."""
    t = doc_ids.shape[1]
    same = doc_ids[:, :, None] == doc_ids[:, None, :]
    visible = torch.ones(t, t, dtype=torch.bool, device=doc_ids.device).tril()[None]
    if bidirectional is not None:
        visible = visible | bidirectional.bool()[:, None, :]
    eye = torch.eye(t, dtype=torch.bool, device=doc_ids.device)
    return ((same & visible) | eye)[:, None]


def document_block_mask(doc_ids: torch.Tensor, bidirectional: Optional[torch.Tensor] = None):
    """:func:`attention_mask` as a FlexAttention BlockMask: blocks that no query of a block may
    see are skipped, so attention costs what each document's own triangle costs."""
    from torch.nn.attention.flex_attention import (
        create_block_mask,  # lazy: FlexAttention, only for attention=flex (CUDA)
    )

    docs = doc_ids
    both = bidirectional.bool() if bidirectional is not None else torch.zeros_like(doc_ids, dtype=torch.bool)

    def document_mask(b, h, q, kv):
        return ((docs[b, q] == docs[b, kv]) & ((kv <= q) | both[b, kv])) | (q == kv)

    b, t = doc_ids.shape
    return create_block_mask(document_mask, b, None, t, t, device=doc_ids.device)


@functools.cache
def compiled_flex_attention():
    """FlexAttention compiled once, for eager models: uncompiled, flex_attention runs a reference
    that builds the whole (T, T) score matrix (PyTorch warns so). A compiled model calls
    flex_attention itself, which it traces and compiles with the rest."""
    return torch.compile(flex_attention, dynamic=False)


def _flex_available(device_type: str) -> bool:
    return device_type == "cuda" and flex_attention is not None


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.fn = rmsnorm_torch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x, self.weight, self.eps)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads, self.kv_heads, self.head_dim = config.n_heads, config.kv_heads, config.head_dim
        self.wq = nn.Linear(config.d_model, config.n_heads * config.head_dim, bias=False)
        self.wk = nn.Linear(config.d_model, config.kv_heads * config.head_dim, bias=False)
        self.wv = nn.Linear(config.d_model, config.kv_heads * config.head_dim, bias=False)
        self.wo = nn.Linear(config.n_heads * config.head_dim, config.d_model, bias=False)
        self.rope = rope_torch

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask,
                memory: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Self-attention, or with ``memory`` cross-attention to it (no rotary embedding:
        queries and keys come from different sequences, as in T5's cross-attention)."""
        b, t, _ = x.shape
        source = x if memory is None else memory
        s = source.shape[1]
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(source).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(source).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if memory is None:
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        if self.kv_heads != self.n_heads:
            repeat = self.n_heads // self.kv_heads
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        if isinstance(mask, torch.Tensor):
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        elif torch.compiler.is_compiling():  # a FlexAttention BlockMask, inside a compiled model
            y = flex_attention(q, k, v, block_mask=mask)
        else:  # a FlexAttention BlockMask, eager: its own compiled kernel
            y = compiled_flex_attention()(q, k, v, block_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.gate = nn.Linear(config.d_model, config.ffn_dim, bias=False)
        self.up = nn.Linear(config.d_model, config.ffn_dim, bias=False)
        self.down = nn.Linear(config.ffn_dim, config.d_model, bias=False)
        self.act = swiglu_torch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.gate(x), self.up(x)))


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = Attention(config)
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = MLP(config)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.mlp(self.mlp_norm(x))


class KernelModel(nn.Module):
    """What every model shares: initialisation, kernel binding, parameter counts."""

    config: ModelConfig

    def reset_parameters(self) -> None:
        std = self.config.init_std
        depth = self.depth()
        for name, p in self.named_parameters():
            if p.dim() == 2:
                # GPT-2 style: residual projections scaled by depth.
                scale = 1 / math.sqrt(2 * depth) if name.endswith(("wo.weight", "down.weight")) else 1.0
                nn.init.normal_(p, mean=0.0, std=std * scale)
            else:
                nn.init.ones_(p)

    def depth(self) -> int:
        return self.config.n_layers

    def init_rope_tables(self) -> None:
        """cos and sin of every position below max_seq_len (fp32), for :meth:`rotary` under
        torch.compile; buffers that move with the model and are not saved."""
        cos, sin = rope_tables(torch.arange(self.config.max_seq_len)[None], self.config.head_dim,
                               self.config.rope_theta)
        self.register_buffer("rope_cos", cos[0], persistent=False)
        self.register_buffer("rope_sin", sin[0], persistent=False)

    def rotary(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin (B, T, head_dim/2) at ``positions``. Compiled, looked up in the tables of
        :meth:`init_rope_tables` (training positions are below data.seq_len <= max_seq_len):
        inductor otherwise inlines cos and sin of the positions into every rotation kernel and
        recomputes them per layer, query and key (about a tenth of a 124M step on an H100,
        benchmarks/RESULTS.md), where a lookup is one load. Eager, computed once per forward."""
        if torch.compiler.is_compiling():
            return self.rope_cos[positions], self.rope_sin[positions]
        return rope_tables(positions, self.config.head_dim, self.config.rope_theta)

    def use_kernels(self, device_type: str, compiled: bool = False) -> dict[str, str]:
        """Bind each kernel choice ("auto" resolved for this device, and for torch.compile when
        ``compiled``) into the modules."""
        table = kernel_table(self.config, device_type, compiled)
        for module in self.modules():
            if isinstance(module, RMSNorm):
                module.fn = table["rmsnorm"]
            elif isinstance(module, Attention):
                module.rope = table["rope"]
            elif isinstance(module, MLP):
                module.act = table["swiglu"]
        self._cross_entropy = table["cross_entropy"]
        wanted = self.config.attention
        self.attention_impl = ("flex" if (wanted == "flex" or (wanted == "auto" and _flex_available(device_type)))
                               else "sdpa")
        self.kernels = dict(table["chosen"], attention=self.attention_impl)
        return self.kernels

    def num_parameters(self, non_embedding: bool = False) -> int:
        total = sum(p.numel() for p in self.parameters())
        return total - self.embed.weight.numel() if non_embedding else total

    def self_mask(self, doc_ids: torch.Tensor, bidirectional: Optional[torch.Tensor] = None):
        if self.attention_impl == "flex":
            return document_block_mask(doc_ids, bidirectional)
        return attention_mask(doc_ids, bidirectional)

    def loss_or_logits(self, h: torch.Tensor, targets: Optional[torch.Tensor]):
        """With targets: (sum of token losses, number of target tokens). Without: logits over
        the real vocabulary (B, T, vocab_size)."""
        if targets is None:
            return (h @ self.embed.weight.t())[..., : self.config.vocab_size].float()
        return self._cross_entropy(h, self.embed.weight, targets, self.config.vocab_size,
                                   self.config.ce_chunk_tokens)


class LM(KernelModel):
    """The decoder (GPT, and the prefix LM with ``bidirectional`` prefix tokens)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.padded_vocab, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.kernels: dict[str, str] = {}
        self.attention_impl = "sdpa"
        self.reset_parameters()
        self.init_rope_tables()
        self.use_kernels("cpu")

    def hidden(self, input_ids: torch.Tensor, doc_ids: torch.Tensor, positions: torch.Tensor,
               bidirectional: Optional[torch.Tensor] = None) -> torch.Tensor:
        cos, sin = self.rotary(positions)
        mask = self.self_mask(doc_ids, bidirectional)
        x = self.embed(input_ids)
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        return self.norm(x)

    def forward(self, input_ids: torch.Tensor, doc_ids: torch.Tensor, positions: torch.Tensor,
                targets: Optional[torch.Tensor] = None, bidirectional: Optional[torch.Tensor] = None):
        """With targets: (sum of token losses, number of target tokens). Without: logits over
        the real vocabulary (B, T, vocab_size). ``bidirectional`` (B, T): tokens every token of
        their document may see (prefix-LM prefixes); None: causal."""
        return self.loss_or_logits(self.hidden(input_ids, doc_ids, positions, bidirectional), targets)


class Encoder(LM):
    """BERT's encoder from the same blocks: every token sees its whole document (never
    another), the loss on the masked positions' own tokens."""

    def forward(self, input_ids: torch.Tensor, doc_ids: torch.Tensor, positions: torch.Tensor,
                targets: Optional[torch.Tensor] = None, bidirectional: Optional[torch.Tensor] = None):
        return self.loss_or_logits(self.hidden(input_ids, doc_ids, positions, doc_ids >= 0), targets)


def flops_per_token(config: ModelConfig, seq_len: int, kind: str = "decoder") -> float:
    """Training FLOPs per token: 6 x non-embedding parameters a token goes through + attention
    (12 L d T, halved for the causal mask), the usual estimate (PaLM appendix B). In the
    encoder-decoder a token goes through one stack (inputs the encoder, targets the decoder,
    whose layers add cross-attention): the mean of the two stacks, T5's "M" convention."""
    d = config.d_model
    kv = config.kv_heads * config.head_dim
    attn = d * d * 2 + d * kv * 2
    per_layer = attn + 3 * d * config.ffn_dim
    head = config.padded_vocab * d  # the tied output projection counts
    if kind == "encoder_decoder":
        encoder = config.encoder_depth * per_layer
        decoder = config.decoder_depth * (per_layer + attn)
        layers = (config.encoder_depth + config.decoder_depth) / 2
        return 6 * ((encoder + decoder) / 2 + head) + 6 * layers * d * seq_len
    layers = config.n_layers
    attention = 6 * layers * d * seq_len * (2 if kind == "encoder" else 1)
    return 6 * (layers * per_layer + head) + attention
