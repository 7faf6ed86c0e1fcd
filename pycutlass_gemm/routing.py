"""``enable()``: an unmodified torch model's matrix products, run by the package.

enable() registers the package as a kernel of torch's own matrix-product operators --
``aten::mm``, ``addmm``, ``bmm``, ``baddbmm`` (their ``out=`` and in-place forms too) -- at the
``ADInplaceOrView`` dispatch key: below autograd (torch's own backward formulas still run, and
their products come back here: gradients too run on the package), above the CUDA kernels (what
the package does not take is handed on to cuBLAS through ``redispatch``). So ``torch.matmul``,
``@``, ``torch.mm``, ``torch.bmm``, ``torch.addmm``, ``torch.baddbmm`` and ``F.linear`` (its bias
goes to the epilogue of a bias-row kernel) of CUDA tensors of the enabled dtypes run the
package's kernels, in eager, with autograd, and in compiled graphs (inductor calls these
operators for the products it does not generate itself). Nothing composite is missed: a
product inside ``F.multi_head_attention_forward`` or a backward formula is still an ``aten::mm``.

Handed on to torch unchanged: other devices and dtypes, tensor subclasses (FakeTensor while
torch.compile traces, functional tensors), calls made while a dispatch mode is active, and
problems for which only the package's fallback kernel would run (the fallback is the oracle, not
faster than cuBLAS). The registration is process-wide (every thread), not per thread.

float32 is not routed by default: the package's IEEE fp32 kernels run at 0.8-0.9x cuBLAS SGEMM
(``enable(dtypes=(torch.bfloat16, torch.float16, torch.float32))`` routes it anyway, following
``set_float32_precision`` when set, else torch's TF32 switch, as ``gemm`` does; with
``set_float32_precision("tf32x3")`` the routed fp32 products run the tf32x3 kernels, 1.8-2.0x
SGEMM on the H100 at SGEMM's accuracy or better).

Where torch exports its stable C ABI (2.11 and 2.13 do), ``aten::mm`` and ``aten::bmm`` -- a model's
backward is made of them -- get C++ kernels instead of the Python ones (aten_router.h): a routed
product then costs the host what torch's own mm costs, not a call into Python. addmm / baddbmm
(whose Scalar arguments the stable ABI cannot pass) and the out= forms keep the Python kernels
below.
"""

from __future__ import annotations

import os
import threading
import warnings

import torch

from .launch import _C, launch, launchable

DEFAULT_DTYPES = (torch.bfloat16, torch.float16)
_CXX_DTYPES = frozenset(DEFAULT_DTYPES)  # what the C++ kernels take; float32 too where torch exports its TF32 switch
_ATEN = torch.ops.aten
_BELOW = torch._C._after_ADInplaceOrView_keyset  # where a handed-on call continues: the CUDA kernels


class _Router:
    """The registered kernels; `dtypes` is what they take."""

    def __init__(self, dtypes):
        self.dtypes = frozenset(dtypes)
        self.float32 = torch.float32 in self.dtypes
        self.cxx = (cxx_kernels_unavailable() == "" and self.dtypes <= _CXX_DTYPES | {torch.float32}
                    and (not self.float32 or _C.aten_router_can_take_float32()))
        self.lib = torch.library.Library("aten", "IMPL")
        kernels = {
            "mm.out": self.mm_out, "bmm.out": self.mm_out,
            "addmm": self.addmm, "addmm.out": self.addmm_out, "addmm_": self.addmm_,
            "baddbmm": self.addmm, "baddbmm.out": self.addmm_out, "baddbmm_": self.addmm_,
        }
        if not self.cxx:
            kernels.update({"mm": self.mm, "bmm": self.mm})
        with warnings.catch_warnings():  # "overriding a previously registered kernel": that is the point
            warnings.simplefilter("ignore")
            for name, fn in kernels.items():
                self.lib.impl(name, fn, "ADInplaceOrView", with_keyset=True)
            if self.cxx:
                _C.aten_router_route_all(True, float32=self.float32)

    def close(self):
        if self.cxx:
            _C.aten_router_route_all(False)
        self.lib._destroy()  # torch's own kernels are the registered ones again

    def _gemm(self, a, b, c=None, alpha=1.0, beta=0.0, out=None):
        """The package's result, or None to hand the call on (torch then also raises the errors of
        the operator's own contract: mm takes 2-D operands, bmm 3-D ones of one batch size)."""
        if not launchable(a, b, c, out) or not a.is_cuda or a.dtype not in self.dtypes:
            return None
        if a.dim() != b.dim() or a.dim() == 3 and a.shape[0] != b.shape[0]:
            return None
        try:
            return launch(a, b, c, alpha=alpha, beta=beta, out=out, torch_takes_fallback=True)
        except (TypeError, ValueError):
            return None  # torch raises its own error for what it refuses, or computes what it takes

    # The schemas: mm(self, mat2), bmm(self, mat2), addmm(self, mat1, mat2, *, beta, alpha), ...
    def mm(self, keyset, a, b):
        r = self._gemm(a, b)
        return r if r is not None else _redispatch(keyset, "mm" if a.dim() == 2 else "bmm", "default", a, b)

    def mm_out(self, keyset, a, b, *, out):
        r = self._gemm(a, b, out=out) if _resized(out, a, b) else None
        return r if r is not None else _redispatch(keyset, "mm" if a.dim() == 2 else "bmm", "out", a, b, out=out)

    def addmm(self, keyset, c, a, b, *, beta=1, alpha=1):
        r = self._gemm(a, b, c, alpha, beta)
        name = "addmm" if a.dim() == 2 else "baddbmm"
        return r if r is not None else _redispatch(keyset, name, "default", c, a, b, beta=beta, alpha=alpha)

    def addmm_out(self, keyset, c, a, b, *, beta=1, alpha=1, out):
        r = self._gemm(a, b, c, alpha, beta, out) if _resized(out, a, b) else None
        name = "addmm" if a.dim() == 2 else "baddbmm"
        return r if r is not None else _redispatch(keyset, name, "out", c, a, b, beta=beta, alpha=alpha, out=out)

    def addmm_(self, keyset, c, a, b, *, beta=1, alpha=1):
        r = self._gemm(a, b, c, alpha, beta, c)  # D is C itself
        name = "addmm_" if a.dim() == 2 else "baddbmm_"
        return r if r is not None else _redispatch(keyset, name, "default", c, a, b, beta=beta, alpha=alpha)


def _redispatch(keyset, name, overload, *args, **kwargs):
    return getattr(getattr(_ATEN, name), overload).redispatch(keyset & _BELOW, *args, **kwargs)


def _resized(out, a, b) -> bool:
    """torch resizes an out= tensor of the wrong shape (an empty one silently): so do we."""
    shape = (*a.shape[:-1], b.shape[-1])
    if tuple(out.shape) != shape:
        if not launchable(out):
            return False
        out.resize_(shape)
    return True


_lock = threading.Lock()
_router: _Router | None = None
_depth = 0


class _Enabled:
    """What enable() returns: routing is on now; ``with`` turns it off at the block's end."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        disable()
        return False


def enable(dtypes=DEFAULT_DTYPES) -> _Enabled:
    """Route torch's matrix products on CUDA tensors of ``dtypes`` through pycutlass_gemm (see the
    module's docstring), in every thread. As a plain call it stays on until ``disable()``; as
    ``with enable():`` it ends with the block. Calls nest: routing ends with the outermost."""
    global _router, _depth
    with _lock:
        if _router is not None and _router.dtypes != frozenset(dtypes):
            _router.close()  # the new dtypes may need the other kernels (C++ or Python)
            _router = None
        if _router is None:
            _router = _Router(dtypes)
        _depth += 1
    return _Enabled()


def disable() -> None:
    """Undo one ``enable()``; with the last, torch's own kernels run its products again."""
    global _router, _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0:
            _router.close()
            _router = None


def cxx_kernels_unavailable() -> str:
    """"" where enable() can register C++ kernels for aten::mm / aten::bmm, else why not (the
    environment variable PYCUTLASS_GEMM_PYTHON_ROUTING=1 keeps the Python ones, for comparison)."""
    if os.environ.get("PYCUTLASS_GEMM_PYTHON_ROUTING", "0") not in ("", "0"):
        return "PYCUTLASS_GEMM_PYTHON_ROUTING is set"
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    key = getattr(torch._C.DispatchKey, "ADInplaceOrView", None)
    return _C.aten_router_load([os.path.join(lib, name) for name in ("libtorch_cpu.so", "libc10.so", "libtorch_cuda.so")],
                               key.value if key is not None else 0)


_kept = False


def keep_cxx_kernels() -> bool:
    """Whether the C++ kernels serve the package's own autograd (gemm.py): registered on the first
    call that can have them, for the rest of the process (they hand on every call that is not the
    package's). PYCUTLASS_GEMM_PYTHON_ROUTING=1 before that keeps autograd in Python."""
    global _kept
    if not _kept:
        if cxx_kernels_unavailable():
            return False
        with _lock:
            if not _kept:
                _C.aten_router_keep()
                _kept = True
    return True


def enabled() -> bool:
    """Whether torch's matrix products are routed through the package now."""
    return _router is not None
