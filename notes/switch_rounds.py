"""What the experiment scripts that time kernels with an experiment switch on and off in one process share
(notes/split-reduce-session56.py, notes/tma-l2-promotion-session57.py; the switches: cpp/gemm_problem.h, Experiments).

time_states(a, b, o, variants, states, set_state) checks every (variant, state) against float64 (output poisoned with
NaN first), then times them all beside torch.matmul in shuffled rounds (time_fns: L2 flushed by zeroing 1 GiB as the
benchmark does); operands() draws a problem's inputs and a poisoned output, kernel_times() the kernels a call launches
and their own times. Import it with notes/ on sys.path (the scripts run from /tmp, where the repository does not
shadow the installed package)."""
import statistics

import torch

import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import Workload

SETTINGS = bt.Settings(budget_s=0.02, min_runs=5, max_runs=9, warmup_s=0.01, flush_mib=1024)
_flush = None


def layer(layout, tokens, d_out, d_in):
    """A layer's product over `tokens` rows: y = x @ W.T (rc: m x d_out x d_in) or dx = dy @ W (rr: m x d_in x d_out)."""
    return (tokens, d_out, d_in) if layout == "rc" else (tokens, d_in, d_out)


def operands(layout, m, n, k, precision):
    """Fresh inputs of an m x n x k problem in `layout` (bench_cases' draws) and an output filled with NaN."""
    w = Workload.problem(m, n, k, layout, 1)
    a, b = w.make_inputs(precision)
    return a, b, torch.full(w.out_shape, float("nan"), device="cuda", dtype=precision.dtype)


def time_fns(fns):
    """Each fn's median ms, warmed up, then timed in shuffled rounds with L2 flushed before each run."""
    global _flush
    if _flush is None:
        _flush = bt.flush_buffer(SETTINGS)
    for f in fns:
        bt.warm_up(f, SETTINGS)
    return [statistics.median(x) for x in bt.time_interleaved(fns, _flush, SETTINGS)]


def kernel_times(fn, runs=20):
    """{kernel name: median us} of what fn launches (torch.profiler, no flush, after 5 untimed calls)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times.setdefault(e.name[:70], []).append(getattr(e, "device_time_total", None) or e.cuda_time_total)
    return {name: statistics.median(v) for name, v in times.items()}


def runs(name, a, b, o):
    """Whether the kernel `name` takes the problem (False for a kernel of another dtype, where can_run raises)."""
    try:
        return pg.can_run(name, a, b, out=o) == ""
    except ValueError:
        return False


def time_states(a, b, o, variants, states, set_state):
    """(torch.matmul's median ms, {"variant state": median ms}, {"variant state": error vs float64}) for every variant
    ("auto" or a kernel's name) in every state, set_state(state) called before each of their launches."""
    def call(variant, state):
        set_state(state)
        if variant == "auto":
            pg.gemm(a, b, out=o)
        else:
            pg.gemm(a, b, out=o, variant=variant)

    keys = [(v, s) for v in variants for s in states]
    ref = torch.matmul(a.double(), b.double())
    errs = {}
    for v, s in keys:
        o.fill_(float("nan"))
        call(v, s)
        errs[f"{v} {s}"] = ((o.double() - ref).norm() / ref.norm()).item()
    t = time_fns([lambda: torch.matmul(a, b, out=o)] + [lambda v=v, s=s: call(v, s) for v, s in keys])
    set_state(states[0])
    return t[0], {f"{v} {s}": ms for (v, s), ms in zip(keys, t[1:])}, errs
