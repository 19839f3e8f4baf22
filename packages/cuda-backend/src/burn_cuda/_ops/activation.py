"""Cuda's activation ops: fewer passes than the defaults, and no host-side checks of values.

f16 and bf16 inputs are computed in f32 and rounded once at the end. The other ops keep the defaults.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType

from .._cupy import cp

Array = Any
_LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)
_F32 = np.dtype(np.float32)
_BF16 = DType.BF16.numpy


def _wide(tensor: Array) -> Array:
    """``tensor`` in the dtype to compute in: f32 for f16 and bf16, else its own (not a copy)."""
    return tensor.astype(_F32) if tensor.dtype in _LOW_PRECISION else tensor


def _narrow(result: Array, dtype: Any) -> Array:
    return result if result.dtype == dtype else result.astype(dtype)


class ActivationOps:
    """Overrides of ``burn_backend.ActivationOps`` defaults."""

    def relu(self, tensor: Array) -> Array:
        x = _wide(tensor)
        return _narrow(cp.maximum(x, x.dtype.type(0)), tensor.dtype)

    def relu_backward(self, output: Array, grad: Array) -> Array:
        # a select, not grad * (output > 0): an infinite gradient times 0 would be NaN
        g = _wide(grad)
        return _narrow(cp.where(_wide(output) > 0, g, g.dtype.type(0)), grad.dtype)

    def leaky_relu(self, tensor: Array, negative_slope: float) -> Array:
        x = _wide(tensor)
        scaled = x * x.dtype.type(negative_slope)
        # the larger of x and slope * x is x for x >= 0 exactly when slope <= 1 (any sign), else the
        # smaller is; both are exact, and NaN stays NaN
        pick = cp.maximum if negative_slope <= 1.0 else cp.minimum
        return _narrow(pick(x, scaled), tensor.dtype)

    def prelu(self, tensor: Array, alpha: Array) -> Array:
        rank = tensor.ndim
        if alpha.ndim != rank:
            shape = [1] * rank
            if alpha.size != 1:
                shape[1] = alpha.size
            alpha = cp.reshape(alpha, shape)
        x, slope = _wide(tensor), _wide(alpha)
        zero = x.dtype.type(0)
        # max(x, 0) + alpha * min(x, 0): one of the terms is (+-)0, so the sum is exact
        return _narrow(cp.minimum(x, zero) * slope + cp.maximum(x, zero), tensor.dtype)

    def sigmoid(self, tensor: Array) -> Array:
        x = _wide(tensor)
        # exp(-x) overflows to inf only where the result is below the smallest normal: 0 then
        return _narrow(1 / (1 + cp.exp(-x)), tensor.dtype)

    def log_sigmoid(self, tensor: Array) -> Array:
        x = _wide(tensor)
        # min(x, 0) - log1p(exp(-|x|)): exp never overflows and the log keeps tiny values
        return _narrow(cp.minimum(x, x.dtype.type(0)) - cp.log1p(cp.exp(-cp.abs(x))), tensor.dtype)

    def log_sigmoid_backward(self, x: Array, grad: Array) -> Array:
        # sigmoid(-x) = 1 / (1 + exp(x)); exp overflows to inf only where the result is ~0
        return _narrow(_wide(grad) / (1 + cp.exp(_wide(x))), x.dtype)

    def softmax(self, tensor: Array, dim: int) -> Array:
        if tensor.size == 0:
            return tensor
        x = _wide(tensor)
        out = cp.exp(x - cp.max(x, axis=dim, keepdims=True))
        return _narrow(out / cp.sum(out, axis=dim, keepdims=True), tensor.dtype)

    def softmin(self, tensor: Array, dim: int) -> Array:
        if tensor.size == 0:
            return tensor
        x = _wide(tensor)
        # softmax(-x) = exp(min - x) / sum(exp(min - x))
        out = cp.exp(cp.min(x, axis=dim, keepdims=True) - x)
        return _narrow(out / cp.sum(out, axis=dim, keepdims=True), tensor.dtype)
