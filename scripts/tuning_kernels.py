"""The tuning candidates: kernels built beside the package's own (scripts/generate_kernels.py --tuning;
CMake -DPYCUTLASS_GEMM_TUNING=ON) so the benchmark can set them side by side, each with what was
measured of it. One moves into scripts/registered_kernels.py only when a run shows it beats what
auto picks now (notes/measurements.md).
"""
import itertools

from generate_kernels import LAYOUTS, Kernel, simt, sm80


def candidates():
    """The candidates, grouped by what they were built to try."""
    sk = lambda dtype, tile, cluster=(1, 1), scheduler="streamk": Kernel("sm90", dtype, "r", "r", tile, cluster, "coop",
                                                                          scheduler)
    return [  # large K: fewer, wider tiles re-read less of A and B; a cluster multicasts B
        sk("bf16", (128, 256, 64)), sk("bf16", (256, 128, 64)), sk("bf16", (128, 128, 64), (2, 1)),
        sk("tf32", (128, 128, 32)), sk("tf32", (256, 128, 32)),
        # K split in parallel with 128x128 tiles in 2x1 clusters: 0.355 ms at 256x256x524288, where
        # 128x256 c2x1 and 128x128 c1x1 (registered) ran 0.207 and 0.237
        sk("bf16", (128, 128, 64), (2, 1), "splitk"),
        # K split in parallel over the whole 256x256 output a cluster (A multicast to both N tiles: each
        # operand crosses L2 once), and 128x64 tiles with k tiles of 128 (256 bytes of a row a load). H100,
        # ms at 256x256x131072 / 524288 (session 31): 256x128 c1x2 0.069 / 0.207, 128x64x128 c1x2 0.068 /
        # 0.226-0.231, against the registered 128x64 c1x2's 0.068 / 0.238 and 128x256 c2x1's 0.069 / 0.208
        # (cuBLAS 0.063 / 0.214): no better than what auto runs
        sk("bf16", (256, 128, 64), (1, 2), "splitk"), sk("bf16", (128, 64, 128), (1, 2), "splitk"),
    ] + [  # K split in parallel where it did not pay (H100, ms): x @ W.T with few rows (rc) 128x128
        # 0.028 / 0.031 at 16 / 128 x 4096 x 4096 against the swap-AB stream-K's 0.026 / 0.030 (128x256:
        # 0.042 / 0.047); weight gradients (cr) 128x128 0.253 at 1024x1024x65536 where 128x256 c2x1
        # (registered) ran 0.184; tf32x3 rr 0.719 at 256x256x524288 against stream-K's 0.696
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 128, 64), (1, 1), "coop", "splitk") for la_lb in ("rc", "cr")
    ] + [
        Kernel("sm90", "tf32x3", "r", "r", (128, 128, 32), (1, 1), "coop", "splitk", promote=1),
    ] + [  # x @ W.T over 64-128 tokens (rc), the 128x64 / 128x128 tiles in clusters of 1x2 with K split in
        # parallel so that they fill all SMs, not half: slower (H100, ms, against 128x64 c1x2 persistent's
        # 0.023 / 0.027 / 0.064 at 128x4096x4096 / 64x4096x4096 / 128x4096x14336): 128x64 0.036 / 0.033 /
        # 0.069, 128x128 0.038 / 0.031 / 0.071 (cuBLAS 0.023 / 0.022 / 0.061). Much of that was the pass
        # adding the slices (13.8 us for 128 x 4096 outputs of 2 slices: 64-bit divisions); with session 27's
        # pass (3.5 us), against 128x64 c1x4 persistent (auto): 128x64 0.023 / 0.025 / 0.056 (the product
        # 18.0 us at 128x4096x4096, c1x4's 20.2), 128x128 0.024 / 0.023 / 0.058, and in clusters of 1x4
        # 0.027 / 0.027 / 0.069 (c1x4 persistent 0.021 / 0.022 / 0.059, cuBLAS 0.022 / 0.022 / 0.061)
        Kernel("sm90", "bf16", "r", "c", tile, (1, 2), "coop", "splitk") for tile in ((128, 64, 64), (128, 128, 64))
    ] + [
        Kernel("sm90", "bf16", "r", "c", (128, 64, 64), (1, 4), "coop", "splitk"),
    ] + [  # x @ W.T over 64-128 tokens on 128x32 tiles: 128 N tiles of a 4096-wide W fill the SMs without
        # a split, the tokens multicast to the cluster's N tiles. H100, bf16 rc, x cuBLAS, c1x2 / c1x4 against
        # the registered 128x64 c1x4: 128x4096x4096 1.05 / 0.78 / 1.02, 128x4096x14336 1.08 / 0.75 / 1.03,
        # 128x14336x4096 0.95 / 1.01 / 1.09, 128x11008x4096 1.00 / 1.06 / 1.07, 64x4096x4096 0.63 / 0.70 /
        # 1.00, 256x4096x4096 0.80 / 0.66 / 0.72: ahead by a few percent at two shapes, behind elsewhere
        Kernel("sm90", "bf16", "r", "c", (128, 32, 64), cluster, "coop", "persistent") for cluster in ((1, 2), (1, 4))
    ] + [  # ... and the tokens multicast wider (session 52, H200, bf16 rc over 64-128 tokens, 21 problems of seven layer
        # shapes, x torch.matmul): 128x32 in clusters of 1x8 0.60-0.84 (0.66 at 128x4096x4096, auto's 128x64 c1x4
        # 0.94); 64x64 ping-pong in clusters of 2x2 (W to two M tiles, X to two N tiles) 0.69-0.96 (0.72 there), behind
        # the registered 64x64 c2x1 at 15 of 21 and never ahead of the fastest registered kernel
        Kernel("sm90", "bf16", "r", "c", (128, 32, 64), (1, 8), "coop", "persistent"),
        Kernel("sm90", "bf16", "r", "c", (64, 64, 64), (2, 2), "pingpong", "persistent"),
    ] + [  # decode-time x @ W.T as D^T = W x^T (swap AB), K split in parallel instead of stream-K
        Kernel("sm90", "bf16", "r", "c", (128, 32, 128), (1, 1), "coop", "splitk", swap_ab=True),
    ] + [  # tf32 long K with 128x128 tiles, K split in parallel: 0.127 ms at 128x128x262144 against
        # stream-K 128x128's 0.123 (the registered 128x256 c2x1 0.179: half its tile padding)
        Kernel("sm90", "tf32", "r", "r", (128, 128, 32), (1, 1), "coop", "splitk"),
    ] + [  # bf16 parity on big shapes (issue 10): cuBLAS runs 256x128 tiles with clusters of 1x2 there.
        # H100, x cuBLAS, against the package's 128x256 c2x1 (swizzle 8): 1x2 equal or 0.01 behind
        # at 4096^3, 8192^3, 8192x14336x4096 rc, 8192x4096x14336 rr, and 0.42x at 8192x1024x4096 rc;
        # 2x1 0.02-0.08 behind everywhere (session 39, 1x2: 4096^3 rr / rc 0.98 against 0.99). And 1x2 in cr, for
        # weight gradients with few columns, where 256x128 tiles fill the waves as 128x256 ones cannot
        # (8960x896x6000 cr: 245 tiles, 1.9 waves, against 280 padded ones, 2.1): 0.72x cuBLAS there (session 39),
        # ahead of 128x128 c1x2's 0.60x and behind the registered 128x256 stream-K's 0.76x
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (256, 128, 64), cluster, "coop", "persistent")
        for la_lb, cluster in itertools.product(("rr", "rc", "cr"), ((1, 2), (2, 1))) if (la_lb, cluster) != ("cr", (2, 1))
    ] + [  # bf16 128x192 tiles by TMA in clusters of 1x1 (the package registers 2x1): H100, x cuBLAS,
        # 3072^3 rr / rc / cr 0.82 / 0.79 / 0.80 against 2x1's 0.95 / 0.91 / 0.95
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 192, 64), (1, 1), "coop", "persistent")
        for la_lb in ("rr", "rc", "cr")
    ] + [  # bf16 batched products with a narrow side (issue 10), beside the registered 128x64 coop:
        # H100, x cuBLAS, 32x(1024x64x1024) / 32x(2048x64x2048) / 8x(4096x64x4096) rr: pingpong
        # 0.99 / 1.01 / 1.00 (coop 1.00 / 1.01 / 1.00); 128x128 coop persistent 0.95 / 0.96 / 0.94,
        # at N = 128 0.99 (stream-K 128x128 0.97)
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], tile, (1, 1), schedule, "persistent")
        for la_lb in ("rr", "rc") for tile, schedule in (((128, 64, 64), "pingpong"), ((128, 128, 64), "coop"))
    ] + [  # bf16 128x64 coop for rc and cc (the package registers rr and cr)
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 64, 64), (1, 1), "coop", "persistent") for la_lb in ("rc", "cc")
    ] + [  # Kernels another layout has and these lack, by the H100 sweep (session 38: aligned problems where a
        # layout's best kernel is > 10% behind another layout's best at the same m, n, k; not yet timed):
        # bf16 cc trails on 606 (1.36x geomean), 242 of them won by rr / cr's 128x64 c1x1 / c1x2 tiles; cr
        # trails on 156, 23 of them won by rr's 128x64 c1x2 split-K (the rest by the small-M/N kernel,
        # which reads K-major operands only)
        Kernel("sm90", "bf16", "c", "c", (128, 64, 64), (1, 2), "coop", "persistent"),
        Kernel("sm90", "bf16", "c", "r", (128, 64, 64), (1, 2), "coop", "splitk"),
    ] + [  # bf16 128x64 tiles beside the registered c1x2 coop (H100, 1024x1024x4096 cr, ms: c1x2 0.022):
        # ping-pong c1x2 0.022-0.023, coop c2x2 and c1x4 0.030 (bigger clusters pack the SMs worse),
        # K split in parallel in 2x2 clusters 0.083 at 256x256x131072 (c1x2: 0.068)
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 64, 64), (1, 2), "pingpong", "persistent")
        for la_lb in ("rr", "cr")
    ] + [
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 64, 64), cluster, "coop", "persistent")
        for la_lb in ("rr", "cr") for cluster in ((2, 2), (1, 4))
    ] + [
        Kernel("sm90", "bf16", "r", "r", (128, 64, 64), (2, 2), "coop", "splitk"),
    ] + [  # the same 128 tiles of 1024 x 1024 as 64x128 (ping-pong: a warpgroup a tile; wgmma N 128 reads
        # half the shared memory a flop of N 64's): c1x1 0.026 ms, c2x1 0.023 (128x64 c1x2: 0.022);
        # K split in parallel 0.068 at 256x256x131072, as 128x64 c1x2
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (64, 128, 64), cluster, "pingpong", "persistent")
        for la_lb in ("rr", "cr") for cluster in ((1, 1), (2, 1))
    ] + [
        Kernel("sm90", "bf16", "r", "r", (64, 128, 64), (2, 1), "pingpong", "splitk"),
        # ... and cuBLAS's own tile at 256 x 256 x K <= 65536 (nvjet 64x64 2x1 split-K: 11.2 us at K = 32768 on the H100,
        # where our 128x64 c1x2 split takes 15.9; session 58's profile). Written in session 58, compiled for sm_90a
        # only, not yet timed
        Kernel("sm90", "bf16", "r", "r", (64, 64, 64), (2, 1), "pingpong", "splitk"),
    ] + [  # tf32 with A and B MN-major (transposed A): other shapes of the register-sourced path beside the
        # registered 256x128 c1x2 (its c2x1 twin ran within 1%: 2048x4096x8192 0.498 / 0.497 ms)
        Kernel("sm90", "tf32", "c", "r", (128, 128, 32), (1, 1), "pingpong", "persistent"),
        Kernel("sm90", "tf32", "c", "r", (256, 128, 32), (2, 1), "coop", "persistent"),
        Kernel("sm90", "tf32", "c", "r", (128, 256, 32), (1, 1), "coop", "persistent"),
    ] + [  # tf32 with MN-major operands transposed in shared memory (cpp/sm90_tf32_smem_rewrite_mainloop.cuh):
        # registered for cr until session 28, when the register-sourced mainloop with wide TMA boxes
        # passed it (transposed A 0.526 ms against 0.534); for one MN-major operand (H100, x cuBLAS, 3
        # stages: 4096^3 rr 0.63 / cc 0.77 against the register-sourced 0.82; large K rr stream-K 1.17 / 1.12)
        Kernel("sm90", "tf32", la_lb[0], la_lb[1], (128, 256, 32), cluster, "cooptranspose", scheduler)
        for la_lb in ("rr", "cr", "cc") for scheduler, cluster in (("persistent", (2, 1)), ("streamk", (1, 1)))
    ] + [  # unaligned bf16 (tracker issue 10: 1000x3000x777 rr, 2048x1001x2048 rr): other tiles of the
        # alignment-1 register-staged kernel: 128x256 / 256x128 with 8 warps of 64x64; warp tiles of
        # 64x32 / 32x64 (162 / 182 registers instead of 255, so more warps per SM)
        sm80("bf16", "rr", (256, 128, 32), (64, 64, 32)),
        sm80("bf16", "rr", (128, 128, 32), (64, 32, 32)), sm80("bf16", "rr", (64, 128, 32), (32, 64, 32)),
        sm80("bf16", "rr", (128, 64, 32), (64, 32, 32)),
    ] + [  # unaligned bf16 inputs on wgmma, the producer loading pairs through registers
        # (cpp/sm90_ldg_mainloop.cuh; right on the H100, notes/measurements.md, session 12): slower than
        # SM80 everywhere (1000x3000x777 rr 0.073 ms against 0.056), and than the staged kernels.
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 128, 64), (1, 1), "coopldg", "persistent", any_output=True)
        for la_lb in LAYOUTS
    ] + [  # the staged mainloop with stream-K: 1000x3000x777 rr 0.048 ms, 777^3 0.029, against the
        # persistent 128x128's 0.046 and 0.027
        Kernel("sm90", "bf16", "r", "r", (128, 128, 64), (1, 1), "coopstaged", "streamk", any_output=True),
    ] + [  # ... and with D by TMA: 1000x3000x777 rr has 96 tiles of 128x256 for 132 SMs
        Kernel("sm90", "bf16", "r", "r", tile, (1, 1), "coopstaged", "streamk") for tile in ((128, 256, 32), (128, 128, 64))
    ] + [  # ... and 128x192 tiles with B K-major (rr is registered): 1000x3000x777 rc 0.040 ms against
        # 128x128's 0.042; 2048x2048x2047 rc 0.167 / 0.088 (176 tiles: two waves)
        Kernel("sm90", "bf16", "r", "c", (128, 192, 32), (1, 1), "coopstaged", "persistent")
    ] + [  # bf16 192x192 tiles in clusters of 2x1, the warpgroups splitting N (192 x 96 each): cuBLAS's tile at
        # 3072^3 (nvjet_sm90_tst_192x192_64x3_2x1_v_bz_coopB, 0.075 ms rc), where 128x192 c2x1 runs 0.084;
        # 256 tiles of 3072^3 fill two waves of 132 SMs 97%. An MN-major B (rr, cr) in 64-byte swizzle atoms (32
        # columns) so each warpgroup's 96 columns are whole atoms. 168 registers, no spills, 3 stages; right on
        # the H100 but behind 128x192 c2x1 everywhere (ms, x cuBLAS): 3072^3 rr / rc / cr / cc 0.088 (0.86-0.89)
        # against 0.082-0.084, 6144^3 0.606-0.624 (0.91-0.92) against 128x256's 0.562-0.566, 4096^3 0.227 (0.75).
        # Each warpgroup reads three 64x16 blocks of A and a 96x16 one of B a k step: a quarter more shared
        # memory a flop than 128x192's 64x16 and 192x16 (cuBLAS's may run three consumer warpgroups).
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (192, 192, 64), (2, 1), "coopsplitn", "persistent")
        for la_lb in LAYOUTS
    ] + [  # 4- and 8-byte aligned bf16: cp.async multistage (CUTLASS generator: GenerateSM80_TensorOp_16816)
        sm80("bf16", "rr", (128, 128, 32), (64, 64, 32), stages=4, alignment=2),
        sm80("bf16", "rr", (128, 128, 32), (64, 64, 32), stages=4, alignment=4),
    ] + [  # IEEE fp32: other SIMT tiles of CUTLASS's GenerateSM80_Simt_f32 (128x256 w64x64 s5 joined the
        # package; on the H100 256x128 ran 0.98x / 0.94x cuBLAS at 4096^3 rr / rc, 128x128 with 5 stages
        # 0.90x / 0.82x, 128x128x16 0.85x / 0.67x)
        simt(la_lb, tile, warp, stages) for la_lb in ("rr", "rc")
        for tile, warp, stages in [((256, 128, 8), (64, 64, 8), 5), ((128, 128, 8), (32, 64, 8), 5),
                                   ((128, 128, 16), (32, 64, 16), 4)]
    ] + [  # decode-time x @ W.T (1-32 tokens) as D^T = W x^T on 64-row tiles of W, one warpgroup a tile
        # (ping-pong), no split: W streamed by TMA through a deep ring of stages on 64 SMs at 4096 rows,
        # as cuBLAS's 128x16 split-K tiles with 11 stages do (notes/measurements.md, session 25). H100, us,
        # against small_mn (auto) and cuBLAS in the same run: 16x4096x4096 64x16x128 20, 64x16x256 20,
        # 128x16x128 19 (small_mn 18, cuBLAS 22); 32x4096x4096 64x32x128 20 (small_mn 21, cuBLAS 21);
        # 16x28672x8192 64x16x256 173 (swap-AB stream-K 178, cuBLAS 180); 64x4096x4096 64x32x128 25
        # (128x64 c1x4 22). Not registered: within ~5% of what auto runs, ahead only at 17-32 tokens.
        Kernel("sm90", "bf16", "r", "c", tile, (1, 1), "pingpong", "persistent", swap_ab=True)
        for tile in ((64, 16, 128), (64, 32, 128), (64, 16, 256))
    ] + [
        Kernel("sm90", "bf16", "r", "c", (128, 16, 128), (1, 1), "coop", "persistent", swap_ab=True),
    ] + [  # tf32 128x128 tiles in clusters of 2x1 beside the registered 1x2 one-wave pairs (rc, cc): H100, ms,
        # 2x1 / 1x2, 1024x2048x4096 rc 0.053 / 0.051, cc 0.054 / 0.052; 2048x1024x4096 rc 0.054 / 0.051,
        # 1024x2048x8192 rc 0.102 / 0.097, cc 0.104 / 0.096 (ahead only from two waves, where 128x256 leads)
        Kernel("sm90", "tf32", la_lb[0], la_lb[1], (128, 128, 32), (2, 1), "coop", "persistent") for la_lb in ("rc", "cc")
    ] + [  # the TMA epilogue's store() written out by hand (cpp/sm90_lean_tma_epilogue.cuh): twins of registered
        # cooperative kernels, for the build budget: 8-12 s less a unit on 16 cores (of 52-72), right (71 GPU
        # tests), but slower than their twins (H100, session 34, bench, two interleaved runs, with ldmatrix /
        # stmatrix): 4096^3 rc / rr +0.6%, 8192x14336x4096 rc +0.8%, 3072^3 cc +1.8%, 2048x4096x8192 cr fp16
        # +0.0%, tf32 +0.3-0.4%, 1024x2048x4096 rc on 128x128 c1x2 +3.3%, 256x256x8192 stream-K +5%
        Kernel("sm90", dtype, la_lb[0], la_lb[1], tile, cluster, "coop", scheduler, lean_store=True)
        for dtype, la_lb, tile, cluster, scheduler in [
            ("bf16", "rc", (128, 256, 64), (2, 1), "persistent"), ("bf16", "rr", (128, 256, 64), (2, 1), "persistent"),
            ("f16", "cr", (128, 256, 64), (2, 1), "persistent"), ("bf16", "cc", (128, 192, 64), (2, 1), "persistent"),
            ("bf16", "rc", (128, 128, 64), (1, 2), "persistent"), ("bf16", "rr", (128, 128, 64), (1, 1), "streamk"),
            ("tf32", "rc", (128, 256, 32), (2, 1), "persistent"), ("tf32", "cr", (256, 128, 32), (1, 2), "persistent")]
    ] + [  # bf16 parity on big shapes (issue 10) with one warpgroup a tile (ping-pong: one warpgroup's epilogue
        # under the other's mainloop; ncu, session 35: the cooperative 128x256's consumers stall on barriers
        # 1.4-4x as often as cuBLAS's nvjet kernels, which take 2.5-6% fewer cycles at locked clocks). Right (GPU
        # tests) and slower everywhere. H100, x cuBLAS, 128x128 c2x1 / 128x128 c1x2 / 64x256 c2x1 against the
        # registered cooperative 128x256 c2x1: 4096^3 rr 0.85 / 0.79 / 0.81 (0.99), rc 0.85 / 0.79 / 0.80 (0.99),
        # 8192^3 rr 0.92 / 0.86 / 0.85 (1.01), 8192x14336x4096 rc 0.84 / 0.96 / 0.83 (0.97), 6144^3 rc 0.78 /
        # 0.76 / 0.75 (0.99), 2048^3 rr 0.91 / 0.82 / 0.85 (0.97), 8192x4096x14336 rr 0.88 / 0.80 / 0.75 (0.99)
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], tile, cluster, "pingpong", "persistent")
        for la_lb in ("rr", "rc") for tile, cluster in (((128, 128, 64), (2, 1)), ((128, 128, 64), (1, 2)),
                                                      ((64, 256, 64), (2, 1)))
    ] + [  # bf16 128x320 tiles in clusters of 2x1 (cuBLAS runs 320x128 at 8192x14336x4096 rc in its column-major
        # terms, nvjet_sm90_tst_320x128_64x3_1x2: 128x256 tiles leave that problem's last wave 15% full, 3584
        # tiles for 132 SMs, 128x320 ones 82%, 2880). Right (GPU tests), and slower everywhere: the wgmmas are
        # 64x160 (N = 320 takes two), 3 mainloop stages. H100, x cuBLAS against 128x256 c2x1's (same run):
        # 8192x14336x4096 rc 0.83 (0.97), rr 0.86 (0.97), 4096x14336x4096 rc 0.91 (0.98), 8192x28672x4096 rc
        # 0.89 (0.98), 8192x4096x14336 rr 0.87 (0.99), 4096^3 rc 0.73 (0.99), 8192^3 rr 0.93 (1.02)
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 320, 64), (2, 1), "coop", "persistent") for la_lb in ("rc", "rr")
    ] + [  # the builder's cooperative epilogue with each TMA store issued one subtile later (CUTLASS's DelayTmaStore,
        # which its builder sets only without a C) on stream-K 128x128: right (GPU tests), equal to the undelayed
        # kernel (H100, session 35: 256x256x8192 rr 0.021 ms, 512x512x8192 0.028). The persistent 16-bit kernels
        # delay (cpp/cutlass_sm90_gemm.cuh, kMeasuredDelayStore: 128x256, 192x192, and since session 36 128x192
        # c2x1, 128x128 c1x2 and 128x64 c1x2, measured as candidates: equal or ahead by a digit of the bench's three)
        Kernel("sm90", "bf16", "r", "r", (128, 128, 64), (1, 1), "coop", "streamk", delay_store=True)
    ] + [  # bf16 x @ W.T (rc) over 512-1024 tokens beside the fill tiles registered in session 41 (registered_kernels.py:
        # 128 x 80 / 160 / 176 and 128x128 in clusters of 2x1). H200, session 41, x cuBLAS: 128x80 in clusters of 1x2
        # 0.84x at 512x2560x3072 (2x1: 0.88x), 128x96 c1x2 0.83x at 512x3072x4096 (128x128 c1x2 0.80x) and 0.76x at
        # 512x2560x3072, 128x64 in clusters of 4x1 0.90x at 1024x896x4096 (128x64 c1x2 0.84x) but 0.30x at
        # 128x4096x4096 (one M tile: three of a cluster's four CTAs idle)
        Kernel("sm90", "bf16", "r", "c", tile, cluster, "coop", "persistent")
        for tile, cluster in (((128, 80, 64), (1, 2)), ((128, 96, 64), (1, 2)), ((128, 64, 64), (4, 1)))
    ] + [  # ... and 128x80 in clusters of 2x1 with B MN-major (rr, cr): never the fastest over the 131 model shapes
        # (H200, session 41), 1.2-2.7x the time of the best kernel there
        Kernel("sm90", dtype, la_lb[0], la_lb[1], (128, 80, 64), (2, 1), "coop", "persistent")
        for dtype, la_lb in itertools.product(["bf16", "f16"], ["rr", "cr"])
    ] + [  # ... and 128x176 in clusters of 2x1 for rc (two waves where 128x192 leaves the second part idle): H200,
        # session 41, bf16, x cuBLAS 0.91x at 512x11008x4096 (128x192 0.85x), 3000x3584x8960 0.91x the time of
        # 128x256; the fill rule (kFillTile, gain 1.1) never puts it first: at most 7% less modelled time than 192
        Kernel("sm90", dtype, "r", "c", (128, 176, 64), (2, 1), "coop", "persistent") for dtype in ("bf16", "f16")
    ] + [  # tf32x3 with the layouts' other mainloop (registered_kernels.py: A split in registers or in shared memory)
        Kernel("sm90", "tf32x3", la_lb[0], la_lb[1], (128, 128, 32), (1, 1),
               {"rr": "cooptrunc", "rc": "cooptrunc", "cr": "coop", "cc": "coopregistera"}[la_lb], scheduler, promote=1)
        for la_lb, scheduler in itertools.product(LAYOUTS, ["persistent", "streamk"])
    ] + [  # small tf32 problems (session 45): cuBLAS runs CUTLASS's SM80 cutlass_80_tensorop_s1688gemm_64x64_16x6 with
        # split-K there (H200, 4 x 16 x 1024 rr: 3.1 us and a 1.6 us reduction, where the 128x128 tf32 ran 7.4 and SM90
        # stream-K 20); 64x64 tiles of 2x2 warps, k tiles of 16 in 6 stages or 32 in 5 (GenerateSM80_
        # TensorOp_1688's). 64x64x16 in 6 stages is registered; k tiles of 32 in 5 ran behind it (session 45, H200, rr,
        # the survey's small aligned tf32 problems at alignment 1: 0.90x torch.matmul against 0.94x)
        sm80("tf32", "rr", (64, 64, 32), (32, 32, 32), stages=5),
    ] + [  # small aligned 16-bit problems: the registered 64x64x32 a8 tile in 6 stages runs 2.8-3.0 us of GPU time at
        # K = 64-128 where cuBLAS's nvjet 64x8 tiles run 2.3-2.5 (H200, session 46). Fewer stages (a shorter prologue)
        # and k tiles of 64 (half the iterations) ran behind it (session 47, H200, the survey's 85 small bf16 rr
        # problems the tile runs, by name in the same rounds, speed against 6 stages, geomean): 3 stages 0.918x, 4
        # stages 0.976x, 64x64x64 in 4 stages 0.983x (1.00-1.01x under 2^24 flop, 0.96-0.98x above).
        sm80("bf16", "rr", (64, 64, 32), (32, 32, 32), stages=stages, alignment=8) for stages in (3, 4)
    ] + [
        sm80("bf16", "rr", (64, 64, 64), (32, 32, 64), stages=4, alignment=8),
    ] + [  # x @ W.T and dx over 129-256 tokens as cuBLAS tiles them (H200, session 53, torch.profiler: nvjet 64x72 at 136
        # rows, 64x96 at 176, 64x112 at 208, clusters of 2x1: two tiles of ceil(M / 2) rows by 64 of N): D^T tiles of 64
        # rows of W by 96 or 128 tokens (wgmma N), one consumer warpgroup a tile (ping-pong), the tokens multicast to
        # the cluster's two W tiles. Not yet timed (compiled for sm_90a only); they rank last by rule
        # (kSixtyFourRowsTransposed). 176 x 4096 x 4096 rr runs split-K 128x192 of D^T at 23.2 us, cuBLAS 17.8.
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (64, tokens, 64), (2, 1), "pingpong", "persistent", swap_ab=True)
        for la_lb, tokens in itertools.product(["rr", "rc"], [96, 128])
    ] + [  # ... and the registered split of 128x192 tiles of D^T (K in slices as a batch, fp32 partials, a pass adding
        # them: 176 x 4096 x 4096 rr 16.0 + 7.2 us in ncu, session 55, against cuBLAS's one 17.7 us kernel) with stream-K's
        # in-kernel fixup instead: 32 tiles of 64 k tiles each over the SMs, no second launch and no partials for all of
        # D. Session 58, H100, by name on the band grid (108 problems, 136-208 rows, rr / rc; worst error 1.8e-3): the
        # registered split or persistent 128x192 of D^T was faster at 107, geomean 0.82x their time (136 x 4096 x 4096
        # rc 34.8 us against the split's 25.2); ahead by 3% at one (208 x 11008 x 4096 rr, where every kernel is behind
        # cuBLAS). Not registered
        Kernel("sm90", "bf16", la_lb[0], la_lb[1], (128, 192, 64), (1, 1), "coop", "streamk", swap_ab=True)
        for la_lb in ("rr", "rc")
    ]
