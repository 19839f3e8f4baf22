"""Storages and the lazily read tensors over them, with the bounds check every view passes before any
memory is touched."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from ._limits import ReadLimits

__all__ = ["STORAGE_DTYPES", "LazyArray", "PyTorchReadError", "Storage"]

STORAGE_DTYPES: dict[str, np.dtype[Any]] = {
    "FloatStorage": np.dtype(np.float32),
    "DoubleStorage": np.dtype(np.float64),
    "HalfStorage": np.dtype(np.float16),
    "BFloat16Storage": np.dtype(ml_dtypes.bfloat16),
    "LongStorage": np.dtype(np.int64),
    "IntStorage": np.dtype(np.int32),
    "ShortStorage": np.dtype(np.int16),
    "CharStorage": np.dtype(np.int8),
    "ByteStorage": np.dtype(np.uint8),
    "BoolStorage": np.dtype(np.bool_),
}
_MAX_DIMS = 64  # NumPy's
_MAX_EXTENT = 2**63 - 1  # NumPy's largest array size, in elements or bytes


class PyTorchReadError(ValueError):
    """A file is not a PyTorch file this reader understands, holds something it refuses to build (the
    message names the refused global), is damaged, or exceeds a ``ReadLimits`` limit; the message
    names the file and what is wrong."""


class Storage:
    """A storage of a file: its dtype, its size in elements (declared, then the bytes present) and,
    once read, its data."""

    def __init__(
        self, dtype: np.dtype[Any], key: str, numel: int | None, source: str, limits: ReadLimits
    ) -> None:
        self.dtype = dtype
        self.key = key
        self.numel = numel
        self.source = source
        self.limits = limits
        self.array: np.ndarray[Any, Any] | None = None

    def data(self) -> np.ndarray[Any, Any]:
        """The storage's elements, flat."""
        if self.array is None:
            raise PyTorchReadError(f"{self.source}: storage {self.key!r} has no data in the file")
        return self.array


class LazyArray:
    """A tensor of a PyTorch file, read when ``numpy()`` is called (a view of the memory-mapped
    storage, copied only when not contiguous).

    Example:
        >>> weight = read_pytorch("model.pt")["fc.weight"]  # doctest: +SKIP
        >>> weight.shape, weight.dtype, weight.numpy().sum()  # doctest: +SKIP
    """

    __slots__ = ("offset", "shape", "storage", "stride")

    def __init__(
        self, storage: Storage, offset: int, shape: tuple[int, ...], stride: tuple[int, ...]
    ) -> None:
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.stride = stride

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of the values."""
        return self.storage.dtype

    def check(self) -> None:
        """Refuse a view that reaches outside its storage, has a negative size, stride or offset, or
        would copy out more than ``ReadLimits.max_expanded_bytes`` beyond its storage's size.

        Raises:
            PyTorchReadError: naming the file, the storage, the view and the storage's size.
        """
        storage = self.storage
        shape, stride, offset = self.shape, self.stride, self.offset
        where = (
            f"{storage.source}: a tensor of shape {list(shape)}, stride {list(stride)} and offset {offset}"
        )
        if len(shape) != len(stride) or len(shape) > _MAX_DIMS:
            raise PyTorchReadError(f"{where}: needs as many strides as sizes, at most {_MAX_DIMS}")
        if offset < 0 or any(n < 0 for n in shape) or any(s < 0 for s in stride):
            raise PyTorchReadError(f"{where}: sizes, strides and the offset must not be negative")
        count = math.prod(shape)
        if math.prod(n for n in shape if n) * storage.dtype.itemsize > _MAX_EXTENT:
            raise PyTorchReadError(
                f"{where}: its sizes' product (zeros left out) exceeds NumPy's largest array, "
                f"{_MAX_EXTENT} bytes"
            )
        if count == 0:
            return
        available = storage.data().size
        last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
        if last >= available:
            raise PyTorchReadError(
                f"{where}: reaches element {last} of storage {storage.key!r}, which holds {available} "
                f"{storage.dtype} elements"
            )
        excess = count * storage.dtype.itemsize
        if count > available and excess > storage.limits.max_expanded_bytes:
            raise PyTorchReadError(
                f"{where}: repeats its storage's {available} elements as {count} ({excess} bytes, over "
                f"ReadLimits.max_expanded_bytes = {storage.limits.max_expanded_bytes})"
            )

    def numpy(self) -> np.ndarray[Any, Any]:
        """The values (read-only when they map the file).

        Raises:
            PyTorchReadError: the view does not fit its storage (see ``check``).
        """
        self.check()
        if math.prod(self.shape) == 0:
            return np.zeros(self.shape, dtype=self.dtype)
        flat = self.storage.data()
        if self.stride == _contiguous_strides(self.shape):
            return flat[self.offset : self.offset + math.prod(self.shape)].reshape(self.shape)
        size = self.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            flat[self.offset :], shape=self.shape, strides=[s * size for s in self.stride], writeable=False
        )
        return np.array(view)

    def __repr__(self) -> str:
        return f"LazyArray(shape={list(self.shape)}, dtype={self.dtype})"


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
