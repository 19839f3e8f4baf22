"""Cuda's module ops: where CuPy does better than ``burn_backend.array``'s shared code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burn_backend import ConvOptions, ConvTransposeOptions
from burn_backend.array import ArrayModuleOps
from burn_backend.kit import conv_output_size, conv_transpose_output_size

from .. import _cudnn
from . import _conv, _pool

Array = Any


class ModuleOps(ArrayModuleOps):
    """Overrides of ``burn_backend.array``'s module ops, each with its reason."""

    use_cudnn: bool = True
    """Whether convolutions go to cuDNN where it serves them (``Cuda(cudnn=...)`` sets it)."""

    # convolutions: cuDNN first, on the operands' own dtype (f16 and bf16 without a widening copy), where
    # the backend allows it (``_cudnn``: ``None`` where it does not serve the case); else the kernels below
    def _conv_nd(self, x: Array, weight: Array, bias: Array | None, options: ConvOptions) -> Array:
        if self.use_cudnn:
            geometry = zip(x.shape[2:], weight.shape[2:], options.stride, options.padding, options.dilation)
            out = [conv_output_size(*sizes) for sizes in geometry]
            y = _cudnn.convolve(x, weight, bias, options.stride, options.padding, options.dilation, out)
            if y is not None:
                return y
        return ArrayModuleOps._conv_nd(self, x, weight, bias, options)

    def _conv_nd_x_backward(self, x: Array, weight: Array, output_grad: Array, options: ConvOptions) -> Array:
        if self.use_cudnn:
            g = _cudnn.convolve_adjoint(
                output_grad, weight, None, options.stride, options.padding, options.dilation,
                options.groups, x.shape[2:],
            )  # fmt: skip
            if g is not None:
                return g
        return ArrayModuleOps._conv_nd_x_backward(self, x, weight, output_grad, options)

    def _conv_nd_weight_backward(
        self, x: Array, weight: Array, output_grad: Array, options: ConvOptions
    ) -> Array:
        if self.use_cudnn:
            g = _cudnn.convolve_weight_grad(
                x, output_grad, weight.shape[2:], options.stride, options.padding, options.dilation,
                options.groups,
            )  # fmt: skip
            if g is not None:
                return g
        return ArrayModuleOps._conv_nd_weight_backward(self, x, weight, output_grad, options)

    def _conv_transpose_nd(
        self, x: Array, weight: Array, bias: Array | None, options: ConvTransposeOptions
    ) -> Array:
        if self.use_cudnn:
            geometry = zip(
                x.shape[2:], weight.shape[2:], options.stride, options.padding, options.padding_out,
                options.dilation,
            )  # fmt: skip
            out = [conv_transpose_output_size(*sizes) for sizes in geometry]
            y = _cudnn.convolve_adjoint(
                x, weight, bias, options.stride, options.padding, options.dilation, options.groups, out
            )
            if y is not None:
                return y
        return ArrayModuleOps._conv_transpose_nd(self, x, weight, bias, options)

    def _conv_transpose_nd_x_backward(
        self, weight: Array, output_grad: Array, options: ConvTransposeOptions
    ) -> Array:
        if self.use_cudnn:
            geometry = zip(
                output_grad.shape[2:], weight.shape[2:], options.stride, options.padding,
                options.padding_out, options.dilation,
            )  # fmt: skip
            # the forward convolution's geometry, less the output padding the transposed one added
            out = [conv_output_size(n - q, k, s, p, d) for n, k, s, p, q, d in geometry]
            g = _cudnn.convolve(
                output_grad, weight, None, options.stride, options.padding, options.dilation, out
            )
            if g is not None:
                return g
        return ArrayModuleOps._conv_transpose_nd_x_backward(self, weight, output_grad, options)

    def _conv_transpose_nd_weight_backward(
        self, x: Array, weight: Array, output_grad: Array, options: ConvTransposeOptions
    ) -> Array:
        if self.use_cudnn:
            g = _cudnn.convolve_weight_grad(
                output_grad, x, weight.shape[2:], options.stride, options.padding, options.dilation,
                options.groups,
            )  # fmt: skip
            if g is not None:
                return g
        return ArrayModuleOps._conv_transpose_nd_weight_backward(self, x, weight, output_grad, options)

    # the interface names each rank: the methods above, bound under each rank's name
    conv1d = conv2d = conv3d = _conv_nd
    conv1d_x_backward = conv2d_x_backward = conv3d_x_backward = _conv_nd_x_backward
    conv1d_weight_backward = conv2d_weight_backward = conv3d_weight_backward = _conv_nd_weight_backward
    conv_transpose1d = conv_transpose2d = conv_transpose3d = _conv_transpose_nd
    conv_transpose1d_x_backward = conv_transpose2d_x_backward = _conv_transpose_nd_x_backward
    conv_transpose3d_x_backward = _conv_transpose_nd_x_backward
    conv_transpose1d_weight_backward = conv_transpose2d_weight_backward = _conv_transpose_nd_weight_backward
    conv_transpose3d_weight_backward = _conv_transpose_nd_weight_backward

    # burn-cuda's own convolutions: im2col/col2im CUDA kernels around strided-batched cuBLAS GEMMs and a
    # one-launch bias (``_conv``), instead of the interface's slice-by-slice lowering
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
