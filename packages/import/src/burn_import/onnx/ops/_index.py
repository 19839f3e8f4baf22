"""Indexing operators: gathers, scatters, ``OneHot``, ``Compress``, ``NonZero``, ``Unique`` and
``ReverseSequence``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import DType, Kind, Tensor

from .._ir import Node
from ._registry import Context, Value, register, to_tensor
from ._util import axis as norm_axis
from ._util import same_dtype

__all__: list[str] = []

Array = np.ndarray[Any, Any]
_REDUCTIONS = {"none": "assign", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _indices(ctx: Context, indices: Value, size: int) -> Tensor:
    """Int64 indices with negative ones counted from the end of a dim of ``size``."""
    if not isinstance(indices, Tensor):
        array = np.asarray(indices).astype(np.int64)
        return to_tensor(np.where(array < 0, array + size, array), ctx.device)
    idx = indices if indices.dtype is DType.I64 else indices.int("i64")
    if idx.num_elements() == 0:
        return idx
    return idx.mask_where(idx.lower_elem(0), idx.add_scalar(size))


def _host_gather(ctx: Context, data: Array, indices: Array) -> Array:
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), data.ndim)
    return np.take(data, indices.astype(np.int64), axis=ax)


@register("Gather", attrs=("axis",), host=_host_gather)
def gather(ctx: Context, data: Value, indices: Value) -> Tensor:
    t = ctx.tensor(data)
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), t.rank)
    dims = t.dims()
    idx = _indices(ctx, indices, dims[ax])
    index_dims = idx.dims()
    out_dims = dims[:ax] + index_dims + dims[ax + 1 :]
    if idx.num_elements() == 0 or t.num_elements() == 0:
        return Tensor.empty(out_dims, t.device, t.dtype)
    picked = t.select(ax, idx.reshape([-1]))
    return picked.reshape(out_dims)


@register("GatherElements", attrs=("axis",))
def gather_elements(ctx: Context, data: Value, indices: Value) -> Tensor:
    t = ctx.tensor(data)
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), t.rank)
    idx = _indices(ctx, indices, t.dims()[ax])
    shape = idx.dims()
    region = [slice(0, s) if d != ax else slice(None) for d, s in enumerate(shape)]
    return t.slice(region).gather(ax, idx)


@register("GatherND", attrs=("batch_dims",))
def gather_nd(ctx: Context, data: Value, indices: Value) -> Tensor:
    t = ctx.tensor(data)
    b = int(ctx.attr("batch_dims", 0))
    raw = ctx.array(indices).astype(np.int64)
    k = raw.shape[-1]
    dims = t.dims()
    raw = np.where(raw < 0, raw + np.array(dims[b : b + k]), raw)
    if b == 0:
        return t.gather_nd(to_tensor(raw, ctx.device))
    batch = dims[:b]
    count = math.prod(batch)
    flat = t.reshape([count, *dims[b:]])
    inner = raw.reshape(count, -1, k)
    rows = np.broadcast_to(np.arange(count).reshape(count, 1, 1), (*inner.shape[:2], 1))
    full_index = np.concatenate([rows, inner], axis=-1).reshape(-1, k + 1)
    picked = flat.gather_nd(to_tensor(full_index, ctx.device))
    return picked.reshape([*batch, *raw.shape[b:-1], *dims[b + k :]])


def _check_reduction(node: Node) -> str | None:
    value = node.attrs.get("reduction", "none")
    return None if value in _REDUCTIONS else f"reduction {value!r} is not supported"


@register("ScatterElements", "Scatter", attrs=("axis", "reduction"), check=_check_reduction)
def scatter_elements(ctx: Context, data: Value, indices: Value, updates: Value) -> Tensor:
    t, u = same_dtype(ctx, data, updates)
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), t.rank)
    idx = _indices(ctx, indices, t.dims()[ax])
    if idx.num_elements() == 0:
        return t
    return t.scatter(ax, idx, u, _REDUCTIONS[ctx.attr("reduction", "none")])


@register("ScatterND", attrs=("reduction",), check=_check_reduction)
def scatter_nd(ctx: Context, data: Value, indices: Value, updates: Value) -> Tensor:
    t, u = same_dtype(ctx, data, updates)
    raw = ctx.array(indices).astype(np.int64)
    k = raw.shape[-1]
    raw = np.where(raw < 0, raw + np.array(t.dims()[:k]), raw)
    return t.scatter_nd(to_tensor(raw, ctx.device), u, _REDUCTIONS[ctx.attr("reduction", "none")])


@register("OneHot", attrs=("axis",))
def one_hot(ctx: Context, indices: Value, depth: Value, values: Value) -> Tensor:
    idx = ctx.tensor(indices)
    size = int(ctx.scalar(depth))
    vals = ctx.tensor(values)
    if idx.kind is Kind.FLOAT or idx.dtype is not DType.I64:
        idx = idx.int("i64")
    idx = idx.mask_where(idx.lower_elem(0), idx.add_scalar(size))
    rank = idx.rank + 1
    ax = norm_axis(ctx, int(ctx.attr("axis", -1)), rank)
    expanded = idx.unsqueeze_dim(ax)
    positions = Tensor.arange(size, device=ctx.device, dtype="i64").reshape(
        [size if d == ax else 1 for d in range(rank)]
    )
    hot = expanded.equal(positions)
    off, on = vals.slice([slice(0, 1)]).reshape([1] * rank), vals.slice([slice(1, 2)]).reshape([1] * rank)
    shape = list(np.broadcast_shapes(tuple(expanded.dims()), tuple(positions.dims())))
    return off.expand(shape).mask_where(hot, on.expand(shape))


@register("Compress", attrs=("axis",))
def compress(ctx: Context, x: Value, condition: Value) -> Tensor:
    t = ctx.tensor(x)
    cond = ctx.array(condition).astype(bool).reshape(-1)
    ax = ctx.attr("axis")
    if ax is None:
        t = t.reshape([-1])
        ax = 0
    ax = norm_axis(ctx, int(ax), t.rank)
    keep = np.nonzero(cond[: t.dims()[ax]])[0].astype(np.int64)
    if keep.size == 0:
        dims = t.dims()
        dims[ax] = 0
        return Tensor.empty(dims, t.device, t.dtype)
    return t.select(ax, to_tensor(keep, ctx.device))


@register("NonZero", host=lambda ctx, x: np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1))
def non_zero(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    if t.rank == 0:
        return to_tensor(np.array(np.nonzero(t.to_numpy().reshape(1)), dtype=np.int64)[:0], ctx.device)
    rows = t.argwhere()
    if rows.num_elements() == 0:
        return Tensor.empty([t.rank, 0], ctx.device, "i64")
    return rows.int("i64").transpose()


@register("Unique", attrs=("axis", "sorted"))
def unique(ctx: Context, x: Value) -> tuple[Tensor, ...]:
    array = ctx.array(x)
    ax = ctx.attr("axis")
    if ax is not None:
        ax = norm_axis(ctx, int(ax), array.ndim)
    values, first, inverse, counts = np.unique(
        array, return_index=True, return_inverse=True, return_counts=True, axis=ax
    )
    if not int(ctx.attr("sorted", 1)):
        order = np.argsort(first, kind="stable")
        values = np.take(values, order, axis=0 if ax is None else ax)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        inverse = rank[inverse.reshape(-1)]
        first, counts = first[order], counts[order]
    out = (values, first, inverse.reshape(-1), counts)
    return tuple(to_tensor(np.asarray(o, dtype=np.int64) if i else o, ctx.device) for i, o in enumerate(out))


@register("ReverseSequence", attrs=("batch_axis", "time_axis"))
def reverse_sequence(ctx: Context, x: Value, lengths: Value) -> Tensor:
    t = ctx.tensor(x)
    lens = ctx.ints(lengths)
    b_ax, t_ax = int(ctx.attr("batch_axis", 1)), int(ctx.attr("time_axis", 0))
    dims = t.dims()
    index = np.empty((dims[b_ax], dims[t_ax]), dtype=np.int64)
    for b, n in enumerate(lens):
        steps = np.arange(dims[t_ax])
        index[b] = np.where(steps < n, n - 1 - steps, steps)
    shape = [1] * t.rank
    shape[b_ax], shape[t_ax] = dims[b_ax], dims[t_ax]
    arranged = index if b_ax < t_ax else index.T
    full = np.broadcast_to(arranged.reshape(shape), dims)
    return t.gather(t_ax, to_tensor(np.array(full), ctx.device))


@register("TensorScatter", attrs=("axis", "mode"))
def tensor_scatter(ctx: Context, cache: Value, update: Value, write_indices: Value = None) -> Tensor:
    t, u = same_dtype(ctx, cache, update)
    ax = norm_axis(ctx, int(ctx.attr("axis", -2)), t.rank)
    batch, length, capacity = t.dims()[0], u.dims()[ax], t.dims()[ax]
    starts = (
        np.zeros(batch, dtype=np.int64)
        if write_indices is None
        else ctx.array(write_indices).astype(np.int64)
    )
    index = starts.reshape(batch, 1) + np.arange(length).reshape(1, length)
    if ctx.attr("mode", "linear") == "circular":
        index = index % capacity
    shape = [1] * t.rank
    shape[0], shape[ax] = batch, length
    if ax == 0:
        index, shape = index[0], [length] + [1] * (t.rank - 1)
    full = np.broadcast_to(index.reshape(shape), u.dims())
    return t.scatter(ax, to_tensor(np.array(full), ctx.device), u, "assign")
