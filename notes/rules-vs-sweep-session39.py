"""Session 39: how the rules (no measured table: every GPU but the H100 80GB HBM3) pick over the H100 sweep --
the picked kernel's time over the fastest, per class and per picked kernel. Needs the package built (CPU is enough:
plan() on meta tensors, arch=90, 132 SMs).
    python3 notes/rules-vs-sweep-session39.py notes/sweep-h100-2026-11-26.jsonl.gz
"""
import gzip, json, math, sys, collections
import pycutlass_gemm as pg
from pycutlass_gemm import heuristics
from pycutlass_gemm.bench_cases import PRECISIONS, Workload
heuristics.install([])
by_name = {p.name: p for p in PRECISIONS}
rows = []
for line in gzip.open(sys.argv[1], 'rt'):
    r = json.loads(line)
    if not r['ms']: continue
    p = by_name[r['precision']]
    w = Workload.problem(r['m'], r['n'], r['k'], r['layout'], r['batch'])
    a, b = w.meta_inputs(p)
    k = pg.plan(a, b, precision=p.gemm_precision, arch=90)['kernel']
    cls = heuristics.problem_class(a, b, p.gemm_precision)
    best = min(r['ms'].values())
    rows.append((cls, r, k, r['ms'].get(k), best))
gm = lambda x: math.exp(sum(map(math.log, x)) / len(x))
timed = [x for x in rows if x[3]]
print(len(rows), 'problems;', len(timed), 'with the rules pick timed;', 'geomean %.4f' % gm([x[3] / x[4] for x in timed]),
      'within 3%% %.3f' % (sum(x[3] <= 1.03 * x[4] for x in timed) / len(timed)))
by = collections.defaultdict(list)
for cls, r, k, t, b in timed: by[cls].append(t / b)
for cls, v in sorted(by.items(), key=lambda kv: -len(kv[1]) * math.log(gm(kv[1]))):
    print(f"  {cls:45s} {len(v):5d} {gm(v):.4f} within3% {sum(x <= 1.03 for x in v) / len(v):.3f}")
# worst picked kernels by total loss
loss = collections.defaultdict(list)
for cls, r, k, t, b in timed: loss[k].append(t / b)
print('kernels the rules pick, by summed log loss:')
for k, v in sorted(loss.items(), key=lambda kv: -sum(map(math.log, kv[1])))[:25]:
    print(f"  {k:60s} {len(v):5d} {gm(v):.4f}")
json.dump([(c, r['precision'], r['layout'], r['m'], r['n'], r['k'], r['batch'], k, t, b) for c, r, k, t, b in rows], open('rules_rows.json', 'w'))  # the picks, for a before / after comparison
