"""The bench command: argument parsing, case selection, the kernel table, CSV/JSON files and plots."""

import csv
import json
import sys

import pytest
import torch

from conftest import tolerance
from bench_modules import (FAKE_KERNELS, bench, cases, cli, parse, plot, report,
                           result, rows_mod)


# --- parsing and selection ------------------------------------------------------------------------

def test_defaults_select_the_three_workloads_and_five_precisions():
    args = parse()
    assert args.command == "bench" and not args.quick and not args.sweep
    assert [w.name for w in cases.select_workloads(args)] == ["transposed A", "transposed B", "large K"]
    assert [p.name for p in cases.parse_precisions(args.dtype)] == ["fp32", "tf32", "bf16", "fp16", "tf32x3"]
    assert cases.parse_variants(args.variant) is None
    big = {w.name: (w.m, w.n, w.k, w.layout) for w in cases.select_workloads(args)}
    assert big == {"transposed A": (2048, 4096, 8192, "cr"), "transposed B": (2048, 4096, 8192, "rc"),
                   "large K": (256, 256, 524288, "rr")}


def test_quick_workloads_are_the_small_variants():
    sizes = [(w.m, w.n, w.k) for w in cases.select_workloads(parse("--quick"))]
    assert sizes == [(1024, 2048, 4096), (1024, 2048, 4096), (256, 256, 131072)]


def test_custom_problem_and_layout():
    [w] = cases.select_workloads(parse("--m", "128", "--k", "64", "--layout", "cc"))
    assert (w.m, w.n, w.k, w.layout) == (128, 4096, 64, "cc")
    assert (w.layout_a, w.layout_b) == ("col", "col")


def test_sweep_sizes_and_variants():
    ws = cases.select_workloads(parse("--sweep", "--quick", "--layout", "rc"))
    assert [w.m for w in ws] == list(cases.QUICK_SWEEP_SIZES)
    assert all(w.m == w.n == w.k and w.layout == "rc" for w in ws)
    assert max(w.m for w in cases.select_workloads(parse("--sweep"))) == 8192


def test_dtype_and_variant_lists():
    assert [p.name for p in cases.parse_precisions("tf32,bf16,float16")] == ["tf32", "bf16", "fp16"]
    assert cases.parse_variants("auto, naive,auto") == ["auto", "naive"]
    with pytest.raises(ValueError, match="unknown --dtype"):
        cases.parse_precisions("int8")


@pytest.mark.parametrize("argv", [["--layout", "xy"], ["--m", "0"], ["--m", "two"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        parse(*argv)
    assert e.value.code == 2


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([])
    assert e.value.code == 2


@pytest.mark.parametrize("argv", [["--workload", "nope"], ["--sweep", "--m", "64"], ["--dtype", "int8"],
                                  ["--workload", "large-k", "--k", "64"]])
def test_bad_selection_exits_2_before_touching_a_gpu(argv, capsys):
    assert cli.main(["bench", *argv]) == 2
    assert "pycutlass_gemm bench:" in capsys.readouterr().err


def test_cases_filter_registered_kernels_by_dtype_math_and_layout():
    workloads = cases.select_workloads(parse())
    got = {}
    for c in cases.build_cases(workloads, cases.PRECISIONS, None, FAKE_KERNELS):
        got.setdefault((c.workload.layout, c.precision.name), []).append(c.variant)
    assert got["rc", "bf16"] == ["torch", "torch+contiguous", "auto", "sm90_bf16_tn", "fallback", "naive"]
    assert got["cr", "bf16"] == ["torch", "torch+contiguous", "auto", "fallback", "naive"]
    assert got["rr", "tf32"] == ["torch", "auto", "sm90_tf32_nn", "fallback", "naive"]
    assert got["rr", "fp32"] == ["torch", "auto", "simt_f32_any", "fallback", "naive"]
    assert got["rr", "fp16"] == ["torch", "auto", "fallback", "naive"]


def test_named_variants_keep_torch_and_report_mismatches():
    [w] = cases.select_workloads(parse("--workload", "transposed-a"))
    bf16 = cases.parse_precisions("bfloat16")
    built = cases.build_cases([w], bf16, ["auto", "sm90_bf16_tn"], FAKE_KERNELS)
    assert [c.variant for c in built] == ["torch", "auto", "sm90_bf16_tn"]
    assert built[2].explicit and "row-major A, it is col-major" in built[2].skip_reason
    with pytest.raises(ValueError, match="unknown --variant"):
        cases.build_cases([w], bf16, ["no_such_kernel"], FAKE_KERNELS)
    # another precision's kernel is left out of this precision's rows, and alone it is an error
    both = cases.parse_precisions("bfloat16,tf32")
    built = cases.build_cases([w], both, ["sm90_tf32_nn"], FAKE_KERNELS)
    assert [(c.precision.name, c.variant) for c in built] == [("bf16", "torch"), ("tf32", "torch"),
                                                              ("tf32", "sm90_tf32_nn")]
    with pytest.raises(ValueError, match="built for float32 \\(tf32\\)"):
        cases.build_cases([w], bf16, ["sm90_tf32_nn"], FAKE_KERNELS)


def test_workload_views_match_the_layouts():
    w = cases.Workload("t", 8, 16, 32, "cr")
    a, b = w.meta_inputs(cases.PRECISIONS[2])
    assert a.shape == (8, 32) and b.shape == (32, 16) and a.dtype == torch.bfloat16
    assert a.stride() == (1, 8) and b.stride() == (16, 1)      # A is a view of a (K, M) tensor
    a, b = w.make_inputs(cases.PRECISIONS[0], device="cpu")
    assert a.stride() == (1, 8) and a.is_contiguous() is False and 0 <= float(a.min()) and float(a.max()) < 1
    assert w.flop == 2 * 8 * 16 * 32 and w.min_bytes(4) == (8 * 32 + 32 * 16 + 8 * 16) * 4


def test_fp16_inputs_are_scaled_to_keep_large_k_in_range():
    assert cases.fp16_input_scale(8192) == 1.0
    assert cases.fp16_input_scale(131072) == 0.5
    assert cases.fp16_input_scale(524288) == 0.125
    assert 524288 / 4 * cases.fp16_input_scale(524288) <= 2**14


@pytest.mark.parametrize("precision", cases.PRECISIONS, ids=lambda p: p.name)
@pytest.mark.parametrize("k", [4096, 8192, 131072, 524288])
def test_tolerances_agree_with_the_test_suite(precision, k):
    assert precision.tolerance(k) == pytest.approx(tolerance(precision.dtype, precision.math, k))


# --- the shapes users bring and the sections ---------------------------------------------------

def test_shapes_parse_batch_layout_and_dtype():
    shapes = cases.parse_shapes("1000x3000x777:rr:bf16, 16x4096x4096:RC:fp16,32x1024x64x1024:cr:tf32,8x8x8:cc:float32")
    got = [(w.batch, w.m, w.n, w.k, w.layout, p.name) for w, p in shapes]
    assert got == [(1, 1000, 3000, 777, "rr", "bf16"), (1, 16, 4096, 4096, "rc", "fp16"),
                   (32, 1024, 64, 1024, "cr", "tf32"), (1, 8, 8, 8, "cc", "fp32")]
    assert [w.name for w, _ in shapes[:3]] == ["1000x3000x777 rr", "16x4096x4096 rc", "32x1024x64x1024 cr"]
    w = shapes[2][0]
    assert w.flop == 2 * 32 * 1024 * 64 * 1024 and w.out_shape == (32, 1024, 64)
    assert w.min_bytes(2) == 32 * (1024 * 1024 + 1024 * 64 + 1024 * 64) * 2


@pytest.mark.parametrize("spec, message", [
    ("1000x3000:rr:bf16", "is not \\[Bx\\]MxNxK"),
    ("1000x3000x7x7x7:rr:bf16", "is not \\[Bx\\]MxNxK"),
    ("10x3ax7:rr:bf16", "is not \\[Bx\\]MxNxK"),
    ("0x30x7:rr:bf16", "sizes must be positive"),
    ("10x30x7:rx:bf16", "layout 'rx' is not one of rr, rc, cr, cc"),
    ("10x30x7:rr:int8", "dtype 'int8' is not one of fp32, tf32, bf16, fp16"),
    ("10x30x7:rr", "want \\[Bx\\]MxNxK:LAYOUT:DTYPE"),
    (" , ", "--shapes is empty"),
])
def test_bad_shapes_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        cases.parse_shapes(spec)


def test_bad_shapes_exit_2_naming_the_item(capsys):
    assert cli.main(["bench", "--shapes", "8x8x8:rr:bf16,8x8:rr:bf16"]) == 2
    assert "pycutlass_gemm bench: --shapes '8x8:rr:bf16': '8x8' is not [Bx]MxNxK" in capsys.readouterr().err


def test_batched_views_are_transposes_of_3d_tensors():
    w = cases.Workload.problem(4, 6, 8, "cr", batch=3)
    a, b = w.make_inputs(cases.PRECISIONS[2], device="cpu")
    assert a.shape == (3, 4, 8) and a.stride() == (32, 1, 4) and b.shape == (3, 8, 6) and b.stride() == (48, 6, 1)
    a, b = w.meta_inputs(cases.PRECISIONS[0])
    assert a.device.type == "meta" and a.shape == (3, 4, 8) and a.stride() == (32, 1, 4)


def test_user_shapes_default_quick_and_dtype_filter():
    full = cases.select_shapes(parse(), cases.PRECISIONS)
    assert len(full) == 16 and {p.name for _, p in full} == {"bf16"}
    assert {w.name for w, _ in full} >= {f"4096x4096x4096 {lay}" for lay in cases.LAYOUTS} | {
        "32x1024x64x1024 rr", "256x256x524288 rr", "1000x3000x777 rr", "2048x1001x2048 rr", "16x4096x4096 rc",
        "4096x50257x1024 rc"}
    assert len(cases.select_shapes(parse("--quick"), cases.PRECISIONS)) == 3
    assert cases.select_shapes(parse(), cases.parse_precisions("float32")) == []
    given = cases.select_shapes(parse("--shapes", "8x8x8:rr:fp16"), cases.parse_precisions("float32"))
    assert [(w.name, p.name) for w, p in given] == [("8x8x8 rr", "fp16")]  # --shapes carries its dtype


def test_shape_rows_are_torch_auto_and_the_kernels_that_fit():
    shapes = cases.parse_shapes("64x64x64:rc:bf16,64x64x64:cr:bf16")
    built = cases.build_cases([], [], None, FAKE_KERNELS, shapes=shapes)
    assert [(c.workload.layout, c.variant, c.section) for c in built] == [
        ("rc", "torch", "shapes"), ("rc", "auto", "shapes"), ("rc", "sm90_bf16_tn", "shapes"),
        ("cr", "torch", "shapes"), ("cr", "auto", "shapes")]
    named = cases.build_cases([], [], ["naive", "sm90_bf16_tn"], FAKE_KERNELS, shapes=shapes)
    assert [(c.workload.layout, c.variant) for c in named] == [("rc", "torch"), ("rc", "naive"), ("rc", "sm90_bf16_tn"),
                                                                 ("cr", "torch"), ("cr", "naive"), ("cr", "sm90_bf16_tn")]
    assert named[-1].skip_reason  # built for row-major A


@pytest.mark.parametrize("argv, sections", [
    ([], ["workloads", "shapes", "accuracy", "host", "call-time", "model"]),
    (["--quick"], ["workloads", "shapes", "accuracy", "host", "call-time", "model"]),
    (["--shapes", "8x8x8:rr:bf16"], ["shapes"]),
    (["--workload", "large-k"], ["workloads"]),
    (["--m", "64"], ["workloads"]),
    (["--sweep"], ["workloads"]),
    (["--section", "model, host"], ["host", "model"]),
    (["--section", "all"], ["workloads", "shapes", "accuracy", "host", "call-time", "model"]),
    (["--shapes", "8x8x8:rr:bf16", "--section", "shapes,call-time"], ["shapes", "call-time"]),
])
def test_section_selection(argv, sections):
    assert bench.select_sections(parse(*argv)) == sections


@pytest.mark.parametrize("argv, message", [
    (["--section", "hosts"], "unknown --section 'hosts'"),
    (["--shapes", "8x8x8:rr:bf16", "--m", "64"], "--shapes lists its own problems"),
    (["--shapes", "8x8x8:rr:bf16", "--dtype", "bf16"], "--shapes names each problem's dtype"),
])
def test_bad_section_or_combination_exits_2(argv, message, capsys):
    assert cli.main(["bench", *argv]) == 2
    assert message in capsys.readouterr().err


# --- reporting ------------------------------------------------------------------------------------

def test_speedups_against_naive_and_torch_of_the_same_precision():
    rows = [result("torch", ms=2.0), result("naive", ms=100.0), result("auto", ms=1.0),
            result("auto", precision="fp32", ms=4.0), result("fallback", status="FAIL", message="boom")]
    rows_mod.fill_speedups(rows)
    assert rows[2].x_naive == pytest.approx(100.0) and rows[2].x_torch == pytest.approx(2.0)
    assert rows[0].x_torch == pytest.approx(1.0)
    assert rows[3].x_naive is None and rows[3].x_torch is None  # no fp32 baselines in this run
    assert rows[4].x_torch is None


def test_vs_best_judges_autos_choice_by_its_own_row():
    rows = [result("torch", ms=2.0), result("auto", kernel="k2", ms=1.3), result("k1", kernel="k1", ms=1.0),
            result("k2", kernel="k2", ms=1.2), result("auto", precision="fp32", kernel="k9", ms=4.0),
            result("k9", precision="fp32", kernel="k9", ms=4.4)]
    rows_mod.fill_speedups(rows)
    assert rows[1].vs_best == pytest.approx(1.2) and rows[1].best_kernel == "k1"  # k2's row, not auto's 1.3
    assert rows[2].vs_best == pytest.approx(1.0) and rows[0].vs_best is None
    assert rows[4].vs_best == pytest.approx(1.0)  # auto ran k9, the only named kernel: its own row
    summary = report.format_auto_summary(rows)
    assert "within 3% on 1 of 2 rows" in summary and "+20.0%" in summary and "k1 was fastest" in summary
    assert "+20.0%" in report.format_row(rows[1])


def test_a_failed_row_shows_its_error_and_no_speed():
    ok = report.format_row(result("auto", kernel="sm90_bf16_tn", x_torch=1.25, x_naive=300.0))
    assert "sm90_bf16_tn" in ok and "137.4" in ok and "1.25x" in ok and "300.0x" in ok and ok.endswith("ok")
    bad = report.format_row(result("fallback", status="FAIL", error=0.5, tol=1e-2,
                                  message="error 5.00e-01 > tolerance 1.0e-02", tflops=999.0, ms=0.1))
    assert "FAIL" in bad and "5.0e-01" in bad and "999" not in bad and "0.100" not in bad
    header = report.format_header(report.Columns())
    assert all(word in header for word in ("ms", "TFLOP/s", "%peak", "x naive", "x torch", "error", "status"))


def test_csv_and_json_files(tmp_path):
    rows = [result("torch", x_torch=1.0), result("naive", status="FAIL", error=float("nan"), message="NaN in output")]
    report.write_csv(tmp_path / "r.csv", rows)
    with open(tmp_path / "r.csv", newline="") as f:
        read = list(csv.DictReader(f))
    assert list(read[0]) == cases.FIELDS
    assert read[0]["variant"] == "torch" and float(read[0]["tflops"]) == pytest.approx(137.4)
    assert read[1]["status"] == "FAIL" and read[1]["ms"] == ""

    report.write_json(tmp_path / "r.json", rows, {"device": "fake", "peaks": {"bf16": 700.0, "fp32": float("inf")}})
    data = json.loads((tmp_path / "r.json").read_text())  # strict JSON: no NaN/Infinity literals
    assert data["meta"]["device"] == "fake" and data["meta"]["peaks"] == {"bf16": 700.0, "fp32": None}
    assert data["results"][0]["x_torch"] == 1.0
    assert data["results"][1]["error"] is None and data["results"][1]["message"] == "NaN in output"


def test_progress_counter_without_tqdm(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    p = report.Progress(2)
    p.update("one")
    p.write("a table line")
    p.update("two")
    p.close()
    out, err = capsys.readouterr()
    assert out == "a table line\n" and "[1/2] one" in err and "[2/2] two" in err


def test_plots_are_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [result("torch"), result("auto", tflops=200.0), result("naive", status="FAIL"),
            result("auto", precision="fp32", tflops=40.0)]
    plot.plot_bars(rows, tmp_path / "bars.png", "test")
    sweep = [result(v, m=s, n=s, k=s, workload=f"{s}^3", tflops=s / 10) for s in (256, 512) for v in ("torch", "auto")]
    plot.plot_sweep(sweep, tmp_path / "sweep.png", "test")
    assert (tmp_path / "bars.png").stat().st_size > 0 and (tmp_path / "sweep.png").stat().st_size > 0
