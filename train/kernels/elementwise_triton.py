"""Triton kernels for RMSNorm, rotary embedding and SwiGLU, forward and backward, each an
autograd Function with the signature of its torch reference (rmsnorm.py, rope.py, swiglu.py).

Inputs are loaded in their own dtype and computed in fp32 inside the kernels (bf16 tensors are
upcast after loading). Block sizes are fixed from the shapes - no multi-config autotune - so the
kernels also run under TRITON_INTERPRET=1 on a CPU, where the tests check them against the
references.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


def _block(n: int) -> int:
    return max(16, triton.next_power_of_2(n))


# ----------------------------------------------------------------------------- RMSNorm

@triton.jit
def _rmsnorm_fwd(X, W, Y, RSTD, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * stride + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_bwd(DY, X, W, RSTD, DX, DW_PARTIAL, stride, M, N, ROWS_PER_PROGRAM,
                 BLOCK: tl.constexpr):
    """Each program handles a run of rows and accumulates its own partial dW."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    start = pid * ROWS_PER_PROGRAM
    for i in range(0, ROWS_PER_PROGRAM):
        row = start + i
        if row < M:
            x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
            rstd = tl.load(RSTD + row)
            g = dy * w
            dx = rstd * g - x * (rstd * rstd * rstd) * (tl.sum(g * x, axis=0) / N)
            tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
            dw += dy * x * rstd
    tl.store(DW_PARTIAL + pid * N + cols, dw, mask=mask)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        m, n = x2.shape
        y = torch.empty_like(x2)
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        _rmsnorm_fwd[(m,)](x2, weight, y, rstd, x2.stride(0), n, eps, BLOCK=_block(n))
        ctx.save_for_backward(x2, weight, rstd)
        ctx.shape = shape
        return y.reshape(shape)

    @staticmethod
    def backward(ctx, dy):
        x2, weight, rstd = ctx.saved_tensors
        m, n = x2.shape
        dy2 = dy.reshape(m, n).contiguous()
        dx = torch.empty_like(x2)
        programs = min(m, 256)
        rows = triton.cdiv(m, programs)
        partial = torch.empty(programs, n, dtype=torch.float32, device=x2.device)
        _rmsnorm_bwd[(programs,)](dy2, x2, weight, rstd, dx, partial, x2.stride(0), m, n, rows,
                                  BLOCK=_block(n))
        return dx.reshape(ctx.shape), partial.sum(0).to(weight.dtype), None


def rmsnorm_triton(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return _RMSNorm.apply(x, weight, eps)


# ----------------------------------------------------------------------------- RoPE

@triton.jit
def _rope(X, COS, SIN, Y, sxb, sxh, sxt, syb, syh, syt, scb, sct, H, T, HALF, SIGN,
          BLOCK: tl.constexpr):
    """One (batch, head, token) row: rotate the two halves by +angle (SIGN=1) or -angle (-1)."""
    pid = tl.program_id(0)
    t = pid % T
    h = (pid // T) % H
    b = pid // (T * H)
    cols = tl.arange(0, BLOCK)
    mask = cols < HALF
    x_row = X + b * sxb + h * sxh + t * sxt
    y_row = Y + b * syb + h * syh + t * syt
    x1 = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_row + HALF + cols, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(COS + b * scb + t * sct + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(SIN + b * scb + t * sct + cols, mask=mask, other=0.0).to(tl.float32) * SIGN
    tl.store(y_row + cols, (x1 * c - x2 * s).to(Y.dtype.element_ty), mask=mask)
    tl.store(y_row + HALF + cols, (x2 * c + x1 * s).to(Y.dtype.element_ty), mask=mask)


def _rope_launch(x, cos, sin, sign):
    b, h, t, d = x.shape
    y = torch.empty((b, h, t, d), dtype=x.dtype, device=x.device)
    cos, sin = cos.contiguous(), sin.contiguous()
    if x.stride(-1) != 1:
        x = x.contiguous()
    _rope[(b * h * t,)](x, cos, sin, y, x.stride(0), x.stride(1), x.stride(2),
                        y.stride(0), y.stride(1), y.stride(2), cos.stride(0), cos.stride(1),
                        h, t, d // 2, sign, BLOCK=_block(d // 2))
    return y


class _Rope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return _rope_launch(x, cos, sin, 1.0)

    @staticmethod
    def backward(ctx, dy):
        cos, sin = ctx.saved_tensors
        return _rope_launch(dy, cos, sin, -1.0), None, None


def rope_triton(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return _Rope.apply(x, cos, sin)


# ----------------------------------------------------------------------------- SwiGLU

@triton.jit
def _swiglu_fwd(G, U, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    g = tl.load(G + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(U + offs, mask=mask, other=0.0).to(tl.float32)
    y = g * tl.sigmoid(g) * u
    tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _swiglu_bwd(DY, G, U, DG, DU, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    dy = tl.load(DY + offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(G + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(U + offs, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(g)
    silu = g * sig
    tl.store(DU + offs, (dy * silu).to(DU.dtype.element_ty), mask=mask)
    tl.store(DG + offs, (dy * u * sig * (1.0 + g * (1.0 - sig))).to(DG.dtype.element_ty), mask=mask)


_EW_BLOCK = 1024


class _SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up):
        g, u = gate.contiguous(), up.contiguous()
        y = torch.empty_like(g)
        n = g.numel()
        _swiglu_fwd[(triton.cdiv(n, _EW_BLOCK),)](g, u, y, n, BLOCK=_EW_BLOCK)
        ctx.save_for_backward(g, u)
        return y

    @staticmethod
    def backward(ctx, dy):
        g, u = ctx.saved_tensors
        dy = dy.contiguous()
        dg, du = torch.empty_like(g), torch.empty_like(u)
        n = g.numel()
        _swiglu_bwd[(triton.cdiv(n, _EW_BLOCK),)](dy, g, u, dg, du, n, BLOCK=_EW_BLOCK)
        return dg, du


def swiglu_triton(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return _SwiGLU.apply(gate, up)
