"""The bench's other sections (host, call time, model), the JSON that holds them, the no-GPU report and
the whole pipeline on the CPU; two quick real runs need a GPU."""

import contextlib
import json
import math

import pytest
import torch

from conftest import WallClockEvent, gpu
from bench_modules import (FAKE_KERNELS, HAS_EXT, _api, accuracy, bench, cases, cli, host, model, report,
                           result, timing)


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
    cheaper = host.CallTimeRow("transposed A", "bf16", "coop", 0.17, 0.21, 0.17, 0.23, 1.0, 1.1, 0.10, 20)
    behind = host.CallTimeRow("large K", "tf32x3", "streamk", 0.70, 0.77, 1.35, 1.42, 1.93, 1.85, -0.04, 20)
    bad = host.CallTimeRow("large K", "fp32", "?", status="FAIL", message="auto: FAIL error 1 > tolerance")
    title, header, *lines = host.format_call_time([ok, close, cheaper, behind, bad])
    assert "idle GPU" in title and "x torch kernel" in header and "x torch call" in header
    assert "0.180" in lines[0] and "0.300" in lines[0] and "0.67x" in lines[0] and "-33.3%" in lines[0]
    assert ">= -3% MISS" in lines[0] and ">= -3% ok" in lines[1] and "+1.0%" in lines[1]
    assert ">= -3% ok" in lines[2], "a call path cheaper than torch's is no miss"
    assert ">= -3% MISS" in lines[3]
    assert ">= -3% -" in lines[4] and lines[4].endswith("FAIL auto: FAIL error 1 > tolerance")


def test_model_table_with_fake_numbers():
    rows = [model.ModelRow("MLP", "bf16", "torch.matmul", ms=2.0, wall_ms=2.1, x_torch=1.0, pg_ops=0),
            model.ModelRow("MLP", "bf16", "pg.matmul", ms=2.5, wall_ms=2.6, x_torch=0.8, out_err=3e-3, grad_err=4e-3,
                           pg_ops=9, target=0.95),
            model.ModelRow("encoder layer", "bf16", "enable()", status="SKIP", message="no enable()")]
    title, header, *lines = model.format_model(rows, quick=True)
    assert "training step" in title and all(w in header for w in ("ms/step", "wall ms", "x torch", "out err", "pg kernels"))
    assert "2.500" in lines[1] and "0.80x" in lines[1] and ">= 0.95x MISS" in lines[1] and "3.0e-03" in lines[1]
    assert lines[2].endswith("SKIP no enable()") and "eager only" in lines[3]


def test_accuracy_table_with_fake_numbers():
    errors = {"pg ieee": 1.2e-6, "pg tf32": 5.5e-5, "pg tf32x3": 1.4e-6, "torch fp32": 1.1e-6, "torch tf32": 5.4e-5}
    ok = accuracy.AccuracyRow("rand", "2048x4096x8192 cr", errors, {"tf32x3": "sm90_tf32x3_cr"}, ratio=1.27)
    bad = accuracy.AccuracyRow("binades", "2048x4096x8192 cr", dict(errors, **{"pg tf32x3": 3e-6}), {"tf32x3": "x"},
                               ratio=2.7, status="FAIL", message="tf32x3 error above 1.5x SGEMM's")
    title, header, *lines = accuracy.format_accuracy([ok, bad])
    assert "float64" in title and "SGEMM" in title
    assert all(c in header for c in ("pg ieee", "pg tf32x3", "torch fp32", "torch tf32", "tf32x3/SGEMM", "target"))
    assert "1.4e-06" in lines[0] and "1.27x" in lines[0] and "<= 1.5x ok" in lines[0] and "sm90_tf32x3_cr" in lines[0]
    assert "2.70x" in lines[1] and "<= 1.5x MISS" in lines[1] and lines[1].endswith("FAIL tf32x3 error above 1.5x SGEMM's")


def test_accuracy_inputs_scale_rows_and_columns_across_binades():
    a, b = accuracy.make_operands("binades", 64, 48, 32, "cr", device="cpu")
    assert a.shape == (64, 32) and b.shape == (32, 48) and a.stride() == (1, 64) and b.stride() == (48, 1)
    row_scale = a.abs().amax(1).log2()
    col_scale = b.abs().amax(0).log2()
    assert row_scale.max() - row_scale.min() > 20 and col_scale.max() - col_scale.min() > 20
    r, _ = accuracy.make_operands("rand", 8, 8, 8, "rr", device="cpu")
    assert r.min() >= 0 and r.max() < 1 and r.is_contiguous()


def test_accuracy_section_fails_a_tf32x3_less_accurate_than_sgemm(monkeypatch):
    monkeypatch.setattr(cases, "DEVICE", "cpu")
    monkeypatch.setattr(accuracy, "QUICK_INPUTS", (("randn", 16, 8, 64, "cr"), ("rand", 8, 8, 256, "rr")))

    def gemm(a, b, *, precision=None):  # tf32x3 here is bf16 in disguise: far less accurate than fp32
        return torch.matmul(a.bfloat16(), b.bfloat16()).float() if precision == "tf32x3" else torch.matmul(a, b)
    monkeypatch.setattr(_api, "gemm", gemm, raising=False)
    monkeypatch.setattr(_api, "plan", lambda a, b, **kw: {"kernel": f"k_{kw['precision']}", "reason": "fake"},
                        raising=False)
    monkeypatch.setattr(_api, "kernels", lambda: [{"name": f"k_{m}", "dtype": "float32", "math": m}
                                                  for m in ("ieee", "tf32", "tf32x3")], raising=False)
    rows = accuracy.run_accuracy(True, report.Progress(2, enabled=False))
    assert [r.status for r in rows] == ["FAIL", "FAIL"] and rows[0].ratio > 10
    assert rows[0].kernels == {"ieee": "k_ieee", "tf32": "k_tf32", "tf32x3": "k_tf32x3"}
    assert set(rows[0].errors) == set(accuracy.COLUMNS) and rows[0].errors["pg ieee"] < 1e-5
    # auto running an IEEE kernel for tf32x3 (none registered) is shown, and held to nothing
    monkeypatch.setattr(_api, "plan", lambda a, b, **kw: {"kernel": "k_ieee", "reason": "fake"}, raising=False)
    rows = accuracy.run_accuracy(True, report.Progress(2, enabled=False))
    assert [r.status for r in rows] == ["ok", "ok"] and all(r.target is None for r in rows)
    assert rows[0].message == "tf32x3 ran an IEEE kernel (no tf32x3 kernel takes the problem)"


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
    assert len(lines) == 3 * 5 + 16  # every workload and precision, and the shapes users bring
    assert "Sections accuracy, host, call-time, model need a GPU." in out
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


def _fake_gemm(a, b, *, variant="auto", out=None, precision=None):
    if variant == "fallback":
        raise ValueError("kernel 'fallback' cannot implement this problem: fake")
    if variant == "auto":
        return out.zero_()  # wrong on purpose: must show as FAIL, never as a speed
    return torch.matmul(a, b, out=out)  # naive and the registered kernel: right


def test_pipeline_on_cpu_checks_times_and_reports(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cases, "DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", WallClockEvent)
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
    monkeypatch.setattr(torch.cuda, "Event", WallClockEvent)
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
    monkeypatch.setattr(accuracy, "QUICK_INPUTS", (("binades", 16, 8, 64, "cr"), ("rand", 8, 8, 256, "rr")))
    for name, value in (("kernels", lambda: FAKE_KERNELS), ("gemm", _right_gemm),
                        ("matmul", lambda a, b, *, precision=None: torch.matmul(a, b)),
                        ("plan", lambda a, b, **kw: {"kernel": "sm90_bf16_tn", "reason": "fake"}),
                        ("can_run", lambda name, a, b, **kw: ""),
                        ("enable", lambda *args, **kwargs: contextlib.nullcontext())):
        monkeypatch.setattr(_api, name, value, raising=False)
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32

    rc = cli.main(["bench", "--quick", "--no-progress", "--shapes", "8x16x32:rc:bf16,2x8x16x32:cr:fp32",
                   "--section", "shapes,accuracy,host,call-time,model", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert torch.backends.cuda.matmul.allow_tf32 == allow_tf32
    for heading in ("== shapes users bring", "== accuracy", "== host", "== call time", "== model"):
        assert heading in out
    assert "== workloads" not in out and "(--quick: the encoder layer eager only" in out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["meta"]["sections"] == ["shapes", "accuracy", "host", "call-time", "model"]
    assert [(r["inputs"], r["status"]) for r in data["accuracy"]] == [("binades", "ok"), ("rand", "ok")]
    assert all(r["ratio"] == pytest.approx(1.0) and r["kernels"]["tf32x3"] == "sm90_bf16_tn" for r in data["accuracy"])
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
                        ("MLP", "bf16", "enable()", "ok"), ("MLP", "tf32", "torch.matmul", "ok"),
                        ("MLP", "tf32", "pg.matmul", "ok"), ("MLP", "tf32", "enable()", "ok"),
                        ("encoder", "bf16", "torch eager", "ok"), ("encoder", "bf16", "enable() eager", "ok")]
    for r in data["model"]:
        assert r["ms"] > 0 and r["wall_ms"] > 0 and r["runs"] >= 3 and r["x_torch"] > 0
        assert r["out_err"] in (None, 0.0)  # torch against torch here: bit for bit
    assert "0 FAIL" in out


def test_model_without_enable_skips_the_encoder(monkeypatch):
    monkeypatch.setattr(cases, "DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "Event", WallClockEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(model, "MLP", model.MlpShape(tokens=8, width=8, layers=2))
    monkeypatch.setattr(_api, "matmul", lambda a, b, *, precision=None: torch.matmul(a, b), raising=False)
    monkeypatch.delattr(_api, "enable", raising=False)
    fast = timing.Settings(budget_s=0.0, min_runs=2, max_runs=2, warmup_s=0.0)
    rows = model.run_model(True, fast, report.Progress(1, enabled=False))
    assert [r.status for r in rows] == ["ok"] * 4 + ["SKIP"] and "enable() does not exist" in rows[-1].message


def test_rounds_shuffle_and_never_time_a_sampler_right_after_itself():
    calls = []
    samplers = [lambda i=i: calls.append(i) or i for i in range(4)]
    samples = timing.time_rounds(samplers, timing.Settings(budget_s=0.0, min_runs=30, max_runs=30))
    assert samples == [[i] * 30 for i in range(4)] and len(calls) == 120
    rounds = [calls[j:j + 4] for j in range(0, 120, 4)]
    assert all(sorted(r) == [0, 1, 2, 3] for r in rounds)
    assert all(a != b for a, b in zip(calls, calls[1:]))  # none follows itself across a round's end
    predecessors = {i: {a for a, b in zip(calls, calls[1:]) if b == i} for i in range(4)}
    assert all(len(p) == 3 for p in predecessors.values())  # each runs after every other one, not one


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
