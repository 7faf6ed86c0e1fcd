"""Kernel selection without a GPU: the measured table (loading, plan() reading it, its regions),
the autotune keys and switch, the disk cache's file handling (on fakes where a GPU would be needed).
The timing of candidates and the sweep that builds the table: test_tune_sweep_cpu.py."""

import json
import multiprocessing
import os
import pathlib
import subprocess
import sys
import warnings

import pytest
import torch

import pycutlass_gemm as pg
from pycutlass_gemm import _C, autotuning, heuristics, tune_timing
from conftest import cutlass_built, matrix


def meta(rows, cols, layout="row", dtype=torch.bfloat16):
    return matrix(rows, cols, layout, dtype, device="meta")


def fake_table(points, cls="bfloat16 ieee row col aligned", device="NVIDIA Fake GPU", sm=90, sm_count=132):
    """points: (m, n, k, batch, fastest kernel) or (m, n, k, batch, [(kernel, time over the fastest's), ...])."""
    timed = [(m, n, k, batch, [(kernels, 1.0)] if isinstance(kernels, str) else kernels)
             for m, n, k, batch, kernels in points]
    names = sorted({name for *_, kernels in timed for name, _ in kernels})
    rows = [[m, n, k, batch, names.index(kernels[0][0])] +
            [x for name, ratio in kernels[1:] for x in (names.index(name), round(1000 * ratio))]
            for m, n, k, batch, kernels in timed]
    return {"format": heuristics.FORMAT, "device": device, "sm": sm, "sm_count": sm_count, "package_version": "test",
            "measured": "today", "source": f"test table for {device}", "kernels": names, "classes": {cls: rows}}


@pytest.fixture
def tables():
    """Install tables for one test; the shipped ones are back afterwards."""
    yield lambda ts: heuristics.install(ts)
    heuristics.install()


def rules_choice(a, b, precision="ieee"):
    heuristics.install([])
    try:
        return pg.plan(a, b, precision=precision, arch=90)["kernel"]
    finally:
        heuristics.install()


def test_shipped_tables_load_and_name_their_device():
    for table in heuristics.load_tables():
        assert table["device"] and table["sm"] >= 80 and table["sm_count"] > 0
        points = [p for points in table["classes"].values() for p in points]
        assert points and all(len(p) >= 5 and len(p) % 2 == 1 for p in points)
        assert all(0 <= i < len(table["kernels"]) for p in points for i in [p[4], *p[5::2]])
        assert all(1000 <= permille <= 1000 * heuristics.SLOWEST_KEPT for p in points for permille in p[6::2])


@cutlass_built
def test_plan_takes_the_nearest_measured_point_of_the_class_and_says_so(tables):
    a, b = meta(4096, 1024), meta(1024, 4096, "col")
    assert heuristics.problem_class(a, b) == "bfloat16 ieee row col aligned"
    assert rules_choice(a, b) != "fallback"
    tables([fake_table([(4096, 4096, 1024, 1, "fallback"), (16, 4096, 4096, 1, pg.plan(a, b, arch=90)["kernel"])])])
    plan = pg.plan(a, b, arch=90)  # planning for sm_90 with 132 SMs: the fake table's GPU
    assert plan["kernel"] == "fallback"
    assert "fastest measured" in plan["reason"] and "point 4096x4096x1024 (nearest 0.0 octaves away)" in plan["reason"]
    near = pg.plan(meta(3000, 1024), meta(1024, 5000, "col"), arch=90)
    assert near["kernel"] == "fallback" and "near point 4096x4096x1024 (nearest 0.7 octaves" in near["reason"]


def test_between_points_the_kernel_fastest_around_wins(tables):
    """Off the measured points: the kernel with the least time over the points within half an octave
    of the nearest (a kernel a point does not keep counts SLOWEST_KEPT there)."""
    tables([fake_table([(1024, 1024, 1024, 1, "fallback"), (4096, 1024, 1024, 1, "naive"),
                        (1024, 4096, 1024, 1, "naive"), (1024, 1024, 8192, 1, "fallback")])])
    plan = lambda m, n, k: pg.plan(meta(m, k), meta(k, n, "col"), arch=90)  # noqa: E731
    assert plan(1024, 1024, 1024)["kernel"] == "fallback"  # a measured point decides itself
    assert plan(1100, 1024, 1024)["kernel"] == "fallback"  # only the nearest is within half an octave of it
    vote = plan(2048, 2048, 1024)  # three points 2 octaves away, two of them say naive
    assert vote["kernel"] == "naive" and "least time over the 3 points within 2.5 octaves: 1.08x" in vote["reason"]


def test_points_between_octaves_decide_only_problems_between_octaves(tables):
    """A point whose m or n is 1.5 x 2^i (3072: tiles fill the SMs' waves differently than at 2048 or
    4096) votes for problems between octaves, not for those near powers of two."""
    tables([fake_table([(3072, 1024, 1024, 1, "naive"), (4096, 1024, 4096, 1, "fallback")])])
    plan = lambda m, n, k: pg.plan(meta(m, k), meta(k, n, "col"), arch=90)  # noqa: E731
    assert plan(3072, 1024, 1024)["kernel"] == "naive"  # a measured point decides itself
    assert plan(3000, 1024, 1024)["kernel"] == "naive"  # between octaves: the 3072 point is nearest
    # m = 3600 is nearer 4096 than 3072 in log2: the 3072 point (0.2 octaves away) is left out
    near_power = plan(3600, 1024, 1024)
    assert near_power["kernel"] == "fallback" and "near point 4096x1024x4096" in near_power["reason"]
    tables([fake_table([(3072, 1024, 1024, 1, "naive")])])  # only points between octaves: they decide
    assert plan(4096, 1024, 1024)["kernel"] == "naive"


def test_between_points_a_kernel_close_everywhere_beats_one_fastest_at_most(tables):
    tables([fake_table([(1024, 1024, 1024, 1, [("fallback", 1.0), ("naive", 1.02)]),
                        (4096, 1024, 1024, 1, [("fallback", 1.0), ("naive", 1.02)]),
                        (1024, 4096, 1024, 1, "naive")])])  # the fallback over 1.25x there
    vote = pg.plan(meta(2048, 1024), meta(1024, 2048, "col"), arch=90)
    assert vote["kernel"] == "naive" and "least time over the 3 points within 2.5 octaves: 1.01x" in vote["reason"]
    assert pg.plan(meta(1024, 1024), meta(1024, 1024, "col"), arch=90)["kernel"] == "fallback"  # a point: its fastest


@cutlass_built
def test_between_points_a_vote_counts_how_the_kernels_tiles_fill_the_problem(tables):
    """A point's times are carried to the problem by how each kernel's tiles fill it: at 1024 x 4096,
    128 tiles of 128x256 fill one wave of 132 SMs and 168 of 128x192 need two; at 1024 x 3000, 96 of
    128x256 leave a quarter of the SMs idle and 128 of 128x192 fill the wave."""
    wide, narrow = "sm90_bf16_rc_128x256x64_c2x1_coop_persistent", "sm90_bf16_rc_128x192x64_c2x1_coop_persistent"
    tables([fake_table([(1024, 4096, 1024, 1, [(wide, 1.0), (narrow, 1.05)])])])
    plan = lambda m, n, k: pg.plan(meta(m, k), meta(k, n, "col"), arch=90)  # noqa: E731
    assert plan(1024, 4096, 1024)["kernel"] == wide  # a measured point decides itself
    assert plan(1024, 4000, 1024)["kernel"] == wide  # filled as at the point: its times decide
    fill = plan(1024, 3000, 1024)
    assert fill["kernel"] == narrow and "its tiles as they fill this problem" in fill["reason"]


def test_a_table_kernel_that_cannot_run_the_problem_gives_way_to_the_next(tables):
    a, b = meta(4096, 1024), meta(1024, 4096, "col")
    tables([fake_table([(4096, 4096, 1024, 1, [("sm90_bf16_rc_not_a_kernel", 1.0), ("fallback", 1.2)])])])
    plan = pg.plan(a, b, arch=90)
    assert plan["kernel"] == "fallback"
    assert "fastest measured" in plan["reason"] and "passed over sm90_bf16_rc_not_a_kernel, not built here" in plan["reason"]


def test_no_table_choice_outside_its_class_region_or_device(tables):
    a, b = meta(4096, 1024), meta(1024, 4096, "col")
    rules = rules_choice(a, b)
    tables([fake_table([(16, 16, 16, 1, "fallback")])])  # 3 x 8 octaves away
    assert pg.plan(a, b, arch=90)["kernel"] == rules
    tables([fake_table([(4096, 4096, 1024, 1, "fallback")], cls="bfloat16 ieee row row aligned")])
    assert pg.plan(a, b, arch=90)["kernel"] == rules
    tables([fake_table([(4096, 4096, 1024, 1, "fallback")], sm_count=114)])  # another GPU model
    assert pg.plan(a, b, arch=90)["kernel"] == rules
    tables([fake_table([(4096, 4096, 1024, 1, "fallback")])])
    with_bias = pg.plan(a, b, torch.empty(4096, device="meta", dtype=torch.bfloat16), beta=1.0, arch=90)
    assert "measured" not in with_bias["reason"]  # a bias row: the rules pick the kernel that fuses it


def test_a_table_of_the_same_chip_decides_what_the_first_leaves(tables):
    # Planning for sm_90 with 132 SMs, both tables cover the problem; the first has no point of its class within
    # 4 octaves (a partial table of a GPU's own), so the second decides (heuristics.cpp, tables_for)
    a, b = meta(4096, 1024), meta(1024, 4096, "col")
    second = fake_table([(4096, 4096, 1024, 1, "fallback")], device="NVIDIA Fake GPU B")
    for first in (fake_table([(4096, 4096, 1024, 1, "fallback")], cls="bfloat16 ieee row row aligned"),
                  fake_table([(16, 16, 16, 1, "fallback")])):
        tables([first, second])
        plan = pg.plan(a, b, arch=90)
        assert plan["kernel"] == "fallback" and plan["reason"].startswith("fastest measured: test table for NVIDIA Fake GPU B")


def test_a_table_kernel_not_built_here_falls_back_to_the_rules(tables):
    a, b = meta(4096, 1024), meta(1024, 4096, "col")
    tables([fake_table([(4096, 4096, 1024, 1, "sm90_bf16_rc_not_a_kernel")])])
    plan = pg.plan(a, b, arch=90)
    assert plan["kernel"] == rules_choice(a, b)
    assert "names sm90_bf16_rc_not_a_kernel, not built here" in plan["reason"]


# Session 39's rules (cutlass_sm90_priority.cuh), each at a problem of the H100 sweep it was judged on:
# (m, n, k, layouts, dtype, precision, the kernel the rules run).
RULES_39 = [
    # 16-bit, K <= 2048, 128x256 tiles filling the waves poorly: the narrowest persistent tile, not stream-K
    (256, 256, 512, "rr", torch.bfloat16, None, "sm90_bf16_rr_128x64x64_c1x1_coop_persistent"),
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


RULES = [("39", *r) for r in RULES_39] + [("40", *r) for r in RULES_40] + [("41", *r) for r in RULES_41] + \
    [("45", *r) for r in RULES_45] + [("46", *r) for r in RULES_46]


@pytest.mark.parametrize("session, m, n, k, layouts, dtype, precision, kernel", RULES,
                         ids=[f"session{s}-{m}x{n}x{k}-{lay}-{d}".replace("torch.", "") for s, m, n, k, lay, d, _, _ in RULES])
def test_rules_of_sessions(session, m, n, k, layouts, dtype, precision, kernel):
    """The rules run `kernel` for m x n x k (layouts of A and B as "rc"), where it is built."""
    if kernel not in {x["name"] for x in pg.kernels()}:
        pytest.skip(f"{kernel} is not in this build")
    a = meta(m, k, "row" if layouts[0] == "r" else "col", dtype)
    b = meta(k, n, "row" if layouts[1] == "r" else "col", dtype)
    assert rules_choice(a, b, precision or "ieee") == kernel


def test_the_tf32_sm80_kernels_run_only_what_asks_for_tf32():
    """IEEE and tf32x3 keep their kernels on unaligned fp32: tf32 products are less accurate than asked."""
    for precision in ("ieee", "tf32x3"):
        for m, n, k, layouts in ((1000, 3000, 777, "rr"), (2048, 1001, 2048, "cc"),
                                 (4, 16, 1024, "rr"), (15, 255, 1023, "rc")):  # the 128-row and 64x64 tiles
            a = meta(m, k, "row" if layouts[0] == "r" else "col", torch.float32)
            b = meta(k, n, "row" if layouts[1] == "r" else "col", torch.float32)
            assert not rules_choice(a, b, precision).startswith("sm80_tf32")
            assert not pg.plan(a, b, precision=precision, arch=90)["kernel"].startswith("sm80_tf32")


def test_the_small_16bit_tile_stays_out_of_large_unaligned_and_outer_products():
    """The 64x64x32 a8 tile runs small aligned 16-bit problems only: not at 2^24 flop and up, not over more than two of
    its tiles an SM with M and N above 64 (3072 x 1536 x 1: K = 1 outer products), not on unaligned operands; and
    with the shipped (H100) table it still runs where the rules put it first (registered after the sweep)."""
    small = {x["name"] for x in pg.kernels() if x["name"].endswith("_64x64x32_w32x32_a8_s6")}
    if not small:
        pytest.skip("the 16-bit 64x64 tiles are not in this build")
    for m, n, k, layouts, dtype in ((256, 256, 128, "rr", torch.bfloat16), (3072, 1536, 1, "rr", torch.bfloat16),
                                    (1024, 6144, 1, "cr", torch.float16), (64, 100, 256, "rr", torch.bfloat16),
                                    (64, 256, 250, "rc", torch.float16)):
        a = meta(m, k, "row" if layouts[0] == "r" else "col", dtype)
        b = meta(k, n, "row" if layouts[1] == "r" else "col", dtype)
        assert rules_choice(a, b) not in small, (m, n, k)
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


def test_a_kernel_registered_after_the_table_runs_where_the_rules_put_it_first(tables):
    """A table that records the kernels built when it was swept ("registered") keeps its word for those; one
    registered since, which it could not time, runs where the rules put it first (the H100 table and session 41's
    fill tiles)."""
    a, b = meta(512, 3072), meta(3072, 5120, "col")
    fill = rules_choice(a, b)
    if fill != "sm90_bf16_rc_128x160x64_c2x1_coop_persistent":
        pytest.skip("the fill tiles are not in this build")
    table = fake_table([(512, 5120, 3072, 1, "fallback")])
    tables([table])  # no "registered": every kernel counts as timed, the table decides
    assert pg.plan(a, b, arch=90)["kernel"] == "fallback"
    built = sorted(x["name"] for x in pg.kernels())
    tables([{**table, "registered": built}])
    assert pg.plan(a, b, arch=90)["kernel"] == "fallback"
    tables([{**table, "registered": [name for name in built if name != fill]}])
    plan = pg.plan(a, b, arch=90)
    assert plan["kernel"] == fill and "registered after the measured table was swept" in plan["reason"]
    # elsewhere the table still decides: at 4096^3 the rules run a kernel the table knows
    c, d = meta(4096, 4096), meta(4096, 4096, "col")
    tables([{**fake_table([(4096, 4096, 4096, 1, "fallback")]), "registered": [n for n in built if n != fill]}])
    assert pg.plan(c, d, arch=90)["kernel"] == "fallback"


def test_unaligned_operands_are_their_own_class():
    a = torch.empty(777, 1001, device="meta", dtype=torch.bfloat16)
    b = torch.empty(1001, 300, device="meta", dtype=torch.bfloat16)
    assert heuristics.problem_class(a, b) == "bfloat16 ieee row row unaligned"
    x = torch.empty(64, 64, device="meta", dtype=torch.float32)
    assert heuristics.problem_class(x, x, "tf32") == "float32 tf32 row row aligned"
    # x @ W.T onto a vocabulary: A and B aligned, the output's rows are 50257 long.
    w = torch.empty(50257, 1024, device="meta", dtype=torch.bfloat16)
    h = torch.empty(8, 1024, device="meta", dtype=torch.bfloat16)
    assert heuristics.problem_class(h, w.T) == "bfloat16 ieee row col unaligned-output"
    # An odd K: A's rows are not 16-byte multiples, D's (3000 elements) are.
    k777 = torch.empty(1000, 777, device="meta", dtype=torch.bfloat16)
    w777 = torch.empty(777, 3000, device="meta", dtype=torch.bfloat16)
    assert heuristics.problem_class(k777, w777) == "bfloat16 ieee row row unaligned-input"
    assert heuristics.problem_class(x, x, "ieee") == "float32 ieee row row aligned"


def test_table_round_trips_through_its_file(tmp_path):
    records = [{"m": 4096, "n": 4096, "k": 1024, "batch": 1, "layout": "rc", "precision": "bf16", "best": "k1",
                "ms": {"k1": 1.0, "k4": 1.1, "k5": 1.3}},  # k5 is over SLOWEST_KEPT: left out
               {"m": 1, "n": 4096, "k": 1024, "batch": 1, "layout": "rc", "precision": "bf16", "best": "k2"},
               {"m": 1, "n": 4096, "k": 1024, "batch": 1, "layout": "cc", "precision": "bf16", "best": "k3"},
               {"m": 15, "n": 15, "k": 15, "batch": 4, "layout": "rr", "precision": "tf32", "best": "k1"},
               {"m": 8, "n": 8, "k": 8, "batch": 1, "layout": "rr", "precision": "fp32", "best": None}]
    table = heuristics.build_table(records, device="NVIDIA Test GPU", sm=90, sm_count=132, version="x", measured="d")
    assert table["classes"]["bfloat16 ieee row col aligned"] == [[1, 4096, 1024, 1, 2], [4096, 4096, 1024, 1, 0, 1, 1100]]
    assert table["classes"]["float32 tf32 row row unaligned"] == [[15, 15, 15, 4, 0]]
    assert len(table["classes"]) == 2  # m = 1: A is a single row, "cc" is the same class; nothing ran: no point
    path = heuristics.write_table(table, tmp_path)
    assert path.name == "nvidia_test_gpu.json"
    (loaded,) = heuristics.load_tables(tmp_path)
    assert loaded["classes"] == table["classes"] and loaded["kernels"] == table["kernels"]
    assert "NVIDIA Test GPU" in loaded["source"]


def test_unreadable_table_is_skipped_with_a_warning(tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "old.json").write_text(json.dumps({"format": 0}))
    with pytest.warns(RuntimeWarning, match="ignoring the heuristics table"):
        assert heuristics.load_tables(tmp_path) == []


def test_heuristics_can_be_switched_off(tmp_path):
    env = dict(os.environ, PYCUTLASS_GEMM_HEURISTICS="0")
    code = "from pycutlass_gemm import heuristics; print(len(heuristics.install()))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "0"


# --- autotuning: keys, switch, cache ----------------------------------------------------------


def test_tune_key_buckets_sizes_and_separates_what_changes_the_choice():
    key = lambda a, b, precision=0: _C.tune_key(a, b, None, None, 0.0, precision, False)  # noqa: E731
    base = key(meta(3000, 777), meta(777, 1000, "col"))
    assert "m 4096 n 1024 k 1024" in base and "align 2" in base and "A row B col" in base
    assert key(meta(2500, 1000), meta(1000, 1000, "col")).split(" align")[0] == base.split(" align")[0]
    assert key(meta(4096, 1024), meta(1024, 1024, "col")) != base  # aligned now
    assert key(meta(3000, 777), meta(777, 1000)) != base  # B row-major
    assert key(meta(3000, 777, dtype=torch.float32), meta(777, 1000, "col", torch.float32), 1) != \
        key(meta(3000, 777, dtype=torch.float32), meta(777, 1000, "col", torch.float32), 0)
    assert key(meta(3000, 777), meta(777, 2000, "col")) != base  # n bucket 2048


def test_autotune_is_off_by_default_and_on_with_the_environment(tmp_path):
    code = "import pycutlass_gemm as pg; print(pg.autotune())"
    env = {k: v for k, v in os.environ.items() if k != "PYCUTLASS_GEMM_AUTOTUNE"}
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    on = subprocess.run([sys.executable, "-c", code], env=dict(env, PYCUTLASS_GEMM_AUTOTUNE="1"),
                        capture_output=True, text=True, check=True, cwd=tmp_path)
    assert (off.stdout.strip(), on.stdout.strip()) == ("False", "True")


@pytest.fixture
def tuning_on(monkeypatch, tmp_path):
    """Autotuning on, with a fresh cache directory and no tuned classes; off again afterwards."""
    monkeypatch.setenv("PYCUTLASS_GEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotuning, "_caches", {})
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA Fake GPU")
    _C.clear_tuned()
    autotuning.autotune(True)
    yield tmp_path
    autotuning.autotune(False)
    _C.clear_tuned()


@cutlass_built
def test_tuned_choice_is_what_plan_runs_and_is_written_to_disk(tuning_on, monkeypatch):
    a, b = meta(4096, 1024), meta(1024, 4096, "col")
    timed = []

    def fake_time(*args, **kwargs):
        timed.append(1)
        return tune_timing.Timings(ms={"fallback": 1.0, "other": 2.0}, runs={"fallback": 3, "other": 3})
    monkeypatch.setattr(autotuning, "time_candidates", fake_time)
    monkeypatch.setattr(torch.cuda, "device", lambda device: torch.device("cpu"))  # meta tensors: no CUDA device
    # (plan without arch: the device tune_key reads too, the current GPU if there is one)
    assert "autotuned" not in pg.plan(a, b)["reason"]
    choice = autotuning.tune_call(a, b)
    assert choice["kernel"] == "fallback" and timed == [1]
    plan = pg.plan(a, b)
    assert plan["kernel"] == "fallback" and plan["reason"].startswith("autotuned")
    assert autotuning.tune_call(a, b)["kernel"] == "fallback" and timed == [1]  # cached: not timed again
    (path,) = tuning_on.glob("autotune-*.json")
    data = json.loads(path.read_text())
    assert data["identity"]["device"] == "NVIDIA Fake GPU" and list(data["choices"].values())[0]["kernel"] == "fallback"
    autotuning.autotune(False)
    assert pg.plan(a, b)["kernel"] != "fallback"  # off: the tuned choice is not used


def identity():
    return {"device": "NVIDIA Fake GPU", "driver": 1, "package_version": "t", "kernels": "k"}


def test_cache_survives_a_new_process_view_and_ignores_a_corrupt_or_stale_file(tmp_path):
    cache = autotuning.DiskCache(identity(), tmp_path)
    cache.store("key1", {"kernel": "k1"})
    assert autotuning.DiskCache(identity(), tmp_path).choices == {"key1": {"kernel": "k1"}}
    cache.path.write_text("{truncated")
    with pytest.warns(RuntimeWarning, match="unreadable cache"):
        assert autotuning.DiskCache(identity(), tmp_path).choices == {}
    cache.path.write_text(json.dumps({"format": autotuning.CACHE_FORMAT, "identity": dict(identity(), driver=2),
                                      "choices": {"key1": {"kernel": "k1"}}}))
    with pytest.warns(RuntimeWarning, match="another device, driver"):
        assert autotuning.DiskCache(identity(), tmp_path).choices == {}
    cache.store("key2", {"kernel": "k2"})  # a broken file is replaced, not an error
    assert autotuning.DiskCache(identity(), tmp_path).choices == {"key1": {"kernel": "k1"}, "key2": {"kernel": "k2"}}


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_cache_directory_warns_and_keeps_choices_in_memory(tmp_path):
    tmp_path.chmod(0o500)
    try:
        cache = autotuning.DiskCache(identity(), tmp_path)
        with pytest.warns(RuntimeWarning, match="cannot write the cache"):
            cache.store("key", {"kernel": "k"})
        assert cache.choices == {"key": {"kernel": "k"}}
    finally:
        tmp_path.chmod(0o700)


def test_unwritable_cache_path_warns_and_keeps_choices_in_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = autotuning.DiskCache(identity(), blocker / "sub")  # a directory that cannot exist
    with pytest.warns(RuntimeWarning, match="cannot write the cache"):
        cache.store("key", {"kernel": "k"})
    assert cache.choices == {"key": {"kernel": "k"}}


def _store_many(directory: str, worker: int) -> None:
    cache = autotuning.DiskCache(identity(), pathlib.Path(directory))
    for i in range(25):
        cache.store(f"w{worker}-{i}", {"kernel": f"k{i}"})


def test_two_processes_writing_the_cache_lose_nothing_and_never_corrupt_it(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_store_many, args=(str(tmp_path), w)) for w in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
        assert p.exitcode == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        choices = autotuning.DiskCache(identity(), tmp_path).choices
    assert set(choices) == {f"w{w}-{i}" for w in range(2) for i in range(25)}
    assert not list(tmp_path.glob("*.tmp"))
