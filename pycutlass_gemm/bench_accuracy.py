"""The "accuracy" section: what each fp32 precision costs in accuracy, against float64.

For the inputs of tracker issue 9 -- torch.rand, torch.randn, rows of A and columns of B scaled by
powers of two across +-20 binades, and a long K -- ‖out − ref‖/‖ref‖ against a float64 product of
the same fp32 inputs, for pycutlass_gemm with precision "ieee", "tf32" and "tf32x3" (what auto runs
for each, named in the row) and for torch.matmul in IEEE fp32 (cuBLAS SGEMM) and in tf32. A tf32x3
kernel is held to 1.5x SGEMM's error (the tracker's target): above it the row fails. Where auto
runs an IEEE kernel for tf32x3 (no tf32x3 kernel takes the problem) the row says so and
holds it to nothing: the IEEE kernels' own error is the "pg ieee" column.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# The package itself, looked up at call time (``_api.gemm``) so tests can swap its functions.
import pycutlass_gemm as _api

from . import bench_cases as cases
from .bench_cases import rel_error
from .bench_report import fmt_value, fmt_target, text_table
from .bench_timing import torch_matmul_precision

PG_PRECISIONS = ("ieee", "tf32", "tf32x3")
COLUMNS = tuple(f"pg {p}" for p in PG_PRECISIONS) + ("torch fp32", "torch tf32")
TF32X3_TARGET = 1.5  # tf32x3's error / cuBLAS SGEMM's, at most
BINADES = 20
# (inputs, m, n, k, layouts of A and B): the transposed-A layout (both operands MN-major), and the
# large-K workload's shape.
INPUTS = (("rand", 2048, 4096, 8192, "cr"), ("randn", 2048, 4096, 8192, "cr"), ("binades", 2048, 4096, 8192, "cr"),
          ("rand", 256, 256, 524288, "rr"))
QUICK_INPUTS = (("rand", 512, 512, 2048, "cr"), ("randn", 512, 512, 2048, "cr"), ("binades", 512, 512, 2048, "cr"),
                ("rand", 64, 64, 65536, "rr"))


@dataclass
class AccuracyRow:
    inputs: str
    problem: str
    errors: dict = field(default_factory=dict)   # column (COLUMNS) -> error vs float64
    kernels: dict = field(default_factory=dict)  # pg precision -> the kernel auto ran
    ratio: float | None = None                   # pg tf32x3's error / torch fp32's
    target: float | None = TF32X3_TARGET         # None: tf32x3 ran an IEEE kernel, held to nothing
    status: str = "ok"
    message: str = ""


def make_operands(inputs: str, m: int, n: int, k: int, layout: str, device: str | None = None, seed: int = 0):
    """A (m, k) and B (k, n) float32, stored per `layout` ("r" row-major, "c" a column-major view):
    torch.rand, torch.randn, or "binades": torch.randn with each row of A and each column of B
    scaled by 2^e, e uniform in [-BINADES, BINADES]."""
    device = device or cases.DEVICE
    g = torch.Generator(device=device).manual_seed(seed)
    draw = torch.rand if inputs == "rand" else torch.randn

    def operand(rows, cols, stored, scale_dim):
        x = draw(rows, cols, generator=g, device=device)
        if inputs == "binades":
            e = torch.randint(-BINADES, BINADES + 1, (x.shape[scale_dim],), generator=g, device=device)
            x = x * torch.exp2(e.float()).unsqueeze(1 - scale_dim)
        return x if stored == "r" else x.T.contiguous().T

    return operand(m, k, layout[0], 0), operand(k, n, layout[1], 1)


def accuracy_steps(quick: bool) -> int:
    return len(QUICK_INPUTS if quick else INPUTS)


def run_accuracy(quick: bool, progress) -> list[AccuracyRow]:
    math_of = {k["name"]: k["math"] for k in _api.kernels() if k["dtype"] == "float32"}
    rows = []
    for inputs, m, n, k, layout in QUICK_INPUTS if quick else INPUTS:
        row = AccuracyRow(inputs, cases.Workload.problem(m, n, k, layout).label)
        progress.update(f"accuracy {inputs} {row.problem}")
        try:
            a, b = make_operands(inputs, m, n, k, layout)
            ref = torch.matmul(a.double(), b.double())
            for precision in PG_PRECISIONS:
                row.kernels[precision] = _api.plan(a, b, precision=precision)["kernel"]
                row.errors[f"pg {precision}"] = rel_error(_api.gemm(a, b, precision=precision), ref)
            for name, tf32 in (("torch fp32", False), ("torch tf32", True)):
                with torch_matmul_precision(tf32):
                    row.errors[name] = rel_error(torch.matmul(a, b), ref)
            row.ratio = row.errors["pg tf32x3"] / row.errors["torch fp32"] if row.errors["torch fp32"] > 0 else None
            if math_of.get(row.kernels["tf32x3"]) != "tf32x3":
                row.target, row.message = None, "tf32x3 ran an IEEE kernel (no tf32x3 kernel takes the problem)"
            elif row.ratio is None or not row.ratio <= row.target:
                row.status, row.message = "FAIL", f"tf32x3 error above {row.target:g}x SGEMM's"
            del a, b, ref
        except Exception as e:  # noqa: BLE001 -- a row reports its own failure; the run goes on
            row.status, row.message = "FAIL", f"{type(e).__name__}: {e}"
        rows.append(row)
    return rows


def format_accuracy(rows: list[AccuracyRow]) -> list[str]:
    title = ("‖out − ref‖/‖ref‖ against float64 on the same fp32 inputs; pg = pycutlass_gemm (what auto ran for "
             "tf32x3 in the last column), torch fp32 = cuBLAS SGEMM")
    headers = ["inputs", "problem", *COLUMNS, "tf32x3/SGEMM", "target", "tf32x3 ran", "status"]
    table = [[r.inputs, r.problem, *(fmt_value(r.errors.get(c), ".1e") for c in COLUMNS),
              fmt_value(r.ratio, ".2f", "x"), fmt_target(r.ratio, r.target, at_least=False),
              r.kernels.get("tf32x3", "-") or "-", (r.status + " " + r.message).strip()] for r in rows]
    return [title, *text_table(headers, table, "ll" + "r" * (len(COLUMNS) + 1) + "lll")]
