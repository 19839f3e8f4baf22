"""Autodiff's activation ops: the inner backend's kernels forward, its backward kernels (or a closed form
on inner ops) backward.

Each activation records one node instead of the handful of masks, exponentials and products the
interface's default would record, and computes with the inner kernel's precision (f16 and bf16 in f32
where the inner backend does). The element-wise activations and the softmax family are memory-bound:
their specs carry a ``forward``, so balanced checkpointing recomputes them instead of keeping them.
``softmin`` keeps its default, ``softmax`` of the negated input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burn_backend import Backend

from .._graph import AutodiffTensor, OpSpec
from ._common import Recorder, narrowed, reduce_to, widened

P = Any  # a primitive of the inner backend
T = AutodiffTensor
Grads = Sequence[P | None]


def _is_empty(tensor: P) -> bool:
    return 0 in tuple(tensor.shape)


# -- rectifiers and sigmoids ----------------------------------------------------------------------
_RELU = OpSpec(
    "relu",
    lambda b, g, xs, out, args: (b.relu_backward(out, g),),
    lambda b, xs, args: b.relu(xs[0]),
    keeps_output=True,
)
_GELU = OpSpec(
    "gelu",
    lambda b, g, xs, out, args: (b.gelu_backward(xs[0], g),),
    lambda b, xs, args: b.gelu(xs[0]),
    keeps_inputs=(0,),
)
_SIGMOID = OpSpec(
    "sigmoid",
    lambda b, g, xs, out, args: (b.sigmoid_backward(out, g),),
    lambda b, xs, args: b.sigmoid(xs[0]),
    keeps_output=True,
)
_LOG_SIGMOID = OpSpec(
    "log_sigmoid",
    lambda b, g, xs, out, args: (b.log_sigmoid_backward(xs[0], g),),
    lambda b, xs, args: b.log_sigmoid(xs[0]),
    keeps_inputs=(0,),
)


def _leaky_relu_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, slope: Any) -> Grads:
    # as PyTorch: the slope applies at x <= 0, so x = 0 gets it too
    return (b.float_mask_where(g, b.float_lower_equal_elem(xs[0], 0.0), b.float_mul_scalar(g, slope)),)


_LEAKY_RELU = OpSpec(
    "leaky_relu",
    _leaky_relu_backward,
    lambda b, xs, slope: b.leaky_relu(xs[0], slope),
    keeps_inputs=(0,),
)


def _prelu_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
    x, alpha = xs
    alpha_shape, needs = args
    negative = b.float_lower_equal_elem(x, 0.0)
    grad_x = b.float_mask_where(g, negative, b.float_mul(g, alpha)) if needs[0] else None
    grad_alpha = None
    if needs[1]:
        on_negatives = b.float_mask_fill(b.float_mul(g, x), b.bool_not(negative), 0.0)
        grad_alpha = reduce_to(b, on_negatives, alpha_shape)
    return grad_x, grad_alpha


_PRELU = OpSpec("prelu", _prelu_backward, lambda b, xs, args: b.prelu(xs[0], xs[1]), keeps_inputs=(0, 1))


def _hard_sigmoid_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
    alpha, _ = args
    # the output is clamped to [0, 1]: flat (no gradient) where it sits on a bound
    flat = b.bool_or(b.float_lower_equal_elem(out, 0.0), b.float_greater_equal_elem(out, 1.0))
    return (b.float_mask_fill(b.float_mul_scalar(g, alpha), flat, 0.0),)


_HARD_SIGMOID = OpSpec(
    "hard_sigmoid",
    _hard_sigmoid_backward,
    lambda b, xs, args: b.hard_sigmoid(xs[0], *args),
    keeps_output=True,
)


# -- softmax family -------------------------------------------------------------------------------
def _softmax_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, dim: Any) -> Grads:
    # y * (g - sum(g * y)): in f32 for f16 and bf16, the sum being the lossy part
    if _is_empty(g):
        return (g,)
    (y, grad), dtype = widened(b, out, g)
    weighted = b.float_sum_dim(b.float_mul(grad, y), dim)
    return (narrowed(b, b.float_mul(y, b.float_sub(grad, weighted)), dtype),)


def _log_softmax_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, dim: Any) -> Grads:
    # g - softmax * sum(g), softmax being exp(y)
    if _is_empty(g):
        return (g,)
    (y, grad), dtype = widened(b, out, g)
    total = b.float_sum_dim(grad, dim)
    return (narrowed(b, b.float_sub(grad, b.float_mul(b.float_exp(y), total)), dtype),)


_SOFTMAX = OpSpec("softmax", _softmax_backward, lambda b, xs, dim: b.softmax(xs[0], dim), keeps_output=True)
_LOG_SOFTMAX = OpSpec(
    "log_softmax", _log_softmax_backward, lambda b, xs, dim: b.log_softmax(xs[0], dim), keeps_output=True
)


class ActivationOps(Recorder):
    """Activation ops with gradients: one node each, differentiated by the inner backend."""

    def relu(self, tensor: T) -> T:
        """``relu`` on the inner kernel; gradient by ``relu_backward`` of the output."""
        return self.track(_RELU, (tensor,), self._inner.relu(tensor.primitive))

    def leaky_relu(self, tensor: T, negative_slope: float) -> T:
        """``leaky_relu`` on the inner kernel; the gradient is ``negative_slope`` where ``x <= 0``."""
        output = self._inner.leaky_relu(tensor.primitive, negative_slope)
        return self.track(_LEAKY_RELU, (tensor,), output, negative_slope)

    def prelu(self, tensor: T, alpha: T) -> T:
        """``prelu`` on the inner kernel; gradients to the tensor and to the slopes (summed over the dims
        they are broadcast along)."""
        rank = len(tensor.shape)
        if len(alpha.shape) != rank:
            # a [1] or [C] alpha, as the interface allows: one slope for all, or one per channel (dim 1)
            shape = [1] * rank
            count = alpha.shape[0] if alpha.shape else 1
            if count != 1:
                shape[1] = count
            ops: Any = self
            alpha = ops.float_reshape(alpha, tuple(shape))
        output = self._inner.prelu(tensor.primitive, alpha.primitive)
        args = (alpha.shape, (tensor.node is not None, alpha.node is not None))
        return self.track(_PRELU, (tensor, alpha), output, args)

    def gelu(self, tensor: T) -> T:
        """``gelu`` on the inner kernel; gradient by ``gelu_backward`` of the input."""
        return self.track(_GELU, (tensor,), self._inner.gelu(tensor.primitive))

    def sigmoid(self, tensor: T) -> T:
        """``sigmoid`` on the inner kernel; gradient by ``sigmoid_backward`` of the output."""
        return self.track(_SIGMOID, (tensor,), self._inner.sigmoid(tensor.primitive))

    def hard_sigmoid(self, tensor: T, alpha: float, beta: float) -> T:
        """``hard_sigmoid`` on the inner kernel; the gradient is ``alpha`` where the output is inside
        ``(0, 1)``."""
        output = self._inner.hard_sigmoid(tensor.primitive, alpha, beta)
        return self.track(_HARD_SIGMOID, (tensor,), output, (alpha, beta))

    def log_sigmoid(self, tensor: T) -> T:
        """``log_sigmoid`` on the inner kernel; gradient by ``log_sigmoid_backward`` of the input."""
        return self.track(_LOG_SIGMOID, (tensor,), self._inner.log_sigmoid(tensor.primitive))

    def softmax(self, tensor: T, dim: int) -> T:
        """``softmax`` on the inner kernel; gradient ``y * (g - sum(g * y, dim))``."""
        return self.track(_SOFTMAX, (tensor,), self._inner.softmax(tensor.primitive, dim), dim)

    def log_softmax(self, tensor: T, dim: int) -> T:
        """``log_softmax`` on the inner kernel; gradient ``g - exp(y) * sum(g, dim)``."""
        return self.track(_LOG_SOFTMAX, (tensor,), self._inner.log_softmax(tensor.primitive, dim), dim)
