"""Rows past an operand's last, read but never seen: every SM90 kernel on operands followed in memory by NaN.

The TMA kernels load a tile that straddles an operand's edge from memory past it where that memory is mapped
(CutlassSm90Gemm::tma_rows), instead of having TMA fill those rows: they feed only output rows past the edge, which
the epilogue does not store. Here the memory past each operand holds NaN, so a kernel that let a row past the edge
reach a stored output fails with a NaN error; the outputs are NaN-poisoned first, so one that left an output
unwritten fails too.
"""

import pytest
import torch

import pycutlass_gemm as pg
from conftest import DTYPES, gpu, poisoned, rel_error, tolerance
from cutlass_cases import aligned_shape, cutlass_kernels, splits_k_in_parallel

pytestmark = [pytest.mark.gpu, gpu]

# Ragged tile rows and columns for every tile (128-, 64- and 192-row tiles of D and of D^T); the 64-row pair at
# 40 rows; split-K's long K over few tiles.
SHAPES = [(200, 328, 512), (40, 136, 1024)]
SPLIT_K_SHAPES = [(160, 2056, 8192), (127, 264, 65536)]
CASES = [(kern, shape) for kern in cutlass_kernels() if kern["family"] == "cutlass_sm90"
         for shape in (SPLIT_K_SHAPES if splits_k_in_parallel(kern) else SHAPES)]


def nan_tailed(rows, cols, layout, dtype):
    """A fresh random (rows, cols) operand stored `layout`, the memory after it (256 more rows or columns) NaN."""
    lines, line = (rows, cols) if layout == "row" else (cols, rows)
    storage = torch.full(((lines + 256) * line,), float("nan"), device="cuda", dtype=dtype)
    storage[: lines * line] = torch.randn(lines * line, device="cuda", dtype=torch.float32).to(dtype)
    stored = storage[: lines * line].view(lines, line)
    return stored if layout == "row" else stored.t()


@pytest.mark.parametrize("kern, shape", CASES, ids=[f"{k['name']}-{'x'.join(map(str, s))}" for k, s in CASES])
def test_rows_past_the_edge_never_reach_the_output(kern, shape):
    m, n, k = aligned_shape(kern, *shape)
    dtype, precision = DTYPES[kern["dtype"]], kern["math"]
    a, b = nan_tailed(m, k, kern["layout_a"], dtype), nan_tailed(k, n, kern["layout_b"], dtype)
    out = poisoned(m, n, dtype)
    why = pg.can_run(kern["name"], a, b, out=out, precision=precision)
    if why:
        pytest.skip(why)
    pg.gemm(a, b, variant=kern["name"], out=out, precision=precision)
    err, tol = rel_error(out, a, b), tolerance(dtype, precision, k)
    print(f"{kern['name']} {m}x{n}x{k}: error vs fp64 {err:.2e} (tol {tol:.0e})")
    assert err < tol, f"error vs float64 {err:.2e} >= {tol:.0e} (NaN: a row past the edge reached the output)"
