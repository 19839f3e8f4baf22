"""``Tensor``: the one tensor type of the user API, generic over the backend at run time."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np

from ._backend import AutodiffBackend, Gradients
from ._data import TensorData
from ._device import Device
from ._distribution import Distribution
from ._dtype import DType, Kind
from ._options import IndexingUpdateOp
from ._registry import default_device, parse_device
from ._shape import Shape, broadcast_shapes, normalize_dim
from ._slice import SliceLike, canonical_slices
from ._tensor_base import (
    KIND_NAMES,
    KindConversions,
    TensorBase,
    check_same_rank,
    device_difference,
    int_range,
)

DeviceLike = Device | str | None
DTypeLike = DType | Kind | str | None
ShapeLike = Sequence[int]
Number = int | float | bool
NDArray = np.ndarray[Any, Any]


def resolve(device: DeviceLike, dtype: DTypeLike, kind: Kind, op: str = "create") -> tuple[Device, DType]:
    """The device and dtype a creation op uses: defaults from the process and the device's backend.

    Raises:
        TypeError: ``device`` is neither a Device nor a spec string.
        ValueError: the device's backend has no device of that index.
    """
    if device is None:
        device = default_device()
    elif isinstance(device, str):
        device = parse_device(device)
    elif not isinstance(device, Device):
        raise TypeError(f"{op}: expected a Device or a device spec string, got {device!r}")
    else:
        check_device_exists(op, device)
    if dtype is None:
        return device, device.backend.default_dtype(kind)
    if isinstance(dtype, Kind):
        return device, device.backend.default_dtype(dtype)
    return device, DType.of(dtype)


def check_device_exists(op: str, device: Device) -> None:
    """Raise unless ``device``'s backend has a device of its index (a ``Device`` can be built with any
    index; the backend's own handles are known good and cost one lookup)."""
    backend = device.backend
    if backend._devices.get(device.index) is device:
        return
    try:
        backend.device(operator.index(device.index))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{op}: {device} is not a device: {error}") from None


def _shape_arg(op: str, shape: ShapeLike | int) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (shape,)
    try:
        return tuple(Shape(shape))
    except (TypeError, ValueError) as error:
        raise type(error)(f"{op}: {error}") from None


def _check_gradients(op: str, grads: object) -> None:
    if not isinstance(grads, Gradients):
        raise TypeError(f"{op}: expected the Gradients that backward() returned, got {grads!r}")


def _reshape_dims(shape: object) -> list[int]:
    """``reshape``'s target as a list of ints (bools and floats refused)."""
    if type(shape) is not list and type(shape) is not tuple:
        if isinstance(shape, int) and not isinstance(shape, bool):
            return [shape]
        if not isinstance(shape, (Sequence, np.ndarray)) or isinstance(shape, str):
            raise TypeError(f"reshape: expected a shape (a sequence of ints), got {shape!r}")
    dims = list(shape)
    for i, size in enumerate(dims):
        if type(size) is not int:
            if isinstance(size, bool) or not hasattr(size, "__index__"):
                raise TypeError(f"reshape: a shape holds ints, got {size!r} in {dims}")
            dims[i] = operator.index(size)
    return dims


def _range_list(ranges: Sequence[SliceLike] | SliceLike) -> list[SliceLike]:
    """One range, or a list or tuple of them, as a list."""
    if isinstance(ranges, (list, tuple)):
        return list(ranges)
    return [cast(SliceLike, ranges)]


_INT_DIVISIONS = ("div", "remainder")


def _float_unary(name: str, doc: str) -> Callable[[Tensor], Tensor]:
    method = f"float_{name}"

    def op(self: Tensor) -> Tensor:
        self._require_kind(name, Kind.FLOAT)
        return self._new(getattr(self._device.backend, method)(self._primitive))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{doc}\n\nFloat tensors only; the result has the input's shape and dtype."
    return op


def _comparison(name: str, symbol: str) -> Callable[[Tensor, Tensor | Number], Tensor]:
    ordering = name not in ("equal", "not_equal")  # Bool tensors compare for (in)equality only

    def op(self: Tensor, other: Tensor | Number | NDArray) -> Tensor:
        kind = self.kind
        if ordering and kind is Kind.BOOL:
            self._require_kind(name, Kind.FLOAT, Kind.INT)
        backend = self._device.backend
        if isinstance(other, np.ndarray):
            other = self._array_operand(name, other)
        if isinstance(other, TensorBase):
            p, q = self._binary_primitives(name, other)
            return self._new(getattr(backend, kind.prefix + name)(p, q))
        value = self._scalar(name, other, in_range=False)
        if kind is Kind.INT:
            low, high = int_range(self._primitive.dtype)
            if not low <= value <= high:
                # every value compares alike to a number beyond the dtype's range (as NumPy and PyTorch)
                if name in ("equal", "not_equal"):
                    truth = name == "not_equal"
                else:
                    truth = _ABOVE_RANGE[name] if value > high else not _ABOVE_RANGE[name]
                same = getattr(backend, "int_equal" if truth else "int_not_equal")
                return self._new(same(self._primitive, self._primitive))
        return self._new(getattr(backend, kind.prefix + name + "_elem")(self._primitive, value))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"Element-wise ``self {symbol} other`` as a Bool tensor; ``other`` is a tensor of the same dtype "
        f"(the shapes broadcast), a NumPy array (taken in this tensor's dtype) or a scalar."
    )
    return op


# whether ``x <op> v`` holds for every x when the number v lies above the int dtype's range
_ABOVE_RANGE = {"greater": False, "greater_equal": False, "lower": True, "lower_equal": True}


def _elem_comparison(name: str, symbol: str) -> Callable[[Tensor, Number], Tensor]:
    def op(self: Tensor, other: object) -> Tensor:
        if isinstance(other, TensorBase):
            raise TypeError(f"{name}_elem: expected a scalar, got a tensor; use {name}(...)")
        return getattr(self, name)(other)  # type: ignore[no-any-return]

    op.__name__ = op.__qualname__ = f"{name}_elem"
    op.__doc__ = f"Element-wise ``self {symbol} scalar`` as a Bool tensor (Burn's ``{name}_elem``)."
    return op


class Tensor(KindConversions):
    """A tensor on some device of some backend; its kind (Float, Int, Bool) and dtype are properties.

    Tensors are values: every op returns a new tensor and never changes its inputs. Binary ops need
    operands of the same dtype and device; nothing is promoted or moved implicitly. Shapes broadcast as
    NumPy's: dims aligned from the right, dims of size 1 and missing leading dims stretch (the gradient
    of a stretched operand is summed back to its shape).

    The other operand of an arithmetic, comparison or bitwise op may be a Python number or a NumPy
    array: either is taken in this tensor's dtype, on its device (PyTorch takes arrays too, but promotes
    the result to the array's dtype; Burn never promotes). Its kind must fit: ints for Int tensors,
    bools for Bool ones, ints or floats for Float ones; an int beyond the range of an Int tensor's dtype
    is an ``OverflowError`` (comparisons compare it as it is). For another dtype, build the tensor with
    ``Tensor.from_data(array, device, dtype)``.

    Example:
        >>> x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]])
        >>> (x * 2 + 1).sum_dim(1).to_data().tolist()
        [[8.0], [16.0]]
    """

    __slots__ = ()
    __array_priority__ = 1000  # NumPy defers to our operators

    # == creation ==================================================================================
    @classmethod
    def from_primitive(cls, primitive: Any, device: Device) -> Tensor:
        """A tensor around a backend primitive (for backend extensions and custom ops)."""
        return cls(primitive, device)

    @classmethod
    def from_data(cls, data: Any, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor holding ``data``: a ``TensorData``, nested lists or scalars, or a NumPy array.

        Args:
            data: the values.
            device: where to put them (default: the process default device).
            dtype: the element type; by default the device's default dtype for the data's kind (as in
                Burn: float data becomes the backend's float dtype).

        Example:
            >>> Tensor.from_data([1, 2, 3]).kind
            Int
        """
        if not isinstance(data, TensorData):
            # an explicit dtype takes the values as they are (no detour through f32 for Python floats)
            explicit = dtype is not None and not isinstance(dtype, Kind)
            try:
                data = TensorData(data, dtype if explicit else None)  # type: ignore[arg-type]
            except (TypeError, ValueError) as error:
                raise type(error)(f"from_data: {str(error).removeprefix('TensorData: ')}") from None
        device, target = resolve(device, dtype, data.kind, "from_data")
        data = data.convert(target)
        backend = device.backend
        return cls(getattr(backend, target.kind.prefix + "from_data")(data, device), device)

    @classmethod
    def from_numpy(cls, array: np.ndarray[Any, Any], device: DeviceLike = None) -> Tensor:
        """A tensor with a copy of ``array``'s values, keeping its dtype."""
        data = TensorData.from_numpy(np.asarray(array))
        return cls.from_data(data, device, data.dtype)

    @classmethod
    def from_dlpack(cls, source: Any, device: DeviceLike = None) -> Tensor:
        """A tensor from any object with ``__dlpack__`` (NumPy, PyTorch, CuPy, ...), keeping its dtype."""
        return cls.from_numpy(np.from_dlpack(source), device)

    @classmethod
    def empty(cls, shape: ShapeLike | int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor with unspecified values (Float unless ``dtype`` says otherwise)."""
        shape = _shape_arg("empty", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "empty")
        return cls(getattr(device.backend, dtype.kind.prefix + "empty")(shape, device, dtype), device)

    @classmethod
    def zeros(cls, shape: ShapeLike | int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor of zeros (Float unless ``dtype`` says otherwise: ``dtype=Int``, ``DType.I32``, ...)."""
        shape = _shape_arg("zeros", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "zeros")
        return cls(getattr(device.backend, dtype.kind.prefix + "zeros")(shape, device, dtype), device)

    @classmethod
    def ones(cls, shape: ShapeLike | int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor of ones (Float unless ``dtype`` says otherwise)."""
        shape = _shape_arg("ones", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "ones")
        return cls(getattr(device.backend, dtype.kind.prefix + "ones")(shape, device, dtype), device)

    @classmethod
    def full(
        cls, shape: ShapeLike | int, fill_value: Number, device: DeviceLike = None, dtype: DTypeLike = None
    ) -> Tensor:
        """A tensor filled with ``fill_value``; the kind follows the value (float, int or bool) unless
        ``dtype`` is given."""
        shape = _shape_arg("full", shape)
        kind = (
            Kind.BOOL
            if isinstance(fill_value, bool)
            else Kind.INT
            if isinstance(fill_value, int)
            else Kind.FLOAT
        )
        device, dtype = resolve(device, dtype, kind, "full")
        if dtype.kind is Kind.BOOL:
            return cls(
                device.backend.bool_ones(shape, device, dtype)
                if fill_value
                else device.backend.bool_zeros(shape, device, dtype),
                device,
            )
        if dtype.kind is Kind.INT and isinstance(fill_value, float) and not fill_value.is_integer():
            raise TypeError(f"full: fill value {fill_value} is not an integer, for dtype {dtype}")
        value = float(fill_value) if dtype.kind is Kind.FLOAT else int(fill_value)
        return cls(getattr(device.backend, dtype.kind.prefix + "full")(shape, value, device, dtype), device)

    @classmethod
    def random(
        cls,
        shape: ShapeLike | int,
        distribution: Distribution | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
    ) -> Tensor:
        """Values drawn from ``distribution`` (default: uniform on [0, 1)) with the device's generator.

        Seed the generator with ``device.seed(n)`` for repeatable runs.
        """
        shape = _shape_arg("random", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "random")
        if distribution is None:
            distribution = Distribution.default()
        elif not isinstance(distribution, Distribution):
            raise TypeError(
                f"random: distribution must be a Distribution (Distribution.default(), .uniform(low, high), "
                f".normal(mean, std) or .bernoulli(probability)), got {distribution!r}"
            )
        if dtype.kind is Kind.BOOL:
            raise TypeError(
                "random: Bool tensors are drawn with Distribution.bernoulli into Int; use .bool()"
            )
        create = getattr(device.backend, dtype.kind.prefix + "random")
        return cls(create(shape, distribution, device, dtype), device)

    @classmethod
    def arange(
        cls,
        start: int,
        end: int | None = None,
        step: int = 1,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
    ) -> Tensor:
        """The Int tensor ``start, start + step, ...`` up to ``end`` (exclusive); ``arange(n)`` is 0..n."""
        if end is None:
            start, end = 0, start
        for value in (start, end, step):
            operator.index(value)
        if step == 0:
            raise ValueError("arange: step must not be zero")
        device, dtype = resolve(device, dtype, Kind.INT, "arange")
        if dtype.kind is not Kind.INT:
            raise TypeError(f"arange: makes Int tensors, got dtype {dtype}")
        if step == 1:
            return cls(device.backend.int_arange(start, end, device, dtype), device)
        return cls(device.backend.int_arange_step(start, end, step, device, dtype), device)

    @classmethod
    def arange_step(
        cls, start: int, end: int, step: int, device: DeviceLike = None, dtype: DTypeLike = None
    ) -> Tensor:
        """Burn's ``arange_step``: the Int tensor ``start, start + step, ...`` up to ``end``."""
        return cls.arange(start, end, step, device, dtype)

    @classmethod
    def from_floats(cls, values: Any, device: DeviceLike = None) -> Tensor:
        """A Float tensor of ``values`` (the device's float dtype)."""
        return cls.from_data(values, device, Kind.FLOAT)

    @classmethod
    def from_ints(cls, values: Any, device: DeviceLike = None) -> Tensor:
        """An Int tensor of ``values`` (the device's int dtype)."""
        return cls.from_data(values, device, Kind.INT)

    @classmethod
    def from_bools(cls, values: Any, device: DeviceLike = None) -> Tensor:
        """A Bool tensor of ``values``."""
        return cls.from_data(values, device, Kind.BOOL)

    @classmethod
    def linspace(
        cls, start: float, end: float, steps: int, device: DeviceLike = None, dtype: DTypeLike = None
    ) -> Tensor:
        """``steps`` evenly spaced Float values from ``start`` to ``end`` inclusive."""
        if steps < 0:
            raise ValueError(f"linspace: steps must be non-negative, got {steps}")
        device, dtype = resolve(device, dtype, Kind.FLOAT, "linspace")
        if steps == 1:
            return cls.full([1], float(start), device, dtype)
        index = cls.arange(steps, device=device).float(dtype)
        spacing = (end - start) / (steps - 1) if steps > 1 else 0.0
        return index * spacing + float(start)

    @classmethod
    def eye(cls, size: int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """The ``size`` x ``size`` identity matrix (Float unless ``dtype`` says otherwise)."""
        if isinstance(size, bool) or not hasattr(size, "__index__"):
            raise TypeError(f"eye: size must be an int, got {size!r}")
        if operator.index(size) < 0:
            raise ValueError(f"eye: size must be non-negative, got {size}")
        device, dtype = resolve(device, dtype, Kind.FLOAT, "eye")
        return cls.from_data(np.eye(operator.index(size), dtype=dtype.numpy), device, dtype)

    @classmethod
    def cat(cls, tensors: Sequence[Tensor], dim: int) -> Tensor:
        """Tensors of one kind, dtype, device and rank joined along ``dim`` (other dims must match)."""
        tensors = list(tensors)
        check_same_rank("cat", tensors)
        first = tensors[0]
        dim = first._dim("cat", dim)
        for other in tensors[1:]:
            a, b = first._primitive.shape, other._primitive.shape
            if any(x != y for i, (x, y) in enumerate(zip(a, b)) if i != dim):
                raise ValueError(f"cat: shapes {[t.dims() for t in tensors]} differ outside dim {dim}")
        return first._new(first._op("cat")([t._primitive for t in tensors], dim))

    @classmethod
    def stack(cls, tensors: Sequence[Tensor], dim: int) -> Tensor:
        """Tensors of one shape joined along a new dim ``dim``."""
        tensors = list(tensors)
        check_same_rank("stack", tensors)
        shapes = {tuple(t._primitive.shape) for t in tensors}
        if len(shapes) != 1:
            raise ValueError(f"stack: tensors must have the same shape, got {[t.dims() for t in tensors]}")
        dim = normalize_dim("stack", dim, tensors[0].rank + 1)
        return cls.cat([t.unsqueeze_dim(dim) for t in tensors], dim)

    def zeros_like(self) -> Tensor:
        """Zeros of this tensor's shape, dtype and device."""
        return Tensor.zeros(self.dims(), self._device, self.dtype)

    def ones_like(self) -> Tensor:
        """Ones of this tensor's shape, dtype and device."""
        return Tensor.ones(self.dims(), self._device, self.dtype)

    def full_like(self, fill_value: Number) -> Tensor:
        """``fill_value`` in this tensor's shape, dtype and device."""
        return Tensor.full(self.dims(), fill_value, self._device, self.dtype)

    def random_like(self, distribution: Distribution | None = None) -> Tensor:
        """Random values of this tensor's shape, dtype and device."""
        return Tensor.random(self.dims(), distribution, self._device, self.dtype)

    # == data ======================================================================================
    def to_data(self) -> TensorData:
        """The values on the host (this synchronizes with the device)."""
        return self._op("into_data")(self._primitive)  # type: ignore[no-any-return]

    into_data = to_data

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """The values as a read-only NumPy array."""
        return self.to_data().to_numpy()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        array = self.to_numpy()
        if dtype is not None:
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(self, **kwargs: Any) -> Any:
        primitive = self._primitive
        if hasattr(primitive, "__dlpack__"):
            return primitive.__dlpack__(**kwargs)
        return self.to_numpy().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        primitive = self._primitive
        if hasattr(primitive, "__dlpack_device__"):
            return primitive.__dlpack_device__()  # type: ignore[no-any-return]
        return (1, 0)

    def into_primitive(self) -> Any:
        """The backend's primitive (Burn's ``into_primitive``; the same as the ``primitive`` property)."""
        return self._primitive

    def to_full_precision(self) -> Tensor:
        """This Float tensor in f32 if it is in a lower precision (f16, bf16), else unchanged."""
        self._require_kind("to_full_precision", Kind.FLOAT)
        return self.float(DType.F32) if self.dtype in (DType.F16, DType.BF16) else self

    @classmethod
    def from_full_precision(cls, tensor: Tensor, dtype: DType | str) -> Tensor:
        """``tensor`` (from ``to_full_precision``) back in the lower precision ``dtype``."""
        return tensor.float(dtype)

    def one_hot(self, num_classes: int) -> Tensor:
        """One-hot encoding of class indices: a new last dim of ``num_classes``, 1 at each index.

        The result has this tensor's kind and dtype (Int indices give Int, Float indices give Float).

        Raises:
            ValueError: an index is outside ``[0, num_classes)`` (checked where the backend
                ``validates_index_values``; elsewhere such an index gives a row of zeros).
        """
        self._require_kind("one_hot", Kind.INT, Kind.FLOAT)
        if num_classes <= 0:
            raise ValueError(f"one_hot: num_classes must be positive, got {num_classes}")
        if self.num_elements() and self._device.backend.validates_index_values:
            low, high = self.min().into_scalar(), self.max().into_scalar()
            if low < 0 or high >= num_classes:
                raise ValueError(
                    f"one_hot: indices must lie in [0, {num_classes}), got values in [{low}, {high}]"
                )
        classes = Tensor.arange(num_classes, device=self._device).cast(self.dtype)
        classes = classes.reshape([1] * self.rank + [num_classes])
        return self.unsqueeze_dim(-1).equal(classes).cast(self.dtype)

    def tolist(self) -> Any:
        """The values as nested Python lists."""
        return self.to_data().tolist()

    def into_scalar(self) -> Any:
        """The value of a one-element tensor as a Python float, int or bool.

        Raises:
            ValueError: the tensor has more or fewer than one element.
        """
        if self.num_elements() != 1:
            raise ValueError(f"into_scalar: expected a tensor of one element, got shape {self.dims()}")
        value = self.to_data().to_numpy().reshape(()).item()
        return float(value) if self.kind is Kind.FLOAT else value

    item = into_scalar

    # == devices, kinds and dtypes =================================================================
    def to_device(self, device: Device | str) -> Tensor:
        """This tensor on ``device``; across backends the values travel through ``TensorData``."""
        if isinstance(device, str):
            device = parse_device(device)
        elif isinstance(device, Device):
            check_device_exists("to_device", device)
        else:
            raise TypeError(f"to_device: expected a Device or a device spec string, got {device!r}")
        if device.backend == self._device.backend:
            return Tensor(self._op("to_device")(self._primitive, device), device)
        return Tensor.from_data(self.to_data(), device, self.dtype)

    # == arithmetic ================================================================================
    def _arith(self, name: str, other: object) -> Tensor:
        kind = self.kind
        if kind is Kind.BOOL:
            self._require_kind(name, Kind.FLOAT, Kind.INT)
        backend = self._device.backend
        if isinstance(other, TensorBase):
            p, q = self._primitive, other._primitive
            if p.dtype != q.dtype or p.shape != q.shape or self._device is not other._device:
                p, q = self._binary_primitives(name, other)
            if kind is Kind.INT and name in _INT_DIVISIONS:
                self._check_divisor(name, q)
            return self._new(getattr(backend, kind.prefix + name)(p, q))
        if isinstance(other, np.ndarray):
            return self._arith(name, self._array_operand(name, other))
        return self._arith_scalar(name, name, other, kind)

    def _arith_scalar(self, name: str, op: str, value: object, kind: Kind) -> Tensor:
        """``self <name> value`` for a Python number (``op`` names the call in errors)."""
        scalar = self._scalar(op, value)
        if kind is Kind.BOOL:
            self._require_kind(name, Kind.FLOAT, Kind.INT)
        elif kind is Kind.INT and scalar == 0 and name in _INT_DIVISIONS:
            raise ZeroDivisionError(f"{op}: integer division by zero (of the {self._describe()})")
        method = getattr(self._device.backend, kind.prefix + name + "_scalar")
        return self._new(method(self._primitive, scalar))

    def _check_divisor(self, op: str, divisor: Any) -> None:
        """Raise if the Int primitive ``divisor`` holds a zero, where the backend validates values
        (elsewhere, as for index values, the read would wait for the device)."""
        backend = self._device.backend
        if not backend.validates_index_values or 0 in tuple(divisor.shape):
            return
        has_zero = backend.bool_any(backend.int_equal_elem(divisor, 0))
        if backend.bool_into_data(has_zero).to_numpy().any():
            raise ZeroDivisionError(
                f"{op}: integer division by zero: the divisor, an Int {self.dtype} tensor of shape "
                f"{list(divisor.shape)}, holds a 0"
            )

    def _array_operand(self, op: str, array: NDArray) -> Tensor:
        """A NumPy array operand as a tensor of this tensor's dtype and device, as a Python number would
        be taken: its kind must fit (ints for Int tensors, bools for Bool ones; Float tensors take ints
        and floats), and ints must fit the dtype's range."""
        kind, dtype = self.kind, self.dtype
        array_kind = Kind.BOOL if array.dtype == np.bool_ else None
        if np.issubdtype(array.dtype, np.integer):
            array_kind = Kind.INT
        elif np.issubdtype(array.dtype, np.floating):
            array_kind = Kind.FLOAT
        fits = array_kind is kind or (kind is Kind.FLOAT and array_kind is Kind.INT)
        if not fits:
            hint = "; convert the tensor with .float() first" if array_kind is Kind.FLOAT else ""
            raise TypeError(
                f"{op}: a NumPy array of {array.dtype} cannot be an operand of the {self._describe()}{hint}; "
                f"or make a tensor of it with Tensor.from_data(array, device, dtype)"
            )
        if kind is Kind.INT and array.size and not np.can_cast(array.dtype, dtype.numpy):
            low, high = int_range(self._primitive.dtype)
            if int(array.min()) < low or int(array.max()) > high:
                raise OverflowError(
                    f"{op}: the NumPy array's values lie outside the range [{low}, {high}] of the "
                    f"{self._describe()}"
                )
        return Tensor.from_data(TensorData(array, dtype), self._device, dtype)

    def add(self, other: Tensor | Number | NDArray) -> Tensor:
        """``self + other``: a tensor of the same dtype (shapes broadcast), a NumPy array or a scalar."""
        return self._arith("add", other)

    def sub(self, other: Tensor | Number | NDArray) -> Tensor:
        """``self - other``."""
        return self._arith("sub", other)

    def mul(self, other: Tensor | Number | NDArray) -> Tensor:
        """``self * other``."""
        return self._arith("mul", other)

    def div(self, other: Tensor | Number | NDArray) -> Tensor:
        """``self / other``; on Int tensors, floor division.

        Raises:
            ZeroDivisionError: an Int division by zero (a tensor divisor is read where the backend
                ``validates_index_values``).
        """
        return self._arith("div", other)

    def remainder(self, other: Tensor | Number | NDArray) -> Tensor:
        """``self % other``, with the sign of ``other`` (Python's and PyTorch's convention).

        Raises:
            ZeroDivisionError: an Int remainder by zero (as for ``div``).
        """
        return self._arith("remainder", other)

    def add_scalar(self, other: Number) -> Tensor:
        """``self + scalar``."""
        return self._arith_scalar("add", "add_scalar", other, self.kind)

    def sub_scalar(self, other: Number) -> Tensor:
        """``self - scalar``."""
        return self._arith_scalar("sub", "sub_scalar", other, self.kind)

    def mul_scalar(self, other: Number) -> Tensor:
        """``self * scalar``."""
        return self._arith_scalar("mul", "mul_scalar", other, self.kind)

    def div_scalar(self, other: Number) -> Tensor:
        """``self / scalar``."""
        return self._arith_scalar("div", "div_scalar", other, self.kind)

    def remainder_scalar(self, other: Number) -> Tensor:
        """``self % scalar``."""
        return self._arith_scalar("remainder", "remainder_scalar", other, self.kind)

    def neg(self) -> Tensor:
        """``-self``."""
        self._require_kind("neg", Kind.FLOAT, Kind.INT)
        return self._new(self._op("neg")(self._primitive))

    def abs(self) -> Tensor:
        """Absolute values."""
        self._require_kind("abs", Kind.FLOAT, Kind.INT)
        return self._new(self._op("abs")(self._primitive))

    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign of each value."""
        self._require_kind("sign", Kind.FLOAT, Kind.INT)
        return self._new(self._op("sign")(self._primitive))

    def square(self) -> Tensor:
        """``self * self``."""
        if self._require_kind("square", Kind.FLOAT, Kind.INT) is Kind.INT:
            return self._new(self._device.backend.int_square(self._primitive))
        return self.mul(self)

    def clamp(self, minimum: Number, maximum: Number) -> Tensor:
        """Values limited to ``[minimum, maximum]``."""
        self._require_kind("clamp", Kind.FLOAT, Kind.INT)
        low, high = self._scalar("clamp", minimum), self._scalar("clamp", maximum)
        if low > high:
            raise ValueError(f"clamp: minimum {minimum} is above maximum {maximum}")
        return self._new(self._op("clamp")(self._primitive, low, high))

    def clamp_min(self, minimum: Number) -> Tensor:
        """Values limited to at least ``minimum``."""
        self._require_kind("clamp_min", Kind.FLOAT, Kind.INT)
        return self._new(self._op("clamp_min")(self._primitive, self._scalar("clamp_min", minimum)))

    def clamp_max(self, maximum: Number) -> Tensor:
        """Values limited to at most ``maximum``."""
        self._require_kind("clamp_max", Kind.FLOAT, Kind.INT)
        return self._new(self._op("clamp_max")(self._primitive, self._scalar("clamp_max", maximum)))

    def powf(self, exponent: Tensor | float) -> Tensor:
        """``self ** exponent`` for Float tensors; ``exponent`` a Float tensor or a number."""
        self._require_kind("powf", Kind.FLOAT)
        backend = self._device.backend
        if isinstance(exponent, TensorBase):
            p, q = self._binary_primitives("powf", exponent)
            return self._new(backend.float_powf(p, q))
        return self._new(backend.float_powf_scalar(self._primitive, self._scalar("powf", exponent)))

    def powf_scalar(self, exponent: float) -> Tensor:
        """``self ** exponent``."""
        return self.powf(float(exponent))

    def powi(self, exponent: Tensor | int) -> Tensor:
        """``self ** exponent`` with integer exponents: an Int tensor or an int."""
        kind = self._require_kind("powi", Kind.FLOAT, Kind.INT)
        backend = self._device.backend
        if isinstance(exponent, TensorBase):
            if exponent.kind is not Kind.INT:
                raise TypeError(f"powi: the exponent must be an Int tensor, got a {exponent._describe()}")
            self._check_device_of("powi", exponent)
            if kind is Kind.INT:
                self._check_other("powi", exponent)
            p, q = self._primitive, exponent._primitive
            if p.shape != q.shape:
                rank = len(broadcast_shapes("powi", tuple(p.shape), tuple(q.shape)))
                p, q = self._with_rank(p, rank, kind), self._with_rank(q, rank, Kind.INT)
            return self._new(getattr(backend, kind.prefix + "powi")(p, q))
        if isinstance(exponent, bool) or not hasattr(exponent, "__index__"):
            raise TypeError(f"powi: expected an int exponent, got {exponent!r}")
        return self._new(getattr(backend, kind.prefix + "powi_scalar")(self._primitive, int(exponent)))

    def powi_scalar(self, exponent: int) -> Tensor:
        """``self ** exponent`` for an int exponent."""
        return self.powi(exponent)

    def pow(self, exponent: Tensor | Number | NDArray) -> Tensor:
        """``self ** exponent``, choosing ``powf`` or ``powi`` by the exponent's kind."""
        if isinstance(exponent, np.ndarray):
            exponent = self._array_operand("pow", exponent)
        if isinstance(exponent, TensorBase):
            return self.powi(exponent) if exponent.kind is Kind.INT else self.powf(exponent)
        if isinstance(exponent, int) and not isinstance(exponent, bool):
            return self.powi(exponent)
        return self.powf(exponent)

    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product over the last two dims; the leading (batch) dims broadcast as NumPy's do.

        Both operands need a rank of at least 2 and ``self.shape[-1] == other.shape[-2]``.
        """
        kind = self._require_kind("matmul", Kind.FLOAT, Kind.INT)
        self._check_other("matmul", other)
        p, q = self._primitive, other._primitive
        a, b = p.shape, q.shape
        if len(a) < 2 or len(b) < 2:
            raise ValueError(
                f"matmul: operands need a rank of at least 2; got shapes {list(a)} and {list(b)}"
            )
        if a[-1] != b[-2]:
            raise ValueError(f"matmul: inner dimensions differ: shapes {list(a)} and {list(b)}")
        if a[:-2] != b[:-2]:
            batch = broadcast_shapes("matmul", tuple(a[:-2]), tuple(b[:-2]))
            p, q = self._with_rank(p, len(batch) + 2, kind), self._with_rank(q, len(batch) + 2, kind)
        return self._new(self._op("matmul")(p, q))

    def cross(self, other: Tensor, dim: int = -1) -> Tensor:
        """Cross product of 3-vectors along ``dim`` (a dim of the broadcast shape of the operands)."""
        self._require_kind("cross", Kind.FLOAT)
        p, q = self._binary_primitives("cross", other)
        dim = normalize_dim("cross", dim, len(p.shape))
        if p.shape[dim] != 3 or q.shape[dim] != 3:
            raise ValueError(
                f"cross: dim {dim} must have size 3 in both, got {self.dims()} and {other.dims()}"
            )
        return self._new(self._device.backend.float_cross(p, q, dim))

    def atan2(self, other: Tensor) -> Tensor:
        """The angle of ``(other, self)``, element-wise."""
        self._require_kind("atan2", Kind.FLOAT)
        p, q = self._binary_primitives("atan2", other)
        return self._new(self._device.backend.float_atan2(p, q))

    def hypot(self, other: Tensor) -> Tensor:
        """``sqrt(self**2 + other**2)``, element-wise."""
        self._require_kind("hypot", Kind.FLOAT)
        p, q = self._binary_primitives("hypot", other)
        return self._new(self._device.backend.float_hypot(p, q))

    exp = _float_unary("exp", "``e ** x``, element-wise.")
    log = _float_unary("log", "Natural logarithm, element-wise.")
    log1p = _float_unary("log1p", "``log(1 + x)``, accurate near zero.")
    sqrt = _float_unary("sqrt", "Square root, element-wise.")
    cos = _float_unary("cos", "Cosine.")
    sin = _float_unary("sin", "Sine.")
    tan = _float_unary("tan", "Tangent.")
    cosh = _float_unary("cosh", "Hyperbolic cosine.")
    sinh = _float_unary("sinh", "Hyperbolic sine.")
    tanh = _float_unary("tanh", "Hyperbolic tangent.")
    acos = _float_unary("acos", "Inverse cosine.")
    acosh = _float_unary("acosh", "Inverse hyperbolic cosine.")
    asin = _float_unary("asin", "Inverse sine.")
    asinh = _float_unary("asinh", "Inverse hyperbolic sine.")
    atan = _float_unary("atan", "Inverse tangent.")
    atanh = _float_unary("atanh", "Inverse hyperbolic tangent.")
    round = _float_unary("round", "Rounded to the nearest integer, halves to even.")
    floor = _float_unary("floor", "Rounded down.")
    ceil = _float_unary("ceil", "Rounded up.")
    trunc = _float_unary("trunc", "Rounded toward zero.")
    erf = _float_unary("erf", "The error function.")
    recip = _float_unary("recip", "``1 / x``.")

    def rsqrt(self) -> Tensor:
        """``1 / sqrt(x)``."""
        self._require_kind("rsqrt", Kind.FLOAT)
        return self.sqrt().recip()

    # == comparison ================================================================================
    equal = _comparison("equal", "==")
    not_equal = _comparison("not_equal", "!=")
    greater = _comparison("greater", ">")
    greater_equal = _comparison("greater_equal", ">=")
    lower = _comparison("lower", "<")
    lower_equal = _comparison("lower_equal", "<=")
    equal_elem = _elem_comparison("equal", "==")
    not_equal_elem = _elem_comparison("not_equal", "!=")
    greater_elem = _elem_comparison("greater", ">")
    greater_equal_elem = _elem_comparison("greater_equal", ">=")
    lower_elem = _elem_comparison("lower", "<")
    lower_equal_elem = _elem_comparison("lower_equal", "<=")

    def is_nan(self) -> Tensor:
        """Where values are NaN (Float tensors)."""
        self._require_kind("is_nan", Kind.FLOAT)
        return self._new(self._device.backend.float_is_nan(self._primitive))

    def is_inf(self) -> Tensor:
        """Where values are +inf or -inf (Float tensors)."""
        self._require_kind("is_inf", Kind.FLOAT)
        return self._new(self._device.backend.float_is_inf(self._primitive))

    def is_finite(self) -> Tensor:
        """Where values are neither NaN nor infinite."""
        return self.is_nan().bool_or(self.is_inf()).bool_not()

    def contains_nan(self) -> bool:
        """Whether any value is NaN."""
        return bool(self.is_nan().any().into_scalar())

    def is_close(self, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8) -> Tensor:
        """Where ``|self - other| <= atol + rtol * |other|`` (Float tensors)."""
        self._require_kind("is_close", Kind.FLOAT)
        self._check_binary("is_close", other)
        return self.sub(other).abs().lower_equal(other.abs().mul_scalar(rtol).add_scalar(atol))

    def all_close(self, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
        """Whether every value is close (see ``is_close``)."""
        return bool(self.is_close(other, rtol, atol).all().into_scalar())

    # == logic and bits ============================================================================
    def _bool_binary(self, name: str, other: Tensor) -> Tensor:
        self._require_kind(name, Kind.BOOL)
        p, q = self._binary_primitives(name, other)
        return self._new(getattr(self._device.backend, name)(p, q))

    def bool_and(self, other: Tensor) -> Tensor:
        """Logical and of Bool tensors."""
        return self._bool_binary("bool_and", other)

    def bool_or(self, other: Tensor) -> Tensor:
        """Logical or of Bool tensors."""
        return self._bool_binary("bool_or", other)

    def bool_xor(self, other: Tensor) -> Tensor:
        """Logical exclusive or of Bool tensors."""
        return self._bool_binary("bool_xor", other)

    def bool_not(self) -> Tensor:
        """Logical not of a Bool tensor."""
        self._require_kind("bool_not", Kind.BOOL)
        return self._new(self._device.backend.bool_not(self._primitive))

    def _bitwise(self, name: str, other: Tensor | int | NDArray) -> Tensor:
        self._require_kind(name, Kind.INT)
        backend = self._device.backend
        if isinstance(other, np.ndarray):
            other = self._array_operand(name, other)
        if isinstance(other, TensorBase):
            p, q = self._binary_primitives(name, other)
            return self._new(getattr(backend, name)(p, q))
        return self._new(getattr(backend, name + "_scalar")(self._primitive, self._scalar(name, other)))

    def bitwise_and(self, other: Tensor | int | NDArray) -> Tensor:
        """``self & other`` on Int tensors."""
        return self._bitwise("bitwise_and", other)

    def bitwise_or(self, other: Tensor | int | NDArray) -> Tensor:
        """``self | other`` on Int tensors."""
        return self._bitwise("bitwise_or", other)

    def bitwise_xor(self, other: Tensor | int | NDArray) -> Tensor:
        """``self ^ other`` on Int tensors."""
        return self._bitwise("bitwise_xor", other)

    def bitwise_left_shift(self, other: Tensor | int | NDArray) -> Tensor:
        """``self << other`` on Int tensors."""
        return self._bitwise("bitwise_left_shift", other)

    def bitwise_right_shift(self, other: Tensor | int | NDArray) -> Tensor:
        """``self >> other`` on Int tensors."""
        return self._bitwise("bitwise_right_shift", other)

    def bitwise_not(self) -> Tensor:
        """``~self`` on Int tensors."""
        self._require_kind("bitwise_not", Kind.INT)
        return self._new(self._device.backend.bitwise_not(self._primitive))

    # == reductions ================================================================================
    def _reduce(
        self, name: str, kinds: tuple[Kind, ...] = (Kind.FLOAT, Kind.INT), nonempty: bool = False
    ) -> Tensor:
        self._require_kind(name, *kinds)
        if nonempty and self.num_elements() == 0:
            raise ValueError(f"{name}: the tensor has no elements (shape {self.dims()})")
        return self._new(self._op(name)(self._primitive))

    def _reduce_dim(
        self, name: str, dim: int, kinds: tuple[Kind, ...] = (Kind.FLOAT, Kind.INT), nonempty: bool = False
    ) -> Tensor:
        self._require_kind(name, *kinds)
        dim = self._dim(name, dim)
        if nonempty and self._primitive.shape[dim] == 0:
            raise ValueError(f"{name}: dim {dim} is empty (shape {self.dims()})")
        return self._new(self._op(name)(self._primitive, dim))

    def sum(self) -> Tensor:
        """The sum of all values, as a tensor of shape [1]."""
        return self._reduce("sum")

    def sum_dim(self, dim: int) -> Tensor:
        """Sums along ``dim``, which is kept with size 1."""
        return self._reduce_dim("sum_dim", dim)

    def mean(self) -> Tensor:
        """The mean of all values, shape [1] (floor division on Int tensors)."""
        return self._reduce("mean", nonempty=self.kind is Kind.INT)

    def mean_dim(self, dim: int) -> Tensor:
        """Means along ``dim``, kept with size 1."""
        return self._reduce_dim("mean_dim", dim)

    def prod(self) -> Tensor:
        """The product of all values, shape [1]."""
        return self._reduce("prod")

    def prod_dim(self, dim: int) -> Tensor:
        """Products along ``dim``, kept with size 1."""
        return self._reduce_dim("prod_dim", dim)

    def max(self) -> Tensor:
        """The largest value, shape [1]."""
        return self._reduce("max", nonempty=True)

    def max_dim(self, dim: int) -> Tensor:
        """Maxima along ``dim``, kept with size 1."""
        return self._reduce_dim("max_dim", dim, nonempty=True)

    def max_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """Maxima along ``dim`` and the (Int) indices of the first of each."""
        self._require_kind("max_dim_with_indices", Kind.FLOAT, Kind.INT)
        dim = self._dim("max_dim_with_indices", dim)
        if self._primitive.shape[dim] == 0:
            raise ValueError(f"max_dim_with_indices: dim {dim} is empty (shape {self.dims()})")
        values, indices = self._op("max_dim_with_indices")(self._primitive, dim)
        return self._new(values), self._new(indices)

    def min(self) -> Tensor:
        """The smallest value, shape [1]."""
        return self._reduce("min", nonempty=True)

    def min_dim(self, dim: int) -> Tensor:
        """Minima along ``dim``, kept with size 1."""
        return self._reduce_dim("min_dim", dim, nonempty=True)

    def min_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """Minima along ``dim`` and the (Int) indices of the first of each."""
        self._require_kind("min_dim_with_indices", Kind.FLOAT, Kind.INT)
        dim = self._dim("min_dim_with_indices", dim)
        if self._primitive.shape[dim] == 0:
            raise ValueError(f"min_dim_with_indices: dim {dim} is empty (shape {self.dims()})")
        values, indices = self._op("min_dim_with_indices")(self._primitive, dim)
        return self._new(values), self._new(indices)

    def max_abs(self) -> Tensor:
        """The largest absolute value, shape [1]."""
        return self._reduce("max_abs", nonempty=True)

    def max_abs_dim(self, dim: int) -> Tensor:
        """Largest absolute values along ``dim``."""
        return self._reduce_dim("max_abs_dim", dim, nonempty=True)

    def argmax(self, dim: int) -> Tensor:
        """Int indices of the first maximum along ``dim`` (kept with size 1)."""
        return self._reduce_dim("argmax", dim, nonempty=True)

    def argmin(self, dim: int) -> Tensor:
        """Int indices of the first minimum along ``dim`` (kept with size 1)."""
        return self._reduce_dim("argmin", dim, nonempty=True)

    def any(self) -> Tensor:
        """Whether any value is non-zero (true), as a Bool tensor of shape [1]."""
        return self._reduce("any", (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def any_dim(self, dim: int) -> Tensor:
        """Whether any value along ``dim`` is non-zero."""
        return self._reduce_dim("any_dim", dim, (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def all(self) -> Tensor:
        """Whether every value is non-zero (true), as a Bool tensor of shape [1]."""
        return self._reduce("all", (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def all_dim(self, dim: int) -> Tensor:
        """Whether every value along ``dim`` is non-zero."""
        return self._reduce_dim("all_dim", dim, (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def cumsum(self, dim: int) -> Tensor:
        """Running sums along ``dim``."""
        return self._reduce_dim("cumsum", dim)

    def cumprod(self, dim: int) -> Tensor:
        """Running products along ``dim``."""
        return self._reduce_dim("cumprod", dim)

    def cummin(self, dim: int) -> Tensor:
        """Running minima along ``dim``."""
        return self._reduce_dim("cummin", dim)

    def cummax(self, dim: int) -> Tensor:
        """Running maxima along ``dim``."""
        return self._reduce_dim("cummax", dim)

    def var(self, dim: int) -> Tensor:
        """Unbiased variance (divided by n - 1) along ``dim``, kept with size 1."""
        return self.var_mean(dim)[0]

    def var_bias(self, dim: int) -> Tensor:
        """Biased variance (divided by n) along ``dim``, kept with size 1."""
        return self.var_mean_bias(dim)[0]

    def var_mean(self, dim: int) -> tuple[Tensor, Tensor]:
        """Unbiased variance and mean along ``dim``."""
        self._require_kind("var", Kind.FLOAT)
        dim = self._dim("var", dim)
        count = self._primitive.shape[dim]
        mean = self.mean_dim(dim)
        centered = self.sub(mean)
        return centered.mul(centered).sum_dim(dim).div_scalar(max(count - 1, 0) or math.nan), mean

    def var_mean_bias(self, dim: int) -> tuple[Tensor, Tensor]:
        """Biased variance and mean along ``dim``."""
        self._require_kind("var_bias", Kind.FLOAT)
        mean = self.mean_dim(dim)
        centered = self.sub(mean)
        return centered.mul(centered).mean_dim(dim), mean

    # == sorting ===================================================================================
    def sort(self, dim: int = -1, descending: bool = False) -> Tensor:
        """Values sorted along ``dim`` (stable)."""
        self._require_kind("sort", Kind.FLOAT, Kind.INT)
        return self._new(self._op("sort")(self._primitive, self._dim("sort", dim), descending))

    def sort_descending(self, dim: int = -1) -> Tensor:
        """Values sorted along ``dim`` in descending order (stable)."""
        return self.sort(dim, descending=True)

    def sort_with_indices(self, dim: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
        """Sorted values and the Int indices they came from."""
        self._require_kind("sort_with_indices", Kind.FLOAT, Kind.INT)
        values, indices = self._op("sort_with_indices")(self._primitive, self._dim("sort", dim), descending)
        return self._new(values), self._new(indices)

    def argsort(self, dim: int = -1, descending: bool = False) -> Tensor:
        """Int indices that sort the values along ``dim`` (stable)."""
        self._require_kind("argsort", Kind.FLOAT, Kind.INT)
        return self._new(self._op("argsort")(self._primitive, self._dim("argsort", dim), descending))

    def _check_k(self, op: str, k: int, dim: int) -> int:
        dim = self._dim(op, dim)
        if not 0 <= k <= self._primitive.shape[dim]:
            raise ValueError(f"{op}: k={k} is outside [0, {self._primitive.shape[dim]}] for dim {dim}")
        return dim

    def topk(self, k: int, dim: int = -1) -> Tensor:
        """The ``k`` largest values along ``dim``, in descending order."""
        self._require_kind("topk", Kind.FLOAT, Kind.INT)
        dim = self._check_k("topk", k, dim)
        return self._new(self._op("topk")(self._primitive, dim, k))

    def topk_with_indices(self, k: int, dim: int = -1) -> tuple[Tensor, Tensor]:
        """The ``k`` largest values along ``dim`` and their Int indices."""
        self._require_kind("topk_with_indices", Kind.FLOAT, Kind.INT)
        dim = self._check_k("topk_with_indices", k, dim)
        values, indices = self._op("topk_with_indices")(self._primitive, dim, k)
        return self._new(values), self._new(indices)

    def argtopk(self, k: int, dim: int = -1) -> Tensor:
        """Int indices of the ``k`` largest values along ``dim``."""
        self._require_kind("argtopk", Kind.FLOAT, Kind.INT)
        dim = self._check_k("argtopk", k, dim)
        return self._new(self._op("argtopk")(self._primitive, dim, k))

    # == shape =====================================================================================
    def reshape(self, shape: ShapeLike | int) -> Tensor:
        """The same values in another shape. ``-1`` infers one dim; ``0`` keeps the input's dim there.

        Raises:
            TypeError: ``shape`` is not a sequence of ints (or an int).
            ValueError: the shape does not hold the tensor's number of elements.
        """
        dims = _reshape_dims(shape)
        asked = list(dims)
        current = self._primitive.shape
        for i, size in enumerate(dims):
            if size == 0 and i < len(current) and len(dims) <= len(current) and 0 not in current:
                dims[i] = current[i]
        if dims.count(-1) > 1:
            raise ValueError(f"reshape: at most one -1 in {asked}")
        count = self.num_elements()
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or count % known:
                raise ValueError(f"reshape: cannot reshape {self.dims()} into {asked}")
            dims[dims.index(-1)] = count // known
        if any(d < 0 for d in dims) or math.prod(dims) != count:
            raise ValueError(f"reshape: cannot reshape {self.dims()} ({count} elements) into {asked}")
        if tuple(dims) == tuple(current):
            return self
        return self._new(self._op("reshape")(self._primitive, tuple(dims)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Dims ``start_dim`` to ``end_dim`` (inclusive) merged into one."""
        rank = self.rank
        if rank == 0:
            return self.reshape([1])
        start, end = self._dim("flatten", start_dim), self._dim("flatten", end_dim)
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} is after end_dim {end_dim}")
        dims = self.dims()
        return self.reshape([*dims[:start], math.prod(dims[start : end + 1]), *dims[end + 1 :]])

    def unsqueeze_dim(self, dim: int) -> Tensor:
        """A new dim of size 1 inserted at ``dim`` (negative counts from the end of the result)."""
        dims = self.dims()
        dim = normalize_dim("unsqueeze_dim", dim, len(dims) + 1)
        return self._new(self._op("reshape")(self._primitive, (*dims[:dim], 1, *dims[dim:])))

    def unsqueeze_dims(self, dims: Sequence[int]) -> Tensor:
        """New dims of size 1 at each position of ``dims`` (positions in the result)."""
        out_rank = self.rank + len(dims)
        positions = sorted(normalize_dim("unsqueeze_dims", d, out_rank) for d in dims)
        result = self
        for position in positions:
            result = result.unsqueeze_dim(position)
        return result

    def unsqueeze(self, rank: int) -> Tensor:
        """Leading dims of size 1 added until the tensor has ``rank`` dims (Burn's ``unsqueeze``)."""
        if rank < self.rank:
            raise ValueError(f"unsqueeze: rank {rank} is below the tensor's rank {self.rank}")
        return self.reshape([1] * (rank - self.rank) + self.dims())

    def squeeze_dim(self, dim: int) -> Tensor:
        """Dim ``dim`` (of size 1) removed."""
        dim = self._dim("squeeze_dim", dim)
        dims = self.dims()
        if dims[dim] != 1:
            raise ValueError(f"squeeze_dim: dim {dim} has size {dims[dim]}, not 1 (shape {dims})")
        return self._new(self._op("reshape")(self._primitive, tuple(dims[:dim] + dims[dim + 1 :])))

    def squeeze_dims(self, dims: Sequence[int]) -> Tensor:
        """The given dims (each of size 1) removed."""
        positions = self._dims("squeeze_dims", dims)
        shape = self.dims()
        for dim in positions:
            if shape[dim] != 1:
                raise ValueError(f"squeeze_dims: dim {dim} has size {shape[dim]}, not 1 (shape {shape})")
        kept = [size for i, size in enumerate(shape) if i not in positions]
        return self._new(self._op("reshape")(self._primitive, tuple(kept)))

    def squeeze(self) -> Tensor:
        """Every dim of size 1 removed."""
        return self._new(self._op("reshape")(self._primitive, tuple(d for d in self.dims() if d != 1)))

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        """Dims ``dim1`` and ``dim2`` exchanged."""
        a, b = self._dim("swap_dims", dim1), self._dim("swap_dims", dim2)
        if a == b:
            return self
        return self._new(self._op("swap_dims")(self._primitive, a, b))

    def transpose(self) -> Tensor:
        """The last two dims swapped (rank below 2: unchanged)."""
        if self.rank < 2:
            return self
        return self._new(self._op("transpose")(self._primitive))

    @property
    def T(self) -> Tensor:
        """The last two dims swapped."""
        return self.transpose()

    def permute(self, axes: Sequence[int]) -> Tensor:
        """Dims reordered: result dim ``i`` is input dim ``axes[i]`` (negative axes count from the end)."""
        if len(axes) != self.rank:
            raise ValueError(f"permute: {len(axes)} axes given for a tensor of rank {self.rank}")
        normalized = self._dims("permute", axes)
        if normalized == list(range(self.rank)):
            return self
        return self._new(self._op("permute")(self._primitive, tuple(normalized)))

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """Dims moved from ``source`` to ``destination`` positions, the rest keeping their order."""
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise ValueError(f"movedim: {len(src)} sources for {len(dst)} destinations")
        src, dst = self._dims("movedim", src), self._dims("movedim", dst)
        order = [d for d in range(self.rank) if d not in src]
        for s, d in sorted(zip(dst, src)):
            order.insert(s, d)
        return self.permute(order)

    def flip(self, axes: Sequence[int]) -> Tensor:
        """Values reversed along each dim in ``axes``."""
        normalized = self._dims("flip", axes)
        if not normalized:
            return self
        return self._new(self._op("flip")(self._primitive, tuple(normalized)))

    def expand(self, shape: ShapeLike) -> Tensor:
        """Broadcast to ``shape``: dims of size 1 grow, ``-1`` keeps a dim, new leading dims may be added."""
        target = list(shape)
        current = self.dims()
        if len(target) < len(current):
            raise ValueError(f"expand: cannot expand shape {current} to fewer dims {target}")
        offset = len(target) - len(current)
        for i, size in enumerate(current):
            wanted = target[offset + i]
            if wanted == -1:
                target[offset + i] = size
            elif wanted != size and size != 1:
                raise ValueError(
                    f"expand: dim {i} of size {size} cannot become {wanted} "
                    f"(shape {current} to {list(shape)})"
                )
        if any(d < 0 for d in target):
            raise ValueError(f"expand: new leading dims need explicit sizes, got {list(shape)}")
        if tuple(target) == tuple(current):
            return self
        return self._new(self._op("expand")(self._primitive, tuple(target)))

    def broadcast_to(self, shape: ShapeLike) -> Tensor:
        """The same as ``expand``."""
        return self.expand(shape)

    def repeat_dim(self, dim: int, times: int) -> Tensor:
        """The tensor repeated ``times`` along ``dim``."""
        dim = self._dim("repeat_dim", dim)
        if times < 0:
            raise ValueError(f"repeat_dim: times must be non-negative, got {times}")
        if times == 1:
            return self
        return self._new(self._op("repeat_dim")(self._primitive, dim, times))

    def repeat(self, sizes: Sequence[int]) -> Tensor:
        """The tensor repeated ``sizes[i]`` times along each dim ``i``."""
        if len(sizes) != self.rank:
            raise ValueError(f"repeat: {len(sizes)} sizes given for a tensor of rank {self.rank}")
        result = self
        for dim, times in enumerate(sizes):
            result = result.repeat_dim(dim, times)
        return result

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """``length`` elements from ``start`` along ``dim``."""
        dim = self._dim("narrow", dim)
        size = self._primitive.shape[dim]
        if start < 0:
            start += size
        if not 0 <= start <= size or length < 0 or start + length > size:
            raise ValueError(f"narrow: start {start} and length {length} exceed dim {dim} of size {size}")
        ranges: list[SliceLike] = [slice(None)] * self.rank
        ranges[dim] = slice(start, start + length)
        return self.slice(ranges)

    def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:
        """At most ``chunks`` pieces along ``dim``, each of ``ceil(size / chunks)`` but the last."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be positive, got {chunks}")
        dim = self._dim("chunk", dim)
        size = self._primitive.shape[dim]
        step = max(1, -(-size // chunks))
        return [self.narrow(dim, start, min(step, size - start)) for start in range(0, size, step)] or [self]

    def split(self, split_size: int, dim: int = 0) -> list[Tensor]:
        """Pieces of ``split_size`` along ``dim`` (the last may be smaller)."""
        if split_size <= 0:
            raise ValueError(f"split: split_size must be positive, got {split_size}")
        dim = self._dim("split", dim)
        size = self._primitive.shape[dim]
        return [self.narrow(dim, s, min(split_size, size - s)) for s in range(0, size, split_size)] or [self]

    def split_with_sizes(self, sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
        """Pieces of the given sizes along ``dim`` (they must add up to the dim's size)."""
        dim = self._dim("split_with_sizes", dim)
        if sum(sizes) != self._primitive.shape[dim] or any(s < 0 for s in sizes):
            raise ValueError(
                f"split_with_sizes: sizes {list(sizes)} do not add up to dim {dim} of {self.dims()}"
            )
        pieces, start = [], 0
        for size in sizes:
            pieces.append(self.narrow(dim, start, size))
            start += size
        return pieces

    def unfold(self, dim: int, size: int, step: int) -> Tensor:
        """Windows of ``size`` every ``step`` along ``dim``: that dim becomes the window count and a new
        last dim holds each window."""
        dim = self._dim("unfold", dim)
        if size <= 0 or step <= 0:
            raise ValueError(f"unfold: size and step must be positive, got {size} and {step}")
        if size > self._primitive.shape[dim]:
            raise ValueError(
                f"unfold: window {size} is larger than dim {dim} of size {self._primitive.shape[dim]}"
            )
        return self._new(self._op("unfold")(self._primitive, dim, size, step))

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two dims (above ``diagonal`` set to zero)."""
        return self.mask_fill(Tensor.tril_mask(self.dims(), diagonal, self._device), 0)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two dims (below ``diagonal`` set to zero)."""
        return self.mask_fill(Tensor.triu_mask(self.dims(), diagonal, self._device), 0)

    @staticmethod
    def _triangle_mask(
        op: str, shape: ShapeLike, keep: Callable[[int, int], Any], device: DeviceLike
    ) -> Tensor:
        shape = _shape_arg(op, shape)
        if len(shape) < 2:
            raise ValueError(f"{op}: needs at least two dims, got {list(shape)}")
        kept = keep(shape[-2], shape[-1])
        return Tensor.from_data(np.broadcast_to(~kept, shape), device, DType.BOOL)

    @classmethod
    def tril_mask(cls, shape: ShapeLike, diagonal: int = 0, device: DeviceLike = None) -> Tensor:
        """The mask that ``mask_fill`` uses to keep the lower triangle, as Burn's: true *above*
        ``diagonal`` of the last two dims (the values ``tril`` removes), false on and below it."""
        return cls._triangle_mask(
            "tril_mask", shape, lambda r, c: np.tri(r, c, diagonal, dtype=np.bool_), device
        )

    @classmethod
    def triu_mask(cls, shape: ShapeLike, diagonal: int = 0, device: DeviceLike = None) -> Tensor:
        """The mask that keeps the upper triangle, as Burn's: true *below* ``diagonal`` (the values ``triu``
        removes), false on and above it."""
        return cls._triangle_mask(
            "triu_mask", shape, lambda r, c: ~np.tri(r, c, diagonal - 1, dtype=np.bool_), device
        )

    @classmethod
    def diag_mask(cls, shape: ShapeLike, diagonal: int = 0, device: DeviceLike = None) -> Tensor:
        """The mask that keeps one diagonal, as Burn's: false on ``diagonal`` of the last two dims, true
        everywhere else."""
        return cls._triangle_mask(
            "diag_mask", shape, lambda r, c: np.eye(r, c, diagonal, dtype=np.bool_), device
        )

    # == indexing ==================================================================================
    def slice(self, ranges: Sequence[SliceLike] | SliceLike) -> Tensor:
        """The values in ``ranges``, one per leading dim (the rest whole); the rank never changes.

        A range is a ``Slice`` (Burn's semantics), a Python ``slice`` or ``range``, or an int ``i``
        (taken as ``i..i+1``).
        """
        slices = canonical_slices("slice", self._primitive.shape, _range_list(ranges))
        return self._new(self._op("slice")(self._primitive, slices))

    def slice_assign(self, ranges: Sequence[SliceLike] | SliceLike, values: Tensor) -> Tensor:
        """A copy with the region in ``ranges`` replaced by ``values`` (of the region's shape)."""
        slices = canonical_slices("slice_assign", self._primitive.shape, _range_list(ranges))
        self._check_other("slice_assign", values)
        region = tuple(len(range(s.start, -1 if s.stop is None else s.stop, s.step)) for s in slices)
        if tuple(values._primitive.shape) != region:
            raise ValueError(
                f"slice_assign: values of shape {values.dims()} for a region of shape {list(region)}"
            )
        return self._new(self._op("slice_assign")(self._primitive, slices, values._primitive))

    def slice_fill(self, ranges: Sequence[SliceLike] | SliceLike, value: Number) -> Tensor:
        """A copy with the region in ``ranges`` set to ``value``."""
        region = self.slice(ranges)
        return self.slice_assign(ranges, region.full_like(value))

    def __getitem__(self, key: Any) -> Tensor:
        """``tensor[...]`` is ``slice``: ints keep their dim (``x[0]`` has shape ``[1, ...]``), ``...``
        stands for the dims not named."""
        items = list(key) if isinstance(key, tuple) else [key]
        if any(item is Ellipsis for item in items):
            at = items.index(Ellipsis)
            if items.count(Ellipsis) > 1:
                raise IndexError("__getitem__: at most one ellipsis")
            fill = self.rank - (len(items) - 1)
            items = items[:at] + [slice(None)] * fill + items[at + 1 :]
        for item in items:
            if item is None or isinstance(item, (TensorBase, list, np.ndarray)):
                raise TypeError(
                    f"__getitem__: {type(item).__name__} indices are not slices; use select, gather or "
                    f"mask_where for indexing by tensors, unsqueeze_dim for new dims"
                )
        return self.slice(items)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("Tensor is immutable: use slice_assign(ranges, values) or slice_fill(ranges, value)")

    def gather(self, dim: int, indices: Tensor) -> Tensor:
        """``out[..., i, ...] = self[..., indices[..., i, ...], ...]`` along ``dim``; ``indices`` has the
        tensor's shape outside ``dim`` (as Burn requires; nothing broadcasts).

        Raises:
            ValueError: the shape of ``indices`` differs from the tensor's outside ``dim``.
            IndexError: an index is negative or not below the size of ``dim`` (checked where the
                backend ``validates_index_values``; elsewhere such an index gives unspecified values).
        """
        self._check_indices("gather", indices)
        dim = self._dim("gather", dim)
        shape, index_shape = self._primitive.shape, indices._primitive.shape
        if len(index_shape) != len(shape) or any(
            a != b for d, (a, b) in enumerate(zip(shape, index_shape)) if d != dim
        ):
            raise ValueError(
                f"gather: indices of shape {list(index_shape)} must have the shape of the tensor, "
                f"{list(shape)}, outside dim {dim}"
            )
        self._check_index_values("gather", indices, dim)
        return self._new(self._op("gather")(self._primitive, dim, indices._primitive))

    def scatter(
        self, dim: int, indices: Tensor, values: Tensor, update: IndexingUpdateOp | str = IndexingUpdateOp.ADD
    ) -> Tensor:
        """A copy with ``values`` combined in at ``indices`` along ``dim``: by default *added* (Burn's
        scatter: duplicates sum); ``update`` may be ``"assign"``, ``"mul"``, ``"min"`` or ``"max"``."""
        update = IndexingUpdateOp(update)
        dim = self._check_scatter("scatter", dim, indices, values)
        backend = self._device.backend
        p, i, v = self._primitive, indices._primitive, values._primitive
        if update is IndexingUpdateOp.ADD:
            name = "bool_scatter_or" if self.kind is Kind.BOOL else self.kind.prefix + "scatter_add"
            return self._new(getattr(backend, name)(p, dim, i, v))
        return self._new(self._op("scatter")(p, dim, i, v, update))

    def scatter_add(self, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` added at ``indices`` along ``dim`` (duplicates sum)."""
        return self.scatter(dim, indices, values, IndexingUpdateOp.ADD)

    def _check_scatter(self, op: str, dim: int, indices: Tensor, values: Tensor) -> int:
        """Check the operands of a scatter; returns ``dim`` normalized."""
        self._check_indices(op, indices)
        self._check_other(op, values)
        dim = self._dim(op, dim)
        if indices.dims() != values.dims() or indices.rank != self.rank:
            raise ValueError(
                f"{op}: indices {indices.dims()} and values {values.dims()} "
                f"need one shape of rank {self.rank}"
            )
        shape = self._primitive.shape
        if any(b > a for d, (a, b) in enumerate(zip(shape, indices._primitive.shape)) if d != dim):
            raise ValueError(
                f"{op}: indices of shape {indices.dims()} exceed the tensor's shape {list(shape)} "
                f"outside dim {dim}"
            )
        self._check_index_values(op, indices, dim)
        return dim

    def gather_nd(self, indices: Tensor) -> Tensor:
        """Values at the index tuples in the last dim of ``indices`` (shape ``[..., k]``, k at most the
        rank): the result has shape ``indices.shape[:-1] + self.shape[k:]``.

        Raises:
            IndexError: an index is outside the shape (checked where the backend
                ``validates_index_values``; elsewhere such an index gives unspecified values).
        """
        self._check_nd("gather_nd", indices)
        return self._new(self._op("gather_nd")(self._primitive, indices._primitive))

    def scatter_nd(
        self, indices: Tensor, values: Tensor, update: IndexingUpdateOp | str = IndexingUpdateOp.ASSIGN
    ) -> Tensor:
        """A copy with ``values`` combined in at the index tuples of ``indices`` (as ``gather_nd``); by
        default assigned (repeated indices: unspecified winner), or ``"add"``, ``"mul"``, ``"min"``,
        ``"max"``."""
        update = IndexingUpdateOp(update)
        depth = self._check_nd("scatter_nd", indices)
        self._check_other("scatter_nd", values)
        expected = indices.dims()[:-1] + self.dims()[depth:]
        if values.dims() != expected:
            raise ValueError(f"scatter_nd: values of shape {values.dims()}, expected {expected}")
        return self._new(
            self._op("scatter_nd")(self._primitive, indices._primitive, values._primitive, update)
        )

    def _check_nd(self, op: str, indices: Tensor) -> int:
        self._check_indices(op, indices)
        if indices.rank < 1 or not 1 <= indices.dims()[-1] <= self.rank:
            raise ValueError(
                f"{op}: indices of shape {indices.dims()} need a last dim between 1 and the rank {self.rank}"
            )
        depth = indices.dims()[-1]
        if indices.num_elements() and self._device.backend.validates_index_values:
            limits = self.dims()[:depth]
            data = indices.to_numpy().reshape(-1, depth)
            if (data < 0).any() or (data >= np.array(limits)).any():
                raise IndexError(f"{op}: an index is outside the shape {limits} of the first {depth} dims")
        return depth

    def mask_select(self, mask: Tensor) -> Tensor:
        """The values where ``mask`` is true (broadcast to this shape), in row-major order: a 1-d tensor.

        Raises:
            ValueError: ``mask`` does not broadcast to this tensor's shape.
        """
        self._check_mask("mask_select", mask)
        p, m = self._primitive, mask._primitive
        if m.shape != p.shape:
            shape, mask_shape = tuple(p.shape), tuple(m.shape)
            offset = len(shape) - len(mask_shape)
            if offset < 0 or any(s not in (1, shape[offset + i]) for i, s in enumerate(mask_shape)):
                raise ValueError(
                    f"mask_select: a mask of shape {list(m.shape)} does not broadcast to the tensor's shape "
                    f"{list(shape)}"
                )
            m = self._with_rank(m, len(shape), Kind.BOOL)
        return self._new(self._op("mask_select")(p, m))

    def select(self, dim: int, indices: Tensor) -> Tensor:
        """The slices at 1-d Int ``indices`` along ``dim``.

        Raises:
            IndexError: an index is negative or not below the size of ``dim`` (checked where the
                backend ``validates_index_values``).
        """
        self._check_indices("select", indices)
        dim = self._dim("select", dim)
        if indices.rank != 1:
            raise ValueError(f"select: indices must be 1-d, got shape {indices.dims()}")
        self._check_index_values("select", indices, dim)
        return self._new(self._op("select")(self._primitive, dim, indices._primitive))

    def select_assign(self, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` *added* to the slices at ``indices`` along ``dim`` (Burn's
        select_assign: duplicates sum; or-ed for Bool tensors)."""
        self._check_indices("select_assign", indices)
        self._check_other("select_assign", values)
        dim = self._dim("select_assign", dim)
        expected = self.dims()
        if indices.rank != 1:
            raise ValueError(f"select_assign: indices must be 1-d, got shape {indices.dims()}")
        expected[dim] = indices.dims()[0]
        if values.dims() != expected:
            raise ValueError(f"select_assign: values of shape {values.dims()}, expected {expected}")
        self._check_index_values("select_assign", indices, dim)
        name = "bool_select_or" if self.kind is Kind.BOOL else self.kind.prefix + "select_add"
        return self._new(
            getattr(self._device.backend, name)(self._primitive, dim, indices._primitive, values._primitive)
        )

    def mask_where(self, mask: Tensor, values: Tensor) -> Tensor:
        """``values`` where ``mask`` is true, else this tensor's values (the three shapes broadcast)."""
        self._check_mask("mask_where", mask)
        self._check_other("mask_where", values)
        p, m, v = self._primitive, mask._primitive, values._primitive
        if not p.shape == m.shape == v.shape:
            rank = len(broadcast_shapes("mask_where", tuple(p.shape), tuple(m.shape), tuple(v.shape)))
            kind = self.kind
            p, v = self._with_rank(p, rank, kind), self._with_rank(v, rank, kind)
            m = self._with_rank(m, rank, Kind.BOOL)
        return self._new(self._op("mask_where")(p, m, v))

    def mask_fill(self, mask: Tensor, value: Number) -> Tensor:
        """``value`` where ``mask`` is true, else this tensor's values (the two shapes broadcast)."""
        self._check_mask("mask_fill", mask)
        p, m = self._primitive, mask._primitive
        if p.shape != m.shape:
            rank = len(broadcast_shapes("mask_fill", tuple(p.shape), tuple(m.shape)))
            p, m = self._with_rank(p, rank, self.kind), self._with_rank(m, rank, Kind.BOOL)
        return self._new(self._op("mask_fill")(p, m, self._scalar("mask_fill", value)))

    def argwhere(self) -> Tensor:
        """Int indices of the non-zero (true) values, one row per value: shape ``[count, rank]``."""
        mask = self.bool()
        return mask._new(self._device.backend.bool_argwhere(mask._primitive))

    def nonzero(self) -> list[Tensor]:
        """Int indices of the non-zero values, one 1-d tensor per dim."""
        rows = self.argwhere()
        return [rows.narrow(1, d, 1).squeeze_dim(1) for d in range(self.rank)]

    # == autodiff ==================================================================================
    def _autodiff(self, op: str) -> AutodiffBackend:
        backend = self._device.backend
        if not isinstance(backend, AutodiffBackend):
            raise TypeError(
                f"{op}: the tensor's backend {backend.name!r} has no autodiff; use an Autodiff(...) device"
            )
        return backend

    def require_grad(self) -> Tensor:
        """This Float tensor marked as a leaf whose gradient ``backward`` computes."""
        return self.set_require_grad(True)

    def set_require_grad(self, require_grad: bool) -> Tensor:
        """This Float tensor, marked (or unmarked) for gradients."""
        self._require_kind("set_require_grad", Kind.FLOAT)
        return self._new(self._device.backend.float_set_require_grad(self._primitive, require_grad))

    def is_require_grad(self) -> bool:
        """Whether gradients are computed for this tensor."""
        return self.kind is Kind.FLOAT and self._device.backend.float_is_require_grad(self._primitive)

    def detach(self) -> Tensor:
        """This tensor cut from the autodiff graph."""
        if self.kind is not Kind.FLOAT:
            return self
        return self._new(self._device.backend.float_detach(self._primitive))

    def backward(self) -> Gradients:
        """Gradients of this tensor (seeded with ones) with respect to every tensor that requires them."""
        self._require_kind("backward", Kind.FLOAT)
        return self._autodiff("backward").backward(self._primitive)

    def _inner_device(self) -> Device:
        return self._autodiff("inner").inner.device(self._device.index)

    def grad(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in ``grads``, on the inner backend (``None`` if it has none)."""
        backend = self._autodiff("grad")
        _check_gradients("grad", grads)
        gradient = backend.grad(self._primitive, grads)
        return None if gradient is None else Tensor(gradient, self._inner_device())

    def grad_remove(self, grads: Gradients) -> Tensor | None:
        """Remove and return this tensor's gradient from ``grads``."""
        backend = self._autodiff("grad_remove")
        _check_gradients("grad_remove", grads)
        gradient = backend.grad_remove(self._primitive, grads)
        return None if gradient is None else Tensor(gradient, self._inner_device())

    def grad_replace(self, grads: Gradients, gradient: Tensor) -> None:
        """Replace this tensor's gradient in ``grads``."""
        backend = self._autodiff("grad_replace")
        _check_gradients("grad_replace", grads)
        if not isinstance(gradient, TensorBase):
            raise TypeError(f"grad_replace: the gradient must be a Tensor, got {type(gradient).__name__}")
        inner = backend.inner.device(self._device.index)
        if gradient._device != inner:
            raise ValueError(
                f"grad_replace: the gradient must live on the inner device {inner}, got a tensor on "
                f"{gradient._device}"
            )
        backend.grad_replace(self._primitive, grads, gradient._primitive)

    def inner(self) -> Tensor:
        """This tensor on the inner backend of its autodiff backend, cut from the graph."""
        backend = self._autodiff("inner")
        primitive = getattr(backend, self.kind.prefix + "inner")(self._primitive)
        return Tensor(primitive, self._inner_device())

    @classmethod
    def from_inner(cls, tensor: Tensor, device: Device) -> Tensor:
        """``tensor`` (on an autodiff backend's inner backend) lifted onto the autodiff ``device``.

        Raises:
            TypeError: ``device`` is not an autodiff device, or ``tensor`` is not a Tensor.
            ValueError: ``tensor`` is not on the inner device of ``device`` (say, a tensor of the
                autodiff backend itself, or of another backend).
        """
        if not isinstance(device, Device):
            raise TypeError(f"from_inner: expected a Device, got {device!r}")
        backend = device.backend
        if not isinstance(backend, AutodiffBackend):
            raise TypeError(f"from_inner: {device} is not a device of an autodiff backend")
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"from_inner: expected a Tensor, got {type(tensor).__name__}")
        check_device_exists("from_inner", device)
        inner = backend.inner.device(device.index)
        if tensor._device != inner:
            raise ValueError(
                f"from_inner: the tensor must live on the inner device of {device}, {inner}; "
                f"got one on {tensor._device}{device_difference(tensor._device, inner)}"
            )
        return cls(getattr(backend, tensor.kind.prefix + "from_inner")(tensor._primitive), device)

    # == Python protocol ===========================================================================
    def __add__(self, other: Tensor | Number | NDArray) -> Tensor:
        return self._arith("add", other)

    def __radd__(self, other: Number | NDArray) -> Tensor:
        return self._arith("add", other)

    def __sub__(self, other: Tensor | Number | NDArray) -> Tensor:
        return self._arith("sub", other)

    def __rsub__(self, other: Number | NDArray) -> Tensor:
        return self.neg()._arith("add", other)

    def __mul__(self, other: Tensor | Number | NDArray) -> Tensor:
        return self._arith("mul", other)

    def __rmul__(self, other: Number | NDArray) -> Tensor:
        return self._arith("mul", other)

    def __truediv__(self, other: Tensor | Number | NDArray) -> Tensor:
        if self.kind is Kind.INT:
            raise TypeError("/: true division of an Int tensor; use // for floor division or .float() first")
        return self._arith("div", other)

    def __rtruediv__(self, other: Number | NDArray) -> Tensor:
        self._require_kind("/", Kind.FLOAT)
        return self.recip()._arith("mul", other)

    def __floordiv__(self, other: Tensor | Number | NDArray) -> Tensor:
        if self.kind is Kind.FLOAT:
            return self._arith("div", other).floor()
        return self._arith("div", other)

    def __rfloordiv__(self, other: Number | NDArray) -> Tensor:
        return self._reflected("div", other).__floordiv__(self)

    def __mod__(self, other: Tensor | Number | NDArray) -> Tensor:
        return self._arith("remainder", other)

    def __rmod__(self, other: Number | NDArray) -> Tensor:
        return self._reflected("remainder", other)._arith("remainder", self)

    def _reflected(self, op: str, other: object) -> Tensor:
        """The left operand of a reflected operator as a tensor of this tensor's dtype and device."""
        if isinstance(other, np.ndarray):
            return self._array_operand(op, other)
        return self.full_like(self._scalar(op, other))

    def __pow__(self, exponent: Tensor | Number | NDArray) -> Tensor:
        return self.pow(exponent)

    def __rpow__(self, base: Number | NDArray) -> Tensor:
        if isinstance(base, np.ndarray):
            return self._array_operand("pow", base).pow(self)
        return self.full_like(base).pow(self)

    def __matmul__(self, other: Tensor) -> Tensor:
        return self.matmul(other)

    def __neg__(self) -> Tensor:
        return self.neg()

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    def __invert__(self) -> Tensor:
        return self.bool_not() if self.kind is Kind.BOOL else self.bitwise_not()

    def __and__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bool_and(other) if self.kind is Kind.BOOL else self.bitwise_and(other)  # type: ignore[arg-type]

    def __or__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bool_or(other) if self.kind is Kind.BOOL else self.bitwise_or(other)  # type: ignore[arg-type]

    def __xor__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bool_xor(other) if self.kind is Kind.BOOL else self.bitwise_xor(other)  # type: ignore[arg-type]

    def __lshift__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bitwise_left_shift(other)

    def __rshift__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bitwise_right_shift(other)

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return self.equal(other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return self.not_equal(other)  # type: ignore[arg-type]

    def __gt__(self, other: Tensor | Number) -> Tensor:
        return self.greater(other)

    def __ge__(self, other: Tensor | Number) -> Tensor:
        return self.greater_equal(other)

    def __lt__(self, other: Tensor | Number) -> Tensor:
        return self.lower(other)

    def __le__(self, other: Tensor | Number) -> Tensor:
        return self.lower_equal(other)

    __hash__ = TensorBase.__hash__  # identity, as PyTorch's tensors: usable as dict keys

    def __bool__(self) -> bool:
        if self.num_elements() != 1:
            raise ValueError(
                f"the truth value of a tensor of shape {self.dims()} is ambiguous; use .any() or .all()"
            )
        return bool(self.into_scalar())

    def __float__(self) -> float:
        return float(self.into_scalar())

    def __int__(self) -> int:
        return int(self.into_scalar())

    def __index__(self) -> int:
        if self.kind is not Kind.INT:
            raise TypeError(
                f"only Int tensors of one element can be used as an index, got a {self._describe()}"
            )
        return int(self.into_scalar())

    def __len__(self) -> int:
        if self.rank == 0:
            raise TypeError("len() of a tensor of rank 0")
        return int(self._primitive.shape[0])

    def __iter__(self) -> Iterator[Tensor]:
        """The sub-tensors along dim 0, each without that dim."""
        if self.rank == 0:
            raise TypeError("iteration over a tensor of rank 0")
        for index in range(self._primitive.shape[0]):
            yield self.narrow(0, index, 1).squeeze_dim(0)

    def __repr__(self) -> str:
        data = self.to_data()
        array = data.to_numpy()
        if data.dtype is DType.BF16:
            array = array.astype(np.float32)
        with np.printoptions(threshold=1000, edgeitems=3, precision=4):
            values = np.array2string(array, separator=", ")
        return (
            "Tensor {\n"
            f"  data:\n{values},\n"
            f"  shape:  {self.dims()},\n"
            f"  device:  {self._device},\n"
            f"  backend:  {self._device.backend.name!r},\n"
            f"  kind:  {KIND_NAMES[self.kind]!r},\n"
            f"  dtype:  {str(self.dtype)!r},\n"
            "}"
        )
