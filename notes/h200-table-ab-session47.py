"""Session 47: the H200 table for bf16 x @ W.T (class 'bfloat16 ieee row col aligned') against the H100 table it
replaces there, off the sweep's points: random aligned rc bf16 problems (M log-uniform over 16-16384, N and K over
256-16384, multiples of 8; seeded), auto's pick with the H100 table alone (plan() as before this session) and with
both tables (the H200's first, as shipped), each timed by name beside torch.matmul in shuffled rounds (L2 flushed).
    python3 notes/h200-table-ab-session47.py OUT.jsonl [COUNT]"""
import json, math, random, statistics, sys
import torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt, heuristics

tables = heuristics.load_tables()
h100 = [t for t in tables if "H100" in t["device"]]
assert len(h100) == 1 and len(tables) == 2, [t["device"] for t in tables]
rng = random.Random(47)
count = int(sys.argv[2]) if len(sys.argv) > 2 else 80
settings = bt.Settings(budget_s=0.05, min_runs=7, max_runs=15, warmup_s=0.02, flush_mib=1024)
flush = bt.flush_buffer(settings)
size = lambda lo, hi: 8 * max(1, round(math.exp(rng.uniform(math.log(lo), math.log(hi))) / 8))  # noqa: E731
out, old_x, new_x = open(sys.argv[1], "w"), [], []
for _ in range(count):
    m, n, k = size(16, 16384), size(256, 16384), size(256, 16384)
    if 2 * m * n * k > 2**40:
        continue
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    o = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    heuristics.install(h100)
    old = pg.plan(a, b)
    heuristics.install(tables)
    new = pg.plan(a, b)
    if old["kernel"] == new["kernel"]:
        rec = dict(m=m, n=n, k=k, old=old["kernel"], new=new["kernel"], same=True)
        out.write(json.dumps(rec) + "\n")
        continue
    fns = [lambda: torch.matmul(a, b, out=o)] + [lambda x=x: pg.gemm(a, b, out=o, variant=x)
                                                  for x in (old["kernel"], new["kernel"])]
    for f in fns:
        bt.warm_up(f, settings)
    t = [statistics.median(s) for s in bt.time_interleaved(fns, flush, settings)]
    rec = dict(m=m, n=n, k=k, old=old["kernel"], new=new["kernel"], same=False, torch_ms=t[0], old_ms=t[1], new_ms=t[2],
               new_reason=new["reason"])
    out.write(json.dumps(rec) + "\n"); out.flush()
    old_x.append(t[0] / t[1]); new_x.append(t[0] / t[2])
    print(f"{m}x{n}x{k}: torch {t[0]*1e3:.1f} us; old {old['kernel']} {t[0]/t[1]:.2f}x; new {new['kernel']} "
          f"{t[0]/t[2]:.2f}x", flush=True)
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")  # noqa: E731
print(f"{len(old_x)} problems where the picks differ: x torch.matmul old {gm(old_x):.3f}, new {gm(new_x):.3f}; "
      f"new slower by > 3% at {sum(nw < 0.97 * od for od, nw in zip(old_x, new_x))}, faster at "
      f"{sum(nw > 1.03 * od for od, nw in zip(old_x, new_x))}")
