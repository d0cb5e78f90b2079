"""Triton kernels against their torch references: values and gradients on odd shapes, in fp32
(under TRITON_INTERPRET=1 on a CPU; bf16 inputs are upcast inside the kernels), and a short
training run whose losses match between the two paths.

Tolerances: fp32 elementwise kernels rtol/atol 1e-5; reductions (RMSNorm, cross-entropy) 1e-4,
since the kernels sum in another order than torch.
"""
import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed")

from train.kernels.elementwise_triton import rmsnorm_triton, rope_triton, swiglu_triton  # noqa: E402
from train.kernels.linear_ce import linear_cross_entropy_torch  # noqa: E402
from train.kernels.linear_ce_triton import linear_cross_entropy_triton  # noqa: E402
from train.kernels.rmsnorm import rmsnorm_torch  # noqa: E402
from train.kernels.rope import rope_tables, rope_torch  # noqa: E402
from train.kernels.swiglu import swiglu_torch  # noqa: E402


def both(fn_ref, fn_tri, *inputs, tol=1e-5):
    """Run both implementations on copies of the inputs; compare outputs and input gradients."""
    torch.manual_seed(0)
    ref_in = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    tri_in = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    ref_out, tri_out = fn_ref(*ref_in), fn_tri(*tri_in)
    torch.testing.assert_close(tri_out, ref_out, rtol=tol, atol=tol)
    upstream = torch.randn_like(ref_out)
    (ref_out * upstream).sum().backward()
    (tri_out * upstream).sum().backward()
    for a, b in zip(tri_in, ref_in):
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("shape", [(5, 123, 123), (3, 7, 64), (1, 1, 17)])
def test_rmsnorm(shape):
    x = torch.randn(*shape)
    w = torch.randn(shape[-1])
    both(lambda a, b: rmsnorm_torch(a, b, 1e-5), lambda a, b: rmsnorm_triton(a, b, 1e-5), x, w, tol=1e-5)


@pytest.mark.parametrize("b,h,t,d", [(5, 3, 123, 32), (2, 4, 7, 10)])
def test_rope_contiguous_and_strided(b, h, t, d):
    positions = torch.randint(0, 500, (b, t))
    cos, sin = rope_tables(positions, d, 10000.0)
    x = torch.randn(b, h, t, d)
    both(lambda a: rope_torch(a, cos, sin), lambda a: rope_triton(a, cos, sin), x)
    # the model passes a transposed (non-contiguous) view
    y = torch.randn(b, t, h, d).transpose(1, 2)
    torch.testing.assert_close(rope_triton(y, cos, sin), rope_torch(y, cos, sin), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 123, 123), (2, 3, 1001)])
def test_swiglu(shape):
    both(swiglu_torch, swiglu_triton, torch.randn(*shape), torch.randn(*shape))


@pytest.mark.parametrize("n,d,vocab,padded,chunk", [(5 * 123, 32, 123, 128, 97), (37, 16, 1000, 1024, 4096)])
def test_linear_cross_entropy(n, d, vocab, padded, chunk):
    torch.manual_seed(1)
    h = torch.randn(n, d)
    w = torch.randn(padded, d) * 0.5
    targets = torch.randint(0, vocab, (n,))
    targets[::7] = -100
    results = []
    for fn in (linear_cross_entropy_torch, linear_cross_entropy_triton):
        hh, ww = h.clone().requires_grad_(), w.clone().requires_grad_()
        loss, count = fn(hh, ww, targets, vocab, chunk)
        (loss * 0.5).backward()
        results.append((loss, count, hh.grad, ww.grad))
    (l1, c1, gh1, gw1), (l2, c2, gh2, gw2) = results
    assert int(c1) == int(c2) == int((targets != -100).sum())
    torch.testing.assert_close(l2, l1, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(gh2, gh1, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(gw2, gw1, rtol=1e-4, atol=1e-4)
    assert gw2[vocab:].abs().max() == 0  # padded vocabulary rows get no gradient


def test_bf16_inputs_are_upcast_inside():
    x = torch.randn(4, 9, 48)
    w = torch.randn(48)
    out = rmsnorm_triton(x.to(torch.bfloat16), w.to(torch.bfloat16), 1e-5)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), rmsnorm_torch(x, w, 1e-5), rtol=2e-2, atol=2e-2)


def test_training_losses_match_between_paths(tmp_path):
    """30 steps of a tiny model: every kernel on triton vs every kernel on torch."""
    from tests.test_train_loop import SAMPLE  # noqa: F401
    from tests.test_train_data_model import token_dir
    from train.config import build_train_config
    from train.trainer import train

    (tmp_path / "tokens").mkdir()
    docs, _ = token_dir(tmp_path / "tokens", [20, 35, 50, 12, 64, 40] * 8, vocab=97)
    runs = {}
    for impl in ("torch", "triton"):
        out = tmp_path / impl
        kernels = [f"model.{k}={impl}" for k in ("rmsnorm", "rope", "swiglu", "cross_entropy")]
        train(build_train_config(overrides=[
            f"data.train={tmp_path / 'tokens'}", f"out_dir={out}", "data.seq_len=16", "data.batch_size=2",
            "model.d_model=32", "model.n_layers=1", "model.n_heads=2", "steps=30", "progress=false",
            "log_every=1", "checkpoint_every=1000", "model.ce_chunk_tokens=16", *kernels]), log=lambda *_: None)
        import json

        runs[impl] = [json.loads(l)["loss"] for l in open(out / "metrics.jsonl")]
    assert len(runs["torch"]) == 30
    torch.testing.assert_close(torch.tensor(runs["triton"]), torch.tensor(runs["torch"]), rtol=1e-4, atol=1e-4)
