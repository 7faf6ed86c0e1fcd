"""pycutlass_gemm inside PyTorch models: epilogue, batches, autograd, torch.compile, CUDA graphs."""

import statistics

import pytest
import torch

import pycutlass_gemm as pg
from conftest import dtype_id, gpu, matrix, rel, tolerance

pytestmark = [pytest.mark.gpu, gpu]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("c_shape", [(264, 136), (136,), (264, 1)], ids=["matrix", "bias_row", "bias_col"])
def test_epilogue_alpha_beta_c(dtype, c_shape):
    a = matrix(264, 200, "col", dtype)
    b = matrix(200, 136, "row", dtype)
    c = torch.randn(c_shape, device="cuda").to(dtype)
    out = pg.gemm(a, b, c, alpha=0.5, beta=-2.0, precision="ieee")
    ref = 0.5 * (a.double() @ b.double()) - 2.0 * c.double()
    assert rel(out, ref) < tolerance(dtype, "ieee", 200)


def test_epilogue_in_place_into_c():
    a, b = matrix(256, 128, "row", torch.bfloat16), matrix(128, 512, "col", torch.bfloat16)
    c = torch.randn(256, 512, device="cuda").to(torch.bfloat16)
    ref = (a.double() @ b.double()) + 3.0 * c.double()
    result = pg.gemm(a, b, c, beta=3.0, out=c)
    assert result.data_ptr() == c.data_ptr()
    assert rel(c, ref) < 1e-2


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("case", ["bmm", "bmm_transposed", "broadcast_b_2d", "broadcast_a_batch1"])
def test_batched(dtype, case):
    r = lambda *s: torch.randn(*s, device="cuda").to(dtype)
    if case == "bmm":
        a, b = r(6, 130, 72), r(6, 72, 200)
    elif case == "bmm_transposed":
        a, b = r(6, 72, 130).transpose(1, 2), r(6, 200, 72).transpose(1, 2)
    elif case == "broadcast_b_2d":
        a, b = r(6, 130, 72), r(72, 200)
    else:
        a, b = r(1, 130, 72).expand(6, 130, 72), r(6, 72, 200)
    out = pg.gemm(a, b, precision="ieee")
    assert out.shape == (6, 130, 200)
    assert rel(out, torch.matmul(a.double(), b.double())) < tolerance(dtype, "ieee", 72)
    poisoned = torch.full_like(out, float("nan"))
    pg.gemm(a, b, out=poisoned, precision="ieee")
    assert rel(poisoned, torch.matmul(a.double(), b.double())) < tolerance(dtype, "ieee", 72)


@pytest.mark.parametrize("shapes", [((7,), (7, 5)), ((4, 7), (7,)), ((7,), (7,)), ((3, 4, 7), (7,))])
def test_matmul_vectors_like_torch(shapes):
    a, b = (torch.randn(s, device="cuda", dtype=torch.float64) for s in shapes)
    out = pg.matmul(a, b)
    ref = torch.matmul(a, b)
    assert out.shape == ref.shape
    assert torch.allclose(out, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("shapes", [((2, 3, 130, 72), (2, 3, 72, 200)), ((2, 3, 130, 72), (72, 200)),
                                    ((2, 3, 130, 72), (1, 1, 72, 200)), ((72,), (2, 3, 72, 200)),
                                    ((2, 3, 130, 72), (72,)), ((1, 130, 72), (2, 3, 72, 200))], ids=str)
def test_matmul_batches(dtype, shapes):
    """More than one batch dimension, as torch.matmul takes them: one product over the batches folded by a view
    (test_matmul_batches_cpu.py checks what gemm gets)."""
    a, b = (torch.randn(s, device="cuda").to(dtype) for s in shapes)
    out = pg.matmul(a, b, precision="ieee")
    ref = torch.matmul(a.double(), b.double())
    assert out.shape == ref.shape and out.dtype == dtype
    assert rel(out, ref) < tolerance(dtype, "ieee", 72)
    small = {130: 4, 72: 5, 200: 3}  # the same batches over small matrices: gradcheck is slow
    a64, b64 = (torch.randn([small.get(d, d) for d in s], device="cuda", dtype=torch.float64, requires_grad=True)
                for s in shapes)
    assert torch.autograd.gradcheck(pg.matmul, (a64, b64))


def test_gradcheck_float64():
    a = torch.randn(9, 13, device="cuda", dtype=torch.float64, requires_grad=True)
    b = torch.randn(11, 13, device="cuda", dtype=torch.float64, requires_grad=True)  # used as b.T
    c = torch.randn(11, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c: pg.gemm(a, b.T, c, alpha=0.7, beta=1.3), (a, b, c))
    a3 = torch.randn(3, 5, 4, device="cuda", dtype=torch.float64, requires_grad=True)
    b2 = torch.randn(4, 6, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: pg.matmul(a.transpose(1, 2).transpose(1, 2), b), (a3, b2))


# tf32x3: the backward products run in the forward's precision (a tf32 gradient would miss its
# tolerance by 10x and more).
@pytest.mark.parametrize("dtype, precision", [(torch.float32, "ieee"), (torch.float32, "tf32x3"),
                                              (torch.bfloat16, "ieee")], ids=lambda x: str(x).replace("torch.", ""))
@pytest.mark.parametrize("transpose", ["a", "b"])
@pytest.mark.parametrize("needs", ["both", "a", "b"])
def test_gradients_match_torch(dtype, precision, transpose, needs):
    """Values against float64, and layouts against torch's: a transposed operand's gradient is
    made column-major, so the stored tensor's gradient is row-major, kept without a copy."""
    k, m, n = 512, 256, 384
    a_store = torch.randn((k, m) if transpose == "a" else (m, k), device="cuda").to(dtype)
    b_store = torch.randn((k, n) if transpose == "a" else (n, k), device="cuda").to(dtype)
    view = (lambda a, b: (a.T, b)) if transpose == "a" else (lambda a, b: (a, b.T))
    grad = torch.randn(m, n, device="cuda").to(dtype)
    a64, b64 = a_store.double(), b_store.double()
    for t in ((a_store, a64) if needs != "b" else ()) + ((b_store, b64) if needs != "a" else ()):
        t.requires_grad_()
    pg.gemm(*view(a_store, b_store), precision=precision).backward(grad)
    torch.matmul(*view(a64, b64)).backward(grad.double())
    for mine, ref in zip((a_store.grad, b_store.grad), (a64.grad, b64.grad)):
        assert (mine is None) == (ref is None)
        if ref is not None:
            assert rel(mine, ref) < tolerance(dtype, precision, max(m, n))
            assert mine.stride() == ref.stride()


def test_gradient_of_a_view_operand_is_laid_out_like_it():
    """The gradient pg.gemm returns for an operand is column-major where the operand is (as
    torch's mm backward makes it), row-major otherwise; values against float64."""
    x = torch.randn(300, 200, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(200, 500, device="cuda", dtype=torch.bfloat16).T.contiguous().T.requires_grad_()  # col-major leaf
    out = pg.gemm(x, w)
    grad = torch.randn_like(out)
    out.backward(grad)
    assert w.grad.stride() == (1, 200) and x.grad.stride() == (200, 1)
    x64, w64 = x.detach().double(), w.detach().double()
    assert rel(w.grad, x64.T @ grad.double()) < tolerance(torch.bfloat16, "ieee", 300)
    assert rel(x.grad, grad.double() @ w64.T) < tolerance(torch.bfloat16, "ieee", 500)


def test_opcheck():
    a, b = torch.randn(64, 32, device="cuda"), torch.randn(48, 32, device="cuda").T
    torch.library.opcheck(torch.ops.pycutlass_gemm.gemm.default, (a, b, None, 1.0, 0.0, "auto", "ieee"))


class TransposedA(torch.nn.Module):
    """The KernelBench-style module users bring: forward(A, B) = A.T @ B."""

    def forward(self, A, B):
        return torch.matmul(A.T, B)


class TransposedAWithPackage(torch.nn.Module):
    def forward(self, A, B):
        return pg.matmul(A.T, B)


def test_compile_fullgraph_and_module_rewrite():
    torch._dynamo.reset()
    compiled = torch.compile(TransposedAWithPackage(), fullgraph=True)  # raises on a graph break
    for _ in range(2):  # fresh inputs each time, same shapes
        A, B = torch.rand(512, 256, device="cuda"), torch.rand(512, 384, device="cuda")
        expected = TransposedA()(A.double(), B.double())
        assert rel(compiled(A, B), expected) < tolerance(torch.float32, pg.default_precision(), 512)
    explanation = torch._dynamo.explain(TransposedAWithPackage())(A, B)
    assert explanation.graph_break_count == 0


def test_cuda_graph_capture_and_replay():
    A, B = torch.rand(1024, 512, device="cuda"), torch.rand(1024, 768, device="cuda")
    pg.gemm(A.T, B, precision="ieee")  # warm-up outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        out = pg.gemm(A.T, B, precision="ieee")
    for _ in range(2):
        A.copy_(torch.rand_like(A))
        B.copy_(torch.rand_like(B))
        graph.replay()
        torch.cuda.synchronize()
        assert rel(out, A.double().T @ B.double()) < 1e-5


def test_compiled_module_vs_eager_transposed_a_workload():
    """Transposed-A workload of problems.md: the compiled rewritten module against the eager torch
    module, on fresh inputs; prints the time of each (not asserted: speed is the benchmark's job)."""
    torch._dynamo.reset()
    A, B = torch.rand(8192, 2048, device="cuda"), torch.rand(8192, 4096, device="cuda")
    eager, ours = TransposedA(), torch.compile(TransposedAWithPackage(), fullgraph=True)
    precision = pg.default_precision()
    assert rel(ours(A, B), eager(A.double(), B.double())) < tolerance(torch.float32, precision, 8192)

    def median_ms(fn, reps=20):
        fn()
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    t_eager, t_ours = median_ms(lambda: eager(A, B)), median_ms(lambda: ours(A, B))
    flop = 2 * 2048 * 4096 * 8192
    print(f"transposed A fp32 ({precision}): eager torch {t_eager:.3f} ms {flop / t_eager / 1e9:.0f} TFLOP/s, "
          f"compiled pycutlass_gemm {t_ours:.3f} ms {flop / t_ours / 1e9:.0f} TFLOP/s, "
          f"{t_eager / t_ours:.2f} x cuBLAS")
