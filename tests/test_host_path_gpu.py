"""The per-call path on the GPU: enable() on torch.nn models (results and gradients against plain
torch), compile under enable(), other devices, side streams, threads, errors before launch."""

import copy
import subprocess
import sys
import threading

import pytest
import torch
import torch.nn.functional as F

import pycutlass_gemm as pg
from pycutlass_gemm import _C
from conftest import HAS_CUDA, matrix, poisoned, rel, rel_error, tolerance

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")


def mlp(dtype):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 128, bias=False),
                               torch.nn.ReLU(), torch.nn.Linear(128, 64)).to("cuda", dtype)


def run_model(model, x):
    """Output and parameter gradients of one training step."""
    model.zero_grad()
    y = model(x)
    y.float().square().mean().backward()
    return y.detach(), [p.grad.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_enable_runs_a_torch_nn_model_like_torch(dtype, routing):
    """Output and gradients under enable() are as close to a float64 run of the same model as
    torch's own are (within 2x torch's error plus rounding of the 16-bit result)."""
    model = mlp(dtype)
    x = torch.randn(384, 256, device="cuda", dtype=dtype)
    y_torch, g_torch = run_model(model, x)
    with pg.enable():
        y_pg, g_pg = run_model(model, x)
    y_ref, g_ref = run_model(copy.deepcopy(model).double(), x.double())
    for what, mine, theirs, ref in [("output", y_pg, y_torch, y_ref)] + [
            (f"grad {tuple(p.shape)}", m, t, r) for p, m, t, r in zip(model.parameters(), g_pg, g_torch, g_ref)]:
        assert torch.isfinite(mine).all(), what
        assert rel(mine, ref) <= 2 * rel(theirs, ref) + 4e-3, what


class Routed:
    """Products enable()'s kernels ran on the package, and those they handed on to torch: the Python
    kernels' (counted by wrapping _Router._gemm) and the C++ kernels' (their own counters)."""

    def __init__(self):
        self.python = []
        self.reset()

    def reset(self):
        self.python.clear()
        self.cxx_start = _C.aten_router_counts()

    @property
    def launched(self):
        return sum(self.python) + _C.aten_router_counts()[0] - self.cxx_start[0]

    @property
    def handed_on(self):
        return self.python.count(False) + _C.aten_router_counts()[1] - self.cxx_start[1]

    def __repr__(self):
        return f"Routed(launched={self.launched}, handed_on={self.handed_on})"


@pytest.fixture
def routed(monkeypatch, routing):
    import pycutlass_gemm.routing as routing_module

    counts = Routed()
    original = routing_module._Router._gemm

    def counting(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        counts.python.append(result is not None)
        return result

    monkeypatch.setattr(routing_module._Router, "_gemm", counting)
    return counts


def test_enable_routes_products_through_the_package(routed):
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    a, b, c = torch.randn(64, 32, **bf16), torch.randn(32, 48, **bf16), torch.randn(64, 48, **bf16)
    bias, weight = torch.randn(48, **bf16), torch.randn(48, 32, **bf16)  # nn.Linear's (out, in) weight
    a3, b3 = torch.randn(4, 64, 32, **bf16), torch.randn(4, 32, 48, **bf16)
    ref = a.double() @ b.double()
    routed.reset()  # (float64 is handed on: by the C++ kernels too once the package's autograd kept them)
    with pg.enable():
        results = {
            "@": a @ b, "mm": torch.mm(a, b), "matmul": torch.matmul(a, b), "linear": F.linear(a, b.T),
            "addmm": torch.addmm(c, a, b, beta=0.5, alpha=2.0) - 0.5 * c, "linear+bias": F.linear(a, weight, bias) - bias + (a @ b) - (a @ weight.T),
            "mm out": torch.mm(a, b, out=torch.empty(64, 48, **bf16)),
            "bmm": torch.bmm(a3, b3)[1] + (a @ b) - (a3[1] @ b3[1]),
            "addmm_": c.clone().addmm_(a, b, beta=0.0),
        }
        expected_2x = results.pop("addmm") / 2
    assert routed.handed_on == 0 and routed.launched >= 10, routed
    for name, r in results.items():
        assert rel(r, ref) < 2e-2, name
    assert rel(expected_2x, ref) < 2e-2
    routed.reset()
    x = torch.randn(8, 4, device="cuda")  # float32 is not routed by default; CPU never is
    with pg.enable():
        x @ x.T, torch.randn(3, 3) @ torch.randn(3, 3)
    assert routed.launched == 0 and routed.handed_on >= 2, routed


def test_enable_routes_backward_and_attention(routed):
    mha = torch.nn.MultiheadAttention(64, 4, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(10, 2, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    with pg.enable():
        mha(q, q, q)[0].float().sum().backward()
    assert routed.launched >= 6, routed  # in/out projections forward and their weight and input gradients


def test_compile_under_enable(routed):
    """torch.compile traces as usual (FakeTensors are handed on) and the compiled graph's products
    run on the package."""
    torch._dynamo.reset()
    model = mlp(torch.bfloat16)
    x = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
    expected = model(x)
    with pg.enable():
        compiled = torch.compile(model, fullgraph=True)
        got = compiled(x)
        routed.reset()
        got = compiled(x)
    assert routed.launched > 0, f"the compiled graph's products ran on torch: {routed}"
    assert rel(got, expected) < 1e-2


def test_side_stream():
    a, b = (matrix(512, 384, "row", torch.bfloat16), matrix(384, 640, "col", torch.bfloat16))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000)  # if the kernel ran on another stream it would finish first
        out = pg.gemm(a, b)
        done = torch.cuda.Event()
        done.record(side)
    done.synchronize()
    assert rel_error(out, a, b) < tolerance(torch.bfloat16, "ieee", 384)


def _kernels_with_a_workspace():
    """The bf16 kernels that launch twice on a workspace: the fallback (split-K when its tiles are
    fewer than the SMs) and, where built, the CUTLASS stream-K and split-K kernels."""
    return ["fallback"] + [k["name"] for k in pg.kernels()
                           if k["dtype"] == "bfloat16" and ("streamk" in k["name"] or "splitk" in k["name"])]


@pytest.mark.parametrize("streams", ["shared", "own"])
def test_threads(streams):
    """Eight threads at once, on the default stream or each on its own: auto and the kernels that
    share the cached workspace of a stream, with shapes that make that workspace grow, into new
    outputs and into NaN-poisoned out= tensors."""
    errors = []
    runs = []
    with_workspace = _kernels_with_a_workspace()

    def work(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        stream = torch.cuda.Stream() if streams == "own" else torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            for i in range(24):
                m, n, k = 128 + 64 * (i % 3), 256 + 8 * seed + 64 * (i % 4), 512 + 256 * (i % 5)
                a = matrix(m, k, "row" if i % 2 else "col", torch.bfloat16, generator=g)
                b = matrix(k, n, "col" if seed % 2 else "row", torch.bfloat16, generator=g)
                out = poisoned(m, n, torch.bfloat16) if i % 2 else None  # NaN: an unwritten element shows
                variants = ["auto"] + [name for name in with_workspace if pg.can_run(name, a, b, out=out) == ""]
                variant = variants[(i + seed) % len(variants)]
                out = pg.gemm(a, b, variant=variant, out=out)
                stream.synchronize()
                err = rel_error(out, a, b)
                runs.append(variant)
                if not err < tolerance(torch.bfloat16, "ieee", k):
                    errors.append((seed, i, variant, (m, n, k), err))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(runs) == 8 * 24, "a thread raised (its traceback is above)"
    assert "fallback" in runs
    assert not errors


_FRESH_THREAD_CODE = """
import threading, torch
import pycutlass_gemm as pg
a = torch.randn(256, 512, device="cuda"); b = torch.randn(384, 512, device="cuda").T  # made on the main thread
sm90 = [k["name"] for k in pg.kernels() if k["family"] == "cutlass_sm90" and k["dtype"] == "float32"
        and pg.can_run(k["name"], a, b, precision="tf32") == ""]
assert sm90, "no SM90 tf32 kernel takes the problem"
out = {}
def work():  # nothing else on this thread touches CUDA before the package's launch
    out["d"] = pg.gemm(a, b, variant=sm90[0], precision="tf32")
t = threading.Thread(target=work); t.start(); t.join()
assert (out["d"].double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm() < 2e-3
for dtype, precision in ((torch.bfloat16, None), (torch.float32, "tf32x3")):  # the backward runs on torch's worker
    x = torch.randn(256, 512, device="cuda").to(dtype).requires_grad_()
    w = torch.randn(384, 512, device="cuda").to(dtype).requires_grad_()
    pg.matmul(x, w.T, precision=precision).backward(torch.randn(256, 384, device="cuda").to(dtype))
    torch.cuda.synchronize()
    assert x.grad is not None and w.grad is not None and torch.isfinite(x.grad).all() and torch.isfinite(w.grad).all()
print("ok")
"""


def test_first_launch_on_a_fresh_thread():
    """An SM90 kernel launched first thing on a thread where nothing else has touched CUDA (a Python
    thread; the autograd engine's worker running the first backward): CUTLASS encodes its TMA
    descriptors on the host, which needs the device's context current on that thread (it crashed in
    "TMA Desc Addr" before the package made it current). A fresh process, so the threads are new."""
    result = subprocess.run([sys.executable, "-c", _FRESH_THREAD_CODE], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), (result.returncode, result.stderr[-2000:])


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_second_device():
    with torch.cuda.device(1):
        a = matrix(256, 512, "col", torch.bfloat16, device="cuda:1")
        b = matrix(512, 384, "row", torch.bfloat16, device="cuda:1")
    # called with device 0 current: the package must launch on the operands' device
    out = pg.gemm(a, b)
    assert out.device == torch.device("cuda:1")
    assert rel_error(out, a, b) < tolerance(torch.bfloat16, "ieee", 512)
    with torch.cuda.device(1), torch.cuda.stream(torch.cuda.Stream(1)):
        out2 = pg.gemm(a, b, precision="ieee")
    torch.cuda.synchronize(1)
    assert rel_error(out2, a, b) < tolerance(torch.bfloat16, "ieee", 512)


def test_enable_on_second_device(routed, routing):
    """enable()'s kernels (C++ and Python) launch on the operands' device and its current stream."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    a = matrix(256, 512, "col", torch.bfloat16, device="cuda:1")
    b = matrix(512, 384, "row", torch.bfloat16, device="cuda:1")
    with pg.enable():
        out = a @ b  # device 0 current
        with torch.cuda.device(1), torch.cuda.stream(torch.cuda.Stream(1)):
            torch.cuda._sleep(2_000_000)  # on another stream the product would finish first
            out2 = torch.mm(a, b)
            done = torch.cuda.Event()
            done.record()
    done.synchronize()
    assert out.device == out2.device == torch.device("cuda:1") and routed.launched == 2, routed
    for o in (out, out2):
        assert rel_error(o, a, b) < tolerance(torch.bfloat16, "ieee", 512)
    # pg.matmul with autograd on cuda:1 (device 0 current): the product and its gradients there
    a.requires_grad_()
    routed.reset()
    out3 = pg.matmul(a, b)
    out3.float().sum().backward()
    torch.cuda.synchronize(1)
    assert a.grad.device == torch.device("cuda:1") and rel_error(out3, a.detach(), b) < tolerance(torch.bfloat16, "ieee", 512)
    assert rel(a.grad, torch.ones(256, 384, device="cuda:1", dtype=torch.float64) @ b.double().T) < 1e-2
    if routing == "cxx":
        assert routed.launched == 2, routed  # the product and a's gradient


def test_named_kernel_that_cannot_run_an_empty_problem_raises():
    a, b = torch.empty(0, 64, device="cuda"), torch.empty(64, 32, device="cuda")
    bf16_kernel = next((k["name"] for k in pg.kernels() if k["dtype"] == "bfloat16" and k["family"] != "fallback"
                        and k["family"] != "naive"), None)
    if bf16_kernel is None:
        pytest.skip("no CUTLASS kernel built")
    strided = torch.empty(0, 128, device="cuda", dtype=torch.bfloat16)[:, ::2]
    with pytest.raises(ValueError, match="cannot implement"):
        pg.gemm(strided, b.bfloat16(), variant=bf16_kernel)
    assert pg.gemm(a, b, variant="fallback").shape == (0, 32)


def test_compile_raises_shape_errors_while_tracing():
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: pg.gemm(a, b) * 2, fullgraph=True)
    a = torch.randn(4, 5, device="cuda")
    with pytest.raises(Exception, match="inner dimensions disagree"):
        f(a, a)


def test_plan_cache_is_reused():
    a, b = torch.randn(256, 128, device="cuda", dtype=torch.bfloat16), torch.randn(128, 64, device="cuda",
                                                                                     dtype=torch.bfloat16)
    pg.gemm(a, b)
    size = pg.launch._C.plan_cache_size()
    for _ in range(3):
        pg.gemm(torch.randn_like(a), torch.randn_like(b))
    assert pg.launch._C.plan_cache_size() == size


def test_bad_input_leaves_the_context_usable():
    a = torch.randn(64, 32, device="cuda")
    with pytest.raises(ValueError):
        pg.gemm(a, torch.randn(33, 16, device="cuda"))
    square = torch.randn(64, 64, device="cuda")
    with pytest.raises(ValueError, match="overlaps"):
        pg.gemm(square, torch.randn(64, 64, device="cuda"), out=square)
    out = pg.gemm(a, torch.randn(32, 16, device="cuda"))
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()


def test_enable_float32_follows_the_precision_switches(routed):
    """Routed float32 products run as torch.matmul would: IEEE with TF32 off, tf32 with it on, and
    set_float32_precision's choice over both (the C++ kernels read the same switches)."""
    a, b = torch.randn(256, 512, device="cuda"), torch.randn(512, 384, device="cuda")
    ref = a.double() @ b.double()
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    errors = {}
    routed.reset()
    try:
        with pg.enable(dtypes=(torch.bfloat16, torch.float16, torch.float32)):
            for name, tf32_switch, package in (("ieee", False, None), ("tf32", True, None), ("ieee over tf32", True, "ieee")):
                torch.backends.cuda.matmul.allow_tf32 = tf32_switch
                pg.set_float32_precision(package)
                errors[name] = rel(a @ b, ref)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        pg.set_float32_precision(None)
    assert routed.launched == 3 and routed.handed_on == 0, routed
    assert errors["ieee"] < 1e-6 and errors["ieee over tf32"] < 1e-6, errors
    assert 1e-5 < errors["tf32"] < 2e-3, errors


@pytest.mark.parametrize("dtype, precision", [(torch.bfloat16, None), (torch.float32, "ieee"), (torch.float32, "tf32")])
def test_matmul_with_grad_records_torchs_node_and_runs_the_package(dtype, precision, routed):
    """pg.matmul with autograd on 2-D CUDA tensors: torch's C++ autograd records aten::mm, the
    package computes the product and both gradients (counted launches), at the precision asked,
    and the results match float64 -- also for a strided view only the fallback kernel takes."""
    if routing_module().cxx_kernels_unavailable():
        pytest.skip("C++ kernels unavailable (or PYCUTLASS_GEMM_PYTHON_ROUTING set): the autograd.Function path")
    for a_view in ("row", "strided"):
        a = torch.randn(192, 512 if a_view == "row" else 1024, device="cuda", dtype=dtype)
        a = (a if a_view == "row" else a[:, ::2]).requires_grad_()
        b = torch.randn(512, 320, device="cuda", dtype=dtype).T.contiguous().T.requires_grad_()  # column-major
        routed.reset()
        out = pg.matmul(a, b, precision=precision)
        assert type(out.grad_fn).__name__ == "MmBackward0"
        grad = torch.randn_like(out)
        out.backward(grad)
        assert routed.launched == 3 and routed.handed_on == 0, (a_view, routed)
        a64, b64, g64 = a.detach().double(), b.detach().double(), grad.double()
        tol = {torch.bfloat16: 1e-2, torch.float32: 1e-5 if precision == "ieee" else 3e-3}[dtype]
        for what, mine, ref in (("out", out, a64 @ b64), ("grad a", a.grad, g64 @ b64.T), ("grad b", b.grad, a64.T @ g64)):
            assert rel(mine, ref) < tol, (a_view, what, rel(mine, ref))
        if precision == "tf32" and a_view == "row":  # (a strided view runs on the IEEE fallback)
            assert rel(b.grad, a64.T @ g64) > 1e-5, "the gradient ran as tf32, as asked"


def routing_module():
    import pycutlass_gemm.routing as r

    return r
