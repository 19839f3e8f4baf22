"""The core of ``Tensor``: the primitive and device it holds, dispatch to the backend, and the checks
that every op shares (kinds, dtypes, devices, shapes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._device import Device
from ._dtype import KIND_OF_ID, KIND_OF_TYPE, DType, Kind
from ._shape import Shape, broadcast_shapes, normalize_dim
from .quantization._scheme import QuantScheme

if TYPE_CHECKING:
    from ._backend import Backend
    from ._tensor import Tensor

DeviceLike = Device | str | None
DTypeLike = DType | Kind | str | None
ShapeLike = Sequence[int]
Number = int | float | bool
NDArray = np.ndarray[Any, Any]

KIND_NAMES = {Kind.FLOAT: "Float", Kind.INT: "Int", Kind.BOOL: "Bool"}

# the range of each int dtype, by the type of NumPy's dtype object and by DType (filled on first use)
_INT_RANGES: dict[Any, tuple[int, int]] = {}


def _article(noun: str) -> str:
    return "an" if noun[:1] in "AEIOU" else "a"


def int_range(dtype: Any) -> tuple[int, int]:
    """The smallest and largest value of an int dtype (a primitive's ``dtype``)."""
    bounds = _INT_RANGES.get(type(dtype))  # by type: never compares NumPy's dtypes with another library's
    if bounds is None:
        found = DType.of(dtype)
        bounds = _INT_RANGES.get(found)
        if bounds is None:
            info = np.iinfo(found.numpy)
            bounds = _INT_RANGES[found] = (int(info.min), int(info.max))
        if type(dtype) in KIND_OF_TYPE:  # NumPy's dtype classes, one per dtype
            _INT_RANGES[type(dtype)] = bounds
    return bounds


def shape_arg(op: str, shape: ShapeLike | int) -> tuple[int, ...]:
    """A creation op's shape argument (a sequence of ints, or one int) as a tuple, or a clear error."""
    if isinstance(shape, int):
        return (shape,)
    try:
        return tuple(Shape(shape))
    except (TypeError, ValueError) as error:
        raise type(error)(f"{op}: {error}") from None


def unreadable_primitive(primitive: Any, device: Device) -> TypeError:
    """The error for a primitive whose ``dtype`` ``DType.of`` does not accept: a backend defect."""
    return TypeError(
        f"{device.backend.stack_name}: a primitive of type {type(primitive).__name__} has dtype "
        f"{getattr(primitive, 'dtype', None)!r}, which DType.of does not accept. A backend's primitives must "
        "have `shape`, a tuple of ints, and `dtype`, a NumPy dtype or a DType; the conformance suite names "
        "the op that returned one that does not"
    )


def device_difference(device: Device, other: Device) -> str:
    """What tells two unequal devices apart when they print alike (two backends of one name whose
    settings differ), in parentheses after a space; empty when their names already differ."""
    if str(device) != str(other):
        return ""
    a, b = device.backend, other.backend
    if type(a) is not type(b):
        return f" (backends of different classes, {type(a).__qualname__} and {type(b).__qualname__})"
    differing = [
        f"{name} {getattr(a, name)} vs {getattr(b, name)}"
        for name in ("float_dtype", "int_dtype")
        if getattr(a, name, None) != getattr(b, name, None)
    ]
    if differing:
        return f" (backends with different settings: {', '.join(differing)})"
    return f" (backends with different settings: {a!r} vs {b!r})"


def device_mismatch(op: str, device: Device, other: Device) -> str:
    """The message of an op given tensors of two devices, saying what differs where they print alike."""
    return f"{op}: tensors are on different devices, {device} and {other}{device_difference(device, other)}"


class TensorBase:
    """Holds a backend primitive and its device; the op families of ``Tensor`` build on this."""

    __slots__ = ("__weakref__", "_device", "_primitive")

    _primitive: Any
    _device: Device

    def __init__(self, primitive: Any, device: Device) -> None:
        self._primitive = primitive
        self._device = device

    # -- what the tensor is -----------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        """The dimensions, as a ``Shape``."""
        return Shape(self._primitive.shape)

    def dims(self) -> list[int]:
        """The dimensions, as a list (Burn's ``dims``)."""
        return list(self._primitive.shape)

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self._primitive.shape)

    ndim = rank

    @property
    def dtype(self) -> DType:
        """The element type."""
        try:
            return DType.of(self._primitive.dtype)
        except (TypeError, AttributeError):
            if type(getattr(self._primitive, "dtype", None)) is QuantScheme:
                raise TypeError(
                    f"dtype: the tensor is quantized; its dtype is the QuantScheme {self._primitive.dtype} "
                    "(read it with .quant_scheme, or dequantize() it for a float dtype)"
                ) from None
            raise unreadable_primitive(self._primitive, self._device) from None

    @property
    def kind(self) -> Kind:
        """Float, Int or Bool."""
        dtype = self._primitive.dtype
        kind = KIND_OF_TYPE.get(type(dtype))
        if kind is None:
            kind = KIND_OF_ID.get(id(dtype))
            if kind is None and type(dtype) is QuantScheme:  # quantized values stand for floats
                return Kind.FLOAT
        return kind if kind is not None else self.dtype.kind

    @property
    def device(self) -> Device:
        """The device the tensor lives on."""
        return self._device

    @property
    def backend(self) -> Backend:
        """The backend of the tensor's device."""
        return self._device.backend

    @property
    def primitive(self) -> Any:
        """The backend's own representation (opaque to everyone but that backend)."""
        return self._primitive

    def num_elements(self) -> int:
        """The number of elements."""
        count = 1
        for size in self._primitive.shape:
            count *= size
        return count

    # -- dispatch ---------------------------------------------------------------------------------
    @property
    def _cls(self) -> type[Tensor]:
        """This tensor's class, for the creation ops that the op families below ``Tensor`` call."""
        return type(self)  # type: ignore[return-value]

    @property
    def _prefix(self) -> str:
        """The prefix of this tensor's backend ops: its kind's (``"float_"``), or ``"q_"`` when quantized."""
        return "q_" if type(self._primitive.dtype) is QuantScheme else self.kind.prefix

    def _op(self, name: str) -> Any:
        """The backend method ``<kind>_<name>`` for this tensor's kind (``q_<name>`` when quantized)."""
        prefix = self._prefix
        if prefix == "q_":
            method = getattr(self._device.backend, prefix + name, None)
            if method is None:
                raise TypeError(
                    f"{name}: not defined on quantized tensors (a {self._describe()}); dequantize() it first"
                )
            return method
        return getattr(self._device.backend, prefix + name)

    def _new(self, primitive: Any) -> Tensor:
        """A tensor on this tensor's device around ``primitive``."""
        out = object.__new__(type(self))
        out._primitive = primitive
        out._device = self._device
        return out  # type: ignore[return-value]

    # -- checks -----------------------------------------------------------------------------------
    def _describe(self) -> str:
        if type(self._primitive.dtype) is QuantScheme:
            return f"quantized Float {self._primitive.dtype} tensor of shape {list(self._primitive.shape)}"
        return f"{KIND_NAMES[self.kind]} {self.dtype} tensor of shape {list(self._primitive.shape)}"

    def _require_kind(self, op: str, *kinds: Kind) -> Kind:
        kind = self.kind
        if kind not in kinds:
            wanted = " or ".join(KIND_NAMES[k] for k in kinds)
            hint = " (convert with .float())" if Kind.FLOAT in kinds else ""
            article = "an" if wanted.startswith("I") else "a"
            got = self._describe()
            raise TypeError(f"{op}: expected {article} {wanted} tensor, got {_article(got)} {got}{hint}")
        return kind

    def _check_other(self, op: str, other: object) -> TensorBase:
        """``other`` as a tensor of this tensor's kind, dtype and device, or a clear error."""
        if not isinstance(other, TensorBase):
            raise TypeError(f"{op}: expected a Tensor, got {type(other).__name__}")
        p, q = self._primitive, other._primitive
        if p.dtype != q.dtype:
            raise TypeError(
                f"{op}: dtypes differ: {self._describe()} and {other._describe()}; "
                f"there is no implicit promotion, cast one side with .cast(...)"
            )
        device = self._device
        if device is not other._device and device != other._device:
            raise ValueError(f"{device_mismatch(op, device, other._device)}; move one with .to_device(...)")
        return other

    def _check_binary(self, op: str, other: object) -> TensorBase:
        """As ``_check_other``, and the shapes must broadcast (NumPy's rule)."""
        checked = self._check_other(op, other)
        if self._primitive.shape != checked._primitive.shape:
            broadcast_shapes(op, tuple(self._primitive.shape), tuple(checked._primitive.shape))
        return checked

    def _binary_primitives(self, op: str, other: object) -> tuple[Any, Any]:
        """The primitives of this tensor and ``other`` (checked as by ``_check_binary``), the one of
        lower rank reshaped with leading dims of size 1: backends and decorators see one rank, and
        autodiff sums the gradient of a stretched operand back through that reshape."""
        checked = self._check_other(op, other)
        p, q = self._primitive, checked._primitive
        if p.shape != q.shape:
            broadcast_shapes(op, tuple(p.shape), tuple(q.shape))
            rank = max(len(p.shape), len(q.shape))
            if len(p.shape) != len(q.shape):
                kind = self.kind
                p, q = self._with_rank(p, rank, kind), self._with_rank(q, rank, kind)
        return p, q

    def _with_rank(self, primitive: Any, rank: int, kind: Kind) -> Any:
        """``primitive`` (of ``kind``) with leading dims of size 1 up to ``rank``."""
        shape = tuple(primitive.shape)
        if len(shape) == rank:
            return primitive
        reshape = getattr(self._device.backend, kind.prefix + "reshape")
        return reshape(primitive, (1,) * (rank - len(shape)) + shape)

    def _check_device_of(self, op: str, other: TensorBase) -> None:
        device = self._device
        if device is not other._device and device != other._device:
            raise ValueError(device_mismatch(op, device, other._device))

    def _check_indices(self, op: str, indices: object) -> TensorBase:
        if not isinstance(indices, TensorBase) or indices.kind is not Kind.INT:
            got = indices._describe() if isinstance(indices, TensorBase) else type(indices).__name__
            raise TypeError(f"{op}: indices must be an Int tensor, got {got}")
        self._check_device_of(op, indices)
        return indices

    def _check_index_values(self, op: str, indices: TensorBase, dim: int) -> None:
        """Raise unless every value of ``indices`` lies in ``[0, size)`` of ``dim``: a negative index is
        an error, not counted from the end (as in Burn and PyTorch). Only where the backend
        ``validates_index_values``: elsewhere the read would wait for the device."""
        backend = self._device.backend
        primitive = indices._primitive
        if not backend.validates_index_values or 0 in tuple(primitive.shape):
            return
        values = backend.int_into_data(primitive).to_numpy()
        low, high = int(values.min()), int(values.max())
        size = self._primitive.shape[dim]
        if low < 0:
            raise IndexError(
                f"{op}: index {low} is negative; indices along dim {dim} (of size {size}) must lie in "
                f"[0, {size}), negative ones are not counted from the end"
            )
        if high >= size:
            raise IndexError(
                f"{op}: index {high} is out of range for dim {dim} of size {size} (of {self.dims()})"
            )

    def _check_mask(self, op: str, mask: object) -> TensorBase:
        """``mask`` as a Bool tensor on this tensor's device (its shape is checked by each op)."""
        if not isinstance(mask, TensorBase) or mask.kind is not Kind.BOOL:
            got = mask._describe() if isinstance(mask, TensorBase) else type(mask).__name__
            raise TypeError(f"{op}: mask must be a Bool tensor, got {got}")
        self._check_device_of(op, mask)
        return mask

    def _dim(self, op: str, dim: int) -> int:
        return normalize_dim(op, dim, len(self._primitive.shape))

    def _dims(self, op: str, dims: Sequence[int]) -> list[int]:
        rank = len(self._primitive.shape)
        out = [normalize_dim(op, d, rank) for d in dims]
        if len(set(out)) != len(out):
            raise ValueError(f"{op}: repeated dims in {list(dims)}")
        return out

    def _scalar(self, op: str, value: object, in_range: bool = True) -> Any:
        """A Python scalar converted for this tensor's kind: no silent truncation of floats to ints, and
        (unless ``in_range`` is false) no int outside the range of an Int tensor's dtype."""
        kind = self.kind
        if kind is Kind.FLOAT:
            if type(value) is float:  # the common case, first: nothing to check or convert
                return value
            if isinstance(value, (bool, complex)) or not isinstance(value, (int, float)):
                if hasattr(value, "__float__") and not isinstance(value, (bool, complex, TensorBase)):
                    return float(value)
                raise TypeError(f"{op}: expected a number for a {self._describe()}, got {value!r}")
            return float(value)
        if kind is Kind.INT:
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise TypeError(
                    f"{op}: expected an int for an {self._describe()}, got {value!r}; "
                    f"convert the tensor with .float() to combine it with floats"
                )
            number = int(value)
            if in_range:
                low, high = int_range(self._primitive.dtype)
                if not low <= number <= high:
                    raise OverflowError(
                        f"{op}: {number} is outside the range [{low}, {high}] of the {self._describe()}; "
                        f"cast the tensor to a wider dtype with .cast(...)"
                    )
            return number
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise TypeError(f"{op}: expected a bool for a {self._describe()}, got {value!r}")
        return bool(value)


def check_same_rank(op: str, tensors: Sequence[TensorBase]) -> None:
    """All tensors of one kind, dtype, device and rank, or a clear error."""
    if not tensors:
        raise ValueError(f"{op}: expected at least one tensor")
    first = tensors[0]
    for other in tensors[1:]:
        first._check_other(op, other)
        if len(other._primitive.shape) != len(first._primitive.shape):
            raise ValueError(
                f"{op}: tensors must have the same rank, got shapes "
                f"{[list(t._primitive.shape) for t in tensors]}"
            )


class KindConversions(TensorBase):
    """``float``, ``int``, ``bool`` and ``cast``: in their own class so that, inside ``Tensor``, the
    names ``float``, ``int`` and ``bool`` still mean the builtin types."""

    __slots__ = ()

    def float(self, dtype: DType | str | None = None) -> Tensor:
        """This tensor as Float (the device's float dtype unless ``dtype`` is given)."""
        kind = self.kind
        backend = self._device.backend
        target = backend.float_dtype if dtype is None else DType.of(dtype)
        if not target.is_float:
            raise TypeError(f"float: {target} is not a float dtype")
        if type(self._primitive.dtype) is QuantScheme:  # the numbers it stands for
            return self._new(backend.dequantize(self._primitive)).float(target)
        if kind is Kind.FLOAT:
            return (
                cast("Tensor", self)
                if target == self.dtype
                else self._new(backend.float_cast(self._primitive, target))
            )
        return self._new(getattr(backend, kind.prefix + "into_float")(self._primitive, target))

    def int(self, dtype: DType | str | None = None) -> Tensor:
        """This tensor as Int (floats truncate toward zero; the device's int dtype unless given)."""
        kind = self.kind
        backend = self._device.backend
        target = backend.int_dtype if dtype is None else DType.of(dtype)
        if not target.is_int:
            raise TypeError(f"int: {target} is not an int dtype")
        if kind is Kind.INT:
            return (
                cast("Tensor", self)
                if target == self.dtype
                else self._new(backend.int_cast(self._primitive, target))
            )
        return self._new(self._op("into_int")(self._primitive, target))

    def bool(self) -> Tensor:
        """This tensor as Bool: true where non-zero."""
        if self.kind is Kind.BOOL:
            return cast("Tensor", self)
        return cast("Tensor", self).not_equal_elem(0)

    def cast(self, dtype: DType | str) -> Tensor:
        """This tensor with elements of ``dtype`` (across kinds too: floats to ints truncate)."""
        dtype = DType.of(dtype)
        if dtype.kind is Kind.FLOAT:
            return self.float(dtype)
        if dtype.kind is Kind.INT:
            return self.int(dtype)
        return self.bool()
