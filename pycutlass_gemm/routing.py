"""``enable()``: an unmodified torch model's matrix products, run by the package.

A ``TorchFunctionMode`` sees every torch function called while it is active. The products it
takes -- ``torch.matmul`` / ``@``, ``torch.mm``, ``torch.bmm``, ``torch.addmm``, ``torch.baddbmm``
and ``F.linear`` (and their Tensor methods) on CUDA tensors of the enabled dtypes -- become
``pycutlass_gemm.gemm`` calls with variant ``"auto_or_torch"``: a CUTLASS kernel where one can
run the problem, torch where only the fallback could (the fallback is the oracle, not faster than
cuBLAS). Everything else (other functions, CPU and meta tensors, other dtypes, ``out=``,
operands of more than 3 dimensions) goes to torch unchanged. The gemm op has autograd and a fake
implementation, so this works in eager, with autograd and under torch.compile.

float32 is not routed by default: the package's IEEE fp32 kernels run at 0.8-0.9x cuBLAS SGEMM
(``enable(dtypes=(torch.bfloat16, torch.float16, torch.float32))`` routes it anyway).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .gemm import gemm, matmul
from .launch import AUTO_OR_TORCH

DEFAULT_DTYPES = (torch.bfloat16, torch.float16)


def _rows(x: torch.Tensor) -> torch.Tensor | None:
    """x (..., k) as one (rows, k) matrix without a copy, or None where its strides do not allow."""
    if x.dim() == 2:
        return x
    try:
        return x.view(-1, x.shape[-1])
    except RuntimeError:
        return None


class _Routing(TorchFunctionMode):
    def __init__(self, dtypes):
        super().__init__()
        self.dtypes = frozenset(dtypes)
        self.handlers = {
            torch.matmul: self._matmul, torch.Tensor.matmul: self._matmul, torch.Tensor.__matmul__: self._matmul,
            torch.mm: self._mm, torch.Tensor.mm: self._mm,
            torch.bmm: self._bmm, torch.Tensor.bmm: self._bmm,
            torch.addmm: self._addmm, torch.Tensor.addmm: self._addmm,
            torch.baddbmm: self._baddbmm, torch.Tensor.baddbmm: self._baddbmm,
            F.linear: self._linear,
        }

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = self.handlers.get(func)
        if handler is not None and "out" not in kwargs:
            result = handler(*args, **kwargs)
            if result is not NotImplemented:
                return result
        return func(*args, **kwargs)

    def _takes(self, *tensors) -> bool:
        return all(isinstance(t, torch.Tensor) and t.is_cuda and t.dtype in self.dtypes for t in tensors)

    def _gemm(self, a, b, c=None, alpha=1.0, beta=0.0):
        return gemm(a, b, c, alpha=alpha, beta=beta, variant=AUTO_OR_TORCH)

    def _matmul(self, a, b):
        if not self._takes(a, b) or not (1 <= a.dim() <= 3 and 1 <= b.dim() <= 3):
            return NotImplemented
        if a.dim() == 3 and b.dim() == 2 and (rows := _rows(a)) is not None:
            return self._gemm(rows, b).view(*a.shape[:-1], b.shape[-1])
        if a.dim() == 2 and b.dim() == 2:
            return self._gemm(a, b)
        return matmul(a, b)

    def _mm(self, a, b):
        return self._gemm(a, b) if self._takes(a, b) and a.dim() == 2 and b.dim() == 2 else NotImplemented

    def _bmm(self, a, b):
        return self._gemm(a, b) if self._takes(a, b) and a.dim() == 3 and b.dim() == 3 else NotImplemented

    def _addmm(self, c, a, b, *, beta=1, alpha=1):
        if not self._takes(c, a, b) or a.dim() != 2 or b.dim() != 2:
            return NotImplemented
        return self._gemm(a, b, c, alpha, beta)

    def _baddbmm(self, c, a, b, *, beta=1, alpha=1):
        if not self._takes(c, a, b) or a.dim() != 3 or b.dim() != 3:
            return NotImplemented
        return self._gemm(a, b, c, alpha, beta)

    def _linear(self, x, weight, bias=None):
        if not self._takes(x, weight, *(() if bias is None else (bias,))) or weight.dim() != 2 or x.dim() < 1:
            return NotImplemented
        if bias is not None and bias.dim() > 1:
            return NotImplemented
        rows = _rows(x.unsqueeze(0) if x.dim() == 1 else x)
        if rows is None:
            return NotImplemented
        y = self._gemm(rows, weight.T, bias, 1.0, 0.0 if bias is None else 1.0)
        return y.view(*x.shape[:-1], weight.shape[0])


_active: list[_Routing] = []


class _Enabled:
    """What enable() returns: routing is on now; ``with`` turns it off at the block's end."""

    def __init__(self, mode: _Routing):
        self.mode = mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        disable(self.mode)
        return False


def enable(dtypes=DEFAULT_DTYPES) -> _Enabled:
    """Route torch's matrix products on CUDA tensors of ``dtypes`` through pycutlass_gemm (see the
    module's docstring). As a plain call it stays on until ``disable()``; as ``with enable():``
    it ends with the block. Nested calls stack."""
    mode = _Routing(dtypes)
    mode.__enter__()
    _active.append(mode)
    return _Enabled(mode)


def disable(mode: _Routing | None = None) -> None:
    """Undo the innermost ``enable()`` still on (or the one given): torch's own products again."""
    if not _active:
        return
    mode = mode if mode is not None else _active[-1]
    if mode not in _active:
        return
    while _active:  # modes leave in stack order: those entered after `mode` go first
        top = _active.pop()
        top.__exit__(None, None, None)
        if top is mode:
            break
