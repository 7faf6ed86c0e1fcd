"""Timing every kernel that can run one problem: what the sweep (``pycutlass-gemm tune --sweep``)
and autotuning both do. Each candidate is first checked against the fallback kernel (the oracle
every CUTLASS kernel is checked against) on the same inputs; a wrong one is never timed. Runs are
timed with CUDA events after an L2 flush, queued back to back so the host's launch cost stays out
of the numbers, and a candidate already slower than the best by a clear margin is dropped after
its first few runs: the winner is timed fully, losers only until they are clearly losers.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from dataclasses import dataclass, field

import torch

from . import heuristics
from . import launch as _launch
from .bench_cases import PRECISIONS, rel_error

# > the 50 MiB L2 of an H100/H200: zeroing it before each run evicts the operands.
FLUSH_MIB = 128
# Before a batch of runs the GPU sleeps this many cycles a run (~80 us at an H100's 1.7-2 GHz) while
# the host queues them: zeroing FLUSH_MIB (~45 us) did not outlast the host's work of queueing a run
# from Python (tens of us), and a run that waited for the host was timed with the wait. Two sweeps of
# the same problems (H100, 2026-11-24) timed kernels under 0.02 ms over 1.3x apart at 39% of them,
# kernels over 0.2 ms at 0.4%.
HEAD_START_CYCLES_PER_RUN = 150_000
# A candidate whose median of its first runs is this much slower than the best so far is out: as
# slow as a measured point of the table keeps (slower ones are not timed out).
ABANDON_RATIO = heuristics.SLOWEST_KEPT
FIRST_RUNS = 3


def flush_buffer(device) -> torch.Tensor:
    return torch.empty(FLUSH_MIB * 2**20 // 4, dtype=torch.int32, device=device)


def tolerance(dtype: torch.dtype, precision: str | None, k: int) -> float:
    """‖out − fallback‖/‖fallback‖ a correct kernel stays under: the benchmark's rule for the
    precision (bench_cases.Precision.tolerance; float64, which only the fallback runs, as fp32)."""
    fp32_name = precision if precision in ("tf32", "tf32x3") else "fp32"
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, fp32_name)
    return next(p for p in PRECISIONS if p.name == name).tolerance(k)


def candidates(a, b, c=None, *, beta: float = 0.0, out=None, precision: str | None = None) -> list[str]:
    """Every registered kernel that can run this problem (the naive baseline aside), in the order
    auto would try them: its own choice first."""
    names = _kernels_for(str(a.dtype).removeprefix("torch."))
    ok = [n for n in names if not _launch.can_run(n, a, b, c, beta=beta, out=out, precision=precision)]
    chosen = _launch.plan(a, b, c, beta=beta, out=out, precision=precision)["kernel"]
    return sorted(ok, key=lambda n: n != chosen)


@functools.lru_cache(maxsize=None)
def _kernels_for(dtype: str) -> tuple[str, ...]:
    """Names of the kernels built for `dtype` (the naive baseline aside), highest priority first."""
    ranked = sorted(_launch.kernels(), key=lambda k: -k["priority"])
    return tuple(dict.fromkeys(k["name"] for k in ranked if k["dtype"] == dtype and k["family"] != "naive"))


@dataclass
class Timings:
    """What timing one problem's candidates found: milliseconds (median) per kernel that ran
    correctly, the error of each against the fallback, and why any candidate was left out."""

    ms: dict[str, float] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    error: dict[str, float] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def best(self) -> str | None:
        return min(self.ms, key=self.ms.get) if self.ms else None


def _run_times(fn, flush: torch.Tensor, runs: int) -> list[float]:
    """Milliseconds of `runs` runs of fn, each after an L2 flush, queued back to back while the GPU
    sleeps (HEAD_START_CYCLES_PER_RUN), so the events time the GPU's work, not the host's."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    if flush.is_cuda:
        torch.cuda._sleep(HEAD_START_CYCLES_PER_RUN * runs)
    for start, end in events:
        flush.zero_()
        start.record()
        fn()
        end.record()
    events[-1][1].synchronize()
    return [s.elapsed_time(e) for s, e in events]


def time_candidates(a, b, c=None, *, alpha: float = 1.0, beta: float = 0.0, out=None, precision: str | None = None,
                    names: list[str] | None = None, budget_s: float = 1.0, max_runs: int = 20,
                    flush: torch.Tensor | None = None) -> Timings:
    """Check and time each of `names` (default: candidates()) on these operands. `out`, when given,
    is never written: the kernels write a scratch tensor with its strides and alignment. The whole
    call stays near `budget_s` (each candidate gets its share, and at least FIRST_RUNS runs)."""
    t0 = time.perf_counter()
    names = candidates(a, b, c, beta=beta, out=out, precision=precision) if names is None else list(names)
    result = Timings()
    if not names:
        return result
    flush = flush_buffer(a.device) if flush is None else flush
    scratch = None if out is None else _scratch_like(out)
    call = lambda v: _launch.launch(a, b, c, alpha=alpha, beta=beta, variant=v, out=scratch,  # noqa: E731
                                    precision=precision)
    if scratch is not None:
        scratch.fill_(math.nan)
    ref = call("fallback").double()  # a copy (the scratch output is written again), in rel_error's precision
    tol = tolerance(a.dtype, precision, a.shape[-1])
    share = budget_s / len(names)
    for name in names:
        try:
            if scratch is not None:
                scratch.fill_(math.nan)  # a kernel that writes nothing must not pass on the fallback's result
            err = rel_error(call(name), ref)
        except Exception as e:  # noqa: BLE001 -- a candidate that raises is left out, the others go on
            result.refused[name] = f"{type(e).__name__}: {e}"
            continue
        result.error[name] = err
        if not err <= tol:
            result.refused[name] = f"error {err:.2e} against the fallback > {tol:.1e}"
            continue
        fn = lambda name=name: call(name)  # noqa: E731
        times = _run_times(fn, flush, FIRST_RUNS)
        best = min(result.ms.values(), default=math.inf)
        if statistics.median(times) <= ABANDON_RATIO * best:
            per_run = max(statistics.median(times), 1e-3) / 1e3 + 60e-6
            more = min(max_runs, int(share / per_run)) - FIRST_RUNS
            if more > 0:
                times += _run_times(fn, flush, more)
        result.ms[name] = statistics.median(times)
        result.runs[name] = len(times)
    result.seconds = time.perf_counter() - t0
    return result


def _scratch_like(out: torch.Tensor) -> torch.Tensor:
    """An uninitialised tensor with out's shape, strides and address alignment (mod 16 bytes)."""
    item = out.element_size()
    offset = (out.data_ptr() % 16) // item
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(out.shape, out.stride()))
    storage = torch.empty(span + 16 // item, dtype=out.dtype, device=out.device)
    return storage.as_strided(out.shape, out.stride(), offset)
