"""What the benchmark measures: precisions, workloads, the shapes users bring, and the rows
(workload x precision x variant) of its kernel table, chosen from the command line."""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import torch

DEVICE = "cuda"  # where tensors are made; the CPU tests point it elsewhere to run the whole pipeline


@dataclass(frozen=True)
class Precision:
    """One precision of the table: how inputs are stored and what each side is told to do."""

    name: str                  # the table's label
    cli: str                   # its --dtype spelling
    dtype: torch.dtype         # storage of A, B and the output
    gemm_precision: str | None  # passed to gemm/plan/can_run (None: 16-bit inputs ignore it)
    allow_tf32: bool           # torch.backends.cuda.matmul.allow_tf32 around the torch.matmul rows
    base_tol: float            # ‖out − ref‖/‖ref‖ allowed at K <= 8192

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    @property
    def math(self) -> str:
        """The registry's "math" of the kernels built for this precision."""
        return self.gemm_precision if self.gemm_precision in ("tf32", "tf32x3") else "ieee"

    def tolerance(self, k: int) -> float:
        # Same rule as tests/conftest.py: the rounding error of a length-K sum grows like sqrt(K),
        # so K = 524288 gets 8x the base (a plain fp32 loop over K = 524288 is off by ~4e-5);
        # a wrong index or a race is off by O(1), far above any of these.
        return self.base_tol * max(1.0, math.sqrt(k / 8192))


PRECISIONS = (
    Precision("fp32", "float32", torch.float32, "ieee", False, 1e-5),
    Precision("tf32", "tf32", torch.float32, "tf32", True, 2e-3),
    Precision("bf16", "bfloat16", torch.bfloat16, None, False, 1e-2),
    Precision("fp16", "float16", torch.float16, None, False, 1e-2),
    # fp32 storage, precision="tf32x3": held to fp32's tolerance; torch's row is IEEE fp32 (SGEMM)
    Precision("tf32x3", "tf32x3", torch.float32, "tf32x3", False, 1e-5),
)
_PRECISION_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


@dataclass(frozen=True)
class Workload:
    """C = A @ B with A (m, k) and B (k, n), each stored row-major ("r") or as the transpose of a
    row-major tensor ("c": the operand is a column-major view, as A.T is); `batch` > 1 makes both
    operands 3-D, `batch` such products."""

    name: str
    m: int
    n: int
    k: int
    layout: str = "rr"  # A then B
    batch: int = 1

    @classmethod
    def problem(cls, m: int, n: int, k: int, layout: str = "rr", batch: int = 1) -> "Workload":
        """A workload named by its problem (custom, sweep and user shapes)."""
        return cls(_dims(m, n, k, layout, batch), m, n, k, layout, batch)

    @property
    def label(self) -> str:
        """The name with the problem, unless the name already is the problem (custom, sweep)."""
        dims = _dims(self.m, self.n, self.k, self.layout, self.batch)
        return self.name if self.name == dims else f"{self.name} {dims}"

    @property
    def flop(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    @property
    def layout_a(self) -> str:
        return "row" if self.layout[0] == "r" else "col"

    @property
    def layout_b(self) -> str:
        return "row" if self.layout[1] == "r" else "col"

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.m, self.n) if self.batch == 1 else (self.batch, self.m, self.n)

    def min_bytes(self, element_size: int) -> int:
        """Bytes any implementation must move: read A and B once, write C once."""
        return self.batch * (self.m * self.k + self.k * self.n + self.m * self.n) * element_size

    def make_inputs(self, precision: Precision, device: str | None = None, seed: int = 0):
        """The operands as users have them: torch.rand float32 (cast for 16-bit precisions),
        stored per `layout`, returned as views -- no copy on the way to the kernel."""
        device = device or DEVICE
        g = torch.Generator(device=device).manual_seed(seed)
        a = torch.rand(self._shape("a"), generator=g, device=device)
        b = torch.rand(self._shape("b"), generator=g, device=device)
        if precision.dtype == torch.float16:
            a.mul_(fp16_input_scale(self.k))  # a power of two: exact, only keeps C in fp16's range
        return self._view(a.to(precision.dtype), "a"), self._view(b.to(precision.dtype), "b")

    def meta_inputs(self, precision: Precision):
        """Same shapes and strides on the meta device: enough for plan() without a GPU."""
        a = torch.empty(self._shape("a"), dtype=precision.dtype, device="meta")
        b = torch.empty(self._shape("b"), dtype=precision.dtype, device="meta")
        return self._view(a, "a"), self._view(b, "b")

    def _shape(self, which: str) -> tuple[int, ...]:
        rows, cols = (self.m, self.k) if which == "a" else (self.k, self.n)
        stored_as_row = self.layout[0 if which == "a" else 1] == "r"
        shape = (rows, cols) if stored_as_row else (cols, rows)
        return shape if self.batch == 1 else (self.batch, *shape)

    def _view(self, storage: torch.Tensor, which: str) -> torch.Tensor:
        return storage if self.layout[0 if which == "a" else 1] == "r" else storage.transpose(-1, -2)


def _dims(m: int, n: int, k: int, layout: str, batch: int) -> str:
    return f"{batch}x" * (batch != 1) + f"{m}x{n}x{k} {layout}"


def fp16_input_scale(k: int) -> float:
    """A sum of K products of U(0,1) numbers is about K/4: past K = 262144 that overflows fp16
    (max 65504) for every implementation. Scale A by a power of two keeping C near 2^14 or below."""
    excess = math.ceil(math.log2(max(k / 4 / 2**14, 1.0)))
    return 2.0 ** -excess


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖/‖ref‖ against a float64 `ref`; NaN if anything is NaN (NaN <= tol is False)."""
    diff = torch.linalg.vector_norm(out.double() - ref)
    return float(diff / torch.linalg.vector_norm(ref))


# problems.md: inputs torch.rand float32; users used to write A.T.contiguous() first.
WORKLOADS = {
    "transposed-a": Workload("transposed A", 2048, 4096, 8192, "cr"),   # matmul(A.T, B), A stored (K, M)
    "transposed-b": Workload("transposed B", 2048, 4096, 8192, "rc"),   # matmul(A, B.T), B stored (N, K)
    "large-k": Workload("large K", 256, 256, 524288, "rr"),
}
QUICK_WORKLOADS = {
    "transposed-a": Workload("transposed A", 1024, 2048, 4096, "cr"),
    "transposed-b": Workload("transposed B", 1024, 2048, 4096, "rc"),
    "large-k": Workload("large K", 256, 256, 131072, "rr"),
}
# The "shapes users bring" section: square sizes in every layout, a model's projections (small M:
# decoding; 160 and 176 rows: a prefill chunk's x @ W.T and dx), sizes no 16-byte alignment fits (777,
# 1001: the kernels' fallbacks; x @ W.T onto a vocabulary of 50257, whose output alone is unaligned), a
# batch, long K.
USER_SHAPES = ("4096x4096x4096:rr:bf16,4096x4096x4096:rc:bf16,4096x4096x4096:cr:bf16,4096x4096x4096:cc:bf16,"
               "8192x8192x8192:rr:bf16,8192x14336x4096:rc:bf16,16x4096x4096:rc:bf16,128x4096x4096:rc:bf16,"
               "160x4096x14336:rc:bf16,176x4096x4096:rr:bf16,1000x3000x777:rr:bf16,2048x1001x2048:rr:bf16,"
               "4096x50257x1024:rc:bf16,32x1024x64x1024:rr:bf16,"
               "256x256x131072:rr:bf16,256x256x524288:rr:bf16")
QUICK_USER_SHAPES = "16x4096x4096:rc:bf16,1000x3000x777:rr:bf16,32x1024x64x1024:rr:bf16"
SHAPE_FORMAT = "[Bx]MxNxK:LAYOUT:DTYPE"
SWEEP_SIZES = (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
QUICK_SWEEP_SIZES = (256, 512, 1024, 2048)
LAYOUTS = ("rr", "rc", "cr", "cc")

# Variants that are not registry kernels. "torch" is always run: every row is compared with it.
TORCH, TORCH_COPY = "torch", "torch+contiguous"
BASELINES = (TORCH, TORCH_COPY, "auto", "fallback", "naive")
SWEEP_DEFAULT_VARIANTS = ("auto", "fallback")  # the naive kernel at 8192^3 takes seconds a call
WORKLOADS_SECTION, SHAPES_SECTION = "workloads", "shapes"


@dataclass(frozen=True)
class BenchCase:
    workload: Workload
    precision: Precision
    variant: str            # one of BASELINES or a kernel name from kernels()
    explicit: bool = False  # named with --variant: a kernel that cannot run is shown as SKIP
    skip_reason: str = ""   # known before running (dtype/math/layout of the kernel)
    section: str = WORKLOADS_SECTION


@dataclass
class Result:
    """One row of the table (and of the CSV/JSON files). Speeds are None unless status is "ok"."""

    workload: str
    m: int
    n: int
    k: int
    layout: str
    precision: str
    variant: str
    kernel: str
    status: str            # "ok", "FAIL" or "SKIP"
    message: str = ""
    error: float | None = None
    tol: float | None = None
    ms: float | None = None       # median
    ms_min: float | None = None
    runs: int = 0
    tflops: float | None = None
    pct_peak: float | None = None  # of the measured torch.matmul peak of this precision
    gbps: float | None = None      # min_bytes / ms
    pct_bw: float | None = None    # of the measured device-to-device copy bandwidth
    x_naive: float | None = None
    x_torch: float | None = None
    # auto and named kernels: this row's median over the fastest named kernel's of its group, and that kernel
    vs_best: float | None = None
    best_kernel: str | None = None
    batch: int = 1
    section: str = WORKLOADS_SECTION


FIELDS = [f.name for f in dataclasses.fields(Result)]


# --- choosing the rows -------------------------------------------------------------------------


def parse_precisions(spec: str | None) -> list[Precision]:
    if not spec or spec == "all":
        return list(PRECISIONS)
    by_cli = {p.cli: p for p in PRECISIONS}
    chosen = []
    for word in spec.split(","):
        word = _PRECISION_ALIASES.get(word.strip(), word.strip())
        if word not in by_cli:
            raise ValueError(f"unknown --dtype {word!r}; choose from {', '.join(by_cli)} (comma-separated)")
        if by_cli[word] not in chosen:
            chosen.append(by_cli[word])
    return chosen


def parse_variants(spec: str | None) -> list[str] | None:
    """None means every applicable variant."""
    if not spec or spec == "all":
        return None
    return list(dict.fromkeys(v.strip() for v in spec.split(",") if v.strip()))


def parse_shapes(spec: str) -> list[tuple[Workload, Precision]]:
    """'1000x3000x777:rr:bf16,32x1024x64x1024:rr:bf16' -> [(workload, precision)], in order."""
    by_name = {p.name: p for p in PRECISIONS} | {p.cli: p for p in PRECISIONS}
    shapes = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        where = f"--shapes {item!r}"
        parts = [s.strip().lower() for s in item.split(":")]
        if len(parts) != 3:
            raise ValueError(f"{where}: want {SHAPE_FORMAT}, e.g. 1000x3000x777:rr:bf16 or 32x1024x64x1024:rc:fp16")
        dims, layout, dtype = parts
        try:
            sizes = [int(d) for d in dims.split("x")]
        except ValueError:
            sizes = []
        if len(sizes) not in (3, 4):
            raise ValueError(f"{where}: {dims!r} is not [Bx]MxNxK (3 or 4 whole numbers joined by 'x')")
        if min(sizes) <= 0:
            raise ValueError(f"{where}: sizes must be positive")
        if layout not in LAYOUTS:
            raise ValueError(f"{where}: layout {layout!r} is not one of {', '.join(LAYOUTS)} "
                             "(A then B: r row-major, c a column-major view such as A.T)")
        precision = by_name.get(_PRECISION_ALIASES.get(dtype, dtype))
        if precision is None:
            raise ValueError(f"{where}: dtype {dtype!r} is not one of {', '.join(p.name for p in PRECISIONS)}")
        *batch, m, n, k = sizes
        shapes.append((Workload.problem(m, n, k, layout, batch[0] if batch else 1), precision))
    if not shapes:
        raise ValueError(f"--shapes is empty; want a comma-separated list of {SHAPE_FORMAT}")
    return shapes


def select_workloads(args: argparse.Namespace) -> list[Workload]:
    if args.sweep:
        sizes = QUICK_SWEEP_SIZES if args.quick else SWEEP_SIZES
        return [Workload.problem(s, s, s, args.layout or "rr") for s in sizes]
    if any(v is not None for v in (args.m, args.n, args.k, args.layout)):
        if args.workload:
            raise ValueError("--workload picks among the standard problems; --m/--n/--k/--layout define another")
        size = 1024 if args.quick else 4096
        m, n, k = (v if v is not None else size for v in (args.m, args.n, args.k))
        return [Workload.problem(m, n, k, args.layout or "rr")]
    table = QUICK_WORKLOADS if args.quick else WORKLOADS
    keys = list(table) if not args.workload else [w.strip() for w in args.workload.split(",")]
    for key in keys:
        if key not in table:
            raise ValueError(f"unknown --workload {key!r}; choose from {', '.join(table)}")
    return [table[key] for key in keys]


def select_shapes(args: argparse.Namespace, precisions: Sequence[Precision]) -> list[tuple[Workload, Precision]]:
    """--shapes as given, or the built-in "shapes users bring" of the precisions --dtype chose."""
    if args.shapes:
        return parse_shapes(args.shapes)
    return [(w, p) for w, p in parse_shapes(QUICK_USER_SHAPES if args.quick else USER_SHAPES) if p in precisions]


def _static_mismatch(kernel: dict, workload: Workload, precision: Precision) -> str:
    """Why a registered kernel is not built for this workload and precision ("" if it is)."""
    if kernel["dtype"] != precision.dtype_name:
        return f"built for {kernel['dtype']}"
    if kernel["math"] != precision.math:
        return f"built for {kernel['math']} math"
    for which, want in (("a", workload.layout_a), ("b", workload.layout_b)):
        if kernel[f"layout_{which}"] not in ("any", want):
            return f"built for {kernel[f'layout_{which}']}-major {which.upper()}, it is {want}-major"
    return ""


def build_cases(workloads: Sequence[Workload], precisions: Sequence[Precision],
                variants: Sequence[str] | None, kernels: Sequence[dict],
                shapes: Sequence[tuple[Workload, Precision]] = ()) -> list[BenchCase]:
    """Every (workload, precision, variant) to run, in table order: each workload in each precision,
    then each of `shapes` (the "shapes users bring", whose default rows are torch, auto and the
    registered kernels, not the slow baselines). Registered kernels come in priority order; those
    not built for the dtype, math or layouts are left out unless named."""
    registered = [k for k in sorted(kernels, key=lambda k: -k["priority"]) if k["name"] not in BASELINES]
    known = set(BASELINES) | {k["name"] for k in registered}
    for v in variants or ():
        if v not in known:
            raise ValueError(f"unknown --variant {v!r}; choose from {', '.join(BASELINES)} "
                             f"or a kernel name (python -c 'import pycutlass_gemm as p; print(p.kernels())')")
    problems = [(w, p, WORKLOADS_SECTION) for w in workloads for p in precisions]
    problems += [(w, p, SHAPES_SECTION) for w, p in shapes]
    cases = []
    for w, p, section in problems:
        applicable = list(dict.fromkeys(k["name"] for k in registered if not _static_mismatch(k, w, p)))
        if variants is None:
            default = ([TORCH] + ([TORCH_COPY] if w.layout != "rr" else []) + ["auto"] + applicable
                       + ["fallback", "naive"]) if section == WORKLOADS_SECTION else [TORCH, "auto"] + applicable
            cases += [BenchCase(w, p, v, section=section) for v in default]
            continue
        cases.append(BenchCase(w, p, TORCH, section=section))  # the reference for "x torch", always measured
        for v in variants:
            if v == TORCH or (v == TORCH_COPY and w.layout == "rr"):
                continue
            reason = ""
            if v not in BASELINES and v not in applicable:
                built = [k for k in registered if k["name"] == v
                         and (k["dtype"], k["math"]) == (p.dtype_name, p.math)]
                if not built:
                    continue  # another precision's kernel: --dtype chose which run
                reason = _static_mismatch(built[0], w, p)  # a layout it is not built for
            cases.append(BenchCase(w, p, v, explicit=True, skip_reason=reason, section=section))
    for v in variants or ():
        if not any(c.variant == v for c in cases) and v != TORCH_COPY:
            built = sorted({f"{k['dtype']} ({k['math']})" for k in registered if k["name"] == v})
            raise ValueError(f"kernel {v!r} is built for {', '.join(built)}: none of the --dtype chosen")
    return cases
