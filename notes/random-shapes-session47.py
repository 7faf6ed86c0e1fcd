"""Session 47: how auto picks off the sweep's points. Random aligned bf16 problems (M log-uniform over 16-16384, N and
K over 256-16384, multiples of 8; seeded; x @ W.T (rc) first, then rr and cr), every registered kernel that can run
each (not simt / naive / fallback) timed by name beside torch.matmul and auto in shuffled rounds (L2 flushed): is
the loss the choice (a faster kernel was there) or the kernels? Written incrementally (a time limit keeps what ran).
SEED (48: session 47's problems) draws another set; "auto" times only torch.matmul and auto (session 48: the
picks of a new vote on problems whose kernels were all timed before; and the table's pick where auto runs a kernel
registered after it); "model" draws a transformer layer's products
instead: tokens T log-uniform over 16-1024 (multiples of 8), (d_out, d_in) from MODEL_DIMS, y = x @ W.T (rc, T x d_out
x d_in), dx = dy @ W (rr, T x d_in x d_out), dW = dy.T @ x (cr, d_out x d_in x T); "tokens" a grid instead: T = 128,
144, ..., 512 over (d_out, d_in) = 4096 x 4096, 4096 x 14336, 14336 x 4096, y and dx (a kernel's time as its last tile
row fills: session 48 saw 128x64 c1x2 run 192 rows 1.3-1.45x slower than 256 on the same tiles); "band" (session 49)
T = 136..208 over BAND_DIMS, y and dx (the 192-row split-K tiles of D^T); "band-wide" 224..384 over the first six; "band-128" (session 50) 128 tokens over the first seven;
"tall" and "dx-128" (session 51) 264-376 tokens over TALL_DIMS and dx over 104-128 tokens; "tall-split" 264-376 tokens
with long K and N <= 4096; "m64-128" (session 52) 64, 96 and 128 tokens over the first seven; "m64-128-off" y over 72 and
112 tokens, dx over 40 and 56, the first seven; "rr-few" dx over 16, 24 and 32 tokens, the first seven; "rr-33-48" dx over 40 and 48; "two-rows" (session 53)
200, 224, 248 and 256 tokens (two 128-row tile rows, the last partly full) over BAND_DIMS, y and dx; "wide" y and dx
over 144 and 176 tokens with N of 11008, 14336 and 28672; "pair-rows" (session 55) 72-128 tokens over the first seven
and 14336 x 4096, y and dx; "one-row" (session 56) 72-128 tokens where 128x64 tiles fill about a wave (N of 7680 and
8192), y with N = 2048, dx with K = 1024. KERNELS=regex times only
the kernels it matches by name (auto and the table's pick always). Each row's errs: every timed kernel's
error against float64 (kernels new to a build are timed here before any table knows them).
    python3 notes/random-shapes-session47.py OUT.jsonl [COUNT_RC COUNT_RR COUNT_CR [SEED [auto | model | tokens | band | ... [auto]]]]"""
import json, math, os, random, re, statistics, sys
import torch
import pycutlass_gemm as pg
from pycutlass_gemm import bench_timing as bt
from pycutlass_gemm.bench_cases import PRECISIONS, Workload

p = {q.name: q for q in PRECISIONS}[os.environ.get("PRECISION", "bf16")]  # PRECISION=fp16: the fp16 twins
rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 48)
counts = [int(x) for x in sys.argv[2:5]] if len(sys.argv) > 4 else [40, 20, 20]
auto_only, model = "auto" in sys.argv[6:8], sys.argv[6:7] == ["model"]  # "band auto": the band, auto only
MODEL_DIMS = [(4096, 4096), (14336, 4096), (4096, 14336), (11008, 4096), (4096, 11008), (1024, 4096), (6144, 4096),
              (8192, 8192), (28672, 8192), (8192, 28672), (2048, 2048), (5632, 2048), (2048, 5632)]
settings = bt.Settings(budget_s=0.02, min_runs=5, max_runs=9, warmup_s=0.01, flush_mib=1024)
flush = bt.flush_buffer(settings)
names = [k["name"] for k in pg.kernels() if k["name"] not in ("naive", "fallback") and not k["name"].startswith("simt")
         and re.search(os.environ.get("KERNELS", ""), k["name"])]  # KERNELS=regex: time only those by name
size = lambda lo, hi: 8 * max(1, round(math.exp(rng.uniform(math.log(lo), math.log(hi))) / 8))  # noqa: E731


def runs(name, a, b, o):
    try:
        return pg.can_run(name, a, b, out=o) == ""
    except ValueError:  # a kernel of another dtype
        return False


BAND_DIMS = [(4096, 4096), (4096, 14336), (4096, 11008), (2048, 8192), (6144, 4096), (8192, 8192), (1024, 4096),
             (5120, 5120), (2048, 2048)]
TALL_DIMS = [(6144, 4096), (8192, 8192), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672), (11008, 4096),
             (4096, 11008)]
layer = lambda layout, t, d_out, d_in: (t, d_out, d_in) if layout == "rc" else (t, d_in, d_out)  # noqa: E731
grids = {"tokens": [(layout, layer(layout, t, d_out, d_in)) for layout in ("rc", "rr")
                    for d_out, d_in in ((4096, 4096), (4096, 14336), (14336, 4096)) for t in range(128, 513, 16)],
         "band": [(layout, layer(layout, t, d_out, d_in)) for d_out, d_in in BAND_DIMS for layout in ("rc", "rr")
                  for t in (136, 152, 160, 176, 192, 208)],
         "band-wide": [(layout, layer(layout, t, d_out, d_in)) for d_out, d_in in BAND_DIMS[:6] for layout in ("rc", "rr")
                       for t in (224, 272, 320, 384)],
         # session 50: the 128-row problems of issue 10 (x @ W.T and dx at 128 tokens), every kernel by name
         "band-128": [(layout, layer(layout, 128, d_out, d_in)) for d_out, d_in in BAND_DIMS[:7] for layout in ("rc", "rr")],
         # session 51: the two rules ahead of the table, off the rows they were read from (with "auto": auto, the
         # table's pick and torch.matmul): 128x192 tiles of D^T over 257-384 rows, and dx's 128x64 over 97-128
         "tall": [(layout, layer(layout, t, d_out, d_in)) for d_out, d_in in TALL_DIMS for layout in ("rc", "rr")
                  for t in (264, 296, 344, 376)],
         "dx-128": [("rr", layer("rr", t, d_out, d_in)) for d_out, d_in in BAND_DIMS[:7] + TALL_DIMS[4:6]
                    for t in (104, 120, 128)],
         # the split 128x192 tiles of D^T over 257-384 rows with long K, every kernel by name
         "tall-split": [(layout, layer(layout, t, d_out, d_in)) for layout, dims in
                        (("rc", ((4096, 14336), (4096, 11008), (2048, 8192))), ("rr", ((14336, 4096), (11008, 4096), (8192, 2048))))
                        for d_out, d_in in dims for t in (264, 296, 344, 376)],
         # session 52: 64x64 tiles in clusters of 2x1 (cuBLAS's pick at 128 x 4096 x 4096) over 64-128 tokens
         "m64-128": [(layout, layer(layout, t, d_out, d_in)) for d_out, d_in in BAND_DIMS[:7] for layout in ("rc", "rr")
                     for t in (64, 96, 128)],
         # ... off those rows (the 64-row pair's rules), and dx below its 33 rows
         "m64-128-off": [(layout, layer(layout, t, d_out, d_in)) for d_out, d_in in BAND_DIMS[:7]
                         for layout, rows in (("rc", (72, 112)), ("rr", (40, 56))) for t in rows],
         "rr-few": [("rr", layer("rr", t, d_out, d_in)) for d_out, d_in in BAND_DIMS[:7] for t in (16, 24, 32)],
         "rr-33-48": [("rr", layer("rr", t, d_out, d_in)) for d_out, d_in in BAND_DIMS[:7] for t in (40, 48)],
         # session 53: between the tables' 128- and 256-row points, 129-256 rows
         "two-rows": [(layout, layer(layout, t, d_out, d_in)) for d_out, d_in in BAND_DIMS for layout in ("rc", "rr")
                      for t in (200, 224, 248, 256)],
         "wide": [(layout, layer(layout, t, *dims)) for layout in ("rc", "rr") for t in (144, 176)
                  for dims in ((((11008, 4096), (14336, 4096), (28672, 8192)) if layout == "rc" else
                                ((4096, 11008), (4096, 14336), (8192, 28672))))],
         # session 55: the 64-row pair over 65-128 rows (one cluster row, B evict-first), x @ W.T and dx
         "pair-rows": [(layout, layer(layout, t, d_out, d_in)) for d_out, d_in in BAND_DIMS[:7] + [(14336, 4096)]
                       for layout in ("rc", "rr") for t in (72, 80, 88, 96, 112, 128)],
         # session 56: one 128-row tile row where 128x64 tiles fill about a wave (N near 8192), N = 2048 with long K,
         # and dx with K = 1024 (session 55's pair-rows grid: auto 0.72-0.92x against 0.89-1.02x there)
         "one-row": [(layout, layer(layout, t, d_out, d_in)) for t in (72, 96, 112, 128) for layout, dims in
                     (("rc", [(d_out, d_in) for d_out in (7680, 8192) for d_in in (1024, 2048, 4096, 8192, 14336)] +
                       [(2048, 4096), (2048, 8192), (2048, 14336)]),
                      ("rr", [(d_out, 8192) for d_out in (1024, 2048, 4096, 8192, 14336)] + [(1024, 4096), (1024, 6144)]))
                     for d_out, d_in in dims]}
todo = grids.get(sys.argv[6] if len(sys.argv) > 6 else "", [(layout, None) for layout, count in
                                                             zip(("rc", "rr", "cr"), counts) for _ in range(count)])
out = open(sys.argv[1], "w")
for layout, fixed in todo:
    m, n, k = size(16, 16384), size(256, 16384), size(256, 16384)
    if fixed:
        m, n, k = fixed
    elif model:
        tokens, (d_out, d_in) = size(16, 1024), rng.choice(MODEL_DIMS)
        m, n, k = {"rc": (tokens, d_out, d_in), "rr": (tokens, d_in, d_out), "cr": (d_out, d_in, tokens)}[layout]
    if 2 * m * n * k > 2**40:
        continue
    w = Workload.problem(m, n, k, layout, 1)
    a, b = w.make_inputs(p)
    o = torch.full(w.out_shape, float("nan"), device="cuda", dtype=p.dtype)
    plan = pg.plan(a, b)
    auto = plan["kernel"]
    cands = [] if auto_only else [x for x in names if runs(x, a, b, o)]
    cands += [] if auto in cands else [auto]
    table_pick = re.search(r"the table's pick: ([^)]+)\)", plan["reason"])  # auto runs a kernel the table never timed
    cands += [table_pick[1]] if table_pick and table_pick[1] not in cands else []
    ref = torch.matmul(a.double(), b.double())
    errs = {}
    for x in cands:
        o.fill_(float("nan"))
        pg.gemm(a, b, out=o, variant=x)
        errs[x] = ((o.double() - ref).norm() / ref.norm()).item()
    err = errs[auto]
    fns = [lambda: torch.matmul(a, b, out=o)] + [lambda x=x: pg.gemm(a, b, out=o, variant=x) for x in cands]
    for f in fns:
        bt.warm_up(f, settings)
    t = [statistics.median(s) for s in bt.time_interleaved(fns, flush, settings)]
    ms = dict(zip(cands, t[1:]))
    best = min(cands, key=ms.get)
    out.write(json.dumps(dict(m=m, n=n, k=k, layout=layout, auto=auto, reason=plan["reason"], torch_ms=t[0], ms=ms,
                              err=err, errs=errs)) + "\n")
    out.flush()
    print(f"{m}x{n}x{k} {layout}: torch {t[0]*1e3:.1f} us; auto {auto} {t[0]/ms[auto]:.2f}x; best {best} "
          f"{t[0]/ms[best]:.2f}x; err {err:.1e} (worst of all {max(errs.values()):.1e})", flush=True)
