"""The cases every CUTLASS kernel is checked on, shared by the GPU suite (which runs them) and the
CPU suite (which checks, on meta tensors, that each registered kernel accepts every case, so no
registry entry can go unexercised)."""

from dataclasses import dataclass

import torch

import pycutlass_gemm as pg
from conftest import DTYPES, WORKLOADS
# Not multiples of any tile; M or N of 1 and 8; K of 8 and 65536+. Each kernel runs them with
# the extents it reads contiguously rounded up to its alignment (see aligned_shape).
EDGE_SHAPES = [(127, 259, 200), (1, 264, 136), (264, 1, 136), (8, 8, 65544), (200, 8, 8), (8, 520, 72)]
# Kernels of alignment 1 (cutlass_sm80) take any pointer and leading dimension; they are run on the
# shapes of tracker issue 10 (odd K, odd N, a vocabulary of 50257) and on operands whose first
# element lies 1-7 elements past an aligned address, with odd leading dimensions, batched, and with
# alpha, beta and C.
UNALIGNED_SHAPES = [(1000, 3000, 777), (2048, 1001, 2048), (96, 50257, 264), (77, 1, 1001)]
# Kernels whose output alone may be unaligned (A and B by TMA; output_alignment 1): odd N with B
# column-major (x @ W.T onto a vocabulary), an odd leading dimension of D and C, their first element
# 1-3 elements past an aligned address, beta. (Batched cases would need A's and B's batch strides
# aligned; the edge shapes are not batched either.)
UNALIGNED_OUTPUT_SHAPES = [(2048, 1001, 2048), (512, 50257, 1024), (127, 77, 264), (8, 1, 520)]
# Kernels that split K in parallel (SM90, "_splitk") take only problems whose K splits into equal
# slices for at least half the SMs: long K over few tiles. Ragged tiles, one row, N of one tile, and x @ W.T over
# 129-192 tokens (the 192-row tiles of D^T: a ragged last tile of W's rows, the tokens' tile 5/6 full) and 128
# tokens (session 50: the same tiles over one 128-row tile row of D, W's rows ragged).
SPLIT_K_SHAPES = [(256, 256, 131072), (127, 264, 65536), (1, 264, 65536), (264, 8, 32768), (160, 2056, 8192),
                  (128, 4104, 8192)]


def aligned_shape(kernel: dict, m: int, n: int, k: int) -> tuple[int, int, int]:
    """(m, n, k) with every extent that lies contiguously in memory for this kernel's layouts
    rounded up to its alignment: TMA kernels refuse a contiguous extent of a row that is not a
    multiple of 16 bytes (test_auto_dispatch checks that auto sends those to other kernels).
    D is row-major, so N counts at D's alignment (the output alignment: 1 where the kernel stores D
    from registers, the inputs' or more where TMA stores it)."""
    align, out_align = kernel["alignment"], kernel["output_alignment"]
    up = lambda x, to=align: -(-x // to) * to
    a_row, b_row = kernel["layout_a"] == "row", kernel["layout_b"] == "row"
    n_up = up(up(n) if b_row else n, out_align)
    return (m if a_row else up(m), n_up, up(k) if a_row or not b_row else k)


@dataclass(frozen=True)
class Case:
    kernel: dict
    m: int
    n: int
    k: int
    pad: int  # extra elements in every leading dimension, beyond alignment
    misalign: int = 0  # A starts this many elements past an aligned address, B one more, C two, D three
    batch: int = 1     # > 1: 3-D operands, each batch stride one matrix plus an odd number of elements
    beta: float = 0.0  # nonzero: D = alpha * A @ B + beta * C with a row-major C of D's strides
    bias_row: bool = False  # C is a vector of n broadcast down the rows (F.linear's bias), beta 1
    out_misalign: int = 0   # C and D (only) start this many elements (C: one more) past an aligned address

    @property
    def alpha(self) -> float:
        return 0.75 if self.beta else 1.0

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.kernel["dtype"]]

    @property
    def precision(self) -> str:
        return self.kernel["math"]

    @property
    def id(self) -> str:
        return (f"{self.kernel['name']}-{self.m}x{self.n}x{self.k}" + (f"-pad{self.pad}" if self.pad else "") +
                (f"-offset{self.misalign}" if self.misalign else "") + (f"-batch{self.batch}" if self.batch > 1 else "") +
                (f"-beta{self.beta:g}" if self.beta else "") + ("-bias" if self.bias_row else "") +
                (f"-outoffset{self.out_misalign}" if self.out_misalign else ""))

    def operands(self, device="cuda"):
        """(a, b, c, out): fresh random inputs in the kernel's layouts (c: None unless beta), and a
        NaN-filled out, each leading dimension rounded up to the kernel's alignment and then `pad`
        longer, each first element `misalign` (+1, +2, +3) elements past an aligned address."""
        la, lb = self.kernel["layout_a"], self.kernel["layout_b"]
        def mk(rows, cols, layout, offset, align=self.kernel["alignment"], misalign=self.misalign, pad=self.pad):
            return operand(rows, cols, layout, self.dtype, pad=(-(cols if layout == "row" else rows)) % align + pad,
                           misalign=misalign + offset if misalign else 0, batch=self.batch,
                           batch_align=1 if misalign else align, device=device)
        a, b = mk(self.m, self.k, la, 0), mk(self.k, self.n, lb, 1)
        # C and D: the kernel's output alignment, and out_misalign when set (A and B stay aligned).
        # A kernel that stores D by TMA behind inputs at any alignment gets aligned C and D (its
        # leading dimension padded by a multiple of its alignment) whatever A's and B's offsets.
        out_align = self.kernel["output_alignment"]
        out_pad = -(-self.pad // out_align) * out_align
        plain_misalign = self.misalign if out_align == 1 else 0
        out_misalign, c_offset, d_offset = (self.out_misalign, 1, 0) if self.out_misalign else (plain_misalign, 2, 3)
        if self.bias_row:
            c = torch.randn(self.n, device=device, dtype=torch.float32).to(self.dtype)
        else:
            c = mk(self.m, self.n, "row", c_offset, out_align, out_misalign, out_pad) if self.beta else None
        out = mk(self.m, self.n, "row", d_offset, out_align, out_misalign, out_pad)
        if device != "meta":
            out.fill_(float("nan"))
        return a, b, c, out


def operand(rows, cols, layout, dtype, *, pad=0, misalign=0, batch=1, batch_align=1, device="cuda", positive=False):
    """A fresh random (rows, cols) operand, or (batch, rows, cols) when batch > 1, stored `layout`
    ("row" or "col") with its leading dimension `pad` elements longer than needed and its first
    element `misalign` elements past an aligned address (torch's allocations are 256-byte
    aligned); batches lie one matrix plus 3 elements apart, so batch strides are odd too, unless
    rounded up to a multiple of `batch_align` (a TMA epilogue's D). Normal values, or uniform in
    [0, 1) where `positive` (a lone dot product of signed values can cancel to near zero, and an
    error relative to that says nothing of the kernel: 1 x 1 x 65536 fp32 failed once in six runs)."""
    ld = (cols if layout == "row" else rows) + pad
    strides = (ld, 1) if layout == "row" else (1, ld)
    span = (rows - 1) * strides[0] + (cols - 1) * strides[1] + 1
    shape = (rows, cols)
    if batch > 1:
        gap = -(-(span + 3) // batch_align) * batch_align
        shape, strides = (batch,) + shape, (gap,) + strides
        span = (batch - 1) * gap + span
    draw = torch.rand if positive else torch.randn
    storage = draw(span + misalign, device=device, dtype=torch.float32).to(dtype)
    return torch.as_strided(storage, shape, strides, misalign)


def cutlass_kernels() -> list[dict]:
    return [k for k in pg.kernels() if k["family"].startswith("cutlass")]


def splits_k_in_parallel(kern: dict) -> bool:
    """An SM90 kernel that splits K in parallel: it takes only SPLIT_K_SHAPES-like problems."""
    return kern["family"] == "cutlass_sm90" and "_splitk" in kern["name"]


def cases() -> list[Case]:
    out = []
    for kern in cutlass_kernels():
        layouts = (kern["layout_a"], kern["layout_b"])
        if splits_k_in_parallel(kern):
            out.append(Case(kern, *WORKLOADS["large_k"][:3], 0))
            out += [Case(kern, *aligned_shape(kern, m, n, k), 0) for m, n, k in SPLIT_K_SHAPES]
            out.append(Case(kern, *aligned_shape(kern, 257, 136, 32768), 8))  # leading dimensions longer than the rows
            # C and D at any alignment
            out.append(Case(kern, *aligned_shape(kern, 129, 72, 65536), 8, beta=-1.5, out_misalign=1))
            continue
        # Full size: the workload stored in this kernel's layouts (a 2048x4096x8192 problem for
        # col x col, which no workload uses), and the large-K workload for every kernel.
        own = [w[:3] for w in WORKLOADS.values() if w[3:] == layouts] or [WORKLOADS["transposed_b"][:3]]
        for m, n, k in dict.fromkeys(own + [WORKLOADS["large_k"][:3]]):
            out.append(Case(kern, m, n, k, 0))
        out += [Case(kern, *aligned_shape(kern, m, n, k), 0) for m, n, k in EDGE_SHAPES]
        out.append(Case(kern, *aligned_shape(kern, 257, 131, 263), 8))  # leading dimensions longer than the rows
        if kern["alignment"] == 1:
            # (N rounded up to the output alignment: where D is stored by TMA, only A and B are odd.)
            out += [Case(kern, *aligned_shape(kern, m, n, k), 0) for m, n, k in UNALIGNED_SHAPES]
            # Every offset of a 16-byte word, odd leading dimensions (pad 1, 3, ...), ragged tiles.
            out += [Case(kern, *aligned_shape(kern, 131 + 2 * o, 77 + o, 95 + 16 * o), 2 * o - 1, o) for o in range(1, 8)]
            out.append(Case(kern, *aligned_shape(kern, 67, 45, 129), 3, misalign=1, batch=3))
            # C read in the epilogue, except by a TMA epilogue behind the staged mainloop (it refuses
            # beta != 0: cutlass_sm90_gemm.cuh says why)
            reads_c = kern["output_alignment"] == 1
            out.append(Case(kern, *aligned_shape(kern, 129, 67, 71), 1, misalign=3, beta=-1.5 if reads_c else 0.0))
            out.append(Case(kern, *aligned_shape(kern, 65, 133, 31), 5, misalign=5, batch=2, beta=0.5 if reads_c else 0.0))
            # One tile, long K: split (cutlass_sm80: slices in parallel, partials in 16 bits), C read by the reduction
            out.append(Case(kern, *aligned_shape(kern, 77, 45, 8197), 1, misalign=3, beta=-1.5 if reads_c else 0.0))
        if kern["output_alignment"] == 1 and kern["alignment"] > 1:
            # A and B as TMA needs them (pad 8 keeps their leading dimensions aligned); D's is odd.
            out += [Case(kern, *aligned_shape(kern, m, n, k), 0) for m, n, k in UNALIGNED_OUTPUT_SHAPES]
            out += [Case(kern, *aligned_shape(kern, 131, 77 + 2 * o, 136), 8, out_misalign=o) for o in (1, 2, 3)]
            out.append(Case(kern, *aligned_shape(kern, 129, 67, 72), 8, beta=-1.5, out_misalign=1))
        if kern["bias_row"]:  # F.linear: x @ W.T + b at a transformer projection's shape, and ragged
            out += [Case(kern, 4096, 1024, 1024, 0, beta=1.0, bias_row=True),
                    Case(kern, *aligned_shape(kern, 127, 259, 200), 0, beta=1.0, bias_row=True)]
    return out
