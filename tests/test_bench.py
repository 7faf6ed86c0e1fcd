"""The bench command: argument parsing, case selection, the table, CSV/JSON files and the no-GPU
report run on the CPU; one quick real run needs a GPU."""

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


def _load_cli():
    """(bench, __main__, has_ext). The installed modules when they import; otherwise the source
    tree's, under a stub package when the compiled core is not built (tests then fake the API)."""
    try:
        from pycutlass_gemm import __main__ as cli, bench
        return bench, cli, True
    except ImportError:
        pass
    saved = {name: sys.modules.get(name) for name in ("pycutlass_gemm", "pycutlass_gemm.bench", "pycutlass_gemm.__main__")}
    try:
        import pycutlass_gemm  # noqa: F401 -- installed without bench.py (an older build)
        has_ext = True
    except ImportError:
        stub = types.ModuleType("pycutlass_gemm")
        stub.__path__ = [str(SRC)]
        sys.modules["pycutlass_gemm"] = stub
        has_ext = False
    try:
        loaded = {}
        for name in ("bench", "__main__"):
            spec = importlib.util.spec_from_file_location(f"pycutlass_gemm.{name}", SRC / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            loaded[name] = module
        return loaded["bench"], loaded["__main__"], has_ext
    finally:  # leave the rest of the session the package as it really imports
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


bench, cli, HAS_EXT = _load_cli()

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
    return bench.Result(**base)


# --- parsing and selection ------------------------------------------------------------------------

def test_defaults_select_the_three_workloads_and_four_precisions():
    args = parse()
    assert args.command == "bench" and not args.quick and not args.sweep
    assert [w.name for w in bench.select_workloads(args)] == ["transposed A", "transposed B", "large K"]
    assert [p.name for p in bench.parse_precisions(args.dtype)] == ["fp32", "tf32", "bf16", "fp16"]
    assert bench.parse_variants(args.variant) is None
    big = {w.name: (w.m, w.n, w.k, w.layout) for w in bench.select_workloads(args)}
    assert big == {"transposed A": (2048, 4096, 8192, "cr"), "transposed B": (2048, 4096, 8192, "rc"),
                   "large K": (256, 256, 524288, "rr")}


def test_quick_workloads_are_the_small_variants():
    sizes = [(w.m, w.n, w.k) for w in bench.select_workloads(parse("--quick"))]
    assert sizes == [(1024, 2048, 4096), (1024, 2048, 4096), (256, 256, 131072)]


def test_custom_problem_and_layout():
    [w] = bench.select_workloads(parse("--m", "128", "--k", "64", "--layout", "cc"))
    assert (w.m, w.n, w.k, w.layout) == (128, 4096, 64, "cc")
    assert (w.layout_a, w.layout_b) == ("col", "col")


def test_sweep_sizes_and_variants():
    ws = bench.select_workloads(parse("--sweep", "--quick", "--layout", "rc"))
    assert [w.m for w in ws] == list(bench.QUICK_SWEEP_SIZES)
    assert all(w.m == w.n == w.k and w.layout == "rc" for w in ws)
    assert max(w.m for w in bench.select_workloads(parse("--sweep"))) == 8192


def test_dtype_and_variant_lists():
    assert [p.name for p in bench.parse_precisions("tf32,bf16,float16")] == ["tf32", "bf16", "fp16"]
    assert bench.parse_variants("auto, naive,auto") == ["auto", "naive"]
    with pytest.raises(ValueError, match="unknown --dtype"):
        bench.parse_precisions("int8")


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
    workloads = bench.select_workloads(parse())
    got = {}
    for c in bench.build_cases(workloads, bench.PRECISIONS, None, FAKE_KERNELS):
        got.setdefault((c.workload.layout, c.precision.name), []).append(c.variant)
    assert got["rc", "bf16"] == ["torch", "torch+contiguous", "auto", "sm90_bf16_tn", "fallback", "naive"]
    assert got["cr", "bf16"] == ["torch", "torch+contiguous", "auto", "fallback", "naive"]
    assert got["rr", "tf32"] == ["torch", "auto", "sm90_tf32_nn", "fallback", "naive"]
    assert got["rr", "fp32"] == ["torch", "auto", "simt_f32_any", "fallback", "naive"]
    assert got["rr", "fp16"] == ["torch", "auto", "fallback", "naive"]


def test_named_variants_keep_torch_and_report_mismatches():
    [w] = bench.select_workloads(parse("--workload", "transposed-a"))
    bf16 = bench.parse_precisions("bfloat16")
    cases = bench.build_cases([w], bf16, ["auto", "sm90_bf16_tn"], FAKE_KERNELS)
    assert [c.variant for c in cases] == ["torch", "auto", "sm90_bf16_tn"]
    assert cases[2].explicit and "row-major A, it is col-major" in cases[2].skip_reason
    with pytest.raises(ValueError, match="unknown --variant"):
        bench.build_cases([w], bf16, ["no_such_kernel"], FAKE_KERNELS)
    # another precision's kernel is left out of this precision's rows, and alone it is an error
    both = bench.parse_precisions("bfloat16,tf32")
    cases = bench.build_cases([w], both, ["sm90_tf32_nn"], FAKE_KERNELS)
    assert [(c.precision.name, c.variant) for c in cases] == [("bf16", "torch"), ("tf32", "torch"),
                                                              ("tf32", "sm90_tf32_nn")]
    with pytest.raises(ValueError, match="built for float32 \\(tf32\\)"):
        bench.build_cases([w], bf16, ["sm90_tf32_nn"], FAKE_KERNELS)


def test_workload_views_match_the_layouts():
    w = bench.Workload("t", 8, 16, 32, "cr")
    a, b = w.meta_inputs(bench.PRECISIONS[2])
    assert a.shape == (8, 32) and b.shape == (32, 16) and a.dtype == torch.bfloat16
    assert a.stride() == (1, 8) and b.stride() == (16, 1)      # A is a view of a (K, M) tensor
    a, b = w.make_inputs(bench.PRECISIONS[0], device="cpu")
    assert a.stride() == (1, 8) and a.is_contiguous() is False and 0 <= float(a.min()) and float(a.max()) < 1
    assert w.flop == 2 * 8 * 16 * 32 and w.min_bytes(4) == (8 * 32 + 32 * 16 + 8 * 16) * 4


def test_fp16_inputs_are_scaled_to_keep_large_k_in_range():
    assert bench.fp16_input_scale(8192) == 1.0
    assert bench.fp16_input_scale(131072) == 0.5
    assert bench.fp16_input_scale(524288) == 0.125
    assert 524288 / 4 * bench.fp16_input_scale(524288) <= 2**14


@pytest.mark.parametrize("precision", bench.PRECISIONS, ids=lambda p: p.name)
@pytest.mark.parametrize("k", [4096, 8192, 131072, 524288])
def test_tolerances_agree_with_the_test_suite(precision, k):
    assert precision.tolerance(k) == pytest.approx(tolerance(precision.dtype, precision.math, k))


# --- reporting ------------------------------------------------------------------------------------

def test_speedups_against_naive_and_torch_of_the_same_precision():
    rows = [result("torch", ms=2.0), result("naive", ms=100.0), result("auto", ms=1.0),
            result("auto", precision="fp32", ms=4.0), result("fallback", status="FAIL", message="boom")]
    bench.fill_speedups(rows)
    assert rows[2].x_naive == pytest.approx(100.0) and rows[2].x_torch == pytest.approx(2.0)
    assert rows[0].x_torch == pytest.approx(1.0)
    assert rows[3].x_naive is None and rows[3].x_torch is None  # no fp32 baselines in this run
    assert rows[4].x_torch is None


def test_a_failed_row_shows_its_error_and_no_speed():
    ok = bench.format_row(result("auto", kernel="sm90_bf16_tn", x_torch=1.25, x_naive=300.0))
    assert "sm90_bf16_tn" in ok and "137.4" in ok and "1.25x" in ok and "300.0x" in ok and ok.endswith("ok")
    bad = bench.format_row(result("fallback", status="FAIL", error=0.5, tol=1e-2,
                                  message="error 5.00e-01 > tolerance 1.0e-02", tflops=999.0, ms=0.1))
    assert "FAIL" in bad and "5.0e-01" in bad and "999" not in bad and "0.100" not in bad
    header = bench.format_header(bench.Columns())
    assert all(word in header for word in ("ms", "TFLOP/s", "%peak", "x naive", "x torch", "error", "status"))


def test_csv_and_json_files(tmp_path):
    rows = [result("torch", x_torch=1.0), result("naive", status="FAIL", error=float("nan"), message="NaN in output")]
    bench.write_csv(tmp_path / "r.csv", rows)
    with open(tmp_path / "r.csv", newline="") as f:
        read = list(csv.DictReader(f))
    assert list(read[0]) == bench.FIELDS
    assert read[0]["variant"] == "torch" and float(read[0]["tflops"]) == pytest.approx(137.4)
    assert read[1]["status"] == "FAIL" and read[1]["ms"] == ""

    bench.write_json(tmp_path / "r.json", rows, {"device": "fake", "peaks": {"bf16": 700.0, "fp32": float("inf")}})
    data = json.loads((tmp_path / "r.json").read_text())  # strict JSON: no NaN/Infinity literals
    assert data["meta"]["device"] == "fake" and data["meta"]["peaks"] == {"bf16": 700.0, "fp32": None}
    assert data["results"][0]["x_torch"] == 1.0
    assert data["results"][1]["error"] is None and data["results"][1]["message"] == "NaN in output"


def test_progress_counter_without_tqdm(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    p = bench.Progress(2)
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
    bench.plot_bars(rows, tmp_path / "bars.png", "test")
    sweep = [result(v, m=s, n=s, k=s, workload=f"{s}^3", tflops=s / 10) for s in (256, 512) for v in ("torch", "auto")]
    bench.plot_sweep(sweep, tmp_path / "sweep.png", "test")
    assert (tmp_path / "bars.png").stat().st_size > 0 and (tmp_path / "sweep.png").stat().st_size > 0


# --- without a GPU ------------------------------------------------------------------------------

def test_without_a_gpu_it_says_so_shows_the_plan_and_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    planned = []
    if not HAS_EXT:  # no compiled core here: stand in for plan(), checking what it is given
        def fake_plan(a, b, *, precision=None, arch=None):
            assert a.device.type == "meta" and arch == 90
            planned.append((tuple(a.shape), tuple(b.shape), a.stride(), precision))
            return {"kernel": "fallback", "reason": "fake plan"}
        monkeypatch.setattr(bench._api, "plan", fake_plan, raising=False)

    assert cli.main(["bench"]) == 2
    out, err = capsys.readouterr()
    assert "no CUDA device" in err and "Nothing was timed" in err
    lines = [line for line in out.splitlines() if line.startswith("  ")]
    assert len(lines) == 3 * 4  # every workload and precision
    assert all("cannot plan" not in line for line in lines), out
    assert any("large K" in line and "256x256x524288" in line and "fp16" in line for line in lines)
    if not HAS_EXT:  # transposed A, fp32: A is the (M, K) column-major view of a (K, M) tensor
        assert ((2048, 8192), (8192, 4096), (1, 2048), "ieee") in planned


def test_without_a_gpu_a_broken_plan_still_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def broken(*args, **kwargs):
        raise RuntimeError("no compiled core")
    monkeypatch.setattr(bench._api, "plan", broken, raising=False)
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
    monkeypatch.setattr(bench, "DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", _WallClockEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(bench, "QUICK", bench.Settings(budget_s=0.01, max_runs=5, warmup_s=0.0, peak_size=64,
                                                       copy_mib=1, flush_mib=1))
    monkeypatch.setattr(bench, "_device_meta", lambda: {"device": "CPU standing in", "sm": 90, "sms": 1,
                                                        "torch": torch.__version__, "cuda": None,
                                                        "pycutlass_gemm": "test"})
    api = bench._api
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
