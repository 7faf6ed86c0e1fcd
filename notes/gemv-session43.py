"""Session 43, H200 (notes/gemv-h200-2026-11-28-session43.jsonl.gz): the matrix-vector kernel (gemv) against what auto ran there in session 42's survey (by name)
and torch.matmul, same process, L2 flushed, interleaved; error vs float64. Session 44 (notes/gemv-h200-2026-11-28-session44.jsonl.gz) ran it with
--gemv-only (gemv and torch.matmul: its tuning builds had no CUTLASS kernels); notes/survey-composite-session44.py puts the times into the survey.
PROBLEMS.json: the rows of notes/survey-vs-torch-h200-2026-11-28-session42.jsonl.gz with M or N of 1 (652).
    python3 notes/gemv-session43.py PROBLEMS.json OUT.jsonl SECONDS [--gemv-only]"""
import json, math, sys, time, torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import PRECISIONS, Workload
probs, out_path, seconds = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3])
gemv_only = '--gemv-only' in sys.argv[4:]
settings = bt.Settings(budget_s=0.02, min_runs=5, max_runs=9, warmup_s=0.01, flush_mib=256)
flush = bt.flush_buffer(settings)
by_name = {p.name: p for p in PRECISIONS}
out = open(out_path, 'w')
deadline = time.time() + seconds
r_torch, r_old, bad = [], [], 0
for r in probs:
    if time.time() > deadline: break
    p = by_name[r['precision']]
    w = Workload.problem(r['m'], r['n'], r['k'], r['layout'], r['batch'])
    a, b = w.make_inputs(p)
    o = torch.full(w.out_shape, float('nan'), device='cuda', dtype=p.dtype)
    auto = pg.plan(a, b, precision=p.gemm_precision)['kernel']
    pg.gemm(a, b, out=o, precision=p.gemm_precision, variant='gemv')
    ref = torch.matmul(a.double(), b.double())
    err = ((o.double() - ref).norm() / ref.norm()).item()
    old = r['kernel'] if not gemv_only and pg.can_run(r['kernel'], a, b, out=o, precision=p.gemm_precision) == '' else None
    with bt.torch_matmul_precision(p.allow_tf32):
        fns = [lambda: torch.matmul(a, b, out=o), lambda: pg.gemm(a, b, out=o, precision=p.gemm_precision, variant='gemv')]
        if old: fns.append(lambda: pg.gemm(a, b, out=o, precision=p.gemm_precision, variant=old))
        for f in fns: bt.warm_up(f, settings)
        t = [sorted(s)[len(s) // 2] for s in bt.time_interleaved(fns, flush, settings)]
    rec = dict(r, auto_now=auto, torch_ms=t[0], gemv_ms=t[1], old_ms=t[2] if old else None, gemv_err=err)
    rec.pop('how', None); rec.pop('auto_ms', None)
    out.write(json.dumps(rec) + '\n'); out.flush()
    r_torch.append(t[0] / t[1])
    if old: r_old.append(t[2] / t[1])
    tol = 1e-2 if p.name in ('bf16', 'fp16') else 2e-3 if p.name == 'tf32' else 1e-5
    if not err < tol * max(1, math.sqrt(r['k'] / 8192)): bad += 1; print('BAD', rec)
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f'gemv: {len(r_torch)} problems, x torch {gm(r_torch):.3f}' + (f'; x the s42 pick {gm(r_old):.3f} ({len(r_old)})' if r_old else '') + f'; bad {bad}')
