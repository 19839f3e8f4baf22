"""``NdArray``: the CPU backend on NumPy."""

from __future__ import annotations

from typing import ClassVar

from burn_backend.array import ArrayBackend

from ._accelerated import NumbaOps
from ._allocator import keep_freed_memory
from ._ops.module import ModuleOps
from ._runtime import NumpyRuntime


class NdArray(ModuleOps, NumbaOps, ArrayBackend):
    """The CPU backend: tensors are NumPy arrays, matrix products and convolutions use BLAS.

    Args:
        float_dtype: the default float dtype (f32 unless set).
        int_dtype: the default int dtype, also that of returned indices (i64 unless set).

    Example:
        >>> from burn_backend import Tensor
        >>> device = NdArray().device()
        >>> Tensor.from_data([[1.0, 2.0]], device=device).sum().into_scalar()
        3.0
    """

    name: ClassVar[str] = "ndarray"
    is_cpu: ClassVar[bool] = True
    runtime = NumpyRuntime()


keep_freed_memory()
