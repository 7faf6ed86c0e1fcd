"""The naive and fallback kernels on the GPU against float64: every layout, dtype and awkward shape.

The fallback is the oracle for every CUTLASS kernel, so it gets the widest net: odd shapes,
padded leading dimensions, misaligned pointers and views that are neither row- nor column-major.
"""

import pytest
import torch

import pycutlass_gemm as pg
from conftest import WORKLOADS, dtype_id, gpu, matrix, poisoned, rel_error, tolerance

pytestmark = [pytest.mark.gpu, gpu]

LAYOUTS = [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col")]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
SHAPES = [(0, 5, 7), (5, 0, 7), (5, 7, 0), (1, 1, 1), (7, 7, 7), (33, 1, 257), (1, 33, 7),
          (257, 33, 129), (130, 257, 33), (65, 70, 2049),  # the last splits K across blocks
          (5, 40, 4099), (300, 9, 1500), (20, 30, 3000)]  # the fallback's 32x32 tiles, K split across blocks


def check(variant, m, n, k, la, lb, dtype, **layout_kw):
    a = matrix(m, k, la, dtype, **layout_kw)
    b = matrix(k, n, lb, dtype, **layout_kw)
    out = poisoned(m, n, dtype)
    pg.gemm(a, b, variant=variant, out=out, precision="ieee")
    err = rel_error(out, a, b)
    tol = tolerance(dtype, "ieee", k)
    assert err < tol, f"{variant} {la}{lb} {dtype} {m}x{n}x{k}: error {err:.2e} >= {tol:.0e}"
    return err


@pytest.mark.parametrize("variant", ["naive", "fallback"])
@pytest.mark.parametrize("la, lb", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_small_shapes(variant, la, lb, dtype, m, n, k):
    check(variant, m, n, k, la, lb, dtype)


@pytest.mark.parametrize("variant", ["naive", "fallback"])
@pytest.mark.parametrize("la, lb", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_padded_and_misaligned(variant, la, lb, dtype):
    check(variant, 67, 45, 91, la, lb, dtype, pad=3, misalign=1)


@pytest.mark.parametrize("variant", ["naive", "fallback"])
@pytest.mark.parametrize("la, lb", [("strided", "row"), ("col", "strided"), ("strided", "strided")])
def test_neither_row_nor_column_major(variant, la, lb):
    check(variant, 70, 50, 90, la, lb, torch.float32)
    assert pg.plan(matrix(70, 90, la, torch.float32), matrix(90, 50, lb, torch.float32))["kernel"] == "fallback"


def test_float64_path():
    check("fallback", 65, 130, 257, "col", "row", torch.float64)
    check("fallback", 3, 70, 1000, "row", "col", torch.float64)  # 32x32 tiles, K split


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_fallback_workloads(workload, dtype):
    m, n, k, la, lb = WORKLOADS[workload]
    check("fallback", m, n, k, la, lb, dtype)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_naive_workloads_reduced(workload):
    m, n, k, la, lb = WORKLOADS[workload]
    check("naive", m // 8, n // 8, k // 64, la, lb, torch.float32)


def test_transposed_views_are_not_copied():
    # A.T of a row-major (K, M) tensor is passed as is: the kernel reads the original storage.
    a_storage = torch.randn(96, 64, device="cuda")
    b = torch.randn(96, 80, device="cuda")
    assert pg.layout_of(a_storage.T) == "col"
    out = pg.gemm(a_storage.T, b, variant="fallback")
    assert out.is_contiguous() and out.shape == (64, 80)
    assert rel_error(out, a_storage.T, b) < 1e-5


def test_out_into_column_major_view():
    a, b = matrix(40, 30, "row", torch.float32), matrix(30, 20, "col", torch.float32)
    out = torch.full((20, 40), float("nan"), device="cuda").T
    result = pg.gemm(a, b, out=out, variant="fallback")
    assert result.data_ptr() == out.data_ptr()
    assert rel_error(out, a, b) < 1e-5


def test_bad_out_and_context_stays_usable():
    a = torch.randn(8, 16, device="cuda")
    b = torch.randn(16, 4, device="cuda")
    with pytest.raises(ValueError, match="out must have shape"):
        pg.gemm(a, b, out=torch.empty(4, 8, device="cuda"))
    with pytest.raises(TypeError, match="out must have dtype"):
        pg.gemm(a, b, out=torch.empty(8, 4, device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="out must be on"):
        pg.gemm(a, b, out=torch.empty(8, 4))
    with pytest.raises(ValueError, match="overlaps a"):
        pg.gemm(a, b, out=a[:, :4])
    with pytest.raises(ValueError, match="row- or column-major"):
        pg.gemm(a, b, out=torch.empty(1, 4, device="cuda").expand(8, 4))
    with pytest.raises(ValueError, match="no kernel named"):
        pg.gemm(a, b, variant="no_such_kernel")
    with pytest.raises(ValueError, match="needs CUDA tensors"):
        pg.gemm(a.cpu(), b.cpu())
    # the context is still usable after every refusal
    assert rel_error(pg.gemm(a, b, variant="fallback"), a, b) < 1e-5
    torch.cuda.synchronize()


def test_auto_on_non_hopper_warns_once(monkeypatch):
    if torch.cuda.get_device_capability() == (9, 0):
        pytest.skip("this GPU is sm_90")
    a, b = torch.randn(8, 8, device="cuda"), torch.randn(8, 8, device="cuda")
    with pytest.warns(RuntimeWarning, match="runs the fallback kernel"):
        pg.gemm(a, b)
