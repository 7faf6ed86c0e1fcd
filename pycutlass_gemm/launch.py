"""From torch tensors to a launch: the registry, planning, and the one C++ call per launch.

A matrix's layout is read from its strides: ``A.T`` of a row-major tensor is a column-major
matrix, and that is a choice of kernel, never a copy. The C++ core (``pycutlass_gemm._C``) is the
single source of truth for which kernels exist and which one ``variant="auto"`` runs; it reads the
tensors' shapes, strides, dtypes and pointers itself, checks the arguments, looks the plan up in a
cache and launches, all in one call: the Python here only turns torch's settings (precision,
determinism) into plain values. ``gemm.py`` adds autograd, ``library.py`` the torch op.
"""

from __future__ import annotations

import os

import torch

try:
    from . import _C
except ImportError as e:  # the usual cause: running from the source tree, which has no built _C
    raise ImportError(
        f"pycutlass_gemm's compiled core could not be imported from {os.path.dirname(__file__)} ({e}). "
        "Install the package (pip install .) and run from outside the source tree."
    ) from e
from . import heuristics  # noqa: E402 -- needs _C

_C.bind_torch(torch.Tensor, torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.uint8,
              torch._C._cuda_getCurrentRawStream if hasattr(torch._C, "_cuda_getCurrentRawStream") else None)
heuristics.install()  # the measured tables plan() consults before its rules

PRECISIONS = ("ieee", "tf32", "tf32x3")
_PRECISION_CODE = {"ieee": 0, "tf32": 1, "tf32x3": 2}  # _C's Precision values
_float32_precision: str | None = None  # set_float32_precision's; None: torch's switch decides
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)  # exact types: subclasses go to the dispatcher
_dispatch_modes = torch._C._len_torch_dispatch_stack


def launchable(*tensors) -> bool:
    """Whether a call on these tensors (None: absent) may go straight to the C++ launch: plain
    torch tensors, not subclasses (FakeTensor while torch.compile traces, functional tensors), and
    no dispatch mode active (it must see the call)."""
    for t in tensors:  # a loop, not all(...): this runs on every call
        if t is not None and type(t) not in _PLAIN_TENSORS:
            return False
    return _dispatch_modes() == 0


def kernels() -> list[dict]:
    """Every registered kernel: name, family, dtype, math, layout_a/layout_b ("row", "col" or "any"),
    sm_min/sm_max, tile, alignment (elements, of A and B; output_alignment: of C and D), priority
    (auto prefers larger) and bias_row (its epilogue also adds a bias row: F.linear's bias, c of
    shape (n,) with beta 1)."""
    return _C.kernels()


def layout_of(t: torch.Tensor) -> str:
    """"row" or "col": how the elements of a 2-D tensor lie in memory. Works on any device, meta too.

    Raises ValueError for a view that is neither (e.g. ``x[:, ::2]``); ``gemm`` runs such inputs
    on the fallback kernel through their strides."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise ValueError(f"t must be 2-D, got {t.dim()}-D with shape {tuple(t.shape)}")
    layout = _C.layout(t.shape[0], t.shape[1], t.stride(0), t.stride(1))
    if layout == "any":
        raise ValueError(f"tensor of shape {tuple(t.shape)} and strides {t.stride()} is neither row- nor column-major")
    return layout


def set_float32_precision(precision: str | None) -> None:
    """The precision of float32 products called with ``precision=None``, for the whole process:
    "ieee" (exact fp32), "tf32" (tf32 tensor cores) or "tf32x3" (each input split into tf32 big and
    small parts, three tf32 products: about fp32's accuracy); None (the default) follows torch's TF32
    switch, as torch.matmul does. A model can so run on tf32x3 without passing ``precision``
    everywhere. IEEE stays IEEE: nothing runs tf32x3 unless asked, here or per call."""
    global _float32_precision
    code = -1 if precision is None else _code_of(precision)  # raises for an unknown one
    _float32_precision = precision
    _C.aten_router_set_float32_precision(code)  # enable()'s C++ kernels read it there


def get_float32_precision() -> str | None:
    """What ``set_float32_precision`` set (None: torch's switch decides)."""
    return _float32_precision


def default_precision() -> str:
    """The fp32 precision a call with ``precision=None`` uses now: ``set_float32_precision``'s, or
    else the one torch.matmul would use: "tf32" if torch allows TF32 for matmul
    (torch.backends.cuda.matmul.fp32_precision / allow_tf32 / set_float32_matmul_precision)."""
    if _float32_precision is not None:
        return _float32_precision
    matmul = torch.backends.cuda.matmul
    for setting in (getattr(matmul, "fp32_precision", None), getattr(torch.backends, "fp32_precision", None)):
        if setting in ("ieee", "tf32"):
            return setting
    try:
        return "tf32" if matmul.allow_tf32 else "ieee"
    except RuntimeError:  # torch refuses to read the legacy flag once the new API was used
        return "ieee" if torch.get_float32_matmul_precision() == "highest" else "tf32"


def _code_of(precision: str) -> int:
    code = _PRECISION_CODE.get(precision)
    if code is None:
        raise ValueError(f"precision must be 'ieee', 'tf32', 'tf32x3' or None, got {precision!r}")
    return code


def precision_code(a, precision: str | None) -> int:
    """_C's code for `precision`; None follows default_precision() (read only for float32 inputs)."""
    if precision is None:
        if getattr(a, "dtype", None) is not torch.float32:
            return 0
        precision = default_precision()
    return _code_of(precision)


def plan(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, beta: float = 0.0,
         out: torch.Tensor | None = None, precision: str | None = None, arch: int | None = None) -> dict:
    """What ``gemm(a, b, c, beta=beta, out=out)`` with ``variant="auto"`` would run, without running
    it: ``{"kernel": name or None, "reason": str}``. The reason says what decided: the autotuned
    choice of the problem's class, the measured table (its device, class and the nearest measured
    point), or the priority rules.

    Works on meta and CPU tensors; ``arch`` (e.g. 90) defaults to the current CUDA device's
    compute capability, or 90 without one; tensors not on a GPU are planned for 132 SMs."""
    name, reason = _C.plan(a, b, c, out, float(beta), precision_code(a, precision),
                           torch.are_deterministic_algorithms_enabled(), arch or 0)
    return {"kernel": name, "reason": reason}


def can_run(name: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, beta: float = 0.0,
            out: torch.Tensor | None = None, precision: str | None = None, arch: int | None = None) -> str:
    """"" if kernel ``name`` can compute ``a @ b`` (into ``out``), else the reason it cannot."""
    return _C.can_implement(name, a, b, c, out, float(beta), precision_code(a, precision), arch or 0)


def launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, alpha: float = 1.0,
           beta: float = 0.0, variant: str = "auto", out: torch.Tensor | None = None,
           precision: str | None = None, torch_takes_fallback: bool = False) -> torch.Tensor | None:
    """``alpha * (a @ b) + beta * c`` on the GPU, no autograd: what ``gemm`` runs (see there).
    With ``torch_takes_fallback``, a problem only the fallback kernel could run is not launched
    and None is returned (enable()'s routing then hands it to torch)."""
    return _C.gemm(a, b, c, out, float(alpha), float(beta), variant, precision_code(a, precision),
                   torch.are_deterministic_algorithms_enabled(), torch_takes_fallback)


def check(a, b, c, alpha: float, beta: float, variant: str, precision: str | None) -> list[int]:
    """The checks ``launch`` makes, on fake or meta tensors (torch.compile's tracing): the output
    shape, or the same TypeError / ValueError the real call raises."""
    return _C.check(a, b, c, None, float(alpha), float(beta), variant, precision_code(a, precision))
