"""Session 55: evict-first on the operand a cluster multicasts, where M (or N) fits one cluster's tiles.

The L2 hint (cpp/sm90_l2_hint_mainloop.cuh) loads with EVICT_FIRST the operand no other output tile reads: B when M fits
one tile. A cluster of 2x1 multicasts each B tile to both its CTAs (one read from L2 feeds both), so where M fits the
cluster's two tile rows, B is read once too, and the old rule left it EVICT_NORMAL: its lines pushed out what L2 held
(in the benchmark the flush's dirty lines, each a write to HBM). Session 55's ncu (notes/ncu-memory-bound.sh) on 128 x
4096 x 4096 rc, caches invalidated: 64x64 c2x1 14.5 us, 128x64 c1x4 (hinted) 17.5, cuBLAS 15.1; with the dirty flush of
the benchmark (session 52): 19.7 / 19.6 / 18.4 -- the unhinted kernel lost 5 us to the dirty lines, the hinted 2.

Each problem of the grids below, each kernel whose hint the new rule changes there (clusters along M over at most
their tile rows; swapab kernels' hint is unchanged), timed with the new rule and with the old
(PYCUTLASS_GEMM_HINT_TILES_ONLY=1: a switch only the experiment's build had, a getenv in
Sm90L2HintedMainloop::to_underlying_arguments choosing the one-tile rule; main has the cluster rule alone) in shuffled rounds beside torch.matmul, L2 flushed
by zeroing 1 GiB as the benchmark does; every launch checked against float64.
    python3 notes/l2-hint-clusters-session55.py OUT.jsonl [GRID ...]"""
import json, os, re, statistics, sys
import torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import PRECISIONS, Workload

OLD = "PYCUTLASS_GEMM_HINT_TILES_ONLY"
p = {q.name: q for q in PRECISIONS}[os.environ.get("PRECISION", "bf16")]
settings = bt.Settings(budget_s=0.02, min_runs=5, max_runs=9, warmup_s=0.01, flush_mib=1024)
flush = bt.flush_buffer(settings)
DIMS = [(4096, 4096), (4096, 14336), (4096, 11008), (2048, 8192), (6144, 4096), (8192, 8192), (1024, 4096),
        (5120, 5120), (2048, 2048)]
layer = lambda layout, t, d_out, d_in: (t, d_out, d_in) if layout == "rc" else (t, d_in, d_out)  # noqa: E731
grids = {"m64-128": [(lay, layer(lay, t, *d)) for d in DIMS[:7] for lay in ("rc", "rr") for t in (64, 96, 128)],
         "band": [(lay, layer(lay, t, *d)) for d in DIMS for lay in ("rc", "rr") for t in (136, 160, 192)],
         "two-rows": [(lay, layer(lay, t, *d)) for d in DIMS for lay in ("rc", "rr") for t in (224, 256)],
         "wide": [(lay, layer(lay, t, *d)) for lay in ("rc", "rr") for t in (144, 176)
                  for d in (((11008, 4096), (14336, 4096)) if lay == "rc" else ((4096, 11008), (4096, 14336)))]}


def cluster_m(name):  # the cluster's extent along M of a kernel that multicasts B; 1 where the rule changes nothing
    c = re.search(r"_c(\d)x(\d)_", name)
    return 1 if not c or "swapab" in name else int(c[1])


def tile_m(name):
    return int(re.search(r"_(\d+)x\d+x\d+_c", name)[1])


def call(a, b, o, name, old):
    if old:
        os.environ[OLD] = "1"
    else:
        os.environ.pop(OLD, None)
    pg.gemm(a, b, out=o, variant=name)


names = [k["name"] for k in pg.kernels() if k["name"].startswith("sm90_")]
out = open(sys.argv[1], "w")
for grid in sys.argv[2:] or list(grids):
    for layout, (m, n, k) in grids[grid]:
        w = Workload.problem(m, n, k, layout, 1)
        a, b = w.make_inputs(p)
        o = torch.full(w.out_shape, float("nan"), device="cuda", dtype=p.dtype)
        auto = pg.plan(a, b)["kernel"]
        cands = [x for x in names if cluster_m(x) > 1 and -(-m // tile_m(x)) <= cluster_m(x)
                 and pg.can_run(x, a, b, out=o) == ""]
        if not cands:
            continue
        ref = torch.matmul(a.double(), b.double())
        errs = {}
        for x in cands:
            for old in (False, True):
                o.fill_(float("nan"))
                call(a, b, o, x, old)
                errs[x + (" old" if old else "")] = ((o.double() - ref).norm() / ref.norm()).item()
        fns = [lambda: torch.matmul(a, b, out=o)] + [lambda x=x, old=old: call(a, b, o, x, old)
                                                     for x in cands for old in (False, True)]
        for f in fns:
            bt.warm_up(f, settings)
        t = [statistics.median(s) for s in bt.time_interleaved(fns, flush, settings)]
        ms = dict(zip([x + s for x in cands for s in ("", " old")], t[1:]))
        out.write(json.dumps(dict(grid=grid, m=m, n=n, k=k, layout=layout, auto=auto, torch_ms=t[0], ms=ms, errs=errs)) + "\n")
        out.flush()
        print(f"{m}x{n}x{k} {layout} torch {t[0]*1e3:.1f} us; " + "; ".join(
            f"{x[9:]} {ms[x]*1e3:.1f} (old {ms[x + ' old']*1e3:.1f})" for x in cands) +
            f"; auto {auto[9:]}; worst err {max(errs.values()):.1e}", flush=True)
os.environ.pop(OLD, None)
