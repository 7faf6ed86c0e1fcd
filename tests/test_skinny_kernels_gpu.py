"""The decode-time kernels (family "skinny": x @ W.T for m <= 64) against float64 and the
fallback: every m-tile count, ragged n, split-K across blocks, leading dimensions longer than the
rows, alpha/beta with C, a bias row, and what they refuse."""

import pytest
import torch

import pycutlass_gemm as pg
from conftest import HAS_CUDA, rel, tolerance
from cutlass_cases import operand

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")

KERNELS = [k for k in pg.kernels() if k["family"] == "skinny"]
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
# (m, n, k): one m16 tile (m 1..16), two (17..32), four (33..64); n not a multiple of the 32-row
# block; narrow W (few blocks: K split across blocks, 2 kernels); K of 8; a 4096 x 4096 weight.
SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (5, 1000, 776), (17, 264, 136), (32, 520, 72), (33, 136, 8),
          (64, 4096, 1024), (7, 72, 65544), (16, 264, 16384), (3, 8, 8), (16, 14336, 512)]


def needs_skinny(kernel):
    major, minor = torch.cuda.get_device_capability()
    if not kernel["sm_min"] <= major * 10 + minor <= kernel["sm_max"]:
        pytest.skip(f"{kernel['name']} needs sm_{kernel['sm_min']}..{kernel['sm_max']}")


def check(kernel, a, b, c=None, *, alpha=1.0, beta=0.0, out=None):
    out = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=a.dtype) if out is None else out
    assert pg.can_run(kernel["name"], a, b, c, beta=beta, out=out) == ""
    pg.gemm(a, b, c, alpha=alpha, beta=beta, variant=kernel["name"], out=out)
    ref = alpha * (a.double() @ b.double()) + (beta * c.double() if c is not None else 0)
    oracle = pg.gemm(a, b, c, alpha=alpha, beta=beta, variant="fallback")
    tol = tolerance(a.dtype, "ieee", a.shape[1])
    err, vs_fallback = rel(out, ref), rel(out, oracle)
    print(f"{kernel['name']} {a.shape[0]}x{b.shape[1]}x{a.shape[1]}: error vs fp64 {err:.2e}, vs fallback "
          f"{vs_fallback:.2e} (tol {tol:.0e})")
    assert err < tol and vs_fallback < 2 * tol


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k["name"])
@pytest.mark.parametrize("m, n, k", SHAPES, ids=lambda x: str(x))
def test_skinny_matches_float64_and_fallback(kernel, m, n, k):
    needs_skinny(kernel)
    dtype = DTYPES[kernel["dtype"]]
    x = torch.randn(m, k, device="cuda", dtype=torch.float32).to(dtype)
    w = torch.randn(n, k, device="cuda", dtype=torch.float32).to(dtype)
    check(kernel, x, w.T)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k["name"])
def test_skinny_longer_rows_offsets_beta_and_bias(kernel):
    needs_skinny(kernel)
    dtype = DTYPES[kernel["dtype"]]
    # Leading dimensions 8 and 16 elements longer than the rows, pointers 8 elements (16 bytes) in.
    x = operand(12, 264, "row", dtype, pad=8, misalign=8)
    w_t = operand(264, 1000, "col", dtype, pad=16, misalign=8)
    check(kernel, x, w_t)
    c = operand(12, 1000, "row", dtype, pad=8)
    check(kernel, x, w_t, c, alpha=0.75, beta=-1.5)
    bias = torch.randn(1000, device="cuda", dtype=torch.float32).to(dtype)
    check(kernel, x, w_t, bias, beta=1.0)  # F.linear(x, W, b) at decode time


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k["name"])
def test_skinny_refuses_what_it_cannot_run(kernel):
    needs_skinny(kernel)
    dtype = DTYPES[kernel["dtype"]]
    x = lambda m, k: torch.randn(m, k, device="cuda").to(dtype)  # noqa: E731
    w_t = lambda n, k: torch.randn(n, k, device="cuda").to(dtype).T  # noqa: E731
    assert "m <= 64" in pg.can_run(kernel["name"], x(65, 64), w_t(64, 64))
    w = torch.randn(64, 64, device="cuda").to(dtype)
    assert "multiple of 8" in pg.can_run(kernel["name"], x(4, 64)[:, :52], w[:, :52].T)  # aligned rows, k = 52
    assert "row-major" in pg.can_run(kernel["name"], x(64, 4).T, w_t(64, 64))
    assert pg.can_run(kernel["name"], x(4, 64).unsqueeze(0).expand(2, 4, 64), w_t(64, 64))
    with pytest.raises(ValueError, match="cannot implement"):
        pg.gemm(x(65, 64), w_t(64, 64), variant=kernel["name"])
