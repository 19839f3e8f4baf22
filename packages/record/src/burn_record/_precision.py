"""Precision settings (Burn's ``PrecisionSettings``): the float and int dtypes a recorder stores, with
conversions that raise instead of changing a value that does not fit."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType, Kind

from ._errors import PrecisionError

__all__ = [
    "DoublePrecisionSettings",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "PrecisionSettings",
    "convert_checked",
    "settings_named",
]


class PrecisionSettings:
    """The dtypes a recorder stores tensors in: every float tensor as ``float_dtype`` and every signed
    int tensor as ``int_dtype``; bool and unsigned int tensors keep their dtype. Values are converted
    on save and on load; a value that does not fit (``1e5`` into f16, ``2**40`` into i32) raises
    rather than becoming ``inf`` or wrapping around. Plain numbers in a record are never converted.

    Use one of the three settings, as in Burn: ``FullPrecisionSettings`` (f32/i32, the default),
    ``HalfPrecisionSettings`` (f16/i16), ``DoublePrecisionSettings`` (f64/i64).

    Example:
        >>> HalfPrecisionSettings().float_dtype, HalfPrecisionSettings().int_dtype
        (DType.F16, DType.I16)
    """

    name: str = ""
    """The name written in a file's header: ``"full"``, ``"half"`` or ``"double"``."""
    float_dtype: DType = DType.F32
    """What float tensors are stored as."""
    int_dtype: DType = DType.I32
    """What signed int tensors are stored as."""

    def stored_dtype(self, dtype: DType) -> DType:
        """The dtype a tensor of ``dtype`` is stored in under these settings.

        Example:
            >>> full = FullPrecisionSettings()
            >>> full.stored_dtype(DType.F64), full.stored_dtype(DType.U8)
            (DType.F32, DType.U8)
        """
        if dtype.kind is Kind.FLOAT:
            return self.float_dtype
        if dtype.kind is Kind.INT and dtype.is_signed:
            return self.int_dtype
        return dtype

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PrecisionSettings) and (self.name, self.float_dtype, self.int_dtype) == (
            other.name,
            other.float_dtype,
            other.int_dtype,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.float_dtype, self.int_dtype))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FullPrecisionSettings(PrecisionSettings):
    """Floats as f32, signed ints as i32 (Burn's default).

    Example:
        >>> recorder = NamedMpkFileRecorder(FullPrecisionSettings())
    """

    name = "full"
    float_dtype = DType.F32
    int_dtype = DType.I32


class HalfPrecisionSettings(PrecisionSettings):
    """Floats as f16, signed ints as i16: half the file, for weights whose values fit f16's range
    (about ±65504).

    Example:
        >>> recorder = NamedMpkZstFileRecorder(HalfPrecisionSettings())
    """

    name = "half"
    float_dtype = DType.F16
    int_dtype = DType.I16


class DoublePrecisionSettings(PrecisionSettings):
    """Floats as f64, signed ints as i64: nothing an f64 or i64 model holds is rounded.

    Example:
        >>> recorder = BinFileRecorder(DoublePrecisionSettings())
    """

    name = "double"
    float_dtype = DType.F64
    int_dtype = DType.I64


_BY_NAME: dict[str, type[PrecisionSettings]] = {
    cls.name: cls for cls in (FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings)
}


def settings_named(name: str) -> PrecisionSettings | None:
    """The settings whose header name is ``name``, or ``None``."""
    cls = _BY_NAME.get(name)
    return None if cls is None else cls()


def _first_bad(bad: np.ndarray[Any, Any], source: np.ndarray[Any, Any]) -> str:
    """The first offending value and its index, for an error message."""
    flat = int(np.flatnonzero(bad.reshape(-1))[0])
    index = [int(i) for i in np.unravel_index(flat, source.shape)] if source.ndim else []
    value = source.reshape(-1)[flat]
    count = int(np.count_nonzero(bad))
    more = f" (and {count - 1} more)" if count > 1 else ""
    shown = f"{float(value):g}" if DType.of(source.dtype).kind is Kind.FLOAT else str(int(value))
    return f"{shown} at index {index}{more}"


def convert_checked(array: np.ndarray[Any, Any], dtype: DType, where: str) -> np.ndarray[Any, Any]:
    """``array`` converted to ``dtype``, or ``PrecisionError`` naming ``where`` and the first value that
    does not fit: a finite float that would become infinite, a float that is not finite or out of range
    for an int dtype, an int out of the target's range. Same dtype: ``array`` itself (no copy).
    Fractional floats converted to ints truncate toward zero, as ``TensorData.convert`` does.

    Example:
        >>> convert_checked(np.array([1e5], np.float32), DType.F16, "save: entry 'w'")
        Traceback (most recent call last):
        PrecisionError: save: entry 'w': 100000 at index [0] does not fit f16 (largest finite 65504)
    """
    target = dtype.numpy
    if array.dtype == target:
        return array
    source = DType.of(array.dtype)
    if dtype.kind is Kind.FLOAT:
        with np.errstate(all="ignore"):
            converted = array.astype(target)
        if source.kind is not Kind.BOOL:
            bad = np.isinf(converted)  # a finite value becoming infinite: the only way to overflow
            if source.kind is Kind.FLOAT and bad.any():
                bad &= np.isfinite(array)
            if bad.any():
                largest = float(np.finfo(target).max)
                raise PrecisionError(
                    f"{where}: {_first_bad(bad, array)} does not fit {dtype} (largest finite {largest:g})"
                )
        return converted
    if dtype.kind is Kind.INT:
        info = np.iinfo(target)
        if source.kind is Kind.FLOAT:
            with np.errstate(all="ignore"):
                wide = array.astype(np.float64)
                bad = ~np.isfinite(wide) | (wide < float(info.min)) | (wide >= float(info.max) + 1.0)
        elif source.kind is Kind.INT:
            low, high = np.iinfo(array.dtype).min, np.iinfo(array.dtype).max
            if low >= info.min and high <= info.max:
                return array.astype(target)
            bad = (array < info.min) if low < info.min else np.zeros(array.shape, bool)
            if high > info.max:
                bad = bad | (array > info.max)
        else:
            return array.astype(target)
        if bad.any():
            raise PrecisionError(
                f"{where}: {_first_bad(bad, array)} does not fit {dtype} (range {info.min} to {info.max})"
            )
        with np.errstate(all="ignore"):
            return array.astype(target)
    raise PrecisionError(f"{where}: cannot convert {DType.of(array.dtype)} to {dtype}")
