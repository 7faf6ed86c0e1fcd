"""What the benchmark prints and writes: the kernel table's lines (DeepGEMM style: error, TFLOP/s
and x torch on one line), the small tables of the other sections, CSV and JSON files, progress."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from typing import Sequence

from .bench_cases import FIELDS, BenchCase, Result


def fmt_value(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:{spec}}{suffix}"


@dataclass(frozen=True)
class Columns:
    """Widths of the text columns, fixed before the first row so groups printed apart align."""

    workload: int = 12
    variant: int = 16
    kernel: int = 16

    @classmethod
    def for_cases(cls, cases: Sequence[BenchCase], kernels: Sequence[dict]) -> "Columns":
        # "auto" may show any kernel built for the dtypes in the run.
        dtypes = {c.precision.dtype_name for c in cases}
        kernel_names = [k["name"] for k in kernels if k["dtype"] in dtypes] + ["copy + cuBLAS"]
        return cls(workload=max(len(c.workload.name) for c in cases),
                   variant=max(len(c.variant) for c in cases),
                   kernel=max(map(len, kernel_names)))


def format_header(cols: Columns) -> str:
    return (f"{'workload':<{cols.workload}} {'prec':<4} {'variant':<{cols.variant}} {'kernel':<{cols.kernel}} "
            f"{'ms':>9} {'TFLOP/s':>8} {'%peak':>6} {'%bw':>5} {'x naive':>8} {'x torch':>7} {'vs best':>7} "
            f"{'error':>8}  status")


def format_row(r: Result, cols: Columns = Columns()) -> str:
    """One line per row, DeepGEMM style: correctness and speed side by side. A row that is not
    "ok" shows no speed, only its error and why."""
    ok = r.status == "ok"
    kernel = "" if r.kernel == r.variant else r.kernel  # naive, fallback and named kernels: said once
    status = r.status if not r.message else f"{r.status} {r.message}"
    speed = (fmt_value(r.ms, ".3f") if ok else "-", fmt_value(r.tflops, ".1f") if ok else "-",
             fmt_value(r.pct_peak, ".0f", "%") if ok else "-", fmt_value(r.pct_bw, ".0f", "%") if ok else "-",
             fmt_value(r.x_naive, ".1f", "x") if ok else "-", fmt_value(r.x_torch, ".2f", "x") if ok else "-",
             fmt_vs_best(r.vs_best) if ok else "-")
    return (f"{r.workload:<{cols.workload}} {r.precision:<4} {r.variant:<{cols.variant}} {kernel:<{cols.kernel}} "
            f"{speed[0]:>9} {speed[1]:>8} {speed[2]:>6} {speed[3]:>5} {speed[4]:>8} {speed[5]:>7} {speed[6]:>7} "
            f"{fmt_value(r.error, '.1e'):>8}  {status}")


def fmt_vs_best(vs_best: float | None) -> str:
    """"+2.1%": slower than the fastest named kernel of the row's group by that much."""
    return "-" if vs_best is None else f"{100 * (vs_best - 1):+.1f}%"


def format_auto_summary(results: Sequence[Result], within: float = 0.03) -> str | None:
    """How close auto came to the fastest named kernel over every group that timed both."""
    autos = [r for r in results if r.variant == "auto" and r.vs_best is not None]
    if not autos:
        return None
    worst = max(autos, key=lambda r: r.vs_best)
    close = sum(r.vs_best <= 1 + within for r in autos)
    return (f"auto's choice vs the fastest named kernel: within {100 * within:.0f}% on {close} of {len(autos)} rows; worst "
            f"{fmt_vs_best(worst.vs_best)} ({worst.workload} {worst.precision}: auto ran {worst.kernel}, "
            f"{worst.best_kernel} was fastest)")


def _jsonable(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def write_csv(path: str, results: Sequence[Result]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for r in results:
            writer.writerow({k: ("" if v is None else v) for k, v in dataclasses.asdict(r).items()})


def _jsonable_tree(value):
    if isinstance(value, dict):
        return {k: _jsonable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable_tree(v) for v in value]
    if dataclasses.is_dataclass(value):
        return _jsonable_tree(dataclasses.asdict(value))
    return _jsonable(value)


def write_json(path: str, results: Sequence[Result], meta: dict, sections: dict | None = None) -> None:
    """{"meta", "results": the kernel table's rows, and one key per other section that ran
    ("accuracy", "host", "call_time", "model": lists of their rows)}; strict JSON (inf and NaN as null)."""
    data = {"meta": meta, "results": list(results), **(sections or {})}
    with open(path, "w") as f:
        json.dump(_jsonable_tree(data), f, indent=2, allow_nan=False)
        f.write("\n")


class Progress:
    """tqdm on stderr when installed; otherwise a plain counter. Table lines go through write()
    so they do not tear the bar."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.count, self.enabled = total, 0, enabled
        self._bar = None
        self._tty = sys.stderr.isatty()
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self._bar = tqdm(total=total, file=sys.stderr, unit="case", dynamic_ncols=True, leave=False)

    def update(self, label: str) -> None:
        """Called as each step starts: the label names what is running now."""
        if self.count and self._bar is not None:
            self._bar.update(1)
        self.count += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_description_str(label)
        elif self._tty:
            print(f"\r\033[K[{self.count}/{self.total}] {label}", end="", file=sys.stderr, flush=True)
        else:
            print(f"[{self.count}/{self.total}] {label}", file=sys.stderr, flush=True)

    def write(self, line: str) -> None:
        if self._bar is not None:
            self._bar.write(line, file=sys.stdout)
        else:
            if self.enabled and self._tty:
                print("\r\033[K", end="", file=sys.stderr, flush=True)
            print(line, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(1)
            self._bar.close()
        elif self.enabled and self._tty:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """Lines of a small table, each column as wide as its widest cell; `align` has one letter a
    column: "l" (names, statuses) or "r" (numbers)."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    cell = lambda i, c: f"{c:<{widths[i]}}" if align[i] == "l" else f"{c:>{widths[i]}}"  # noqa: E731
    return ["  ".join(cell(i, str(c)) for i, c in enumerate(line)).rstrip() for line in (headers, *rows)]


def fmt_target(value: float | None, target: float | None, at_least: bool) -> str:
    """'>= 0.95x ok' / '<= 1.3x MISS': a ratio against its target; "" without a target."""
    if target is None:
        return ""
    if value is None or math.isnan(value):
        return f"{'>=' if at_least else '<='} {target:g}x -"
    met = value >= target if at_least else value <= target
    return f"{'>=' if at_least else '<='} {target:g}x {'ok' if met else 'MISS'}"
