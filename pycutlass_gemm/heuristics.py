"""The measured heuristics table: what ``variant="auto"`` runs on the GPU model it was measured on (and on one of
the same compute capability and SM count, after that GPU's own tables: an H200 plans by the H100's).

``pycutlass-gemm tune --sweep`` times every kernel that can run each problem of a sweep
(tune_sweep) and ``build_table`` keeps, per problem class (dtype, precision, layouts of A and B,
16-byte aligned or not), the fastest kernel at each measured point (m, n, k, batch) and the others
within SLOWEST_KEPT of it. The package ships the tables in ``tables/`` and hands them to the C++
core at import; its plan() takes a measured point's fastest kernel, and between points the kernel
with the least time over the surrounding points of the problem's class (heuristics.h), and says so
in its reason. On a GPU no table covers, the priority rules decide, as they do with
``PYCUTLASS_GEMM_HEURISTICS=0``.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import warnings
from typing import Iterable

import torch

from . import _C

TABLE_DIR = pathlib.Path(__file__).resolve().parent / "tables"
# 2: a point lists the kernels within SLOWEST_KEPT of its fastest, with their times (1: the fastest only).
FORMAT = 2
# heuristics.h's kSlowestKept, what plan() counts for a kernel a point does not keep; also
# tune_timing.ABANDON_RATIO: slower candidates are not timed out.
SLOWEST_KEPT = _C.SLOWEST_KEPT


def problem_class(a, b, precision: str | None = None) -> str:
    """The table class of ``a @ b`` (any device, meta too), e.g. "bfloat16 ieee row col aligned"."""
    from .launch import precision_code  # launch imports this module first
    return _C.problem_class(a, b, None, None, 0.0, precision_code(a, precision or "ieee"))


def build_table(records: Iterable[dict], *, device: str, sm: int, sm_count: int, version: str, **meta) -> dict:
    """The table of a sweep's measurements (tune_sweep.run_sweep's records): per class, each measured
    point as [m, n, k, batch, fastest kernel, then each other kernel within SLOWEST_KEPT of it and
    its time over the fastest's in thousandths, fastest first] (kernels as indices into "kernels").
    Points where nothing ran are left out."""
    from .bench_cases import PRECISIONS, Workload  # the sweep's problem description

    by_name = {p.name: p for p in PRECISIONS}
    kernels: dict[str, int] = {}  # name -> index, in order of first appearance

    def index(name: str) -> int:
        return kernels.setdefault(name, len(kernels))

    classes: dict[str, dict[tuple, list[int]]] = {}
    for r in records:
        if not r.get("best"):
            continue
        p = by_name[r["precision"]]
        a, b = Workload.problem(r["m"], r["n"], r["k"], r["layout"], r["batch"]).meta_inputs(p)
        cls = problem_class(a, b, p.gemm_precision)
        at = (r["m"], r["n"], r["k"], r["batch"])
        if at in classes.setdefault(cls, {}):
            continue  # layouts that coincide (a single row is row- and column-major) measured one class twice: keep the first
        best = r["best"]
        ms = r.get("ms", {})
        classes[cls][at] = [index(best)] + [x for name, t in sorted(ms.items(), key=lambda item: item[1])
                                            if name != best and t <= SLOWEST_KEPT * ms[best]
                                            for x in (index(name), max(1000, round(1000 * t / ms[best])))]
    return {"format": FORMAT, "device": device, "sm": sm, "sm_count": sm_count, "package_version": version,
            **meta, "kernels": list(kernels),
            "classes": {cls: [[*at, *point] for at, point in sorted(points.items())] for cls, points in sorted(classes.items())}}


def table_file_name(device: str) -> str:
    """"nvidia_h100_80gb_hbm3.json" for "NVIDIA H100 80GB HBM3"."""
    return "".join(ch if ch.isalnum() else "_" for ch in device.lower()).strip("_") + ".json"


def write_table(table: dict, directory: pathlib.Path | str = TABLE_DIR) -> pathlib.Path:
    path = pathlib.Path(directory) / table_file_name(table["device"])
    path.parent.mkdir(parents=True, exist_ok=True)
    # One class per line: compact, and a re-measured table diffs class by class.
    head = {k: v for k, v in table.items() if k != "classes"}
    lines = [json.dumps(head)[:-1] + ', "classes": {']
    items = list(table["classes"].items())
    for i, (cls, points) in enumerate(items):
        lines.append(f"{json.dumps(cls)}: {json.dumps(points, separators=(',', ':'))}" + ("," if i < len(items) - 1 else ""))
    lines.append("}}")
    path.write_text("\n".join(lines) + "\n")
    return path


def load_tables(directory: pathlib.Path | str = TABLE_DIR) -> list[dict]:
    """Every table in `directory`; one that cannot be read is skipped with a warning."""
    tables = []
    for path in sorted(pathlib.Path(directory).glob("*.json")):
        try:
            table = json.loads(path.read_text())
            if table.get("format") != FORMAT:
                raise ValueError(f"format {table.get('format')!r}, this package reads {FORMAT}")
            for key in ("device", "sm", "sm_count", "kernels", "classes"):
                if key not in table:
                    raise ValueError(f"no {key!r}")
        except (OSError, ValueError) as e:
            warnings.warn(f"pycutlass_gemm: ignoring the heuristics table {path}: {e}", RuntimeWarning, stacklevel=2)
            continue
        table["source"] = (f"table measured on {table['device']} (pycutlass_gemm "
                           f"{table.get('package_version', '?')}, {table.get('measured', '?')})")
        tables.append(table)
    return tables


def install(tables: list[dict] | None = None) -> list[dict]:
    """Hands `tables` (default: the shipped ones, none with PYCUTLASS_GEMM_HEURISTICS=0) to plan()."""
    if tables is None:
        tables = [] if os.environ.get("PYCUTLASS_GEMM_HEURISTICS") == "0" else load_tables()
    _C.set_measured_tables(tables)
    return tables


def sweep_meta() -> dict:
    """What a table records about where it was measured (besides device, sm and sm_count), "registered" among it:
    the kernels built there, which the sweep could time (plan() judges a kernel registered later by the rules)."""
    return {"measured": datetime.date.today().isoformat(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "driver": _C.driver_version(), "registered": sorted({k["name"] for k in _C.kernels()})}
