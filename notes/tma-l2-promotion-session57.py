"""Session 57: the L2 promotion of the SM90 kernels' TMA descriptors, 128 bytes (CUTLASS's) against 256 and none.
Ran in session 58 (H100, ccb910e's code: notes/tma-l2-promotion-h100-2026-12-05-session58.jsonl.gz): auto within 1%
either way, so the switch and tma_l2_promotion.h were removed (29f6c56); the script needs ccb910e to run again.

A descriptor's L2 promotion is the size in which L2 fills a miss from HBM. CUTLASS 4.2 encodes every tiled descriptor
with 128 bytes; DeepGEMM encodes its with 256. Session 55's ncu (notes/ncu-memory-bound-h200-2026-12-05-session55.txt)
had our split-K kernel at 256 x 256 x 131072 rr bf16 streaming HBM at 62% of peak where cuBLAS's kernel of the same
tiles, cluster and stages streams at 78%. Session 31 (H100, a patch: notes/patches/sm90-tma-l2-promotion-session31.patch,
alternating processes) found 256 bytes 4-9% slower for the long-K split-K kernels but 256x128 c1x2's (0.207 -> 0.200 ms
at 524288); decode-sized products and the small-M/N kernels were not timed. cpp/tma_l2_promotion.h makes the
promotion a per-launch choice, which _C.set_experiment("tma_l2_promotion_bytes", B) sets for every SM90 launch after
it (cpp/gemm_problem.h): old and new in the same shuffled rounds. (The small-M/N kernels, which load W without TMA,
asked L2 for 128 or 256 bytes a miss in session 25 on the H100: noise, 0.999x / 1.007x over their sweep.)

First (the quick part, so that a time limit cuts the grids, not this), for 256 x 256 x K (K = 32768 .. 524288), the
kernels auto and torch.matmul launch and their own times
(torch.profiler, no flush, promotion 128): what of the call's time is the product, the reduction and the gaps. And
the floor under the benchmark's flush for issue 10's memory-bound rows: torch.sum over the operands (a read of the
same bytes, no product) timed beside torch.matmul and auto in the same rounds.

Each problem: auto and every SM90 kernel of its dtype that takes it, by name, at each promotion, in shuffled rounds
beside torch.matmul, L2 flushed by zeroing 1 GiB as the benchmark does; every launch checked against float64
(notes/switch_rounds.py).
    python3 notes/tma-l2-promotion-session57.py OUT.jsonl [GRID ...]
    python3 notes/tma-l2-promotion-session57.py --summary OUT.jsonl   # (no GPU) the tables below, from a run's file"""
import json, math, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import pycutlass_gemm as pg
from pycutlass_gemm import _C
from pycutlass_gemm.bench_cases import PRECISIONS
from switch_rounds import kernel_times, layer, operands, runs, time_fns, time_states

PROMOTIONS = (128, 256, 0)  # bytes; 128 first: CUTLASS's, what ships


def summary(path):
    """Each kernel's time at 256 and at no promotion over its time at 128 (geomean, min-max, by grid); auto against
    torch.matmul at each promotion; and over 256 x 256 x K, each variant's time fitted as a + b K (us, us per 2^17)."""
    rows = [json.loads(line) for line in open(path)]
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    for grid in dict.fromkeys(r["grid"] for r in rows):
        ratios = {}
        for r in (r for r in rows if r["grid"] == grid):
            for key, ms in r["ms"].items():
                name, pr = key.rsplit(" ", 1)
                if pr != "128":
                    ratios.setdefault((name, pr), []).append(ms / r["ms"][f"{name} 128"])
        print(f"== {grid}: time at 256 / none over 128 (geomean, min-max, problems)")
        for name in dict.fromkeys(n for n, _ in ratios):
            print(f"  {name:60s} " + "  ".join(
                f"{pr}: {geo(ratios[name, pr]):.3f} ({min(ratios[name, pr]):.2f}-{max(ratios[name, pr]):.2f}, "
                f"{len(ratios[name, pr])})" for pr in ("256", "0") if (name, pr) in ratios))
        picked = [r for r in rows if r["grid"] == grid]
        print("  auto x torch.matmul at " + ", ".join(
            f"{pr}: {geo([r['torch_ms'] / r['ms'][f'auto {pr}'] for r in picked]):.3f}" for pr in PROMOTIONS))
    sweep = sorted((r for r in rows if r["grid"] == "long-k" and r["m"] == r["n"] == 256 and r["layout"] == "rr"),
                   key=lambda r: r["k"])
    if len(sweep) >= 2:
        print("== 256 x 256 x K rr, time = a + b K: a (us), b (us per 131072 of K)")
        xs = [r["k"] / 131072 for r in sweep]
        series = {"torch.matmul": [r["torch_ms"] * 1e3 for r in sweep]}
        for key in sweep[0]["ms"]:
            if key.endswith(" 128") and all(key in r["ms"] for r in sweep):
                series[key[:-4]] = [r["ms"][key] * 1e3 for r in sweep]
        mx = sum(xs) / len(xs)
        for name, ys in series.items():
            my = sum(ys) / len(ys)
            b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
            print(f"  {name:60s} a {my - b * mx:6.1f}  b {b:6.1f}")


if sys.argv[1:2] == ["--summary"]:
    summary(sys.argv[2])
    sys.exit(0)
p = {q.name: q for q in PRECISIONS}[os.environ.get("PRECISION", "bf16")]
grids = {
    "decode": [("rc", (t, n, k)) for t in (1, 4, 16, 32) for n, k in ((4096, 4096), (14336, 4096), (4096, 14336))]
    + [("rc", (16, 128256, 4096))],
    # 256 x 256 over K = 32768 .. 524288: each kernel's time against K, a line's intercept its fixed cost and its slope
    # its stream (session 31, H100: every split-K kernel ~20 us over what its bytes take), beside torch.matmul's
    "long-k": [("rr", (256, 256, 1 << e)) for e in range(15, 20)] + [
        ("rr", (512, 512, 65536)), ("rr", (1024, 1024, 16384)), ("rc", (256, 256, 131072)), ("rc", (2048, 2048, 16384))],
    "few-rows": [(lay, layer(lay, t, *d)) for lay in ("rc", "rr") for t in (64, 128, 176, 256)
                 for d in ((4096, 4096), (14336, 4096), (4096, 14336))],
    "large": [("rc", (4096, 4096, 4096)), ("rr", (4096, 4096, 4096)), ("rc", (8192, 14336, 4096)),
              ("rr", (2048, 2048, 2048)), ("cr", (4096, 4096, 4096))],
}


def set_promotion(promotion):
    _C.set_experiment("tma_l2_promotion_bytes", promotion)


if not sys.argv[2:] or "long-k" in sys.argv[2:]:
    set_promotion(128)
    for e in range(15, 20):
        a, b, o = operands("rr", 256, 256, 1 << e, p)
        for who, fn in (("auto", lambda: pg.gemm(a, b, out=o)), ("torch", lambda: torch.matmul(a, b, out=o))):
            times = kernel_times(fn)
            print(f"profile 256x256x{1 << e} rr {who}: " + "; ".join(f"{nm} {t:.1f} us" for nm, t in times.items()) +
                  f"; sum {sum(times.values()):.1f} us", flush=True)

    # The floor: reading the operands once (torch.sum, fp32 accumulation), L2 flushed as the benchmark does.
    for layout, (m, n, k) in (("rc", (16, 4096, 4096)), ("rc", (128, 4096, 4096)), ("rr", (176, 4096, 4096)),
                              ("rr", (256, 256, 131072)), ("rr", (256, 256, 524288))):
        a, b, o = operands(layout, m, n, k, p)
        t = [ms * 1e3 for ms in time_fns([lambda: torch.matmul(a, b, out=o), lambda: pg.gemm(a, b, out=o),
                                          lambda: (a.sum(dtype=torch.float32), b.sum(dtype=torch.float32))])]
        mb = (a.numel() + b.numel()) * a.element_size() / 1e6
        print(f"floor {m}x{n}x{k} {layout}: torch.matmul {t[0]:.1f} us, auto {t[1]:.1f}, reading A and B ({mb:.1f} MB) "
              f"{t[2]:.1f} us", flush=True)

names = [k["name"] for k in pg.kernels() if k["name"].startswith("sm90_")]
out = open(sys.argv[1], "w")
for grid in sys.argv[2:] or list(grids):
    for layout, (m, n, k) in grids[grid]:
        a, b, o = operands(layout, m, n, k, p)
        auto = pg.plan(a, b)["kernel"]
        cands = ["auto"] + [x for x in names if runs(x, a, b, o)]
        torch_ms, ms, errs = time_states(a, b, o, cands, PROMOTIONS, set_promotion)
        out.write(json.dumps(dict(grid=grid, m=m, n=n, k=k, layout=layout, auto=auto, torch_ms=torch_ms, ms=ms,
                                  errs=errs)) + "\n")
        out.flush()
        best = {pr: min(ms[f"{x} {pr}"] for x in cands) for pr in PROMOTIONS}
        print(f"{m}x{n}x{k} {layout} torch {torch_ms*1e3:.1f} us; auto ({auto.replace('sm90_', '')}) " +
              " / ".join(f"{ms[f'auto {pr}']*1e3:.1f}" for pr in PROMOTIONS) + " us; fastest kernel " +
              " / ".join(f"{best[pr]*1e3:.1f}" for pr in PROMOTIONS) + f" us at promotion {PROMOTIONS}; "
              f"{len(cands)} variants; worst err {max(errs.values()):.1e}", flush=True)
