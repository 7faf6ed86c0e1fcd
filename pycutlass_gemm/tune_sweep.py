"""The sweep behind the shipped heuristics table (``pycutlass-gemm tune --sweep``): which problems it
times, and running it.

The problems are chosen so the table generalises, not to fit the benchmark: M, N and K log-spaced
from 1 to 65536 (every octave from 64 to 16384, every second one outside), each dtype in every
layout of A and B, 16-byte-aligned sizes and sizes no alignment fits (each size minus one: odd),
and batched problems; the benchmark's own shapes are added so its rows are measured points too.
Problems beyond a work cap (2^41 flops, an operand of 2^28 elements) are left out: they are
compute-bound in every kernel, so the nearest measured point decides them as well.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from typing import Iterable, Sequence

import torch

from . import launch as _launch
from .bench_cases import (LAYOUTS, PRECISIONS, QUICK_WORKLOADS, USER_SHAPES, WORKLOADS, Precision, Workload,
                          parse_shapes)
from .tune_timing import candidates, flush_buffer, time_candidates

SIZES = (1, 4, 16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536)
COARSE = (1, 16, 256, 1024, 4096, 16384, 65536)  # unaligned, fp16 cc, IEEE fp32: fewer points
# Between the octaves (1.5 x 2^i): the sizes where tiles of 128x256 leave their last wave emptiest
# and 192-wide ones fit (3072: 288 tiles of 128x256 for 132 SMs, 384 of 128x192). bf16 and fp16,
# aligned, with M or N one of them (the other from 256 up) and K any of SIZES and these, every layout
# (cc too: 3072^3 cc took 2048's and 4096's vote for 128x256 tiles, 0.75x cuBLAS).
MID_SIZES = (1536, 3072, 6144, 12288)
SMALL_SIDE = 32  # cpp/small_mn_gemm.cu's kMaxSmallSide
# x @ W.T over a batch of 128 tokens (rc) and its mirror: one 128-row tile of the small side, between
# SIZES' 64 and 256, where the vote of those two octaves picked slower kernels (H100, session 26:
# 128x11008x4096 and 4096x128x4096 rc bf16 ran 0.97x / 0.84x cuBLAS with the vote, 1.03x / 1.03x with
# these points measured)
TILE_SIDE = 128
# Transformer projections off the octaves: hidden sizes and MLP widths (GPT-2's 768, Llama's 2560-14336;
# pairs with 1024-8192 too) over 512-8192 tokens, x @ W.T (rc), dX = dY @ W (rr) and dW = dY^T X (cr: the
# tokens are K), bf16 and fp16. Off the sweep's points the octaves' vote ran 71 such shapes at 0.90x
# cuBLAS (H100, session 37; 0.85x before the tile-fill vote).
MODEL_DIMS = (768, 2560, 5120, 11008, 13824, 14336)
MODEL_TOKENS = (512, 1024, 2048, 4096, 8192)
BATCHED = ((4, (64, 256, 1024, 4096)), (32, (64, 256, 1024)))  # (batch, sizes)
MAX_FLOP = 2**41
MAX_FLOP_SIMT = 2**38  # IEEE fp32 (~50 TFLOP/s) and tf32x3 (~100): compute-bound well before this
MAX_OPERAND = 2**28
_BY_NAME = {p.name: p for p in PRECISIONS}


def unaligned(size: int) -> int:
    """An odd size near `size`: no leading dimension built from it is a multiple of 2 elements."""
    return size - 1 if size > 2 else size


def fits(w: Workload, p: Precision) -> bool:
    return (w.flop <= (MAX_FLOP_SIMT if p.name in ("fp32", "tf32x3") else MAX_FLOP) and max(w.m * w.k, w.k * w.n, w.m * w.n) * w.batch <= MAX_OPERAND)


def sweep_problems(quick: bool = False) -> list[tuple[Workload, Precision]]:
    """Every (problem, precision) the sweep times, without repeats, most used first (a sweep cut
    short by its time limit has the benchmark's shapes, then bf16 and tf32)."""
    grids: list[tuple[str, Sequence[int], Sequence[str], bool | str, int]] = [
        # precision, sizes, layouts, aligned (True; False: m, n and k odd; "k": k odd), batch
        ("bf16", SIZES, LAYOUTS, True, 1),
        ("tf32", SIZES, LAYOUTS, True, 1),
        ("bf16", COARSE, LAYOUTS, False, 1),
        ("bf16", COARSE, LAYOUTS, "k", 1),  # odd K, D aligned: x @ W with an odd hidden size
        ("bf16", BATCHED[0][1], ("rr", "rc", "cr"), True, BATCHED[0][0]),
        ("bf16", BATCHED[1][1], ("rr", "rc", "cr"), True, BATCHED[1][0]),
        ("tf32", BATCHED[0][1], ("rr", "rc", "cr"), True, BATCHED[0][0]),
        ("tf32", BATCHED[1][1], ("rr", "rc", "cr"), True, BATCHED[1][0]),
        ("fp16", COARSE, ("cc",), True, 1),
        ("fp16", SIZES, ("rr", "rc", "cr"), True, 1),  # every octave: the one-wave pairs' shapes sit at 2048
        ("fp16", COARSE, ("rr", "rc"), False, 1),
        ("fp16", COARSE, ("rr", "rc"), "k", 1),
        ("tf32", COARSE, LAYOUTS, False, 1),
        ("fp32", COARSE, LAYOUTS, True, 1),
        ("tf32x3", COARSE, LAYOUTS, True, 1),
    ]
    problems: list[tuple[Workload, Precision]] = []
    if quick:
        grids = [("bf16", (1, 64, 1024, 4096), ("rr", "rc"), True, 1), ("bf16", (16, 1024), ("rr",), False, 1)]
    else:
        # The workloads and their smaller variants (bench --quick, the closing notes' "small" columns) in
        # every precision: fp16 256x256x131072 had no point of its own and took its neighbours' vote
        # (128x256 split-K, 0.93x cuBLAS, where bf16's measured point runs 128x64 c1x2 at 0.98x).
        problems += [(Workload.problem(w.m, w.n, w.k, w.layout, w.batch), p)
                     for table in (WORKLOADS, QUICK_WORKLOADS) for w in table.values() for p in PRECISIONS]
        problems += [(Workload.problem(w.m, w.n, w.k, w.layout, w.batch), p) for w, p in parse_shapes(USER_SHAPES)]
    for name, sizes, layouts, aligned, batch in grids:
        for m, n, k in itertools.product(sizes, repeat=3):
            if aligned == "k":
                k = unaligned(k)
            elif not aligned:
                m, n, k = unaligned(m), unaligned(n), unaligned(k)
            for layout in layouts:
                problems.append((Workload.problem(m, n, k, layout, batch), _BY_NAME[name]))
    if not quick:
        # M or N = 32, the most the small-M/N kernels take (two 16-row tiles), x @ W.T (rc) and its
        # mirror: without it the vote between 16 and 64 rows passes them over where they are fastest.
        # And M or N = 128 (TILE_SIDE) likewise.
        for side, big, k in itertools.product((SMALL_SIDE, TILE_SIDE), (s for s in SIZES if s >= 256), SIZES):
            problems += [(Workload.problem(m, n, k, "rc", 1), _BY_NAME[dtype])
                         for dtype in ("bf16", "fp16") for m, n in ((side, big), (big, side))]
        wide = tuple(s for s in SIZES if s >= 256) + MID_SIZES
        for m, n, k in itertools.product(wide, wide, SIZES + MID_SIZES):
            if m in MID_SIZES or n in MID_SIZES:
                problems += [(Workload.problem(m, n, k, layout, 1), _BY_NAME[dtype])
                             for dtype in ("bf16", "fp16") for layout in LAYOUTS]
                # tf32 too, with K from 1024 (below it the octaves' vote holds): 3072^3 took 2048's and
                # 4096's vote for 128x256 tiles, 288 of them for 132 SMs (H100, session 34: 0.84-0.93x cuBLAS
                # tf32 rc / cr / cc)
                if k >= 1024:
                    problems += [(Workload.problem(m, n, k, layout, 1), _BY_NAME["tf32"]) for layout in LAYOUTS]
        widths = MODEL_DIMS + (1024, 2048, 4096, 8192)
        for tokens, d1, d2 in itertools.product(MODEL_TOKENS, widths, widths):
            if d1 in MODEL_DIMS or d2 in MODEL_DIMS:
                problems += [(Workload.problem(m, n, k, layout, 1), _BY_NAME[dtype]) for dtype in ("bf16", "fp16")
                             for m, n, k, layout in ((tokens, d1, d2, "rc"), (tokens, d1, d2, "rr"), (d1, d2, tokens, "cr"))]
    return [pw for pw in dict.fromkeys(problems) if fits(*pw)]


def estimated_seconds(problems: Iterable[tuple[Workload, Precision]]) -> float:
    """A rough H100 estimate of the sweep's GPU time: each candidate's first runs, more for the
    best, at each precision's rate; for planning how large a sweep fits a time budget."""
    rate = {"bf16": 600e12, "fp16": 600e12, "tf32": 300e12, "tf32x3": 95e12, "fp32": 45e12}
    total = 0.0
    for w, p in problems:
        t = max(w.flop / rate[p.name], w.min_bytes(p.dtype.itemsize) / 2.5e12) + 60e-6
        total += t * 20 + 0.004  # ~5 candidates x 4 runs, and the host's work per problem
    return total


def _key(w: Workload, p: Precision) -> tuple:
    return (w.m, w.n, w.k, w.batch, w.layout, p.name)


def load_measurements(path: str) -> dict[tuple, dict]:
    """The records of a measurements file by problem, the last one of a problem measured twice."""
    records: dict[tuple, dict] = {}
    try:
        with open(path) as f:
            for r in map(json.loads, f):
                records[_key(Workload.problem(r["m"], r["n"], r["k"], r["layout"], r["batch"]), _BY_NAME[r["precision"]])] = r
    except FileNotFoundError:
        pass
    return records


def _candidates(w: Workload, p: Precision, only: str | None) -> list[str]:
    """The kernels that can run the problem, those whose names match `only` (re.search) when given."""
    a, b = w.meta_inputs(p)
    return [n for n in candidates(a, b, precision=p.gemm_precision) if only is None or re.search(only, n)]


def _has_new_candidates(record: dict, w: Workload, p: Precision, only: str | None = None) -> bool:
    """Whether a kernel that can run the problem now (one matching `only`) was not measured there (built since)."""
    return not set(_candidates(w, p, only)) <= set(record["ms"]) | set(record["refused"])


def _keep_least_times(record: dict, previous: dict, *, unbuilt: frozenset[str] = frozenset()) -> None:
    """A problem measured again (a kernel built since) keeps each kernel's least time of the two
    sweeps: the same code timed twice, and timing noise only slows (a burst of slow timings in one
    H100 sweep made 1% of its kernel times >1.3x the previous sweep's and sent 4096^3 cr bf16 to
    stream-K, 0.64x cuBLAS). Delete a kernel's records to time changed code afresh. The kernels
    in `unbuilt` (not timed this time: run_sweep's keep_unbuilt and only) keep their previous times."""
    for kernel, ms in previous.get("ms", {}).items():
        if kernel in record["ms"] and ms < record["ms"][kernel]:
            record["ms"][kernel] = ms
    kept = False
    for kernel in unbuilt:
        if kernel not in record["ms"] and kernel not in record["refused"]:
            for key in ("ms", "runs", "error", "refused"):
                if kernel in previous.get(key, {}):
                    record[key][kernel] = previous[key][kernel]
                    kept = True
    if kept:  # the record's seconds: the GPU time of the measurements it holds
        record["seconds"] = round(record["seconds"] + previous.get("seconds", 0.0), 4)
    if record["ms"]:
        record["best"] = min(record["ms"], key=record["ms"].get)


def run_sweep(problems: Sequence[tuple[Workload, Precision]], path: str, *, budget_s: float = 0.2,
              limit_s: float | None = None, keep_unbuilt: bool = False, only: str | None = None, log=print) -> int:
    """Time every candidate of every problem, appending one JSON object per problem to `path` as it
    goes. A problem already in `path` is measured again only when a kernel that can run it was not
    measured there (one added since), keeping each kernel's least time of the two measurements
    (_keep_least_times): a sweep cut short by `limit_s` (seconds) goes on where it
    stopped when run again, and a new kernel costs a sweep of the problems it can run. With
    `keep_unbuilt`, a problem measured again also keeps the times of the kernels this build does
    not register (a build of only the kernels to measure: delete their records first). With `only` (a
    regular expression), only the kernels whose names match are timed, where one of them was not measured,
    and the others keep their previous times: kernels added to a whole build, swept without timing the rest
    again. When every problem is measured the file is rewritten with one record a problem. Returns how
    many problems are still to measure."""
    records = load_measurements(path)
    todo = [(w, p) for w, p in problems
            if _key(w, p) not in records or _has_new_candidates(records[_key(w, p)], w, p, only)]
    log(f"sweep: {len(problems)} problems, {len(todo)} to measure, estimated {estimated_seconds(todo):.0f} s "
        "of GPU time")
    device = torch.device("cuda", torch.cuda.current_device())
    flush = flush_buffer(device)
    built = {k["name"] for k in _launch.kernels()}
    not_timed = lambda k: (keep_unbuilt and k not in built) or (only is not None and not re.search(only, k))  # noqa: E731
    unbuilt = frozenset(k for r in records.values() for key in ("ms", "refused") for k in r.get(key, {}) if not_timed(k))
    t0 = time.perf_counter()
    with open(path, "a") as f:
        for i, (w, p) in enumerate(todo):
            if limit_s is not None and time.perf_counter() - t0 > limit_s:
                log(f"sweep: stopped at the {limit_s:.0f} s limit with {len(todo) - i} problems to go")
                return len(todo) - i
            a, b = w.make_inputs(p, device=str(device), seed=i)
            rules = _launch.plan(a, b, precision=p.gemm_precision)["kernel"]
            names = None if only is None else _candidates(w, p, only)
            t = time_candidates(a, b, precision=p.gemm_precision, names=names, budget_s=budget_s, max_runs=10,
                                flush=flush)
            record = {"m": w.m, "n": w.n, "k": w.k, "batch": w.batch, "layout": w.layout, "precision": p.name,
                      "rules": rules, "best": t.best, "ms": t.ms, "runs": t.runs, "error": t.error,
                      "refused": t.refused, "seconds": round(t.seconds, 4)}
            previous = records.get(_key(w, p))
            if previous is not None:
                _keep_least_times(record, previous, unbuilt=unbuilt)
            f.write(json.dumps(record) + "\n")
            f.flush()
            del a, b
            if i % 200 == 0:
                log(f"  {i + 1}/{len(todo)} after {time.perf_counter() - t0:.0f} s: {w.label} {p.name} -> {t.best}")
    records = load_measurements(path)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records.values())
    os.replace(tmp, path)
    log(f"sweep: done in {time.perf_counter() - t0:.0f} s")
    return 0
