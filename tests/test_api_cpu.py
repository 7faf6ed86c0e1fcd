"""What works without a GPU: import, the registry, layout inference, planning and argument checks."""

import contextlib

import pytest
import torch

import pycutlass_gemm as pg
from conftest import cutlass_built, matrix
from pycutlass_gemm import heuristics

LAYOUT_NAMES = {"row", "col", "any"}
DTYPE_TAG = {torch.bfloat16: "bf16", torch.float16: "f16"}  # as kernel names spell them


@contextlib.contextmanager
def rules_only(dtype=torch.bfloat16):
    """rules(m, n, k, layouts="rr"): the kernel plan() picks for sm_90 (132 SMs) by the priority
    rules alone (no table), on meta operands of `dtype`."""
    layout = {"r": "row", "c": "col"}
    operand = lambda rows, cols, lay: matrix(rows, cols, layout[lay], dtype, device="meta")  # noqa: E731
    heuristics.install([])
    try:
        yield lambda m, n, k, lay="rr": pg.plan(operand(m, k, lay[0]), operand(k, n, lay[1]), arch=90)["kernel"]
    finally:
        heuristics.install()


def test_kernels_lists_registry():
    ks = pg.kernels()
    names = {k["name"] for k in ks}
    assert {"naive", "fallback"} <= names
    for k in ks:
        assert k["layout_a"] in LAYOUT_NAMES and k["layout_b"] in LAYOUT_NAMES
        assert k["dtype"] in {"float32", "float16", "bfloat16", "float64"}
        assert k["math"] in {"ieee", "tf32", "tf32x3"}
        assert k["tile"] and k["alignment"] >= 1 and k["sm_min"] <= k["sm_max"]
    # a name is unique per dtype
    assert len({(k["name"], k["dtype"]) for k in ks}) == len(ks)
    fallback_dtypes = {k["dtype"] for k in ks if k["name"] == "fallback"}
    assert fallback_dtypes == {"float32", "float16", "bfloat16", "float64"}


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_layout_of(device):
    x = torch.empty(6, 4, device=device)
    assert pg.layout_of(x) == "row"
    assert pg.layout_of(x.T) == "col"
    assert pg.layout_of(x[:, :3]) == "row"          # leading dimension 4 > 3
    assert pg.layout_of(x[:3].T) == "col"
    assert pg.layout_of(torch.empty(1, 5, device=device)) == "row"
    assert pg.layout_of(torch.empty(5, 1, device=device)) == "col"
    with pytest.raises(ValueError, match="neither row- nor column-major"):
        pg.layout_of(x[:, ::2])
    with pytest.raises(ValueError, match="must be 2-D"):
        pg.layout_of(torch.empty(2, 3, 4, device=device))


def test_plan_on_meta_tensors():
    a = torch.empty(64, 32, device="meta")
    b = torch.empty(32, 16, device="meta")
    p = pg.plan(a, b, precision="ieee")
    assert p["kernel"] is not None and p["reason"]
    # on a GPU that is not sm_90 only the fallback remains
    assert pg.plan(a, b, precision="ieee", arch=80)["kernel"] == "fallback"
    # a view that is neither row- nor column-major only runs on the fallback
    wide = torch.empty(64, 64, device="meta")
    assert pg.plan(wide[:, ::2], b, arch=90)["kernel"] == "fallback"


def test_plan_without_a_gpu_sends_large_k_to_a_kernel_that_splits_k():
    """Planned for an H100's 132 SMs: the large-K workload (2-4 output tiles) goes to a kernel that
    splits K across the SMs (stream-K, or K in equal slices summed after), as it does on the GPU,
    not to a persistent kernel that would leave most SMs idle."""
    splits_k = lambda name: "streamk" in name or (name.startswith("sm90_") and "_splitk" in name)  # noqa: E731
    if not any(splits_k(k["name"]) and k["dtype"] == "bfloat16" and k["layout_a"] == k["layout_b"] == "row"
               for k in pg.kernels()):
        pytest.skip("this build has no bf16 row-major kernel that splits K")
    a = torch.empty(256, 524288, device="meta", dtype=torch.bfloat16)
    b = torch.empty(524288, 256, device="meta", dtype=torch.bfloat16)
    assert splits_k(pg.plan(a, b, arch=90)["kernel"])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_plan_sends_unaligned_16_bit_problems_to_tensor_cores(dtype):
    """16-bit problems TMA cannot load (K = 777: rows of A are not 16-byte multiples; N = 1001; a
    view one element into its storage) go to the alignment-1 tensor-core kernels (the staged wgmma
    ones by the rules, the cutlass_sm80 ones where a table measured them faster), never the
    fallback; a 16-byte aligned problem still goes to a TMA kernel."""
    short = {torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
    kernels = {k["name"]: k for k in pg.kernels()}
    for prefix in (f"sm80_{short}_rr", f"sm80_{short}_cr", f"sm90_{short}_rr"):
        if not any(n.startswith(prefix) for n in kernels):
            pytest.skip(f"this build has no {prefix} kernel")
    e = lambda *shape: torch.empty(*shape, device="meta", dtype=dtype)
    tensor_core_any_alignment = lambda name: kernels[name]["family"] in ("cutlass_sm80", "cutlass_sm90") \
        and kernels[name]["alignment"] == 1
    assert tensor_core_any_alignment(pg.plan(e(1000, 777), e(777, 3000), arch=90)["kernel"])
    assert tensor_core_any_alignment(pg.plan(e(2048, 2048), e(2048, 1001), arch=90)["kernel"])
    assert tensor_core_any_alignment(pg.plan(e(2048, 2048).T, e(2048, 1001), arch=90)["kernel"])
    tma = pg.plan(e(1024, 1024), e(1024, 1024), arch=90)["kernel"]
    assert tma.startswith("sm90_") and kernels[tma]["alignment"] > 1


def test_can_run_gives_reasons():
    a = torch.empty(64, 32, device="meta")
    b = torch.empty(32, 16, device="meta")
    assert pg.can_run("fallback", a, b) == ""
    assert "compute capability" in pg.can_run("fallback", a, b, arch=70)
    with pytest.raises(ValueError, match="no kernel named 'nope'"):
        pg.can_run("nope", a, b)


def test_staged_kernels_with_d_by_tma_leave_c_to_their_any_output_twins():
    """An odd K (A's rows unaligned, D's aligned) runs a staged kernel that stores D by TMA; with
    beta != 0 it refuses (CUTLASS's cp.async kernel would load C from four warps) and auto takes
    its twin that reads C and stores D from registers."""
    name = "sm90_bf16_rr_128x128x64_c1x1_coopstaged_persistent"
    if name not in {k["name"] for k in pg.kernels()}:
        pytest.skip(f"this build has no {name}")
    a = torch.empty(1000, 777, device="meta", dtype=torch.bfloat16)
    b = torch.empty(777, 3000, device="meta", dtype=torch.bfloat16)
    c = torch.empty(1000, 3000, device="meta", dtype=torch.bfloat16)
    assert pg.can_run(name, a, b, arch=90) == ""
    assert "_anyout" in pg.can_run(name, a, b, c, beta=0.5, arch=90)
    assert pg.can_run(name + "_anyout", a, b, c, beta=0.5, arch=90) == ""
    assert "coopstaged_persistent_anyout" in pg.plan(a, b, c, beta=0.5, arch=90)["kernel"]
    odd_n = torch.empty(777, 3001, device="meta", dtype=torch.bfloat16)  # D unaligned too
    assert "16 bytes" in pg.can_run(name, a, odd_n, arch=90)


def test_staged_tiles_by_how_they_fill_the_sms():
    """The rules (no table) among the staged tiles, bf16 rr with an odd K: 128x64 where its tiles
    fit one wave (777^3: 91 tiles), 128x192 where its tiles fill 90-100% of one (1000x3000x777: 128),
    128x256 where its tiles fill half the SMs or more (4096x4096x4095), 128x128 between."""
    names = {k["name"] for k in pg.kernels()}
    staged = "sm90_bf16_rr_{}_c1x1_coopstaged_persistent{}"
    if not {staged.format(t, "") for t in ("128x64x64", "128x128x64", "128x192x32", "128x256x32")} <= names:
        pytest.skip("this build lacks the staged bf16 rr kernels")
    with rules_only() as rules:
        assert rules(777, 777, 777) == staged.format("128x64x64", "_anyout")  # D unaligned too
        assert rules(1000, 1000, 777) == staged.format("128x64x64", "")
        assert rules(1000, 3000, 777) == staged.format("128x192x32", "")
        assert rules(512, 3000, 777) == staged.format("128x128x64", "")  # 188 tiles of 128x64, 96 of 128x128
        assert rules(4096, 4096, 4095) == staged.format("128x256x32", "")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_one_wave_pairs_by_how_their_tiles_fill_the_sms(dtype):
    """The rules (no table) for the 128-row tiles in clusters of 1x2, 16-bit, aligned: each where its
    tiles fill one wave at least half (1024x1024x4096: 128 tiles of 128x64; 1024x2048x4096: 128 of
    128x128), neither where long K over few tiles is split-K's or many tiles are 128x256's."""
    names = {k["name"] for k in pg.kernels()}
    pair = "sm90_" + DTYPE_TAG[dtype] + "_{}_{}_c1x2_coop_persistent"
    if not {pair.format(lay, t) for lay in ("rr", "cr", "rc") for t in ("128x64x64", "128x128x64")} <= names:
        pytest.skip(f"this build lacks the {dtype} one-wave pair kernels")
    with rules_only(dtype) as rules:
        for lay in ("rr", "cr", "rc"):
            assert rules(1024, 1024, 4096, lay) == pair.format(lay, "128x64x64")
            assert rules(1024, 2048, 4096, lay) == pair.format(lay, "128x128x64")
        assert "c1x2_coop_persistent" not in rules(256, 256, 524288)  # 8 tiles: split-K's
        assert "c1x2" not in rules(4096, 4096, 4096)  # 512 tiles of 128x256 fill the waves


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_192_wide_tiles_where_they_fill_the_last_wave(dtype):
    """The rules (no table) for the 128x192 tiles, 16-bit, aligned: where 128x256 tiles leave their last
    wave mostly idle and 128x192 ones fill it (3072^3: 288 tiles of 128x256 for 132 SMs, 384 of
    128x192; 1536x1536: 72 against 96), not where 128x256 tiles fill their waves (4096^3) or
    128x192 ones would pad N (4096x1024x3072: N = 1024 is 5.3 tiles of 192), nor over few tiles. Since session 41
    the fill tiles (128x160, rr / rc / cr) take 1536x1536 (120 tiles: H200, bf16 rr 0.97x cuBLAS against 128x192's
    0.85x, rc 0.89x against 0.77x); cc has none."""
    names = {k["name"] for k in pg.kernels()}
    wide = "sm90_" + DTYPE_TAG[dtype] + "_{}_128x192x64_c2x1_coop_persistent"
    fill = "sm90_" + DTYPE_TAG[dtype] + "_{}_128x160x64_c2x1_coop_persistent"
    if not {wide.format(lay) for lay in ("rr", "rc", "cr", "cc")} | {fill.format(lay) for lay in ("rr", "rc", "cr")} <= names:
        pytest.skip(f"this build lacks the {dtype} 128x192 or 128x160 kernels")
    with rules_only(dtype) as rules:
        for lay in ("rr", "rc", "cr", "cc"):
            assert "192x64_c2x1" in rules(3072, 3072, 3072, lay)  # bf16: 192x192 tiles (below)
            assert rules(1536, 1536, 4096, lay) == (wide if lay == "cc" else fill).format(lay)
            assert "128x192" not in rules(4096, 4096, 4096, lay)
            assert "128x192" not in rules(4096, 1024, 3072, lay)
        assert "128x192" not in rules(256, 256, 524288)  # 4 tiles: split-K's


def test_192_row_tiles_where_they_fill_the_waves():
    """The rules (no table) for 192x128 tiles of D (128x192 tiles of D^T), bf16, aligned: where the
    user's M fills 192-row tiles and neither 128x256 nor 128x192 tiles fill the waves (3072x1024: 96
    tiles of 128x256 for 132 SMs, 144 of 128x192, 128 of 192x128), not where 128x192 tiles of D fill
    them as well (3072^3: 384 either way), nor where 128x256 ones do (4096^3)."""
    names = {k["name"] for k in pg.kernels()}
    tall = "sm90_bf16_{}_128x192x64_c2x1_coop_persistent_swapab"
    if not {tall.format(lay) for lay in ("rr", "cr", "rc")} <= names:
        pytest.skip("this build lacks the bf16 192-row tiles")
    with rules_only() as rules:
        for lay in ("rr", "cr", "rc"):
            assert rules(3072, 1024, 4096, lay) == tall.format(lay)
            assert rules(6144, 1024, 2048, lay) == tall.format(lay)
            assert "swapab" not in rules(3072, 3072, 3072, lay)  # 384 tiles of 128x192 either way
            assert "192" not in rules(4096, 4096, 4096, lay)
            assert rules(1024, 3072, 4096, lay) == tall.format(lay).removesuffix("_swapab")  # N fills 192-wide tiles
        assert "swapab" not in rules(1536, 1024, 4096)  # 64 tiles: not half the SMs


def test_192x192_tiles_where_they_fill_the_waves():
    """The rules (no table) for the bf16 192x192 tiles (three consumer warpgroups): where their waves
    fill best, at least as well as 128x192 tiles of D or D^T (3072^3: 256 tiles, 97%, as 384 of 128x192;
    3072x1536: 128 tiles, one wave, against 192 of 128x192 in two) and 15% better than 128x256's; not
    where 128x256 tiles fill the waves (4096^3, 6144^3: 576 tiles in 5 waves, 87%), not over fewer
    tiles than half the SMs (1536^3: 64), not where 192x128 tiles fill them better (3072x1024)."""
    names = {k["name"] for k in pg.kernels()}
    square = "sm90_bf16_{}_192x192x64_c2x1_coop3wg_persistent"
    if not {square.format(lay) for lay in ("rr", "rc", "cr", "cc")} <= names:
        pytest.skip("this build lacks the bf16 192x192 kernels")
    with rules_only() as rules:
        for lay in ("rr", "rc", "cr", "cc"):
            assert rules(3072, 3072, 3072, lay) == square.format(lay)
            assert rules(3072, 1536, 4096, lay) == square.format(lay)
            for m, n, k in ((4096, 4096, 4096), (6144, 6144, 6144), (1536, 1536, 1536), (3072, 1024, 4096)):
                assert "192x192" not in rules(m, n, k, lay)


@pytest.mark.parametrize("rules_only", [False, True], ids=["table", "rules"])
def test_gemv_runs_matrix_vector_products(rules_only):
    """The matrix-vector kernel takes M or N of 1 in any dtype and layout (and nothing else) and ranks first there,
    with the H100 table too (it was registered after the sweep), except on the 16-bit x @ W.T that small_mn ranks
    itself first on (a tie of 111 that small_mn, registered first, wins)."""
    mk = lambda rows, cols, layout, dtype: matrix(rows, cols, layout, dtype, device="meta")  # noqa: E731
    if rules_only:
        heuristics.install([])
    try:
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            for (m, n), la, lb in [((4096, 1), "row", "row"), ((1, 4096), "row", "row"), ((1000, 1), "col", "col"),
                                   ((1, 1001), "col", "row"), ((1, 1), "row", "col")]:
                a, b = mk(m, 777, la, dtype), mk(777, n, lb, dtype)
                assert pg.can_run("gemv", a, b, arch=90) == ""
                kernel = pg.plan(a, b, arch=90)["kernel"]
                small_mn = f"small_mn_{DTYPE_TAG.get(dtype)}_rc"
                if any(k["name"] == small_mn for k in pg.kernels()) and pg.can_run(small_mn, a, b, arch=90) == "":
                    assert kernel != "gemv", (dtype, m, n, la, lb)  # small_mn's tie, or the table where it is first
                else:
                    assert kernel == "gemv", (dtype, m, n, la, lb, kernel)
        two_by_two = mk(2, 64, "row", torch.float32), mk(64, 2, "row", torch.float32)
        assert "needs M or N of 1" in pg.can_run("gemv", *two_by_two, arch=90)
        if rules_only and any(k["name"] == "small_mn_bf16_rc" for k in pg.kernels()):  # the tie (with the table: its pick)
            a, b = mk(1, 4096, "row", torch.bfloat16), mk(4096, 4096, "col", torch.bfloat16)
            assert pg.plan(a, b, arch=90)["kernel"] == "small_mn_bf16_rc"
    finally:
        heuristics.install()


def small_mn_built(dtype) -> str:
    """The small-M/N kernel's name for `dtype`; skips the test on a build without it."""
    name = f"small_mn_{DTYPE_TAG[dtype]}_rc"
    if name not in {k["name"] for k in pg.kernels()}:
        pytest.skip(f"{name} is not built")
    return name


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_small_mn_kernels_say_what_they_cannot_run(dtype):
    """The small-M/N kernels (built unless -DPYCUTLASS_GEMM_SMALL_MN=OFF; their GPU tests:
    test_small_mn_gpu.py) take M or N <= 32 with A row-major, B column-major, 16-byte rows."""
    name = small_mn_built(dtype)
    mk = lambda rows, cols, layout: matrix(rows, cols, layout, dtype, device="meta")  # noqa: E731
    assert pg.can_run(name, mk(16, 4096, "row"), mk(4096, 4096, "col"), arch=90) == ""
    assert pg.can_run(name, mk(4096, 4096, "row"), mk(4096, 16, "col"), arch=80) == ""
    assert "needs M or N <= 32" in pg.can_run(name, mk(33, 64, "row"), mk(64, 33, "col"), arch=90)
    assert "built for row-major A, A is col-major" in pg.can_run(name, mk(16, 64, "col"), mk(64, 256, "col"), arch=90)
    assert "built for col-major B, B is row-major" in pg.can_run(name, mk(16, 64, "row"), mk(64, 256, "row"), arch=90)
    assert "multiple of 8 elements" in pg.can_run(name, mk(16, 777, "row"), mk(777, 256, "col"), arch=90)
    assert "needs compute capability" in pg.can_run(name, mk(16, 64, "row"), mk(64, 256, "col"), arch=75)


@cutlass_built
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_small_mn_ranks_first_where_the_sweep_has_it_fastest(dtype):
    """Where no table decides (a bias row; a GPU without one), small_mn's priority puts it first on
    sm_90 for decode shapes and one 16-row tile over a long K (split across blocks), and for K < 256
    one 16-row tile against W of up to 4096 rows; it leaves the rest of K < 256 (and with a bias row
    all of it), two 16-row tiles over a long K or a tall W, and with a bias row two tiles over a tall W
    and short K to the CUTLASS kernels (the rules, SmallSideGemm::priority)."""
    name = small_mn_built(dtype)
    mk = lambda rows, cols, layout: matrix(rows, cols, layout, dtype, device="meta")  # noqa: E731

    def plan(m, n, k, bias=False):
        c = torch.empty(n, dtype=dtype, device="meta").expand(m, n) if bias else None
        return pg.plan(mk(m, k, "row"), mk(k, n, "col"), c, beta=1.0 if bias else 0.0, arch=90)["kernel"]
    heuristics.install([])
    try:
        for m, n, k in ((16, 4096, 4096), (1, 4096, 4096), (4096, 16, 4096), (32, 4096, 2048), (16, 14336, 4096)):
            assert plan(m, n, k) == name and plan(m, n, k, bias=True) == name
        assert plan(16, 4096, 16384) == name and plan(4, 256, 65536) == name  # long K, split across blocks
        assert plan(32, 4096, 16384) != name and plan(32, 8192, 4096) != name  # two tiles: long K, tall W
        assert plan(16, 4096, 128) == name and plan(4, 1024, 16) == name  # K < 256: one tile, W <= 4096 rows
        assert plan(16, 4096, 128, bias=True) != name and plan(16, 8192, 128) != name and plan(32, 4096, 128) != name
        assert plan(32, 16384, 512, bias=True) != name  # two tiles, tall W, short K
    finally:
        heuristics.install()


def test_default_precision_follows_torch():
    saved = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        assert pg.default_precision() == "ieee"
        torch.set_float32_matmul_precision("high")
        assert pg.default_precision() == "tf32"
    finally:
        torch.set_float32_matmul_precision(saved)


def test_tf32x3_runs_tf32x3_or_ieee_kernels_never_tf32():
    """precision="tf32x3" asks for about fp32's accuracy: kernels that split into three tf32 products,
    or exact IEEE ones; a plain tf32 kernel refuses, saying why."""
    a = torch.empty(8192, 2048, device="meta").T  # the transposed-A workload: A stored (K, M)
    b = torch.empty(8192, 4096, device="meta")
    kernels = {k["name"]: k for k in pg.kernels()}
    plan = pg.plan(a, b, precision="tf32x3", arch=90)
    assert kernels[plan["kernel"]]["math"] in ("tf32x3", "ieee")
    if kernels[plan["kernel"]]["math"] == "ieee":  # no tf32x3 kernel registered (or none takes it): it says so
        assert "computes in IEEE fp32 (no tf32x3 kernel takes the problem" in plan["reason"]
    for name, k in kernels.items():
        if k["dtype"] == "float32" and k["math"] == "tf32" and k["layout_a"] in ("col", "any"):
            assert pg.can_run(name, a, b, precision="tf32x3", arch=90) == "computes as tf32; precision is 'tf32x3'"
        if k["math"] == "tf32x3":
            assert "computes as tf32x3" in pg.can_run(name, a, b, precision="tf32", arch=90)
    assert pg.plan(a.to(torch.bfloat16), b.to(torch.bfloat16), precision="tf32x3")["kernel"] == \
        pg.plan(a.to(torch.bfloat16), b.to(torch.bfloat16))["kernel"]  # 16-bit inputs ignore it


def test_set_float32_precision_is_the_default_until_reset():
    a, b = torch.empty(256, 512, device="meta"), torch.empty(512, 128, device="meta")
    saved = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert pg.get_float32_precision() is None and pg.default_precision() == "tf32"
        pg.set_float32_precision("tf32x3")
        assert pg.default_precision() == "tf32x3"
        assert pg.plan(a, b, arch=90) == pg.plan(a, b, precision="tf32x3", arch=90)
        pg.set_float32_precision("ieee")
        assert pg.plan(a, b, arch=90) == pg.plan(a, b, precision="ieee", arch=90)
        with pytest.raises(ValueError, match="precision must be 'ieee', 'tf32', 'tf32x3' or None"):
            pg.set_float32_precision("fp64")
        pg.set_float32_precision(None)
        assert pg.default_precision() == "tf32"  # torch's switch again
    finally:
        pg.set_float32_precision(None)
        torch.set_float32_matmul_precision(saved)


@pytest.mark.parametrize(
    "a, b, kwargs, error, match",
    [
        (torch.ones(2, 3), torch.ones(3, 4), {}, ValueError, "needs CUDA tensors"),
        (torch.ones(2, 3), torch.ones(3, 4, dtype=torch.float16), {}, TypeError, "same dtype"),
        (torch.ones(2, 3, dtype=torch.int32), torch.ones(3, 4, dtype=torch.int32), {}, TypeError, "unsupported dtype"),
        (torch.ones(2, 2, 3, 1), torch.ones(3, 4), {}, ValueError, "must be 2-D or 3-D"),
        (torch.ones(2, 2, 3), torch.ones(3, 3, 4), {}, ValueError, "batch sizes disagree"),
        (torch.ones(2, 3), torch.ones(3, 4), {"c": torch.ones(3)}, ValueError, "does not broadcast"),
        (torch.ones(2, 3), torch.ones(5, 4), {}, ValueError, "inner dimensions disagree"),
        ([[1.0]], torch.ones(1, 1), {}, TypeError, "must be a torch.Tensor"),
        (torch.ones(2, 3), torch.ones(3, 4), {"precision": "fp8"}, ValueError, "precision must be"),
    ],
)
def test_bad_input_raises_before_launch(a, b, kwargs, error, match):
    with pytest.raises(error, match=match):
        pg.gemm(a, b, **kwargs)


def test_every_cutlass_kernel_is_exercised_by_the_gpu_suite():
    """Each registry entry has GPU cases, and accepts every one of them (checked here on meta
    tensors), so the GPU suite runs it rather than being refused."""
    from cutlass_cases import cases, cutlass_kernels

    all_cases = cases()
    for kern in cutlass_kernels():
        mine = [c for c in all_cases if c.kernel == kern]
        assert mine, f"{kern['name']} has no GPU test case"
        for case in mine:
            a, b, c, out = case.operands(device="meta")
            reason = pg.can_run(kern["name"], a, b, c, beta=case.beta, out=out, precision=case.precision,
                                arch=kern["sm_min"])
            assert reason == "", f"{case.id}: {reason}"


def test_custom_op_fake_shapes():
    """The fake implementation torch.compile traces with: output shape and dtype, batches broadcast."""
    op = torch.ops.pycutlass_gemm.gemm
    a, b = torch.empty(5, 7, device="meta"), torch.empty(7, 3, device="meta")
    assert op(a, b, None, 1.0, 0.0, "auto", "ieee").shape == (5, 3)
    a3 = torch.empty(4, 5, 7, device="meta", dtype=torch.bfloat16)
    b3 = torch.empty(1, 7, 3, device="meta", dtype=torch.bfloat16)
    out = op(a3, b3, None, 1.0, 0.0, "auto", "ieee")
    assert out.shape == (4, 5, 3) and out.dtype == torch.bfloat16
    assert op(a3, b3[0], None, 1.0, 0.0, "auto", "ieee").shape == (4, 5, 3)

