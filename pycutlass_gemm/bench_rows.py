"""The kernel table's rows: each variant checked against float64, then the rows of one workload
and precision timed interleaved, with speeds relative to the naive kernel and to torch.matmul."""

from __future__ import annotations

import math
import statistics
import time
from typing import Callable, Iterable, Sequence

import torch

# The package itself, looked up at call time (``_api.gemm``) so tests can swap its functions.
import pycutlass_gemm as _api

from . import bench_cases as cases
from .bench_cases import BASELINES, TORCH, TORCH_COPY, BenchCase, Precision, Result, Workload, rel_error
from .bench_timing import Settings, flush_buffer, time_interleaved, torch_matmul_precision, warm_up


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
    r = Result(w.name, w.m, w.n, w.k, w.layout, p.name, case.variant, case.variant, "ok", tol=p.tolerance(w.k),
               batch=w.batch, section=case.section)
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
    """x naive and x torch: the baseline's median over the row's, same workload and precision; and
    for auto and each named kernel, its median over the fastest named kernel's (vs_best): how far
    auto's choice is from the best built kernel that can run the problem. Auto's choice is judged by
    its own named row where the group has one (the same kernel timed twice would otherwise count
    their difference, which is noise, as auto's distance)."""
    results = list(results)
    baseline = {(r.section, r.workload, r.precision, r.variant): r.ms for r in results if r.status == "ok"}
    fastest: dict[tuple, Result] = {}
    for r in results:
        group = (r.section, r.workload, r.precision)
        if r.status == "ok" and r.variant not in BASELINES and (group not in fastest or r.ms < fastest[group].ms):
            fastest[group] = r
    for r in results:
        if r.status != "ok":
            continue
        group = (r.section, r.workload, r.precision)
        naive, torch_ms = baseline.get((*group, "naive")), baseline.get((*group, TORCH))
        r.x_naive = naive / r.ms if naive else None
        r.x_torch = torch_ms / r.ms if torch_ms else None
        if group in fastest and (r.variant == "auto" or r.variant not in BASELINES):
            same = baseline.get((*group, r.kernel)) if r.variant == "auto" else None
            r.vs_best, r.best_kernel = (same or r.ms) / fastest[group].ms, fastest[group].variant


def make_group_inputs(w: Workload, p: Precision):
    """(a, b, ref): the operands of a workload and their float64 product, computed on the GPU."""
    a, b = w.make_inputs(p)
    return a, b, a.double() @ b.double()


def run_cases(case_list: Sequence[BenchCase], peaks: dict[str, float], settings: Settings, progress,
              emit: Callable[[list[Result]], None]) -> list[Result]:
    """Run every case, one (workload, precision) group at a time: the group shares its inputs,
    reference and output, and its rows are emitted once its baselines are known."""
    flush = flush_buffer(settings)
    results: list[Result] = []
    groups: dict[tuple[str, Workload, Precision], list[BenchCase]] = {}
    for c in case_list:
        groups.setdefault((c.section, c.workload, c.precision), []).append(c)
    made_for, a, b, ref = None, None, None, None
    for (_, w, p), group in groups.items():
        if made_for != (w, p.dtype):  # fp32 and tf32 rows share their inputs
            a = b = ref = None  # free the last set first: large K is 1 GiB in fp32, 2 GiB in float64
            torch.cuda.empty_cache()
            a, b, ref = make_group_inputs(w, p)
            made_for = (w, p.dtype)
        out = torch.empty(w.out_shape, device=cases.DEVICE, dtype=p.dtype)
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
