"""``NumbaOps``: NdArray's ops with numba kernels (erf and its inverse, exact GELU and its backward, ReLU
and its backward, the Adam update) and its fusion compiler; each falls back to NumPy where numba is
missing or fails."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from burn_backend import AdamOptions, Device
from burn_backend.kit import ElementwiseBlock, ElementwisePlan, MatmulBlock, ReduceBlock

from . import _numba
from ._fusion import compile_block, compile_matmul, compile_reduce
from ._ops.activation import ActivationOps

Array = Any
# f32 only: numba's f64 erf/erfc (its own port) is ~1e-10 off in the tails, where backend-core's is exact
_KERNEL_DTYPES = (np.dtype(np.float32),)
_ADAM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_RELU_DTYPES = _ADAM_DTYPES


class NumbaOps(ActivationOps):
    """The ops NumPy lacks (erf) or computes in many passes (GELU), as one numba kernel each, and the
    fusion compile hook (``compile_elementwise``)."""

    def float_erf(self, tensor: Array) -> Array:
        kernels = _numba.kernels()
        if kernels is not None and tensor.dtype in _KERNEL_DTYPES:
            try:
                return kernels.erf(tensor)
            except Exception as error:
                _numba.disable(error)
        return cast(Any, super()).float_erf(tensor)  # ArrayFloatOps's, after this class in NdArray's MRO

    def float_erfinv(self, tensor: Array) -> Array:
        kernels = _numba.kernels()
        if kernels is not None and tensor.dtype in _KERNEL_DTYPES:
            try:
                return kernels.erfinv(tensor)
            except Exception as error:
                _numba.disable(error)
        return cast(Any, super()).float_erfinv(tensor)  # ArrayFloatOps's (in f64), after this class

    def gelu(self, tensor: Array) -> Array:
        kernels = _numba.kernels()
        if kernels is not None and tensor.dtype in _KERNEL_DTYPES:
            try:
                return kernels.gelu(tensor)
            except Exception as error:
                _numba.disable(error)
        return super().gelu(tensor)

    def gelu_backward(self, x: Array, grad: Array) -> Array:
        kernels = _numba.kernels()
        if (
            kernels is not None
            and x.dtype in _KERNEL_DTYPES
            and grad.dtype == x.dtype
            and grad.shape == x.shape
        ):
            try:
                return kernels.gelu_backward(x, grad)
            except Exception as error:
                _numba.disable(error)
        return super().gelu_backward(x, grad)

    def relu(self, tensor: Array) -> Array:
        kernels = _numba.kernels()
        if kernels is not None and tensor.dtype in _RELU_DTYPES:
            try:
                return kernels.relu(tensor)
            except Exception as error:
                _numba.disable(error)
        return super().relu(tensor)

    def relu_backward(self, output: Array, grad: Array) -> Array:
        """One pass (ActivationOps's multiplication by the mask takes four: a finiteness check, the
        comparison, a cast and the product)."""
        kernels = _numba.kernels()
        if (
            kernels is not None
            and grad.dtype in _RELU_DTYPES
            and output.dtype == grad.dtype
            and output.shape == grad.shape
        ):
            try:
                return kernels.relu_backward(output, grad)
            except Exception as error:
                _numba.disable(error)
        return super().relu_backward(output, grad)

    def float_adam_step(
        self,
        tensors: Sequence[Array],
        grads: Sequence[Array],
        moments_1: Sequence[Array | None],
        moments_2: Sequence[Array | None],
        options: AdamOptions,
    ) -> tuple[list[Array], list[Array], list[Array]]:
        """One pass over each parameter's memory (the default makes eleven), with the default's values
        bit for bit."""
        kernels = _numba.kernels()
        if kernels is not None and all(t.dtype in _ADAM_DTYPES for t in tensors):
            scalars = options.scalars()
            decay = 0.0 if options.decoupled else options.weight_decay
            try:
                results = [
                    kernels.adam_step(p, g, m, v, scalars, decay)
                    for p, g, m, v in zip(tensors, grads, moments_1, moments_2, strict=True)
                ]
            except Exception as error:
                _numba.disable(error)
            else:
                return [r[0] for r in results], [r[1] for r in results], [r[2] for r in results]
        default = cast(Any, super()).float_adam_step  # OptimizerOps's, after this class in NdArray's MRO
        return default(tensors, grads, moments_1, moments_2, options)  # type: ignore[no-any-return]

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        return compile_block(self, block)  # type: ignore[arg-type]

    def compile_fused(
        self, block: ElementwiseBlock | ReduceBlock | MatmulBlock, device: Device
    ) -> ElementwisePlan | None:
        """The fusion hook for blocks around a reduction or a matmul, and blocks with casts
        (``burn_backend.kit``)."""
        if isinstance(block, ElementwiseBlock):
            return compile_block(self, block)  # type: ignore[arg-type]
        if isinstance(block, ReduceBlock):
            return compile_reduce(self, block)  # type: ignore[arg-type]
        return compile_matmul(self, block)  # type: ignore[arg-type]
