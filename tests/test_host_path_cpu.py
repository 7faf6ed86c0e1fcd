"""The per-call path without a GPU: the fake implementation's checks, the plan cache's key, and
enable()'s routing passing through what it does not take."""

import pytest
import torch
import torch.nn.functional as F

import pycutlass_gemm as pg
from pycutlass_gemm import _C

OP = torch.ops.pycutlass_gemm.gemm.default


def meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, device="meta", dtype=dtype)


# Every bad input the real op refuses, on meta tensors: the fake implementation (what
# torch.compile traces) must raise the same error, not return a tensor of a made-up shape.
BAD_INPUTS = [
    (meta(4, 5), meta(4, 5), None, {}, ValueError, "inner dimensions disagree"),
    (meta(2, 3), meta(3, 4, dtype=torch.float16), None, {}, TypeError, "same dtype"),
    (meta(2, 3, dtype=torch.int32), meta(3, 4, dtype=torch.int32), None, {}, TypeError, "unsupported dtype"),
    (meta(2, 2, 3, 1), meta(3, 4), None, {}, ValueError, "must be 2-D or 3-D"),
    (meta(2, 2, 3), meta(3, 3, 4), None, {}, ValueError, "batch sizes disagree"),
    (meta(2, 3), meta(3, 4), meta(3), {}, ValueError, "does not broadcast"),
    (meta(2, 3), meta(3, 4), meta(2, 4, dtype=torch.float16), {}, TypeError, "c must have dtype"),
    (meta(2, 3), meta(3, 4), None, {"precision": "fp8"}, ValueError, "precision must be"),
    (meta(2, 3), meta(3, 4), None, {"variant": "nope"}, ValueError, "no kernel named 'nope'"),
    (meta(0, 3), meta(3, 4), None, {"variant": "nope"}, ValueError, "no kernel named 'nope'"),
]


@pytest.mark.parametrize("a, b, c, kwargs, error, match", BAD_INPUTS)
def test_fake_implementation_raises_what_the_op_raises(a, b, c, kwargs, error, match):
    args = (a, b, c, 1.0, 0.0, kwargs.get("variant", "auto"), kwargs.get("precision", ""))
    with pytest.raises(error, match=match):
        OP(*args)


@pytest.mark.parametrize("a, b, c, kwargs, error, match", [case for case in BAD_INPUTS if "variant" not in case[3]])
def test_real_call_raises_the_same_on_cpu_tensors(a, b, c, kwargs, error, match):
    """(A kernel name is looked up after the CUDA check: on CPU tensors that check answers first.)"""
    cpu = lambda t: None if t is None else torch.empty(t.shape, dtype=t.dtype)
    with pytest.raises(error, match=match):
        pg.gemm(cpu(a), cpu(b), cpu(c), **kwargs)


def test_fake_implementation_rejects_cpu_tensors_like_the_op():
    with pytest.raises(ValueError, match="needs CUDA tensors"):
        OP(torch.ones(2, 3), torch.ones(3, 4), None, 1.0, 0.0, "auto", "")


def test_fake_shapes_under_torch_compile_tracing():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b = torch.empty(5, 7, device="meta"), torch.empty(7, 3, device="meta")
        assert OP(a, b, None, 1.0, 0.0, "auto", "ieee").shape == (5, 3)
        with pytest.raises(ValueError, match="inner dimensions disagree"):
            OP(a, a, None, 1.0, 0.0, "auto", "ieee")


def key(a, b, c=None, beta=0.0, precision=0, deterministic=False, variant="auto"):
    return _C.plan_key(a, b, c, None, beta, precision, deterministic, variant)


def test_plan_cache_key_changes_with_what_decides_the_kernel():
    storage = torch.empty(4096 + 64)
    a = storage[: 64 * 32].view(64, 32)
    b = torch.empty(32, 48)
    base = key(a, b)
    assert key(torch.empty(64, 32), torch.empty(32, 48)) == base, "pointers alone must not change the key"
    different = {
        "stride (column-major A)": key(torch.empty(32, 64).T, b),
        "leading dimension": key(storage[: 64 * 33].view(64, 33)[:, :32], b),  # 132 bytes: 4-byte aligned
        "pointer alignment": key(storage[1: 1 + 64 * 32].view(64, 32), b),
        "dtype": key(a.half(), b.half()),
        "precision": key(a, b, precision=1),
        "determinism": key(a, b, deterministic=True),
        "beta != 0": key(a, b, torch.empty(64, 48), beta=1.0),
        "shape": key(torch.empty(64, 16), torch.empty(16, 48)),
        "variant": key(a, b, variant="fallback"),
    }
    for what, k in different.items():
        assert k != base, f"a changed {what} must give a different plan key"


def test_empty_problem_with_a_named_kernel_that_cannot_run_it_raises():
    # The fallback is built for every dtype, so name one that exists for no dtype of these inputs.
    with pytest.raises(ValueError, match="no kernel named"):
        OP(meta(0, 3, dtype=torch.float64), meta(3, 4, dtype=torch.float64), None, 1.0, 0.0, "simt_f32_rr_x", "")


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_enable_passes_through_what_it_does_not_take(device, routing):
    x, w = torch.randn(8, 16, device=device), torch.randn(4, 16, device=device)
    bias = torch.randn(4, device=device)
    expected = None if device == "meta" else (x @ w.T, F.linear(x, w, bias), torch.addmm(bias, x, w.T))
    with pg.enable():
        got = (x @ w.T, F.linear(x, w, bias), torch.addmm(bias, x, w.T))
        relu = torch.relu(x)  # not a product: torch's own, unchanged
    assert relu.shape == x.shape
    for g, e in zip(got, expected or got):
        assert g.shape == e.shape and g.device.type == device
        if expected is not None:
            assert torch.equal(g, e)


def test_enable_and_disable_nest(routing):
    assert not pg.enabled()
    pg.enable()
    with pg.enable():
        assert pg.enabled()
    assert pg.enabled(), "the outer enable() is still on"
    pg.disable()
    assert not pg.enabled()
    pg.disable()  # nothing on: a no-op
    x = torch.randn(3, 4)
    assert torch.equal(x @ x.T, torch.mm(x, x.T)), "torch's own kernels again"


def test_enable_keeps_torch_errors_and_autograd_on_cpu(routing):
    with pg.enable():
        with pytest.raises(RuntimeError):
            torch.mm(torch.randn(2, 3), torch.randn(4, 5))
        a = torch.randn(4, 5, requires_grad=True)
        (a @ torch.randn(5, 3)).sum().backward()
    assert a.grad.shape == (4, 5)


def test_enable_registers_cxx_kernels_only_where_they_apply(routing):
    """aten::mm / aten::bmm get the C++ kernels (float32 too where torch exports its TF32 switch);
    a dtype they do not take keeps the Python kernels; disable() removes them."""
    with pg.enable():
        assert _C.aten_router_routes_all() == (routing == "cxx")
        with pg.enable(dtypes=(torch.bfloat16, torch.float16, torch.float32)):
            assert _C.aten_router_routes_all() == (routing == "cxx" and _C.aten_router_can_take_float32())
            x = torch.randn(3, 4)
            assert torch.equal(x @ x.T, torch.mm(x, x.T))
        with pg.enable(dtypes=(torch.float64,)):
            assert not _C.aten_router_routes_all()
    assert not _C.aten_router_routes_all() and not pg.enabled()


def test_cxx_kernels_hand_on_what_torch_must_see(routing):
    """The C++ kernels hand CPU products on to torch (counted), keep torch's errors, and leave a
    dispatch mode's view of the call intact: FlopCounterMode still counts aten::mm."""
    if routing != "cxx":
        pytest.skip("C++ kernels only")
    from torch.utils.flop_counter import FlopCounterMode

    a, b = torch.randn(6, 5), torch.randn(5, 7)
    expected = a.double() @ b.double()
    launched, handed_on = _C.aten_router_counts()
    with pg.enable():
        got = [a @ b, torch.bmm(a[None], b[None])[0]]
        with FlopCounterMode(display=False) as flops:
            a @ b
        with torch._C._AutoDispatchBelowAutograd():  # reached without autograd's guard: no recursion
            got.append(torch.mm(a, b))
        with pytest.raises(RuntimeError, match="batch2 must be a 3D tensor"):
            torch.bmm(a[None], b)
    assert flops.get_total_flops() == 2 * 6 * 5 * 7
    for g in got:
        assert torch.allclose(g.double(), expected, rtol=1e-5, atol=1e-5)
    now = _C.aten_router_counts()
    assert now[0] == launched and now[1] - handed_on >= 4, (launched, handed_on, now)


def test_recorded_product_plumbing(routing):
    """The path of a CUDA product with autograd (gemm.py's _recorded_mm: torch records aten::mm,
    hooks on its node hand the backward's products to the package), run on CPU tensors, which the
    C++ kernels hand on: torch's node, torch's gradients, and every product counted as handed on."""
    import importlib

    from pycutlass_gemm import routing as routing_module

    gemm_module = importlib.import_module("pycutlass_gemm.gemm")  # the package's gemm is the function

    if routing != "cxx" or not routing_module.keep_cxx_kernels():
        pytest.skip("C++ kernels only")
    a, b = torch.randn(4, 5, requires_grad=True), torch.randn(5, 3, requires_grad=True)
    handed_on = _C.aten_router_counts()[1]
    out = gemm_module._recorded_mm(a, b, None)
    assert type(out.grad_fn).__name__ == "MmBackward0"
    out.square().sum().backward()
    assert _C.aten_router_counts()[1] - handed_on == 3  # the product and its two gradients
    ref_a, ref_b = a.detach().requires_grad_(), b.detach().requires_grad_()
    (ref_a @ ref_b).square().sum().backward()
    assert torch.allclose(a.grad, ref_a.grad) and torch.allclose(b.grad, ref_b.grad)
    assert not _C.aten_router_routes_all()


def test_kept_cxx_kernels_keep_torchs_errors(routing):
    """Once the package's autograd keeps the C++ kernels registered, torch.mm outside enable()
    still raises torch's errors in torch's words (CPU tensors: handed on)."""
    from pycutlass_gemm import routing as routing_module

    if routing != "cxx" or not routing_module.keep_cxx_kernels():
        pytest.skip("C++ kernels only")
    for a, b, match in ((torch.randn(2, 3), torch.randn(4, 5), r"shapes cannot be multiplied \(2x3 and 4x5\)"),
                        (torch.randn(2, 3), torch.randn(3, 4, dtype=torch.float64), "same dtype"),
                        (torch.randn(3), torch.randn(3, 4), "self must be a matrix")):
        with pytest.raises(RuntimeError, match=match):
            torch.mm(a, b)
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.bmm(torch.randn(2, 3), torch.randn(1, 3, 4))
    x = torch.randn(4, 4)
    assert torch.equal(x @ x, torch.ops.aten.mm.default(x, x))


def test_kept_cxx_kernels_hand_sparse_products_on(routing):
    """A sparse operand (no strides) is handed on unread: torch's sparse mm, unchanged."""
    from pycutlass_gemm import routing as routing_module

    if routing != "cxx" or not routing_module.keep_cxx_kernels():
        pytest.skip("C++ kernels only")
    dense = torch.randn(4, 5)
    sparse = dense.relu().to_sparse()
    b = torch.randn(5, 3)
    # Against float64 with fp32's tolerance: sparse and dense mm sum in different orders, so an output that nearly
    # cancels differs by more than allclose's default atol of 1e-8 (session 58's CI saw it fail there).
    ref = dense.relu().double() @ b.double()
    assert torch.allclose(torch.mm(sparse, b).double(), ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item())
