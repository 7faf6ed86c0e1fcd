"""Kernel selection without a GPU: the measured table (loading, plan() reading it, its regions, kernels registered
after it). The priority rules of each session: test_selection_rules_cpu.py; autotuning: test_autotuning_cpu.py;
the timing of candidates and the sweep that builds the table: test_tune_sweep_cpu.py."""

import json
import os
import subprocess
import sys

import pytest
import torch

import pycutlass_gemm as pg
from pycutlass_gemm import heuristics
from conftest import cutlass_built
from selection_helpers import fake_table, meta, rules_choice


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
    """Off the measured points: the kernel with the least time over the points within 0.75 octaves
    of the nearest (a kernel a point does not keep counts SLOWEST_KEPT there)."""
    tables([fake_table([(1024, 1024, 1024, 1, "fallback"), (4096, 1024, 1024, 1, "naive"),
                        (1024, 4096, 1024, 1, "naive"), (1024, 1024, 8192, 1, "fallback")])])
    plan = lambda m, n, k: pg.plan(meta(m, k), meta(k, n, "col"), arch=90)  # noqa: E731
    assert plan(1024, 1024, 1024)["kernel"] == "fallback"  # a measured point decides itself
    assert plan(1100, 1024, 1024)["kernel"] == "fallback"  # only the nearest is within 0.75 octaves of it
    vote = plan(2048, 2048, 1024)  # three points 2 octaves away, two of them say naive
    assert vote["kernel"] == "naive" and "least time over the 3 points within 2.8 octaves: 1.08x" in vote["reason"]


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
    assert vote["kernel"] == "naive" and "least time over the 3 points within 2.8 octaves: 1.01x" in vote["reason"]
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


@cutlass_built
def test_between_points_the_fill_counts_the_clusters_padding(tables):
    """Clusters past D's edge launch idle CTAs: at 3240 x 568, 26 x 5 tiles of 128x128 are 130 CTAs in clusters of
    2x1 (one wave of 132 SMs) but 156 in clusters of 1x2 (5 N tiles padded to 6: two waves), where at the point
    (2048 x 512, 16 x 4 tiles) both launch 64. Session 47, H200: 0.82x torch.matmul for the 2x1 pair, 0.51x for 1x2."""
    pair_n, pair_m = "sm90_bf16_rc_128x128x64_c1x2_coop_persistent", "sm90_bf16_rc_128x128x64_c2x1_coop_persistent"
    tables([fake_table([(2048, 512, 2048, 1, [(pair_n, 1.0), (pair_m, 1.05)])])])
    plan = lambda m, n, k: pg.plan(meta(m, k), meta(k, n, "col"), arch=90)  # noqa: E731
    assert plan(2048, 512, 2048)["kernel"] == pair_n
    assert plan(3240, 568, 2048)["kernel"] == pair_m


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


def test_a_rule_ahead_of_the_table_runs_between_its_points_only(tables):
    """A rule ranking its kernel at 120 (kAheadOfTablePriority) runs it ahead of the table's vote between the table's
    points (session 51: 128x192 tiles of D^T over 257-384 rows, where the H100 table's vote ran 128x128 stream-K);
    at a measured point the table decides."""
    tall = "sm90_bf16_rc_128x192x64_c2x1_coop_persistent_swapab"
    a, b = meta(272, 8192), meta(8192, 8192, "col")
    if rules_choice(a, b) != tall:
        pytest.skip("the 128x192 tiles of D^T are not in this build")
    tables([fake_table([(256, 8192, 8192, 1, "fallback")])])
    plan = pg.plan(a, b, arch=90)
    assert plan["kernel"] == tall
    assert "a rule ahead of the measured table between its points (the table's pick: fallback)" in plan["reason"]
    tables([fake_table([(272, 8192, 8192, 1, "fallback")])])  # the problem is a measured point
    assert pg.plan(a, b, arch=90)["kernel"] == "fallback"
    # where no rule ranks 120 (N = 4096: 64 of these tiles for 132 SMs; K = 4096, too short to split), the vote decides
    tables([fake_table([(256, 4096, 4096, 1, "fallback")])])
    assert pg.plan(meta(272, 4096), meta(4096, 4096, "col"), arch=90)["kernel"] == "fallback"


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
