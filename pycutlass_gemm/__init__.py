"""pycutlass_gemm: CUTLASS-backed matrix products for PyTorch on NVIDIA GPUs.

``gemm(a, b)`` reads each operand's layout from its strides and runs a kernel built for that
layout, so ``gemm(A.T, B)`` costs no transpose. ``kernels()`` lists the registry, ``plan()`` says
what ``variant="auto"`` would run and why.
"""

from .gemm import can_run, default_precision, gemm, kernels, layout_of, plan

__all__ = ["can_run", "default_precision", "gemm", "kernels", "layout_of", "plan"]
__version__ = "0.1.0"
