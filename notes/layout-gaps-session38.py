"""Session 38: where a layout's kernels trail another layout's on the same problem (H100 sweep, aligned 16-bit
problems, batch 1): a layout whose best kernel is > 10% behind another layout's best at the same m, n, k lacks a
kernel (operand major-ness costs 16-bit wgmma little), and the kernel family that wins there says which.
    python3 notes/layout-gaps-session38.py
"""
import collections
import gzip
import json
import math
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
recs = {}
for line in gzip.open(ROOT / 'notes/sweep-h100-2026-11-26.jsonl.gz', 'rt'):
    r = json.loads(line)
    if r['batch'] == 1 and r['ms']:
        recs[(r['m'], r['n'], r['k'], r['layout'], r['precision'])] = r
family = lambda name: re.sub(r'^(sm90|sm80)_(bf16|f16)_(rr|rc|cr|cc)_', '', name)  # noqa: E731
for prec in ('bf16', 'fp16'):
    by = collections.defaultdict(dict)
    for (m, n, k, lay, p), r in recs.items():
        if p == prec and m % 8 == 0 and n % 8 == 0 and k % 8 == 0:
            by[(m, n, k)][lay] = r
    for lay in ('rr', 'rc', 'cr', 'cc'):
        gaps, winners = [], collections.Counter()
        for d in by.values():
            if lay not in d or len(d) < 4:
                continue
            mine = min(d[lay]['ms'].values())
            others = {o: min(r['ms'].values()) for o, r in d.items() if o != lay}
            best = min(others, key=others.get)
            if others[best] * 1.1 < mine:
                gaps.append(mine / others[best])
                winners[family(d[best]['best'])] += 1
        gm = math.exp(sum(map(math.log, gaps)) / len(gaps)) if gaps else 1.0
        print(f"{prec} {lay}: {len(gaps)} problems > 10% behind another layout, {gm:.2f}x geomean; won there by "
              + ", ".join(f"{f} ({c})" for f, c in winners.most_common(4)))
