"""pycutlass_gemm.matmul over batch dimensions, on the CPU: what reaches gemm (2-D or 3-D views of the operands'
own storage: no copy) and what comes back (torch.matmul's shape and values), with gemm replaced by torch.matmul on
what it is given; and the errors, raised before any launch. The GPU suite runs the same cases on the kernels
(test_torch_integration_gpu.py, test_matmul_batches)."""

import importlib

import pytest
import torch

import pycutlass_gemm as pg

gemm_module = importlib.import_module("pycutlass_gemm.gemm")

# (shape of a, shape of b, dimensions of what gemm gets): every one foldable without a copy
FOLDABLE = [
    ((2, 3, 4, 5), (2, 3, 5, 6), (3, 3)),       # attention-shaped: both batches merge
    ((2, 3, 4, 5), (5, 6), (2, 2)),             # x @ W over two batch dimensions: one 2-D product over 24 rows
    ((2, 3, 4, 5), (1, 1, 5, 6), (2, 2)),       # ... a batch of ones is no batch
    ((2, 1, 4, 5), (2, 3, 5, 6), None),         # a broadcast over an inner batch dimension: see NOT_FOLDABLE
    ((7,), (2, 3, 7, 6), (2, 3)),               # a vector times a batch
    ((2, 3, 4, 7), (7,), (2, 2)),               # a batch times a vector: one 2-D product
    ((3, 4, 5), (2, 3, 5, 6), None),
    ((2, 2, 3, 4, 5), (2, 2, 3, 5, 6), (3, 3)),  # five dimensions
    ((1, 4, 5), (3, 5, 6), (3, 3)),             # 3-D: gemm broadcasts the batch of one itself
]
NOT_FOLDABLE = [
    ((2, 1, 4, 5), (2, 3, 5, 6), "a"),  # a's batch (2, 1) broadcast to (2, 3): strides (20, 0) do not merge
    ((3, 4, 5), (2, 3, 5, 6), "a"),     # a's batch (3,) broadcast to (2, 3)
    ((2, 3, 4, 5), (3, 5, 6), "b"),
]


@pytest.fixture
def gemm_calls(monkeypatch):
    """gemm replaced by torch.matmul on what it gets; each call's operands recorded."""
    calls = []

    def fake_gemm(a, b, c=None, *, precision=None, **kwargs):
        assert c is None and not kwargs
        calls.append((a, b))
        return torch.matmul(a, b)

    monkeypatch.setattr(gemm_module, "gemm", fake_gemm)
    return calls


def same_storage(view, base):
    return view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


@pytest.mark.parametrize("shape_a, shape_b, dims", [c for c in FOLDABLE if c[2]], ids=str)
def test_matmul_folds_batches_into_one_product(gemm_calls, shape_a, shape_b, dims):
    a, b = torch.randn(shape_a, dtype=torch.float64), torch.randn(shape_b, dtype=torch.float64)
    out = pg.matmul(a, b)
    ref = torch.matmul(a, b)
    assert out.shape == ref.shape and torch.allclose(out, ref, rtol=1e-12, atol=1e-12)
    assert len(gemm_calls) == 1
    got_a, got_b = gemm_calls[0]
    assert (got_a.dim(), got_b.dim()) == dims
    assert same_storage(got_a, a) and same_storage(got_b, b)  # views, never copies


def test_matmul_folds_strided_rows_and_transposed_matrices(gemm_calls):
    """Rows with a leading dimension (a column slice) fold; so do batches of column-major matrices."""
    wide = torch.randn(2, 3, 4, 9, dtype=torch.float64)
    a = wide[..., :5]  # rows 9 apart: one (24 x 5) matrix of leading dimension 9
    b = torch.randn(2, 3, 6, 5, dtype=torch.float64).transpose(-1, -2)  # column-major matrices, batches merge
    assert torch.allclose(pg.matmul(a, b), torch.matmul(a, b), rtol=1e-12, atol=1e-12)
    w = torch.randn(5, 6, dtype=torch.float64)
    assert torch.allclose(pg.matmul(a, w), torch.matmul(a, w), rtol=1e-12, atol=1e-12)
    assert [x.dim() for pair in gemm_calls for x in pair] == [3, 3, 2, 2]


@pytest.mark.parametrize("shape_a, shape_b, name", NOT_FOLDABLE, ids=str)
def test_matmul_names_the_operand_torch_would_copy(gemm_calls, shape_a, shape_b, name):
    a, b = torch.randn(shape_a), torch.randn(shape_b)
    with pytest.raises(ValueError, match=f"batch dimensions of {name} .* do not fold into one batch stride"):
        pg.matmul(a, b)
    assert gemm_calls == []


def test_matmul_permuted_batch_is_not_copied(gemm_calls):
    a = torch.randn(3, 2, 4, 5).permute(1, 0, 2, 3)  # batch strides (20, 40): no one stride walks them
    with pytest.raises(ValueError, match="batch dimensions of a"):
        pg.matmul(a, torch.randn(2, 3, 5, 6))
    assert gemm_calls == []


@pytest.mark.parametrize("shape_a, shape_b, match", [
    ((2, 3, 4, 5), (4, 5, 6), "do not broadcast"),
    ((), (3, 4), "at least 1 dimension, a is 0-D"),
    ((3, 4), (), "at least 1 dimension, b is 0-D"),
], ids=str)
def test_matmul_errors_before_any_launch(gemm_calls, shape_a, shape_b, match):
    with pytest.raises(ValueError, match=match):
        pg.matmul(torch.randn(shape_a), torch.randn(shape_b))
    assert gemm_calls == []


def test_matmul_of_cpu_tensors_says_it_needs_cuda():
    with pytest.raises(ValueError, match="CUDA"):
        pg.matmul(torch.ones(2, 3, 4, 5), torch.ones(2, 3, 5, 6))


def test_matmul_batches_under_torch_compile():
    """Traced (meta operands: the op's fake implementation): the folded product in one graph, and the same
    ValueError where a batch does not fold (from the strides, not from a failed view inside the trace)."""
    meta = lambda *shape: torch.empty(*shape, device="meta", dtype=torch.bfloat16)  # noqa: E731
    compiled = torch.compile(pg.matmul, backend="aot_eager", fullgraph=True)
    assert compiled(meta(2, 3, 4, 5), meta(2, 3, 5, 6)).shape == (2, 3, 4, 6)
    assert compiled(meta(2, 3, 4, 5), meta(5, 6)).shape == (2, 3, 4, 6)
    graph_breaking = torch.compile(pg.matmul, backend="aot_eager")  # fullgraph refuses any raise in the trace
    with pytest.raises(ValueError, match="batch dimensions of a"):
        graph_breaking(meta(3, 2, 4, 5).permute(1, 0, 2, 3), meta(2, 3, 5, 6))
