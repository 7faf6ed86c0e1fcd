"""Every registered CUTLASS kernel, in the layouts it claims, against float64 and the fallback.

No instantiation is trusted until it matched an fp64 reference on the GPU: a tf32 stream-K kernel
once returned a relative error of 1.4 while its bf16 twin was right.
"""

import pytest
import torch

import pycutlass_gemm as pg
from conftest import gpu, rel_error, tolerance
from cutlass_cases import cases

pytestmark = [pytest.mark.gpu, gpu]
CASES = cases()


def needs_device_for(kernel: dict):
    major, minor = torch.cuda.get_device_capability()
    if not kernel["sm_min"] <= major * 10 + minor <= kernel["sm_max"]:
        pytest.skip(f"{kernel['name']} needs sm_{kernel['sm_min']}..{kernel['sm_max']}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_float64_and_fallback(case):
    needs_device_for(case.kernel)
    a, b, out = case.operands()
    name = case.kernel["name"]
    assert pg.can_run(name, a, b, out=out, precision=case.precision) == "", "the case must exercise the kernel"
    pg.gemm(a, b, variant=name, out=out, precision=case.precision)
    tol = tolerance(case.dtype, case.precision, case.k)
    err = rel_error(out, a, b)
    oracle = pg.gemm(a, b, variant="fallback")
    vs_fallback = float(torch.linalg.vector_norm(out.double() - oracle.double()) /
                        torch.linalg.vector_norm(oracle.double()).clamp_min(1e-300))
    print(f"{case.id}: error vs fp64 {err:.2e}, vs fallback {vs_fallback:.2e} (tol {tol:.0e})")
    assert err < tol, f"{case.id}: error vs float64 {err:.2e} >= {tol:.0e}"
    assert vs_fallback < 2 * tol, f"{case.id}: differs from the fallback by {vs_fallback:.2e}"
