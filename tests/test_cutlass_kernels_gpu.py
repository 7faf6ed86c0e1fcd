"""Every registered CUTLASS kernel, in the layouts it claims, against float64 and the fallback.

No instantiation is trusted until it matched an fp64 reference on the GPU: a tf32 stream-K kernel
once returned a relative error of 1.4 while its bf16 twin was right.
"""

import os
import subprocess
import sys

import pytest
import torch

import pycutlass_gemm as pg
from pycutlass_gemm import heuristics
from conftest import WORKLOADS, dtype_id, gpu, matrix, poisoned, rel, rel_error, tolerance
from cutlass_cases import SPLIT_K_SHAPES, Case, aligned_shape, cases, cutlass_kernels, splits_k_in_parallel
from pycutlass_gemm.bench_accuracy import make_operands
from pycutlass_gemm.bench_timing import torch_matmul_precision

pytestmark = [pytest.mark.gpu, gpu]
CASES = cases()


def needs_device_for(kernel: dict):
    major, minor = torch.cuda.get_device_capability()
    if not kernel["sm_min"] <= major * 10 + minor <= kernel["sm_max"]:
        pytest.skip(f"{kernel['name']} needs sm_{kernel['sm_min']}..{kernel['sm_max']}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_float64_and_fallback(case):
    needs_device_for(case.kernel)
    a, b, c, out = case.operands()
    name = case.kernel["name"]
    assert pg.can_run(name, a, b, c, beta=case.beta, out=out, precision=case.precision) == "", \
        "the case must exercise the kernel"
    pg.gemm(a, b, c, alpha=case.alpha, beta=case.beta, variant=name, out=out, precision=case.precision)
    tol = tolerance(case.dtype, case.precision, case.k)
    if c is None:
        err = rel_error(out, a, b)
    else:
        err = rel(out, case.alpha * torch.matmul(a.double(), b.double()) + case.beta * c.double())
    oracle = pg.gemm(a, b, c, alpha=case.alpha, beta=case.beta, variant="fallback")
    vs_fallback = float(torch.linalg.vector_norm(out.double() - oracle.double()) /
                        torch.linalg.vector_norm(oracle.double()).clamp_min(1e-300))
    print(f"{case.id}: error vs fp64 {err:.2e}, vs fallback {vs_fallback:.2e} (tol {tol:.0e})")
    assert err < tol, f"{case.id}: error vs float64 {err:.2e} >= {tol:.0e}"
    assert vs_fallback < 2 * tol, f"{case.id}: differs from the fallback by {vs_fallback:.2e}"


# (m, n, k, layout of A, layout of B): the workloads, then shapes whose rows are not 16-byte
# multiples (TMA kernels refuse them; auto must pass them on: for 16-bit types to the alignment-1
# staged wgmma or cutlass_sm80 kernels, or with only D unaligned to the TMA kernels that store D
# from registers),
# the shapes of tracker issue 10, and a single output column (the matrix-vector kernel's).
AUTO_SHAPES = [w for w in WORKLOADS.values()] + [
    (127, 259, 200, "col", "row"), (1000, 3000, 777, "row", "row"), (2048, 1001, 2048, "row", "row"),
    (2048, 1001, 2048, "row", "col"), (96, 1, 4096, "row", "row")]
PRECISIONS = [(torch.float32, "ieee"), (torch.float32, "tf32"), (torch.float32, "tf32x3"), (torch.bfloat16, "ieee"),
              (torch.float16, "ieee")]


@pytest.fixture(params=["table", "rules"])
def chooser(request):
    """auto as shipped (the measured table decides on the GPU it was measured on), and the priority
    rules alone (what decides on any other GPU)."""
    if request.param == "rules":
        heuristics.install([])
    yield request.param
    heuristics.install()


@pytest.mark.parametrize("dtype, precision", PRECISIONS, ids=lambda x: dtype_id(x) if isinstance(x, torch.dtype) else x)
@pytest.mark.parametrize("m, n, k, la, lb", AUTO_SHAPES, ids=lambda x: str(x))
def test_auto_dispatch(chooser, dtype, precision, m, n, k, la, lb):
    """variant="auto" runs what plan() names, that kernel is right, and it is the one expected: the
    measured table's when it decided; by the rules, on sm_90 a CUTLASS kernel whenever one can take
    the problem, stream-K for the large-K shape."""
    a, b, out = matrix(m, k, la, dtype), matrix(k, n, lb, dtype), poisoned(m, n, dtype)
    plan = pg.plan(a, b, out=out, precision=precision)
    chosen = plan["kernel"]
    pg.gemm(a, b, out=out, precision=precision)
    err, tol = rel_error(out, a, b), tolerance(dtype, precision, k)
    print(f"auto ({chooser}) {dtype_id(dtype)}/{precision} {m}x{n}x{k} {la}{lb}: {chosen}, error vs fp64 {err:.2e}")
    assert err < tol, f"auto ran {chosen}: error {err:.2e} >= {tol:.0e}"
    if min(m, n) == 1:  # a matrix-vector product: the gemv kernel, unless small_mn ranks itself first (the tie is
        # small_mn's) or, where small_mn is the rules' first, a measured table's point decides
        if not chosen.startswith("small_mn_") and not plan["reason"].startswith("fastest measured"):
            assert chosen == "gemv", f"a matrix-vector product ran {chosen}"
        return
    if torch.cuda.get_device_capability() != (9, 0):
        assert chosen == "fallback"
        return
    if chooser == "table" and plan["reason"].startswith("fastest measured"):
        return  # measured: whichever kernel was fastest there (and it was right, above); else the rules decided
    if chosen.startswith("small_mn_"):  # ranked first by its own priority() where it is measured fastest
        short_k = k < 256 and min(m, n) <= 16 and max(m, n) <= 4096
        assert min(m, n) <= 32 and (256 <= k <= 4096 or short_k), f"small_mn chosen for {m}x{n}x{k}"
        return
    runnable = [kern["name"] for kern in cutlass_kernels() if kern["dtype"] == dtype_id(dtype)
                and pg.can_run(kern["name"], a, b, out=out, precision=precision) == ""]
    if not runnable:
        assert chosen == "fallback"
        return
    assert chosen in runnable
    # TMA kernels first whenever they can take the problem; the alignment-1 tensor-core kernels
    # (the staged wgmma ones and SM80's) only for what they cannot.
    any_alignment = {kern["name"] for kern in cutlass_kernels() if kern["alignment"] == 1}
    if any(name.startswith("sm90_") and name not in any_alignment for name in runnable):
        assert chosen.startswith("sm90_") and chosen not in any_alignment, \
            f"a TMA kernel can run this, auto chose {chosen}"
    elif dtype in (torch.bfloat16, torch.float16) and any(name in any_alignment for name in runnable):
        assert chosen in any_alignment, f"an alignment-1 tensor-core kernel can run this, auto chose {chosen}"
    if (m, n, k) == WORKLOADS["large_k"][:3] and any("streamk" in name for name in runnable):
        assert "streamk" in chosen or (chosen.startswith("sm90_") and "_splitk" in chosen), \
            f"large K should run stream-K or split-K, auto chose {chosen}"


@pytest.mark.parametrize("deterministic", [True, False], ids=["deterministic", "any_order"])
def test_split_k_follows_torch_determinism(deterministic):
    """Stream-K kernels that split K add their partial sums in a fixed order when
    torch.use_deterministic_algorithms(True) is on (bit-for-bit repeatable), concurrently
    otherwise; both are right. The split-K kernels (SIMT, SM90 "_splitk") always add in order."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the stream-K kernels are built for sm_90")
    m, n, k = 256, 256, 131072
    for kern in [kern for kern in cutlass_kernels() if ("streamk" in kern["name"] or "splitk" in kern["name"])
                 and kern["layout_a"] == "row"
                 and kern["layout_b"] == "row" and kern["dtype"] in ("bfloat16", "float32")]:
        dtype = torch.bfloat16 if kern["dtype"] == "bfloat16" else torch.float32
        a, b = matrix(m, k, "row", dtype), matrix(k, n, "row", dtype)
        saved = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(deterministic)
        try:
            outs = [pg.gemm(a, b, variant=kern["name"], precision=kern["math"]) for _ in range(3)]
        finally:
            torch.use_deterministic_algorithms(saved)
        tol = tolerance(dtype, kern["math"], k)
        errors = [rel_error(out, a, b) for out in outs]
        print(f"{kern['name']} deterministic={deterministic}: errors vs fp64 {', '.join(f'{e:.2e}' for e in errors)}")
        assert max(errors) < tol
        if deterministic or "splitk" in kern["name"]:
            assert all(torch.equal(outs[0], out) for out in outs[1:]), f"{kern['name']}: runs differ"


# Problems whose K slices are added by a second kernel (split_k_reduce.cu) after the product: SM90
# split-K, small_mn's split, SIMT split-K (IEEE fp32), the fallback's split (wide and narrow tiles),
# an SM80 kernel's split (16-bit partials).
SPLIT_PROBLEMS = [(256, 256, 131072, "rr", torch.bfloat16, "auto"), (4, 16, 65536, "rc", torch.bfloat16, "auto"),
                  (256, 256, 65536, "rr", torch.float32, "auto"), (64, 64, 65536, "rr", torch.float32, "fallback"),
                  (1, 16, 65535, "rc", torch.bfloat16, "fallback"),
                  (77, 45, 8197, "cc", torch.float16, "sm80_f16_cc_128x128x32_a1_s2")]
SPLIT_OUTPUTS = """
import torch
import pycutlass_gemm as pg
from conftest import matrix, poisoned
outs = []
for i, (m, n, k, layout, dtype, variant) in enumerate(PROBLEMS):
    g = torch.Generator(device="cuda").manual_seed(i)
    a = matrix(m, k, {"r": "row", "c": "col"}[layout[0]], dtype, generator=g)
    b = matrix(k, n, {"r": "row", "c": "col"}[layout[1]], dtype, generator=g)
    out, precision = poisoned(m, n, dtype), "ieee" if dtype is torch.float32 else None
    pg.gemm(a, b, variant=variant, out=out, precision=precision)
    name = pg.plan(a, b, precision=precision)["kernel"] if variant == "auto" else variant
    outs.append((name, out.cpu(), a, b))
"""


def test_split_k_reduction_after_its_product_matches_a_plain_launch(tmp_path):
    """On sm_90 the reduction of K slices is launched as a programmatic dependent of the product (its
    blocks start as the product's last ones exit and wait for the partials); PYCUTLASS_GEMM_PDL=0
    launches it plainly, in a process of its own. The two give the same bits (the reduction's order
    is fixed), and both match float64."""
    env = dict(os.environ, PYCUTLASS_GEMM_PDL="0")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    code = (f"import torch\nPROBLEMS = {SPLIT_PROBLEMS!r}\n" + SPLIT_OUTPUTS +
            f"torch.save([(name, out) for name, out, _, _ in outs], {str(tmp_path / 'plain.pt')!r})\n")
    subprocess.run([sys.executable, "-c", code], env=env, cwd=tests_dir, check=True, timeout=300)
    plain = torch.load(tmp_path / "plain.pt")
    scope = {"PROBLEMS": SPLIT_PROBLEMS}
    exec(SPLIT_OUTPUTS, scope)
    for (m, n, k, layout, dtype, variant), (name, out, a, b), (plain_name, plain_out) in zip(
            SPLIT_PROBLEMS, scope["outs"], plain):
        err, plain_err = rel_error(out.cuda(), a, b), rel_error(plain_out.cuda(), a, b)
        print(f"{m}x{n}x{k} {layout} {dtype} {name}: error vs fp64 {err:.2e} (plain launch {plain_err:.2e})")
        assert name == plain_name
        assert err < tolerance(dtype, "ieee", k)
        assert torch.equal(out, plain_out), f"{name}: the reduction after the product and a plain launch differ"


# The reduction writes D four outputs a store where D's rows allow it (split_k_reduce.cu, kRowPacks: rows of
# adjacent outputs at multiples of 4 elements from an aligned pointer) and output by output elsewhere: each form of
# D, and C read where beta != 0, after an SM90 split-K product (bf16), SIMT split-K (fp32) and the fallback's split.
SPLIT_D_FORMS = ["row", "row_padded_odd", "misaligned", "col", "beta"]
SPLIT_D_PRODUCTS = [("sm90_bf16_rr_128x256x64_c2x1_coop_splitk", 256, 256, 131072, torch.bfloat16),
                    ("simt_f32_rr_128x128x8_splitk", 256, 256, 65536, torch.float32),
                    ("fallback", 64, 64, 65536, torch.float32)]


def split_d(form, m, n, dtype):
    """A NaN-filled m x n D of the form named."""
    if form == "row_padded_odd":  # rows 3 elements apart past n: no row but the first starts at a multiple of 4
        return torch.full((m, n + 3), float("nan"), dtype=dtype, device="cuda")[:, :n]
    if form == "misaligned":  # one element past an aligned address
        return torch.full((m * n + 1,), float("nan"), dtype=dtype, device="cuda")[1:].view(m, n)
    if form == "col":
        return torch.full((n, m), float("nan"), dtype=dtype, device="cuda").T
    return poisoned(m, n, dtype)


@pytest.mark.parametrize("form", SPLIT_D_FORMS)
@pytest.mark.parametrize("variant, m, n, k, dtype", SPLIT_D_PRODUCTS, ids=[p[0] for p in SPLIT_D_PRODUCTS])
def test_split_k_reduction_writes_every_form_of_d(variant, m, n, k, dtype, form):
    if variant != "fallback" and variant not in {kern["name"] for kern in pg.kernels()}:
        pytest.skip(f"{variant} is not built")
    a, b = matrix(m, k, "row", dtype), matrix(k, n, "row", dtype)
    d = split_d(form, m, n, dtype)
    c, beta = (matrix(m, n, "row", dtype), 0.75) if form == "beta" else (None, 0.0)
    precision = "ieee" if dtype is torch.float32 else None
    why = pg.can_run(variant, a, b, c, beta=beta, out=d, precision=precision)
    if why:
        pytest.skip(f"{variant} refuses D {form}: {why}")
    pg.gemm(a, b, c, beta=beta, variant=variant, out=d, precision=precision)
    ref = a.double() @ b.double() + (beta * c.double() if c is not None else 0.0)
    err = rel(d, ref)
    print(f"{variant} {m}x{n}x{k} D {form}: error vs fp64 {err:.2e}")
    assert err < tolerance(dtype, "ieee", k)


# Every SM90 kernel on a problem it runs (split-K: long K over few tiles), for the test below.
BACK_TO_BACK = [Case(kern, *aligned_shape(kern, *(SPLIT_K_SHAPES[0] if splits_k_in_parallel(kern) else (384, 264, 520))), 0)
                for kern in cutlass_kernels() if kern["family"] == "cutlass_sm90"]


@pytest.mark.parametrize("case", BACK_TO_BACK, ids=[c.id for c in BACK_TO_BACK])
def test_kernel_waits_for_the_kernel_before_it(case):
    """Products between other kernels on one stream, nothing synchronized: on sm_90 the SM90 kernels
    launch as programmatic dependents of the kernel before them (scheduled as its last blocks exit),
    so each must wait for it before reading its inputs and before writing its output. Each product
    here reads an A that the kernel just before it wrote (torch.mul, a new scale each time), and
    overwrites a D that the kernel just before it read (a copy); every copy and the last D must
    match float64 for their own scale."""
    needs_device_for(case.kernel)
    name, m, n, k = case.kernel["name"], case.m, case.n, case.k
    base = matrix(m, k, case.kernel["layout_a"], case.dtype)
    a = matrix(m, k, case.kernel["layout_a"], case.dtype)
    b = matrix(k, n, case.kernel["layout_b"], case.dtype)
    d = poisoned(m, n, case.dtype)
    assert pg.can_run(name, a, b, out=d, precision=case.precision) == "", "the case must exercise the kernel"
    scales, copies = [1.0, -2.0, 0.5, 4.0], []
    for scale in scales:
        torch.mul(base, scale, out=a)
        pg.gemm(a, b, variant=name, out=d, precision=case.precision)
        copies.append(d.clone())
        pg.gemm(a, b, alpha=-3.0, variant=name, out=d, precision=case.precision)
    ref = torch.matmul(base.double(), b.double())
    tol = tolerance(case.dtype, case.precision, k)
    errors = [rel(copy, scale * ref) for scale, copy in zip(scales, copies)] + [rel(d, -3.0 * scales[-1] * ref)]
    print(f"{case.id}: errors vs fp64 {' '.join(f'{e:.1e}' for e in errors)} (tol {tol:.0e})")
    assert max(errors) < tol, f"{case.id}: a product read or wrote around the kernel before it"


def sgemm(a, b):
    """torch.matmul in IEEE fp32 (cuBLAS SGEMM), whatever torch's TF32 switch says."""
    with torch_matmul_precision(False):
        return torch.matmul(a, b)


# tf32 must round its inputs to nearest, as cuBLAS does: truncating them biased the sums of
# torch.rand inputs enough (-1.45 on outputs near 2048 at K = 8192) to fail this tolerance.
TF32_TRANSPOSED_A = ["auto"] + [kern["name"] for kern in cutlass_kernels() if kern["math"] == "tf32"
                                and kern["layout_a"] in ("col", "any") and kern["layout_b"] in ("row", "any")]


@pytest.mark.parametrize("variant", TF32_TRANSPOSED_A)
def test_tf32_is_allclose_to_torch_fp32_on_transposed_a(variant):
    """The package's tf32 on the transposed-A workload with torch.rand inputs, held to
    torch.allclose(out, torch's IEEE fp32 out, rtol=1e-4, atol=1e-4)."""
    m, n, k, _, _ = WORKLOADS["transposed_a"]
    g = torch.Generator(device="cuda").manual_seed(9)
    a_stored = torch.rand(k, m, device="cuda", generator=g)  # (K, M) row-major: A.T is the (M, K) operand
    b = torch.rand(k, n, device="cuda", generator=g)
    if variant != "auto" and pg.can_run(variant, a_stored.T, b, precision="tf32"):
        pytest.skip(f"{variant}: {pg.can_run(variant, a_stored.T, b, precision='tf32')}")
    ref = sgemm(a_stored.T, b)
    out = poisoned(m, n, torch.float32)
    pg.gemm(a_stored.T, b, out=out, variant=variant, precision="tf32")
    with torch_matmul_precision(True):
        cublas_tf32 = torch.matmul(a_stored.T, b)
    worst = lambda x: ((x - ref).abs() / (1e-4 + 1e-4 * ref.abs())).max().item()  # noqa: E731 -- <= 1: allclose
    print(f"{variant}: worst |out - torch fp32| / (1e-4 + 1e-4 |torch fp32|) {worst(out):.3f}, "
          f"cuBLAS tf32's {worst(cublas_tf32):.3f}")
    assert torch.allclose(out, ref, rtol=1e-4, atol=1e-4)


# tf32x3 (precision="tf32x3"): about fp32's accuracy from tf32 tensor cores. Held to cuBLAS SGEMM's
# own error on the same inputs (x 1.5), for the input kinds of tracker issue 9: torch.rand,
# torch.randn, rows of A and columns of B scaled by powers of two across +-20 binades, and K up to
# 524288. Every registered tf32x3 kernel runs in its own layouts, and "auto" in every layout (where
# no tf32x3 kernel takes a problem auto runs an IEEE kernel, whose error is no bound here: the
# SIMT kernels' is up to 2x cuBLAS SGEMM's, 1.2e-6 against 6.0e-7 on the transposed-A workload).
# A persistent kernel at K = 524288 is not held to it: each output is one chain of 16384 fp32 adds
# (1.7e-6 on the H100 against SGEMM's split 1.8e-7); auto runs stream-K there, which splits K.
TF32X3_VARIANTS = [("auto", la, lb) for la in ("row", "col") for lb in ("row", "col")] + [
    (kern["name"], kern["layout_a"], kern["layout_b"]) for kern in cutlass_kernels() if kern["math"] == "tf32x3"]
TF32X3_INPUTS = [("rand", 1024, 1024, 4096), ("randn", 1024, 1024, 4096), ("binades", 1024, 1024, 4096),
                 ("rand", 256, 256, 524288)]


@pytest.mark.parametrize("kind, m, n, k", TF32X3_INPUTS, ids=lambda x: str(x))
@pytest.mark.parametrize("variant, la, lb", TF32X3_VARIANTS, ids=lambda x: str(x))
def test_tf32x3_is_as_accurate_as_cublas_sgemm(variant, la, lb, kind, m, n, k):
    a, b = make_operands(kind, m, n, k, la[0] + lb[0], device="cuda", seed=3)
    if variant != "auto" and pg.can_run(variant, a, b, precision="tf32x3"):
        pytest.skip(f"{variant}: {pg.can_run(variant, a, b, precision='tf32x3')}")
    ran = pg.plan(a, b, precision="tf32x3")["kernel"] if variant == "auto" else variant
    if variant != "auto" and k > 65536 and "streamk" not in variant:
        pytest.skip(f"{variant}: one fp32 chain along K = {k}; auto runs stream-K here (its case is tested)")
    if next(kern["math"] for kern in pg.kernels() if kern["name"] == ran and kern["dtype"] == "float32") != "tf32x3":
        pytest.skip(f"auto runs {ran}, an IEEE kernel: no tf32x3 kernel is registered for this problem")
    ref = torch.matmul(a.double(), b.double())
    sgemm_error = rel(sgemm(a, b), ref)
    out = poisoned(m, n, torch.float32)
    pg.gemm(a, b, out=out, variant=variant, precision="tf32x3")
    err = rel(out, ref)
    print(f"tf32x3 {kind} {m}x{n}x{k} {la[0]}{lb[0]} {ran}: error vs fp64 {err:.2e}, cuBLAS SGEMM {sgemm_error:.2e}")
    assert err <= 1.5 * sgemm_error, f"{ran}: error {err:.2e} > 1.5 x SGEMM's {sgemm_error:.2e}"
