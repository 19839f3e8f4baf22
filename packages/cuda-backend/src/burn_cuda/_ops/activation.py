"""Cuda's activation ops: fewer passes than the defaults, and no host-side checks of values.

f16 and bf16 inputs are computed in f32 and rounded once at the end. The other ops keep the defaults.
"""

from __future__ import annotations

from typing import Any

from .._cupy import cp
from ._array import narrow, widen

Array = Any


class ActivationOps:
    """Overrides of ``burn_backend.ActivationOps`` defaults."""

    def relu(self, tensor: Array) -> Array:
        x = widen(tensor)
        return narrow(cp.maximum(x, x.dtype.type(0)), tensor.dtype)

    def relu_backward(self, output: Array, grad: Array) -> Array:
        # a select, not grad * (output > 0): an infinite gradient times 0 would be NaN
        g = widen(grad)
        return narrow(cp.where(widen(output) > 0, g, g.dtype.type(0)), grad.dtype)

    def leaky_relu(self, tensor: Array, negative_slope: float) -> Array:
        x = widen(tensor)
        scaled = x * x.dtype.type(negative_slope)
        # the larger of x and slope * x is x for x >= 0 exactly when slope <= 1 (any sign), else the
        # smaller is; both are exact, and NaN stays NaN
        pick = cp.maximum if negative_slope <= 1.0 else cp.minimum
        return narrow(pick(x, scaled), tensor.dtype)

    def prelu(self, tensor: Array, alpha: Array) -> Array:
        rank = tensor.ndim
        if alpha.ndim != rank:
            shape = [1] * rank
            if alpha.size != 1:
                shape[1] = alpha.size
            alpha = cp.reshape(alpha, shape)
        x, slope = widen(tensor), widen(alpha)
        zero = x.dtype.type(0)
        # max(x, 0) + alpha * min(x, 0): one of the terms is (+-)0, so the sum is exact
        return narrow(cp.minimum(x, zero) * slope + cp.maximum(x, zero), tensor.dtype)

    def sigmoid(self, tensor: Array) -> Array:
        x = widen(tensor)
        # exp(-x) overflows to inf only where the result is below the smallest normal: 0 then
        return narrow(1 / (1 + cp.exp(-x)), tensor.dtype)

    def log_sigmoid(self, tensor: Array) -> Array:
        x = widen(tensor)
        # min(x, 0) - log1p(exp(-|x|)): exp never overflows and the log keeps tiny values
        return narrow(cp.minimum(x, x.dtype.type(0)) - cp.log1p(cp.exp(-cp.abs(x))), tensor.dtype)

    def log_sigmoid_backward(self, x: Array, grad: Array) -> Array:
        # sigmoid(-x) = 1 / (1 + exp(x)); exp overflows to inf only where the result is ~0
        return narrow(widen(grad) / (1 + cp.exp(widen(x))), x.dtype)

    def softmax(self, tensor: Array, dim: int) -> Array:
        if tensor.size == 0:
            return tensor
        x = widen(tensor)
        out = cp.exp(x - cp.max(x, axis=dim, keepdims=True))
        return narrow(out / cp.sum(out, axis=dim, keepdims=True), tensor.dtype)

    def softmin(self, tensor: Array, dim: int) -> Array:
        if tensor.size == 0:
            return tensor
        x = widen(tensor)
        # softmax(-x) = exp(min - x) / sum(exp(min - x))
        out = cp.exp(cp.min(x, axis=dim, keepdims=True) - x)
        return narrow(out / cp.sum(out, axis=dim, keepdims=True), tensor.dtype)
