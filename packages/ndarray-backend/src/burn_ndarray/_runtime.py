"""``NumpyRuntime``: what NumPy does its own way under ``burn_backend.array``."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from burn_backend import Device
from burn_backend.array import LOW_PRECISION, ArrayRuntime

from . import _matmul

Array = Any
_F16 = np.dtype(np.float16)


class NumpyRuntime(ArrayRuntime):
    """NumPy on the host: no transfers, ``errstate`` silences floating-point warnings, ml_dtypes'
    f16/bf16 ufuncs round once per op, windows are strided views, updates use ``ufunc.at``."""

    native_low_precision: ClassVar[frozenset[np.dtype[Any]]] = LOW_PRECISION

    def __init__(self) -> None:
        super().__init__(np)

    def from_host(self, array: np.ndarray[Any, Any], device: Device | None) -> Array:
        return array

    def to_host(self, array: Array) -> np.ndarray[Any, Any]:
        return np.asarray(array)

    def matmul(self, lhs: Array, rhs: Array) -> Array:
        # a stack times one matrix as one GEMM (_matmul)
        return _matmul.matmul(lhs, rhs)

    def cast(self, array: Array, dtype: Any) -> Array:
        if array.dtype == dtype:
            return array
        kind = array.dtype.kind
        if kind == "b" or (kind in "iu" and dtype != _F16):  # these never warn: no errstate to enter
            return np.asarray(array).astype(dtype)
        with np.errstate(all="ignore"):
            return np.asarray(array).astype(dtype)

    def windows(self, array: Array, dim: int, size: int, step: int) -> Array:
        windows = sliding_window_view(array, size, axis=dim)
        if step == 1:
            return windows
        index = [slice(None)] * windows.ndim
        index[dim] = slice(None, None, step)
        return windows[tuple(index)]

    def scan(self, array: Array, dim: int, combine: Any) -> Array:
        return combine.accumulate(array, axis=dim)

    def sortable(self, array: Array) -> Array:
        return array

    def nonzero(self, array: Array) -> Array:
        return np.argwhere(array)
