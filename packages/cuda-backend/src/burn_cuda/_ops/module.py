"""Cuda's module ops: where CuPy does better than ``burn_backend.array``'s shared code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burn_backend.array import ArrayModuleOps

from . import _conv, _pool

Array = Any


class ModuleOps(ArrayModuleOps):
    """Overrides of ``burn_backend.array``'s module ops, each with its reason."""

    # convolutions: im2col/col2im CUDA kernels around strided-batched cuBLAS GEMMs and a one-launch bias
    # (``_conv``), instead of the interface's slice-by-slice lowering
    _convolve = staticmethod(_conv.convolve)
    _convolve_transpose = staticmethod(_conv.convolve_adjoint)
    _convolve_weight_grad = staticmethod(_conv.convolve_weight_grad)
    _channel_sums = staticmethod(_conv.channel_sums)  # bias gradients: one block per channel

    # adaptive average pooling: one kernel each way (``_pool``, in f32 or f64: ``widen``), instead of
    # the shared lowering's ten or so CuPy calls; empty inputs keep the shared code
    def adaptive_avg_pool2d(self, x: Array, output_size: int | Sequence[int]) -> Array:
        if 0 in x.shape:
            return ArrayModuleOps.adaptive_avg_pool2d(self, x, output_size)
        sizes = (output_size,) if isinstance(output_size, int) else tuple(output_size)
        return self.runtime.narrow(_pool.adaptive_avg_pool(self.runtime.widen(x), sizes), x.dtype)

    def adaptive_avg_pool2d_backward(self, x: Array, grad: Array) -> Array:
        if 0 in x.shape:
            return ArrayModuleOps.adaptive_avg_pool2d_backward(self, x, grad)
        dx = _pool.adaptive_avg_pool_grad(tuple(x.shape), self.runtime.widen(grad))
        return self.runtime.narrow(dx, grad.dtype)

    adaptive_avg_pool1d = adaptive_avg_pool2d
    adaptive_avg_pool1d_backward = adaptive_avg_pool2d_backward
