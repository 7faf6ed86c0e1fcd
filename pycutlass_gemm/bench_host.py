"""The host's share of a call, two ways.

"host": the per-call cost of the Python API on small problems, where the host is the limit: a
loop of back-to-back calls timed by the wall clock, next to the matching torch.matmul call.
"call time": for each row of the kernel table, the time from before the Python call to the end of
its kernel on an idle GPU, next to the kernel time of the table's method (where the L2 flush
hides the host's work); the two x-torch ratios agree when host cost does not matter.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import time
from dataclasses import dataclass
from typing import Sequence

import torch

# The package itself, looked up at call time (``_api.gemm``) so tests can swap its functions.
import pycutlass_gemm as _api

from . import bench_cases as cases
from .bench_cases import TORCH, BenchCase, Precision, Workload
from .bench_report import fmt_value, fmt_target, text_table
from .bench_rows import check_case, make_group_inputs, rel_error
from .bench_timing import Settings, flush_buffer, time_call, time_once, time_rounds, torch_matmul_precision

# Small enough that the host, not the GPU, sets the pace of back-to-back calls.
HOST_SIZES, QUICK_HOST_SIZES = (256, 1024), (256,)
HOST_CALLS, QUICK_HOST_CALLS = 300, 100      # back-to-back calls per sample
HOST_ROUNDS, QUICK_HOST_ROUNDS = 15, 5       # samples of each side, pg and torch alternating
HOST_WARMUP_CALLS = 50
GEMM_TARGET, OUT_TARGET = 1.3, 1.2           # pg / torch per call, at most (the tracker's targets)
# The caller must see the kernel's ratio: call-time ratio / kernel-time ratio - 1 at least -3%. A
# larger call-time ratio (the package's host path cheaper than torch's) is no miss.
CALL_TIME_TARGET = 0.03


@dataclass
class HostRow:
    size: int
    call: str
    torch_call: str
    us: float | None = None        # median over rounds of the wall time per call
    torch_us: float | None = None
    ratio: float | None = None     # us / torch_us: lower is better
    target: float | None = None    # ratio at most
    calls: int = 0
    rounds: int = 0
    status: str = "ok"
    message: str = ""


def host_pairs(a, b, o, ag, bg) -> list[tuple[str, object, str, object, float | None]]:
    """(pg call, its function, torch call, its function, target) for each row of the section."""
    return [
        ("pg.gemm(a, b)", lambda: _api.gemm(a, b), "torch.matmul(a, b)", lambda: torch.matmul(a, b), GEMM_TARGET),
        ("pg.gemm(a.T, b)", lambda: _api.gemm(a.T, b), "torch.matmul(a.T, b)", lambda: torch.matmul(a.T, b), None),
        ("pg.gemm(a, b, out=o)", lambda: _api.gemm(a, b, out=o), "torch.matmul(a, b, out=o)",
         lambda: torch.matmul(a, b, out=o), OUT_TARGET),
        ("pg.matmul(a, b)", lambda: _api.matmul(a, b), "torch.matmul(a, b)", lambda: torch.matmul(a, b), None),
        ("pg.gemm(a, b) requires_grad", lambda: _api.gemm(ag, bg), "torch.matmul(a, b) requires_grad",
         lambda: torch.matmul(ag, bg), None),
    ]


def host_steps(quick: bool) -> int:
    return len(QUICK_HOST_SIZES if quick else HOST_SIZES) * len(host_pairs(*[None] * 5))


def per_call_us(fn, calls: int) -> float:
    """Wall-clock microseconds per call of `calls` back-to-back calls, the last one finished."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()  # the GPU keeps up with the host here: this adds one kernel's tail
    return (time.perf_counter() - t0) / calls * 1e6


def run_host(quick: bool, progress) -> list[HostRow]:
    calls = QUICK_HOST_CALLS if quick else HOST_CALLS
    rounds = QUICK_HOST_ROUNDS if quick else HOST_ROUNDS
    fixed = Settings(budget_s=0.0, min_runs=rounds, max_runs=rounds)  # exactly `rounds` samples each
    rows = []
    for size in QUICK_HOST_SIZES if quick else HOST_SIZES:
        g = torch.Generator(device=cases.DEVICE).manual_seed(0)
        a, b = (torch.randn(size, size, generator=g, device=cases.DEVICE).to(torch.bfloat16) for _ in range(2))
        o = torch.empty(size, size, device=cases.DEVICE, dtype=torch.bfloat16)
        ag, bg = a.clone().requires_grad_(), b.clone().requires_grad_()
        for call, pg_fn, torch_call, torch_fn, target in host_pairs(a, b, o, ag, bg):
            progress.update(f"host {size} {call}")
            row = HostRow(size, call, torch_call, target=target, calls=calls, rounds=rounds)
            rows.append(row)
            try:
                error = rel_error(pg_fn().detach(), torch_fn().detach().double())
                if not error <= 1e-2:  # bf16 against bf16: ~1e-3 apart; a wrong result is O(1)
                    row.status, row.message = "FAIL", f"result differs from torch's by {error:.1e}"
                    continue
                for fn in (pg_fn, torch_fn):
                    for _ in range(HOST_WARMUP_CALLS):
                        fn()
                pg_us, torch_us = time_rounds([functools.partial(per_call_us, pg_fn, calls),
                                               functools.partial(per_call_us, torch_fn, calls)], fixed)
            except Exception as e:  # noqa: BLE001 -- a call that raises is a FAIL, the run goes on
                row.status, row.message = "FAIL", f"{type(e).__name__}: {e}".strip()
                continue
            row.us, row.torch_us = statistics.median(pg_us), statistics.median(torch_us)
            row.ratio = row.us / row.torch_us
    return rows


def format_host(rows: Sequence[HostRow]) -> list[str]:
    first = rows[0] if rows else HostRow(0, "", "")
    title = (f"host: wall clock per call, bf16, {first.calls} back-to-back calls a sample, median of "
             f"{first.rounds} samples a side (pg and torch alternating)")
    table = [[str(r.size), r.call, fmt_value(r.us, ".1f"), r.torch_call, fmt_value(r.torch_us, ".1f"), fmt_value(r.ratio, ".2f", "x"),
              fmt_target(r.ratio, r.target, at_least=False), r.status if not r.message else f"{r.status} {r.message}"]
             for r in rows]
    headers = ["size", "pg call", "us/call", "torch call", "us/call", "pg/torch", "target", "status"]
    return [title, *text_table(headers, table, "rlrlrrll")]


# --- call time ---------------------------------------------------------------------------------


@dataclass
class CallTimeRow:
    workload: str
    precision: str
    kernel: str = ""                      # what auto ran
    auto_kernel_ms: float | None = None   # the kernel table's method: L2 flushed, host work hidden
    auto_call_ms: float | None = None     # idle GPU: before the Python call to the end of the kernel
    torch_kernel_ms: float | None = None
    torch_call_ms: float | None = None
    x_torch_kernel: float | None = None   # torch_kernel_ms / auto_kernel_ms
    x_torch_call: float | None = None     # torch_call_ms / auto_call_ms
    drift: float | None = None            # x_torch_call / x_torch_kernel - 1
    runs: int = 0
    status: str = "ok"
    message: str = ""


def run_call_time(problems: Sequence[tuple[Workload, Precision]], settings: Settings, progress) -> list[CallTimeRow]:
    """Kernel time and call time of auto and torch for each problem, all four interleaved so the
    two ratios come from the same rounds. Each is checked against float64 first (check_case)."""
    flush = flush_buffer(settings)
    budget = dataclasses.replace(settings, budget_s=settings.budget_s / 2)  # four samplers a problem
    rows = []
    for w, p in problems:
        progress.update(f"call time {w.name} {p.name}")
        row = CallTimeRow(w.name, p.name)
        rows.append(row)
        a, b, ref = make_group_inputs(w, p)
        out = torch.empty(w.out_shape, device=cases.DEVICE, dtype=p.dtype)
        fns = {}
        for variant in ("auto", TORCH):
            r, fns[variant] = check_case(BenchCase(w, p, variant), a, b, ref, out, settings)
            if variant == "auto":
                row.kernel = r.kernel
            if fns[variant] is None:
                row.status, row.message = "FAIL", f"{variant}: {r.message}"
                break
        else:
            with torch_matmul_precision(p.allow_tf32):
                samples = time_rounds([functools.partial(timer, fns[v], flush) for timer in (time_once, time_call)
                                       for v in ("auto", TORCH)], budget)
            row.auto_kernel_ms, row.torch_kernel_ms, row.auto_call_ms, row.torch_call_ms = map(statistics.median, samples)
            row.runs = min(map(len, samples))
            row.x_torch_kernel = row.torch_kernel_ms / row.auto_kernel_ms
            row.x_torch_call = row.torch_call_ms / row.auto_call_ms
            row.drift = row.x_torch_call / row.x_torch_kernel - 1
        del a, b, ref, out, fns
        torch.cuda.empty_cache()
    return rows


def format_call_time(rows: Sequence[CallTimeRow]) -> list[str]:
    title = ("call time: idle GPU, L2 flushed, events from before the Python call to the end of the kernel; "
             "kernel: the table's timing (flush hides host work); same call (out=) and same rounds")
    table = []
    for r in rows:
        met = None if r.drift is None else r.drift >= -CALL_TIME_TARGET
        target = f">= -{CALL_TIME_TARGET:.0%} " + ("-" if met is None else "ok" if met else "MISS")
        table.append([r.workload, r.precision, r.kernel, fmt_value(r.auto_kernel_ms, ".3f"), fmt_value(r.auto_call_ms, ".3f"),
                      fmt_value(r.torch_kernel_ms, ".3f"), fmt_value(r.torch_call_ms, ".3f"), fmt_value(r.x_torch_kernel, ".2f", "x"),
                      fmt_value(r.x_torch_call, ".2f", "x"), fmt_value(None if r.drift is None else 100 * r.drift, "+.1f", "%"),
                      target, r.status if not r.message else f"{r.status} {r.message}"])
    headers = ["workload", "prec", "auto kernel", "auto kernel ms", "auto call ms", "torch kernel ms", "torch call ms",
               "x torch kernel", "x torch call", "call/kernel", "target", "status"]
    return [title, *text_table(headers, table, "lllrrrrrrrll")]
