"""Session 48: why a kernel of 128-row tiles runs x @ W.T slower at 192 tokens than at 256 on the same tile grid
(session 47, H200, 192 x 4096 x 14336 rc bf16: 128x64 c1x2 92.6 us against 65.9 at 256 rows; 128x80 c2x1 78.2
against 58.6; split-K 128x256 54.5 against 54.6). GPU time (torch.profiler, L2 flushed before each run) of a few
kernels by name over M = 128..384, N = 4096, K = 4096 / 14336.
    python3 notes/m-between-tiles-session48.py OUT.jsonl            # the sweep over M
    python3 notes/m-between-tiles-session48.py --once KERNEL M K    # one call, for ncu
    python3 notes/m-between-tiles-session48.py OUT.jsonl --layouts  # K = 14336: rc / cr over M, rc over N (mirrored)
    python3 notes/m-between-tiles-session48.py OUT.jsonl --squares  # 4096^3 rc against a partial last tile row / column
The first run (s48a, H200): 128x64 c1x2 at M = 160 / 192 / 224 / 256 took 91.9 / 87.8 / 67.0 / 60.3 us on the same
2 x 64 tiles, 128x80 c2x1 91.2 / 76.9 / 62.5 / 56.4 and 87.3 at M = 128 (its pair's second tile wholly outside A);
ncu at 192 against 256: DRAM bytes 155 / 125 MB (c1x2), 123 / 125 MB (c2x1): not the traffic."""
import json, sys
import torch
import pycutlass_gemm as pg
from pycutlass_gemm.bench_cases import PRECISIONS, Workload
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_times import gpu_us as profiled_us  # noqa: E402

bf16 = {q.name: q for q in PRECISIONS}["bf16"]
KERNELS = ["sm90_bf16_rc_128x64x64_c1x2_coop_persistent", "sm90_bf16_rc_128x80x64_c2x1_coop_persistent",
           "sm90_bf16_rc_128x64x64_c1x4_coop_persistent", "sm90_bf16_rc_128x128x64_c1x2_coop_persistent",
           "sm90_bf16_rc_128x256x64_c2x1_coop_splitk", "sm90_bf16_rc_64x64x64_c1x2_pingpong_persistent"]


def problem(m, k, n=4096, layout="rc"):
    a, b = Workload.problem(m, n, k, layout, 1).make_inputs(bf16)
    return a, b, torch.full((m, n), float("nan"), device="cuda", dtype=bf16.dtype)


if sys.argv[1] == "--once":
    name, m, k = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    a, b, o = problem(m, k)
    pg.gemm(a, b, out=o, variant=name)
    torch.cuda.synchronize()
    sys.exit(0)

flush = torch.empty(2**28, device="cuda", dtype=torch.int32)


def gpu_us(fn):
    return profiled_us(fn, flush)


out = open(sys.argv[1], "w")
if sys.argv[2:] == ["--squares"]:
    names = [f"sm90_bf16_rc_{t}" for t in ("128x256x64_c2x1_coop_persistent", "128x128x64_c1x2_coop_persistent",
                                           "128x64x64_c1x2_coop_persistent")]
    for m, n in ((4096, 4096), (4032, 4096), (4000, 4096), (3968, 4096), (4096, 4000), (4096, 3968), (3840, 3840),
                 (3904, 3904)):
        a, b, o = problem(m, 4096, n)
        us = {"torch": gpu_us(lambda: torch.matmul(a, b, out=o))}
        for x in names:
            us[x] = gpu_us(lambda x=x: pg.gemm(a, b, out=o, variant=x))
        out.write(json.dumps(dict(m=m, n=n, k=4096, layout="rc", gpu_us=us)) + "\n"); out.flush()
        print(f"{m}x{n}x4096 rc: " + " ".join(f"{v:.1f}" for v in us.values()), flush=True)
    sys.exit(0)
if sys.argv[2:] == ["--layouts"]:
    for layout, mirrored in (("rc", False), ("cr", False), ("rc", True)):
        names = [f"sm90_bf16_{layout}_{t}" for t in ("128x64x64_c1x2_coop_persistent", "128x128x64_c1x2_coop_persistent",
                                                     "128x128x64_c2x1_coop_persistent", "128x256x64_c2x1_coop_splitk")]
        for size in (128, 160, 192, 224, 256):
            m, n = (4096, size) if mirrored else (size, 4096)
            a, b, o = problem(m, 14336, n, layout)
            us = {"torch": gpu_us(lambda: torch.matmul(a, b, out=o))}
            for x in names:
                us[x] = gpu_us(lambda x=x: pg.gemm(a, b, out=o, variant=x))
            out.write(json.dumps(dict(m=m, n=n, k=14336, layout=layout, gpu_us=us)) + "\n"); out.flush()
            print(f"{m}x{n}x14336 {layout}: " + " ".join(f"{v:.1f}" for v in us.values()), flush=True)
    sys.exit(0)
for k in (4096, 14336):
    for m in (128, 160, 192, 224, 256, 320, 384):
        a, b, o = problem(m, k)
        us = {"torch": gpu_us(lambda: torch.matmul(a, b, out=o))}
        for x in KERNELS:
            us[x] = gpu_us(lambda x=x: pg.gemm(a, b, out=o, variant=x))
        out.write(json.dumps(dict(m=m, n=4096, k=k, gpu_us=us)) + "\n"); out.flush()
        print(f"{m}x4096x{k}: " + " ".join(f"{v:.1f}" for v in us.values()), flush=True)
