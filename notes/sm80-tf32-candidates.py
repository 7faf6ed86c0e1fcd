"""For the next GPU session (written in session 44, not yet run): the SM80 tf32 tuning candidates
(sm80_tf32_*_a1_s3, scripts/tuning_kernels.py) against what auto runs (the IEEE SIMT kernels) and torch.matmul
with tf32 on, by name, same process, L2 flushed, interleaved; error vs float64 (the tf32 tolerance 2e-3 * sqrt(K/8192)).

Problems: session 42's survey rows (notes/survey-vs-torch-h200-2026-11-28-session42.jsonl.gz) with precision tf32,
M and N above 1, run on SIMT (unaligned fp32: ~300), then the issue-10 unaligned shapes in tf32.
Build (a subset with the SIMT kernels for auto):
    SKBUILD_CMAKE_DEFINE="PYCUTLASS_GEMM_KERNELS=^(sm80_tf32|simt_);PYCUTLASS_GEMM_TUNING=ON" OUT=$OUT SKIP_TESTS=1 \\
        bash scripts/gpu_check.sh
    (cd tests && python3 -m pytest -q test_cutlass_kernels_gpu.py -k sm80_tf32)   # float64 and the fallback first
    python3 notes/sm80-tf32-candidates.py OUT.jsonl SECONDS [--small-sm90] [--auto-only]
Session 45 ran it (notes/sm80-tf32-h200-2026-11-28-session45.jsonl.gz) and registered the kernels. --small-sm90: the
survey's tf32 problems under 2^31 flop that ran SM90 kernels (aligned: SM80 tf32 against the TMA kernels there).
--layout rr: that layout's rows only.
--auto-only: auto and torch.matmul alone (the final build's check of the rules).
--precision bf16 / fp16 (default tf32): that precision's survey rows and its SM80 kernels (sm80_bf16_* /
sm80_f16_*); the survey row's own kernel is timed by name too where the build has it and auto runs another
("survey_kernel_ms"). Session 46 ran it on a full build plus the 64x64x32 a8 candidates (a regex leaving out the
other tuning kernels: PYCUTLASS_GEMM_KERNELS='^(?!(name|name|...)$)' with PYCUTLASS_GEMM_TUNING=ON) and registered
them; session 47's candidates: the a8 tile in 3 / 4 stages and 64x64x64 (scripts/tuning_kernels.py).
Only ratios between rows of one round set are to be quoted: torch.matmul's absolute time in rounds with many
rows varied 1.3-3x between runs (notes/measurements.md, session 46)."""
import gzip, json, math, sys, time
import torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import PRECISIONS, Workload

out_path, seconds, flags = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
precision = flags[flags.index('--precision') + 1] if '--precision' in flags else 'tf32'
prefix = 'sm80_' + {'tf32': 'tf32', 'bf16': 'bf16', 'fp16': 'f16'}[precision]
tolerance = 2e-3 if precision == 'tf32' else 1e-2
survey = [json.loads(l) for l in gzip.open('notes/survey-vs-torch-h200-2026-11-28-session42.jsonl.gz', 'rt')]
small_sm90 = '--small-sm90' in flags
if small_sm90:
    probs = [r for r in survey if r['precision'] == precision and r['kernel'].startswith('sm90') and r['m'] > 1
             and r['n'] > 1 and 2 * r['m'] * r['n'] * r['k'] * r['batch'] < 2**31]
else:
    probs = [r for r in survey if r['precision'] == 'tf32' and r['kernel'].startswith('simt') and r['m'] > 1 and r['n'] > 1]
probs += [] if small_sm90 else [dict(precision='tf32', layout=lay, m=m, n=n, k=k, batch=1)
          for m, n, k in ((1000, 3000, 777), (2048, 1001, 2048), (4095, 4095, 4095), (96, 50257, 264))
          for lay in ('rr', 'rc', 'cr', 'cc')]
if '--layout' in flags:  # session 47: the 3 / 4-stage and 64x64x64 candidates are rr only
    probs = [r for r in probs if r['layout'] == flags[flags.index('--layout') + 1]]
candidates = [] if '--auto-only' in flags else [k['name'] for k in pg.kernels() if k['name'].startswith(prefix)]
p = {q.name: q for q in PRECISIONS}[precision]
settings = bt.Settings(budget_s=0.02, min_runs=5, max_runs=9, warmup_s=0.01, flush_mib=256)
flush = bt.flush_buffer(settings)
out, deadline = open(out_path, 'w'), time.time() + seconds
best_vs_torch, best_vs_auto, auto_vs_torch, bad = [], [], [], 0
for r in probs:
    if time.time() > deadline:
        break
    w = Workload.problem(r['m'], r['n'], r['k'], r['layout'], r['batch'])
    a, b = w.make_inputs(p)
    o = torch.full(w.out_shape, float('nan'), device='cuda', dtype=p.dtype)
    gp = p.gemm_precision
    auto = pg.plan(a, b, precision=gp)['kernel']
    names = [n for n in candidates if pg.can_run(n, a, b, out=o, precision=gp) == '']
    built = {k['name'] for k in pg.kernels()}
    survey_kernel = r.get('kernel') if precision != 'tf32' and r.get('kernel') in built and r['kernel'] != auto \
        and pg.can_run(r['kernel'], a, b, out=o, precision=gp) == '' else None
    ref = torch.matmul(a.double(), b.double())
    errs = {}
    for n in [auto] + names:
        o.fill_(float('nan'))
        pg.gemm(a, b, out=o, precision=gp, variant=n)
        errs[n] = ((o.double() - ref).norm() / ref.norm()).item()
        if not errs[n] < tolerance * max(1, math.sqrt(r['k'] / 8192)):
            bad += 1
            print('BAD', n, r, errs[n])
    with bt.torch_matmul_precision(p.allow_tf32):
        fns = [lambda: torch.matmul(a, b, out=o), lambda: pg.gemm(a, b, out=o, precision=gp, variant=auto)]
        fns += [lambda n=n: pg.gemm(a, b, out=o, precision=gp, variant=n) for n in names]
        if survey_kernel:
            fns.append(lambda: pg.gemm(a, b, out=o, precision=gp, variant=survey_kernel))
        for f in fns:
            bt.warm_up(f, settings)
        t = [sorted(s)[len(s) // 2] for s in bt.time_interleaved(fns, flush, settings)]
    rec = dict(r, auto=auto, torch_ms=t[0], auto_ms=t[1], ms=dict(zip(names, t[2:2 + len(names)])), err=errs,
               survey_kernel_ms=t[-1] if survey_kernel else None)
    rec.pop('how', None)
    out.write(json.dumps(rec) + '\n')
    out.flush()
    auto_vs_torch.append(t[0] / t[1])
    if names:
        best = min(t[2:2 + len(names)])
        best_vs_torch.append(t[0] / best)
        best_vs_auto.append(t[1] / best)
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')
print(f'{len(auto_vs_torch)} problems: auto x torch {gm(auto_vs_torch):.3f}; '
      f'best candidate x torch {gm(best_vs_torch):.3f}, x auto {gm(best_vs_auto):.3f}; '
      f'bad {bad}')
