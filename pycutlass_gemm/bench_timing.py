"""How the benchmark times: L2 flush, warm-up, CUDA events, interleaved rounds, and the peaks
(torch.matmul of large squares, a device-to-device copy) that %peak and %bw are shares of."""

from __future__ import annotations

import contextlib
import functools
import random
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from . import bench_cases as cases


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
    return torch.empty(settings.flush_mib * 2**20 // 4, device=cases.DEVICE, dtype=torch.int32)


def warm_up(fn: Callable[[], object], settings: Settings, *, warmed_s: float = 0.0) -> None:
    """Run `fn` untimed until it has run `settings.warmup_s` (counting `warmed_s` it already ran, e.g.
    the correctness call), so clocks, lazy module loading and allocator caches have settled."""
    t0 = time.perf_counter()
    while warmed_s + time.perf_counter() - t0 < settings.warmup_s:
        fn()
        torch.cuda.synchronize()


def time_once(fn: Callable[[], object], flush: torch.Tensor) -> float:
    """Milliseconds of one run of `fn` on the current stream, with L2 flushed first: the GPU's time."""
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


def time_call(fn: Callable[[], object], flush: torch.Tensor) -> float:
    """Milliseconds from before the Python call of `fn` to the end of its kernels, on an idle GPU
    with L2 flushed: the host's work for the call plus the GPU's, as a caller waiting on it sees."""
    flush.zero_()
    torch.cuda.synchronize()  # the GPU is idle: it reaches the start event as soon as it is queued
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def time_rounds(samplers: Sequence[Callable[[], object]], settings: Settings) -> list[list]:
    """What each of `samplers` returns per run, taken in rounds (one run of each in turn) so that
    clock and temperature drift falls on every sampler alike, and the ratios between them in one
    run are fair. Each round takes the samplers in a fresh shuffled order (seeded: repeatable) and
    never starts with the one that ended the last round: a kernel timed right after itself runs
    faster than after another (on the GPU, despite the L2 flush: notes/measurements.md, sessions
    45-46), and a fixed rotation put each sampler after the same other one in most rounds, so the
    row after torch.matmul was timed cold and the others warm. Each stops after `budget_s` of its
    own wall time once it has `min_runs` runs, or at `max_runs`."""
    samples: list[list] = [[] for _ in samplers]
    spent = [0.0 for _ in samplers]
    wanted = lambda i: len(samples[i]) < settings.max_runs and (  # noqa: E731
        len(samples[i]) < settings.min_runs or spent[i] < settings.budget_s)
    last = None
    shuffle = random.Random(len(samplers)).shuffle
    while True:
        live = [i for i in range(len(samplers)) if wanted(i)]
        if not live:
            return samples
        shuffle(live)
        if len(live) > 1 and live[0] == last:
            live.append(live.pop(0))
        for i in live:
            t0 = time.perf_counter()
            samples[i].append(samplers[i]())
            spent[i] += time.perf_counter() - t0
        last = live[-1]


def time_interleaved(fns: Sequence[Callable[[], object]], flush: torch.Tensor, settings: Settings) -> list[list[float]]:
    """Milliseconds (time_once) of each timed run of each of `fns`, interleaved (time_rounds)."""
    return time_rounds([functools.partial(time_once, fn, flush) for fn in fns], settings)


def time_cuda(fn: Callable[[], object], flush: torch.Tensor, settings: Settings) -> list[float]:
    """Milliseconds of each timed run of `fn` alone, after a warm-up."""
    warm_up(fn, settings)
    return time_interleaved([fn], flush, settings)[0]


def measure_peaks(precisions: Sequence[cases.Precision], flush: torch.Tensor, settings: Settings,
                  progress) -> dict[str, float]:
    """TFLOP/s of a large square torch.matmul per precision, and "copy_gbps": a device-to-device
    copy counted as bytes read + written. The denominators of %peak and %bw."""
    peaks: dict[str, float] = {}
    size = settings.peak_size
    for p in precisions:
        progress.update(f"peak {p.name}")
        a = torch.rand(size, size, device=cases.DEVICE).to(p.dtype)
        b = torch.rand(size, size, device=cases.DEVICE).to(p.dtype)
        out = torch.empty(size, size, device=cases.DEVICE, dtype=p.dtype)
        with torch_matmul_precision(p.allow_tf32):
            fn = lambda: torch.matmul(a, b, out=out)  # noqa: E731
            fn()
            ms = statistics.median(time_cuda(fn, flush, settings))
        peaks[p.name] = 2 * size**3 / ms / 1e9
        del a, b, out
    progress.update("peak copy")
    n = settings.copy_mib * 2**20 // 4
    src = torch.ones(n, device=cases.DEVICE, dtype=torch.int32)
    dst = torch.empty(n, device=cases.DEVICE, dtype=torch.int32)
    ms = statistics.median(time_cuda(lambda: dst.copy_(src), flush, settings))
    peaks["copy_gbps"] = 2 * n * 4 / ms / 1e6
    del src, dst
    torch.cuda.empty_cache()
    return peaks
