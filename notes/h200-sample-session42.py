"""Session 42, on an H200 (no table names it): a shuffled sample of the H100 sweep's problems, timed back to back with
torch.matmul (L2 flushed, interleaved) until a wall-time budget runs out. Two modes:
  table-vs-rules  the rules' pick against the H100 table's (plan on meta tensors for sm_90 with 132 SMs, which that
                  table covers), timed where they differ (seed 42; notes/table-vs-rules-h200-...-session42.jsonl.gz)
  vs-torch        auto as it plans here, every problem (seed 7; notes/survey-vs-torch-h200-...-session42.jsonl.gz)
    python3 notes/h200-sample-session42.py MODE notes/sweep-h100-2026-11-26.jsonl.gz OUT.jsonl SECONDS
"""
import gzip, json, math, random, sys, time, collections, torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import PRECISIONS, Workload
mode, sweep, out_path, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
settings = bt.Settings(budget_s=0.03, min_runs=5, max_runs=9, warmup_s=0.02, flush_mib=256)
flush = bt.flush_buffer(settings)
by_name = {p.name: p for p in PRECISIONS}
rows = [json.loads(l) for l in gzip.open(sweep, 'rt')]
random.Random(42 if mode == 'table-vs-rules' else 7).shuffle(rows)
deadline = time.time() + seconds
out = open(out_path, 'w')
gm = lambda x: math.exp(sum(map(math.log, x)) / len(x)) if x else float('nan')  # noqa: E731
ratios = collections.defaultdict(list)  # table-vs-rules: rules / table time; vs-torch: torch / auto time
for r in rows:
    if time.time() > deadline: break
    if 2 * r['batch'] * r['m'] * r['n'] * r['k'] > 2 ** 40: continue
    p = by_name[r['precision']]
    w = Workload.problem(r['m'], r['n'], r['k'], r['layout'], r['batch'])
    a, b = w.make_inputs(p)
    plan = pg.plan(a, b, precision=p.gemm_precision)
    rec = dict(precision=r['precision'], layout=r['layout'], m=r['m'], n=r['n'], k=r['k'], batch=r['batch'])
    variants = [None]
    if mode == 'table-vs-rules':
        ma, mb = w.meta_inputs(p)
        rec.update(rules=plan['kernel'], table=pg.plan(ma, mb, precision=p.gemm_precision, arch=90)['kernel'])
        if rec['rules'] == rec['table']: continue
        variants = [rec['rules'], rec['table']]
    else:
        rec.update(kernel=plan['kernel'], how='table' if plan['reason'].startswith('fastest measured') else
                   'after' if plan['reason'].startswith('registered after') else 'rules')
    o = torch.empty(w.out_shape, device='cuda', dtype=p.dtype)
    with bt.torch_matmul_precision(p.allow_tf32):
        fns = [lambda: torch.matmul(a, b, out=o)] + [
            lambda v=v: pg.gemm(a, b, out=o, precision=p.gemm_precision, **({'variant': v} if v else {})) for v in variants]
        for f in fns: bt.warm_up(f, settings)
        t = [sorted(s)[len(s) // 2] for s in bt.time_interleaved(fns, flush, settings)]
    if mode == 'table-vs-rules':
        rec.update(torch_ms=t[0], rules_ms=t[1], table_ms=t[2]); ratios[r['precision']].append(t[1] / t[2])
    else:
        rec.update(torch_ms=t[0], auto_ms=t[1]); ratios[r['precision']].append(t[0] / t[1])
    out.write(json.dumps(rec) + '\n'); out.flush()
    del a, b, o
what = 'rules / table time' if mode == 'table-vs-rules' else 'x torch'
for k, v in sorted(ratios.items()):
    print(f'  {k:7s} {len(v):4d} {what} geomean {gm(v):.4f}; above 1.03 at {sum(x > 1.03 for x in v)}, '
          f'below 1/1.03 at {sum(x < 1 / 1.03 for x in v)}')
print(f'  all     {sum(map(len, ratios.values())):4d} {what} geomean {gm([x for v in ratios.values() for x in v]):.4f}')
