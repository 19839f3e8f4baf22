"""``QuantizedData``: a quantized tensor's values on the host, with their scales and scheme."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._data import TensorData
from .._shape import Shape
from . import _codec
from ._scheme import QuantScheme


class QuantizedData:
    """A quantized tensor on the host (Burn's quantized ``TensorData``): the stored values (int8, float8
    or packed u32 words), the scales and the scheme; ``Tensor.from_data`` and ``Tensor.to_data`` take
    and give it, records store it.

    Args:
        values: the stored values: of the tensor's shape natively, or ``stored_count`` u32 words packed.
        scales: the scales, of ``scheme.scales_shape(shape)`` (one value per tensor: any shape of one
            element), in the scheme's scale dtype or convertible to it.
        scheme: the ``QuantScheme``.
        shape: the tensor's shape (default: ``values``' shape, natively stored values only).

    Raises:
        TypeError: ``scheme`` is not a QuantScheme, or the values' dtype is not the scheme's storage.
        ValueError: sizes of the values or scales that do not fit the shape and scheme.

    Example:
        >>> data = QuantizedData.quantize(TensorData([[1.0, -2.0], [0.5, 4.0]]), QuantScheme())
        >>> data.values.tolist(), data.dequantize().to_numpy()[1].tolist()
        ([[32, -64], [16, 127]], [0.5039370059967041, 4.0])
    """

    __slots__ = ("_scales", "_shape", "_values", "scheme")

    _values: np.ndarray[Any, Any]
    _scales: np.ndarray[Any, Any]

    def __init__(
        self, values: Any, scales: Any, scheme: QuantScheme, shape: Sequence[int] | None = None
    ) -> None:
        if not isinstance(scheme, QuantScheme):
            raise TypeError(f"QuantizedData: scheme must be a QuantScheme, got {scheme!r}")
        values = np.asarray(values)
        if shape is None:
            if scheme.values_per_word > 1:
                raise ValueError(f"QuantizedData: packed values ({scheme}) need the tensor's shape")
            shape = values.shape
        dims = tuple(Shape(shape))
        expected = scheme.storage_numpy
        if values.dtype != expected:
            raise TypeError(f"QuantizedData: values of {scheme} are stored as {expected}, got {values.dtype}")
        count = _codec.stored_count(scheme, dims)
        if values.size != count:
            raise ValueError(
                f"QuantizedData: shape {list(dims)} under {scheme} has {count} stored values, "
                f"got {values.size}"
            )
        if scheme.values_per_word == 1:
            values = values.reshape(dims)
        else:
            values = values.reshape(-1)
        scales = np.asarray(scales)
        scale_shape = scheme.scales_shape(dims)
        if scales.size != int(np.prod(scale_shape, dtype=np.int64)):
            raise ValueError(
                f"QuantizedData: shape {list(dims)} under {scheme} needs scales of shape "
                f"{list(scale_shape)}, "
                f"got {list(scales.shape)}"
            )
        if not np.issubdtype(scales.dtype, np.floating) and scales.dtype != scheme.param.dtype.numpy:
            raise TypeError(f"QuantizedData: scales must be floats, got {scales.dtype}")
        scales = scales.astype(scheme.param.dtype.numpy).reshape(scale_shape)
        values = np.array(values, copy=True, order="C")
        values.flags.writeable = False
        scales.flags.writeable = False
        self._values, self._scales, self._shape, self.scheme = values, scales, dims, scheme

    @classmethod
    def quantize(cls, data: TensorData, scheme: QuantScheme, scales: Any = None) -> QuantizedData:
        """``data`` (float values) quantized under ``scheme``, with ``scales`` or, by default, the dynamic
        ones (``max|x|`` of each block to the end of the value range)."""
        if not data.dtype.is_float:
            raise TypeError(f"QuantizedData.quantize: expected float data, got {data.dtype}")
        x = data.to_numpy()
        if scales is None:
            scales = _codec.dynamic_scales(_codec.NUMPY, x, scheme)
        else:
            scales = np.asarray(scales, dtype=scheme.param.dtype.numpy).reshape(scheme.scales_shape(x.shape))
        return cls(_codec.quantize(_codec.NUMPY, x, scales, scheme, "NumPy"), scales, scheme, x.shape)

    @property
    def shape(self) -> Shape:
        """The tensor's shape."""
        return Shape(self._shape)

    @property
    def values(self) -> np.ndarray[Any, Any]:
        """The stored values (read-only): int8 or float8 of the tensor's shape, or flat u32 words."""
        return self._values

    @property
    def scales(self) -> np.ndarray[Any, Any]:
        """The scales (read-only), of ``scheme.scales_shape(shape)`` in the scheme's scale dtype."""
        return self._scales

    def num_bytes(self) -> int:
        """Bytes of the values and scales."""
        return int(self._values.nbytes + self._scales.nbytes)

    def dequantize(self) -> TensorData:
        """The f32 numbers the values stand for."""
        numbers = _codec.dequantize(_codec.NUMPY, self._values, self._scales, self.scheme, self._shape)
        return TensorData._wrap(np.asarray(numbers, dtype=np.float32))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QuantizedData):
            return NotImplemented
        return (
            self.scheme == other.scheme
            and self._shape == other._shape
            and self._values.tobytes() == other._values.tobytes()
            and self._scales.tobytes() == other._scales.tobytes()
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"QuantizedData(shape={list(self._shape)}, scheme={self.scheme}, scales={self._scales.size})"
