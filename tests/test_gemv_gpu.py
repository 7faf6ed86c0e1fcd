"""The matrix-vector kernel (cpp/gemv.cu: M or N of 1, any dtype, layout, stride and alignment)
against float64 and the fallback.

Each case: fresh random inputs, a NaN-poisoned output, the vector on either side (N = 1: A is the
matrix; M = 1: B is), the matrix read along K (row-major A, column-major B) and along M / N (the
other layouts), words (16 bytes along K, 8 along M / N) and the scalar path (padded, misaligned),
short and long K (split across blocks into slices the reduction adds), batches (one operand
broadcast), alpha, beta and C.
"""

import pytest
import torch

import pycutlass_gemm as pg
from conftest import check_kernel, dtype_id, gpu, poisoned, rel, tolerance
from cutlass_cases import operand

pytestmark = [pytest.mark.gpu, gpu]

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
LAYOUTS = [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col")]
# (m, n, k): one column and one row of D, short and long, K that ends inside a 16-byte word, K of one
# element, a dot product (1 x 1), a long K over few rows (split into slices), short K over many rows
# (fewer lanes a row along K; rows of 15 and 40 elements start off 16-byte boundaries), and 12 / 6 rows
# along M (a block's few lanes, K in many phases; 12 x 1 x 3000 also split across blocks).
SHAPES = [(4096, 1, 4096), (1, 4096, 4096), (1000, 1, 777), (1, 1001, 520), (37, 1, 1), (1, 1, 65536),
          (1, 1, 3), (256, 1, 65536), (1, 64, 100003), (65536, 1, 64), (3000, 1, 15), (1, 3001, 40),
          (12, 1, 3000), (6, 1, 500)]


def check(a, b, c, out, *, alpha=1.0, beta=0.0):
    check_kernel("gemv", a, b, c, out, alpha=alpha, beta=beta)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("la, lb", LAYOUTS, ids=lambda x: x)
@pytest.mark.parametrize("m, n, k", SHAPES, ids=str)
def test_gemv_matches_float64_and_fallback(dtype, la, lb, m, n, k):
    dot = m == n == 1  # one output: positive terms, no cancellation (operand's docstring)
    a, b = operand(m, k, la, dtype, positive=dot), operand(k, n, lb, dtype, positive=dot)
    check(a, b, None, poisoned(m, n, dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("la, lb", LAYOUTS, ids=lambda x: x)
@pytest.mark.parametrize("m, n, k", [(1000, 1, 4100), (1, 1000, 4100), (3, 1, 20000)], ids=str)
@pytest.mark.parametrize("pad, misalign", [(1, 1), (8, 0), (3, 5)], ids=["pad1+1", "pad8", "pad3+5"])
def test_gemv_padded_and_misaligned(dtype, la, lb, m, n, k, pad, misalign):
    """Leading dimensions longer than the rows, first elements past an aligned address: the 16-byte
    path where the matrix's rows stay aligned (pad 8, no offset), the scalar one elsewhere."""
    a = operand(m, k, la, dtype, pad=pad, misalign=misalign)
    b = operand(k, n, lb, dtype, pad=pad, misalign=misalign + 1)
    check(a, b, None, poisoned(m, n, dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("m, n, k", [(520, 1, 1032), (1, 520, 1032), (7, 1, 30000)], ids=str)
def test_gemv_batched(dtype, m, n, k):
    """Batches one matrix plus 3 elements apart (odd batch strides), and one operand broadcast."""
    a, b = operand(m, k, "row", dtype, batch=3), operand(k, n, "col", dtype, batch=3)
    check(a, b, None, poisoned(m, n, dtype, batch=3))
    b2 = operand(k, n, "row", dtype)  # 2-D: broadcast over A's batch
    check(a, b2, None, poisoned(m, n, dtype, batch=3))
    a2 = operand(m, k, "col", dtype)
    check(a2, b, None, poisoned(m, n, dtype, batch=3))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("m, n, k", [(1000, 1, 1032), (1, 1000, 1032), (5, 1, 40000), (1, 6, 40000)], ids=str)
def test_gemv_epilogue(dtype, m, n, k):
    """alpha and beta with C (row-major, and D's own storage as C); the long-K shapes split K, so the
    epilogue is the reduction's."""
    a, b = operand(m, k, "row", dtype), operand(k, n, "row", dtype)
    c = torch.randn(m, n, device="cuda").to(dtype)
    check(a, b, c, poisoned(m, n, dtype), alpha=0.75, beta=-1.5)
    out = torch.randn(m, n, device="cuda").to(dtype)
    c_before = out.clone()
    pg.gemm(a, b, out, alpha=0.5, beta=2.0, variant="gemv", out=out)
    ref = 0.5 * (a.double() @ b.double()) + 2.0 * c_before.double()
    assert not torch.isnan(out).any() and rel(out, ref) < tolerance(dtype, "ieee", k)


def test_gemv_refuses_matrices_and_auto_runs_it():
    a, b = operand(64, 256, "row", torch.float32), operand(256, 2, "row", torch.float32)
    assert "needs M or N of 1" in pg.can_run("gemv", a, b)
    for m, n in [(4096, 1), (1, 4096)]:
        for precision in ("ieee", "tf32", "tf32x3"):
            a, b = operand(m, 4096, "col", torch.float32), operand(4096, n, "row", torch.float32)
            assert pg.plan(a, b, precision=precision)["kernel"] == "gemv"
    a, b = operand(1, 4096, "row", torch.bfloat16), operand(4096, 4096, "row", torch.bfloat16)
    assert pg.plan(a, b)["kernel"] == "gemv"
