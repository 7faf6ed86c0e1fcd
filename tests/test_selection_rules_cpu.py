"""The priority rules (no measured table) of each session, at problems they were judged on: what auto runs.
Past 400 lines: most of it is the sessions' tables of cases, one row a case."""

import pytest
import torch

import pycutlass_gemm as pg
from pycutlass_gemm import heuristics
from selection_helpers import meta, meta_operands, rules_choice


# Session 39's rules (cutlass_sm90_priority.cuh), each at a problem of the H100 sweep it was judged on:
# (m, n, k, layouts, dtype, precision, the kernel the rules run).
RULES_39 = [
    # 16-bit, K <= 2048, 128x256 tiles filling the waves poorly: the narrowest persistent tile, not stream-K (its
    # 1x2 pair since session 41; at session 39's 256 x 256 x 512 rr the 64x64 a8 tile runs since session 48)
    (1024, 1024, 512, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x64x64_c1x2_coop_persistent"),
    (256, 256, 512, "rc", torch.float16, None, "sm90_f16_rc_128x64x64_c1x2_coop_persistent"),
    # tf32 over K <= 512: the persistent kernel despite its poor waves (stream-K's split costs more; 2048 x 2048, not
    # session 39's 512 x 512, which runs the 64x64 SM80 tile since session 45)
    (2048, 2048, 256, "rr", torch.float32, "tf32", "sm90_tf32_rr_128x256x32_c2x1_coop_persistent"),
    (2048, 2048, 256, "cr", torch.float32, "tf32", "sm90_tf32_cr_256x128x32_c1x2_coop_persistent"),
    # long K over 128x256 tiles whose last wave is under half full (320 tiles): stream-K 128x256 ...
    (4096, 2560, 8192, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x256x64_c2x1_coop_streamk"),
    # ... not where the last wave is full (512 tiles) nor for short K
    (4096, 4096, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x256x64_c2x1_coop_persistent"),
    (4096, 2560, 1024, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x256x64_c2x1_coop_persistent"),
    # x @ W.T split in parallel for K > 8192 over at least 256 rows, ahead of the one-wave 128x64 c1x2
    (512, 2048, 16384, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x256x64_c2x1_coop_splitk"),
    (1024, 1024, 65536, "rc", torch.float16, None, "sm90_f16_rc_128x256x64_c2x1_coop_splitk"),
    # unaligned (K = 7) and shorter than a k tile: SM80's 128x128 tile, not the wide one
    (1000, 3000, 7, "rr", torch.bfloat16, None, "sm80_bf16_rr_128x128x32_a1_s2"),
]


RULES_40 = [
    # fp16's 128x256 stream-K twins take bf16's rule (kWideStreamK): long K, 320 tiles of 128x256
    (4096, 2560, 8192, "rr", torch.float16, None, "sm90_f16_rr_128x256x64_c2x1_coop_streamk"),
    (4096, 2560, 8192, "rc", torch.float16, None, "sm90_f16_rc_128x256x64_c2x1_coop_streamk"),
    (2560, 4096, 8192, "cr", torch.float16, None, "sm90_f16_cr_128x256x64_c2x1_coop_streamk"),
    # fp32 over K shorter than a k tile with fewer 128x256 tiles than SMs: SIMT (IEEE), not the tf32 kernels ...
    (1024, 4096, 4, "rr", torch.float32, "tf32", "simt_f32_rr_128x128x8_splitk"),
    (512, 8192, 4, "cr", torch.float32, "tf32", "simt_f32_cr_128x128x8_splitk"),
    (1024, 1024, 16, "rc", torch.float32, "tf32x3", "simt_f32_rc_128x128x8_splitk"),
    # ... but with many tiles the tf32 kernel stays (K 16 over 4096x4096: SIMT 1.50x slower)
    (4096, 4096, 16, "rc", torch.float32, "tf32", "sm90_tf32_rc_128x256x32_c2x1_coop_persistent"),
    # tf32 cr stream-K: 256x128 from 256 rows (few tiles), 128x256 below
    (1024, 1024, 8192, "cr", torch.float32, "tf32", "sm90_tf32_cr_256x128x32_c1x1_coop_streamk"),
    (64, 4096, 65536, "cr", torch.float32, "tf32", "sm90_tf32_cr_128x256x32_c1x1_coop_streamk"),
    # ... and ahead of the persistent 256x128 over 1-3 waves of its tiles with the last under half full:
    # 4608x4096 has 18 x 32 = 576 tiles, 4.4 waves (persistent); 2304x4096 288, 2.2 waves (stream-K)
    (2304, 4096, 4096, "cr", torch.float32, "tf32", "sm90_tf32_cr_256x128x32_c1x1_coop_streamk"),
    (4608, 4096, 4096, "cr", torch.float32, "tf32", "sm90_tf32_cr_256x128x32_c1x2_coop_persistent"),
    # tf32 rc / cc over K <= 1024 whose 128x256 tiles fill the waves poorly: 128x128 c1x2 (twice the CTAs; sizes
    # above session 40's 512 x 1024 and 256 x 256, which run the 64x64 SM80 tile since session 45)
    (1024, 2048, 512, "rc", torch.float32, "tf32", "sm90_tf32_rc_128x128x32_c1x2_coop_persistent"),
    (1024, 1024, 1024, "cc", torch.float32, "tf32", "sm90_tf32_cc_128x128x32_c1x2_coop_persistent"),
]


def test_the_tf32_narrow_tile_rule_leaves_longer_k_to_the_splits():
    narrow = "sm90_tf32_cc_128x128x32_c1x2_coop_persistent"
    if narrow not in {x["name"] for x in pg.kernels()}:
        pytest.skip(f"{narrow} is not in this build")
    a, b = meta(256, 4096, "col", torch.float32), meta(4096, 256, "col", torch.float32)
    assert rules_choice(a, b, "tf32") != narrow


PING_PONG_64_ROWS = [f"sm90_{d}_rc_64x{t}_pingpong_persistent" for d in ("bf16", "f16")
                     for t in ("64x64_c1x1", "64x64_c1x2", "128x64_c1x1")]


def test_64_row_ping_pong_tiles_run_where_the_table_says_never_by_rule():
    """By rule they rank last (kSixtyFourRows: 0.65x cuBLAS at 512x4096x4096 against 0.90x); the H100 table
    has them fastest at x @ W.T over 512 tokens with N = 768 (0.84-0.87x cuBLAS against 128x64 c1x4's 0.73x)."""
    if not set(PING_PONG_64_ROWS) <= {x["name"] for x in pg.kernels()}:
        pytest.skip("the 64-row ping-pong kernels are not in this build")
    for m, n, k in ((512, 768, 4096), (512, 768, 768), (1000, 768, 3072), (512, 4096, 4096)):
        for dtype in (torch.bfloat16, torch.float16):
            assert rules_choice(meta(m, k, dtype=dtype), meta(k, n, "col", dtype)) not in PING_PONG_64_ROWS
    if any(t["device"] == "NVIDIA H100 80GB HBM3" for t in heuristics.load_tables()):
        assert pg.plan(meta(512, 4096), meta(4096, 768, "col"), arch=90)["kernel"] in PING_PONG_64_ROWS


def test_the_rc_split_k_rule_leaves_few_rows_and_short_k_to_the_others():
    """x @ W.T split in parallel ran 1.2-1.3x slower at m <= 32 and 1.2-1.6x at k <= 4096 (session 39)."""
    split = "sm90_bf16_rc_128x256x64_c2x1_coop_splitk"
    if split not in {x["name"] for x in pg.kernels()}:
        pytest.skip(f"{split} is not in this build")
    for m, n, k in ((128, 2048, 16384), (512, 2048, 4096)):
        assert rules_choice(meta(m, k), meta(k, n, "col")) != split


RULES_41 = [
    # fill tiles (kFillTile): 128x160 in clusters of 2x1 where its N fills the waves (512x5120: 128 tiles against
    # 108 of 128x192 and 80 of 128x256), in every layout; 128x80 with B K-major (512x2560: 128 tiles against 80)
    (512, 5120, 3072, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x160x64_c2x1_coop_persistent"),
    (1000, 2560, 1024, "rc", torch.float16, None, "sm90_f16_rc_128x160x64_c2x1_coop_persistent"),
    (512, 5120, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x160x64_c2x1_coop_persistent"),
    (1024, 5120, 2048, "cr", torch.float16, None, "sm90_f16_cr_128x160x64_c2x1_coop_persistent"),
    (512, 2560, 3072, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x80x64_c2x1_coop_persistent"),
    # 128x128 pairs: clusters of 2x1 where 1x2 would launch a CTA beside an odd last N tile (7 and 13 N tiles) ...
    (2048, 896, 8960, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x128x64_c2x1_coop_persistent"),
    (1024, 1600, 1600, "rr", torch.float16, None, "sm90_f16_rr_128x128x64_c2x1_coop_persistent"),
    (2048, 896, 3000, "cr", torch.bfloat16, None, "sm90_bf16_cr_128x128x64_c2x1_coop_persistent"),
    # ... and 1x2 where both launch as many (512x4096: 4 x 32 tiles)
    (512, 4096, 4096, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x128x64_c1x2_coop_persistent"),
]


RULES_45 = [
    # unaligned tf32 from one k tile of K up: the SM80 tf32 kernels, not IEEE SIMT; the 128x256 tile where M and N
    # exceed 128 and its tiles fill half the SMs (1000x3000: 96 tiles), else 128x128 (2048x1001: 64; 96 rows) ...
    (1000, 3000, 777, "rr", torch.float32, "tf32", "sm80_tf32_rr_128x256x32_a1_s3"),
    (2048, 1001, 2048, "rc", torch.float32, "tf32", "sm80_tf32_rc_128x128x32_a1_s3"),
    (96, 50257, 264, "cr", torch.float32, "tf32", "sm80_tf32_cr_128x128x32_a1_s3"),
    (4095, 4095, 4095, "cc", torch.float32, "tf32", "sm80_tf32_cc_128x256x32_a1_s3"),
    # ... and SIMT below it (K = 15: a k tile of 32 is mostly padding) over more than two 64x64 tiles an SM ...
    (1024, 4096, 15, "rr", torch.float32, "tf32", "simt_f32_rr_128x128x8_splitk"),
    # ... but small problems (under 2^31 flop, at most two 64x64 tiles an SM or M or N <= 64) on the 64x64 tile,
    # with 16-byte copies where the operands allow, ahead of the SM90 kernels, behind gemv
    (4, 16, 1024, "rr", torch.float32, "tf32", "sm80_tf32_rr_64x64x16_w32x32_a4_s6"),
    (256, 256, 1024, "cc", torch.float32, "tf32", "sm80_tf32_cc_64x64x16_w32x32_a4_s6"),
    (4, 65536, 512, "rc", torch.float32, "tf32", "sm80_tf32_rc_64x64x16_w32x32_a4_s6"),
    (15, 255, 1023, "rc", torch.float32, "tf32", "sm80_tf32_rc_64x64x16_w32x32_a1_s6"),
    (64, 4096, 15, "rr", torch.float32, "tf32", "sm80_tf32_rr_64x64x16_w32x32_a1_s6"),
    (1, 4096, 4096, "rr", torch.float32, "tf32", "gemv"),
]


RULES_46 = [
    # small aligned bf16 / fp16 problems (under 2^24 flop, at most two 64x64 tiles an SM or M or N <= 64) on the
    # 16-bit 64x64x32 tile, ahead of the SM90 kernels, in every layout
    (64, 256, 256, "rr", torch.bfloat16, None, "sm80_bf16_rr_64x64x32_w32x32_a8_s6"),
    (256, 256, 64, "cc", torch.float16, None, "sm80_f16_cc_64x64x32_w32x32_a8_s6"),
    (48, 4096, 32, "rc", torch.bfloat16, None, "sm80_bf16_rc_64x64x32_w32x32_a8_s6"),
    (1024, 48, 128, "cr", torch.float16, None, "sm80_f16_cr_64x64x32_w32x32_a8_s6"),
]


RULES_48 = [
    # with an MN-major operand (rr / cr / cc) the 16-bit 64x64x32 tile up to 2^30 flop (random problems of session 48,
    # H200: 40 x 312 x 3288 cr 0.53x -> 1.18x torch.matmul, 32 x 1648 x 5072 rr 0.68x the a8 tile's speed before)
    (40, 312, 3288, "cr", torch.bfloat16, None, "sm80_bf16_cr_64x64x32_w32x32_a8_s6"),
    (32, 1648, 5072, "rr", torch.bfloat16, None, "sm80_bf16_rr_64x64x32_w32x32_a8_s6"),
    (144, 464, 7648, "cc", torch.float16, None, "sm80_f16_cc_64x64x32_w32x32_a8_s6"),
]


RULES_49 = [
    # x @ W.T and dx over 129-192 rows with K >= 4096 in slices of >= 1024: K split over 128x192 tiles of D^T (H200,
    # session 49: 160 x 4096 x 14336 rc bf16 1.00x torch.matmul against split-K 128x256's 0.89x; 176 x 4096 x 4096 rr
    # 0.86x against 0.78x)
    (160, 4096, 14336, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x192x64_c2x1_coop_splitk_swapab"),
    (176, 4096, 4096, "rr", torch.float16, None, "sm90_f16_rr_128x192x64_c2x1_coop_splitk_swapab"),
    # ... ahead of the fill tile 128x80 c2x1 (136 x 5120 x 5120 rc: 0.86x against its 0.57x)
    (136, 5120, 5120, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x192x64_c2x1_coop_splitk_swapab"),
]


RULES_50 = [
    # ... and over 97-128 rows (one 128-row tile row of D) with K >= 8192 where 128x64 tiles of D leave half the SMs
    # idle (H200, session 50, 128 rows: 128 x 4096 x 14336 rc bf16 0.97x torch.matmul against 128x64 c1x4's 0.90x;
    # 128 x 2048 x 8192 rc fp16 0.87x against 0.71x); dx only since session 52 (x @ W.T there: the 64-row pair), and
    # since session 55 only where the pair's CTAs fill less than a wave
    (128, 2048, 8192, "rr", torch.float16, None, "sm90_f16_rr_128x192x64_c2x1_coop_splitk_swapab"),
]


RULES_51 = [
    # x @ W.T and dx over 257-384 rows: 128x192 tiles of D^T (two tile rows of 192) where they use >= 70% of their
    # waves' slots (H200, session 51's reading of sessions 48-50: 272 x 8192 x 8192 rr bf16 0.80x torch.matmul against
    # auto's stream-K 0.43x; 272 x 14336 x 4096 rc 0.72x against 0.44x; 320 x 6144 x 4096 rc 96 tiles)
    (272, 8192, 8192, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x192x64_c2x1_coop_persistent_swapab"),
    (272, 14336, 4096, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x192x64_c2x1_coop_persistent_swapab"),
    (384, 6144, 4096, "rc", torch.float16, None, "sm90_f16_rc_128x192x64_c2x1_coop_persistent_swapab"),
    # dx over 97-128 rows: 128x64 tiles without a cluster in one wave, full or with K <= 4096 (session 50's 128 rows:
    # 128 x 8192 x 8192 rr 1.02x against stream-K's 0.87x; 128 x 4096 x 4096 0.92x against split-K's 0.85x)
    # (since session 55 only where the 64-row pair's CTAs take more than a wave: N > 4224)
    (128, 8192, 8192, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x64x64_c1x1_coop_persistent"),
    (112, 8192, 2048, "rr", torch.float16, None, "sm90_f16_rr_128x64x64_c1x1_coop_persistent"),
    # x @ W.T and dx over 257-384 rows with K >= 8192 where 128x192 tiles of D^T split K (N <= 4224): split-K there
    # (session 49's band-wide rc rows: 272 x 4096 x 14336 0.77x torch.matmul against 128x128 c1x2's 0.67x)
    (272, 4096, 14336, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x192x64_c2x1_coop_splitk_swapab"),
    (344, 4096, 11008, "rr", torch.float16, None, "sm90_f16_rr_128x192x64_c2x1_coop_splitk_swapab"),
    (384, 2048, 8192, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x192x64_c2x1_coop_splitk_swapab"),
]


RULES_52 = [
    # 64x64 tiles in clusters of 2x1 (kSixtyFourRowPair): dx over 33-64 rows in a wave of its CTAs with K >= 1024, over
    # more than two waves from 49 rows until session 53 (H200, 64 x 4096 x 4096 rr bf16 1.00-1.03x torch.matmul against the table's
    # split-K 128x128 0.76-0.79x; 40 x 4096 x 6144 0.97x against 0.86x; 56 x 11008 x 4096 1.02x against 0.81x) and
    # x @ W.T over 97-128 rows with K >= 8192 in one wave (128 x 4096 x 14336 rc 1.03-1.07x against split-K 128x192 of
    # D^T's 1.00x; until session 56 also N = 2048, half a wave: 112 x 2048 x 8192 0.81-0.83x against 0.80-0.81x)
    (64, 4096, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"),
    (48, 8192, 8192, "rr", torch.float16, None, "sm90_f16_rr_64x64x64_c2x1_pingpong_persistent"),
    (40, 4096, 6144, "rr", torch.bfloat16, None, "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"),
    (56, 11008, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"),
    (128, 4096, 14336, "rc", torch.bfloat16, None, "sm90_bf16_rc_64x64x64_c2x1_pingpong_persistent"),
]


RULES_53 = [
    # Over two 128-row tile rows (129-256 rows of x @ W.T and dx; H200, session 53, bf16 by name, x torch.matmul):
    # 128x128 tiles in clusters of 2x1, not 1x2, on a tie (208 x 8192 x 8192 rr 0.87x against 0.78x; 248 x 8192 x 2048
    # rr 0.99x against 0.88x) ...
    (208, 8192, 8192, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x128x64_c2x1_coop_persistent"),
    (248, 8192, 2048, "rr", torch.float16, None, "sm90_f16_rr_128x128x64_c2x1_coop_persistent"),
    (224, 6144, 4096, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x128x64_c2x1_coop_persistent"),
    # ... 128x192 tiles of D^T over 129-192 rows where they fill >= 60% of their waves' slots, K >= 4096 (176 x 14336 x
    # 4096 rr 1.02x against 128x256's 0.82x; 144 x 28672 x 8192 rc 0.85x against stream-K's 0.70x) ...
    (176, 14336, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x192x64_c2x1_coop_persistent_swapab"),
    (144, 28672, 8192, "rc", torch.float16, None, "sm90_f16_rc_128x192x64_c2x1_coop_persistent_swapab"),
    (160, 11008, 4096, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x192x64_c2x1_coop_persistent_swapab"),
    # ... x @ W.T split in parallel over 193-256 rows with K > 8192 (224 x 4096 x 14336 1.06x against 0.90x) ...
    (224, 4096, 14336, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x256x64_c2x1_coop_splitk"),
    # ... the 80-wide fill tile for x @ W.T over 193-256 rows with N about 4096, K <= 4096 (248 x 4096 x 4096 1.01x
    # against 128x64 c1x2's 0.91x) ...
    (248, 4096, 4096, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x80x64_c2x1_coop_persistent"),
    (200, 4096, 4096, "rc", torch.float16, None, "sm90_f16_rc_128x80x64_c2x1_coop_persistent"),
    # ... and the 64-row pair where its 4 x N / 64 CTAs fill one wave (N = 2048: 200 x 2048 x 2048 rr 1.02x against
    # 128x64 c1x1's 0.86x; 224 x 2048 x 8192 rc 1.06x against 0.93x)
    (200, 2048, 2048, "rr", torch.bfloat16, None, "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"),
    (224, 2048, 8192, "rc", torch.bfloat16, None, "sm90_bf16_rc_64x64x64_c2x1_pingpong_persistent"),
    (160, 2048, 2048, "rc", torch.float16, None, "sm90_f16_rc_64x64x64_c2x1_pingpong_persistent"),
    # The 64-row pair for dx over 33-48 rows over more than two waves of its CTAs too, since the rows past M are read
    # from memory (40 / 48 x 11008 x 4096 1.02 / 1.01x against auto's 0.83 / 0.74x)
    (40, 11008, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"),
    (48, 14336, 4096, "rr", torch.float16, None, "sm90_f16_rr_64x64x64_c2x1_pingpong_persistent"),
]


RULES_55 = [
    # The 64-row pair over 65-128 rows of x @ W.T and 80-128 of dx (one cluster row: B multicast and evict-first)
    # where its CTAs fill 90-100% of a wave with K >= 2048 (H200, session 55, bf16, x torch.matmul, same run: 96 / 128 x
    # 4096 x 4096 rc 1.24 / 1.14x against 128x64 c1x4's 1.07 / 0.99x; rr 1.20 / 1.11x against split-K's 1.06 / 0.91x;
    # 72 x 4096 x 11008 rc 1.13x against 0.92x; 80 x 4096 x 14336 rr 1.12x against 1.08x)
    (96, 4096, 4096, "rc", torch.bfloat16, None, "sm90_bf16_rc_64x64x64_c2x1_pingpong_persistent"),
    (128, 4096, 4096, "rc", torch.float16, None, "sm90_f16_rc_64x64x64_c2x1_pingpong_persistent"),
    (128, 4096, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"),
    (96, 4096, 6144, "rr", torch.float16, None, "sm90_f16_rr_64x64x64_c2x1_pingpong_persistent"),
    (72, 4096, 11008, "rc", torch.bfloat16, None, "sm90_bf16_rc_64x64x64_c2x1_pingpong_persistent"),
    (80, 4096, 14336, "rr", torch.bfloat16, None, "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"),
]


RULES_56 = [
    # One 128-row tile row (65-128 rows; H200, session 56, bf16, every kernel by name, x torch.matmul): x @ W.T on
    # 128x64 tiles in clusters of 1x2 where their CTAs fill 90-100% of a wave (96 x 7680 x 14336 1.07x against the
    # table's 128x64 c1x4's 0.73x; 112 x 8192 x 8192 1.02x against 128x128 c1x2's 0.90x) ...
    (96, 7680, 14336, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x64x64_c1x2_coop_persistent"),
    (112, 8192, 8192, "rc", torch.float16, None, "sm90_f16_rc_128x64x64_c1x2_coop_persistent"),
    (72, 7680, 1024, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x64x64_c1x2_coop_persistent"),
    # ... dx on 128x64 tiles without a cluster from 65 rows, and in a full wave up to K = 16384 (72 x 6144 x 1024 0.91x
    # against the SM80 64x64 tile's 0.68x; 96 x 8192 x 8192 1.04x against split-K's 0.97x; 128 x 8192 x 14336 0.97x
    # against stream-K's 0.89x) ...
    (72, 6144, 1024, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x64x64_c1x1_coop_persistent"),
    (96, 8192, 8192, "rr", torch.float16, None, "sm90_f16_rr_128x64x64_c1x1_coop_persistent"),
    (128, 8192, 14336, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x64x64_c1x1_coop_persistent"),
    # ... and where 128x64 tiles take more than a wave, on 128x128 tiles in clusters of 1x2 where their CTAs fill
    # 60-100% of it with K <= 4096 (sessions 50-55, 72-128 x 11008 x 4096: 0.96-1.12x against stream-K 128x128's
    # 0.90-1.06x) ...
    (96, 11008, 4096, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x128x64_c1x2_coop_persistent"),
    (72, 16384, 2048, "rr", torch.float16, None, "sm90_f16_rr_128x128x64_c1x2_coop_persistent"),
    # ... and x @ W.T split over 128x192 tiles of D^T where 128x64 tiles of D fill at most half the SMs with K >= 8192
    # (72 x 2048 x 14336 0.97x against 64x64 c1x1's 0.71x; 112 x 2048 x 8192 0.93x against the 64-row pair's 0.90x)
    (72, 2048, 14336, "rc", torch.bfloat16, None, "sm90_bf16_rc_128x192x64_c2x1_coop_splitk_swapab"),
    (112, 2048, 8192, "rc", torch.float16, None, "sm90_f16_rc_128x192x64_c2x1_coop_splitk_swapab"),
]


RULES = [("39", *r) for r in RULES_39] + [("40", *r) for r in RULES_40] + [("41", *r) for r in RULES_41] + \
    [("45", *r) for r in RULES_45] + [("46", *r) for r in RULES_46] + [("48", *r) for r in RULES_48] + \
    [("49", *r) for r in RULES_49] + [("50", *r) for r in RULES_50] + [("51", *r) for r in RULES_51] + \
    [("52", *r) for r in RULES_52] + [("53", *r) for r in RULES_53] + [("55", *r) for r in RULES_55] + \
    [("56", *r) for r in RULES_56]


@pytest.mark.parametrize("session, m, n, k, layouts, dtype, precision, kernel", RULES,
                         ids=[f"session{s}-{m}x{n}x{k}-{lay}-{d}".replace("torch.", "") for s, m, n, k, lay, d, _, _ in RULES])
def test_rules_of_sessions(session, m, n, k, layouts, dtype, precision, kernel):
    """The rules run `kernel` for m x n x k (layouts of A and B as "rc"), where it is built."""
    if kernel not in {x["name"] for x in pg.kernels()}:
        pytest.skip(f"{kernel} is not in this build")
    assert rules_choice(*meta_operands(m, n, k, layouts, dtype), precision or "ieee") == kernel


def test_the_tf32_sm80_kernels_run_only_what_asks_for_tf32():
    """IEEE and tf32x3 keep their kernels on unaligned fp32: tf32 products are less accurate than asked."""
    for precision in ("ieee", "tf32x3"):
        for m, n, k, layouts in ((1000, 3000, 777, "rr"), (2048, 1001, 2048, "cc"),
                                 (4, 16, 1024, "rr"), (15, 255, 1023, "rc")):  # the 128-row and 64x64 tiles
            a, b = meta_operands(m, n, k, layouts, torch.float32)
            assert not rules_choice(a, b, precision).startswith("sm80_tf32")
            assert not pg.plan(a, b, precision=precision, arch=90)["kernel"].startswith("sm80_tf32")


def test_the_small_16bit_tile_stays_out_of_large_unaligned_and_outer_products():
    """The 64x64x32 a8 tile runs small aligned 16-bit problems only: not from 2^24 flop with both operands K-major (rc)
    nor from 2^30 with an MN-major one, not over more than two of its tiles an SM with M and N above 64 (3072 x 1536 x
    1: K = 1 outer products), not on unaligned operands; and with the shipped (H100) table it still runs where the
    rules put it first (registered after the sweep)."""
    small = {x["name"] for x in pg.kernels() if x["name"].endswith("_64x64x32_w32x32_a8_s6")}
    if not small:
        pytest.skip("the 16-bit 64x64 tiles are not in this build")
    for m, n, k, layouts, dtype in ((256, 256, 128, "rc", torch.bfloat16), (1024, 1024, 512, "rr", torch.bfloat16),
                                    (512, 1024, 1024, "cc", torch.float16), (3072, 1536, 1, "rr", torch.bfloat16),
                                    (1024, 6144, 1, "cr", torch.float16), (64, 100, 256, "rr", torch.bfloat16),
                                    (64, 256, 250, "rc", torch.float16)):
        assert rules_choice(*meta_operands(m, n, k, layouts, dtype)) not in small, (m, n, k)
    a, b = meta(64, 256, "row"), meta(256, 256, "row")
    assert pg.plan(a, b, arch=90)["kernel"] == "sm80_bf16_rr_64x64x32_w32x32_a8_s6"


def test_fill_tiles_leave_full_waves_and_long_k_stream_k_to_the_others():
    """4096^3 fills the waves of 128x256 tiles; 4096x2560x8192's last wave of them is the wide stream-K's (320 tiles);
    512x11008x4096's 128x160 tiles take three waves."""
    fill = {f"sm90_{d}_{lay}_128x{n}x64_c2x1_coop_persistent" for d in ("bf16", "f16") for lay in ("rr", "rc", "cr")
            for n in (80, 160)}
    if not fill & {x["name"] for x in pg.kernels()}:
        pytest.skip("the fill tiles are not in this build")
    for m, n, k in ((4096, 4096, 4096), (4096, 2560, 8192), (512, 11008, 4096), (4096, 2560, 1024)):
        assert rules_choice(meta(m, k), meta(k, n, "col")) not in fill
    # batches of narrow N (attention's P @ V): N no wider than the tile is the narrow tiles' (H200, 32 x (1024x64x1024)
    # rr: 128x64 1.08x cuBLAS, 128x160 0.73x)
    for n in (64, 128):
        a = torch.empty(32, 1024, 1024, device="meta", dtype=torch.bfloat16)
        assert rules_choice(a, torch.empty(32, 1024, n, device="meta", dtype=torch.bfloat16)) not in fill


def test_the_few_rows_split_tile_of_d_t_stays_in_its_band():
    """K split over 128x192 tiles of D^T runs 129-192 rows with K >= 4096 in slices of >= 1024 only: not over 208 rows
    (two of its tile columns), K = 2048 (H200, session 49: 0.63-0.74x torch.matmul against 0.70-0.97x) or slices of
    512 (1024 x 4096 rc: 0.78-0.82x against 0.83-0.88x); over 97-128 rows (x @ W.T: 65-128 since session 56) only with
    K >= 8192 and N <= 4224 (session 50, 128 rows: 128 x 4096 x 4096 rc 0.85x against 1.01x, 128 x 8192 x 8192 rc
    0.86x against 1.01x), and where the 64-row pair fills a wave (N about 4096) that pair; never at 64 rows or fewer,
    nor dx at 96 or fewer; with the shipped (H100) table, which never timed it, it
    runs where the rules put it first and the reason names the table's pick."""
    few = {x["name"] for x in pg.kernels() if x["name"].endswith("_128x192x64_c2x1_coop_splitk_swapab")}
    if not few:
        pytest.skip("the split 128x192 tiles of D^T are not in this build")
    for m, n, k, layouts in ((208, 4096, 14336, "rc"), (96, 4096, 14336, "rc"), (160, 8192, 2048, "rr"),
                             (160, 1024, 4096, "rc"), (160, 14336, 4096, "rr"), (128, 4096, 4096, "rc"),
                             (128, 8192, 8192, "rc"), (128, 4352, 14336, "rc"), (64, 2048, 8192, "rc"),
                             (96, 2048, 8192, "rr"), (96, 2048, 4096, "rc")):
        assert rules_choice(*meta_operands(m, n, k, layouts)) not in few, (m, n, k, layouts)
    plan = pg.plan(*meta_operands(192, 4096, 11008, "rc"), arch=90)
    if any(t["device"] == "NVIDIA H100 80GB HBM3" for t in heuristics.load_tables()):
        assert plan["kernel"] == "sm90_bf16_rc_128x192x64_c2x1_coop_splitk_swapab"
        assert "the table's pick: sm90_" in plan["reason"]


def test_the_session_51_rules_stay_in_their_bands():
    """128x192 tiles of D^T go first over 257-384 rows (rc, rr) only where they use >= 70% of their waves' slots: not
    for N = 4096 (64 tiles), 11008 (172: two waves, the second 30% full; the 192x192 tile ran 0.84x torch.matmul
    there, these 0.59x) or 5632 (88), nor over 256 or 385 rows, weight gradients (cr) or batches. 128x64 tiles
    without a cluster go first for dx over 97-128 rows (65-128 since session 56) only within one wave with N >= 4096
    and K <= 4096 or the wave >= 90% full and K <= 8192 (16384 since session 56): not 4096 x 6144 (half a wave; split-K
    128x64 c1x2 ran 1.03x), 8192 x 28672 or 20480 (a full wave, long K: stream-K 128x128 1.05-1.08x against
    0.91-1.05x), 11008 x 4096 (172 tiles: 128x128 c1x2 1.12x), or 64 rows. Split-K 128x192 tiles of D^T go first over
    257-384 rows only for K >= 8192 where they split (N <= 4224)."""
    names = {x["name"] for x in pg.kernels()}
    tall = {f"sm90_{d}_{lay}_128x192x64_c2x1_coop_persistent_swapab" for d in ("bf16", "f16") for lay in ("rr", "rc", "cr")}
    if not tall & names:
        pytest.skip("the 128x192 tiles of D^T are not in this build")
    for m, n, k, layouts in ((272, 4096, 4096, "rc"), (320, 11008, 4096, "rr"), (272, 5632, 2048, "rc"),
                             (256, 8192, 8192, "rr"), (385, 8192, 8192, "rc"), (320, 8192, 8192, "cr")):
        assert rules_choice(*meta_operands(m, n, k, layouts)) not in tall, (m, n, k, layouts)
    batched = torch.empty(2, 272, 8192, device="meta", dtype=torch.bfloat16)
    assert rules_choice(batched, torch.empty(2, 8192, 8192, device="meta", dtype=torch.bfloat16)) not in tall
    narrow = {f"sm90_{d}_rr_128x64x64_c1x1_coop_persistent" for d in ("bf16", "f16")}
    for m, n, k, layouts in ((128, 4096, 6144, "rr"), (128, 8192, 28672, "rr"), (128, 11008, 4096, "rr"),
                             (64, 8192, 8192, "rr"), (128, 8192, 20480, "rr")):
        assert rules_choice(*meta_operands(m, n, k, layouts)) not in narrow, (m, n, k, layouts)
    split = {f"sm90_{d}_{lay}_128x192x64_c2x1_coop_splitk_swapab" for d in ("bf16", "f16") for lay in ("rr", "rc")}
    # two tile columns of D^T split only for K >= 8192 and N <= 4224 (a split for at least half the SMs), over 257-384
    for m, n, k, layouts in ((272, 4096, 4096, "rc"), (272, 6144, 14336, "rc"), (256, 4096, 14336, "rc"),
                             (385, 4096, 14336, "rr")):
        assert rules_choice(*meta_operands(m, n, k, layouts)) not in split, (m, n, k, layouts)


def test_the_64_row_pair_stays_in_its_bands():
    """64x64 tiles in clusters of 2x1 go first for dx (rr) over 33-64 rows only where K >= 1024 and its CTAs fill
    90% of a wave (N >= 3776 on 132 SMs), nor batched; over 65-128 rows of x @ W.T and 80-128 of dx only in at most
    one wave: not over two (96 x 14336 x 4096 rr: 0.95x against 1.08x; 128 x 6144 x 4096 rc 0.96x against 1.09x), nor
    where they fill less than 90% of it (128 x 1024 x 4096 rc: 0.86x against 0.87x; 96 x 2048 x 8192 rc 0.91x against
    0.95x; since session 56 not x @ W.T over 97-128 rows with K >= 8192 either: 112 / 128 x 2048 x 14336 rc 0.82 /
    0.84x against the split tiles of D^T's 1.00 / 0.96x); not dx over 72 rows (72 x 4096 x 6144: 0.83x against
    1.02x) nor with K = 1024; for x @ W.T not over 64 rows (64 x 4096 x 14336: that tile and c1x1 ran 1.11-1.20x);
    weight gradients (cr) never."""
    pair = {f"sm90_{d}_{lay}_64x64x64_c2x1_pingpong_persistent" for d in ("bf16", "f16") for lay in ("rr", "rc")}
    if not pair & {x["name"] for x in pg.kernels()}:
        pytest.skip("the 64-row pair is not in this build")
    for m, n, k, layouts in ((96, 14336, 4096, "rr"), (32, 4096, 4096, "rr"), (64, 2048, 4096, "rr"),
                             (64, 4096, 512, "rr"), (96, 4096, 1024, "rr"), (128, 2048, 4096, "rr"),
                             (72, 4096, 6144, "rr"), (96, 2048, 8192, "rc"), (112, 2048, 8192, "rc"),
                             (128, 2048, 14336, "rc"),
                             (64, 4096, 14336, "rc"), (128, 1024, 4096, "rc"), (128, 6144, 4096, "rc"),
                             (128, 8192, 8192, "rc"), (160, 4096, 14336, "rc"), (64, 4096, 4096, "cr"),
                             (128, 4096, 4096, "cr")):
        assert rules_choice(*meta_operands(m, n, k, layouts)) not in pair, (m, n, k, layouts)
    batched = torch.empty(2, 64, 4096, device="meta", dtype=torch.bfloat16)
    assert rules_choice(batched, torch.empty(2, 4096, 4096, device="meta", dtype=torch.bfloat16)) not in pair
    plan = pg.plan(*meta_operands(64, 4096, 4096, "rr"), arch=90)
    if any(t["device"] == "NVIDIA H100 80GB HBM3" for t in heuristics.load_tables()):
        assert plan["kernel"] == "sm90_bf16_rr_64x64x64_c2x1_pingpong_persistent"
        assert "registered after the measured table was swept (the table's pick: sm90_" in plan["reason"]


def test_the_two_tile_row_rules_stay_in_their_band():
    """Session 53's rules run over 129-256 rows of x @ W.T and dx only (one batch): 128x128 tiles keep clusters of 1x2
    on a tie over 384 rows and for weight gradients (cr); 128x192 tiles of D^T leave N = 8192 (64 tiles, behind there),
    208 rows (two of their tile columns) and K = 2048 to the others; the rc split leaves 129-192 rows to the split
    128x192 tiles of D^T and K = 8192 to the others; the 80-wide fill tile leaves N = 6144 (two waves of its CTAs),
    K = 8192 (not measured) and 136 rows (the split 128x192 tiles of D^T: 0.85x against 0.80x); the 64-row pair leaves N = 1024 (half a wave)
    and 136 x 2048 x 8192 rc (the split tiles of D^T: 0.98x against 0.70x)."""
    names = {x["name"] for x in pg.kernels()}
    if "sm90_bf16_rr_128x128x64_c2x1_coop_persistent" not in names:
        pytest.skip("the 2x1 pairs are not in this build")
    checks = [("sm90_bf16_{}_128x128x64_c2x1_coop_persistent", ((384, 8192, 8192, "rr"), (208, 8192, 8192, "cr"))),
              ("sm90_bf16_{}_128x192x64_c2x1_coop_persistent_swapab",
               ((176, 8192, 8192, "rr"), (208, 14336, 4096, "rr"))),
              ("sm90_bf16_{}_128x256x64_c2x1_coop_splitk", ((176, 4096, 14336, "rc"), (224, 4096, 8192, "rc"))),
              ("sm90_bf16_{}_128x80x64_c2x1_coop_persistent",
               ((224, 6144, 4096, "rc"), (136, 4096, 4096, "rc"), (224, 4096, 8192, "rc"))),
              ("sm90_bf16_{}_64x64x64_c2x1_pingpong_persistent", ((224, 1024, 4096, "rc"), (136, 2048, 8192, "rc")))]
    for pattern, problems in checks:
        for m, n, k, layouts in problems:
            assert rules_choice(*meta_operands(m, n, k, layouts)) != pattern.format(layouts), (m, n, k, layouts)
    batched = torch.empty(2, 208, 8192, device="meta", dtype=torch.bfloat16)
    assert rules_choice(batched, torch.empty(2, 8192, 8192, device="meta", dtype=torch.bfloat16)) != \
        "sm90_bf16_rr_128x128x64_c2x1_coop_persistent"


def test_the_session_56_rules_run_ahead_of_the_h100_table():
    """Between the shipped (H100) table's points over one 128-row tile row, session 56's rules run their kernels ahead
    of its vote (its picks there, measured on the H200: 128x64 c1x4 0.73x torch.matmul at 96 x 7680 x 14336 rc, the
    64x64 c1x1 ping-pong 0.71x at 72 x 2048 x 14336 rc, stream-K 0.90-1.06x at 72-128 x 11008 x 4096 rr) and leave
    dx's longer K to it (96 x 11008 x 8192: no measurement says otherwise)."""
    if not any(t["device"] == "NVIDIA H100 80GB HBM3" for t in heuristics.load_tables()):
        pytest.skip("the H100 table is not shipped")
    names = {x["name"] for x in pg.kernels()}
    for (m, n, k, layouts), kernel in (((96, 7680, 14336, "rc"), "sm90_bf16_rc_128x64x64_c1x2_coop_persistent"),
                                       ((72, 2048, 14336, "rc"), "sm90_bf16_rc_128x192x64_c2x1_coop_splitk_swapab"),
                                       ((72, 6144, 1024, "rr"), "sm90_bf16_rr_128x64x64_c1x1_coop_persistent"),
                                       ((96, 11008, 4096, "rr"), "sm90_bf16_rr_128x128x64_c1x2_coop_persistent")):
        if kernel in names:
            plan = pg.plan(*meta_operands(m, n, k, layouts), arch=90)
            assert plan["kernel"] == kernel, (m, n, k, layouts, plan["reason"])
    plan = pg.plan(*meta_operands(96, 11008, 8192, "rr"), arch=90)
    assert plan["kernel"] != "sm90_bf16_rr_128x128x64_c1x2_coop_persistent", plan["reason"]
