"""Autotuning, opt-in: ``pycutlass_gemm.autotune(True)`` or ``PYCUTLASS_GEMM_AUTOTUNE=1``.

The first call of a problem class that is not tuned yet (its key: device, dtype, precision,
layouts, smallest operand alignment, m, n, k and batch rounded up to powers of two, beta,
determinism; see heuristics.h) times every kernel that can run it on the call's own operands
(tune_timing: checked against the fallback first, L2 flushed, within PYCUTLASS_GEMM_AUTOTUNE_BUDGET_MS,
default 1000 ms) and remembers the fastest, in memory and on disk, so later processes start tuned.
Under CUDA graph capture no tuning runs (the C++ core does not ask), nor while torch.compile
traces (the fake implementation never plans): the tuned choice, the measured table's or the rules'
is used.

The disk cache is one JSON file per (device, driver, package version, built kernel set) in
``PYCUTLASS_GEMM_CACHE_DIR`` (default ``~/.cache/pycutlass_gemm``). It is written atomically (a
temporary file renamed over it, under a lock, merged with what other processes wrote meanwhile),
so concurrent processes never corrupt it; a cache that cannot be read or written is ignored with
one warning, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import tempfile
import threading
import warnings

import torch

from . import _C
from . import launch as _launch
from .tune_timing import time_candidates

CACHE_FORMAT = 1
_lock = threading.Lock()
_caches: dict[str, "DiskCache"] = {}  # by device name
_warned: set[str] = set()


def autotune(enabled: bool | None = None) -> bool:
    """Switch autotuning on or off (None: leave it); returns whether it is on."""
    if enabled is not None:
        _C.set_autotuner(_tune if enabled else None)
        _C.set_autotune(bool(enabled))
    return _C.autotune_enabled()


def cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("PYCUTLASS_GEMM_CACHE_DIR") or pathlib.Path.home() / ".cache" / "pycutlass_gemm")


def budget_s() -> float:
    return float(os.environ.get("PYCUTLASS_GEMM_AUTOTUNE_BUDGET_MS", "1000")) / 1e3


def _warn_once(what: str, message: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"pycutlass_gemm autotune: {message}", RuntimeWarning, stacklevel=3)


def cache_identity(device_name: str) -> dict:
    """What a cached choice is valid for: the same GPU model, driver, package version and kernels."""
    from . import __version__

    names = sorted(f"{k['name']}:{k['dtype']}" for k in _launch.kernels())
    return {"device": device_name, "driver": _C.driver_version(), "package_version": __version__,
            "kernels": hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]}


class DiskCache:
    """The tuned choices of one device identity, in memory and in one JSON file."""

    def __init__(self, identity: dict, directory: pathlib.Path):
        self.identity = identity
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
        self.path = directory / f"autotune-{digest}.json"
        self.choices: dict[str, dict] = self._read()

    def _read(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except (OSError, ValueError) as e:
            _warn_once(f"read {self.path}", f"ignoring the unreadable cache {self.path} ({e})")
            return {}
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("identity") != self.identity:
            _warn_once(f"stale {self.path}", f"ignoring the cache {self.path}: written for another device, driver, "
                                             "package version or kernel set")
            return {}
        choices = data.get("choices")
        return {k: v for k, v in choices.items() if isinstance(v, dict) and "kernel" in v} if isinstance(choices, dict) else {}

    def store(self, key: str, choice: dict) -> None:
        """Remember `choice` for `key` and write the file: merged with what is on disk now, under a
        lock file, through a temporary file renamed over it (a reader sees the old or the new file)."""
        self.choices[key] = choice
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _file_lock(self.path.with_suffix(".lock")):
                merged = self._read() | self.choices
                fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
                try:
                    with os.fdopen(fd, "w") as f:
                        json.dump({"format": CACHE_FORMAT, "identity": self.identity, "choices": merged}, f, indent=0)
                    os.replace(tmp, self.path)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
            self.choices = merged
        except OSError as e:
            _warn_once(f"write {self.path}", f"cannot write the cache {self.path} ({e}); tuned choices stay in memory")


@contextlib.contextmanager
def _file_lock(path: pathlib.Path):
    try:
        import fcntl
    except ImportError:  # not POSIX: the rename alone keeps the file whole
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cache_for(device: torch.device) -> DiskCache:
    name = torch.cuda.get_device_name(device)
    with _lock:
        if name not in _caches:
            _caches[name] = DiskCache(cache_identity(name), cache_dir())
        return _caches[name]


def _precision_name(a, code: int) -> str | None:
    if a.dtype != torch.float32:
        return None
    return "tf32" if code == 1 else "ieee"


def _tune(a, b, c, out, alpha, beta, precision_code, deterministic, key) -> None:
    """The C++ core's tuner (see bindings.cpp): decide `key` from the disk cache or by timing."""
    try:
        tune_call(a, b, c, alpha=alpha, beta=beta, out=out, precision=_precision_name(a, precision_code), key=key)
    except Exception as e:  # noqa: BLE001 -- tuning must never fail a call: the untuned choice runs
        _warn_once(f"tune {type(e).__name__}", f"tuning failed ({type(e).__name__}: {e}); using the untuned choice")
        _C.set_tuned(key, _launch.plan(a, b, c, beta=beta, out=out, precision=_precision_name(a, precision_code))["kernel"] or "fallback")


def tune_call(a, b, c=None, *, alpha: float = 1.0, beta: float = 0.0, out=None, precision: str | None = None,
              key: str | None = None, force: bool = False) -> dict:
    """Tune the class of ``gemm(a, b, c, alpha=alpha, beta=beta, out=out)`` (unless cached and not
    `force`), record the winner for this process and on disk; returns the cached choice."""
    code = _launch.precision_code(a, precision)
    key = key or _C.tune_key(a, b, c, out, float(beta), code, torch.are_deterministic_algorithms_enabled())
    cache = cache_for(a.device)
    choice = None if force else cache.choices.get(key)
    if choice is None:
        with torch.cuda.device(a.device):
            t = time_candidates(a, b, c, alpha=alpha, beta=beta, out=out, precision=precision, budget_s=budget_s())
        if t.best is None:
            raise RuntimeError(f"no candidate ran correctly: {t.refused}")
        choice = {"kernel": t.best, "ms": {n: round(ms, 5) for n, ms in t.ms.items()}, "seconds": round(t.seconds, 3)}
        cache.store(key, choice)
    _C.set_tuned(key, choice["kernel"])
    return choice


def init_from_environment() -> None:
    if os.environ.get("PYCUTLASS_GEMM_AUTOTUNE", "0") not in ("", "0"):
        autotune(True)
