"""The product: ``gemm`` and what it is made of.

A matrix's layout is read from its strides: ``A.T`` of a row-major tensor is a column-major
matrix, and that is a choice of kernel, never a copy. The C++ registry (``pycutlass_gemm._C``) is
the single source of truth for which kernels exist and which one ``variant="auto"`` runs; this
module turns tensors into a ``GemmProblem``, checks arguments before anything launches, and
launches. ``ops.py`` wraps ``launch`` as a torch custom op with autograd.
"""

from __future__ import annotations

import functools
import os
import warnings

import torch

try:
    from . import _C
except ImportError as e:  # the usual cause: running from the source tree, which has no built _C
    raise ImportError(
        f"pycutlass_gemm's compiled core could not be imported from {os.path.dirname(__file__)} ({e}). "
        "Install the package (pip install .) and run from outside the source tree."
    ) from e

_DTYPES = {
    torch.float32: _C.DType.float32,
    torch.float16: _C.DType.float16,
    torch.bfloat16: _C.DType.bfloat16,
    torch.float64: _C.DType.float64,
}
PRECISIONS = ("ieee", "tf32")
# What plan() assumes for tensors not on a CUDA device: the GPU this package is built for (H100
# SXM / H200: sm_90, 132 SMs). The SM count matters: it decides split-K and stream-K.
_DEFAULT_ARCH, _DEFAULT_SM_COUNT = 90, 132


def kernels() -> list[dict]:
    """Every registered kernel: name, family, dtype, math, layout_a/layout_b ("row", "col" or "any"),
    sm_min/sm_max, tile, alignment (elements) and priority (auto prefers larger)."""
    return _C.kernels()


def layout_of(t: torch.Tensor) -> str:
    """"row" or "col": how the elements of a 2-D tensor lie in memory. Works on any device, meta too.

    Raises ValueError for a view that is neither (e.g. ``x[:, ::2]``); ``gemm`` runs such inputs
    on the fallback kernel through their strides."""
    _check_tensor(t, "t", dims=(2,))
    layout = _C.layout(t.shape[0], t.shape[1], t.stride(0), t.stride(1))
    if layout == "any":
        raise ValueError(f"tensor of shape {tuple(t.shape)} and strides {t.stride()} is neither row- nor column-major")
    return layout


def default_precision() -> str:
    """The fp32 precision torch.matmul would use now: "tf32" if torch allows TF32 for matmul
    (torch.backends.cuda.matmul.fp32_precision / allow_tf32 / set_float32_matmul_precision)."""
    matmul = torch.backends.cuda.matmul
    for setting in (getattr(matmul, "fp32_precision", None), getattr(torch.backends, "fp32_precision", None)):
        if setting in PRECISIONS:
            return setting
    try:
        return "tf32" if matmul.allow_tf32 else "ieee"
    except RuntimeError:  # torch refuses to read the legacy flag once the new API was used
        return "ieee" if torch.get_float32_matmul_precision() == "highest" else "tf32"


def plan(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, beta: float = 0.0,
         out: torch.Tensor | None = None, precision: str | None = None, arch: int | None = None) -> dict:
    """What ``gemm(a, b, c, beta=beta, out=out)`` with ``variant="auto"`` would run, without running
    it: ``{"kernel": name or None, "reason": str}``.

    Works on meta and CPU tensors; ``arch`` (e.g. 90) defaults to the current CUDA device's
    compute capability, or 90 without one; tensors not on a GPU are planned for 132 SMs."""
    problem = _problem(a, b, c, 1.0, beta, out, precision, arch=arch)
    name, reason = _C.plan(problem)
    return {"kernel": name, "reason": reason}


def can_run(name: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, beta: float = 0.0,
            out: torch.Tensor | None = None, precision: str | None = None, arch: int | None = None) -> str:
    """"" if kernel ``name`` can compute ``a @ b`` (into ``out``), else the reason it cannot."""
    return _C.can_implement(name, _problem(a, b, c, 1.0, beta, out, precision, arch=arch))


def launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, alpha: float = 1.0,
           beta: float = 0.0, variant: str = "auto", out: torch.Tensor | None = None,
           precision: str | None = None) -> torch.Tensor:
    """``alpha * (a @ b) + beta * c`` on the GPU, no autograd: what ``gemm`` runs (see there)."""
    problem = _problem(a, b, c, alpha, beta, out, precision)
    if a.device.type != "cuda":
        raise ValueError(f"pycutlass_gemm needs CUDA tensors; a and b are on {a.device}")
    if out is None:
        out = torch.empty(_output_shape(a, b), dtype=a.dtype, device=a.device)
        problem.d = _matrix(out, problem.batch)
        if c is None:
            problem.c = problem.d
    if problem.m == 0 or problem.n == 0 or problem.batch == 0:
        return out
    if problem.k == 0:  # no products: D = beta * C
        return out.copy_(c.expand(out.shape)).mul_(beta) if c is not None and beta != 0 else out.zero_()

    if variant == "auto":
        name, reason = _C.plan(problem)
        if name is None:
            raise ValueError(f"pycutlass_gemm: {reason}")
        _warn_if_not_hopper(problem, name)
    else:
        name = variant
        reason = _C.can_implement(name, problem)  # ValueError for an unknown name
        if reason:
            raise ValueError(f"pycutlass_gemm: kernel '{name}' cannot implement this problem: {reason}")

    # Workspace through torch's allocator: stream-ordered, and legal under CUDA graph capture.
    workspace_bytes = _C.workspace_size(name, problem)
    workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=a.device) if workspace_bytes else None
    with torch.cuda.device(a.device):
        problem.stream = torch.cuda.current_stream(a.device).cuda_stream
        _C.run(name, problem, workspace.data_ptr() if workspace is not None else 0)
    return out


# --- building the problem ---------------------------------------------------------------------------

def _check_tensor(t, what: str, dims: tuple[int, ...]) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() not in dims:
        allowed = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"{what} must be {allowed}, got {t.dim()}-D with shape {tuple(t.shape)}")


def _matrix(t: torch.Tensor, batch: int) -> _C.MatrixRef:
    """The last two dimensions as a matrix; a leading batch dimension of 1 (or a 2-D tensor under a
    batched product) is broadcast with batch stride 0."""
    ptr = 0 if t.device.type == "meta" else t.data_ptr()
    batch_stride = t.stride(0) if t.dim() == 3 and t.shape[0] == batch and batch > 1 else 0
    return _C.MatrixRef(ptr, t.shape[-2], t.shape[-1], t.stride(-2), t.stride(-1), batch_stride)


def _batch_of(a: torch.Tensor, b: torch.Tensor) -> int | None:
    """The batch count of a product of 2-D/3-D operands (None: not batched)."""
    sizes = [t.shape[0] for t in (a, b) if t.dim() == 3]
    if not sizes:
        return None
    batch = max(sizes)
    if any(s not in (1, batch) for s in sizes):
        raise ValueError(f"batch sizes disagree: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    return batch


def _output_shape(a: torch.Tensor, b: torch.Tensor) -> tuple[int, ...]:
    batch = _batch_of(a, b)
    mn = (a.shape[-2], b.shape[-1])
    return mn if batch is None else (batch, *mn)


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    """[first, last) bytes the view can touch."""
    lo = t.data_ptr()
    hi = lo + (sum((s - 1) * st for s, st in zip(t.shape, t.stride())) + 1) * t.element_size()
    return lo, hi


def _overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    if x.numel() == 0 or y.numel() == 0 or x.device != y.device or x.device.type == "meta":
        return False  # meta tensors have no memory
    (x0, x1), (y0, y1) = _byte_span(x), _byte_span(y)
    return x0 < y1 and y0 < x1


@functools.cache
def _cuda_props(index: int) -> tuple[int, int]:
    """(compute capability as 90, multiprocessor count) of CUDA device `index`: read once, since
    torch.cuda.get_device_properties costs microseconds on every call's path."""
    props = torch.cuda.get_device_properties(index)
    return props.major * 10 + props.minor, props.multi_processor_count


def _device_props(device: torch.device, arch: int | None) -> tuple[int, int]:
    """(compute capability as 90, multiprocessor count) for the problem's device."""
    if device.type == "cuda":
        return _cuda_props(device.index)
    if arch is not None:
        return arch, _DEFAULT_SM_COUNT
    if torch.cuda.is_available():
        return _cuda_props(torch.cuda.current_device())
    return _DEFAULT_ARCH, _DEFAULT_SM_COUNT


def _problem(a, b, c, alpha, beta, out, precision, *, arch: int | None = None) -> _C.GemmProblem:
    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"precision must be 'ieee', 'tf32' or None, got {precision!r}")
    _check_tensor(a, "a", dims=(2, 3))
    _check_tensor(b, "b", dims=(2, 3))
    if a.dtype != b.dtype:
        raise TypeError(f"a and b must have the same dtype, got {a.dtype} and {b.dtype}")
    if a.dtype not in _DTYPES:
        raise TypeError(f"unsupported dtype {a.dtype}; supported: float32, float16, bfloat16, float64")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"inner dimensions disagree: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"a and b must be on the same device, got {a.device} and {b.device}")
    shape = _output_shape(a, b)
    batch = shape[0] if len(shape) == 3 else 1

    p = _C.GemmProblem()
    p.m, p.n, p.k, p.batch = a.shape[-2], b.shape[-1], a.shape[-1], batch
    p.a, p.b = _matrix(a, batch), _matrix(b, batch)
    p.dtype = _DTYPES[a.dtype]
    if a.dtype == torch.float32:
        p.precision = getattr(_C.Precision, precision or default_precision())
    p.sm, p.sm_count = _device_props(a.device, arch)
    p.alpha, p.beta = float(alpha), float(beta)
    p.deterministic = torch.are_deterministic_algorithms_enabled()
    if out is not None:
        _check_out(out, a, b, shape)
        p.d = _matrix(out, batch)
    else:  # what launch allocates: row-major, 256-byte aligned by torch's allocator
        m, n = shape[-2:]
        p.d = _C.MatrixRef(0, m, n, n, 1, m * n if batch > 1 else 0)
    p.c = _matrix(_check_c(c, a, shape, out), batch) if c is not None else p.d
    return p


def _check_c(c, a, shape, out) -> torch.Tensor:
    """c broadcast (as a view) to the output's shape."""
    if not isinstance(c, torch.Tensor):
        raise TypeError(f"c must be a torch.Tensor, got {type(c).__name__}")
    if c.dtype != a.dtype:
        raise TypeError(f"c must have dtype {a.dtype}, got {c.dtype}")
    if c.device != a.device:
        raise ValueError(f"c must be on {a.device}, got {c.device}")
    try:
        expanded = c.expand(shape)
    except RuntimeError:
        raise ValueError(f"c of shape {tuple(c.shape)} does not broadcast to the output shape {shape}") from None
    # D may be C itself (in place, as addmm_), but not a different view of its memory.
    if out is not None and _overlaps(out, c) and (out.data_ptr(), out.stride()) != (c.data_ptr(), expanded.stride()):
        raise ValueError("out overlaps c in memory without being c itself")
    return expanded


def _check_out(out, a, b, shape) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out must have shape {tuple(shape)}, got {tuple(out.shape)}")
    if out.dtype != a.dtype:
        raise TypeError(f"out must have dtype {a.dtype}, got {out.dtype}")
    if out.device != a.device:
        raise ValueError(f"out must be on {a.device}, got {out.device}")
    m, n = shape[-2:]
    if _C.layout(m, n, out.stride(-2), out.stride(-1)) == "any":
        raise ValueError(f"out must be row- or column-major without overlapping elements, got strides {out.stride()}")
    if out.dim() == 3 and out.shape[0] > 1 and m * n > 0:
        matrix_span = (m - 1) * out.stride(-2) + (n - 1) * out.stride(-1) + 1
        if out.stride(0) < matrix_span:
            raise ValueError(f"out's batches overlap in memory (strides {out.stride()})")
    for name, t in (("a", a), ("b", b)):
        if _overlaps(out, t):
            raise ValueError(f"out overlaps {name} in memory; the result would overwrite its own input")


_warned_not_hopper = False


def _warn_if_not_hopper(problem: _C.GemmProblem, kernel: str) -> None:
    global _warned_not_hopper
    if problem.sm != 90 and not _warned_not_hopper and kernel == "fallback":
        _warned_not_hopper = True
        warnings.warn(
            f"pycutlass_gemm: this GPU is sm_{problem.sm}, the CUTLASS kernels are built for sm_90 (H100/H200); "
            "every call runs the fallback kernel",
            RuntimeWarning,
            stacklevel=4,
        )
