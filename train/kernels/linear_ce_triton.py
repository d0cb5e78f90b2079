"""Fused linear + cross-entropy (Triton), the signature of linear_ce.linear_cross_entropy_torch.

For each chunk of rows: logits = h_chunk @ W^T (one matmul, in the matmul's dtype: bf16 under
autocast), then a Triton kernel computes each row's loss in fp32 with an online log-sum-exp over
vocabulary blocks and overwrites the logits, in place and in their own dtype, with
d loss / d logits = softmax - onehot (zero on ignored rows and padded vocabulary columns); two
matmuls then give dh_chunk and accumulate dW (fp32). Gradients are produced during the forward
pass (as Liger-Kernel does), so the backward only scales them by the incoming gradient, and at
no point do logits for more than one chunk exist: peak memory is one chunk of logits plus dW.

Keeping the logits in bf16 loses nothing against the torch path, whose bf16 matmul rounds them
before its fp32 upcast too, and it halves the chunk's memory against an fp32 copy (plus the bf16
copy of its gradient the earlier version made). Speed on a GPU is not measured here (issue 13).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

IGNORE = -100


@triton.jit
def _ce_rows(LOGITS, TARGETS, LOSS, stride, V_REAL, V_TOTAL, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    target = tl.load(TARGETS + row)
    base = LOGITS + row * stride
    if target == -100:
        for start in range(0, V_TOTAL, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            tl.store(base + cols, tl.zeros([BLOCK], dtype=tl.float32).to(LOGITS.dtype.element_ty),
                     mask=cols < V_TOTAL)
        tl.store(LOSS + row, 0.0)
    else:
        m = float("-inf")
        s = 0.0
        for start in range(0, V_REAL, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(base + cols, mask=cols < V_REAL, other=float("-inf")).to(tl.float32)
            new_m = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
            m = new_m
        lse = m + tl.log(s)
        x_target = tl.load(base + target).to(tl.float32)
        tl.store(LOSS + row, lse - x_target)
        for start in range(0, V_TOTAL, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(base + cols, mask=cols < V_REAL, other=float("-inf")).to(tl.float32)
            grad = tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)
            grad = tl.where(cols < V_REAL, grad, 0.0)
            tl.store(base + cols, grad.to(LOGITS.dtype.element_ty), mask=cols < V_TOTAL)


def _block(v: int) -> int:
    return min(4096, max(16, triton.next_power_of_2(v)))


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, weight, targets, vocab, chunk_tokens):
        shape = h.shape
        h2 = h.reshape(-1, shape[-1])
        t2 = targets.reshape(-1).contiguous()
        n = h2.shape[0]
        v_total = weight.shape[0]
        needs_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        dh = torch.empty_like(h2) if needs_grad else None
        dw = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if needs_grad else None
        losses = torch.empty(n, dtype=torch.float32, device=h.device)
        for start in range(0, n, chunk_tokens):
            stop = min(n, start + chunk_tokens)
            logits = (h2[start:stop] @ weight.t()).contiguous()
            _ce_rows[(stop - start,)](logits, t2[start:stop], losses[start:stop], logits.stride(0),
                                      vocab, v_total, BLOCK=_block(v_total))
            if needs_grad:  # ``logits`` now holds d loss / d logits
                dh[start:stop] = logits @ weight
                dw.add_(logits.t() @ h2[start:stop])
        if needs_grad:
            ctx.save_for_backward(dh, dw)
            ctx.h_shape, ctx.w_dtype = shape, weight.dtype
        return losses.sum(), (t2 != IGNORE).sum()

    @staticmethod
    def backward(ctx, grad_loss, _grad_count):
        dh, dw = ctx.saved_tensors
        scale = grad_loss.to(torch.float32)
        return ((dh * scale.to(dh.dtype)).reshape(ctx.h_shape), (dw * scale).to(ctx.w_dtype),
                None, None, None)


def linear_cross_entropy_triton(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                vocab: int, chunk_tokens: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    return _LinearCrossEntropy.apply(h, weight, targets, vocab, chunk_tokens)
