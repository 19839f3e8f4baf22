"""Element types (``DType``) and tensor kinds (``Kind``)."""

from __future__ import annotations

import enum
from typing import Any

import ml_dtypes
import numpy as np


class Kind(enum.Enum):
    """The kind of a tensor: what its elements mean. Each dtype belongs to exactly one kind."""

    FLOAT = "float"
    INT = "int"
    BOOL = "bool"

    prefix: str
    """The prefix of this kind's backend methods (``"float_"``): a plain attribute, read on every op."""

    # members are singletons compared by identity: hashed by identity too, in C, rather than by
    # ``Enum.__hash__`` (a Python call on every dict lookup keyed by a kind or a dtype, several per op)
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return self.name.capitalize()


for _kind in Kind:
    _kind.prefix = f"{_kind.value}_"


Float = Kind.FLOAT
"""The float kind; ``dtype=Float`` asks for the device's default float dtype."""
Int = Kind.INT
"""The int kind; ``dtype=Int`` asks for the device's default int dtype."""
Bool = Kind.BOOL
"""The bool kind."""


class DType(enum.Enum):
    """An element type. ``DType.of`` maps NumPy dtypes, names (``"f32"``) and Python types to one.

    Example:
        >>> DType.of("f32") is DType.F32 and DType.F32.kind is Kind.FLOAT
        True
    """

    F64 = "f64"
    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"
    I64 = "i64"
    I32 = "i32"
    I16 = "i16"
    I8 = "i8"
    U64 = "u64"
    U32 = "u32"
    U16 = "u16"
    U8 = "u8"
    BOOL = "bool"

    __hash__ = object.__hash__  # as Kind's

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    def __str__(self) -> str:
        return self.value

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype that stores this element type (bf16 through ml_dtypes)."""
        return _TO_NUMPY[self]

    @property
    def kind(self) -> Kind:
        """The tensor kind of this dtype."""
        return _KIND[self]

    @property
    def is_float(self) -> bool:
        """Whether this is a floating-point dtype."""
        return _KIND[self] is Kind.FLOAT

    @property
    def is_int(self) -> bool:
        """Whether this is an integer dtype, signed or not."""
        return _KIND[self] is Kind.INT

    @property
    def is_signed(self) -> bool:
        """Whether values below zero are representable."""
        return self.is_float or self.value.startswith("i")

    @property
    def size(self) -> int:
        """Bytes per element."""
        return int(_TO_NUMPY[self].itemsize)

    @staticmethod
    def of(value: object) -> DType:
        """The dtype named by ``value``: a DType, a NumPy dtype or scalar type, a name like ``"f32"``, or
        a dtype object of another array library made known by ``register_dtype``.

        Raises:
            TypeError: ``value`` names no supported dtype.
        """
        # NumPy's dtypes and DType's members are singletons: found by identity, without hashing
        found = _BY_ID.get(id(value))
        if found is not None:
            return found
        foreign = _FOREIGN.get(type(value))
        if foreign is not None:  # compared only with dtypes of its own library
            found = foreign.get(value)
        else:
            found = _lookup(value)
        if found is None:
            raise TypeError(f"{value!r} is not a supported dtype; expected one of {[d.value for d in DType]}")
        return found


_TO_NUMPY: dict[DType, np.dtype[Any]] = {
    DType.F64: np.dtype(np.float64),
    DType.F32: np.dtype(np.float32),
    DType.F16: np.dtype(np.float16),
    DType.BF16: np.dtype(ml_dtypes.bfloat16),
    DType.I64: np.dtype(np.int64),
    DType.I32: np.dtype(np.int32),
    DType.I16: np.dtype(np.int16),
    DType.I8: np.dtype(np.int8),
    DType.U64: np.dtype(np.uint64),
    DType.U32: np.dtype(np.uint32),
    DType.U16: np.dtype(np.uint16),
    DType.U8: np.dtype(np.uint8),
    DType.BOOL: np.dtype(np.bool_),
}
_FLOATS = {DType.F64, DType.F32, DType.F16, DType.BF16}
_KIND = {d: Kind.FLOAT if d in _FLOATS else Kind.BOOL if d is DType.BOOL else Kind.INT for d in DType}
_LOOKUP: dict[object, DType] = {}
for _dtype, _np in _TO_NUMPY.items():
    _LOOKUP[_dtype] = _dtype
    _LOOKUP[_dtype.value] = _dtype
    _LOOKUP[_np] = _dtype
    _LOOKUP[_np.type] = _dtype
_LOOKUP[float] = DType.F64
_LOOKUP[int] = DType.I64
_LOOKUP[bool] = DType.BOOL


def _lookup(value: object) -> DType | None:
    try:
        found = _LOOKUP.get(value)
    except TypeError:  # unhashable
        found = None
    if found is None and value is not None:  # None would silently mean float64
        try:  # NumPy's names and types too ("float64", np.int8)
            found = _LOOKUP.get(np.dtype(value))  # type: ignore[call-overload]
        except TypeError:
            found = None
    return found


_BY_ID: dict[int, DType] = {id(key): dtype for key, dtype in _LOOKUP.items()}  # the keys live on in _LOOKUP
_FOREIGN: dict[type, dict[object, DType]] = {}

KIND_OF_TYPE: dict[type, Kind] = {type(np_dtype): _KIND[d] for d, np_dtype in _TO_NUMPY.items()}
"""The type of a NumPy dtype (one class per dtype: ``numpy.dtypes.Float32DType``) -> kind, for the hot path:
primitives of array backends mostly carry NumPy dtypes. Keyed by type, the lookup never compares a
NumPy dtype with another library's (``array_api_strict``'s warn)."""


KIND_OF_ID: dict[int, Kind] = {id(d): _KIND[d] for d in DType}
"""``id`` of a ``DType`` member -> kind, for the hot path of primitives that carry our own dtypes (the
decorators' primitives: Fusion's lazy tensors); members are singletons, alive as long as the class."""


def kind_of(dtype: object) -> Kind:
    """The kind of a primitive's ``dtype`` attribute (anything ``DType.of`` accepts)."""
    kind = KIND_OF_TYPE.get(type(dtype))
    if kind is None:
        kind = KIND_OF_ID.get(id(dtype))
    return kind if kind is not None else DType.of(dtype).kind


def register_dtype(value: object, dtype: DType) -> None:
    """Make ``DType.of`` map ``value`` (and every object equal to it), a dtype object of an array library
    whose dtypes are not NumPy's, to ``dtype``. ``ArrayRuntime`` registers its namespace's dtypes.

    Such objects are looked up among the registered objects of their own type only, never compared with
    NumPy's dtypes (``array_api_strict``'s dtypes hash like NumPy's and warn when compared with them).
    """
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        raise TypeError(f"{value!r} is a NumPy dtype: DType.of knows NumPy's dtypes already")
    _FOREIGN.setdefault(type(value), {})[value] = dtype
