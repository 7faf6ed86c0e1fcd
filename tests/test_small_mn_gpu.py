"""The small-M/N kernels (cpp/small_mn_gemm.cu: M or N <= 32, A row-major, B column-major) against
float64 and the fallback (built unless -DPYCUTLASS_GEMM_SMALL_MN=OFF; without them every test
here skips).

Each case: fresh random inputs, a NaN-poisoned row-major output, the small side on either operand
(X = A for small M, X = B^T for small N), K that ends inside a 16-byte word and inside a 32-k step,
leading dimensions longer than the rows, batches, beta with a full C and with F.linear's bias row.
What they refuse is checked without a GPU (test_api_cpu.py).
"""

import pytest
import torch

import pycutlass_gemm as pg
from conftest import check_kernel, dtype_id, gpu, poisoned
from cutlass_cases import operand

pytestmark = [pytest.mark.gpu, gpu]

KERNELS = {"bfloat16": "small_mn_bf16_rc", "float16": "small_mn_f16_rc"}
DTYPES = [torch.bfloat16, torch.float16]
# (m, n, k): decode shapes (x @ W.T), their mirror, one and two 16-row tiles and ragged ones,
# one output row or column, K past a 16-byte word (K % 8) and past a 32-k step, K of one word,
# K longer than a block's warps cover in one turn, and a long K; W of few rows against a long K
# (K split across blocks, the last slice partial) for each side.
SHAPES = [(16, 4096, 4096), (1, 4096, 4096), (7, 1000, 520), (17, 264, 1032), (32, 2048, 1024),
          (4096, 16, 4096), (1000, 1, 520), (264, 25, 1032), (5, 9, 64), (16, 520, 1001), (3, 136, 8),
          (16, 136, 24), (31, 72, 4104), (8, 264, 65544), (16, 64, 16384), (4, 16, 65544), (64, 8, 8200),
          (32, 200, 12296)]


def built(dtype: torch.dtype) -> str:
    name = KERNELS[dtype_id(dtype)]
    if name not in {k["name"] for k in pg.kernels()}:
        pytest.skip(f"{name} is not built (configure with -DPYCUTLASS_GEMM_SMALL_MN=ON)")
    return name


def operands(m, n, k, dtype, *, pad=0, batch=1):
    """A (row-major, leading dimension a multiple of 8 elements plus `pad` x 8) and B
    (column-major likewise): the kernel's 16-byte alignment with rows longer than K."""
    lead = -k % 8 + 8 * pad
    a = operand(m, k, "row", dtype, pad=lead, batch=batch, batch_align=8)
    b = operand(k, n, "col", dtype, pad=lead, batch=batch, batch_align=8)
    return a, b


check = check_kernel


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("m, n, k", SHAPES, ids=str)
def test_small_mn_matches_float64_and_fallback(dtype, m, n, k):
    name = built(dtype)
    a, b = operands(m, n, k, dtype)
    check(name, a, b, None, poisoned(m, n, dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("m, n, k", [(16, 1000, 1032), (1000, 16, 1032), (16, 40, 5000)], ids=str)
def test_small_mn_batched_padded(dtype, m, n, k):
    name = built(dtype)
    a, b = operands(m, n, k, dtype, pad=1, batch=3)
    out = poisoned(m, n, dtype, batch=3)
    check(name, a, b, None, out)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("m, n, k", [(12, 1000, 1032), (1000, 12, 1032), (12, 40, 5000)], ids=str)
def test_small_mn_epilogue(dtype, m, n, k):
    """alpha and beta with a row-major C, and F.linear's bias row (beta 1); the last shape splits K
    across blocks, so the epilogue is sum_split_k_partials'."""
    name = built(dtype)
    a, b = operands(m, n, k, dtype)
    c = torch.randn(m, n, device="cuda").to(dtype)
    check(name, a, b, c, poisoned(m, n, dtype), alpha=0.75, beta=-1.5)
    bias = torch.randn(n, device="cuda").to(dtype).expand(m, n)
    check(name, a, b, bias, poisoned(m, n, dtype), beta=1.0)


@pytest.mark.parametrize("launch", ["1,1", "1,8", "2,3", "4,8", "4,2", "1,4", "2,5"])
@pytest.mark.parametrize("m, n, k", [(16, 1000, 4104), (1000, 25, 1800), (2, 264, 520), (16, 40, 5000)], ids=str)
def test_small_mn_launch_settings(monkeypatch, launch, m, n, k):
    """Every block shape and a range of warp counts the launch knob reaches, K's last turn partial;
    the last shape splits K across blocks."""
    name = built(torch.bfloat16)
    monkeypatch.setenv("PYCUTLASS_GEMM_SMALL_MN_LAUNCH", launch)
    a, b = operands(m, n, k, torch.bfloat16)
    check(name, a, b, None, poisoned(m, n, torch.bfloat16))
