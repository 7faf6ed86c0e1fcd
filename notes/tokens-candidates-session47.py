"""Session 47: x @ W.T over 64-256 tokens (issue 10's M = 128 target) and its mirror on the H200, where the H100's
table decides (128 x 4096 x 4096 rc bf16: 0.94x torch.matmul on the H200 with the table's 128x64 c1x4, 1.02x on the
H100). Every kernel of the build that can run each problem (the tuning candidates too where built), by name, beside
torch.matmul and auto: event time (L2 flushed, shuffled rounds: bench_timing.time_interleaved), error vs float64,
and the GPU time (torch.profiler) of torch, auto and the three fastest by event time.
    python3 notes/tokens-candidates-session47.py OUT.jsonl"""
import json, statistics, sys
import torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import PRECISIONS, Workload
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_times import gpu_us as profiled_us  # noqa: E402

by_name = {q.name: q for q in PRECISIONS}
problems = [(m, n, k, "bf16") for m in (64, 96, 128, 192, 256)
            for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (11008, 4096))]
problems += [(4096, 128, 4096, "bf16"), (14336, 128, 4096, "bf16"), (128, 4096, 4096, "fp16"), (128, 14336, 4096, "fp16")]
settings = bt.Settings(budget_s=0.05, min_runs=7, max_runs=15, warmup_s=0.02, flush_mib=1024)
flush = bt.flush_buffer(settings)
names = [k["name"] for k in pg.kernels() if k["name"] not in ("naive", "fallback") and not k["name"].startswith("simt")]


def runs(name, a, b, o):
    try:
        return pg.can_run(name, a, b, out=o) == ""
    except ValueError:  # a kernel of another dtype
        return False


def gpu_us(fn):
    return profiled_us(fn, flush)


out = open(sys.argv[1], "w")
for m, n, k, prec in problems:
    p = by_name[prec]
    w = Workload.problem(m, n, k, "rc", 1)
    a, b = w.make_inputs(p)
    o = torch.full(w.out_shape, float("nan"), device="cuda", dtype=p.dtype)
    auto = pg.plan(a, b)["kernel"]
    cands = [x for x in names if runs(x, a, b, o)]
    cands += [] if auto in cands else [auto]
    ref = torch.matmul(a.double(), b.double())
    err = {}
    for x in cands:
        o.fill_(float("nan"))
        pg.gemm(a, b, out=o, variant=x)
        err[x] = ((o.double() - ref).norm() / ref.norm()).item()
    fns = [lambda: torch.matmul(a, b, out=o)] + [lambda x=x: pg.gemm(a, b, out=o, variant=x) for x in cands]
    for f in fns:
        bt.warm_up(f, settings)
    t = [statistics.median(s) for s in bt.time_interleaved(fns, flush, settings)]
    ms = dict(zip(cands, t[1:]))
    top = sorted(cands, key=ms.get)[:3]
    gpu = {"torch": gpu_us(fns[0])}
    for x in dict.fromkeys(top + [auto]):
        gpu[x] = gpu_us(lambda x=x: pg.gemm(a, b, out=o, variant=x))
    rec = dict(m=m, n=n, k=k, precision=prec, layout="rc", auto=auto, torch_ms=t[0], ms=ms, err=err, gpu_us=gpu)
    out.write(json.dumps(rec) + "\n"); out.flush()
    bad = [x for x in cands if not err[x] < 1e-2]
    line = "; ".join(f"{x} {ms[x]*1e3:.1f} us ({t[0]/ms[x]:.2f}x, gpu {gpu[x]:.1f})" for x in top)
    print(f"{m}x{n}x{k} {prec}: torch {t[0]*1e3:.1f} us (gpu {gpu['torch']:.1f}); auto {auto} {ms[auto]*1e3:.1f} "
          f"({t[0]/ms[auto]:.2f}x, gpu {gpu[auto]:.1f}); best: {line}; bad {bad}", flush=True)
