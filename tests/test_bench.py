"""The bench command: argument parsing, case selection, the table, CSV/JSON files and the no-GPU
report run on the CPU; one quick real run needs a GPU."""

import contextlib
import csv
import importlib
import importlib.util
import json
import math
import pathlib
import sys
import time
import types

import pytest
import torch

from conftest import gpu, tolerance

SRC = pathlib.Path(__file__).resolve().parents[1] / "pycutlass_gemm"


MODULES = ("bench_cases", "bench_timing", "bench_report", "bench_plot", "bench_rows", "bench_host", "bench_model",
           "bench", "__main__")


def _load_cli():
    """{module name: module} of the bench modules and __main__, and has_ext. The installed modules
    when they import; otherwise the source tree's, under a stub package when the compiled core is
    not built (tests then fake the API)."""
    try:
        import pycutlass_gemm  # noqa: F401
        return {name: importlib.import_module(f"pycutlass_gemm.{name}") for name in MODULES}, True
    except ImportError:
        pass
    names = ["pycutlass_gemm"] + [f"pycutlass_gemm.{name}" for name in MODULES]
    saved = {name: sys.modules.get(name) for name in names}
    try:
        import pycutlass_gemm  # noqa: F401 -- installed without the bench modules (an older build)
        has_ext = True
    except ImportError:
        stub = types.ModuleType("pycutlass_gemm")
        stub.__path__ = [str(SRC)]
        sys.modules["pycutlass_gemm"] = stub
        has_ext = False
    try:
        for name in names[1:]:
            sys.modules.pop(name, None)  # the source tree's own, each importing the others from it
        loaded = {}
        for name in MODULES:
            spec = importlib.util.spec_from_file_location(f"pycutlass_gemm.{name}", SRC / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            loaded[name] = module
        return loaded, has_ext
    finally:  # leave the rest of the session the package as it really imports
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


_modules, HAS_EXT = _load_cli()
cli, bench = _modules["__main__"], _modules["bench"]
cases, timing, report, plot, rows_mod, host, model = (
    _modules[f"bench_{name}"] for name in ("cases", "timing", "report", "plot", "rows", "host", "model"))
_api = bench._api  # the package (or the stub) every bench module calls through

FAKE_KERNELS = [
    {"name": "naive", "family": "naive", "dtype": d, "math": "ieee", "layout_a": "any", "layout_b": "any",
     "sm_min": 80, "sm_max": 999, "tile": "", "alignment": 1, "priority": -1}
    for d in ("float32", "float16", "bfloat16")
] + [
    {"name": "fallback", "family": "fallback", "dtype": d, "math": "ieee", "layout_a": "any", "layout_b": "any",
     "sm_min": 80, "sm_max": 999, "tile": "", "alignment": 1, "priority": 0}
    for d in ("float32", "float16", "bfloat16")
] + [
    {"name": "sm90_bf16_tn", "family": "cutlass_sm90", "dtype": "bfloat16", "math": "ieee", "layout_a": "row",
     "layout_b": "col", "sm_min": 90, "sm_max": 90, "tile": "128x256x64", "alignment": 8, "priority": 10},
    {"name": "sm90_tf32_nn", "family": "cutlass_sm90", "dtype": "float32", "math": "tf32", "layout_a": "row",
     "layout_b": "row", "sm_min": 90, "sm_max": 90, "tile": "128x128x32", "alignment": 4, "priority": 10},
    {"name": "simt_f32_any", "family": "cutlass_simt", "dtype": "float32", "math": "ieee", "layout_a": "any",
     "layout_b": "any", "sm_min": 80, "sm_max": 999, "tile": "128x128x8", "alignment": 1, "priority": 5},
]


def parse(*argv):
    return cli.build_parser().parse_args(["bench", *argv])


def result(variant="auto", status="ok", **kw):
    base = dict(workload="transposed A", m=2048, n=4096, k=8192, layout="cr", precision="bf16",
                variant=variant, kernel=variant, status=status)
    if status == "ok":
        base.update(error=1e-3, tol=1e-2, ms=1.0, ms_min=0.9, runs=10, tflops=137.4, pct_peak=20.0,
                    gbps=100.0, pct_bw=3.0)
    base.update(kw)
    return cases.Result(**base)


# --- parsing and selection ------------------------------------------------------------------------

def test_defaults_select_the_three_workloads_and_four_precisions():
    args = parse()
    assert args.command == "bench" and not args.quick and not args.sweep
    assert [w.name for w in cases.select_workloads(args)] == ["transposed A", "transposed B", "large K"]
    assert [p.name for p in cases.parse_precisions(args.dtype)] == ["fp32", "tf32", "bf16", "fp16"]
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
    assert len(full) == 13 and {p.name for _, p in full} == {"bf16"}
    assert {w.name for w, _ in full} >= {f"4096x4096x4096 {lay}" for lay in cases.LAYOUTS} | {
        "32x1024x64x1024 rr", "256x256x524288 rr", "1000x3000x777 rr", "2048x1001x2048 rr", "16x4096x4096 rc"}
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
    ([], ["workloads", "shapes", "host", "call-time", "model"]),
    (["--quick"], ["workloads", "shapes", "host", "call-time", "model"]),
    (["--shapes", "8x8x8:rr:bf16"], ["shapes"]),
    (["--workload", "large-k"], ["workloads"]),
    (["--m", "64"], ["workloads"]),
    (["--sweep"], ["workloads"]),
    (["--section", "model, host"], ["host", "model"]),
    (["--section", "all"], ["workloads", "shapes", "host", "call-time", "model"]),
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


def test_targets_and_small_tables():
    assert report.fmt_target(1.25, 1.3, at_least=False) == "<= 1.3x ok"
    assert report.fmt_target(1.31, 1.3, at_least=False) == "<= 1.3x MISS"
    assert report.fmt_target(0.94, 0.95, at_least=True) == ">= 0.95x MISS"
    assert report.fmt_target(None, 0.95, at_least=True) == ">= 0.95x -" and report.fmt_target(2.0, None, True) == ""
    lines = report.text_table(["name", "ms"], [["a", "1.0"], ["long name", "10.25"]], "lr")
    assert lines == ["name          ms", "a            1.0", "long name  10.25"]


def test_host_table_with_fake_numbers():
    rows = [host.HostRow(256, "pg.gemm(a, b)", "torch.matmul(a, b)", us=26.0, torch_us=20.0, ratio=1.3, target=1.3,
                         calls=300, rounds=15),
            host.HostRow(256, "pg.gemm(a, b, out=o)", "torch.matmul(a, b, out=o)", us=30.0, torch_us=20.0, ratio=1.5,
                         target=1.2, calls=300, rounds=15),
            host.HostRow(1024, "pg.matmul(a, b)", "torch.matmul(a, b)", status="FAIL", message="RuntimeError: boom")]
    title, header, *lines = host.format_host(rows)
    assert "300 back-to-back calls" in title and "median of 15" in title
    assert header.split()[:3] == ["size", "pg", "call"] and "pg/torch" in header and "target" in header
    assert "26.0" in lines[0] and "20.0" in lines[0] and "1.30x" in lines[0] and "<= 1.3x ok" in lines[0]
    assert "1.50x" in lines[1] and "<= 1.2x MISS" in lines[1]
    assert lines[2].startswith("1024") and lines[2].endswith("FAIL RuntimeError: boom")
    assert header.index("target") == lines[0].index("<=") == lines[1].index("<=")  # the columns line up


def test_call_time_table_with_fake_numbers():
    ok = host.CallTimeRow("transposed B", "bf16", "sm90_bf16_rc", auto_kernel_ms=0.18, auto_call_ms=0.30,
                          torch_kernel_ms=0.18, torch_call_ms=0.20, x_torch_kernel=1.0, x_torch_call=0.6667,
                          drift=-0.3333, runs=20)
    close = host.CallTimeRow("large K", "bf16", "streamk", 0.22, 0.25, 0.22, 0.25, 1.0, 1.0, 0.01, 20)
    bad = host.CallTimeRow("large K", "fp32", "?", status="FAIL", message="auto: FAIL error 1 > tolerance")
    title, header, *lines = host.format_call_time([ok, close, bad])
    assert "idle GPU" in title and "x torch kernel" in header and "x torch call" in header
    assert "0.180" in lines[0] and "0.300" in lines[0] and "0.67x" in lines[0] and "-33.3%" in lines[0]
    assert "within 3% MISS" in lines[0] and "within 3% ok" in lines[1] and "+1.0%" in lines[1]
    assert "within 3% -" in lines[2] and lines[2].endswith("FAIL auto: FAIL error 1 > tolerance")


def test_model_table_with_fake_numbers():
    rows = [model.ModelRow("MLP", "bf16", "torch.matmul", ms=2.0, wall_ms=2.1, x_torch=1.0, pg_ops=0),
            model.ModelRow("MLP", "bf16", "pg.matmul", ms=2.5, wall_ms=2.6, x_torch=0.8, out_err=3e-3, grad_err=4e-3,
                           pg_ops=9, target=0.95),
            model.ModelRow("encoder layer", "bf16", "enable()", status="SKIP", message="no enable()")]
    title, header, *lines = model.format_model(rows, quick=True)
    assert "training step" in title and all(w in header for w in ("ms/step", "wall ms", "x torch", "out err", "pg kernels"))
    assert "2.500" in lines[1] and "0.80x" in lines[1] and ">= 0.95x MISS" in lines[1] and "3.0e-03" in lines[1]
    assert lines[2].endswith("SKIP no enable()") and "eager only" in lines[3]


def test_json_holds_the_other_sections(tmp_path):
    extra = {"host": [host.HostRow(256, "pg.gemm(a, b)", "torch.matmul(a, b)", us=float("nan"))],
             "model": [model.ModelRow("MLP", "tf32", "pg.matmul", ms=1.0)]}
    report.write_json(tmp_path / "r.json", [result("torch")], {"device": "fake"}, extra)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["host"][0]["call"] == "pg.gemm(a, b)" and data["host"][0]["us"] is None
    assert data["model"][0]["precision"] == "tf32" and data["results"][0]["variant"] == "torch"


# --- without a GPU ------------------------------------------------------------------------------

def test_without_a_gpu_it_says_so_shows_the_plan_and_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    planned = []
    if not HAS_EXT:  # no compiled core here: stand in for plan(), checking what it is given
        def fake_plan(a, b, *, precision=None, arch=None):
            assert a.device.type == "meta" and arch == 90
            planned.append((tuple(a.shape), tuple(b.shape), a.stride(), precision))
            return {"kernel": "fallback", "reason": "fake plan"}
        monkeypatch.setattr(_api, "plan", fake_plan, raising=False)

    assert cli.main(["bench"]) == 2
    out, err = capsys.readouterr()
    assert "no CUDA device" in err and "Nothing was timed" in err
    lines = [line for line in out.splitlines() if line.startswith("  ")]
    assert len(lines) == 3 * 4 + 13  # every workload and precision, and the shapes users bring
    assert "Sections host, call-time, model need a GPU." in out
    assert all("cannot plan" not in line for line in lines), out
    assert any("large K" in line and "256x256x524288" in line and "fp16" in line for line in lines)
    if not HAS_EXT:  # transposed A, fp32: A is the (M, K) column-major view of a (K, M) tensor
        assert ((2048, 8192), (8192, 4096), (1, 2048), "ieee") in planned
        assert ((32, 1024, 1024), (32, 1024, 64), (1024 * 1024, 1024, 1), None) in planned  # the batched shape


def test_without_a_gpu_a_broken_plan_still_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def broken(*args, **kwargs):
        raise RuntimeError("no compiled core")
    monkeypatch.setattr(_api, "plan", broken, raising=False)
    assert cli.main(["bench", "--quick", "--workload", "large-k", "--dtype", "bf16"]) == 2
    assert "cannot plan: RuntimeError: no compiled core" in capsys.readouterr().out


# --- the whole pipeline, with the CPU standing in for the GPU ----------------------------------------

class _WallClockEvent:
    """torch.cuda.Event on the host clock: enough to run time_cuda's logic on the CPU."""

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


def _fake_gemm(a, b, *, variant="auto", out=None, precision=None):
    if variant == "fallback":
        raise ValueError("kernel 'fallback' cannot implement this problem: fake")
    if variant == "auto":
        return out.zero_()  # wrong on purpose: must show as FAIL, never as a speed
    return torch.matmul(a, b, out=out)  # naive and the registered kernel: right


def test_pipeline_on_cpu_checks_times_and_reports(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cases, "DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", _WallClockEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(bench, "QUICK", timing.Settings(budget_s=0.01, max_runs=5, warmup_s=0.0, peak_size=64,
                                                       copy_mib=1, flush_mib=1))
    monkeypatch.setattr(bench, "_device_meta", lambda: {"device": "CPU standing in", "sm": 90, "sms": 1,
                                                        "torch": torch.__version__, "cuda": None,
                                                        "pycutlass_gemm": "test"})
    api = _api
    monkeypatch.setattr(api, "kernels", lambda: FAKE_KERNELS, raising=False)
    monkeypatch.setattr(api, "gemm", _fake_gemm, raising=False)
    monkeypatch.setattr(api, "plan", lambda a, b, **kw: {"kernel": "simt_f32_any", "reason": "fake"}, raising=False)
    monkeypatch.setattr(api, "can_run", lambda name, a, b, **kw: "" if name == "simt_f32_any" else "needs sm_90",
                        raising=False)

    rc = cli.main(["bench", "--quick", "--no-progress", "--m", "32", "--n", "16", "--k", "64", "--layout", "cr",
                   "--dtype", "float32,bfloat16", "--variant", "naive,auto,fallback,simt_f32_any,sm90_bf16_tn",
                   "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 1, out  # auto and fallback FAIL
    rows = {(r["precision"], r["variant"]): r for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert set(rows) == {(p, v) for p in ("fp32", "bf16") for v in ("torch", "naive", "auto", "fallback")} | {
        ("fp32", "simt_f32_any"), ("bf16", "sm90_bf16_tn")}
    for p in ("fp32", "bf16"):
        torch_row, naive = rows[p, "torch"], rows[p, "naive"]
        assert torch_row["status"] == naive["status"] == "ok" and torch_row["x_torch"] == pytest.approx(1.0)
        assert naive["x_naive"] == pytest.approx(1.0) and naive["runs"] >= 3 and naive["pct_peak"] > 0
        assert rows[p, "auto"]["status"] == "FAIL" and rows[p, "auto"]["error"] == pytest.approx(1.0)
        assert rows[p, "auto"]["ms"] is None and rows[p, "auto"]["kernel"] == "simt_f32_any"
        assert rows[p, "fallback"]["status"] == "FAIL" and "ValueError" in rows[p, "fallback"]["message"]
    assert rows["fp32", "simt_f32_any"]["status"] == "ok"
    assert ("bf16", "simt_f32_any") not in rows and ("fp32", "sm90_bf16_tn") not in rows  # other dtypes' kernels
    assert rows["bf16", "sm90_bf16_tn"]["status"] == "SKIP"  # built for row-major A; A is a column-major view
    assert "measured peaks" in out and "5 ok, 4 FAIL, 1 SKIP" in out
    assert len([line for line in out.splitlines() if line.startswith("32x16x64 cr")]) == 10


def _right_gemm(a, b, c=None, *, alpha=1.0, beta=0.0, variant="auto", out=None, precision=None):
    return torch.matmul(a, b, out=out)


def test_sections_on_cpu_run_report_and_write_json(monkeypatch, tmp_path, capsys):
    """shapes, host, call time and model end to end, the CPU standing in for the GPU and torch
    for the package (so every ratio is about 1 and every pg-ops count 0)."""
    monkeypatch.setattr(cases, "DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", _WallClockEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(bench, "QUICK", timing.Settings(budget_s=0.01, max_runs=3, warmup_s=0.0, peak_size=64,
                                                       copy_mib=1, flush_mib=1))
    monkeypatch.setattr(bench, "_device_meta", lambda: {"device": "CPU standing in", "sm": 90, "sms": 1,
                                                        "torch": torch.__version__, "cuda": None, "pycutlass_gemm": "test"})
    monkeypatch.setattr(host, "QUICK_HOST_SIZES", (16,))
    monkeypatch.setattr(host, "QUICK_HOST_CALLS", 3)
    monkeypatch.setattr(host, "QUICK_HOST_ROUNDS", 2)
    monkeypatch.setattr(model, "MLP", model.MlpShape(tokens=32, width=16, layers=3))
    monkeypatch.setattr(model, "ENCODER", model.EncoderShape(d_model=16, nhead=2, dim_feedforward=32, batch=2, seq=4))
    for name, value in (("kernels", lambda: FAKE_KERNELS), ("gemm", _right_gemm),
                        ("matmul", lambda a, b, *, precision=None: torch.matmul(a, b)),
                        ("plan", lambda a, b, **kw: {"kernel": "sm90_bf16_tn", "reason": "fake"}),
                        ("can_run", lambda name, a, b, **kw: ""), ("enable", contextlib.nullcontext)):
        monkeypatch.setattr(_api, name, value, raising=False)
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32

    rc = cli.main(["bench", "--quick", "--no-progress", "--shapes", "8x16x32:rc:bf16,2x8x16x32:cr:fp32",
                   "--section", "shapes,host,call-time,model", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert torch.backends.cuda.matmul.allow_tf32 == allow_tf32
    for heading in ("== shapes users bring", "== host", "== call time", "== model"):
        assert heading in out
    assert "== workloads" not in out and "(--quick: the encoder layer eager only" in out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["meta"]["sections"] == ["shapes", "host", "call-time", "model"]
    rows = {(r["workload"], r["variant"]): r for r in data["results"]}
    assert set(rows) == {("8x16x32 rc", "torch"), ("8x16x32 rc", "auto"), ("8x16x32 rc", "sm90_bf16_tn"),
                         ("2x8x16x32 cr", "torch"), ("2x8x16x32 cr", "auto"), ("2x8x16x32 cr", "simt_f32_any")}
    assert all(r["status"] == "ok" and r["section"] == "shapes" for r in rows.values())
    assert rows["2x8x16x32 cr", "auto"]["batch"] == 2
    assert [(r["size"], r["status"]) for r in data["host"]] == [(16, "ok")] * 5
    assert all(r["us"] > 0 and r["ratio"] > 0 for r in data["host"])
    assert [(r["workload"], r["precision"], r["status"]) for r in data["call_time"]] == [
        ("8x16x32 rc", "bf16", "ok"), ("2x8x16x32 cr", "fp32", "ok")]
    assert all(r["auto_call_ms"] > 0 and r["x_torch_kernel"] > 0 and r["drift"] is not None for r in data["call_time"])
    variants = [(r["model"].split()[0], r["precision"], r["variant"], r["status"]) for r in data["model"]]
    assert variants == [("MLP", "bf16", "torch.matmul", "ok"), ("MLP", "bf16", "pg.matmul", "ok"),
                        ("MLP", "tf32", "torch.matmul", "ok"), ("MLP", "tf32", "pg.matmul", "ok"),
                        ("encoder", "bf16", "torch eager", "ok"), ("encoder", "bf16", "enable() eager", "ok")]
    for r in data["model"]:
        assert r["ms"] > 0 and r["wall_ms"] > 0 and r["runs"] >= 3 and r["x_torch"] > 0
        assert r["out_err"] in (None, 0.0)  # torch against torch here: bit for bit
    assert "0 FAIL" in out


def test_model_without_enable_skips_the_encoder(monkeypatch):
    monkeypatch.setattr(cases, "DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "Event", _WallClockEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(model, "MLP", model.MlpShape(tokens=8, width=8, layers=2))
    monkeypatch.setattr(_api, "matmul", lambda a, b, *, precision=None: torch.matmul(a, b), raising=False)
    monkeypatch.delattr(_api, "enable", raising=False)
    fast = timing.Settings(budget_s=0.0, min_runs=2, max_runs=2, warmup_s=0.0)
    rows = model.run_model(True, fast, report.Progress(1, enabled=False))
    assert [r.status for r in rows] == ["ok"] * 4 + ["SKIP"] and "enable() does not exist" in rows[-1].message


# --- on a GPU -----------------------------------------------------------------------------------

@pytest.mark.gpu
@gpu
def test_quick_run_on_the_gpu_has_no_fail(tmp_path, capsys):
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32  # the run must leave it as it found it
    argv = ["bench", "--quick", "--no-progress", "--workload", "transposed-a", "--dtype", "bfloat16,tf32",
            "--variant", "torch+contiguous,auto,fallback", "--json", str(tmp_path / "r.json"),
            "--csv", str(tmp_path / "r.csv")]
    rc = cli.main(argv)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "FAIL" not in out.replace("0 FAIL", "")
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert {(r["precision"], r["variant"]) for r in rows} >= {
        (p, v) for p in ("bf16", "tf32") for v in ("torch", "torch+contiguous", "auto", "fallback")}
    for r in rows:
        assert r["status"] == "ok", r
        assert r["error"] <= r["tol"] and r["runs"] >= 3 and r["tflops"] > 0 and r["x_torch"] > 0
        assert math.isfinite(r["ms"])
    assert torch.backends.cuda.matmul.allow_tf32 == allow_tf32


@pytest.mark.gpu
@gpu
def test_quick_sections_on_the_gpu(tmp_path, capsys):
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    rc = cli.main(["bench", "--quick", "--no-progress", "--shapes", "16x4096x4096:rc:bf16,32x1024x64x1024:rr:bf16",
                   "--section", "shapes,host,call-time,model", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads((tmp_path / "r.json").read_text())
    assert {r["status"] for r in data["results"]} == {"ok"}
    assert len(data["host"]) == 5 and all(r["status"] == "ok" and r["ratio"] > 0 for r in data["host"])
    assert len(data["call_time"]) == 2 and all(r["status"] == "ok" and r["drift"] is not None for r in data["call_time"])
    for r in data["model"]:
        assert r["status"] in ("ok", "SKIP"), r
        if r["status"] == "ok" and r["variant"].startswith(("pg", "enable")):
            assert r["out_err"] is not None and r["pg_ops"] != 0, r  # the package's kernels ran
    assert torch.backends.cuda.matmul.allow_tf32 == allow_tf32
