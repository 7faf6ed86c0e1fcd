"""Where the memory-bound products lose to cuBLAS or miss issue 10's targets (H200, session 53: 128 x 4096 x 4096
x @ W.T 0.92x, 256 x 256 x 131072 0.90x, 176 x 4096 x 4096 dx 0.88x, 16 x 4096 x 4096 1.14x of the 1.3x asked): each
named kernel and torch.matmul launched once after an L2 flush, under Nsight Compute. Planned in session 54 (no GPU
lent); run by notes/ncu-memory-bound.sh:
    ncu --profile-from-start off --clock-control none --metrics ... python3 notes/ncu-memory-bound.py
ncu reports the kernels in the order the lines below name their calls. Kernels a build does not hold are left out (a
line says so); every launch is checked against float64 first."""
import torch

import pycutlass_gemm as pg
from pycutlass_gemm.bench_cases import PRECISIONS, Workload

CASES = [  # (m, n, k, layout, kernels by name besides torch.matmul)
    (16, 4096, 4096, "rc", ["small_mn_bf16_rc"]),  # decode: 1.14x torch.matmul, issue 10 asks 1.3x (65% of HBM)
    (128, 4096, 4096, "rc", ["sm90_bf16_rc_64x64x64_c2x1_pingpong_persistent", "sm90_bf16_rc_128x64x64_c1x4_coop_persistent"]),
    (256, 256, 131072, "rr", ["sm90_bf16_rr_128x64x64_c1x2_coop_splitk"]),
    (176, 4096, 4096, "rr", ["sm90_bf16_rr_128x192x64_c2x1_coop_splitk_swapab",
                             "sm90_bf16_rr_64x96x64_c2x1_pingpong_persistent_swapab"]),
]
bf16 = {p.name: p for p in PRECISIONS}["bf16"]
names = {k["name"] for k in pg.kernels()}
flush = torch.empty(1024 * 2**20 // 4, device="cuda")
for m, n, k, layout, kernels in CASES:
    a, b = Workload.problem(m, n, k, layout, 1).make_inputs(bf16)
    ref = torch.matmul(a.double(), b.double())
    for name in kernels + ["torch"]:
        if name != "torch" and name not in names:
            print(f"{m}x{n}x{k} {layout}: {name} not in this build", flush=True)
            continue
        run = (lambda: torch.matmul(a, b)) if name == "torch" else (lambda name=name: pg.gemm(a, b, variant=name))
        err = ((run().double() - ref).norm() / ref.norm()).item()
        torch.cuda.synchronize()
        flush.zero_()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()  # ncu --profile-from-start off: only the call's kernels
        run()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"{m}x{n}x{k} {layout}: {name} err {err:.1e}", flush=True)
