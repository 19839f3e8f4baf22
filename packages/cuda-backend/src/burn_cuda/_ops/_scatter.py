"""Scatter updates (``scatter``, ``select_add``, ``scatter_nd``, the bool ``*_or`` ops) on the device.

Every update is lowered to flat positions into the tensor and one combine (assign, add, multiply, min,
max, or) of values at those positions. Sums of f32 and f64 along an axis are one kernel of atomic adds
(``_along_axis``); other sums of dtypes CuPy's atomics take go through ``cupy.add.at`` (f16 in f32,
rounded once).
Everything else sorts the positions (stably), combines each run of equal positions with a segmented
doubling scan (log2(n) element-wise passes, in the values' original order), and writes each run's
result once: deterministic, any dtype, duplicates combined as NumPy's ``ufunc.at`` does, and the last
value winning for assignments. No value is read back on the host.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import DType, IndexingUpdateOp

from .._cupy import cp
from . import _along_axis

Array = Any
_BF16 = DType.BF16.numpy
_F16 = np.dtype(np.float16)
_BOOL = np.dtype(np.bool_)
# dtypes cupy.add.at adds atomically (int64 adds as uint64: two's complement sums are the same bits)
_ATOMIC_ADD = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int32, np.uint32, np.uint64)}
_AS_UINT64 = np.dtype(np.int64)


def _combine(update: IndexingUpdateOp, dtype: Any) -> Any:
    """The CuPy ufunc that combines two values under ``update`` (bools: add is or, multiply is and)."""
    if dtype == _BOOL:
        if update in (IndexingUpdateOp.ADD, IndexingUpdateOp.MAX):
            return cp.logical_or
        return cp.logical_and
    return {
        IndexingUpdateOp.ADD: cp.add,
        IndexingUpdateOp.MUL: cp.multiply,
        IndexingUpdateOp.MIN: cp.minimum,
        IndexingUpdateOp.MAX: cp.maximum,
    }[update]


def _segmented_scan(keys: Array, values: Array, combine: Any) -> Array:
    """Inclusive scan of ``combine`` over each run of equal (sorted) ``keys``."""
    count = keys.shape[0]
    shift = 1
    while shift < count:
        same = keys[shift:] == keys[:-shift]
        step = values.copy()
        step[shift:] = cp.where(same, combine(values[:-shift], values[shift:]), values[shift:])
        values = step
        shift *= 2
    return values


def update_flat(tensor: Array, positions: Array, values: Array, update: IndexingUpdateOp) -> Array:
    """A copy of ``tensor`` with the 1-d ``values`` combined in at the flat C-order ``positions``."""
    size = tensor.size
    dtype = tensor.dtype
    count = positions.size
    if count == 0:
        return tensor.copy()
    positions = positions.astype(np.int64, copy=False)
    if update is IndexingUpdateOp.ADD and (dtype in _ATOMIC_ADD or dtype == _AS_UINT64):
        # f16 sums in f32 and rounds once: atomics add in no fixed order, which f16 rounding would show
        work = np.dtype(np.float32) if dtype == _F16 else dtype
        flat = tensor.astype(work, order="C", copy=True).reshape(size)
        source = cp.ascontiguousarray(values.astype(work, copy=False))
        if dtype == _AS_UINT64:
            cp.add.at(flat.view(np.uint64), positions, source.view(np.uint64))
        else:
            cp.add.at(flat, positions, source)
        out = flat.reshape(tensor.shape)
        return out if work == dtype else out.astype(dtype)
    # bf16 computes in f32 (exact for assign, min and max; one rounding per sum or product run)
    work = np.dtype(np.float32) if dtype == _BF16 else dtype
    flat = cp.empty(size + 1, dtype=work)  # the extra last slot takes the writes that must not land
    flat[:size] = tensor.reshape(size)
    order = cp.argsort(positions, kind="stable")
    keys = positions[order]
    ordered = values.astype(work, copy=False)[order]
    ends = cp.empty(count, dtype=np.bool_)
    ends[:-1] = keys[1:] != keys[:-1]
    ends[-1] = True
    if update is IndexingUpdateOp.ASSIGN:
        result = ordered
    else:
        combine = _combine(update, work)
        result = combine(flat[keys], _segmented_scan(keys, ordered, combine))
    flat[cp.where(ends, keys, size)] = result
    out = flat[:size].reshape(tensor.shape)
    return out if work == dtype else out.astype(dtype)


def _element_strides(shape: tuple[int, ...]) -> list[int]:
    return [math.prod(shape[d + 1 :]) for d in range(len(shape))]


def along_axis(tensor: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
    """``out[..., indices[i...], ...] (op)= values[i...]`` along ``dim`` (``ufunc.at``; the positions
    from one kernel where ``indices`` has the tensor's shape outside ``dim``, else from index grids)."""
    if _along_axis.fits(tensor.shape, dim, indices):
        source = cp.broadcast_to(values, indices.shape)
        if update is IndexingUpdateOp.ADD and tensor.dtype in _along_axis.ADDS:
            return _along_axis.scatter_add(tensor, dim, indices, source)
        flat = _along_axis.positions(tensor.shape, dim, indices)
        return update_flat(tensor, flat, source.reshape(-1), update)
    strides = _element_strides(tensor.shape)
    positions = indices.astype(np.int64) * strides[dim]
    for d in range(indices.ndim):
        if d != dim and indices.shape[d] > 1:
            shape = [1] * indices.ndim
            shape[d] = indices.shape[d]
            positions = positions + cp.arange(indices.shape[d], dtype=np.int64).reshape(shape) * strides[d]
    source = cp.broadcast_to(values, indices.shape)
    return update_flat(tensor, positions.reshape(-1), source.reshape(-1), update)


def select(tensor: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
    """``out[..., indices[j], ...] (op)= values[..., j, ...]`` for the 1-d ``indices`` along ``dim``."""
    shape = [1] * values.ndim
    shape[dim] = indices.shape[0]
    grid = cp.broadcast_to(indices.reshape(shape), values.shape)
    return along_axis(tensor, dim, grid, values, update)


def nd(tensor: Array, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
    """``out[indices[i..., 0], ..., indices[i..., k-1], ...] (op)= values[i..., ...]``."""
    depth = indices.shape[-1]
    batch = indices.shape[:-1]
    rest = math.prod(tensor.shape[depth:])
    rows = cp.zeros(batch, dtype=np.int64)
    for j in range(depth):
        rows = rows + indices[..., j].astype(np.int64) * math.prod(tensor.shape[j + 1 : depth])
    positions = rows.reshape(*batch, 1) * rest + cp.arange(rest, dtype=np.int64)
    source = cp.broadcast_to(values, (*batch, *tensor.shape[depth:])).reshape(*batch, rest)
    return update_flat(tensor, positions.reshape(-1), source.reshape(-1), update)
