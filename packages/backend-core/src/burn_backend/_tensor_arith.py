"""Arithmetic, element-wise math, comparisons, logic and bits of ``Tensor``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._data import TensorData
from ._dtype import KIND_OF_ID, KIND_OF_TYPE, Kind
from ._shape import broadcast_shapes, normalize_dim
from ._tensor_base import (
    NDArray,
    Number,
    TensorBase,
    int_range,
)
from ._tensor_data import TensorDataOps
from ._tensor_hints import clamp_error
from .quantization._scheme import QuantScheme

if TYPE_CHECKING:
    from ._tensor import Tensor


_INT_DIVISIONS = ("div", "remainder")


def binary_method(
    name: str, doc: str, general: Callable[[Any, Any], Tensor] | None = None
) -> Callable[[Any, Tensor | Number | NDArray], Tensor]:
    """The method ``self <name> other``: the common case inline, everything else by ``general`` (by
    default ``self._arith(name, other)``).

    The common case is a tensor of this tensor's dtype (the same dtype object), shape and device object,
    or a Python float for a Float tensor: no check can fail, so none runs, and the backend method is
    found by the type of the primitive's dtype in one lookup. Every other operand, kind, and every error,
    takes ``general`` (``_arith``'s checks, messages and conversions). Int divisions always do: their
    divisor is checked for zeros."""
    tensor_ops: dict[object, str] = {}
    scalar_ops: dict[object, str] = {}
    for key, kind in [*KIND_OF_TYPE.items(), *KIND_OF_ID.items()]:
        if kind is Kind.FLOAT or (kind is Kind.INT and name not in _INT_DIVISIONS):
            tensor_ops[key] = kind.prefix + name
        if kind is Kind.FLOAT:
            scalar_ops[key] = f"float_{name}_scalar"

    def op(self: Tensor, other: Tensor | Number | NDArray) -> Tensor:
        p = self._primitive
        dtype = p.dtype
        if isinstance(other, TensorBase):
            q = other._primitive
            device = self._device
            if dtype is q.dtype and device is other._device and p.shape == q.shape:
                method = tensor_ops.get(type(dtype)) or tensor_ops.get(id(dtype))
                if method is not None:
                    out = object.__new__(type(self))
                    out._primitive = getattr(device.backend, method)(p, q)
                    out._device = device
                    return out
        elif type(other) is float:
            method = scalar_ops.get(type(dtype)) or scalar_ops.get(id(dtype))
            if method is not None:
                device = self._device
                out = object.__new__(type(self))
                out._primitive = getattr(device.backend, method)(p, other)
                out._device = device
                return out
        if general is not None:
            return general(self, other)
        return self._arith(name, other)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def _float_unary(name: str, doc: str) -> Callable[[Any], Tensor]:
    method = f"float_{name}"

    def op(self: Tensor) -> Tensor:
        self._require_kind(name, Kind.FLOAT)
        if type(self._primitive.dtype) is not QuantScheme:
            return self._new(getattr(self._device.backend, method)(self._primitive))
        return self._new(self._op(name)(self._primitive))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{doc}\n\nFloat tensors only; the result has the input's shape and dtype."
    return op


def _comparison(name: str, symbol: str) -> Callable[[Any, Tensor | Number], Tensor]:
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
            return self._new(getattr(backend, self._prefix + name)(p, q))
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


def _elem_comparison(name: str, symbol: str) -> Callable[[Any, Number], Tensor]:
    def op(self: Tensor, other: object) -> Tensor:
        if isinstance(other, TensorBase):
            raise TypeError(f"{name}_elem: expected a scalar, got a tensor; use {name}(...)")
        return getattr(self, name)(other)  # type: ignore[no-any-return]

    op.__name__ = op.__qualname__ = f"{name}_elem"
    op.__doc__ = f"Element-wise ``self {symbol} scalar`` as a Bool tensor (Burn's ``{name}_elem``)."
    return op


class TensorArithmetic(TensorDataOps):
    """Arithmetic, element-wise math, comparisons, logic and bits."""

    __slots__ = ()

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
            return self._new(getattr(backend, self._prefix + name)(p, q))
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
        method = getattr(self._device.backend, self._prefix + name + "_scalar")
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
        return self._cls.from_data(TensorData(array, dtype), self._device, dtype)

    add = binary_method(
        "add",
        """``self + other``: a tensor of the same dtype (shapes broadcast), a NumPy array or a scalar.""",
    )
    sub = binary_method("sub", """``self - other``.""")
    mul = binary_method("mul", """``self * other``.""")
    div = binary_method(
        "div",
        """``self / other``; on Int tensors, floor division.

        Raises:
            ZeroDivisionError: an Int division by zero (a tensor divisor is read where the backend
                ``validates_index_values``).
        """,
    )
    remainder = binary_method(
        "remainder",
        """``self % other``, with the sign of ``other`` (Python's and PyTorch's convention).

        Raises:
            ZeroDivisionError: an Int remainder by zero (as for ``div``).
        """,
    )

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
        return self.mul(cast("Tensor", self))

    def clamp(
        self,
        minimum: Number | None = None,
        maximum: Number | None = None,
        *,
        min: None = None,  # PyTorch's keywords, only to name clamp_min / clamp_max in the error
        max: None = None,
    ) -> Tensor:
        """Values limited to ``[minimum, maximum]`` (both bounds; ``clamp_min`` and ``clamp_max`` take one).

        Raises:
            TypeError: called as PyTorch's ``clamp``, with ``min=``/``max=`` or one bound: the message
                names ``clamp_min``, ``clamp_max`` or ``clamp(min, max)``.
            ValueError: ``minimum`` is above ``maximum``.

        Example:
            >>> Tensor.from_data([-1.0, 0.5, 2.0]).clamp(0.0, 1.0).tolist()
            [0.0, 0.5, 1.0]
        """
        if minimum is None or maximum is None or min is not None or max is not None:
            keywords = {name: value for name, value in (("min", min), ("max", max)) if value is not None}
            raise clamp_error(minimum, maximum, keywords)
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
    erfinv = _float_unary(
        "erfinv",
        "The inverse error function: ``x`` with ``erf(x)`` equal to the value (``inf`` at 1, NaN beyond).",
    )
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
