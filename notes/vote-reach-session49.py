"""Session 49: how far the table's vote reaches (cpp/heuristics.h, kVoteOctaves: the points within this many octaves
of the nearest vote), judged with notes/vote-clusters-session47.py's Python copy of the vote (clusters' padding,
fill weight 0.3) three ways: off the sweep's points on the H200's by-name timings of sessions 47-49 (each pick's time
over the fastest's of the kernels the table knows: the split 128x192 tiles of D^T, registered after it, left out),
and leave-one-out over the H100 sweep's points, the 16-bit aligned classes and every other class.
    python3 notes/vote-reach-session49.py [REACH ...]
With the package built (`--check-cpp`), also whether the C++ vote (pycutlass_gemm.plan on meta tensors for sm_90)
picks what the Python copy picks at the H200 problems, with the reach the build has (the last REACH given); a build
without CUTLASS kernels (PYCUTLASS_GEMM_KERNELS=none, minutes on two cores) names the vote's order in plan's reason,
and carries no tile fill (it knows no kernel's tiles): its order is checked against the copy's without the fill."""
import gzip
import importlib.util
import json
import pathlib
import sys

NOTES = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location('vote_clusters', NOTES / 'vote-clusters-session47.py')
vc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vc)
SETS = {'random 47': 'random-shapes-h200-2026-11-29-session47.jsonl.gz',
        'random 48 (seed 49)': 'random-shapes-seed49-h200-2026-11-29-session48.jsonl.gz',
        'model 48': 'model-shapes-h200-2026-11-29-session48.jsonl.gz',
        'tokens 48': 'tokens-grid-edge-boxes-h200-2026-11-29-session48.jsonl.gz',
        'band 49': 'band-h200-2026-12-01-session49.jsonl.gz', 'band-wide 49': 'band-wide-h200-2026-12-01-session49.jsonl.gz'}
NOT_IN_TABLE = '_splitk_swapab'


def rows_of(name):
    rows = [json.loads(line) for line in gzip.open(NOTES / SETS[name], 'rt')]
    for r in rows:
        r['ms'] = {k: t for k, t in r['ms'].items() if NOT_IN_TABLE not in k}
    return rows


def check_cpp(sets):
    import torch
    import pycutlass_gemm as pg
    layout = {'r': 'row', 'c': 'col'}
    same = differ = 0
    for rows in sets.values():
        for r in rows:
            a = torch.empty((r['m'], r['k']) if r['layout'][0] == 'r' else (r['k'], r['m']), device='meta',
                            dtype=torch.bfloat16)
            b = torch.empty((r['k'], r['n']) if r['layout'][1] == 'r' else (r['n'], r['k']), device='meta',
                            dtype=torch.bfloat16)
            a, b = (a if layout[r['layout'][0]] == 'row' else a.T), (b if layout[r['layout'][1]] == 'row' else b.T)
            plan = pg.plan(a, b, arch=90)
            if 'registered after' in plan['reason']:
                continue  # the rules decided (a kernel the table never timed), not the vote
            # a build without the table's kernels names the vote's order, each passed over, and carries no tile fill
            unbuilt = ') names ' in plan['reason']
            if unbuilt:
                cpp = plan['reason'].split(') names ', 1)[1].split(',', 1)[0]
            elif 'fastest measured' in plan['reason']:
                cpp = plan['kernel']
            else:
                continue
            cls, q = vc.class_and_problem(r)
            order = vc.choose(vc.classes[cls], q, 0.0 if unbuilt else 0.3, True)
            pick = order[0] if unbuilt else next((k for k in order if k in r['ms']), None)
            same, differ = same + (pick == cpp), differ + (pick != cpp)
            if pick != cpp:
                print(f"  differ at {r['m']}x{r['n']}x{r['k']} {r['layout']}: C++ {cpp}, Python {pick}")
    print(f"C++ and Python picks: the same at {same}, different at {differ}")


if __name__ == '__main__':
    reaches = [float(x) for x in sys.argv[1:] if not x.startswith('--')] or [0.5, 0.75, 1.0]
    sets = {name: rows_of(name) for name in SETS}
    full = vc.load_sweep(NOTES / 'sweep-h100-2026-11-26.jsonl.gz')
    for reach in reaches:
        vc.VOTE = reach
        h200 = {name: vc.judge_random(rows, fill_weight=0.3, clusters=True) for name, rows in sets.items()}
        every = [x for v in h200.values() for x in v]
        loo16, loo = (vc.judge_loo(full, aligned, fill_weight=0.3, clusters=True) for aligned in (True, False))
        print(f"reach {reach}: H200 off the points " + '; '.join(f"{n} {vc.gm(v):.4f}" for n, v in h200.items()) +
              f"; all {len(every)} {vc.gm(every):.4f}x the fastest (> 10% behind at {sum(x > 1.1 for x in every)})."
              f" H100 leave-one-out: 16-bit aligned {len(loo16)} {vc.gm(loo16):.4f} (within 3% at "
              f"{sum(x <= 1.03 for x in loo16) / len(loo16):.1%}, > 10% at {sum(x > 1.1 for x in loo16)}), other classes "
              f"{len(loo)} {vc.gm(loo):.4f} (within 3% at {sum(x <= 1.03 for x in loo) / len(loo):.1%})", flush=True)
    if '--check-cpp' in sys.argv:
        vc.VOTE = reaches[-1]
        check_cpp(sets)
