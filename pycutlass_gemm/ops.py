"""The product as PyTorch sees it: a custom op with a fake implementation (torch.compile traces it
without a graph break) and autograd by layout variants.

Backward of D = alpha * op(A) op(B) + beta * C is dA = alpha * dD op(B)^T and
dB = alpha * op(A)^T dD: ``.T`` views, so each is one more layout variant of the same kernels,
never a transposing copy.
"""

from __future__ import annotations

from typing import Optional

import torch

from .gemm import launch


# No device_types: CPU tensors reach `launch`, which refuses them with a clear ValueError.
# precision "" follows torch's TF32 switch, read when the op runs: reading it while torch.compile
# traces would break the graph (and bake the setting into it).
@torch.library.custom_op("pycutlass_gemm::gemm", mutates_args=())
def _gemm_op(a: torch.Tensor, b: torch.Tensor, c: Optional[torch.Tensor], alpha: float, beta: float,
             variant: str, precision: str) -> torch.Tensor:
    return launch(a, b, c, alpha=alpha, beta=beta, variant=variant, precision=precision or None)


@_gemm_op.register_fake
def _gemm_fake(a, b, c, alpha, beta, variant, precision):
    from .gemm import _output_shape  # the same shape rule as the real op, batch broadcasting included
    return a.new_empty(_output_shape(a, b))


def _setup_context(ctx, inputs, output):
    a, b, c, alpha, beta, variant, precision = inputs
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
    ctx.a_shape, ctx.b_shape = a.shape, b.shape
    ctx.c_shape = None if c is None else c.shape
    ctx.alpha, ctx.beta, ctx.precision = alpha, beta, precision


def _sum_to(t: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Undo broadcasting: sum the gradient of a broadcast operand back to its own shape."""
    while t.dim() > len(shape):
        t = t.sum(0)
    dims = [i for i, (s, n) in enumerate(zip(shape, t.shape)) if s == 1 and n != 1]
    return t.sum(dims, keepdim=True) if dims else t


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = grad_b = grad_c = None
    if ctx.needs_input_grad[0]:
        grad_a = _sum_to(gemm(grad, b.transpose(-1, -2), alpha=ctx.alpha, precision=ctx.precision), ctx.a_shape)
    if ctx.needs_input_grad[1]:
        grad_b = _sum_to(gemm(a.transpose(-1, -2), grad, alpha=ctx.alpha, precision=ctx.precision), ctx.b_shape)
    if ctx.needs_input_grad[2]:
        grad_c = _sum_to(grad * ctx.beta, ctx.c_shape)
    return grad_a, grad_b, grad_c, None, None, None, None


_gemm_op.register_autograd(_backward, setup_context=_setup_context)


def gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, alpha: float = 1.0,
         beta: float = 0.0, variant: str = "auto", out: torch.Tensor | None = None,
         precision: str | None = None) -> torch.Tensor:
    """``alpha * (a @ b) + beta * c`` (like torch.addmm / torch.baddbmm) on CUDA tensors.

    ``a`` and ``b`` are 2-D, or 3-D for a batched product (a batch of 1, or a 2-D operand, is
    broadcast over the other's batch with batch stride 0). They may be any views: row- or
    column-major with a leading dimension (``A.T``, column slices) select a kernel built for that
    layout; other strides run on the fallback kernel. Nothing is copied. Accumulation is fp32.
    ``c`` broadcasts to the output and is applied in the kernel's epilogue, not as an extra pass.

    The result is a new row-major tensor of the inputs' dtype, or is written into ``out`` (same
    shape, dtype and device, row- or column-major matrices; ``out`` may be ``c`` itself). With
    ``out=None`` the call is the custom op ``torch.ops.pycutlass_gemm.gemm``: differentiable and
    traceable by torch.compile; with ``out`` it is a plain launch, and like torch's ``out=``
    functions does not support autograd.

    ``variant``: "auto" (the best registered kernel that can implement the problem, see ``plan``),
    or any name from ``kernels()`` ("naive", "fallback", ...); a named kernel that cannot implement
    the problem raises ValueError with its reason. ``precision`` for float32 inputs: "ieee" or
    "tf32"; None follows torch's own TF32 switch, as torch.matmul does; ignored for other dtypes.
    """
    if out is not None:
        if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in (a, b, c)):
            raise RuntimeError("pycutlass_gemm.gemm(..., out=...) does not support automatic differentiation; "
                               "call it without out")
        return launch(a, b, c, alpha=alpha, beta=beta, variant=variant, out=out, precision=precision)
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    return _gemm_op(a, b, c, float(alpha), float(beta), variant, precision or "")


def matmul(a: torch.Tensor, b: torch.Tensor, *, precision: str | None = None) -> torch.Tensor:
    """``torch.matmul(a, b)`` for 1-D, 2-D and 3-D operands (3-D batches broadcast), through the
    package's kernels. Vectors become 1-row / 1-column views, as torch.matmul treats them."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not 1 <= t.dim() <= 3:
            raise ValueError(f"pycutlass_gemm.matmul takes 1-D to 3-D operands, {name} is {t.dim()}-D")
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    result = gemm(a2, b2, precision=precision)
    if a.dim() == 1:
        result = result.squeeze(-2)
    if b.dim() == 1:
        result = result.squeeze(-1)
    return result
