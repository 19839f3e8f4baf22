"""``TensorData``: a tensor's values on the host (bytes, shape and dtype), and ``Tolerance``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._dtype import DType, Kind
from ._shape import Shape


@dataclass(frozen=True)
class Tolerance:
    """How close two float values must be: ``|a - b| <= absolute + relative * |b|``.

    ``Tolerance.for_dtype`` gives the default for a dtype; ``strict`` / ``permissive`` scale it.
    """

    relative: float
    absolute: float

    @staticmethod
    def for_dtype(dtype: DType) -> Tolerance:
        """The default tolerance for results computed in ``dtype``."""
        return _DEFAULT_TOLERANCE.get(dtype, Tolerance(0.0, 0.0))

    def scaled(self, factor: float) -> Tolerance:
        """This tolerance, ``factor`` times looser."""
        return Tolerance(self.relative * factor, self.absolute * factor)

    @staticmethod
    def strict(dtype: DType) -> Tolerance:
        """A tenth of the default for ``dtype``."""
        return Tolerance.for_dtype(dtype).scaled(0.1)

    @staticmethod
    def permissive(dtype: DType) -> Tolerance:
        """Ten times the default for ``dtype``."""
        return Tolerance.for_dtype(dtype).scaled(10.0)


_DEFAULT_TOLERANCE = {
    DType.F64: Tolerance(1e-9, 1e-12),
    DType.F32: Tolerance(1e-5, 1e-6),
    DType.F16: Tolerance(2e-3, 1e-4),
    DType.BF16: Tolerance(1.6e-2, 1e-3),
}


def _infer_dtype(values: Any) -> DType:
    """Burn's defaults for host values: Python floats -> f32, ints -> i64, bools -> bool."""
    array = np.asarray(values)
    if array.dtype == np.bool_:
        return DType.BOOL
    if np.issubdtype(array.dtype, np.integer):
        return DType.I64
    if np.issubdtype(array.dtype, np.floating):
        return DType.F32
    raise TypeError(f"TensorData: cannot hold values of NumPy type {array.dtype}; expected numbers or bools")


def _abbreviated(values: Any, limit: int = 80) -> str:
    text = repr(values)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class TensorData:
    """A tensor's values on the host: its bytes, ``shape`` and ``dtype``.

    Args:
        values: nested lists or scalars of numbers or bools, a NumPy array, or another TensorData.
        dtype: the element type; by default the NumPy array's, or for Python values f32 for floats,
            i64 for ints and bool for bools (Burn's defaults).
        shape: reshape the values to this shape (same number of elements).

    Example:
        >>> data = TensorData([[1.0, 2.0], [3.0, 4.0]])
        >>> data.shape, data.dtype
        (Shape([2, 2]), DType.F32)
    """

    __slots__ = ("_array",)

    _array: np.ndarray[Any, Any]

    def __init__(
        self, values: Any, dtype: DType | str | None = None, shape: Sequence[int] | None = None
    ) -> None:
        if isinstance(values, TensorData):
            values = values._array
        if isinstance(values, np.ndarray):
            source_dtype = DType.of(values.dtype)
            target = source_dtype if dtype is None else DType.of(dtype)
            array = np.array(values, dtype=target.numpy, copy=True, order="C")
        else:
            try:
                target = _infer_dtype(values) if dtype is None else DType.of(dtype)
                array = np.array(values, dtype=target.numpy, copy=True, order="C")
            except ValueError as error:
                if "inhomogeneous" not in str(error):
                    raise
                raise ValueError(
                    f"TensorData: the nested sequences are ragged (lengths differ at one depth), so they "
                    f"have no shape: {_abbreviated(values)}"
                ) from None
        if shape is not None:
            shape = Shape(shape)
            if shape.num_elements() != array.size:
                raise ValueError(
                    f"TensorData: {array.size} values cannot take shape {list(shape)} "
                    f"({shape.num_elements()} elements)"
                )
            array = array.reshape(shape)
        array.flags.writeable = False
        self._array = array

    @classmethod
    def from_numpy(cls, array: np.ndarray[Any, Any], *, copy: bool = True) -> TensorData:
        """The values of a NumPy array, whose dtype must be one of ``DType``'s.

        With ``copy=False`` a C-contiguous array is not copied: the data is a read-only view of it, which
        is how a backend's ``*_into_data`` hands over the values of a primitive (the array must not be
        written to afterwards, as a backend never mutates a primitive). Any other array is copied once.

        Raises:
            TypeError: the array's dtype is not one of ``DType``'s.
        """
        array = np.asarray(array)
        if copy:
            return cls(array)
        DType.of(array.dtype)  # raises for a dtype that TensorData cannot hold
        return cls._wrap(array)

    @classmethod
    def from_bytes(cls, data: bytes, shape: Sequence[int], dtype: DType | str) -> TensorData:
        """Values from their little-endian bytes in C order."""
        dtype = DType.of(dtype)
        shape = Shape(shape)
        expected = shape.num_elements() * dtype.size
        if len(data) != expected:
            raise ValueError(
                f"TensorData.from_bytes: {len(data)} bytes given; "
                f"shape {list(shape)} of {dtype} needs {expected}"
            )
        array = np.frombuffer(data, dtype=dtype.numpy.newbyteorder("<")).astype(dtype.numpy).reshape(shape)
        return cls._wrap(array)

    @classmethod
    def _wrap(cls, array: np.ndarray[Any, Any]) -> TensorData:
        """Take ``array`` as it is, without copying (the caller hands over ownership)."""
        data = cls.__new__(cls)
        # a read-only view: the caller's array (a backend's primitive, say) keeps its own flags
        view = np.asarray(array, order="C").view()
        view.flags.writeable = False
        data._array = view
        return data

    @property
    def shape(self) -> Shape:
        """The dimensions."""
        return Shape(self._array.shape)

    @property
    def dtype(self) -> DType:
        """The element type."""
        return DType.of(self._array.dtype)

    @property
    def kind(self) -> Kind:
        """The tensor kind of the element type."""
        return self.dtype.kind

    @property
    def bytes(self) -> bytes:
        """The values' little-endian bytes in C order."""
        array = self._array
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        return array.tobytes()

    def num_elements(self) -> int:
        """How many values there are."""
        return int(self._array.size)

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """The values as a read-only NumPy array (no copy)."""
        return self._array

    def tolist(self) -> Any:
        """The values as nested Python lists (a scalar for rank 0)."""
        if self._array.dtype == DType.BF16.numpy:
            return self._array.astype(np.float32).tolist()
        return self._array.tolist()

    def convert(self, dtype: DType | str) -> TensorData:
        """The values converted to ``dtype`` (floats to ints truncate toward zero)."""
        dtype = DType.of(dtype)
        if dtype.numpy == self._array.dtype:
            return self
        with np.errstate(all="ignore"):  # out-of-range values convert as NumPy does, silently
            return TensorData._wrap(self._array.astype(dtype.numpy))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorData):
            return NotImplemented
        return self._array.dtype == other._array.dtype and bool(
            np.array_equal(self._array, other._array, equal_nan=self.dtype.is_float)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        values = np.array2string(
            np.asarray(self._array, dtype=np.float64) if self.dtype is DType.BF16 else self._array,
            separator=", ",
        )
        return f"TensorData({values}, dtype={self.dtype}, shape={list(self._array.shape)})"

    def assert_eq(self, other: TensorData | Any, strict: bool = True) -> None:
        """Assert equal values and shape, and with ``strict`` the same dtype.

        Raises:
            AssertionError: naming the first differing positions and values.
        """
        other = other if isinstance(other, TensorData) else TensorData(other)
        self._check_shape(other, "assert_eq")
        if strict and self.dtype != other.dtype:
            raise AssertionError(f"assert_eq: dtypes differ: {self.dtype} and {other.dtype}")
        actual, expected = self._array, other._array
        if self.kind is Kind.FLOAT or other.kind is Kind.FLOAT:
            actual, expected = actual.astype(np.float64), expected.astype(np.float64)
            same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
        else:
            same = actual == expected
        self._report(same, actual, expected, "assert_eq")

    def assert_approx_eq(self, other: TensorData | Any, tolerance: Tolerance | None = None) -> None:
        """Assert values within ``tolerance`` (by default the one for this data's dtype).

        NaNs must match NaNs and infinities must match exactly.

        Raises:
            AssertionError: naming the first differing positions, values and the largest error.
        """
        other = other if isinstance(other, TensorData) else TensorData(other)
        self._check_shape(other, "assert_approx_eq")
        if tolerance is None:
            tolerance = Tolerance.for_dtype(self.dtype)
        actual = self._array.astype(np.float64)
        expected = other._array.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            bound = tolerance.absolute + tolerance.relative * np.abs(expected)
            # an infinite expected value admits only itself: its relative bound would admit anything
            close = np.isfinite(expected) & (np.abs(actual - expected) <= bound)
        close |= (actual == expected) | (np.isnan(actual) & np.isnan(expected))
        self._report(close, actual, expected, f"assert_approx_eq ({tolerance})")

    def _check_shape(self, other: TensorData, op: str) -> None:
        if self._array.shape != other._array.shape:
            raise AssertionError(
                f"{op}: shapes differ: {list(self._array.shape)} and {list(other._array.shape)}"
            )

    @staticmethod
    def _report(
        ok: np.ndarray[Any, Any], actual: np.ndarray[Any, Any], expected: np.ndarray[Any, Any], op: str
    ) -> None:
        if bool(np.all(ok)):
            return
        bad = np.argwhere(~ok) if ok.ndim else np.zeros((1, 0), dtype=np.int64)
        lines = [f"{op}: {len(bad)} of {ok.size} values differ"]
        for index in bad[:5]:
            position = tuple(int(i) for i in index)
            lines.append(
                f"  at {list(position)}: {actual[position].item()!r} != {expected[position].item()!r}"
            )
        if actual.dtype.kind == "f":
            with np.errstate(invalid="ignore", over="ignore"):
                errors = np.abs(actual - expected)[~ok]
            errors = errors[np.isfinite(errors)]
            if errors.size:
                lines.append(f"  largest finite absolute error: {errors.max():.3g}")
        raise AssertionError("\n".join(lines))
