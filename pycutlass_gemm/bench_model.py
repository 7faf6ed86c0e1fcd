"""The "model" section: whole training steps, pycutlass_gemm against torch.

(i) a 3-layer MLP (``h = relu(h @ w.T)``), with ``pycutlass_gemm.matmul`` in place of
``torch.matmul`` and with torch.matmul under ``pycutlass_gemm.enable()``, in bf16 and tf32; (ii)
``torch.nn.TransformerEncoderLayer`` in bf16, plain and under ``pycutlass_gemm.enable()`` (which
routes torch's matmul family and F.linear through the package), eager and compiled. A step is
forward, ``.float().square().mean()``, backward; it is timed on an idle GPU with CUDA events around
the whole step (host work included, as a training loop waiting on each step sees it) and by the wall
clock beside.
"""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, ContextManager, Sequence

import torch

# The package itself, looked up at call time (``_api.enable``) so tests can swap its functions.
import pycutlass_gemm as _api

from . import bench_cases as cases
from .bench_report import fmt_value, fmt_target, text_table
from .bench_timing import Settings, time_rounds, torch_matmul_precision, warm_up


@dataclass(frozen=True)
class MlpShape:
    tokens: int = 4096   # rows of X
    width: int = 1024    # X's columns, each W is width x width
    layers: int = 3


@dataclass(frozen=True)
class EncoderShape:
    d_model: int = 1024
    nhead: int = 16
    dim_feedforward: int = 4096
    batch: int = 8
    seq: int = 512


MLP, ENCODER = MlpShape(), EncoderShape()  # the tests shrink them to run on the CPU
TARGET = 0.95  # x torch, at least (the tracker's target for the MLP and the encoder layer)
# ‖pg − torch‖/‖torch‖ of the step's output allowed: two bf16 (tf32) implementations differ by
# ~1e-2 (~1e-3) after a few layers; routing through a wrong kernel is off by O(1).
OUTPUT_TOL = {"bf16": 5e-2, "tf32": 1e-2}


@dataclass
class ModelRow:
    model: str
    precision: str
    variant: str
    ms: float | None = None        # median of CUDA events around the step (idle GPU at the start)
    wall_ms: float | None = None   # median of the wall clock around the same steps
    runs: int = 0
    x_torch: float | None = None   # the torch row's ms over this row's, same model, precision and mode
    out_err: float | None = None   # ‖out − torch's out‖/‖torch's out‖, in float
    grad_err: float | None = None  # the largest such error of the parameters' gradients
    pg_ops: int | None = None      # the package's kernels the profiler saw in one step
    target: float | None = None
    status: str = "ok"
    message: str = ""


@dataclass
class Variant:
    """One row's training step, the context it runs in and the torch row it is compared with."""

    row: ModelRow
    step: Callable[[], torch.Tensor]  # one step; returns the forward output
    context: Callable[[], ContextManager]
    params: Sequence[torch.Tensor]
    reference: "Variant | None" = None
    out: torch.Tensor | None = None
    grads: list = field(default_factory=list)


def _rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(x - ref) / torch.linalg.vector_norm(ref))


def _training_step(forward: Callable[[], torch.Tensor], params: Sequence[torch.Tensor]) -> torch.Tensor:
    for p in params:
        p.grad = None  # set, not accumulated: every step does the same work
    out = forward()
    out.float().square().mean().backward()
    return out


def _mlp_forward(x, weights, mm):
    h = x
    for w in weights:
        h = torch.relu(mm(h, w.T))  # w.T: a column-major view, as nn.Linear uses its weight
    return h


def _enabled(tf32: bool) -> ContextManager:
    """enable() for the MLP's dtype: bf16 takes its default (C++ kernels for aten::mm where torch
    allows them); fp32 must be routed explicitly, as tf32 under torch's switch like the torch row."""
    if not tf32:
        return _api.enable()
    stack = contextlib.ExitStack()
    stack.enter_context(torch_matmul_precision(True))
    stack.enter_context(_api.enable(dtypes=(torch.bfloat16, torch.float16, torch.float32)))
    return stack


def mlp_variants(precision: str, with_enable: bool = True) -> list[Variant]:
    """torch.matmul, pycutlass_gemm.matmul and (`with_enable`) torch.matmul under enable() on the
    same X and weights (bf16, or fp32 as tf32)."""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    g = torch.Generator(device=cases.DEVICE).manual_seed(0)
    x = torch.randn(MLP.tokens, MLP.width, generator=g, device=cases.DEVICE).to(dtype)
    weights = [(torch.randn(MLP.width, MLP.width, generator=g, device=cases.DEVICE) / math.sqrt(MLP.width))
               .to(dtype).requires_grad_() for _ in range(MLP.layers)]
    tf32 = precision == "tf32"
    pg_mm = lambda a, b: _api.matmul(a, b, precision="tf32" if tf32 else None)  # noqa: E731
    name = f"MLP {MLP.layers}x{MLP.width}, X {MLP.tokens}x{MLP.width}"
    torch_v = Variant(ModelRow(name, precision, "torch.matmul"),
                      lambda: _training_step(lambda: _mlp_forward(x, weights, torch.matmul), weights),
                      (lambda: torch_matmul_precision(True)) if tf32 else contextlib.nullcontext, weights)
    pg_v = Variant(ModelRow(name, precision, "pg.matmul", target=TARGET),
                   lambda: _training_step(lambda: _mlp_forward(x, weights, pg_mm), weights),
                   contextlib.nullcontext, weights, reference=torch_v)
    if not with_enable:
        return [torch_v, pg_v]
    enable_v = Variant(ModelRow(name, precision, "enable()", target=TARGET),
                       lambda: _training_step(lambda: _mlp_forward(x, weights, torch.matmul), weights),
                       functools.partial(_enabled, tf32), weights, reference=torch_v)
    return [torch_v, pg_v, enable_v]


def encoder_variants(compiled: bool) -> list[Variant]:
    """The encoder layer plain and under enable(), eager and (with `compiled`) torch.compile'd.
    The compiled modules compile at their first step, which runs in the variant's context: the
    pg one is compiled under enable() and runs under it. Each torch.compile call has its own
    backend object, so dynamo keeps the two compiled versions apart (its backend guard)."""
    e = ENCODER
    layer = torch.nn.TransformerEncoderLayer(d_model=e.d_model, nhead=e.nhead, dim_feedforward=e.dim_feedforward,
                                             dropout=0.0, batch_first=True, device=cases.DEVICE, dtype=torch.bfloat16)
    g = torch.Generator(device=cases.DEVICE).manual_seed(0)
    x = torch.randn(e.batch, e.seq, e.d_model, generator=g, device=cases.DEVICE).to(torch.bfloat16)
    params = list(layer.parameters())
    name = f"encoder layer {e.d_model}/{e.nhead}h/ff {e.dim_feedforward}, {e.batch}x{e.seq} tokens"
    modes = [("eager", layer, layer)]
    if compiled:
        modes.append(("compiled", torch.compile(layer), torch.compile(layer)))
    variants = []
    for mode, torch_module, pg_module in modes:
        torch_v = Variant(ModelRow(name, "bf16", f"torch {mode}"),
                          functools.partial(_training_step, functools.partial(torch_module, x), params),
                          contextlib.nullcontext, params)
        pg_v = Variant(ModelRow(name, "bf16", f"enable() {mode}", target=TARGET),
                       functools.partial(_training_step, functools.partial(pg_module, x), params),
                       lambda: _api.enable(), params, reference=torch_v)
        variants += [torch_v, pg_v]
    return variants


def count_pg_ops(v: Variant) -> int | None:
    """How many of the package's kernels one step launches, as torch's profiler records them: 0
    for the torch rows, and for the pg rows the proof that the products went through the package.
    Kernels, not ops: eager calls go straight from Python to the launch, past the dispatcher."""
    try:
        from torch.profiler import ProfilerActivity, profile

        with v.context(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            v.step()
            torch.cuda.synchronize()
        return sum(e.count for e in prof.key_averages() if _is_package_kernel(e.key))
    except Exception:  # noqa: BLE001 -- a count is a diagnostic, never a reason to fail the row
        return None


def _is_package_kernel(name: str) -> bool:
    """The package's CUTLASS kernels are device kernels of cutlass::gemm::kernel::GemmUniversal
    (3.x and 2.x; the profiler may show the name mangled); cuBLAS's own kernels are named
    otherwise (sm90_xmma_*, nvjet_*, cutlass_80_tensorop_*); the hand-written ones live in
    namespace pycutlass_gemm."""
    return "pycutlass_gemm" in name or "GemmUniversal" in name


def time_step(v: Variant) -> tuple[float, float]:
    """(CUDA-event ms, wall ms) of one step started on an idle GPU."""
    with v.context():
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        v.step()
        end.record()
        end.synchronize()
        wall = time.perf_counter() - t0
    return start.elapsed_time(end), wall * 1e3


def measure(variants: Sequence[Variant], settings: Settings, progress) -> list[ModelRow]:
    """Run each variant once (compiling where it compiles) and keep its output and gradients, warm
    it up, compare it with its torch row, then time them all interleaved."""
    live = []
    for v in variants:
        progress.update(f"model {v.row.model} {v.row.precision} {v.row.variant}")
        try:
            with v.context():
                t0 = time.perf_counter()
                v.out = v.step().detach().float()
                torch.cuda.synchronize()
                v.grads = [p.grad.detach().float().clone() for p in v.params if p.grad is not None]
                warm_up(v.step, settings, warmed_s=min(time.perf_counter() - t0, settings.warmup_s / 2))
            v.row.pg_ops = count_pg_ops(v)
        except Exception as e:  # noqa: BLE001 -- a variant that raises is a FAIL, the run goes on
            v.row.status, v.row.message = "FAIL", f"{type(e).__name__}: {e}".strip()
            continue
        ref = v.reference
        if ref is not None and ref.out is not None:
            v.row.out_err = _rel(v.out, ref.out)
            if v.grads and len(v.grads) == len(ref.grads):
                # All gradients as one vector: a parameter whose gradient is zero in exact arithmetic
                # (the key projection's bias, under softmax) would make a per-tensor ratio noise.
                v.row.grad_err = _rel(torch.cat([g.flatten() for g in v.grads]),
                                      torch.cat([g.flatten() for g in ref.grads]))
            tol = OUTPUT_TOL.get(v.row.precision, 5e-2)
            if not v.row.out_err <= tol:
                v.row.status, v.row.message = "FAIL", f"output differs from torch's by {v.row.out_err:.1e} > {tol:.0e}"
                continue
        live.append(v)
    progress.update(f"model {variants[0].row.model}: timing {len(live)} rows, interleaved")
    samples = time_rounds([functools.partial(time_step, v) for v in live], settings)
    for v, s in zip(live, samples):
        v.row.ms = statistics.median(ms for ms, _ in s)
        v.row.wall_ms = statistics.median(wall for _, wall in s)
        v.row.runs = len(s)
    for v in variants:
        torch_ms = (v.reference or v).row.ms
        if v.row.ms and torch_ms:
            v.row.x_torch = torch_ms / v.row.ms
    return [v.row for v in variants]


def model_steps(quick: bool) -> int:
    """Progress steps: each variant, and one timing step per model and precision."""
    return 2 * 4 + (2 if quick else 4) + 1


def run_model(quick: bool, settings: Settings, progress) -> list[ModelRow]:
    """The MLP in bf16 and tf32, then the encoder layer (eager only with --quick: compiling takes
    about a minute); the encoder part is one SKIP row when this build has no enable()."""
    rows = []
    has_enable = callable(getattr(_api, "enable", None))
    for precision in ("bf16", "tf32"):
        rows += measure(mlp_variants(precision, has_enable), settings, progress)
        torch.cuda.empty_cache()
    if not has_enable:
        rows.append(ModelRow("encoder layer", "bf16", "enable()", status="SKIP",
                             message="pycutlass_gemm.enable() does not exist in this build (older API)"))
        return rows
    rows += measure(encoder_variants(compiled=not quick), settings, progress)
    return rows


def format_model(rows: Sequence[ModelRow], quick: bool = False) -> list[str]:
    title = ("model: training step (forward, .float().square().mean(), backward); CUDA events around the step "
             "from an idle GPU, wall clock beside; x torch: torch's ms / this ms, same mode")
    table = [[r.model, r.precision, r.variant, fmt_value(r.ms, ".3f"), fmt_value(r.wall_ms, ".3f"), fmt_value(r.x_torch, ".2f", "x"),
              fmt_target(r.x_torch, r.target, at_least=True), fmt_value(r.out_err, ".1e"), fmt_value(r.grad_err, ".1e"),
              fmt_value(r.pg_ops, "d"), r.status if not r.message else f"{r.status} {r.message}"] for r in rows]
    headers = ["model", "prec", "variant", "ms/step", "wall ms", "x torch", "target", "out err", "grad err",
               "pg kernels", "status"]
    lines = [title, *text_table(headers, table, "lllrrrlrrrl")]
    if quick:
        lines.append("(--quick: the encoder layer eager only; the compiled rows run without --quick)")
    return lines
