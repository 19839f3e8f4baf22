"""Reductions (``Reduce*``), ``ArgMax``/``ArgMin``, cumulative sums and products, and ``TopK``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import Kind, Tensor

from ._registry import Context, Value, register
from ._util import axis as norm_axis
from ._util import np_result

__all__: list[str] = []

Array = np.ndarray[Any, Any]

# from which opset each reduction takes its axes as an input rather than an attribute
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _axes(ctx: Context, rank: int, axes: Value) -> list[int] | None:
    """The reduced dims, sorted; ``None`` for the identity (``noop_with_empty_axes``)."""
    given: list[int] | None
    if axes is not None:
        given = ctx.ints(axes)
    else:
        attr = ctx.attr("axes")
        given = None if attr is None else [int(a) for a in attr]
    if not given:
        if int(ctx.attr("noop_with_empty_axes", 0)):
            return None
        return list(range(rank))
    return sorted({norm_axis(ctx, a, rank) for a in given})


def _out_dims(dims: list[int], axes: list[int], keep: bool) -> list[int]:
    if keep:
        return [1 if i in axes else d for i, d in enumerate(dims)]
    return [d for i, d in enumerate(dims) if i not in axes]


_EMPTY_FILL = {
    "ReduceSum": 0.0,
    "ReduceSumSquare": 0.0,
    "ReduceL1": 0.0,
    "ReduceL2": 0.0,
    "ReduceMean": math.nan,
    "ReduceProd": 1.0,
    "ReduceMax": -math.inf,
    "ReduceMin": math.inf,
    "ReduceLogSum": -math.inf,
    "ReduceLogSumExp": -math.inf,
}


def _reduce_dims(t: Tensor, axes: list[int], method: str) -> Tensor:
    for a in axes:
        t = getattr(t, method)(a)
    return t


def _run_reduce(op: str, ctx: Context, x: Value, axes: Value) -> Tensor:
    t = ctx.tensor(x)
    keep = bool(int(ctx.attr("keepdims", 1)))
    which = _axes(ctx, t.rank, axes)
    if which is None:
        return t
    dims = t.dims()
    out_dims = _out_dims(dims, which, keep)
    if t.num_elements() == 0:
        fill = _EMPTY_FILL[op]
        if t.kind is not Kind.FLOAT:
            info = np.iinfo(t.dtype.numpy) if t.kind is Kind.INT else None
            fill = (
                0
                if fill in (0.0, math.nan)
                else 1
                if fill == 1.0
                else (info.min if fill < 0 else info.max)
                if info is not None
                else 0
            )
        return Tensor.full(out_dims, fill, t.device, t.dtype)
    if t.rank == 0:
        which = []
    is_bool = t.kind is Kind.BOOL
    if is_bool:
        t = t.int("i8")
    if op == "ReduceSum":
        out = _reduce_dims(t, which, "sum_dim")
    elif op == "ReduceMean":
        out = _reduce_dims(t, which, "sum_dim").div_scalar(math.prod(dims[a] for a in which))
    elif op == "ReduceMax":
        out = _reduce_dims(t, which, "max_dim")
    elif op == "ReduceMin":
        out = _reduce_dims(t, which, "min_dim")
    elif op == "ReduceProd":
        out = _reduce_dims(t, which, "prod_dim")
    elif op == "ReduceSumSquare":
        out = _reduce_dims(t.mul(t), which, "sum_dim")
    elif op == "ReduceL1":
        out = _reduce_dims(t.abs(), which, "sum_dim")
    elif op == "ReduceL2":
        squares = t.mul(t)
        out = _reduce_dims(squares if t.kind is Kind.FLOAT else squares.float("f64"), which, "sum_dim").sqrt()
        if t.kind is not Kind.FLOAT:
            out = out.int(t.dtype)
    elif op == "ReduceLogSum":
        out = _reduce_dims(t, which, "sum_dim").log()
    elif op == "ReduceLogSumExp":
        peak = _reduce_dims(t, which, "max_dim")
        peak = peak.mask_fill(peak.is_inf(), 0.0)
        out = _reduce_dims(t.sub(peak).exp(), which, "sum_dim").log().add(peak)
    else:  # pragma: no cover - registration lists the names
        raise ctx.error(f"unknown reduction {op}")
    if is_bool:
        out = out.bool()
    return out.reshape(out_dims)


def _np_reduce(op: str, x: Array, axes: tuple[int, ...], keep: bool) -> Array:
    with np.errstate(all="ignore"):
        return np.asarray(_np_reduce_any(op, x, axes, keep))


def _np_reduce_any(op: str, x: Array, axes: tuple[int, ...], keep: bool) -> Any:
    if True:
        if op == "ReduceSum":
            return np.sum(x, axis=axes, keepdims=keep)
        if op == "ReduceMean":
            return np.mean(x, axis=axes, keepdims=keep)
        if op == "ReduceMax":
            return np.max(x, axis=axes, keepdims=keep, initial=_initial(x, -1))
        if op == "ReduceMin":
            return np.min(x, axis=axes, keepdims=keep, initial=_initial(x, 1))
        if op == "ReduceProd":
            return np.prod(x, axis=axes, keepdims=keep)
        if op == "ReduceSumSquare":
            return np.sum(x * x, axis=axes, keepdims=keep)
        if op == "ReduceL1":
            return np.sum(np.abs(x), axis=axes, keepdims=keep)
        if op == "ReduceL2":
            return np.sqrt(np.sum(x * x, axis=axes, keepdims=keep))
        if op == "ReduceLogSum":
            return np.log(np.sum(x, axis=axes, keepdims=keep))
        return np.log(np.sum(np.exp(x), axis=axes, keepdims=keep))


def _initial(x: Array, sign: int) -> Any:
    if x.size:
        return None
    if x.dtype.kind == "f":
        return sign * -np.inf
    if x.dtype.kind == "b":
        return sign < 0
    info = np.iinfo(x.dtype)
    return info.min if sign < 0 else info.max


def _register_reduce(op: str) -> None:
    def run(ctx: Context, x: Value, axes: Value = None) -> Tensor:
        return _run_reduce(op, ctx, x, axes)

    def host(ctx: Context, x: Array, axes: Array | None = None) -> Array:
        which = _axes(ctx, x.ndim, axes)
        if which is None:
            return x
        out = _np_reduce(op, x, tuple(which), bool(int(ctx.attr("keepdims", 1))))
        return np_result(out, x.dtype)

    register(op, attrs=("axes", "keepdims", "noop_with_empty_axes"), host=host)(run)


for _op in _EMPTY_FILL:
    _register_reduce(_op)


# -- arg reductions -------------------------------------------------------------------------------
def _arg(ctx: Context, x: Value, largest: bool) -> Tensor:
    t = ctx.tensor(x)
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), t.rank)
    keep = int(ctx.attr("keepdims", 1))
    last = int(ctx.attr("select_last_index", 0))
    if t.kind is Kind.BOOL:
        t = t.int("i8")
    source = t.flip([ax]) if last else t
    index = source.argmax(ax) if largest else source.argmin(ax)
    index = index.int("i64")
    if last:
        index = index.neg().add_scalar(t.dims()[ax] - 1)
    return index if keep else index.squeeze_dim(ax)


@register("ArgMax", attrs=("axis", "keepdims", "select_last_index"))
def arg_max(ctx: Context, x: Value) -> Tensor:
    return _arg(ctx, x, True)


@register("ArgMin", attrs=("axis", "keepdims", "select_last_index"))
def arg_min(ctx: Context, x: Value) -> Tensor:
    return _arg(ctx, x, False)


# -- scans ----------------------------------------------------------------------------------------
def _cumulative(ctx: Context, x: Value, axis: Value, method: str, identity: float) -> Tensor:
    t = ctx.tensor(x)
    ax = norm_axis(ctx, int(ctx.scalar(axis)), t.rank)
    reverse, exclusive = int(ctx.attr("reverse", 0)), int(ctx.attr("exclusive", 0))
    if reverse:
        t = t.flip([ax])
    out = getattr(t, method)(ax)
    if exclusive:
        size = t.dims()[ax]
        head = Tensor.full(
            [1 if d == ax else s for d, s in enumerate(t.dims())],
            identity if t.kind is Kind.FLOAT else int(identity),
            t.device,
            t.dtype,
        )
        out = Tensor.cat([head, out.narrow(ax, 0, size - 1)], ax) if size > 1 else head.expand(t.dims())
    result: Tensor = out.flip([ax]) if reverse else out
    return result


@register("CumSum", attrs=("exclusive", "reverse"))
def cum_sum(ctx: Context, x: Value, axis: Value) -> Tensor:
    return _cumulative(ctx, x, axis, "cumsum", 0.0)


@register("CumProd", attrs=("exclusive", "reverse"))
def cum_prod(ctx: Context, x: Value, axis: Value) -> Tensor:
    return _cumulative(ctx, x, axis, "cumprod", 1.0)


# -- top k ----------------------------------------------------------------------------------------
@register("TopK", attrs=("axis", "k", "largest", "sorted"))
def top_k(ctx: Context, x: Value, k: Value = None) -> tuple[Tensor, Tensor]:
    t = ctx.tensor(x)
    ax = norm_axis(ctx, int(ctx.attr("axis", -1)), t.rank)
    count = int(ctx.attr("k")) if k is None else int(ctx.scalar(k))
    largest = bool(int(ctx.attr("largest", 1)))
    if largest and t.kind is not Kind.BOOL:
        # sort the negation ascending: ties keep the lower index first (a stable ascending sort)
        keys = t.neg() if t.dtype.is_signed else t.max().sub(t) if t.kind is Kind.INT else t.neg()
        _, index = keys.sort_with_indices(ax)
    else:
        _, index = t.sort_with_indices(ax)
    index = index.narrow(ax, 0, count).int("i64")
    return t.gather(ax, index), index
