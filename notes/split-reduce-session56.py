"""Session 56: the split-K reduction writes D a pack of 4 outputs at a time (kRowPacks, cpp/split_k_reduce.cu).
Ran in session 58 (H100, ccb910e's code: notes/split-reduce-h100-2026-12-05-session58.jsonl.gz): the split kernels
1.016-1.036x faster with the packs, so the switch was removed (29f6c56); the script needs ccb910e to run again.

Session 55's ncu (notes/ncu-memory-bound-h200-2026-12-05-session55.txt) found the reduction after 176 x 4096 x 4096 rr's
split-K product (4 slices of 128x192 tiles of D^T: 11.5 MB of fp32 partials) at 7.2 us beside a 16 us product. Its
epilogue wrote D element by element, two 32-bit divisions and 64-bit addressing an output. The old epilogue runs where
the switch _C.set_experiment("reduce_by_element", 1) is on (cpp/gemm_problem.h, Experiments; until session 57 an
environment variable read at each call). Each problem, each split-K kernel that takes it, new and old in shuffled
rounds beside torch.matmul and auto, L2 flushed as the benchmark does; every launch checked against float64
(notes/switch_rounds.py). Then the two kernels' own times from torch.profiler at 176 x 4096 x 4096 rr.
    python3 notes/split-reduce-session56.py OUT.jsonl"""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pycutlass_gemm as pg
from pycutlass_gemm import _C
from pycutlass_gemm.bench_cases import PRECISIONS
from switch_rounds import kernel_times, layer, operands, runs, time_states

p = {q.name: q for q in PRECISIONS}[os.environ.get("PRECISION", "bf16")]
PROBLEMS = [(lay, layer(lay, t, *d)) for lay in ("rr", "rc") for t in (72, 96, 144, 176, 192, 256)
            for d in ((4096, 4096), (4096, 14336), (14336, 4096), (2048, 8192))]
PROBLEMS += [("rr", (256, 256, 131072)), ("rr", (256, 256, 524288)), ("rr", (1024, 1024, 16384)),
             ("rr", (512, 512, 65536)), ("rc", (2048, 2048, 16384)), ("rr", (4, 16, 65536))]
STATES = ("new", "old")  # old: the per-output epilogue for every D


def set_state(state):
    _C.set_experiment("reduce_by_element", int(state == "old"))


splits = [k["name"] for k in pg.kernels() if "splitk" in k["name"] or k["name"].startswith("small_mn")]
out = open(sys.argv[1], "w")
for layout, (m, n, k) in PROBLEMS:
    a, b, o = operands(layout, m, n, k, p)
    auto = pg.plan(a, b)["kernel"]
    cands = [x for x in splits if runs(x, a, b, o)] + ["auto"]
    torch_ms, ms, errs = time_states(a, b, o, cands, STATES, set_state)
    out.write(json.dumps(dict(m=m, n=n, k=k, layout=layout, auto=auto, torch_ms=torch_ms, ms=ms, errs=errs)) + "\n")
    out.flush()
    print(f"{m}x{n}x{k} {layout} torch {torch_ms*1e3:.1f} us; " + "; ".join(
        f"{x.replace('sm90_bf16_', '')} {ms[x + ' new']*1e3:.1f} (old {ms[x + ' old']*1e3:.1f}, "
        f"x{torch_ms/ms[x + ' new']:.2f})" for x in cands) + f"; auto {auto}; worst err {max(errs.values()):.1e}",
        flush=True)

# The kernels' own times (no flush), 176 x 4096 x 4096 rr and 256 x 256 x 131072 rr, auto's kernel.
for layout, (m, n, k) in (("rr", (176, 4096, 4096)), ("rr", (256, 256, 131072)), ("rc", (176, 4096, 4096))):
    a, b, o = operands(layout, m, n, k, p)
    for state in STATES:
        set_state(state)
        times = kernel_times(lambda: pg.gemm(a, b, out=o))
        print(f"profile {m}x{n}x{k} {layout} {state}: " + "; ".join(f"{nm} {t:.2f} us" for nm, t in times.items()),
              flush=True)
set_state("new")
