"""The registered kernels: the instantiation set every build compiles (scripts/generate_kernels.py; a
subset with CMake's PYCUTLASS_GEMM_KERNELS), each with the problems it was registered for and what was
measured of it there. CutlassSm90Gemm::priority (cpp/cutlass_sm90_priority.cuh) ranks them by rule, the
measured tables (pycutlass_gemm/tables/) where they were swept. A kernel moves here from
scripts/tuning_kernels.py only when a run shows it beats what auto picks, and after it matched float64 on
the GPU.
"""
import itertools

from generate_kernels import LAYOUTS, Kernel, simt, sm80


def registered():
    """The registered kernels, grouped by what they were registered for."""
    kernels = []
    for dtype, la_lb in itertools.product(["bf16", "f16", "tf32"], LAYOUTS):
        k = 32 if dtype == "tf32" else 64  # 128-byte rows of K either way
        # tf32 with an MN-major operand (rr run as D^T, cc; cr with both) runs CUTLASS's register-sourced
        # mainloop, A's (and cr's B's) TMA boxes widened (sm90_collectives.cuh, WithWideMnMajorA).
        # tf32 cr (transposed A: A in registers, B transposed on chip) takes 256x128 tiles: a quarter
        # less shared-memory traffic for the same MACs as 128x256 (~144 KB a k tile against ~192: notes,
        # session 31). H100, ms (x cuBLAS), 256x128 c1x2 / 128x256 c2x1: 2048x4096x8192 0.496 (1.05x) /
        # 0.528, 4096x8192x4096 0.998 / 1.062, 2048^3 0.071 / 0.075. With one MN-major operand (rr as
        # D^T, cc) 256x128 ran 2-3% behind 128x256 (4096^3 cc 0.338 / 0.329).
        tf32_cr = dtype == "tf32" and la_lb == "cr"
        tile, cluster = ((256, 128, k), (1, 2)) if tf32_cr else ((128, 256, k), (2, 1))
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], tile, cluster, "coop", "persistent"))
        # Stream-K for few tiles and long K. tf32 takes a wide tile: on the large-K workload
        # (H100, concurrent split reduction) 128x256 ran 0.41 ms against 128x128's 0.46 (cuBLAS
        # 0.47); for bf16 the two were within noise (0.22 ms either way).
        sk_tile = (128, 256, k) if dtype == "tf32" else (128, 128, k)
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], sk_tile, (1, 1), "coop", "streamk"))
        # tf32 cr stream-K also on 256x128 tiles: ahead of 128x256 by 4-8% from 512 rows up (ms:
        # 1024x2048x4096 0.085 (1.05x) / 0.089, 1024x1024x8192 0.090 / 0.095) and by up to 1.5x with few
        # columns (4096x4x65536), 1.5x behind with few rows (4x65536x4096): the sweep's 1950 tf32 cr
        # problems lose 1.2% (geomean; 122 by > 3%) with either tile alone against both.
        if tf32_cr:
            kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], tile, (1, 1), "coop", "streamk"))
    # Long K over few tiles (256 x 256 x 131072 and 524288, 512 x 512 x 65536): K split into equal
    # slices run as the batch of the persistent kernel, fp32 partials summed after
    # (cpp/cutlass_sm90_gemm.cuh, SplitKParallelScheduler). H100, bf16, ms (x cuBLAS), against
    # stream-K 128x128: 256x256x524288 0.207 (1.07x) / 0.243; 512x512x65536 0.073 (0.90x) / 0.134;
    # 1024x1024x16384 0.065 / 0.085; the 128x128 tile where N <= 128 or A is read by many N tiles:
    # 128x128x262144 0.070 (0.96x) / 0.074, 256x1024x65536 0.093 (0.86x) / 0.136. And weight gradients
    # over many tokens (X^T dY, cr): 1024x1024x65536 0.184 (0.95x) against stream-K's 0.350.
    for dtype, (tile, cluster) in itertools.product(["bf16", "f16"], [((128, 256, 64), (2, 1)), ((128, 128, 64), (1, 1))]):
        kernels.append(Kernel("sm90", dtype, "r", "r", tile, cluster, "coop", "splitk"))
    for dtype in ["bf16", "f16"]:
        kernels.append(Kernel("sm90", dtype, "c", "r", (128, 256, 64), (2, 1), "coop", "splitk"))
    # ... and x @ W.T (rc) over 256-2048 tokens with long K, where rc had no split and rr's split-K beat every
    # rc kernel on 138 bf16 / 141 fp16 problems of the H100 sweep (1.17x geomean, up to 1.84x). H100, session
    # 39, ms (x cuBLAS) against what auto ran (128x64 c1x2 or c1x4 persistent): bf16 512x1600x18944 0.065
    # (0.89x) / 0.091, 512x2048x18944 0.067 (0.97x) / 0.086, 512x1024x14336 0.041 / 0.049; fp16 1024x1024x65536
    # 0.186 (0.98x) / 0.264, 512x2048x16384 0.061 / 0.074, 512x1024x14336 0.042 / 0.055.
    for dtype in ["bf16", "f16"]:
        kernels.append(Kernel("sm90", dtype, "r", "c", (128, 256, 64), (2, 1), "coop", "splitk"))
    # bf16 128x256 tiles with the stream-K scheduler, for problems whose 128x256 tiles leave the last wave under
    # half full: there CUTLASS's stream-K heuristic spreads the last wave's work over all SMs (elsewhere it runs
    # the tiles data-parallel, 1-4% behind the persistent kernel: 4096^3). H100, session 39, ms (x cuBLAS)
    # against the persistent 128x256: 4096x2560x28672 rr (320 tiles, 2.4 waves) 0.724 (0.94x) / 0.815,
    # 2048x5120x28672 rr 0.742 / 0.823, 4096x2560x8192 rc 0.222 (0.93x) / 0.245, 2560x4096x8192 cr 0.223 /
    # 0.245, 512x8960x18944 rc (140 tiles) 0.233 (1.02x) / 0.371, 512x8960x4864 rc 0.081 / 0.107, 8960x896x6000 cr
    # 0.175 / 0.188 (auto's 128x128 c1x2: 0.222). CutlassSm90Gemm::priority ranks it (kWideStreamK). fp16's
    # twins, session 40 (x cuBLAS): 4096x2560x28672 rr 0.766 ms (0.99x), 512x8960x18944 rc 0.241 (1.03x).
    for dtype in ["bf16", "f16"]:
        for la_lb in ("rr", "rc", "cr"):
            kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 256, 64), (2, 1), "coop", "streamk"))
    # x @ W.T (rc) over 512-1000 tokens with N of 768-1024 and K <= 6144, where every 128-row kernel ran
    # 0.73-0.86x cuBLAS (whose 48x64 to 80x128 tiles make 96-132 CTAs where 128x64 tiles make 48): 64-row
    # tiles, one consumer warpgroup each, two of them ping-ponging (one's epilogue under the other's
    # mainloop). H100, session 40, bf16, x cuBLAS against auto's 128x64 c1x4 / c1x2: 512x768x4096 64x64 c1x1
    # 0.87x (0.73x), 512x768x768 0.93x (0.86x), 512x1024x6144 64x64 c1x2 0.85x (0.79x), 1000x768x3072 64x128
    # 0.87x (0.82x); behind at 512x2560x3072 (0.61x against 0.76x) and 512x4096x4096 (0.65x / 0.90x). By rule
    # they rank last (kSixtyFourRows); the measured table says where they lead.
    for dtype in ["bf16", "f16"]:
        for tile, cluster in (((64, 64, 64), (1, 1)), ((64, 64, 64), (1, 2)), ((64, 128, 64), (1, 1))):
            kernels.append(Kernel("sm90", dtype, "r", "c", tile, cluster, "pingpong", "persistent"))
    # ... and 64x64 tiles in clusters of 2x1 (W multicast to the two 64-row tiles of X: 128 CTAs where 128x64 tiles
    # make 64), cuBLAS's pick at 128 x 4096 x 4096 rc (H200, torch.profiler: 64x64, 13 stages, 2x1, 15.7 us against
    # our 128x64 c1x4's 16.4), for dx (rr) over 33-64 tokens and x @ W.T (rc) over 97-128 with K >= 8192, where
    # CutlassSm90Gemm::priority puts them first (kSixtyFourRowPair), and since session 53 over 129-256 tokens where
    # their 4 x N / 64 CTAs fill one wave (N = 2048). H200, session 52, bf16, x torch.matmul against
    # auto before: 64 x 4096 x 4096 rr 1.03 (0.79), 64 x 8192 x 8192 rr 0.99 (0.79), 64 x 4096 x 6144 rr 1.07 (0.83),
    # 128 x 4096 x 14336 rc 1.07 (1.00), 128 x 4096 x 11008 rc 1.06 (0.98).
    for dtype, la_lb in itertools.product(["bf16", "f16"], ["rc", "rr"]):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (64, 64, 64), (2, 1), "pingpong", "persistent"))
    # tf32 rr (run as D^T = B^T A^T like every tf32 rr kernel): the large-K workload 0.402 ms (1.10x)
    # against stream-K 128x256's 0.417, 512x512x65536 0.133 (1.23x) / 0.181, 1024x1024x16384 0.122 / 0.165.
    kernels.append(Kernel("sm90", "tf32", "r", "r", (128, 256, 32), (2, 1), "coop", "splitk"))
    # tf32 rc and cc split-K: the small transposed-B workload (1024x2048x4096 rc: 64 tiles of 128x256
    # for 132 SMs) ran 0.070 ms on stream-K against cuBLAS's 0.054 (0.77x; cc 0.069 / 0.055), where rr's
    # split-K kernel ran 0.059 against 0.059. H100, ms (x cuBLAS), rc / cc: 1024x2048x4096 0.059 (0.87x)
    # / 0.059 (0.93x), 1024x1024x8192 0.059 (1.19x / 1.22x), 256x256x131072 0.117 (1.11x) / 0.113
    # (1.21x); in the sweep each is the fastest at ~230 of its ~1900 problems (by 1.1-2.5x).
    for la_lb in ("rc", "cc"):
        kernels.append(Kernel("sm90", "tf32", la_lb[0], la_lb[1], (128, 256, 32), (2, 1), "coop", "splitk"))
    # tf32 rc and cc one-wave pairs (kOneWavePair, cutlass_sm90_priority.cuh): 128x128 tiles in clusters of
    # 1x2 where 128x256 tiles fill half a wave. H100, ms (x cuBLAS), rc / cc, against split-K 128x256:
    # 1024x2048x4096 0.051 (1.02x) / 0.052 (1.08x) against 0.059 / 0.059, 2048x1024x4096 0.051 (1.16x /
    # 1.08x) against 0.059, 1024x2048x8192 0.097 / 0.096 against 0.100 / 0.100; behind from two waves
    # (2048^3 0.061 against 128x256's 0.049). Clusters of 2x1 ran 2-7% behind (tuning_kernels.py).
    for la_lb in ("rc", "cc"):
        kernels.append(Kernel("sm90", "tf32", la_lb[0], la_lb[1], (128, 128, 32), (1, 2), "coop", "persistent"))
    # tf32 rc and cc between the octaves: 128x192 tiles in clusters of 2x1 where 128x256 ones leave much of
    # the last wave idle (3072^3: 384 tiles, 2.9 waves, against 288, 2.2). H100, session 34, x cuBLAS
    # against what auto ran (stream-K 128x256): rc 3072^3 1.04 (0.156 ms) / 0.86, 3072x3072x4096 1.05 /
    # 0.88, 1536x1536x4096 1.12 / 0.91; behind elsewhere (1536x3072x8192 0.89 / 0.99, 6144^3 0.99 / 1.00),
    # which the measured table leaves to the others. cc runs CUTLASS's register-sourced A path.
    for la_lb in ("rc", "cc"):
        kernels.append(Kernel("sm90", "tf32", la_lb[0], la_lb[1], (128, 192, 32), (2, 1), "coop", "persistent"))
    # F.linear with a bias, x @ W.T + b (x row-major, W.T column-major: rc), as models call it
    # (pycutlass_gemm.enable() routes it): the persistent kernel with a bias-row epilogue. Only
    # rc: the backward products have no bias, and fp32 is not routed by default.
    for dtype in ["bf16", "f16"]:
        kernels.append(Kernel("sm90", dtype, "r", "c", (128, 256, 64), (2, 1), "coop", "persistent", bias=True))
    # Decode-time x @ W.T (M <= 32 tokens against a large weight, rc): computed as D^T = W x^T so the
    # weight's rows fill the 128-row tile and the few tokens the 32-wide one; stream-K splits K so
    # every SM streams a share of W (CutlassSm90Gemm::priority takes it for m <= 32 only).
    for dtype in ["bf16", "f16"]:
        kernels.append(Kernel("sm90", dtype, "r", "c", (128, 32, 128), (1, 1), "coop", "streamk", swap_ab=True))
    # Batched products with N = 64 (attention's head dimension: P @ V and dS @ K are rr, dV = P^T dO
    # and dK = dS^T Q are cr): a 128x64 tile, so no wgmma multiplies padding (CutlassSm90Gemm::priority
    # takes it for n <= 64 only). H100, x cuBLAS: 32x(1024x64x1024) rr 1.00 against stream-K
    # 128x128's 0.93, 32x(2048x64x2048) 1.01 / 0.95, 8x(4096x64x4096) 1.00 / 0.93, 64x(512x64x512)
    # 0.97 / 0.83.
    for dtype, la_lb in itertools.product(["bf16", "f16"], ["rr", "cr"]):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 64, 64), (1, 1), "coop", "persistent"))
    # The same tile in clusters of 1x2 (A multicast to two N tiles: a third less traffic from L2 a k
    # tile) for problems whose 128x64 tiles fit one wave and span at least two N tiles
    # (CutlassSm90Gemm::priority): weight gradients of 1024-wide layers, 1024x1024x4096 cr bf16 0.022 ms
    # against 0.026 for c1x1 and 0.030 for stream-K 128x128 (cuBLAS 0.019); clusters of 2x2 and 1x4
    # ran 0.030, ping-pong and a 64x128 tile in 2x1 clusters 0.022-0.023 (notes/measurements.md). And
    # K split in parallel over it: 256x256x131072 rr 0.068 ms against 0.074 for 128x128 c1x1. Also rc
    # (x @ W.T over few tokens: 512 x 2048, 1024 x 1024), where only stream-K 128x128 filled the SMs.
    # And 128x128 tiles in clusters of 1x2 where those fill one wave: 1024x2048x4096 cr 0.028 ms (0.94x
    # cuBLAS) against 0.039 for 128x64 c1x2 and 0.035 for stream-K 128x128; 2048x1024x4096 rr 0.030
    # against stream-K's 0.034.
    # fp16 the same: H100, x cuBLAS, auto with them against auto before (128x64 c1x1, stream-K, split-K
    # 128x256): 1024x1024x4096 cr 0.83 / 0.68, rr 0.85 / 0.73, rc 0.89 / 0.63; 1024x2048x4096 cr 0.95 /
    # 0.54; 2048x1024x4096 rr 0.97 / 0.60; 512x2048x4096 rc 0.84 / 0.66; 256x256x131072 rr (split) 0.93 / 0.85.
    for dtype, la_lb, tile in itertools.product(["bf16", "f16"], ["rr", "cr", "rc"], [(128, 64, 64), (128, 128, 64)]):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], tile, (1, 2), "coop", "persistent"))
    for dtype in ["bf16", "f16"]:
        kernels.append(Kernel("sm90", dtype, "r", "r", (128, 64, 64), (1, 2), "coop", "splitk"))
    # ... and 128x128 in clusters of 2x1 (B multicast to two M tiles), for problems whose N tiles are odd: a 1x2
    # cluster launches a CTA with no tile beside the last N tile (CutlassSm90Gemm::priority, kPairOrientation).
    # H200, session 41, bf16, against 1x2: 2048x896x8960 rr 0.80x the time (0.98x cuBLAS, 1x2 0.77x),
    # 2048x896x3000 cr 0.89x, 1024x1600x1600 rr 0.95x; within 4% where both launch as many.
    for dtype, la_lb in itertools.product(["bf16", "f16"], ["rr", "cr", "rc"]):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 128, 64), (2, 1), "coop", "persistent"))
    # Fill tiles: 128x160 (and 128x80 with B K-major) in clusters of 2x1, N widths that fill one or two waves of
    # SMs where 128, 192 and 256 do not (cuBLAS runs 80- and 168-wide tiles of x @ W.T over 512 tokens; CuTe's
    # extended wgmma N: Kernel.extended_wgmma_n), first where the modelled waves say so (CutlassSm90Gemm::priority,
    # kFillTile). H200, session 41, bf16, x cuBLAS against what auto ran: 512x5120x3072 rc 160 0.97x (0.87x),
    # 512x5120x14336 rc 160 1.01x (0.89x), 1000x2560x13824 rc 160 1.00x (0.88x), 1024x4864x896 rc 160 0.94x
    # (0.84x), 512x2560x3072 rc 80 0.88x (0.73x), 256x4096x4096 rc 80 1.00x (0.91x); over the 131 model shapes
    # (bf16 rr / rc / cr) 128x160 is the fastest kernel at 21 (by > 3%). 128x80 for rc only: with B MN-major
    # (rr, cr) it was never ahead (scripts/tuning_kernels.py, with 128x176).
    for dtype, la_lb, tile_n in itertools.product(["bf16", "f16"], ["rr", "rc", "cr"], [80, 160]):
        if tile_n == 160 or la_lb == "rc":
            kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, tile_n, 64), (2, 1), "coop", "persistent"))
    # x @ W.T over 64-128 tokens: the 128x64 tile in clusters of 1x4, A (the tokens) multicast to four
    # N tiles. H100, bf16, ms (x cuBLAS) against 1x2: 64x4096x4096 0.022 (0.99x) / 0.027 (0.81x),
    # 128x4096x4096 0.022 (1.01x) / 0.022, 128x14336x4096 1.08x / 1.06x, 128x11008x4096 1.07x / 1.04x;
    # behind at 256 tokens (0.72x / 0.93x). fp16 the same (session 37, once units of several kernels
    # made room in the build: fastest at 152 of the 2560 fp16 rc sweep problems, by 3.5% geomean, up to
    # 1.26x); the measured table chooses it (CutlassSm90Gemm::priority ranks it last by rule).
    for dtype in ["bf16", "f16"]:
        kernels.append(Kernel("sm90", dtype, "r", "c", (128, 64, 64), (1, 4), "coop", "persistent"))
    # 128x192 tiles in clusters of 2x1 where 128x256 tiles leave much of the last wave idle and
    # 128x192 ones fill it (cuBLAS runs 192-wide tiles there): H100, bf16, ms (x cuBLAS) against the
    # 128x256 c2x1 auto ran: 3072^3 rr 0.081 (0.95x) / 0.102 (0.76x), rc 0.084 (0.91x) / 0.103
    # (0.74x), cr 0.082 (0.95x) / 0.102 (0.76x); 3072x3072x4096 cr 0.105 (0.96x) / 0.131 (0.77x);
    # 1536^3 rr 0.018 (0.81x) / 0.022 (0.67x); 4096x1536x4096 rc 0.072 (0.95x). Per flop it is behind
    # 128x256 (4096^3 rr 0.77x, 704 tiles against 512), so it is for those problems only
    # (CutlassSm90Gemm::priority); clusters of 1x1 ran 0.79-0.83x at 3072^3. fp16 the same (3072^3
    # rr / rc / cr 0.083 / 0.086 / 0.083 ms against 128x256's 0.105 / 0.105 / 0.104 in the sweep). cc
    # too (3072^3 bf16 cc ran 0.74x cuBLAS on 128x256).
    for dtype, la_lb in itertools.product(["bf16", "f16"], LAYOUTS):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 192, 64), (2, 1), "coop", "persistent"))
    # ... and computing D^T with them: 192x128 tiles of D, for problems whose M fills 192-row tiles and
    # whose N leaves 128x256 and 128x192 tiles a poor last wave (CutlassSm90Gemm::priority), as cuBLAS
    # runs them there. H100, bf16, ms (x cuBLAS) against the best of 128x256 and 128x192 tiles of D:
    # 3072x1024x4096 cr 0.038 (0.95x) / 0.046 (0.80x), rr 0.041 / 0.047, rc 0.041 / 0.046; 3072x2048x4096
    # cr 0.071 (0.97x) / 0.077; 6144x1024x4096 rr 0.073 (0.96x) / 0.090 (128x128 c1x2: 0.081);
    # 3072x1024x1024 cr 0.015 / 0.018. fp16 the same (a tuning candidate until session 37: 3072x1024x4096 rr /
    # rc / cr 0.90 / 0.93 / 0.95x cuBLAS against auto's 0.81 / 0.83 / 0.79x; in the re-swept fp16 classes
    # fastest at 158 / 149 / 263 problems, by 3.5-3.9% geomean, up to 1.21-1.24x).
    for dtype, la_lb in itertools.product(["bf16", "f16"], ["rr", "rc", "cr"]):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 192, 64), (2, 1), "coop", "persistent",
                              swap_ab=True))
    # ... and with K split in parallel: x @ W.T and dx (rc, rr) over 129-192 tokens against a weight of up to
    # ~8192 rows, whose 128-row tiles compute two tile rows (256, a quarter to nearly half of them padding) and
    # whose 192-row tiles of D^T are too few for the SMs (4096 rows: 32 tiles) without a split. H200, session 49,
    # x torch.matmul over 136-192 tokens, auto with it / the measured table's pick before it: 4096 x 14336 rc
    # 0.98-1.08 / 0.59-0.81 (128x64 c1x2), 4096 x 4096 rr 0.82-1.01 / 0.56-0.71 (128x64), 8192 x 8192 rc 0.86-1.00
    # / 0.68-0.88 (128x128 c1x2); 55 problems of 11 layer shapes 0.945 / 0.727, fp16 0.948 / 0.723
    # (CutlassSm90Gemm::priority, kSplitKFewRowsTransposed, says where it goes first).
    for dtype, la_lb in itertools.product(["bf16", "f16"], ["rr", "rc"]):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 192, 64), (2, 1), "coop", "splitk",
                              swap_ab=True))
    # bf16 192x192 tiles (cuBLAS's at 3072^3 and 6144^3), three consumer warpgroups stacked along M (64 x 192
    # each, the wgmmas of one 128x192 warpgroup; 512 threads: cpp/sm90_three_warpgroup_kernel.cuh): each
    # warpgroup reads shared memory a flop as one of 128x192 does and the tile reads a fifth less from L2.
    # H100, ms (x cuBLAS) against 128x192 c2x1: 3072^3 rr / rc / cr / cc 0.080 / 0.082 / 0.080 / 0.082
    # (0.95-0.97x) against 0.082-0.085 (0.92-0.95x); 3072x3072x4096 cr 0.105 / 0.107; 3072x1536x4096 cr
    # 0.053 (0.96x) against auto's 0.069. Behind 128x256 where that fills the waves (4096^3 0.217 against
    # 0.176, 6144^3 0.567 / 0.563): for problems its tiles fit best (CutlassSm90Gemm::priority). Two
    # warpgroups splitting N instead ran 0.088 (scripts/tuning_kernels.py, "coopsplitn").
    # fp16 the same (session 35, from scripts/tuning_kernels.py): H100, x cuBLAS against auto before it
    # (128x192 c2x1): 3072^3 rc 0.95 / 0.90, cc 0.95 / 0.91, 3072x1536x4096 rc 0.96 / 0.72, 6144^3 cc
    # 0.98 / 0.97.
    for dtype, la_lb in itertools.product(["bf16", "f16"], LAYOUTS):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (192, 192, 64), (2, 1), "coop3wg", "persistent"))
    # bf16 / f16 with A and B 16-byte aligned and D not (an odd N with B column-major: x @ W.T onto a
    # vocabulary of 50257; or an output view): TMA loads, the epilogue stores D from registers. Only
    # B column-major: with B row-major an odd N leaves B unaligned too.
    for dtype, la_lb in itertools.product(["bf16", "f16"], ["rc", "cc"]):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 256, 64), (2, 1), "coop", "persistent",
                              any_output=True))
    # bf16 / f16 operands TMA cannot load (pointers, leading dimensions or rows not 16-byte
    # multiples: K = 777, N = 1001): wgmma, each line's 16-byte chunks staged by cp.async and shifted
    # into place on chip (cpp/sm90_staged_mainloop.cuh), D stored from registers. H100, bf16 rr, ms
    # (x cuBLAS) against the SM80 128x256 kernel below: 2048x1001x2048 0.048 (1.72x) / 0.077,
    # 8192x1001x4096 0.291 (1.83x) / 0.480, 1000x3000x777 0.046 (1.33x) / 0.056, 1000x1000x777 0.024
    # / 0.057, 777^3 0.027 (0.85x) / 0.048. The 128x256x32 tile where its tiles fill half the SMs:
    # 4095^3 0.593 (1.53x) against 128x128's 0.670, 4096x50257x1023 2.446 / 2.783 (SM80 2.695); in
    # the sweep of the unaligned classes it was fastest at 77 / 75 / 24 points of bf16 rr / cr / cc
    # (0.84-0.91x there without it), 9 of rc (0.91x) and 55 of f16 rr (0.91x): registered for bf16
    # rr, cr, cc and f16 rr (bf16 cc since session 37: fastest at 8 of 895 problems of its unaligned
    # classes, by 11% geomean).
    # These store D from registers (any_output: N = 1001 leaves D unaligned too). Where D is aligned
    # (odd K: A's rows unaligned) the same mainloop with CUTLASS's TMA epilogue: 1000x3000x777 rr
    # 0.033 ms (1.85x) against 0.045, 1000x1000x777 0.021 / 0.026, 96x50256x263 0.031 (1.48x) /
    # 0.045 (the element-by-element stores took a third of the consumers' time, ncu): for bf16 in
    # every layout, f16 with A row-major (x @ W and x @ W.T with an odd K), the
    # 128x256x32 tile for bf16 rr (4096x4096x4095 0.523 ms against 0.577). Left out for the build's
    # time until session 37, each fastest at few points of the sweep (its runner-up: the SM80 kernel
    # below, or the any-output twin). Re-swept then: f16 cr any-output fastest at 216 of 3284 problems
    # of its unaligned classes, by 1.30x geomean (up to 2.9x: D by TMA has no f16 cr twin), f16 cc at 49
    # of 1059 (1.6%), D by TMA for bf16 cr (an odd M only) at 4 of 145 (0.6%).
    for dtype, la_lb in itertools.product(["bf16", "f16"], LAYOUTS):
        kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 128, 64), (1, 1), "coopstaged",
                              "persistent", any_output=True))
        if la_lb in (("rr", "cr", "cc") if dtype == "bf16" else ("rr",)):
            kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 256, 32), (1, 1), "coopstaged",
                                  "persistent", any_output=True))
        if dtype == "bf16" or la_lb[0] == "r":
            kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 128, 64), (1, 1), "coopstaged", "persistent"))
        if dtype == "bf16" and la_lb == "rr":
            kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 256, 32), (1, 1), "coopstaged", "persistent"))
            # 128x192 for problems whose tiles of it fill one wave of SMs, where 128x256 leaves SMs
            # idle: 1000x3000x777 rr in 128 tiles of 128x192 against 96 of 128x256, 0.031 ms (2.00x
            # cuBLAS) against 0.033. Per flop it is 13% behind 128x256 (4096^3 less one: 0.665 ms
            # against 0.521), so it is for one wave only (CutlassSm90Gemm::priority).
            kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 192, 32), (1, 1), "coopstaged", "persistent"))
        # 128x64 for problems whose tiles of it fit one wave, where 128x128 leaves SMs idle: H100,
        # bf16 rr, ms against 128x128 (x cuBLAS): 777^3 0.024 / 0.028 (0.96x), 1001^3 any out 0.028 /
        # 0.032 (1.07x), 1024x1001x1024 0.025 / 0.030 (1.28x), 1001x1001x8191 0.142 / 0.164,
        # 1000x1000x777 D by TMA 0.019 / 0.021 (1.47x), 1024x1024x1023 0.021 / 0.025; behind where
        # its tiles take more than one wave (512x3000x777 0.032 / 0.022). For x @ W (rr) and x @ W.T
        # (rc), both epilogues.
        if dtype == "bf16" and la_lb in ("rr", "rc"):
            for any_output in (True, False):
                kernels.append(Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 64, 64), (1, 1), "coopstaged",
                                      "persistent", any_output=any_output))
    # The same problems on CUTLASS 2.x tensor op, element alignment, register-staged 2-stage
    # mainloop (cp.async cannot move 2 bytes; cpp/cutlass_sm80_gemm.cuh): behind the staged kernels,
    # ahead of them only where a table measured it. Two tiles: 128x128, and 128x256 for problems of
    # more than one tile row (CutlassSm80Gemm::priority).
    # (f16 cr and cc: 128x128 only; the 128x256 tile was fastest at 5 and 2 points of the sweep, by 10-15%.)
    for dtype, la_lb, tile in itertools.product(["bf16", "f16"], LAYOUTS, [(128, 128, 32), (128, 256, 32)]):
        if not (dtype == "f16" and la_lb in ("cr", "cc") and tile[1] == 256):
            kernels.append(sm80(dtype, la_lb, tile))
    # Small aligned bf16 / fp16 problems (under 2^24 flop) on 64x64x32 tiles of 2x2 warps, 6 stages of 16-byte
    # cp.async (CUTLASS's GenerateSM80_TensorOp_16816 tile), where a 128-row wgmma tile is mostly padding: ahead of
    # the SM90 kernels there (CutlassSm80Gemm::priority). H200, session 46, over session 42's survey problems under
    # 2^31 flop that ran SM90 kernels, by name in shuffled rounds: 1.14-1.24x the speed of auto's SM90 kernel below
    # 2^24 flop, 0.80-0.89x above 2^28. On the registered build, the 99 bf16 / 79 fp16 problems the rule gives them:
    # 1.135x / 1.175x the SM90 kernel in the same rounds, 0.88x -> 1.00x / 0.87x -> 1.03x torch.matmul.
    for dtype, la_lb in itertools.product(["bf16", "f16"], LAYOUTS):
        kernels.append(sm80(dtype, la_lb, (64, 64, 32), (32, 32, 32), stages=6, alignment=8))
    # tf32 at any alignment on the same templates (precision="tf32" with K = 777 or N = 4095, which ran the IEEE
    # SIMT kernels before): mma.sync m16n8k8, operands rounded to nearest on their way to it, the cp.async
    # multistage mainloop moving one fp32 element (4 bytes) at a time, CUTLASS's library tiles for it
    # (GenerateSM80_TensorOp_1688): 128x128x32 and 128x256x32 in 3 stages. Ahead of SIMT from one k tile of K up
    # (CutlassSm80Gemm::priority). H200, session 45, over session 42's survey problems that ran unaligned tf32
    # on SIMT, K >= 32: 0.40x -> 0.82x torch.matmul; error vs float64 at most 4.5e-4 over 315 problems.
    for la_lb, tile in itertools.product(LAYOUTS, [(128, 128, 32), (128, 256, 32)]):
        kernels.append(sm80("tf32", la_lb, tile, stages=3))
    # ... and small tf32 problems, aligned or not, on 64x64 tiles of 2x2 warps, k tiles of 16 in 6 stages: what cuBLAS
    # runs there (CUTLASS's cutlass_80_tensorop_s1688gemm_64x64_16x6, split-K), where a 128-row wgmma tile is mostly
    # padding. 16 bytes a copy for aligned operands (a4), 4 for any (a1). H200, session 45, over session 42's survey
    # problems under 2^31 flop (CutlassSm80Gemm::priority's region): the 314 aligned ones (SM90 before) 0.72x -> 1.05x
    # torch.matmul on the final build (4 x 16 x 1024 rr 27 us -> 7), the unaligned ones 0.73x -> 1.03x (SIMT or the
    # 128-row tiles before; all sizes).
    for alignment, la_lb in itertools.product([4, 1], LAYOUTS):
        kernels.append(sm80("tf32", la_lb, (64, 64, 16), (32, 32, 16), stages=6, alignment=alignment))
    # IEEE fp32 on CUDA cores: 128x128 (split-K for few tiles, the large-K workload) and 128x256 with
    # 64x64 warp tiles, 5 stages (CUTLASS's SM80 SIMT tile; 0.95-1.00x cuBLAS SGEMM where 128x128 ran
    # 0.81-0.87x: CutlassSimtGemm::priority).
    for la_lb in LAYOUTS:
        kernels += [simt(la_lb), simt(la_lb, (128, 256, 8), (64, 64, 8), 5)]
    # fp32 as tf32x3 (precision="tf32x3"; cpp/sm90_tf32_smem_rewrite_mainloop.cuh): each operand split
    # into tf32 big and small parts in shared memory, three products. The tensor cores' sums are added
    # to an fp32 one every k tile (promote=1): unpromoted they truncate (H100, transposed A, rand: 8.6e-5
    # against cuBLAS SGEMM's 6.0e-7); every 4 k tiles 1.0e-6, every 2 4.1e-7 at 1024x1024x4096 (SGEMM
    # 2.2e-7), every tile 1.9e-7 at the same speed. Two accumulators need 128x128 tiles; stream-K splits
    # long K (the large-K workload: 1.5e-7 where the persistent kernel's one fp32 chain of 16384 adds
    # gives 1.7e-6) and fills the SMs with few tiles. Where an operand is K-major its big part is read
    # truncated where TMA left it ("cooptrunc": no write-back; the other operand rounds): 2-4% faster,
    # as accurate (H100 4096^3 rc 1.396 -> 1.349 ms, 2.01x SGEMM; notes/measurements.md, session 21).
    # Where A is K-major (rr, rc) or both operands are MN-major (cr), A is split in registers and the
    # products' wgmmas take it from there ("coopregistera"): shared memory then moves ~45% fewer bytes a
    # k tile (no A small parts written or read by the wgmmas). H100, ms (x SGEMM), against the split in
    # shared memory: 4096^3 rc 1.239 (2.18x) / 1.336, rr 1.323 / 1.357, cr 1.363 / 1.393, transposed B
    # 1.228 / 1.325, transposed A 1.353 / 1.384, large K (stream-K) 0.664 / 0.684. With an MN-major A
    # and a K-major B (cc) A's fragments come from an MN-major tile with 2-way bank conflicts: 1.448
    # against 1.340 (notes/measurements.md, session 29).
    for la_lb, scheduler in itertools.product(LAYOUTS, ["persistent", "streamk"]):
        schedule = "cooptrunc" if la_lb == "cc" else "coopregistera"
        kernels.append(Kernel("sm90", "tf32x3", la_lb[0], la_lb[1], (128, 128, 32), (1, 1), schedule, scheduler,
                              promote=1))
    return kernels
