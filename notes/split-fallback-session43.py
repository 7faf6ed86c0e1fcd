"""Session 43, H200 (notes/split-fallback-h200-2026-11-28-session43.jsonl.gz): the SM80 kernels' K split and the
fallback's tiles, each problem of session 42's survey where auto ran an SM80 kernel or the fallback timed by name and
as auto, with torch.matmul in the same process (L2 flushed, interleaved), error against float64. The settings compared
came from the environment through temporary hooks in the C++ (SM80_SERIAL / _MIN / _FEW / _MAX / _TPS / _BLK in
split_k_slices, FALLBACK_WIDE / FB_SQUARE / FB_MINK / FB_BLK in the fallback, REDUCE_OLD in choose_groups; not kept).
PROBLEMS.json: the survey's rows whose kernel starts with sm80 or fallback. ONLY=sm80|fallback keeps one family;
ALL=1 keeps the SM80 problems that no setting splits.
    python3 split-fallback-session43.py PROBLEMS.json OUT.jsonl LABEL"""
import json, math, os, sys, torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import PRECISIONS, Workload
probs, out_path, label = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
settings = bt.Settings(budget_s=0.03, min_runs=5, max_runs=9, warmup_s=0.02, flush_mib=256)
flush = bt.flush_buffer(settings)
by_name = {p.name: p for p in PRECISIONS}
out = open(out_path, 'a')
ratios = {}
for r in probs:
    fam = 'fallback' if r['kernel'].startswith('fallback') else 'sm80'
    name = 'fallback' if fam == 'fallback' else r['kernel']
    if os.environ.get('ONLY') and fam != os.environ['ONLY']: continue
    if fam == 'sm80':
        tn = 256 if '128x256' in name else 128
        tiles = -(-r['m'] // 128) * -(-r['n'] // tn)
        if (r['batch'] != 1 or tiles >= 132 or r['k'] < 256) and not os.environ.get('ALL'): continue
    p = by_name[r['precision']]
    w = Workload.problem(r['m'], r['n'], r['k'], r['layout'], r['batch'])
    a, b = w.make_inputs(p)
    o = torch.full(w.out_shape, float('nan'), device='cuda', dtype=p.dtype)
    pg.gemm(a, b, out=o, precision=p.gemm_precision, variant=name)
    ref = torch.matmul(a.double(), b.double())
    err = ((o.double() - ref).norm() / ref.norm()).item()
    with bt.torch_matmul_precision(p.allow_tf32):
        fns = [lambda: torch.matmul(a, b, out=o), lambda: pg.gemm(a, b, out=o, precision=p.gemm_precision, variant=name),
               lambda: pg.gemm(a, b, out=o, precision=p.gemm_precision)]
        for f in fns: bt.warm_up(f, settings)
        t = [sorted(s)[len(s) // 2] for s in bt.time_interleaved(fns, flush, settings)]
    auto = pg.plan(a, b, precision=p.gemm_precision)['kernel']
    rec = dict(r, label=label, family=fam, torch_ms=t[0], ms=t[1], auto_ms=t[2], auto=auto, err=err)
    ratios.setdefault('auto', []).append(t[0] / t[2])
    rec.pop('how', None)
    out.write(json.dumps(rec) + '\n'); out.flush()
    ratios.setdefault(fam, []).append(t[0] / t[1])
    if err > 2e-2 or not math.isfinite(err): print('BAD', label, rec)
for f, v in ratios.items():
    print(label, f, len(v), 'x torch geomean', round(math.exp(sum(map(math.log, v)) / len(v)), 4))
