"""Cuda's module ops: the ones a few CuPy calls do better than backend-core's defaults.

Convolutions, pooling, interpolation, attention and the rest keep the defaults, which are built from
the float ops and so run on the GPU already (im2col plus one batched cuBLAS product for convolutions).
f16 and bf16 compute in f32 here, also around the defaults of deformable convolution (whose bilinear
taps lose too much in f16).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import DeformConv2dBackward, DeformConvOptions, DType
from burn_backend import ModuleOps as DefaultModuleOps

from .._cupy import cp

Array = Any
_LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)
_F32 = np.dtype(np.float32)


def _work(tensor: Array) -> Array:
    return tensor.astype(_F32) if tensor.dtype in _LOW_PRECISION else tensor


def _done(result: Array, dtype: Any) -> Array:
    return result if result.dtype == dtype else result.astype(dtype)


def _maybe(tensor: Array | None) -> Array | None:
    return None if tensor is None else _work(tensor)


class ModuleOps:
    """Overrides of ``burn_backend.ModuleOps`` defaults."""

    def embedding(self, weights: Array, indices: Array) -> Array:
        return cp.take(weights, indices, axis=0)

    def embedding_backward(self, weights: Array, output_grad: Array, indices: Array) -> Array:
        rows, dim = weights.shape
        grad = _work(output_grad)
        total = cp.zeros((rows, dim), dtype=grad.dtype)
        cp.add.at(total, indices.reshape(-1), grad.reshape(math.prod(indices.shape), dim))
        return _done(total, output_grad.dtype)

    def linear(self, x: Array, weight: Array, bias: Array | None) -> Array:
        y = cp.matmul(_work(x), _work(weight))
        if bias is not None:
            y += _work(bias)
        return _done(y, x.dtype)

    def layer_norm(self, x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
        work = _work(x)
        mean = cp.mean(work, axis=-1, keepdims=True)
        centered = work - mean
        variance = cp.mean(centered * centered, axis=-1, keepdims=True)
        y = centered / cp.sqrt(variance + work.dtype.type(epsilon))
        if gamma is not None:
            y *= _work(gamma)
        if beta is not None:
            y += _work(beta)
        return _done(y, x.dtype)

    def deform_conv2d(
        self,
        x: Array,
        offset: Array,
        weight: Array,
        mask: Array | None,
        bias: Array | None,
        options: DeformConvOptions,
    ) -> Array:
        default: Any = DefaultModuleOps.deform_conv2d
        if x.dtype not in _LOW_PRECISION:
            return default(self, x, offset, weight, mask, bias, options)
        result = default(self, _work(x), _work(offset), _work(weight), _maybe(mask), _maybe(bias), options)
        return _done(result, x.dtype)

    def deform_conv2d_backward(
        self,
        x: Array,
        offset: Array,
        weight: Array,
        mask: Array | None,
        bias: Array | None,
        output_grad: Array,
        options: DeformConvOptions,
    ) -> DeformConv2dBackward:
        default: Any = DefaultModuleOps.deform_conv2d_backward
        if x.dtype not in _LOW_PRECISION:
            grads: DeformConv2dBackward = default(self, x, offset, weight, mask, bias, output_grad, options)
            return grads
        wide = (_work(x), _work(offset), _work(weight), _maybe(mask), _maybe(bias), _work(output_grad))
        grads = default(self, *wide, options)
        return DeformConv2dBackward(*(None if g is None else _done(g, x.dtype) for g in grads))
