"""``ArrayActivationOps``: the activations in fewer passes over memory than the interface's defaults.

f16 and bf16 inputs are computed in f32 and rounded once at the end, except by ``relu`` and its
backward (exact in any dtype). ``gelu`` and its backward (which spend their time in ``float_erf``),
``hard_sigmoid``, ``sigmoid_backward`` and ``log_softmax`` keep the defaults: they are as few passes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from .._ops.activation import ActivationOps
from ._float import _scalar
from ._lowp import in_f32
from ._runtime import LOW_PRECISION

if TYPE_CHECKING:
    from ._runtime import ArrayRuntime

Array = Any


class ArrayActivationOps(ActivationOps):
    """The activation op group written once against ``self.xp``."""

    runtime: ClassVar[ArrayRuntime]
    xp: ClassVar[Any]

    @in_f32
    def relu(self, tensor: Array) -> Array:
        return self.xp.maximum(tensor, _scalar(tensor, 0.0))

    @in_f32
    def relu_backward(self, output: Array, grad: Array) -> Array:
        # a select, not grad * (output > 0): an infinite gradient times 0 would be NaN; the namespace's
        # functions, not operators (see the float ops' ``_arithmetic``)
        xp = self.xp
        if output.dtype not in LOW_PRECISION:
            return xp.where(xp.greater(output, 0), grad, _scalar(grad, 0.0))
        with self.runtime.quiet():  # ml_dtypes' bf16 comparisons warn on NaN
            return xp.where(xp.greater(output, 0), grad, _scalar(grad, 0.0))

    def leaky_relu(self, tensor: Array, negative_slope: float) -> Array:
        x = self.runtime.widen(tensor)
        xp = self.xp
        # a pick, not the larger of x and slope * x: with a zero slope, inf * 0 is NaN; NaN stays NaN
        with self.runtime.quiet():
            return self.runtime.narrow(
                xp.where(xp.greater_equal(x, 0), x, xp.multiply(x, negative_slope)), tensor.dtype
            )

    def prelu(self, tensor: Array, alpha: Array) -> Array:
        xp, runtime = self.xp, self.runtime
        if alpha.ndim != tensor.ndim:
            shape = [1] * tensor.ndim
            if math.prod(alpha.shape) != 1:
                shape[1] = math.prod(alpha.shape)
            alpha = xp.reshape(alpha, tuple(shape))
        x = runtime.widen(tensor)
        with runtime.quiet():
            # alpha * min(x, 0) + max(x, 0): one of the terms is (+-)0, so the sum is exact
            out = xp.minimum(x, 0.0) * runtime.widen(alpha)
            out += xp.maximum(x, 0.0)
        return runtime.narrow(out, tensor.dtype)

    def sigmoid(self, tensor: Array) -> Array:
        x = self.runtime.widen(tensor)
        with self.runtime.quiet():
            # exp(-x) overflows to inf only where the result is below the smallest normal: 0 then
            out = self.xp.exp(-x)
            out += 1
            return self.runtime.narrow(1 / out, tensor.dtype)

    def log_sigmoid(self, tensor: Array) -> Array:
        xp, x = self.xp, self.runtime.widen(tensor)
        with self.runtime.quiet():
            # min(x, 0) - log1p(exp(-|x|)): exp never overflows and the log keeps tiny values
            out = xp.minimum(x, 0.0)
            out -= xp.log1p(xp.exp(-xp.abs(x)))
        return self.runtime.narrow(out, tensor.dtype)

    def log_sigmoid_backward(self, x: Array, grad: Array) -> Array:
        runtime = self.runtime
        with runtime.quiet():
            # sigmoid(-x) = 1 / (1 + exp(x)); exp overflows to inf only where the result is ~0
            out = self.xp.exp(runtime.widen(x))
            out += 1
            return runtime.narrow(runtime.widen(grad) / out, x.dtype)

    def softmax(self, tensor: Array, dim: int) -> Array:
        if 0 in tensor.shape:
            return tensor
        xp, x = self.xp, self.runtime.widen(tensor)
        with self.runtime.quiet():
            out = xp.exp(x - xp.max(x, axis=dim, keepdims=True))
            out /= xp.sum(out, axis=dim, keepdims=True)
        return self.runtime.narrow(out, tensor.dtype)

    def softmin(self, tensor: Array, dim: int) -> Array:
        if 0 in tensor.shape:
            return tensor
        xp, x = self.xp, self.runtime.widen(tensor)
        with self.runtime.quiet():
            # softmax(-x) = exp(min - x) / sum(exp(min - x))
            out = xp.exp(xp.min(x, axis=dim, keepdims=True) - x)
            out /= xp.sum(out, axis=dim, keepdims=True)
        return self.runtime.narrow(out, tensor.dtype)
