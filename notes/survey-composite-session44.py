"""Session 44: session 42's survey (notes/survey-vs-torch-h200-2026-11-28-session42.jsonl.gz, 5236 problems, auto
against torch.matmul on an H200) with each problem as auto runs it now, from the later re-timings of the problems
whose kernel changed: session 43's SM80 / fallback problems (notes/split-fallback-h200-2026-11-28-session43.jsonl.gz,
label 'final', call s435) and the matrix-vector ones (gemv where auto runs it, from FILE; small_mn's from session
43's file). Each ratio is torch.matmul's time over ours from the same run.
    python3 notes/survey-composite-session44.py [GEMV.jsonl(.gz)] [--auto FILE.jsonl(.gz) CALL ...]
(default: session 43's gemv timings). Session 45: --auto FILE CALL takes auto's and torch.matmul's times from FILE's
rows of that call (notes/sm80-tf32-h200-2026-11-28-session45.jsonl.gz, calls s45f-final-small-sm90 and
s45f-final-unaligned: the tf32 problems whose kernel the SM80 tf32 kernels changed)."""
import gzip, json, math, sys
from collections import defaultdict

def rows(path):
    return [json.loads(l) for l in (gzip.open(path, 'rt') if path.endswith('.gz') else open(path))]

key = lambda r: (r['precision'], r['layout'], r['m'], r['n'], r['k'], r['batch'])
ratio = {key(r): (r['torch_ms'] / r['auto_ms'], r['kernel']) for r in rows('notes/survey-vs-torch-h200-2026-11-28-session42.jsonl.gz')}
for r in rows('notes/split-fallback-h200-2026-11-28-session43.jsonl.gz'):
    if r.get('call') == 's435' and r['label'] == 'final':
        ratio[key(r)] = (r['torch_ms'] / r['ms'], r['family'])
s43 = {key(r): r for r in rows('notes/gemv-h200-2026-11-28-session43.jsonl.gz')}
args, overlays = sys.argv[1:], []
while '--auto' in args:
    i = args.index('--auto')
    overlays.append(tuple(args[i + 1:i + 3]))
    del args[i:i + 3]
gemv = {key(r): r for r in rows(args[0])} if args else s43
for k, r in s43.items():
    if r['kernel'].startswith('small_mn'):  # small_mn keeps its 120 (rule 111 after it): timed by name in session 43
        ratio[k] = (r['torch_ms'] / r['old_ms'], r['kernel'])
    elif gemv[k]['auto_now'] == 'gemv':  # (3 of session 44's file: auto keeps the survey's SM90 pick there)
        ratio[k] = (gemv[k]['torch_ms'] / gemv[k]['gemv_ms'], 'gemv')
for path, call in overlays:
    for r in rows(path):
        if r.get('call') == call and key(dict(r, batch=r.get('batch', 1))) in ratio:
            ratio[key(dict(r, batch=r.get('batch', 1)))] = (r['torch_ms'] / r['auto_ms'], r['auto'])
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
by = defaultdict(list)
for k, (x, kernel) in ratio.items():
    family = 'gemv' if kernel == 'gemv' else kernel.split('_')[0]
    by[family].append(x)
print(f'{len(ratio)} problems, x torch.matmul {gm([x for x, _ in ratio.values()]):.3f}')
for f, v in sorted(by.items(), key=lambda kv: -len(kv[1])):
    print(f'  {f}: {len(v)}, {gm(v):.3f}')
