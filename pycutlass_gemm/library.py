"""The torch op ``torch.ops.pycutlass_gemm.gemm``, registered the cheap way.

``torch.library.Library`` define/impl (about 6 us of dispatch per call, against 11-36 us for
``@torch.library.custom_op``'s wrappers): a CUDA (and CPU, to raise the same clear error)
implementation that is ``launch`` itself, and a fake implementation that runs the real argument
checks, so under torch.compile a shape or dtype error surfaces while tracing, as it would in eager.
Autograd is registered in ``gemm.py``. Eager ``pycutlass_gemm.gemm`` calls go straight to
``launch`` and pay none of this; the op is what torch.compile traces and what tensor subclasses and
dispatch modes see.
"""

from __future__ import annotations

import torch

from .launch import check, launch

LIB = torch.library.Library("pycutlass_gemm", "DEF")
LIB.define("gemm(Tensor a, Tensor b, Tensor? c, float alpha, float beta, str variant, str precision) -> Tensor")


def _gemm_impl(a, b, c, alpha, beta, variant, precision):
    # precision "" follows torch's TF32 switch, read when the op runs: reading it while
    # torch.compile traces would break the graph (and bake the setting into it).
    return launch(a, b, c, alpha=alpha, beta=beta, variant=variant, precision=precision or None)


def _gemm_fake(a, b, c, alpha, beta, variant, precision):
    return a.new_empty(check(a, b, c, alpha, beta, variant, precision or None))


for _key in ("CUDA", "CPU"):
    LIB.impl("gemm", _gemm_impl, _key)
torch.library.register_fake("pycutlass_gemm::gemm", _gemm_fake, lib=LIB)

OP = torch.ops.pycutlass_gemm.gemm.default
