"""``gemm`` and ``matmul``: the product as users call it, with autograd by layout variants.

Backward of D = alpha * op(A) op(B) + beta * C is dA = alpha * dD op(B)^T and
dB = alpha * op(A)^T dD: ``.T`` views, so each is one more layout variant of the same kernels,
never a transposing copy.

The path a call takes, cheapest first: no input needs a gradient -> ``launch`` (one C++ call);
a plain product of 2-D CUDA tensors that needs a gradient -> ``torch.mm`` with this thread's
products taken by the package's C++ kernel of aten::mm (aten_router.h): torch's own C++ autograd
records the node, and hooks on it hand its backward's products to the package too (no Python
autograd node; the gradients' own graph under create_graph is torch's); otherwise a gradient is
needed -> a ``torch.autograd.Function`` around ``launch``, whose backward of a 2-D
product is again one C++ call (``_C.mm_grads``: both products, no transposed views, each gradient
laid out like its operand as torch's own mm backward does, so AccumulateGrad keeps it without
the copy a row-major gradient of a ``w.T`` costs); torch.compile is tracing,
or an input is a tensor subclass, or a dispatch mode is active -> the op
``torch.ops.pycutlass_gemm.gemm`` (library.py), whose fake implementation and autograd
registration (below) torch.compile uses.
"""

from __future__ import annotations

import math

import torch

from . import _C
from .launch import _PLAIN_TENSORS, launch, launchable, precision_code
from .library import LIB, OP
from .routing import keep_cxx_kernels

_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_deterministic = torch.are_deterministic_algorithms_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack


def _column_major(t: torch.Tensor) -> bool:
    """torch's mm backward test of a column-major operand (strides (1, rows)): its gradient is
    then made column-major too."""
    strides = t.stride()
    return len(strides) == 2 and strides[0] == 1 and strides[1] == t.shape[0]


def _setup_context(ctx, inputs, output):
    """What the backward needs (torch.compile's path; the eager Function's forward saves the same)."""
    a, b, c, alpha, beta, variant, precision = inputs
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
    # One tuple, not an attribute each: this runs on every product with autograd. The column-major
    # flags are the eager forward's to tell (torch.compile: no use).
    ctx.meta = (a.shape, b.shape, None if c is None else c.shape, alpha, beta, precision, False, False)


def _sum_to(t: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Undo broadcasting: sum the gradient of a broadcast operand back to its own shape."""
    if t.shape == shape:  # nothing was broadcast: every backward of a plain product
        return t
    while t.dim() > len(shape):
        t = t.sum(0)
    dims = [i for i, (s, n) in enumerate(zip(shape, t.shape)) if s == 1 and n != 1]
    return t.sum(dims, keepdim=True) if dims else t


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    a_shape, b_shape, c_shape, alpha, beta, precision, a_column_major, b_column_major = ctx.meta
    need_a, need_b, need_c = ctx.needs_input_grad[:3]
    grad_a = grad_b = grad_c = None
    precision = precision or None
    # Without create_graph, on plain tensors (not torch.compile's tracing of the backward), the
    # gradients' own products need no autograd and no dispatch: launch them directly, a 2-D
    # product's two in one C++ call.
    direct = not _grad_enabled() and launchable(grad, a, b)
    if direct and len(a_shape) == 2 and len(b_shape) == 2:
        grad_a, grad_b = _C.mm_grads(grad, a, b, need_a, need_b, a_column_major, b_column_major, alpha,
                                     precision_code(grad, precision), _deterministic())
    else:
        product = launch if direct else gemm
        if need_a:
            grad_a = _sum_to(product(grad, b.transpose(-1, -2), alpha=alpha, precision=precision), a_shape)
        if need_b:
            grad_b = _sum_to(product(a.transpose(-1, -2), grad, alpha=alpha, precision=precision), b_shape)
    if need_c:
        grad_c = _sum_to(grad if beta == 1.0 else grad * beta, c_shape)
    return grad_a, grad_b, grad_c, None, None, None, None


torch.library.register_autograd("pycutlass_gemm::gemm", _backward, setup_context=_setup_context, lib=LIB)


class _GemmFunction(torch.autograd.Function):
    """The op's autograd in eager mode without the dispatcher's Python round trips. Old-style
    (ctx in forward): with a separate setup_context, Function.apply binds the arguments through
    inspect.signature on every call (~25 us)."""

    @staticmethod
    def forward(ctx, a, b, c, alpha, beta, variant, precision):
        out = _C.gemm(a, b, c, None, alpha, beta, variant, precision_code(a, precision or None), _deterministic(),
                      False)
        need_a, need_b = ctx.needs_input_grad[:2]
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        ctx.meta = (a.shape, b.shape, None if c is None else c.shape, alpha, beta, precision,
                    need_a and _column_major(a), need_b and _column_major(b))
        return out

    backward = staticmethod(_backward)


# Function.apply's own Python (functorch checks, a pytree pass over the seven arguments) is about
# a third of what an eager product's autograd costs on the host. With no functorch transform
# active it ends in this C++ apply, after unwrapping dead functorch wrappers: what _apply does.
_function_apply = super(torch.autograd.Function, _GemmFunction).apply
_functorch_active = torch._C._are_functorch_transforms_active
_unwrap_if_dead = torch._C._functorch.unwrap_if_dead


_take_here = _C.aten_router_take_here
_autocast = torch.is_autocast_enabled
_torch_mm = torch.mm
_RECORDED_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _node_hooks(code: int):
    """Hooks on a recorded aten::mm node: its backward's products (two more aten::mm, run by the
    autograd engine's thread) are the package's, float32 ones at precision `code`."""

    def before(grad_outputs):
        _take_here(code)

    def after(grad_inputs, grad_outputs):
        _take_here(-1)

    return before, after


_NODE_HOOKS = [_node_hooks(code) for code in range(3)]


def _recordable(a, b) -> bool:
    """Whether a @ b may be recorded by torch's autograd as aten::mm and computed by the package:
    2-D CUDA tensors of one dtype and device that the C++ kernels take, shapes that multiply (what
    else gemm raises its own errors for), no functorch transform, no autocast (it would cast
    torch.mm's operands; the package's product keeps their dtype), and torch exporting what the
    C++ kernels need."""
    return (a.is_cuda and b.is_cuda and a.dtype is b.dtype and a.dtype in _RECORDED_DTYPES and a.shape[1] == b.shape[0]
            and a.get_device() == b.get_device() and not _functorch_active() and not _autocast("cuda")
            and keep_cxx_kernels())


def _recorded_mm(a, b, precision: str | None) -> torch.Tensor:
    """a @ b with autograd: torch records aten::mm (its C++ node, torch's own gradient formulas
    and layouts), the package computes the product and, through the node's hooks, its gradients."""
    code = precision_code(a, precision)
    _take_here(code)
    try:
        out = _torch_mm(a, b)
    finally:
        _take_here(-1)
    before, after = _NODE_HOOKS[code]
    node = out.grad_fn
    node.register_prehook(before)
    node.register_hook(after)
    return out


def _apply(a, b, c, alpha: float, beta: float, variant: str, precision: str) -> torch.Tensor:
    if _functorch_active():
        return _GemmFunction.apply(a, b, c, alpha, beta, variant, precision)
    return _function_apply(_unwrap_if_dead(a), _unwrap_if_dead(b), c if c is None else _unwrap_if_dead(c),
                           alpha, beta, variant, precision)


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
    shape, dtype and device, row- or column-major matrices; ``out`` may be ``c`` itself). Without
    ``out`` the call is differentiable and traceable by torch.compile (as the op
    ``torch.ops.pycutlass_gemm.gemm``); with ``out`` it is a plain launch, and like torch's
    ``out=`` functions does not support autograd.

    ``variant``: "auto" (the best registered kernel that can implement the problem, see ``plan``),
    or any name from ``kernels()`` ("naive", "fallback", ...); a named kernel that cannot implement
    the problem raises ValueError with its reason. ``precision`` for float32 inputs: "ieee",
    "tf32" or "tf32x3" (three tf32 products, fp32's accuracy; IEEE kernels run what no tf32x3
    kernel takes); None follows ``set_float32_precision``, else torch's own TF32 switch,
    as torch.matmul does; ignored for other dtypes.
    """
    if out is not None:
        if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in (a, b, c)):
            raise RuntimeError("pycutlass_gemm.gemm(..., out=...) does not support automatic differentiation; "
                               "call it without out")
        return launch(a, b, c, alpha=alpha, beta=beta, variant=variant, out=out, precision=precision)
    if _is_compiling():
        return OP(a, b, c, float(alpha), float(beta), variant, precision or "")
    if launchable(a, b, c):
        if _grad_enabled() and (a.requires_grad or b.requires_grad or (c is not None and c.requires_grad)):
            if (c is None and alpha == 1.0 and variant == "auto" and a.dim() == 2 and b.dim() == 2
                    and _recordable(a, b)):
                return _recorded_mm(a, b, precision)
            return _apply(a, b, c, float(alpha), float(beta), variant, precision or "")
        return _C.gemm(a, b, c, None, float(alpha), float(beta), variant, precision_code(a, precision), _deterministic(),
                       False)  # launch() without its call layer
    if not all(isinstance(t, torch.Tensor) for t in (a, b)) or not (c is None or isinstance(c, torch.Tensor)):
        return launch(a, b, c, alpha=alpha, beta=beta, variant=variant, precision=precision)  # raises TypeError
    return OP(a, b, c, float(alpha), float(beta), variant, precision or "")


def matmul(a: torch.Tensor, b: torch.Tensor, *, precision: str | None = None) -> torch.Tensor:
    """``torch.matmul(a, b)`` through the package's kernels, for operands of any number of dimensions.

    Vectors become 1-row / 1-column matrices, as torch.matmul treats them. Batch dimensions broadcast; a product of
    more than one batch dimension runs as one batched product over them, folded into one batch by a view. A 3-D or
    larger ``a`` times a 2-D ``b`` is one 2-D product over ``a``'s batch and rows where they fold into rows of one
    matrix, as torch folds them. Nothing is copied: where an operand's batch dimensions do not fold into one batch
    stride (a broadcast inner batch dimension, a permuted batch), torch.matmul copies the operand and this raises
    ValueError, naming it, so the copy is the caller's to make."""
    # The common case first, inlined (it is on every call's path, and each Python call layer costs
    # a model's step host time): two plain 2-D tensors, eager, no dispatch mode; what gemm does.
    if (not _is_compiling() and type(a) in _PLAIN_TENSORS and type(b) in _PLAIN_TENSORS and a.dim() == 2
            and b.dim() == 2 and not _dispatch_modes()):
        if (a.requires_grad or b.requires_grad) and _grad_enabled():
            if _recordable(a, b):
                return _recorded_mm(a, b, precision)
            return _apply(a, b, None, 1.0, 0.0, "auto", precision or "")
        return _C.gemm(a, b, None, None, 1.0, 0.0, "auto", precision_code(a, precision), _deterministic(), False)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == 2 and b.dim() == 2:
        return gemm(a, b, precision=precision)
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() == 0:
            raise ValueError(f"pycutlass_gemm.matmul needs operands of at least 1 dimension, {name} is 0-D")
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    if a2.dim() == 3 and b2.dim() == 2:  # (batch, m, k) @ (k, n): one (batch * m, k) matrix where the rows fold
        # _fold(a2, 2, ...) written out: models call x @ W over a 3-D x on every step, and the general loop and
        # shape arithmetic cost 4 us more a call here (this machine's CPU; session 54).
        batch, m, k = a2.shape
        if m == 1 or batch == 1 or a2.stride(0) == m * a2.stride(1) or a2.numel() == 0:
            return _unvector(gemm(a2.view(batch * m, k), b2, precision=precision).view(batch, m, b2.shape[1]), a, b)
    if a2.dim() <= 3 and b2.dim() <= 3:  # one batch dimension at most: gemm's own (a batch of one broadcasts)
        return _unvector(gemm(a2, b2, precision=precision), a, b)
    return _unvector(_batches_folded(a2, b2, precision), a, b)


def _batches_folded(a: torch.Tensor, b: torch.Tensor, precision: str | None) -> torch.Tensor:
    """matmul past three dimensions: the batch dimensions broadcast and merged into one by a view."""
    batch = _broadcast(a.shape[:-2], b.shape[:-2])
    if batch is None:
        raise ValueError(f"pycutlass_gemm.matmul: the batch dimensions of a {tuple(a.shape)} and b {tuple(b.shape)} "
                         f"do not broadcast")
    (m, k), (k_b, n), count = a.shape[-2:], b.shape[-2:], math.prod(batch)
    if a.dim() > 2 and math.prod(b.shape[:-2]) == 1:  # (..., m, k) @ (k, n): one 2-D product where a's rows fold
        rows = _fold(a, a.dim() - 1, (math.prod(a.shape[:-2]) * m, k))
        if rows is not None:
            return gemm(rows, b.view(k_b, n), precision=precision).view(*batch, m, n)
    return gemm(_batch_of(a, "a", batch, count), _batch_of(b, "b", batch, count), precision=precision).view(*batch, m, n)


def _broadcast(x: tuple, y: tuple) -> tuple | None:
    """torch's broadcast of two batch shapes (None where they do not broadcast); plain tuples, for the host's time."""
    x, y = (1,) * (len(y) - len(x)) + tuple(x), (1,) * (len(x) - len(y)) + tuple(y)
    if any(p != q and p != 1 and q != 1 for p, q in zip(x, y)):
        return None
    return tuple(q if p == 1 else p for p, q in zip(x, y))


def _fold(t: torch.Tensor, merged: int, shape: tuple) -> torch.Tensor | None:
    """``t`` viewed as ``shape``, its first ``merged`` dimensions merged into one, or None where their strides do
    not merge (a view would need a copy). Decided from the strides, not by trying the view: a traced call
    (torch.compile) then raises matmul's ValueError too, not the tracer's error about a failed view."""
    sizes, strides = t.shape[:merged], t.stride()[:merged]
    kept = [(size, stride) for size, stride in zip(sizes, strides) if size != 1]  # a dimension of 1: any stride
    if 0 in sizes or all(kept[i][1] == kept[i + 1][1] * kept[i + 1][0] for i in range(len(kept) - 1)):
        return t.view(shape)
    return None


def _batch_of(t: torch.Tensor, name: str, batch: tuple, count: int) -> torch.Tensor:
    """An operand as gemm takes it: 2-D where it has no batch of its own to run (broadcast with batch stride 0),
    else 3-D, its batch dimensions broadcast to ``batch`` and merged into one (``count``) by a view."""
    rows, cols = t.shape[-2:]
    if t.dim() == 2:
        return t
    if count != 1 and math.prod(t.shape[:-2]) == 1:
        return t.view(rows, cols)
    expanded = t if tuple(t.shape[:-2]) == batch else t.expand(*batch, rows, cols)
    folded = _fold(expanded, len(batch), (count, rows, cols))
    if folded is None:
        raise ValueError(f"pycutlass_gemm.matmul: the batch dimensions of {name} (shape {tuple(t.shape)}, strides "
                         f"{t.stride()}, broadcast to {batch}) do not fold into one batch stride; torch.matmul "
                         f"would copy {name} here -- pass {name}.expand(...).contiguous() (or {name}.contiguous()) to "
                         f"make that copy yourself")
    return folded


def _unvector(result: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Drop the row / column a vector operand was given, as torch.matmul does."""
    if a.dim() == 1:
        result = result.squeeze(-2)
    if b.dim() == 1:
        result = result.squeeze(-1)
    return result
