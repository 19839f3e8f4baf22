"""Cuda's overrides of ``burn_backend.array``'s float ops: what CuPy and CUDA do better, or differently.

bf16 (ml_dtypes' ``bfloat16``, which CuPy 14 stores but has few kernels for) arrives in f32 in every
method marked ``in_f32``; f16 computes natively.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, cast

from burn_backend import AdamOptions, OptimizerOps, SgdOptions
from burn_backend.array import ArrayFloatOps, in_f32

from .._cupy import cp
from .._fusion import ERFINV, FLOAT_MOD
from . import _elementwise, _optim

Array = Any


def _kernel_first(name: str) -> tuple[Any, Any]:
    """``float_<name>`` and ``float_<name>_scalar``: the vectorized f32 kernels where they apply
    (``_elementwise`` gives ``None`` where they do not), else the shared ops."""
    shared = getattr(ArrayFloatOps, f"float_{name}")
    shared_scalar = getattr(ArrayFloatOps, f"float_{name}_scalar")

    def with_tensor(self: Any, lhs: Array, rhs: Array) -> Array:
        out = _elementwise.binary(name, lhs, rhs)
        return shared(self, lhs, rhs) if out is None else out

    def with_scalar(self: Any, lhs: Array, rhs: float) -> Array:
        out = _elementwise.scalar(name, lhs, rhs)
        return shared_scalar(self, lhs, rhs) if out is None else out

    return in_f32(with_tensor), in_f32(with_scalar)


@functools.cache
def _erf() -> Any:
    """The element-wise kernel of CUDA's ``erf`` (f32 and f64)."""
    return cp.ElementwiseKernel("T x", "T y", "y = erf(x)", "burn_cuda_erf")


@functools.cache
def _erfinv() -> Any:
    """The element-wise kernel of CUDA's ``erfinv`` (f32 and f64)."""
    return cp.ElementwiseKernel("T x", "T y", "y = burn_erfinv(x)", "burn_cuda_erfinv", preamble=ERFINV)


@functools.cache
def _remainder() -> Any:
    """The element-wise kernel of NumPy's float remainder (f32 and f64). CuPy's ``remainder`` computes
    ``a - b * floor(a / b)``: NaN for an infinite divisor, and +0 where NumPy gives -0."""
    return cp.ElementwiseKernel(
        "T a, T b", "T r", "r = burn_mod(a, b)", "burn_cuda_remainder", preamble=FLOAT_MOD
    )


class FloatOps(ArrayFloatOps):
    """The float ops Cuda does its own way."""

    # one launch moving a float4 per thread, without CuPy's ufunc dispatch (most of a small op's cost)
    float_add, float_add_scalar = _kernel_first("add")
    float_sub, float_sub_scalar = _kernel_first("sub")
    float_mul, float_mul_scalar = _kernel_first("mul")
    float_div, float_div_scalar = _kernel_first("div")

    @in_f32
    def float_matmul(self, lhs: Array, rhs: Array) -> Array:
        # cuBLAS multiplies f16 itself, accumulating in f32 (the shared op widens f16, which NumPy
        # cannot multiply with BLAS); TF32 stays off unless CUPY_TF32=1 is set before CuPy is imported.
        # Our own cuBLAS binding, not CuPy's: it can be captured into a CUDA graph
        return self.runtime.matmul(lhs, rhs)

    @in_f32
    def float_sign(self, tensor: Array) -> Array:
        return cp.where(cp.isnan(tensor), tensor, cp.sign(tensor))  # CuPy's sign of NaN is 0

    def float_remainder(self, lhs: Array, rhs: Array) -> Array:
        runtime = self.runtime
        return runtime.narrow(_remainder()(runtime.widen(lhs), runtime.widen(rhs)), lhs.dtype)

    def float_remainder_scalar(self, lhs: Array, rhs: float) -> Array:
        runtime = self.runtime
        wide = runtime.widen(lhs)
        return runtime.narrow(_remainder()(wide, wide.dtype.type(rhs)), lhs.dtype)

    def float_erf(self, tensor: Array) -> Array:
        # CUDA's erf in one kernel (f16 and bf16 in f32), rather than the shared series in f64
        runtime = self.runtime
        return runtime.narrow(_erf()(runtime.widen(tensor)), tensor.dtype)

    def float_erfinv(self, tensor: Array) -> Array:
        # CUDA's erfinv in one kernel (f16 and bf16 in f32), rather than the shared Newton steps in f64
        runtime = self.runtime
        return runtime.narrow(_erfinv()(runtime.widen(tensor)), tensor.dtype)

    def float_adam_step(
        self,
        tensors: Sequence[Array],
        grads: Sequence[Array],
        moments_1: Sequence[Array | None],
        moments_2: Sequence[Array | None],
        options: AdamOptions,
    ) -> tuple[list[Array], list[Array], list[Array]]:
        # f32 and f64: one launch for up to 32 tensors (the default launches eleven kernels a tensor)
        decay = 0.0 if options.decoupled else options.weight_decay
        updated = _optim.adam_step(tensors, grads, moments_1, moments_2, options.scalars(), decay)
        if updated is None:
            return OptimizerOps.float_adam_step(
                cast(Any, self), tensors, grads, moments_1, moments_2, options
            )
        return updated

    def float_sgd_step(
        self,
        tensors: Sequence[Array],
        grads: Sequence[Array],
        velocities: Sequence[Array | None],
        options: SgdOptions,
    ) -> tuple[list[Array], list[Array | None]]:
        # f32 and f64: one launch for up to 32 tensors (the default launches up to five kernels a tensor)
        updated = _optim.sgd_step(tensors, grads, velocities, options)
        if updated is None:
            return OptimizerOps.float_sgd_step(cast(Any, self), tensors, grads, velocities, options)
        return updated
