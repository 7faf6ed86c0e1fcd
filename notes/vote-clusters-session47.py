"""Session 47: the table's vote between points (cpp/heuristics.cpp, measured_choice) judged off the sweep's points,
where the random bf16 problems of notes/random-shapes-session47.py ran at 0.80x torch.matmul on an H200 with every
kernel timed (0.89x for the fastest): the worst picks were clusters that pad a wave (3240x568x2672 rc: 128x128 in
1x2 clusters, 5 N tiles padded to 6, 156 CTAs for 132 SMs, 0.51x; the same tile in 2x1, 130 CTAs, 0.82x). A Python
copy of the vote (as notes/table-vote-session37.py) with tile_fill variants: clusters' padding counted, the waves of
clusters of four that fit (120 CTAs of 132 SMs), and the weight of the fill. Judged two ways: on the random problems
(each pick's time over the fastest's there, all kernels measured), and leave-one-out over the H100 sweep's points (as
session 37).
    python3 notes/vote-clusters-session47.py notes/random-shapes-h200-2026-11-29-session47.jsonl.gz
(Its rc rows' "auto" ran with the H200 table of that session, not shipped; the vote here is the H100 table's.)"""
import gzip
import json
import math
import pathlib
import re
import sys

from table_points import PRECISION, between1, load_classes, load_sweep  # notes/ (the script's directory)

ROOT = pathlib.Path(__file__).resolve().parent.parent
SLOW, MAXO, SMS, VOTE = 1.25, 4.0, 132, 0.5
table = json.load(open(ROOT / 'pycutlass_gemm/tables/nvidia_h100_80gb_hbm3.json'))
classes = load_classes(table)


def tile_fill(name, m, n, b, clusters):
    """The share of the launched tiles' area (in waves of the SMs where a persistent SM90 kernel runs them so) that
    is the problem's: heuristics.cpp's tile_fill, with `clusters` the tiles of each dimension padded to the
    cluster's and a wave of clusters of four 120 CTAs (30 co-resident on 132 SMs; session 26)."""
    t = re.search(r'_(\d+)x(\d+)x\d+_', name)
    if not t or not name.startswith(('sm90', 'sm80', 'simt')):
        return 1.0
    tm, tn = int(t.group(1)), int(t.group(2))
    c = re.search(r'_c(\d)x(\d)_', name)
    cm, cn = (int(c.group(1)), int(c.group(2))) if c and clusters else (1, 1)
    if name.endswith('_swapab') or (name.startswith('sm90_tf32_rr') and 'cooptranspose' not in name):
        tm, tn, cm, cn = tn, tm, cn, cm  # computed as D^T
    tiles_m = -(-math.ceil(m / tm) // cm) * cm
    tiles_n = -(-math.ceil(n / tn) // cn) * cn
    tiles = tiles_m * tiles_n * b
    fill = m * n * b / (tiles * tm * tn)
    if name.startswith('sm90') and '_persistent' in name:
        slots = SMS if cm * cn <= 2 or not clusters else 120
        fill *= tiles / (math.ceil(tiles / slots) * slots)
    return fill


def choose(points, q, fill_weight, clusters):
    between = between1(q['lm']) or between1(q['ln'])
    any_power_of_two = any(not p['between'] for p in points)
    cand = [p for p in points if between or not p['between'] or not any_power_of_two]
    dist = sorted(((abs(p['lm'] - q['lm']) + abs(p['ln'] - q['ln']) + abs(p['lk'] - q['lk']) + abs(p['lb'] - q['lb']),
                    i, p) for i, p in enumerate(cand)), key=lambda x: (x[0], x[1]))
    if not dist or dist[0][0] > MAXO:
        return []
    nearest = dist[0][0]
    reach = nearest + VOTE if nearest > 0 else 0
    voters = [p for d, _, p in dist if d <= reach]
    order = list(dict.fromkeys(k for p in voters for k in p['kept']))
    qm, qn, qb = q['m'], q['n'], q['b']

    def score(k):
        s = 0.0
        for p in voters:
            carried = tile_fill(k, p['m'], p['n'], p['b'], clusters) / tile_fill(k, qm, qn, qb, clusters) \
                if nearest > 0 else 1.0
            s += math.log(min(p['kept'].get(k, SLOW), SLOW)) + fill_weight * math.log(carried)
        return s
    return sorted(order, key=score)


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')


def class_and_problem(r):
    """A timed bf16 row's table class and the problem as choose() takes it."""
    cls = f"bfloat16 ieee {'row' if r['layout'][0] == 'r' else 'col'} {'row' if r['layout'][1] == 'r' else 'col'} aligned"
    return cls, dict(m=r['m'], n=r['n'], k=r['k'], b=1, lm=math.log2(r['m']), ln=math.log2(r['n']),
                     lk=math.log2(r['k']), lb=0.0)


def judge_random(rows, **variant):
    regrets = []
    for r in rows:
        cls, q = class_and_problem(r)
        order = choose(classes[cls], q, **variant)
        pick = next((k for k in order if k in r['ms']), None)
        if pick:
            regrets.append(r['ms'][pick] / min(r['ms'].values()))
    return regrets


def judge_loo(full, aligned_16bit=True, **variant):
    """Each point of the table's 16-bit aligned classes (aligned_16bit False: of every other class) judged from the
    others: its pick's time over the fastest's in the sweep."""
    regrets = []
    for cls, points in classes.items():
        words = cls.split()
        precision, layout = PRECISION[' '.join(words[:2])], words[2][0] + words[3][0]
        if (precision in ('bf16', 'fp16') and words[-1] == 'aligned') != aligned_16bit:
            continue
        for i, q in enumerate(points):
            ms = full.get((precision, layout, q['m'], q['n'], q['k'], q['b']))
            if not ms:
                continue
            pick = next((k for k in choose(points[:i] + points[i + 1:], q, **variant) if k in ms), None)
            if pick:
                regrets.append(ms[pick] / min(ms.values()))
    return regrets


if __name__ == '__main__':
    rows = [json.loads(line) for path in sys.argv[1:] for line in (gzip.open(path, 'rt') if path.endswith('.gz') else open(path))]
    full = load_sweep(ROOT / 'notes/sweep-h100-2026-11-26.jsonl.gz')
    for clusters in (False, True):
        for weight in (0.3, 0.5, 0.7, 1.0):
            rnd = judge_random(rows, fill_weight=weight, clusters=clusters)
            loo = judge_loo(full, fill_weight=weight, clusters=clusters)
            print(f"clusters {clusters!s:5} fill weight {weight}: random {len(rnd)} {gm(rnd):.4f}x the fastest "
                  f"(> 10% behind at {sum(x > 1.1 for x in rnd)}); 16-bit aligned sweep points left out one at a time "
                  f"{len(loo)} {gm(loo):.4f}x (> 10% at {sum(x > 1.1 for x in loo)})", flush=True)
