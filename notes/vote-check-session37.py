"""Session 37: the kernels the table's vote picks with kVoteOctaves 1.0 and 0.5, timed against each other and
torch.matmul where they differ (bf16, L2 flushed, interleaved). Input: lines 'layout m n k old new'; a new
of 'auto' times what auto runs in this build.
    python3 notes/vote-check-session37.py shapes.txt
"""
import math, sys, torch, pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
settings = bt.Settings(budget_s=0.25, min_runs=5, max_runs=30, warmup_s=0.05)
flush = bt.flush_buffer(settings)
def operand(rows, cols, layout):
    t = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    return t if layout == "r" else torch.randn(cols, rows, device="cuda", dtype=torch.bfloat16).T
ratios, vs_torch = [], []
for line in open(sys.argv[1]):
    lay, m, n, k, old, new = line.split()
    m, n, k = int(m), int(n), int(k)
    a, b = operand(m, k, lay[0]), operand(k, n, lay[1])
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    fns = [lambda: torch.matmul(a, b, out=out), lambda: pg.gemm(a, b, out=out, variant=old),
           lambda: pg.gemm(a, b, out=out, variant=new)]  # "auto" too
    for f in fns: bt.warm_up(f, settings)
    t = [sorted(s)[len(s) // 2] for s in bt.time_interleaved(fns, flush, settings)]
    ratios.append(t[1] / t[2])
    vs_torch.append((t[0] / t[1], t[0] / t[2]))
    if new == "auto":
        new = pg.plan(a, b)["kernel"]
    print(f"{lay} {m}x{n}x{k}: torch {t[0]*1e3:8.1f} us, old {t[1]*1e3:8.1f} ({t[0]/t[1]:.2f}x) {old}, "
          f"new {t[2]*1e3:8.1f} ({t[0]/t[2]:.2f}x) {new}", flush=True)
    del a, b, out
geomean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
gm = geomean(ratios)
print(f"{len(ratios)} shapes: old / new time geomean {gm:.4f}; new faster at {sum(r > 1.01 for r in ratios)}, "
      f"slower at {sum(r < 0.99 for r in ratios)}; worst new {min(ratios):.3f}, best {max(ratios):.3f}")
print(f"x torch.matmul geomean: old {geomean([o for o, _ in vs_torch]):.3f}, new {geomean([n for _, n in vs_torch]):.3f}")
