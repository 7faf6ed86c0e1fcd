"""Shared test helpers: operands of any layout, the float64 reference, tolerances."""

import math
import time

import pytest
import torch

import pycutlass_gemm as pg
from pycutlass_gemm import heuristics

HAS_CUDA = torch.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
# A build with a subset of the CUTLASS kernels (PYCUTLASS_GEMM_KERNELS=none, say) plans most
# problems onto the fallback: tests that need auto to have a faster kernel skip there.
cutlass_built = pytest.mark.skipif(not any(k["family"].startswith("cutlass") for k in pg.kernels()),
                                   reason="needs the CUTLASS kernels (a build with PYCUTLASS_GEMM_KERNELS=none has none)")

# ‖out − ref‖/‖ref‖ against float64, per precision, for K up to 8192. Rounding error of a length-K
# sum grows like sqrt(K), so longer sums get proportionally more room (x8 at K = 524288); a wrong
# index or a race gives errors of order 1, far above any of these.
BASE_TOLERANCE = {"ieee": 1e-5, "tf32": 2e-3, "tf32x3": 1e-5, "float16": 1e-2, "bfloat16": 1e-2, "float64": 1e-12}
# The workloads of ../shared/problems.md: (m, n, k, layout of A, layout of B) as the product sees them.
WORKLOADS = {
    "transposed_a": (2048, 4096, 8192, "col", "row"),
    "transposed_b": (2048, 4096, 8192, "row", "col"),
    "large_k": (256, 256, 524288, "row", "row"),
}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}


def dtype_id(dtype: torch.dtype) -> str:
    """Readable test ids: "float32" rather than "dtype0"."""
    return str(dtype).removeprefix("torch.")


def tolerance(dtype: torch.dtype, precision: str, k: int) -> float:
    key = precision if dtype == torch.float32 else str(dtype).removeprefix("torch.")
    return BASE_TOLERANCE[key] * max(1.0, math.sqrt(k / 8192))


def matrix(rows, cols, layout, dtype, *, pad=0, misalign=0, device="cuda", generator=None):
    """A fresh random (rows, cols) operand stored `layout` ("row", "col" or "strided": every other
    column of a wider row-major tensor), with its leading dimension `pad` elements longer than
    needed and its first element `misalign` elements past an aligned address."""
    randn = lambda n: torch.randn(n, device=device, dtype=torch.float32, generator=generator).to(dtype)
    if layout == "row":
        shape, strides = (rows, cols), (cols + pad, 1)
    elif layout == "col":
        shape, strides = (rows, cols), (1, rows + pad)
    elif layout == "strided":
        shape, strides = (rows, cols), (2 * cols + pad, 2)
    else:
        raise ValueError(layout)
    span = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if rows and cols else 0
    storage = randn(span + misalign)
    return torch.as_strided(storage, shape, strides, misalign)


def poisoned(m, n, dtype, device="cuda", *, batch=1):
    """A row-major output (batch of them when batch > 1) filled with NaN, so any element a kernel fails to write
    shows."""
    return torch.full((batch, m, n) if batch > 1 else (m, n), float("nan"), dtype=dtype, device=device)


def rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖/‖ref‖ in float64."""
    ref = ref.double()
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


def check_kernel(name, a, b, c, out, *, alpha=1.0, beta=0.0):
    """Runs kernel `name` (it must accept the case) into the NaN-poisoned `out` and checks it against float64 and
    the fallback (the oracle): every output written, error within the dtype's tolerance for K."""
    k = a.shape[-1]
    assert pg.can_run(name, a, b, c, beta=beta, out=out) == "", "the case must exercise the kernel"
    pg.gemm(a, b, c, alpha=alpha, beta=beta, variant=name, out=out)
    ref = alpha * torch.matmul(a.double(), b.double())
    if c is not None:
        ref = ref + beta * c.double()
    err, tol = rel(out, ref), tolerance(out.dtype, "ieee", k)
    oracle = pg.gemm(a, b, c, alpha=alpha, beta=beta, variant="fallback")
    vs_fallback = rel(out, oracle)
    print(f"{name} {dtype_id(a.dtype)} {tuple(a.shape)} {tuple(a.stride())} @ {tuple(b.shape)} {tuple(b.stride())}: "
          f"error vs fp64 {err:.2e}, vs fallback {vs_fallback:.2e} (tol {tol:.0e})")
    assert not torch.isnan(out).any(), "an output was not written"
    assert err < tol, f"error vs float64 {err:.2e} >= {tol:.0e}"
    assert vs_fallback < 2 * tol, f"differs from the fallback by {vs_fallback:.2e}"


def rel_error(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    ref = a.double() @ b.double()
    if ref.numel() == 0:
        return 0.0
    err = torch.linalg.vector_norm(out.double() - ref)
    ref_norm = torch.linalg.vector_norm(ref)
    if ref_norm > 0:  # an all-zero reference (K = 0) leaves the absolute error
        err = err / ref_norm
    return float(err)  # NaN if anything was left unwritten: NaN < tol is False


class WallClockEvent:
    """torch.cuda.Event on the host clock: enough to run the timing code's logic on the CPU."""

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


@pytest.fixture(params=["cxx", "python"])
def routing(request, monkeypatch):
    """enable() with its C++ kernels of aten::mm / aten::bmm (where torch exports its stable C ABI)
    and with the Python kernels only."""
    import pycutlass_gemm as pg
    from pycutlass_gemm import routing as r

    if request.param == "python":
        monkeypatch.setenv("PYCUTLASS_GEMM_PYTHON_ROUTING", "1")
    elif r.cxx_kernels_unavailable():
        pytest.skip(f"no C++ kernels for enable(): {r.cxx_kernels_unavailable()}")
    yield request.param
    while pg.enabled():
        pg.disable()


@pytest.fixture
def tables():
    """Install measured tables for one test (a function taking the list); the shipped ones are back afterwards."""
    yield lambda ts: heuristics.install(ts)
    heuristics.install()
