"""Kernel selection on the GPU: the measured table on the GPU it was measured on, autotuning
(a correct choice, the cache reused by another process, no tuning under graph capture or while
torch.compile traces)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import pycutlass_gemm as pg
from pycutlass_gemm import _C, autotuning, heuristics
from conftest import HAS_CUDA, matrix, rel, tolerance

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")


@pytest.fixture
def tuning_on(monkeypatch, tmp_path):
    """Autotuning on with a fresh cache directory and nothing tuned; every timing recorded (with
    whether torch.compile was tracing then). Off again afterwards."""
    monkeypatch.setenv("PYCUTLASS_GEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PYCUTLASS_GEMM_AUTOTUNE_BUDGET_MS", "200")
    monkeypatch.setattr(autotuning, "_caches", {})
    timed = []
    real = autotuning.time_candidates

    def recording(*args, **kwargs):
        timed.append(torch.compiler.is_compiling())
        return real(*args, **kwargs)
    monkeypatch.setattr(autotuning, "time_candidates", recording)
    _C.clear_tuned()
    pg.autotune(True)
    yield timed
    pg.autotune(False)
    _C.clear_tuned()


def test_measured_table_decides_on_its_own_gpu():
    name = torch.cuda.get_device_name()
    tables = [t for t in heuristics.load_tables() if t["device"] == name]
    if not tables:
        pytest.skip(f"no measured table for {name}")
    a = matrix(4096, 4096, "row", torch.bfloat16)
    b = matrix(4096, 4096, "col", torch.bfloat16)
    plan = pg.plan(a, b)
    assert plan["reason"].startswith("fastest measured: table measured on " + name), plan
    cls = "bfloat16 ieee row col aligned"
    points = {tuple(p[:4]): tables[0]["kernels"][p[4]] for p in tables[0]["classes"][cls]}
    assert plan["kernel"] == points[(4096, 4096, 4096, 1)]
    out = pg.gemm(a, b)
    assert rel(out, a.double() @ b.double()) <= tolerance(torch.bfloat16, "ieee", 4096)


def test_a_table_of_the_same_chip_decides_on_a_gpu_without_its_own():
    # An H200 has no table of its own; the H100's (sm_90, 132 SMs) decides there (heuristics.cpp, table_for)
    name = torch.cuda.get_device_name()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    tables = heuristics.load_tables()
    if any(t["device"] == name for t in tables):
        pytest.skip(f"{name} has a measured table of its own")
    same = [t for t in tables if (t["sm"], t["sm_count"]) == (10 * props.major + props.minor, props.multi_processor_count)]
    if not same:
        pytest.skip(f"no measured table for a GPU of {name}'s compute capability and SM count")
    a = matrix(4096, 4096, "row", torch.bfloat16)
    b = matrix(4096, 4096, "col", torch.bfloat16)
    plan = pg.plan(a, b)
    assert plan["reason"].startswith(f"fastest measured: table measured on {same[0]['device']}"), plan
    assert f"for this {name} (the same sm_{same[0]['sm']}, {same[0]['sm_count']} SMs)" in plan["reason"], plan
    points = {tuple(p[:4]): same[0]["kernels"][p[4]] for p in same[0]["classes"]["bfloat16 ieee row col aligned"]}
    assert plan["kernel"] == points[(4096, 4096, 4096, 1)]
    out = torch.full((4096, 4096), float("nan"), device="cuda", dtype=torch.bfloat16)
    pg.gemm(a, b, out=out)
    assert rel(out, a.double() @ b.double()) <= tolerance(torch.bfloat16, "ieee", 4096)


@pytest.mark.parametrize("dtype, layouts, shape", [
    (torch.bfloat16, ("row", "col"), (1000, 3000, 777)),
    (torch.bfloat16, ("col", "row"), (512, 1024, 2048)),
    (torch.float32, ("row", "row"), (256, 384, 8192)),
])
def test_autotune_picks_a_correct_kernel_and_remembers_it(tuning_on, dtype, layouts, shape):
    m, n, k = shape
    precision = "tf32" if dtype == torch.float32 else None
    a, b = matrix(m, k, layouts[0], dtype), matrix(k, n, layouts[1], dtype)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    pg.gemm(a, b, out=out, precision=precision)
    assert tuning_on == [False]
    assert rel(out, a.double() @ b.double()) <= tolerance(dtype, precision or "ieee", k)
    plan = pg.plan(a, b, out=out, precision=precision)
    assert plan["reason"].startswith("autotuned"), plan
    key = _C.tune_key(a, b, None, out, 0.0, 1 if precision == "tf32" else 0, torch.are_deterministic_algorithms_enabled())
    assert _C.tuned_kernel(key) == plan["kernel"]
    pg.gemm(a, b, out=out, precision=precision)
    a2, b2 = matrix(m - 8, k, layouts[0], dtype), matrix(k, n, layouts[1], dtype)  # same class: m rounds up alike
    pg.gemm(a2, b2, precision=precision)
    assert len(tuning_on) == 1, "a tuned class was timed again"
    cache = autotuning.cache_for(a.device)
    assert cache.choices[key]["kernel"] == plan["kernel"] and cache.path.exists()


def test_another_process_reuses_the_cache_without_timing(tuning_on, tmp_path):
    a, b = matrix(2048, 1024, "row", torch.bfloat16), matrix(1024, 1001, "row", torch.bfloat16)
    pg.gemm(a, b)
    assert tuning_on == [False]
    chosen = pg.plan(a, b)["kernel"]
    script = textwrap.dedent("""
        import json, torch, pycutlass_gemm as pg
        from pycutlass_gemm import autotuning
        timed = []
        autotuning.time_candidates = lambda *a, **k: timed.append(1)
        a = torch.rand(2048, 1024, device="cuda").bfloat16()
        b = torch.rand(1024, 1001, device="cuda").bfloat16()
        pg.gemm(a, b)
        torch.cuda.synchronize()
        print(json.dumps({"timed": len(timed), "plan": pg.plan(a, b)}))
    """)
    env = dict(os.environ, PYCUTLASS_GEMM_AUTOTUNE="1", PYCUTLASS_GEMM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["timed"] == 0 and result["plan"]["kernel"] == chosen
    assert result["plan"]["reason"].startswith("autotuned")


def test_no_tuning_during_graph_capture(tuning_on):
    a, b = matrix(1536, 768, "row", torch.bfloat16), matrix(768, 640, "col", torch.bfloat16)
    out = torch.empty(1536, 640, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            pg.gemm(a, b, out=out)
    torch.cuda.current_stream().wait_stream(stream)
    assert tuning_on == []
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert rel(out, a.double() @ b.double()) <= tolerance(torch.bfloat16, "ieee", 768)
    pg.gemm(a, b, out=out)  # eager, outside capture: now it tunes
    assert tuning_on == [False]


def test_no_tuning_while_torch_compile_traces(tuning_on):
    torch._dynamo.reset()
    a, b = matrix(1100, 900, "row", torch.bfloat16), matrix(900, 700, "row", torch.bfloat16)
    f = torch.compile(lambda a, b: pg.gemm(a, b) * 2, fullgraph=True)
    out = f(a, b)
    assert rel(out, 2 * (a.double() @ b.double())) <= tolerance(torch.bfloat16, "ieee", 900)
    assert tuning_on == [False], "tuning ran while tracing, or not at the first real call"
