"""Measuring for the table without a GPU: timing candidates against the fallback, the sweep's problems,
and the sweep resuming and re-measuring (on fakes: kernels are CPU matmuls, events a wall clock)."""

import json

import torch

import pycutlass_gemm as pg
from pycutlass_gemm import tune_sweep, tune_timing
from pycutlass_gemm import launch as _launch
from conftest import WallClockEvent


# --- timing candidates ---------------------------------------------------------------------------


def test_time_candidates_checks_each_against_the_fallback_and_never_writes_out(monkeypatch):
    def launch(a, b, c=None, *, alpha=1.0, beta=0.0, variant="auto", out=None, precision=None):
        r = a.float() @ b.float()
        for _ in range(4 if variant == "slow" else 0):
            r = a.float() @ b.float()
        r = (r + 1 if variant == "wrong" else r).to(a.dtype)
        return r if out is None else out.copy_(r)
    monkeypatch.setattr(_launch, "launch", launch)
    monkeypatch.setattr(torch.cuda, "Event", WallClockEvent)
    a, b = torch.rand(200, 300), torch.rand(300, 100)
    out = torch.zeros(100, 200).T
    t = tune_timing.time_candidates(a, b, out=out, names=["slow", "wrong", "fast"], flush=torch.empty(4),
                                    budget_s=0.05)
    assert t.best == "fast" and set(t.ms) == {"slow", "fast"}
    assert "wrong" in t.refused and "against the fallback" in t.refused["wrong"]
    assert t.runs["slow"] >= tune_timing.FIRST_RUNS and torch.count_nonzero(out) == 0


def test_candidates_put_autos_choice_first():
    a, b = torch.empty(256, 256, dtype=torch.bfloat16), torch.empty(256, 256, dtype=torch.bfloat16)
    names = tune_timing.candidates(a, b)
    assert names[0] == pg.plan(a, b)["kernel"] and "fallback" in names and "naive" not in names


# --- the sweep's problems ------------------------------------------------------------------------


def test_sweep_covers_sizes_1_to_65536_every_layout_dtype_alignment_and_batch():
    problems = tune_sweep.sweep_problems()
    assert len(problems) == len(set(problems))
    seen = {(p.name, w.layout) for w, p in problems}
    assert {(d, lay) for d in ("bf16", "tf32", "fp16", "fp32", "tf32x3") for lay in ("rr", "rc", "cr", "cc")} <= seen
    bf16 = [w for w, p in problems if p.name == "bf16" and w.batch == 1]
    for dim in ("m", "n", "k"):
        assert {1, 65536} <= {getattr(w, dim) for w in bf16}
    assert any(w.k % 2 == 1 and w.k > 1 for w in bf16)  # unaligned
    assert any(w.k % 2 == 1 and w.k > 1 and w.m % 8 == 0 and w.n % 8 == 0 for w in bf16)  # odd K only
    assert {4, 32} <= {w.batch for w, _ in problems}
    # between the octaves, where 192-wide tiles fit and 128x256 ones leave a wave emptiest: 3072^3 in
    # every layout, bf16, fp16 and tf32
    assert {("3072x3072x3072 " + lay, d) for lay in ("rr", "rc", "cr", "cc") for d in ("bf16", "fp16", "tf32")} <= {
        (w.name, p.name) for w, p in problems}
    # x @ W.T over 32 and 128 tokens and the mirror, between the octaves of SIZES (small_mn's widest X,
    # one 128-row tile), bf16 and fp16
    for side in (tune_sweep.SMALL_SIDE, tune_sweep.TILE_SIDE):
        assert {(f"{m}x{n}x4096 rc", d) for m, n in ((side, 4096), (4096, side)) for d in ("bf16", "fp16")} <= {
            (w.name, p.name) for w, p in problems}
    # transformer projections off the octaves: x @ W.T (rc), dX = dY @ W (rr), dW = dY^T X (cr, tokens as K)
    assert {(name, d) for name in ("4096x11008x4096 rc", "4096x4096x11008 rr", "11008x4096x4096 cr",
                                   "512x768x2560 rc", "2560x768x8192 cr") for d in ("bf16", "fp16")} <= {
        (w.name, p.name) for w, p in problems}
    assert all(tune_sweep.fits(w, p) for w, p in problems)
    for w, p in (("1000x3000x777 rr", "bf16"), ("256x256x524288 rr", "bf16"), ("2048x4096x8192 cr", "tf32"),
                 ("256x256x131072 rr", "fp16"), ("1024x2048x4096 rc", "fp32")):  # the last two: bench --quick's
        assert any(x.name == w and q.name == p for x, q in problems)
    assert tune_sweep.estimated_seconds(problems) > 0  # a rate for every precision swept


def test_sweep_resumes_and_measures_again_only_where_a_new_kernel_can_run(monkeypatch, tmp_path):
    """On fakes: kernels are CPU matmuls, events a wall clock."""
    kernels = [{"name": n, "dtype": "bfloat16", "family": "x", "priority": p} for n, p in (("k1", 2), ("fallback", 0))]

    def launch(a, b, c=None, *, alpha=1.0, beta=0.0, variant="auto", out=None, precision=None):
        r = (a.float() @ b.float()).to(a.dtype)
        return r if out is None else out.copy_(r)
    monkeypatch.setattr(_launch, "kernels", lambda: kernels)
    monkeypatch.setattr(_launch, "launch", launch)
    monkeypatch.setattr(_launch, "can_run", lambda name, a, *args, **kw: "" if a.shape[0] < 100 or name != "k2" else "no")
    monkeypatch.setattr(_launch, "plan", lambda *a, **k: {"kernel": "k1", "reason": ""})
    monkeypatch.setattr(torch.cuda, "Event", WallClockEvent)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(tune_sweep.torch, "device", lambda *a: "cpu")
    tune_timing._kernels_for.cache_clear()
    problems = [(tune_sweep.Workload.problem(m, 64, 64), tune_sweep._BY_NAME["bf16"]) for m in (16, 64, 256)]
    path = str(tmp_path / "sweep.jsonl")
    try:
        assert tune_sweep.run_sweep(problems, path, limit_s=0.0, log=lambda *a: None) == 3  # stopped at once
        assert tune_sweep.run_sweep(problems, path, log=lambda *a: None) == 0
        first = tune_sweep.load_measurements(path)
        assert len(first) == 3 and all(set(r["ms"]) == {"k1", "fallback"} for r in first.values())
        # a faster earlier time of k1 than any timing can give: measured again, the least time stays
        with open(path, "w") as f:
            f.writelines(json.dumps({**r, "ms": {**r["ms"], "k1": 1e-9}, "best": "k1"}) + "\n" for r in first.values())
        kernels.append({"name": "k2", "dtype": "bfloat16", "family": "x", "priority": 1})  # built since: runs m < 100
        tune_timing._kernels_for.cache_clear()
        logged = []
        assert tune_sweep.run_sweep(problems, path, log=logged.append) == 0
        assert "2 to measure" in logged[0]
        again = tune_sweep.load_measurements(path)
        assert [sorted(r["ms"]) for r in again.values()] == [["fallback", "k1", "k2"]] * 2 + [["fallback", "k1"]]
        assert all(r["ms"]["k1"] == 1e-9 and r["best"] == "k1" for r in again.values())
        assert len(open(path).readlines()) == 3  # rewritten: one record a problem
        # a build of only k2, its records deleted: k2 measured again, k1's times kept with keep_unbuilt
        with open(path, "w") as f:
            f.writelines(json.dumps({**r, "ms": {k: v for k, v in r["ms"].items() if k != "k2"}}) + "\n"
                         for r in again.values())
        kernels[:] = [k for k in kernels if k["name"] != "k1"]
        tune_timing._kernels_for.cache_clear()
        assert tune_sweep.run_sweep(problems, path, keep_unbuilt=True, log=lambda *a: None) == 0
        kept = tune_sweep.load_measurements(path)
        assert [sorted(r["ms"]) for r in kept.values()] == [["fallback", "k1", "k2"]] * 2 + [["fallback", "k1"]]
        assert all(r["ms"]["k1"] == 1e-9 and r["best"] == "k1" for r in kept.values())
        # k3 added to the whole build, swept alone (only): timed where it can run, the others' times kept
        kernels[:] = [{"name": n, "dtype": "bfloat16", "family": "x", "priority": p}
                      for n, p in (("k1", 3), ("k2", 2), ("k3", 1), ("fallback", 0))]
        tune_timing._kernels_for.cache_clear()
        timed = []
        real_time_candidates = tune_sweep.time_candidates
        monkeypatch.setattr(tune_sweep, "time_candidates",
                            lambda *a, names=None, **k: timed.append(names) or real_time_candidates(*a, names=names, **k))
        logged = []
        assert tune_sweep.run_sweep(problems, path, only="^k3$", log=logged.append) == 0
        assert "3 to measure" in logged[0] and timed == [["k3"]] * 3
        swept = tune_sweep.load_measurements(path)
        assert [sorted(r["ms"]) for r in swept.values()] == [["fallback", "k1", "k2", "k3"]] * 2 + [["fallback", "k1", "k3"]]
        assert all(r["ms"]["k1"] == 1e-9 and r["best"] == "k1" for r in swept.values())
        logged = []
        assert tune_sweep.run_sweep(problems, path, only="^k3$", log=logged.append) == 0
        assert "0 to measure" in logged[0]
    finally:
        tune_timing._kernels_for.cache_clear()
