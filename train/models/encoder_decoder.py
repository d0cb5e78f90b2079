"""The encoder-decoder (T5's architecture family) from the same blocks as the decoder: RMSNorm,
rotary embeddings in self-attention, SwiGLU, no biases, one embedding shared by encoder input,
decoder input and output projection (T5 ties them too).

Packed rows of several documents: the encoder attends within each document (bidirectionally),
the decoder causally within each document, and cross-attention lets a decoder token see only
its own document's encoder tokens. Cross-attention has no rotary embedding (queries and keys come
from different sequences; T5's cross-attention has no position bias either).

Sizes (T5's table 2 convention): ``encoder_layers`` and ``decoder_layers`` default to
``n_layers`` each, so the model has about 2P parameters (P: the decoder-only model of the same
preset; the decoder layers also hold cross-attention) and costs about M FLOPs per token, as each
token goes through one stack: the encoder reads the inputs, the decoder the targets. Set both to
n_layers / 2 for P parameters and M / 2 FLOPs.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn

from c4forge.train.config import ModelConfig
from c4forge.train.models.decoder import MLP, Attention, Block, KernelModel, RMSNorm, attention_mask


class DecoderBlock(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = Attention(config)
        self.cross_norm = RMSNorm(config.d_model, config.norm_eps)
        self.cross = Attention(config)
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = MLP(config)

    def forward(self, x, cos, sin, self_mask, memory, cross_mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, self_mask)
        x = x + self.cross(self.cross_norm(x), cos, sin, cross_mask, memory=memory)
        return x + self.mlp(self.mlp_norm(x))


def cross_mask(dec_doc: torch.Tensor, enc_doc: torch.Tensor) -> torch.Tensor:
    """Boolean (B, 1, Tq, Tk): a decoder token sees its own document's encoder tokens; a padding
    decoder token sees every key (its output is never used; a row of no keys would be NaN)."""
    same = (dec_doc[:, :, None] == enc_doc[:, None, :]) & (enc_doc[:, None, :] >= 0)
    pad = (dec_doc < 0)[:, :, None]
    return (same | pad)[:, None]


class EncoderDecoder(KernelModel):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.padded_vocab, config.d_model)
        self.encoder = nn.ModuleList(Block(config) for _ in range(config.encoder_depth))
        self.encoder_norm = RMSNorm(config.d_model, config.norm_eps)
        self.blocks = nn.ModuleList(DecoderBlock(config) for _ in range(config.decoder_depth))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.kernels = {}
        self.attention_impl = "sdpa"
        self.reset_parameters()
        self.init_rope_tables()
        self.use_kernels("cpu")

    def depth(self) -> int:
        return self.config.encoder_depth + self.config.decoder_depth

    def use_kernels(self, device_type: str, compiled: bool = False):
        kernels = super().use_kernels(device_type, compiled)
        # Cross-attention has two sequence lengths; the document masks here are exact SDPA
        # masks on every device (FlexAttention is used by the decoder-only and encoder models).
        self.attention_impl = "sdpa"
        self.kernels = dict(kernels, attention="sdpa")
        return self.kernels

    def encode(self, enc_ids, enc_doc, enc_pos) -> torch.Tensor:
        cos, sin = self.rotary(enc_pos)
        mask = attention_mask(enc_doc, enc_doc >= 0)
        x = self.embed(enc_ids)
        for block in self.encoder:
            x = block(x, cos, sin, mask)
        return self.encoder_norm(x)

    def decode(self, memory, enc_doc, dec_ids, dec_doc, dec_pos) -> torch.Tensor:
        cos, sin = self.rotary(dec_pos)
        self_mask = attention_mask(dec_doc)
        cross = cross_mask(dec_doc, enc_doc)
        x = self.embed(dec_ids)
        for block in self.blocks:
            x = block(x, cos, sin, self_mask, memory, cross)
        return self.norm(x)

    def forward(self, enc_ids: torch.Tensor, enc_doc: torch.Tensor, enc_pos: torch.Tensor,
                dec_ids: torch.Tensor, dec_doc: torch.Tensor, dec_pos: torch.Tensor,
                targets: Optional[torch.Tensor] = None):
        """With targets: (sum of target-token losses, number of target tokens); without:
        decoder logits over the real vocabulary."""
        memory = self.encode(enc_ids, enc_doc, enc_pos)
        return self.loss_or_logits(self.decode(memory, enc_doc, dec_ids, dec_doc, dec_pos), targets)
