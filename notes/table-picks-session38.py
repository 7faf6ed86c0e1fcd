"""Session 38: which kernel auto picks for each shape under the shipped table and under a new one, as the
lines 'layout m n k old new' notes/vote-check-session37.py times (bf16).
    python3 notes/table-picks-session38.py shapes.txt NEW_TABLE_DIR > picks.txt
shapes.txt: lines 'layout m n k'.
"""
import sys, torch, pycutlass_gemm as pg
from pycutlass_gemm import heuristics
shapes = [line.split()[:4] for line in open(sys.argv[1]) if line.strip()]
def picks():
    out = []
    for lay, m, n, k in shapes:
        a = torch.empty(int(m), int(k), device="cuda", dtype=torch.bfloat16) if lay[0] == "r" else \
            torch.empty(int(k), int(m), device="cuda", dtype=torch.bfloat16).T
        b = torch.empty(int(k), int(n), device="cuda", dtype=torch.bfloat16) if lay[1] == "r" else \
            torch.empty(int(n), int(k), device="cuda", dtype=torch.bfloat16).T
        out.append(pg.plan(a, b)["kernel"])
    return out
old = picks()
heuristics.install(heuristics.load_tables(sys.argv[2]))
new = picks()
for (lay, m, n, k), o, nw in zip(shapes, old, new):
    print(lay, m, n, k, o, nw)
