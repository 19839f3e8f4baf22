"""NdArray's activation ops: fewer NumPy passes than the defaults, and no ``np.where`` on data-dependent
masks (a select on a random mask is several times slower than arithmetic on this hardware).

f16 and bf16 inputs are computed in f32 and rounded once at the end where the op has transcendental
steps (NumPy has no fast kernels for them, and ml_dtypes' bf16 turns into f32 when combined with a
Python float anyway). The other ops keep the defaults, which are as fast here: ``gelu`` and its backward
spend their time in ``float_erf``; ``hard_sigmoid``, ``log_softmax`` and ``sigmoid_backward`` are the
same few NumPy passes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType

Array = Any  # np.ndarray, or a NumPy scalar for rank 0
_LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)


def _wide(tensor: Array) -> Array:
    """``tensor`` in the dtype to compute in: f32 for f16 and bf16, else its own (not a copy)."""
    return tensor.astype(np.float32) if tensor.dtype in _LOW_PRECISION else tensor


def _narrow(result: Array, dtype: Any) -> Array:
    return result if result.dtype == dtype else result.astype(dtype)


def _fresh(values: Array) -> Array:
    """``values`` as an array this module may write to (a NumPy scalar becomes a 0-d array)."""
    return values if isinstance(values, np.ndarray) else np.asarray(values)


_BF16 = DType.BF16.numpy


class ActivationOps:
    """Overrides of ``burn_backend.ActivationOps`` defaults where NumPy does better."""

    def relu(self, tensor: Array) -> Array:
        if tensor.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN; NumPy's maximum never does
            with np.errstate(all="ignore"):
                return np.maximum(tensor, tensor.dtype.type(0))
        return np.maximum(tensor, tensor.dtype.type(0))

    def relu_backward(self, output: Array, grad: Array) -> Array:
        keep = output > 0
        with np.errstate(all="ignore"):
            if np.isfinite(grad).all():
                return np.multiply(grad, keep, dtype=grad.dtype)
            # inf * 0 would be NaN where the gradient must be 0
            return np.where(keep, grad, grad.dtype.type(0))

    def leaky_relu(self, tensor: Array, negative_slope: float) -> Array:
        x = _wide(tensor)
        with np.errstate(all="ignore"):
            scaled = x * x.dtype.type(negative_slope)
            # the larger of x and slope * x is x for x >= 0 exactly when slope <= 1 (any sign), else the
            # smaller is; both are exact, and NaN stays NaN
            pick = np.maximum if negative_slope <= 1.0 else np.minimum
            return _narrow(pick(x, scaled), tensor.dtype)

    def prelu(self, tensor: Array, alpha: Array) -> Array:
        rank = np.ndim(tensor)
        if np.ndim(alpha) != rank:
            shape = [1] * rank
            if np.size(alpha) != 1:
                shape[1] = np.size(alpha)
            alpha = np.reshape(alpha, shape)
        x, a = _wide(tensor), _wide(alpha)
        with np.errstate(all="ignore"):
            # max(x, 0) + alpha * min(x, 0): one of the terms is (+-)0, so the sum is exact
            out = _fresh(np.minimum(x, x.dtype.type(0)) * a)
            out += np.maximum(x, x.dtype.type(0))
        return _narrow(out, tensor.dtype)

    def sigmoid(self, tensor: Array) -> Array:
        x = _wide(tensor)
        with np.errstate(all="ignore"):
            # exp(-x) overflows to inf only where the result is below the smallest normal: 0 then
            out = _fresh(np.negative(x))
            np.exp(out, out=out)
            out += 1
            np.reciprocal(out, out=out)
        return _narrow(out, tensor.dtype)

    def log_sigmoid(self, tensor: Array) -> Array:
        x = _wide(tensor)
        with np.errstate(all="ignore"):
            # min(x, 0) - log1p(exp(-|x|)): exp never overflows and the log keeps tiny values
            softplus = _fresh(np.abs(x))
            np.negative(softplus, out=softplus)
            np.exp(softplus, out=softplus)
            np.log1p(softplus, out=softplus)
            out = _fresh(np.minimum(x, x.dtype.type(0)))
            out -= softplus
        return _narrow(out, tensor.dtype)

    def log_sigmoid_backward(self, x: Array, grad: Array) -> Array:
        w = _wide(x)
        with np.errstate(all="ignore"):
            # sigmoid(-x) = 1 / (1 + exp(x)); exp overflows to inf only where the result is ~0
            out = _fresh(np.exp(w))
            out += 1
            np.reciprocal(out, out=out)
            out *= _wide(grad)
        return _narrow(out, x.dtype)

    def softmax(self, tensor: Array, dim: int) -> Array:
        if np.size(tensor) == 0:
            return tensor
        x = _wide(tensor)
        with np.errstate(all="ignore"):
            out = x - np.max(x, axis=dim, keepdims=True)
            np.exp(out, out=out)
            out /= np.sum(out, axis=dim, keepdims=True)
        return _narrow(out, tensor.dtype)

    def softmin(self, tensor: Array, dim: int) -> Array:
        if np.size(tensor) == 0:
            return tensor
        x = _wide(tensor)
        with np.errstate(all="ignore"):
            # softmax(-x) = exp(min - x) / sum(exp(min - x))
            out = np.min(x, axis=dim, keepdims=True) - x
            np.exp(out, out=out)
            out /= np.sum(out, axis=dim, keepdims=True)
        return _narrow(out, tensor.dtype)
