"""Autotuning without a GPU: the tune keys, the switch, the disk cache's file handling (on fakes where a GPU would be
needed)."""

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
from pycutlass_gemm import _C, autotuning, tune_timing
from conftest import cutlass_built
from selection_helpers import meta


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
