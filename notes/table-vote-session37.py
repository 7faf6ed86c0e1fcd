"""Session 37: how well the shipped table's vote (cpp/heuristics.cpp, measured_choice) picks kernels
between measured points, judged at each sweep point from the table without that point (leave one
out), against the sweep's full times there. A Python copy of measured_choice for this evaluation
only: the vote's reach (kVoteOctaves), the share of the tile fill it carries (kTileFillWeight), and
two variants not kept ('between': problems between octaves consulting only points between octaves;
distance weights). Kernel tiles are read off the names here; the package reads them off KernelInfo.
    python3 notes/table-vote-session37.py [TABLE.json SWEEP.jsonl.gz]   (default: the shipped table and sweep;
    with both given, only the registered vote, 0.5 octaves and tile fill 0.3, is judged: session 39)
"""
import json
import math
import pathlib
import re
import sys

from table_points import PRECISION, between1, load_classes, load_sweep  # notes/ (the script's directory)

ROOT = pathlib.Path(__file__).resolve().parent.parent
SLOW, MAXO, SMS = 1.25, 4.0, 132
ARGS = sys.argv[1:]
table = json.load(open(ARGS[0] if ARGS else ROOT / 'pycutlass_gemm/tables/nvidia_h100_80gb_hbm3.json'))
full = load_sweep(ARGS[1] if ARGS else ROOT / 'notes/sweep-h100-2026-11-26.jsonl.gz')
classes = load_classes(table)


def tile_fill(name, m, n, b):
    """heuristics.cpp's tile_fill_cost, the tile from the kernel's name."""
    t = re.search(r'_(\d+)x(\d+)x\d+_', name)
    if not t or not name.startswith(('sm90', 'sm80', 'simt')):
        return 1.0
    tm, tn = int(t.group(1)), int(t.group(2))
    if name.endswith('_swapab') or (name.startswith('sm90_tf32_rr') and 'cooptranspose' not in name):
        tm, tn = tn, tm  # computed as D^T
    tiles = math.ceil(m / tm) * math.ceil(n / tn) * b
    cost = tiles * tm * tn / (m * n * b)
    waves = name.startswith('sm90') and '_persistent' in name
    return cost * math.ceil(tiles / SMS) * SMS / tiles if waves else cost


def choose(points, q, vote, fill_weight=0.0, policy='', distance_weight=0.0):
    """The kernels in measured_choice's order for problem q from `points`."""
    between = between1(q['lm']) or between1(q['ln'])
    any_power_of_two = any(not p['between'] for p in points)
    cand = [p for p in points if between or not p['between'] or not any_power_of_two]
    if policy == 'between' and between and any(p['between'] for p in cand):
        cand = [p for p in cand if p['between']]
    dist = sorted(((abs(p['lm'] - q['lm']) + abs(p['ln'] - q['ln']) + abs(p['lk'] - q['lk']) + abs(p['lb'] - q['lb']),
                    i, p) for i, p in enumerate(cand)), key=lambda x: (x[0], x[1]))
    if not dist or dist[0][0] > MAXO:
        return None
    nearest = dist[0][0]
    reach = nearest + vote if nearest > 0 else 0
    voters = [(d, p) for d, _, p in dist if d <= reach]
    order = list(dict.fromkeys(k for _, p in voters for k in p['kept']))
    qm, qn, qb = 2 ** q['lm'], 2 ** q['ln'], round(2 ** q['lb'])

    def score(k):
        s = 0.0
        for d, p in voters:
            carried = tile_fill(k, qm, qn, qb) / tile_fill(k, p['m'], p['n'], p['b']) if nearest > 0 else 1.0
            s += (math.log(min(p['kept'].get(k, SLOW), SLOW)) + fill_weight * math.log(carried)) / (
                1 + distance_weight * (d - nearest))
        return s
    return sorted(order, key=score)


def evaluate(only_between=False, **policy):
    """Geomean of the pick's time over the fastest, the share within 3%, the share 10% behind."""
    regrets = []
    for cls, points in classes.items():
        words = cls.split()
        precision, layout = PRECISION[' '.join(words[:2])], words[2][0] + words[3][0]
        for i, q in enumerate(points):
            ms = full.get((precision, layout, q['m'], q['n'], q['k'], q['b']))
            if (only_between and not q['between']) or not ms:
                continue
            order = choose(points[:i] + points[i + 1:], q, **policy)
            pick = next((k for k in order or [] if k in ms), None)
            if pick:
                regrets.append(ms[pick] / min(ms.values()))
    gm = math.exp(sum(map(math.log, regrets)) / len(regrets))
    return (f"{len(regrets)} points: {gm:.4f}x the fastest, within 3% at {sum(r <= 1.03 for r in regrets) / len(regrets):.3f}, "
            f"10% behind at {sum(r > 1.10 for r in regrets) / len(regrets):.3f}")


if __name__ == '__main__' and ARGS:
    print(f"vote 0.5, tile fill 0.3: {evaluate(vote=0.5, fill_weight=0.3)}")
elif __name__ == '__main__':
    for vote in (0.0, 0.25, 0.5, 0.75, 1.0):
        print(f"vote {vote}: all {evaluate(vote=vote)}; between octaves {evaluate(True, vote=vote)}", flush=True)
    print(f"vote 0.5, between points only: {evaluate(vote=0.5, policy='between')}", flush=True)
    for weight in (0.2, 0.3, 0.4, 0.5, 1.0):
        print(f"vote 0.5, tile fill {weight}: {evaluate(vote=0.5, fill_weight=weight)}", flush=True)
    print(f"vote 0.5, tile fill 0.3, distance weights: {evaluate(vote=0.5, fill_weight=0.3, distance_weight=1.0)}")
