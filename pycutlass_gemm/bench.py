"""``python -m pycutlass_gemm bench``: pycutlass_gemm against torch.matmul on the project's workloads.

Each row is one (workload, precision, variant): it is checked against a float64 reference first,
and only a result within tolerance is timed. Timing (see docs/bench.md): warm-up, then CUDA events
around each call, a 256 MiB buffer zeroed before every call (outside the events) so no operand is
served from L2, the median of many runs. Speeds are compared, in the same run and the same
precision, with the naive kernel and with torch.matmul, and against peaks measured once per run.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import torch

# The package itself, looked up at call time (``_api.gemm``) so tests can swap its functions.
import pycutlass_gemm as _api

DEVICE = "cuda"  # where tensors are made; the CPU tests point it elsewhere to run the whole pipeline

# --- what is measured --------------------------------------------------------------------------


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
        return "tf32" if self.gemm_precision == "tf32" else "ieee"

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
)
_PRECISION_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


@dataclass(frozen=True)
class Workload:
    """C = A @ B with A (m, k) and B (k, n), each stored row-major ("r") or as the transpose of a
    row-major tensor ("c": the operand is a column-major view, as A.T is)."""

    name: str
    m: int
    n: int
    k: int
    layout: str = "rr"  # A then B

    @property
    def label(self) -> str:
        """The name with the problem, unless the name already is the problem (custom, sweep)."""
        dims = f"{self.m}x{self.n}x{self.k} {self.layout}"
        return self.name if self.name == dims else f"{self.name} {dims}"

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def layout_a(self) -> str:
        return "row" if self.layout[0] == "r" else "col"

    @property
    def layout_b(self) -> str:
        return "row" if self.layout[1] == "r" else "col"

    def min_bytes(self, element_size: int) -> int:
        """Bytes any implementation must move: read A and B once, write C once."""
        return (self.m * self.k + self.k * self.n + self.m * self.n) * element_size

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

    def _shape(self, which: str) -> tuple[int, int]:
        rows, cols = (self.m, self.k) if which == "a" else (self.k, self.n)
        stored_as_row = self.layout[0 if which == "a" else 1] == "r"
        return (rows, cols) if stored_as_row else (cols, rows)

    def _view(self, storage: torch.Tensor, which: str) -> torch.Tensor:
        return storage if self.layout[0 if which == "a" else 1] == "r" else storage.T


def fp16_input_scale(k: int) -> float:
    """A sum of K products of U(0,1) numbers is about K/4: past K = 262144 that overflows fp16
    (max 65504) for every implementation. Scale A by a power of two keeping C near 2^14 or below."""
    excess = math.ceil(math.log2(max(k / 4 / 2**14, 1.0)))
    return 2.0 ** -excess


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
SWEEP_SIZES = (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
QUICK_SWEEP_SIZES = (256, 512, 1024, 2048)
LAYOUTS = ("rr", "rc", "cr", "cc")

# Variants that are not registry kernels. "torch" is always run: every row is compared with it.
TORCH, TORCH_COPY = "torch", "torch+contiguous"
BASELINES = (TORCH, TORCH_COPY, "auto", "fallback", "naive")
SWEEP_DEFAULT_VARIANTS = ("auto", "fallback")  # the naive kernel at 8192^3 takes seconds a call


@dataclass(frozen=True)
class BenchCase:
    workload: Workload
    precision: Precision
    variant: str            # one of BASELINES or a kernel name from kernels()
    explicit: bool = False  # named with --variant: a kernel that cannot run is shown as SKIP
    skip_reason: str = ""   # known before running (dtype/math/layout of the kernel)


@dataclass(frozen=True)
class Settings:
    """How long to measure. A row stops after `budget_s` once it has `min_runs` runs."""

    budget_s: float = 2.0
    min_runs: int = 3
    max_runs: int = 100
    warmup_s: float = 0.1
    peak_size: int = 8192
    copy_mib: int = 1024
    # > L2 of H100/H200 (50 MiB; B200's is 126 MiB), and zeroing it (~0.3 ms on an H100) outlasts
    # the host work of queueing any call (<= ~0.15 ms measured), so the events time GPU work.
    flush_mib: int = 1024


FULL = Settings()
QUICK = Settings(budget_s=0.5, max_runs=20, warmup_s=0.05, copy_mib=512)


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


def select_workloads(args: argparse.Namespace) -> list[Workload]:
    if args.sweep:
        sizes = QUICK_SWEEP_SIZES if args.quick else SWEEP_SIZES
        layout = args.layout or "rr"
        return [Workload(f"{s}x{s}x{s} {layout}", s, s, s, layout) for s in sizes]
    if any(v is not None for v in (args.m, args.n, args.k, args.layout)):
        if args.workload:
            raise ValueError("--workload picks among the standard problems; --m/--n/--k/--layout define another")
        size = 1024 if args.quick else 4096
        m, n, k = (v if v is not None else size for v in (args.m, args.n, args.k))
        layout = args.layout or "rr"
        return [Workload(f"{m}x{n}x{k} {layout}", m, n, k, layout)]
    table = QUICK_WORKLOADS if args.quick else WORKLOADS
    keys = list(table) if not args.workload else [w.strip() for w in args.workload.split(",")]
    for key in keys:
        if key not in table:
            raise ValueError(f"unknown --workload {key!r}; choose from {', '.join(table)}")
    return [table[key] for key in keys]


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
                variants: Sequence[str] | None, kernels: Sequence[dict]) -> list[BenchCase]:
    """Every (workload, precision, variant) to run, in table order. Registered kernels come in
    priority order; those not built for the dtype, math or layouts are left out unless named."""
    registered = [k for k in sorted(kernels, key=lambda k: -k["priority"]) if k["name"] not in BASELINES]
    known = set(BASELINES) | {k["name"] for k in registered}
    for v in variants or ():
        if v not in known:
            raise ValueError(f"unknown --variant {v!r}; choose from {', '.join(BASELINES)} "
                             f"or a kernel name (python -c 'import pycutlass_gemm as p; print(p.kernels())')")
    cases = []
    for w in workloads:
        for p in precisions:
            applicable = list(dict.fromkeys(k["name"] for k in registered if not _static_mismatch(k, w, p)))
            default = [TORCH] + ([TORCH_COPY] if w.layout != "rr" else []) + ["auto"] + applicable + ["fallback", "naive"]
            if variants is None:
                cases += [BenchCase(w, p, v) for v in default]
                continue
            cases.append(BenchCase(w, p, TORCH))  # the reference for "x torch", always measured
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
                cases.append(BenchCase(w, p, v, explicit=True, skip_reason=reason))
    for v in variants or ():
        if not any(c.variant == v for c in cases) and v != TORCH_COPY:
            built = sorted({f"{k['dtype']} ({k['math']})" for k in registered if k["name"] == v})
            raise ValueError(f"kernel {v!r} is built for {', '.join(built)}: none of the --dtype chosen")
    return cases


# --- measuring ---------------------------------------------------------------------------------


@contextlib.contextmanager
def torch_matmul_precision(allow_tf32: bool):
    """torch.matmul's fp32 precision for the torch rows, restored afterwards."""
    matmul = torch.backends.cuda.matmul
    saved = matmul.allow_tf32
    matmul.allow_tf32 = allow_tf32
    try:
        yield
    finally:
        matmul.allow_tf32 = saved


def flush_buffer(settings: Settings) -> torch.Tensor:
    """What time_once zeroes before each run: larger than L2, so it evicts everything else."""
    return torch.empty(settings.flush_mib * 2**20 // 4, device=DEVICE, dtype=torch.int32)


def warm_up(fn: Callable[[], object], settings: Settings, *, warmed_s: float = 0.0) -> None:
    """Run `fn` untimed until it has run `settings.warmup_s` (counting `warmed_s` it already ran, e.g.
    the correctness call), so clocks, lazy module loading and allocator caches have settled."""
    t0 = time.perf_counter()
    while warmed_s + time.perf_counter() - t0 < settings.warmup_s:
        fn()
        torch.cuda.synchronize()


def time_once(fn: Callable[[], object], flush: torch.Tensor) -> float:
    """Milliseconds of one run of `fn` on the current stream, with L2 flushed first."""
    # Overwrite L2 so A and B come from HBM, as in a model where other layers ran in between;
    # it runs before the start event, so it is not timed, and it gives the CPU time to queue fn
    # before the GPU reaches the start event, as when a model's CPU side runs ahead.
    flush.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()  # one run at a time: nothing else on the stream, and a wall-clock budget
    return start.elapsed_time(end)


def time_interleaved(fns: Sequence[Callable[[], object]], flush: torch.Tensor, settings: Settings) -> list[list[float]]:
    """Milliseconds of each timed run of each of `fns`, taken round-robin (one run of each in turn)
    so that clock and temperature drift during the group falls on every row alike, and the
    ratios between rows of one run are fair. Each round starts one row later than the last, so
    no row always runs right after the same other one. Each stops after `budget_s` of its own
    wall time once it has `min_runs` runs, or at `max_runs`."""
    samples: list[list[float]] = [[] for _ in fns]
    spent = [0.0 for _ in fns]
    wanted = lambda i: len(samples[i]) < settings.max_runs and (  # noqa: E731
        len(samples[i]) < settings.min_runs or spent[i] < settings.budget_s)
    rounds = 0
    while any(wanted(i) for i in range(len(fns))):
        for j in range(len(fns)):
            i = (rounds + j) % len(fns)
            if wanted(i):
                t0 = time.perf_counter()
                samples[i].append(time_once(fns[i], flush))
                spent[i] += time.perf_counter() - t0
        rounds += 1
    return samples


def time_cuda(fn: Callable[[], object], flush: torch.Tensor, settings: Settings) -> list[float]:
    """Milliseconds of each timed run of `fn` alone, after a warm-up."""
    warm_up(fn, settings)
    return time_interleaved([fn], flush, settings)[0]


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖/‖ref‖ in float64; NaN if anything is NaN (NaN <= tol is False)."""
    diff = torch.linalg.vector_norm(out.double() - ref)
    return float(diff / torch.linalg.vector_norm(ref))


def measure_peaks(precisions: Sequence[Precision], flush: torch.Tensor, settings: Settings,
                  progress: "Progress") -> dict[str, float]:
    """TFLOP/s of a large square torch.matmul per precision, and "copy_gbps": a device-to-device
    copy counted as bytes read + written. The denominators of %peak and %bw."""
    peaks: dict[str, float] = {}
    size = settings.peak_size
    for p in precisions:
        progress.update(f"peak {p.name}")
        a = torch.rand(size, size, device=DEVICE).to(p.dtype)
        b = torch.rand(size, size, device=DEVICE).to(p.dtype)
        out = torch.empty(size, size, device=DEVICE, dtype=p.dtype)
        with torch_matmul_precision(p.allow_tf32):
            fn = lambda: torch.matmul(a, b, out=out)  # noqa: E731
            fn()
            ms = statistics.median(time_cuda(fn, flush, settings))
        peaks[p.name] = 2 * size**3 / ms / 1e9
        del a, b, out
    progress.update("peak copy")
    n = settings.copy_mib * 2**20 // 4
    src, dst = torch.ones(n, device=DEVICE, dtype=torch.int32), torch.empty(n, device=DEVICE, dtype=torch.int32)
    ms = statistics.median(time_cuda(lambda: dst.copy_(src), flush, settings))
    peaks["copy_gbps"] = 2 * n * 4 / ms / 1e6
    del src, dst
    torch.cuda.empty_cache()
    return peaks


def _call(case: BenchCase, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> tuple[Callable[[], torch.Tensor], str]:
    """The function a row times, and the kernel name to show."""
    v = case.variant
    if v == TORCH:
        return (lambda: torch.matmul(a, b, out=out)), "cuBLAS"
    if v == TORCH_COPY:
        # What users did before: materialise the transposed operand(s), then multiply.
        return (lambda: torch.matmul(a.contiguous(), b.contiguous(), out=out)), "copy + cuBLAS"
    kernel = v
    if v == "auto":
        try:
            kernel = _api.plan(a, b, out=out, precision=case.precision.gemm_precision)["kernel"] or "?"
        except Exception:  # noqa: BLE001 -- the gemm call below reports the problem
            kernel = "?"
    return (lambda: _api.gemm(a, b, variant=v, out=out, precision=case.precision.gemm_precision)), kernel


def check_case(case: BenchCase, a: torch.Tensor, b: torch.Tensor, ref: torch.Tensor, out: torch.Tensor,
               settings: Settings) -> tuple[Result, Callable[[], torch.Tensor] | None]:
    """Check one variant against the float64 reference and warm it up: (its row, the function to
    time), the function None if the row is a SKIP or FAIL -- a wrong kernel has no speed."""
    w, p = case.workload, case.precision
    r = Result(w.name, w.m, w.n, w.k, w.layout, p.name, case.variant, case.variant, "ok", tol=p.tolerance(w.k))
    try:
        if case.variant not in BASELINES:
            reason = case.skip_reason or _api.can_run(case.variant, a, b, out=out, precision=p.gemm_precision)
            if reason:
                r.status, r.message = "SKIP", reason
                return r, None
        fn, r.kernel = _call(case, a, b, out)
        with torch_matmul_precision(p.allow_tf32):
            out.fill_(math.nan)  # a kernel that writes nothing must not inherit the previous row's result
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            result = fn()
            torch.cuda.synchronize()
            r.error = rel_error(result, ref)
            if not r.error <= r.tol:
                r.status, r.message = "FAIL", f"error {r.error:.2e} > tolerance {r.tol:.1e}"
                return r, None
            warm_up(fn, settings, warmed_s=time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 -- a row that raises is a FAIL, the run goes on
        r.status, r.message = "FAIL", f"{type(e).__name__}: {e}".strip()
        return r, None
    return r, fn


def set_times(r: Result, samples: Sequence[float], workload: Workload, precision: Precision,
              peaks: dict[str, float]) -> None:
    r.ms, r.ms_min, r.runs = statistics.median(samples), min(samples), len(samples)
    r.tflops = workload.flop / r.ms / 1e9
    r.gbps = workload.min_bytes(precision.dtype.itemsize) / r.ms / 1e6
    if peaks.get(precision.name):
        r.pct_peak = 100 * r.tflops / peaks[precision.name]
    if peaks.get("copy_gbps"):
        r.pct_bw = 100 * r.gbps / peaks["copy_gbps"]


def fill_speedups(results: Iterable[Result]) -> None:
    """x naive and x torch: the baseline's median over the row's, same workload and precision."""
    results = list(results)
    baseline = {(r.workload, r.precision, r.variant): r.ms for r in results if r.status == "ok"}
    for r in results:
        if r.status != "ok":
            continue
        naive, torch_ms = baseline.get((r.workload, r.precision, "naive")), baseline.get((r.workload, r.precision, TORCH))
        r.x_naive = naive / r.ms if naive else None
        r.x_torch = torch_ms / r.ms if torch_ms else None


def run_cases(cases: Sequence[BenchCase], peaks: dict[str, float], settings: Settings, progress: "Progress",
              emit: Callable[[list[Result]], None]) -> list[Result]:
    """Run every case, one (workload, precision) group at a time: the group shares its inputs,
    reference and output, and its rows are emitted once its baselines are known."""
    flush = flush_buffer(settings)
    results: list[Result] = []
    groups: dict[tuple[Workload, Precision], list[BenchCase]] = {}
    for c in cases:
        groups.setdefault((c.workload, c.precision), []).append(c)
    made_for, a, b, ref = None, None, None, None
    for (w, p), group in groups.items():
        if made_for != (w, p.dtype):  # fp32 and tf32 rows share their inputs
            a = b = ref = None  # free the last set first: large K is 1 GiB in fp32, 2 GiB in float64
            torch.cuda.empty_cache()
            a, b = w.make_inputs(p)
            ref = a.double() @ b.double()  # on the GPU, from the same (cast) inputs
            made_for = (w, p.dtype)
        out = torch.empty(w.m, w.n, device=DEVICE, dtype=p.dtype)
        rows, timed = [], []
        for case in group:
            progress.update(f"{w.name} {p.name} {case.variant}")
            r, fn = check_case(case, a, b, ref, out, settings)
            if r.status != "SKIP" or case.explicit:
                rows.append(r)
            if fn is not None:
                timed.append((r, fn))
        progress.update(f"{w.name} {p.name}: timing {len(timed)} rows, interleaved")
        with torch_matmul_precision(p.allow_tf32):
            samples = time_interleaved([fn for _, fn in timed], flush, settings)
        for (r, _), ms in zip(timed, samples):
            set_times(r, ms, w, p, peaks)
        fill_speedups(rows)
        results += rows
        emit(rows)
    return results


# --- reporting ---------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:{spec}}{suffix}"


@dataclass(frozen=True)
class Columns:
    """Widths of the text columns, fixed before the first row so groups printed apart align."""

    workload: int = 12
    variant: int = 16
    kernel: int = 16

    @classmethod
    def for_cases(cls, cases: Sequence[BenchCase], kernels: Sequence[dict]) -> "Columns":
        # "auto" may show any kernel built for the dtypes in the run.
        dtypes = {c.precision.dtype_name for c in cases}
        kernel_names = [k["name"] for k in kernels if k["dtype"] in dtypes] + ["copy + cuBLAS"]
        return cls(workload=max(len(c.workload.name) for c in cases),
                   variant=max(len(c.variant) for c in cases),
                   kernel=max(map(len, kernel_names)))


def format_header(cols: Columns) -> str:
    return (f"{'workload':<{cols.workload}} {'prec':<4} {'variant':<{cols.variant}} {'kernel':<{cols.kernel}} "
            f"{'ms':>9} {'TFLOP/s':>8} {'%peak':>6} {'%bw':>5} {'x naive':>8} {'x torch':>7} {'error':>8}  status")


def format_row(r: Result, cols: Columns = Columns()) -> str:
    """One line per row, DeepGEMM style: correctness and speed side by side. A row that is not
    "ok" shows no speed, only its error and why."""
    ok = r.status == "ok"
    kernel = "" if r.kernel == r.variant else r.kernel  # naive, fallback and named kernels: said once
    status = r.status if not r.message else f"{r.status} {r.message}"
    speed = (_fmt(r.ms, ".3f") if ok else "-", _fmt(r.tflops, ".1f") if ok else "-",
             _fmt(r.pct_peak, ".0f", "%") if ok else "-", _fmt(r.pct_bw, ".0f", "%") if ok else "-",
             _fmt(r.x_naive, ".1f", "x") if ok else "-", _fmt(r.x_torch, ".2f", "x") if ok else "-")
    return (f"{r.workload:<{cols.workload}} {r.precision:<4} {r.variant:<{cols.variant}} {kernel:<{cols.kernel}} "
            f"{speed[0]:>9} {speed[1]:>8} {speed[2]:>6} {speed[3]:>5} {speed[4]:>8} {speed[5]:>7} "
            f"{_fmt(r.error, '.1e'):>8}  {status}")


def _jsonable(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def write_csv(path: str, results: Sequence[Result]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for r in results:
            writer.writerow({k: ("" if v is None else v) for k, v in dataclasses.asdict(r).items()})


def write_json(path: str, results: Sequence[Result], meta: dict) -> None:
    rows = [{k: _jsonable(v) for k, v in dataclasses.asdict(r).items()} for r in results]
    meta = {k: ({kk: _jsonable(vv) for kk, vv in v.items()} if isinstance(v, dict) else _jsonable(v))
            for k, v in meta.items()}
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=2, allow_nan=False)
        f.write("\n")


def _pyplot():
    import matplotlib  # lazily: only --plot and --sweep need it

    matplotlib.use("Agg")  # files only, also on machines without a display
    import matplotlib.pyplot as plt

    return plt


def _variant_colors(variants: Sequence[str]) -> dict[str, object]:
    plt = _pyplot()
    others = [v for v in variants if v != TORCH]
    cmap = plt.get_cmap("tab20" if len(others) > 10 else "tab10")
    colors = {v: cmap(i % cmap.N) for i, v in enumerate(others)}
    colors[TORCH] = "black"  # the bar everything is compared with
    return colors


# Bars by role, so the chart reads the same whatever the registry holds: every registered kernel
# that can run a row shares one colour (the table names them), auto is annotated with its x torch.
BAR_ROLES = {TORCH: ("torch.matmul", "black"), TORCH_COPY: ("torch.matmul after .contiguous()", "0.6"),
             "auto": ("pycutlass_gemm auto", "tab:blue"), "kernel": ("other registered kernels", "lightsteelblue"),
             "fallback": ("fallback", "tab:orange"), "naive": ("naive", "tab:green")}


def plot_bars(results: Sequence[Result], path: str, title: str = "") -> None:
    """TFLOP/s per workload (one panel each) x precision (groups) x variant (bars, coloured by
    role, see BAR_ROLES); auto's bar carries its speed-up over torch.matmul; FAIL rows are marked
    where their bar would be."""
    plt = _pyplot()
    rows = [r for r in results if r.status != "SKIP"]
    workloads = list(dict.fromkeys(r.workload for r in rows))
    role = lambda r: r.variant if r.variant in BAR_ROLES else "kernel"  # noqa: E731
    roles = [k for k in BAR_ROLES if any(role(r) == k for r in rows)]
    most = max(sum(1 for r in rows if (r.workload, r.precision) == (w, p)) for w, p in
               {(r.workload, r.precision) for r in rows})
    fig, axes = plt.subplots(len(workloads), 1, figsize=(max(8, 0.35 * most * 4 + 3), 3.4 * len(workloads)),
                             squeeze=False)
    for ax, w in zip(axes[:, 0], workloads):
        in_w = [r for r in rows if r.workload == w]
        precisions = list(dict.fromkeys(r.precision for r in in_w))
        for gi, p in enumerate(precisions):
            group = sorted((r for r in in_w if r.precision == p), key=lambda r: roles.index(role(r)))
            width = 0.8 / len(group)
            for bi, r in enumerate(group):
                x = gi - 0.4 + width * (bi + 0.5)
                if r.status != "ok":
                    ax.text(x, 0, "FAIL", rotation=90, ha="center", va="bottom", fontsize=7, color="red")
                    continue
                ax.bar(x, r.tflops, width, color=BAR_ROLES[role(r)][1], edgecolor="black", linewidth=0.3)
                if r.variant == "auto" and r.x_torch:
                    ax.text(x, r.tflops, f"{r.x_torch:.2f}x", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(precisions)), precisions)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(w, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=BAR_ROLES[k][1]) for k in roles]
    fig.legend(handles, [BAR_ROLES[k][0] for k in roles], loc="upper center", ncol=len(roles), fontsize=8,
               bbox_to_anchor=(0.5, 1.0))
    fig.suptitle(title + "  (label on auto: x torch.matmul, same run)", y=1.04, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_sweep(results: Sequence[Result], path: str, title: str = "") -> None:
    """TFLOP/s against size (m = n = k), one panel per precision, one line per variant."""
    plt = _pyplot()
    rows = [r for r in results if r.status == "ok"]
    precisions = list(dict.fromkeys(r.precision for r in results))
    variants = list(dict.fromkeys(r.variant for r in results))
    colors = _variant_colors(variants)
    fig, axes = plt.subplots(1, len(precisions), figsize=(5 * len(precisions), 4), squeeze=False)
    for ax, p in zip(axes[0], precisions):
        for v in variants:
            points = sorted((r.m, r.tflops) for r in rows if r.precision == p and r.variant == v)
            if points:
                ax.plot(*zip(*points), marker="o", color=colors[v], label="torch.matmul" if v == TORCH else v,
                        linewidth=2.5 if v == TORCH else 1.2, linestyle="--" if v == TORCH else "-")
        ax.set_xscale("log", base=2)
        sizes = sorted({r.m for r in results})
        ax.set_xticks(sizes, [str(x) for x in sizes], rotation=45, fontsize=8)
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_xlabel("m = n = k")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(p)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


class Progress:
    """tqdm on stderr when installed; otherwise a plain counter. Table lines go through write()
    so they do not tear the bar."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.count, self.enabled = total, 0, enabled
        self._bar = None
        self._tty = sys.stderr.isatty()
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self._bar = tqdm(total=total, file=sys.stderr, unit="case", dynamic_ncols=True, leave=False)

    def update(self, label: str) -> None:
        """Called as each step starts: the label names what is running now."""
        if self.count and self._bar is not None:
            self._bar.update(1)
        self.count += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_description_str(label)
        elif self._tty:
            print(f"\r\033[K[{self.count}/{self.total}] {label}", end="", file=sys.stderr, flush=True)
        else:
            print(f"[{self.count}/{self.total}] {label}", file=sys.stderr, flush=True)

    def write(self, line: str) -> None:
        if self._bar is not None:
            self._bar.write(line, file=sys.stdout)
        else:
            if self.enabled and self._tty:
                print("\r\033[K", end="", file=sys.stderr, flush=True)
            print(line, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(1)
            self._bar.close()
        elif self.enabled and self._tty:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


# --- the command -------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = ("Time pycutlass_gemm's kernels against torch.matmul on the project's workloads "
                          "(transposed A, transposed B, large K), checking each result against float64.")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = ("examples:\n"
                     "  python -m pycutlass_gemm bench --quick\n"
                     "  python -m pycutlass_gemm bench --workload transposed-a --dtype tf32,bfloat16 --csv out.csv\n"
                     "  python -m pycutlass_gemm bench --m 4096 --n 4096 --k 4096 --layout cr --variant auto,naive\n"
                     "  python -m pycutlass_gemm bench --sweep --dtype bfloat16 --plot sweep.png")
    sel = parser.add_argument_group("what to run")
    sel.add_argument("--quick", action="store_true", help="smaller workloads and fewer runs (about a minute)")
    sel.add_argument("--workload", metavar="NAMES", help=f"comma-separated subset of {', '.join(WORKLOADS)}")
    sel.add_argument("--m", type=_positive_int, help="a custom problem instead of the workloads (others default to 4096)")
    sel.add_argument("--n", type=_positive_int)
    sel.add_argument("--k", type=_positive_int)
    sel.add_argument("--layout", choices=LAYOUTS,
                     help="custom problem / sweep layout of A then B: r = row-major, c = a column-major view "
                          "(the transpose of a row-major tensor, as A.T); default rr")
    sel.add_argument("--dtype", metavar="LIST", default="all",
                     help="comma-separated float32, tf32 (fp32 storage, precision='tf32'), bfloat16, float16; "
                          "default all")
    sel.add_argument("--variant", metavar="LIST", default="all",
                     help=f"comma-separated {', '.join(BASELINES)} or kernel names; default all applicable "
                          "(torch.matmul is always run as the reference)")
    sel.add_argument("--sweep", action="store_true",
                     help=f"square sizes {SWEEP_SIZES[0]}..{SWEEP_SIZES[-1]} (variants auto, fallback, torch "
                          "unless --variant), plotted to --plot or sweep.png")
    out = parser.add_argument_group("output")
    out.add_argument("--csv", metavar="FILE", help="write every row as CSV")
    out.add_argument("--json", metavar="FILE", help="write every row, the peaks and the device as JSON")
    out.add_argument("--plot", metavar="FILE.png", help="bar chart of TFLOP/s (needs matplotlib)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _device_meta() -> dict:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"device": props.name, "sm": props.major * 10 + props.minor, "sms": props.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "pycutlass_gemm": getattr(_api, "__version__", "?")}


def report_without_gpu(workloads: Sequence[Workload], precisions: Sequence[Precision]) -> int:
    """No CUDA device: say so, show what auto would run on an H100 (sm_90), exit 2."""
    print("pycutlass_gemm bench: no CUDA device (torch.cuda.is_available() is False; torch "
          f"{torch.__version__}, CUDA {torch.version.cuda or 'not built in'}). Nothing was timed.", file=sys.stderr)
    print("What variant='auto' would run on sm_90 (plan() on meta tensors):")
    width = max(len(w.label) for w in workloads)
    for w in workloads:
        for p in precisions:
            a, b = w.meta_inputs(p)
            try:
                plan = _api.plan(a, b, precision=p.gemm_precision, arch=90)
                line = f"{plan['kernel'] or '(none)'}  -- {plan['reason']}"
            except Exception as e:  # noqa: BLE001 -- e.g. the compiled core is missing
                line = f"cannot plan: {type(e).__name__}: {e}"
            print(f"  {w.label:<{width}}  {p.name:<4}  {line}")
    return 2


def run(args: argparse.Namespace) -> int:
    """The bench command. Exit status: 0 all rows passed, 1 some FAIL, 2 nothing could run."""
    try:
        if args.sweep and (args.m or args.n or args.k or args.workload):
            raise ValueError("--sweep picks its own sizes: drop --m/--n/--k/--workload")
        precisions = parse_precisions(args.dtype)
        workloads = select_workloads(args)
        variants = parse_variants(args.variant)
        if args.sweep and variants is None:
            variants = list(SWEEP_DEFAULT_VARIANTS)
    except ValueError as e:
        print(f"pycutlass_gemm bench: {e}", file=sys.stderr)
        return 2
    plot_path = args.plot or ("sweep.png" if args.sweep else None)
    if args.plot:
        try:
            _pyplot()
        except ImportError:  # fail before minutes of measuring, not after
            print("pycutlass_gemm bench: --plot needs matplotlib (pip install matplotlib)", file=sys.stderr)
            return 2

    if not torch.cuda.is_available():
        return report_without_gpu(workloads, precisions)

    kernels = _api.kernels()
    try:
        cases = build_cases(workloads, precisions, variants, kernels)
    except ValueError as e:
        print(f"pycutlass_gemm bench: {e}", file=sys.stderr)
        return 2
    settings = QUICK if args.quick else FULL
    meta = _device_meta()
    print(f"{meta['device']} (sm_{meta['sm']}, {meta['sms']} SMs), torch {meta['torch']}, CUDA {meta['cuda']}, "
          f"pycutlass_gemm {meta['pycutlass_gemm']}")

    groups = len({(c.workload, c.precision) for c in cases})  # each group: its checks, then one timing step
    progress = Progress(len(precisions) + 1 + len(cases) + groups, enabled=not args.no_progress)
    cols = Columns.for_cases(cases, kernels)
    try:
        peaks = measure_peaks(precisions, flush_buffer(settings), settings, progress)
        progress.write(f"measured peaks: " + ", ".join(f"{p.name} {peaks[p.name]:.0f} TFLOP/s" for p in precisions)
                       + f" (torch.matmul {settings.peak_size}^3); copy {peaks['copy_gbps']:.0f} GB/s")
        progress.write(format_header(cols))
        results = run_cases(cases, peaks, settings, progress,
                            emit=lambda rows: [progress.write(format_row(r, cols)) for r in rows])
    finally:
        progress.close()

    meta.update(peaks=peaks, settings=dataclasses.asdict(settings),
                args={k: v for k, v in vars(args).items() if not callable(v)})
    if args.csv:
        write_csv(args.csv, results)
    if args.json:
        write_json(args.json, results, meta)
    if plot_path:
        title = f"{meta['device']}, torch {meta['torch']}"
        try:
            (plot_sweep if args.sweep else plot_bars)(results, plot_path, title)
            print(f"plot written to {plot_path}")
        except ImportError:
            print("pycutlass_gemm bench: no plot: matplotlib is not installed (pip install matplotlib)",
                  file=sys.stderr)
    failed = [r for r in results if r.status == "FAIL"]
    skipped = sum(r.status == "SKIP" for r in results)
    print(f"{len(results) - len(failed) - skipped} ok, {len(failed)} FAIL, {skipped} SKIP")
    return 1 if failed else 0
