"""The cases every CUTLASS kernel is checked on, shared by the GPU suite (which runs them) and the
CPU suite (which checks, on meta tensors, that each registered kernel accepts every case, so no
registry entry can go unexercised)."""

from dataclasses import dataclass

import torch

import pycutlass_gemm as pg
from conftest import DTYPES, WORKLOADS, matrix
# Not multiples of any tile; M or N of 1 and 8; K of 8 and 65536+. Each kernel runs them with
# the extents it reads contiguously rounded up to its alignment (see aligned_shape).
EDGE_SHAPES = [(127, 259, 200), (1, 264, 136), (264, 1, 136), (8, 8, 65544), (200, 8, 8), (8, 520, 72)]


def aligned_shape(kernel: dict, m: int, n: int, k: int) -> tuple[int, int, int]:
    """(m, n, k) with every extent that lies contiguously in memory for this kernel's layouts
    rounded up to its alignment: TMA kernels refuse a contiguous extent of a row that is not a
    multiple of 16 bytes (test_auto_dispatch checks that auto sends those to other kernels).
    D is row-major, so N always counts."""
    align = kernel["alignment"]
    up = lambda x: -(-x // align) * align
    a_row, b_row = kernel["layout_a"] == "row", kernel["layout_b"] == "row"
    return (m if a_row else up(m), up(n), up(k) if a_row or not b_row else k)


@dataclass(frozen=True)
class Case:
    kernel: dict
    m: int
    n: int
    k: int
    pad: int  # extra elements in every leading dimension, beyond alignment

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.kernel["dtype"]]

    @property
    def precision(self) -> str:
        return self.kernel["math"]

    @property
    def id(self) -> str:
        return f"{self.kernel['name']}-{self.m}x{self.n}x{self.k}" + (f"-pad{self.pad}" if self.pad else "")

    def operands(self, device="cuda"):
        """(a, b, out): fresh random inputs in the kernel's layouts and a NaN-filled out, each
        leading dimension rounded up to the kernel's alignment and then `pad` longer."""
        align = self.kernel["alignment"]
        def ld_pad(extent):
            return (-extent) % align + self.pad
        la, lb = self.kernel["layout_a"], self.kernel["layout_b"]
        a = matrix(self.m, self.k, la, self.dtype, pad=ld_pad(self.k if la == "row" else self.m), device=device)
        b = matrix(self.k, self.n, lb, self.dtype, pad=ld_pad(self.n if lb == "row" else self.k), device=device)
        out = matrix(self.m, self.n, "row", self.dtype, pad=ld_pad(self.n), device=device)
        if device != "meta":
            out.fill_(float("nan"))
        return a, b, out


def cutlass_kernels() -> list[dict]:
    return [k for k in pg.kernels() if k["family"].startswith("cutlass")]


def cases() -> list[Case]:
    out = []
    for kern in cutlass_kernels():
        layouts = (kern["layout_a"], kern["layout_b"])
        # Full size: the workload stored in this kernel's layouts (a 2048x4096x8192 problem for
        # col x col, which no workload uses), and the large-K workload for every kernel.
        own = [w[:3] for w in WORKLOADS.values() if w[3:] == layouts] or [WORKLOADS["transposed_b"][:3]]
        for m, n, k in dict.fromkeys(own + [WORKLOADS["large_k"][:3]]):
            out.append(Case(kern, m, n, k, 0))
        out += [Case(kern, *aligned_shape(kern, m, n, k), 0) for m, n, k in EDGE_SHAPES]
        out.append(Case(kern, *aligned_shape(kern, 257, 131, 263), 8))  # leading dimensions longer than the rows
    return out
