"""What the op-family tests share: dtype groups, inputs laid out in memory in several ways, tolerances
for accumulating ops and the marks of known bugs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from burn_backend import Device, DType, Tensor, Tolerance
from burn_backend.testing import FLOAT_DTYPES, INT_DTYPES, make

ALL_DTYPES = (*FLOAT_DTYPES, *INT_DTYPES, DType.BOOL)
SIGNED_INT_DTYPES = tuple(d for d in INT_DTYPES if d.is_signed)
UNSIGNED_INT_DTYPES = tuple(d for d in INT_DTYPES if not d.is_signed)

LAYOUTS = ("contiguous", "swapped", "flipped", "strided")


def laid_out(array: np.ndarray[Any, Any], device: Device, layout: str, dtype: DType | None = None) -> Tensor:
    """A tensor of ``array``'s values that is the result of a layout op (swap_dims, flip or a stepped
    slice), so that backends with strided primitives get inputs that are not contiguous."""
    array = np.asarray(array)
    if layout == "contiguous" or array.ndim == 0:
        return make(array, device, dtype)
    if layout == "swapped":
        return make(np.ascontiguousarray(np.swapaxes(array, 0, -1)), device, dtype).swap_dims(0, -1)
    if layout == "flipped":
        return make(np.ascontiguousarray(np.flip(array, 0)), device, dtype).flip([0])
    if layout == "strided":
        padded = np.empty((2 * array.shape[0], *array.shape[1:]), dtype=array.dtype)
        padded[0::2] = array
        padded[1::2] = np.flip(array, 0)
        return make(padded, device, dtype).slice([slice(None, None, 2)])
    raise ValueError(f"unknown layout {layout}")


def values(tensor: Tensor) -> np.ndarray[Any, Any]:
    """The tensor's values as a NumPy array of its dtype."""
    return np.asarray(tensor.to_data().to_numpy())


def f64(array: Any) -> np.ndarray[Any, Any]:
    """``array`` in float64, the precision of the references."""
    return np.asarray(array).astype(np.float64)


def accumulated(dtype: DType, magnitude: float) -> Tolerance:
    """The tolerance of ``dtype`` for a result accumulated from terms whose absolute values add up to
    ``magnitude``: rounding in a sum is relative to that, not to the (possibly cancelled) result."""
    base = Tolerance.for_dtype(dtype)
    return Tolerance(base.relative, base.absolute + 2 * base.relative * float(magnitude))


def nonzero_floats(
    rng: np.random.Generator, shape: Sequence[int], dtype: DType, low: float = 0.5, high: float = 2.0
) -> np.ndarray[Any, Any]:
    """Floats of ``dtype`` with magnitudes in [low, high) and random signs."""
    magnitudes = rng.uniform(low, high, tuple(shape))
    signs = rng.choice([-1.0, 1.0], tuple(shape))
    drawn: np.ndarray[Any, Any] = (magnitudes * signs).astype(dtype.numpy)
    return drawn


def powers_of_two(rng: np.random.Generator, shape: Sequence[int], dtype: DType) -> np.ndarray[Any, Any]:
    """Divisors that make division exact in every float dtype: +-0.5, +-1, +-2, +-4."""
    return rng.choice([-4.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0], tuple(shape)).astype(dtype.numpy)


def ints(
    rng: np.random.Generator, shape: Sequence[int], dtype: DType, low: int, high: int
) -> np.ndarray[Any, Any]:
    """Integers of ``dtype`` in [low, high] (clipped to the dtype's range)."""
    info = np.iinfo(dtype.numpy)
    low, high = max(low, int(info.min)), min(high, int(info.max))
    drawn: np.ndarray[Any, Any] = rng.integers(low, high, tuple(shape), dtype=dtype.numpy, endpoint=True)
    return drawn


def index_tensor(indices: Any, device: Device) -> Tensor:
    """An Int tensor of ``indices`` in the backend's int dtype (the dtype of indices it returns)."""
    return make(np.asarray(indices), device, device.backend.int_dtype)
