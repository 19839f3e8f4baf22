"""Element-wise operators: arithmetic, comparisons, logic, bitwise ops, math functions and their
variadic forms (``Sum``, ``Mean``, ``Max``, ``Min``), ``Where`` and ``Clip``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from burn_backend import Kind, Tensor

from ._registry import Context, Value, register
from ._util import np_result, same_dtype

__all__: list[str] = []

Array = np.ndarray[Any, Any]


# -- binary arithmetic ----------------------------------------------------------------------------
def _int_trunc_div(x: Tensor, y: Tensor) -> Tensor:
    """Integer division rounding toward zero (C's and ONNX's), from Burn's floor division."""
    q = x.div(y)
    r = x.sub(q.mul(y))
    if not x.dtype.is_signed:
        return q
    adjust = r.not_equal_elem(0).bool_and(x.lower_elem(0).bool_xor(y.lower_elem(0)))
    return q.add(adjust.int(x.dtype))


def _host_div(ctx: Context, a: Array, b: Array) -> Array:
    if a.dtype.kind in "iu":
        with np.errstate(all="ignore"):
            q = np.floor_divide(a, b)
            r = np.remainder(a, b)
        adjust = (r != 0) & ((a < 0) ^ (b < 0))
        return np_result(q + adjust.astype(q.dtype), a.dtype)
    with np.errstate(all="ignore"):
        return np_result(np.divide(a, b), a.dtype)


def _binary_host(fn: Callable[[Array, Array], Array]) -> Callable[..., Array]:
    def host(ctx: Context, a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            return np_result(fn(a, b), a.dtype)

    return host


@register("Add", host=_binary_host(np.add))
def add(ctx: Context, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    return _bool_safe(x, y, Tensor.add)


@register("Sub", host=_binary_host(np.subtract))
def sub(ctx: Context, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    return _bool_safe(x, y, Tensor.sub)


@register("Mul", host=_binary_host(np.multiply))
def mul(ctx: Context, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    return _bool_safe(x, y, Tensor.mul)


@register("Div", host=_host_div)
def div(ctx: Context, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    if x.kind is Kind.INT:
        return _int_trunc_div(x, y)
    return x.div(y)


def _bool_safe(x: Tensor, y: Tensor, op: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    if x.kind is Kind.BOOL:
        return op(x.int(), y.int()).bool()
    return op(x, y)


def _host_mod(ctx: Context, a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        if int(ctx.attr("fmod", 0)) == 1:
            return np_result(np.fmod(a, b), a.dtype)
        return np_result(np.mod(a, b), a.dtype)


@register("Mod", attrs=("fmod",), host=_host_mod)
def mod(ctx: Context, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    if int(ctx.attr("fmod", 0)) == 1:
        if x.kind is Kind.INT:
            return x.sub(_int_trunc_div(x, y).mul(y))
        return x.sub(x.div(y).trunc().mul(y))
    return x.remainder(y)


def _host_pow(ctx: Context, a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        if a.dtype.kind in "iu" and b.dtype.kind == "f":
            return np_result(np.power(a.astype(np.float64), b), a.dtype)
        return np_result(np.power(a, b.astype(a.dtype) if a.dtype.kind == "f" else b), a.dtype)


@register("Pow", host=_host_pow)
def pow_(ctx: Context, a: Value, b: Value) -> Tensor:
    x = ctx.tensor(a)
    if x.kind is Kind.FLOAT:
        e = ctx.tensor(np.asarray(b).astype(x.dtype.numpy, copy=False) if not isinstance(b, Tensor) else b)
        if e.kind is not Kind.FLOAT or e.dtype != x.dtype:
            e = e.float(x.dtype)
        if e.rank == 0 and not isinstance(b, Tensor):
            return x.powf(float(np.asarray(b)))
        return x.powf(e)
    e = ctx.tensor(b)
    if e.kind is Kind.FLOAT:
        return x.float("f64").powf(e.float("f64")).int(x.dtype)
    return x.powi(e.int(x.dtype) if e.dtype != x.dtype else e)


# -- comparisons and logic ------------------------------------------------------------------------
def _compare(name: str, fn: Callable[[Array, Array], Array]) -> None:
    def run(ctx: Context, a: Value, b: Value) -> Tensor:
        x, y = same_dtype(ctx, a, b)
        if x.kind is Kind.BOOL:
            if name == "equal":
                return x.bool_xor(y).bool_not()
            x, y = x.int("i8"), y.int("i8")
        return getattr(x, name)(y)  # type: ignore[no-any-return]

    def host(ctx: Context, a: Array, b: Array) -> Array:
        return np_result(fn(a, b))

    op_type = {
        "equal": "Equal",
        "lower": "Less",
        "greater": "Greater",
        "lower_equal": "LessOrEqual",
        "greater_equal": "GreaterOrEqual",
    }[name]
    register(op_type, host=host)(run)


_compare("equal", np.equal)
_compare("lower", np.less)
_compare("greater", np.greater)
_compare("lower_equal", np.less_equal)
_compare("greater_equal", np.greater_equal)


def _logic(op_type: str, method: str, fn: Callable[[Array, Array], Array]) -> None:
    def run(ctx: Context, a: Value, b: Value) -> Tensor:
        x, y = same_dtype(ctx, a, b)
        return getattr(x, method)(y)  # type: ignore[no-any-return]

    register(op_type, host=lambda ctx, a, b: np_result(fn(a, b)))(run)


_logic("And", "bool_and", np.logical_and)
_logic("Or", "bool_or", np.logical_or)
_logic("Xor", "bool_xor", np.logical_xor)


@register("Not", host=lambda ctx, a: np_result(np.logical_not(a)))
def not_(ctx: Context, a: Value) -> Tensor:
    return ctx.tensor(a).bool_not()


def _bitwise(op_type: str, method: str, fn: Callable[[Array, Array], Array]) -> None:
    def run(ctx: Context, a: Value, b: Value) -> Tensor:
        x, y = same_dtype(ctx, a, b)
        return getattr(x, method)(y)  # type: ignore[no-any-return]

    register(op_type, host=lambda ctx, a, b: np_result(fn(a, b), a.dtype))(run)


_bitwise("BitwiseAnd", "bitwise_and", np.bitwise_and)
_bitwise("BitwiseOr", "bitwise_or", np.bitwise_or)
_bitwise("BitwiseXor", "bitwise_xor", np.bitwise_xor)


@register("BitwiseNot", host=lambda ctx, a: np_result(np.invert(a), a.dtype))
def bitwise_not(ctx: Context, a: Value) -> Tensor:
    return ctx.tensor(a).bitwise_not()


def _check_shift(node: Any) -> str | None:
    direction = node.attrs.get("direction", "")
    return None if direction in ("LEFT", "RIGHT") else f"direction {direction!r} is not LEFT or RIGHT"


@register("BitShift", attrs=("direction",), check=_check_shift)
def bit_shift(ctx: Context, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    if ctx.attr("direction") == "LEFT":
        return x.bitwise_left_shift(y)
    return x.bitwise_right_shift(y)


# -- unary ----------------------------------------------------------------------------------------
def _unary(op_type: str, method: str, host: Callable[[Array], Array] | None = None) -> None:
    def run(ctx: Context, a: Value) -> Tensor:
        return getattr(ctx.tensor(a), method)()  # type: ignore[no-any-return]

    host_fn = None
    if host is not None:
        fn = host

        def host_fn(ctx: Context, a: Array) -> Array:
            with np.errstate(all="ignore"):
                return np_result(fn(a), a.dtype)

    register(op_type, host=host_fn)(run)


_UNARY: list[tuple[str, str, Callable[[Array], Array] | None]] = [
    ("Abs", "abs", np.abs),
    ("Neg", "neg", np.negative),
    ("Sign", "sign", np.sign),
    ("Floor", "floor", np.floor),
    ("Ceil", "ceil", np.ceil),
    ("Round", "round", np.round),
    ("Sqrt", "sqrt", np.sqrt),
    ("Exp", "exp", np.exp),
    ("Log", "log", np.log),
    ("Reciprocal", "recip", np.reciprocal),
    ("Sin", "sin", np.sin),
    ("Cos", "cos", np.cos),
    ("Tan", "tan", np.tan),
    ("Asin", "asin", np.arcsin),
    ("Acos", "acos", np.arccos),
    ("Atan", "atan", np.arctan),
    ("Sinh", "sinh", np.sinh),
    ("Cosh", "cosh", np.cosh),
    ("Tanh", "tanh", np.tanh),
    ("Asinh", "asinh", np.arcsinh),
    ("Acosh", "acosh", np.arccosh),
    ("Atanh", "atanh", np.arctanh),
    ("Erf", "erf", None),
]
for _op, _method, _np in _UNARY:
    _unary(_op, _method, _np)


@register("IsNaN", host=lambda ctx, a: np_result(np.isnan(a)))
def is_nan(ctx: Context, a: Value) -> Tensor:
    return ctx.tensor(a).is_nan()


@register("IsInf", attrs=("detect_negative", "detect_positive"))
def is_inf(ctx: Context, a: Value) -> Tensor:
    x = ctx.tensor(a)
    neg, pos = int(ctx.attr("detect_negative", 1)), int(ctx.attr("detect_positive", 1))
    inf = x.is_inf()
    if neg and pos:
        return inf
    if pos:
        return inf.bool_and(x.greater_elem(0))
    if neg:
        return inf.bool_and(x.lower_elem(0))
    return inf.bool_and(inf.bool_not())


# -- variadic -------------------------------------------------------------------------------------
def _variadic(op_type: str, combine: Callable[[Tensor, Tensor], Tensor], np_fn: Any) -> None:
    def run(ctx: Context, *values: Value) -> Tensor:
        tensors = [ctx.tensor(v) for v in values if v is not None]
        out = tensors[0]
        for other in tensors[1:]:
            out = combine(out, other)
        if op_type == "Mean":
            out = out.div_scalar(len(tensors))
        return out

    def host(ctx: Context, *values: Array) -> Array:
        arrays = [v for v in values if v is not None]
        out = functools.reduce(np_fn, arrays)
        if op_type == "Mean":
            out = out / len(arrays)
        return np_result(out, arrays[0].dtype)

    register(op_type, host=host)(run)


def _maximum(a: Tensor, b: Tensor) -> Tensor:
    a, b = _broadcast_pair(a, b)
    return a.mask_where(b.greater(a).bool_or(b.is_nan() if b.kind is Kind.FLOAT else b.greater(a)), b)


def _minimum(a: Tensor, b: Tensor) -> Tensor:
    a, b = _broadcast_pair(a, b)
    return a.mask_where(b.lower(a).bool_or(b.is_nan() if b.kind is Kind.FLOAT else b.lower(a)), b)


def _broadcast_pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    if a.dims() == b.dims():
        return a, b
    shape = list(np.broadcast_shapes(tuple(a.dims()), tuple(b.dims())))
    return a.unsqueeze(rank=len(shape)).expand(shape), b.unsqueeze(rank=len(shape)).expand(shape)


_variadic("Sum", Tensor.add, np.add)
_variadic("Mean", Tensor.add, np.add)
_variadic("Max", _maximum, np.maximum)
_variadic("Min", _minimum, np.minimum)


# -- selection ------------------------------------------------------------------------------------
def _host_where(ctx: Context, c: Array, a: Array, b: Array) -> Array:
    return np_result(np.where(c, a, b), a.dtype)


@register("Where", host=_host_where)
def where(ctx: Context, cond: Value, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    mask = ctx.tensor(cond)
    if not x.dims() == y.dims() == mask.dims():
        shape = list(np.broadcast_shapes(tuple(x.dims()), tuple(y.dims()), tuple(mask.dims())))
        rank = len(shape)
        x, y = x.unsqueeze(rank=rank).expand(shape), y.unsqueeze(rank=rank).expand(shape)
        mask = mask.unsqueeze(rank=rank).expand(shape)
    return y.mask_where(mask, x)


def _host_clip(ctx: Context, x: Array, low: Array | None = None, high: Array | None = None) -> Array:
    lo = ctx.attr("min") if low is None else low.reshape(()).item()
    hi = ctx.attr("max") if high is None else high.reshape(()).item()
    out = x
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return np_result(out, x.dtype)


@register("Clip", attrs=("min", "max"), host=_host_clip)
def clip(ctx: Context, a: Value, low: Value = None, high: Value = None) -> Tensor:
    x = ctx.tensor(a)
    lo = ctx.attr("min") if low is None else ctx.scalar(low)
    hi = ctx.attr("max") if high is None else ctx.scalar(high)
    if x.kind is Kind.INT:
        lo = None if lo is None else int(lo)
        hi = None if hi is None else int(hi)
    if lo is not None and hi is not None and lo > hi:
        return x.full_like(hi)
    if lo is not None:
        x = x.clamp_min(lo)
    if hi is not None:
        x = x.clamp_max(hi)
    return x
