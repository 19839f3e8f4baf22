"""Cuda's activations as one kernel each: the exact GELU, its gradient and ReLU's gradient.

The shared defaults compose them from element-wise ops (GELU: four launches forward and eight backward;
ReLU's gradient: a comparison and a select), each reading and writing the whole tensor; here each is one
pass. f32 and f16 compute in f32 registers (f16 read and written as it is); f64 keeps the shared code;
bf16 arrives in f32 (``in_f32``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from burn_backend.array import ArrayActivationOps, in_f32

from .._cupy import cp

Array = Any
_IN_F32 = (np.dtype(np.float32), np.dtype(np.float16))


@functools.cache
def _gelu() -> Any:
    return cp.ElementwiseKernel(
        "T x",
        "T y",
        "const float v = (float)x; y = (T)(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));",
        "burn_cuda_gelu",
    )


@functools.cache
def _gelu_backward() -> Any:
    # d/dx x * Phi(x) = Phi(x) + x * phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    return cp.ElementwiseKernel(
        "T x, T grad",
        "T out",
        """
        const float v = (float)x;
        const float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
        const float pdf = expf(-0.5f * v * v) * 0.39894228040143268f;
        out = (T)((float)grad * (cdf + v * pdf));
        """,
        "burn_cuda_gelu_backward",
    )


@functools.cache
def _relu_backward() -> Any:
    # a select, not grad * (output > 0): an infinite gradient times 0 would be NaN
    return cp.ElementwiseKernel(
        "T output, T grad", "T out", "out = output > (T)0 ? grad : (T)0", "burn_cuda_relu_backward"
    )


class ActivationOps(ArrayActivationOps):
    """Cuda's overrides of the activations' kernels."""

    @in_f32
    def gelu(self, tensor: Array) -> Array:
        if tensor.dtype not in _IN_F32:
            return ArrayActivationOps.gelu(self, tensor)
        return _gelu()(tensor)

    @in_f32
    def gelu_backward(self, x: Array, grad: Array) -> Array:
        if x.dtype not in _IN_F32 or grad.dtype != x.dtype:
            return ArrayActivationOps.gelu_backward(self, x, grad)
        return _gelu_backward()(x, grad)

    @in_f32
    def relu_backward(self, output: Array, grad: Array) -> Array:
        if output.dtype != grad.dtype:
            return ArrayActivationOps.relu_backward(self, output, grad)
        return _relu_backward()(output, grad)
