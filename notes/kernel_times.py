"""What the session-46 timing scripts share: per-run GPU kernel times from a torch.profiler trace of runs that each
zero the L2 flush buffer (a fill kernel) one or more times, the timed call after the run's last fill; and the median
GPU time of a call so (gpu_us: session 47's and 48's scripts)."""
import statistics

import torch
from torch.profiler import profile, ProfilerActivity


def kernel_us_after_last_fill(prof, fills_per_run):
    """Per run, the summed GPU time (us) of the kernels after the run's last fill, in trace order; the first two runs
    (warming the profiler) left out."""
    per, cur, fills = [], 0.0, 0
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = e.name.lower()
        if "fill" in name or "memset" in name:
            if fills and fills % fills_per_run == 0:  # the first fill of the next run ends this one
                per.append(cur)
            fills += 1
            cur = 0.0
        elif fills % fills_per_run == 0:
            cur += getattr(e, "device_time_total", 0) or e.cuda_time_total
    per.append(cur)
    return per[2:]


def gpu_us(fn, flush, runs=12):
    """The median GPU time (us) of fn's kernels over `runs` runs, each after zeroing `flush` (L2), after 3 warm runs."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    return statistics.median(kernel_us_after_last_fill(prof, 1))
