"""Session 37: how well the shipped table's vote (cpp/heuristics.cpp, measured_choice) picks kernels
between measured points, judged at each sweep point from the table without that point (leave one
out), against the sweep's full times there. A Python copy of measured_choice for this evaluation
only; policy 'B' (problems between octaves consulting only points between octaves) was tried and
not kept. Run from anywhere: python3 notes/table-vote-session37.py
"""
import json, gzip, math, pathlib
ROOT = pathlib.Path(__file__).resolve().parent.parent
SLOW = 1.25; VOTE = 1.0; MAXO = 4.0
def btw1(l): f = l - math.floor(l); return 0.2925 < f < 0.7925
def btw(lm, ln): return btw1(lm) or btw1(ln)
t = json.load(open(ROOT / 'pycutlass_gemm/tables/nvidia_h100_80gb_hbm3.json'))
K = t['kernels']
recs = [json.loads(l) for l in gzip.open(ROOT / 'notes/sweep-h100-2026-11-26.jsonl.gz', 'rt')]
full = {}
for r in recs:
    full[(r['precision'], r['layout'], r['m'], r['n'], r['k'], r['batch'])] = r['ms']
# class -> points
classes = {}
for cls, pts in t['classes'].items():
    P = []
    for p in pts:
        m, n, k, b = p[:4]
        kt = {K[p[4]]: 1.0}
        for i in range(5, len(p), 2): kt[K[p[i]]] = p[i + 1] / 1000
        lm, ln, lk, lb = map(math.log2, (m, n, k, b))
        P.append(dict(m=m, n=n, k=k, b=b, lm=lm, ln=ln, lk=lk, lb=lb, btw=btw(lm, ln), kt=kt))
    classes[cls] = P
def choose(P, q, policy):
    between = btw(q['lm'], q['ln'])
    anyp2 = any(not p['btw'] for p in P)
    cand = [p for p in P if between or not p['btw'] or not anyp2]
    if policy == 'B' and between and any(p['btw'] for p in cand):
        cand = [p for p in cand if p['btw']]
    d = sorted(((abs(p['lm']-q['lm'])+abs(p['ln']-q['ln'])+abs(p['lk']-q['lk'])+abs(p['lb']-q['lb']), i, p) for i, p in enumerate(cand)), key=lambda x: (x[0], x[1]))
    if not d or d[0][0] > MAXO: return None
    nearest = d[0][0]; reach = nearest + VOTE if nearest > 0 else 0
    voters = [p for dd, _, p in d if dd <= reach]
    order = []; 
    for p in voters:
        for k in p['kt']:
            if k not in order: order.append(k)
    score = {k: sum(math.log(min(p['kt'].get(k, SLOW), SLOW)) for p in voters) for k in order}
    return sorted(order, key=lambda k: score[k])
def evaluate(policy, only_between=True, cls_filter=''):
    regs = []; worst = []
    for cls, P in classes.items():
        if cls_filter not in cls: continue
        prec = {'bfloat16 ieee': 'bf16', 'float16 ieee': 'fp16', 'float32 tf32': 'tf32', 'float32 ieee': 'fp32', 'float32 tf32x3': 'tf32x3'}[' '.join(cls.split()[:2])]
        for i, q in enumerate(P):
            if only_between and not q['btw']: continue
            lay = ('r' if cls.split()[2] == 'row' else 'c') + ('r' if cls.split()[3] == 'row' else 'c')
            ms = full.get((prec, lay, q['m'], q['n'], q['k'], q['b']))
            if not ms: continue
            rest = P[:i] + P[i+1:]
            order = choose(rest, q, policy)
            if order is None: continue
            pick = next((k for k in order if k in ms), None)
            if pick is None: continue
            reg = ms[pick] / min(ms.values())
            regs.append(reg); worst.append((reg, cls, q['m'], q['n'], q['k'], q['b'], pick))
    gm = math.exp(sum(map(math.log, regs)) / len(regs))
    w3 = sum(r <= 1.03 for r in regs) / len(regs)
    return len(regs), gm, w3, sorted(worst)[-3:]
for only in (True, False):
    for pol in ('A', 'B'):
        n, gm, w3, w = evaluate(pol, only)
        print(f"between-only={only} policy {pol}: {n} points, geomean regret {gm:.4f}, within 3%: {w3:.3f}")
for vote in (0.0, 0.25, 0.5, 0.75, 1.0, 1.5):
    VOTE = vote
    for pol in ('A',):
        n, gm, w3, w = evaluate(pol, False)
        n2, gm2, w32, _ = evaluate(pol, True)
        print(f"vote {vote} policy {pol}: all {gm:.4f} / {w3:.3f}; between {gm2:.4f} / {w32:.3f}")
