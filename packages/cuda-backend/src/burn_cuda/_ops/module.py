"""Cuda's module ops: where CuPy does better than ``burn_backend.array``'s shared code."""

from __future__ import annotations

from typing import Any

from burn_backend.array import ArrayModuleOps

from ._conv import add_bias, convolve, convolve_adjoint, convolve_weight_grad

Array = Any
Sizes = Any


class ModuleOps(ArrayModuleOps):
    """Overrides of ``burn_backend.array``'s module ops, each with its reason."""

    # convolutions: im2col/col2im CUDA kernels around strided-batched cuBLAS GEMMs and a one-launch bias
    # (``_conv``), instead of the interface's slice-by-slice lowering
    def _convolve(
        self, x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes,
        groups: int, out: Sizes,
    ) -> Array:  # fmt: skip
        y = convolve(x, weight, stride, padding, dilation, groups, out)
        return y if bias is None else add_bias(y, bias)

    def _convolve_transpose(
        self, x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes,
        groups: int, out: Sizes,
    ) -> Array:  # fmt: skip
        y = convolve_adjoint(x, weight, stride, padding, dilation, groups, out)
        return y if bias is None else add_bias(y, bias)

    def _convolve_weight_grad(
        self,
        x: Array,
        grad: Array,
        kernel: Sizes,
        stride: Sizes,
        padding: Sizes,
        dilation: Sizes,
        groups: int,
    ) -> Array:
        return convolve_weight_grad(x, grad, kernel, stride, padding, dilation, groups)
