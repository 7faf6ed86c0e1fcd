"""pycutlass_gemm: CUTLASS-backed matrix products for PyTorch on NVIDIA GPUs.

``gemm(a, b)`` reads each operand's layout from its strides and runs a kernel built for that
layout, so ``gemm(A.T, B)`` costs no transpose. ``kernels()`` lists the registry, ``plan()`` says
what ``variant="auto"`` would run and why, ``matmul`` is the torch.matmul-shaped entry, and
``enable()`` routes an unmodified torch model's matrix products through the package, and
``autotune(True)`` times the candidate kernels of each new problem class once and remembers the
fastest on disk.
"""

from .autotuning import autotune, init_from_environment as _autotune_from_environment
from .gemm import gemm, matmul
from .launch import can_run, default_precision, get_float32_precision, kernels, layout_of, plan, set_float32_precision
from .routing import disable, enable, enabled

__all__ = ["autotune", "can_run", "default_precision", "disable", "enable", "enabled", "gemm", "get_float32_precision",
           "kernels", "layout_of", "matmul", "plan", "set_float32_precision"]
__version__ = "0.1.0"

_autotune_from_environment()
