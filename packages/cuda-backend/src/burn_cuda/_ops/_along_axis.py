"""Indexing along one axis in one kernel: ``gather`` and the flat positions a ``scatter`` updates.

Both take ``indices`` with the tensor's shape outside ``dim`` (``Tensor.gather`` requires it; a scatter
whose indices are smaller keeps the index-grid lowering in ``_scatter``). Seen as ``[before, count,
after]`` (``count`` indices along ``dim``), element ``n`` of ``indices`` addresses element ``(before_n *
size + k) * after + after_n`` of a tensor with ``size`` elements along ``dim``, ``k = indices[n]``
wrapped into ``[0, size)`` as CuPy's fancy indexing wraps (so an index out of range, which the Tensor
API leaves unspecified, never reads outside the tensor). CuPy's ``take_along_axis`` builds the same
positions from an index grid per dim: five kernels and about a dozen host calls for a 2-d gather.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._cupy import contiguous, cp

Array = Any

_BLOCK = 256
_GRID_MAX = 1 << 20
# elements are moved as unsigned integers of their size; indices are read in their own type
_ITEMS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_INDICES = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
}

ADDS = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
"""The dtypes ``scatter_add`` takes (those CUDA's ``atomicAdd`` adds)."""

_POSITION = r"""
typedef {T} T;
typedef {I} I;

__device__ __forceinline__ long long position(
    const I* __restrict__ indices, long long n, long long count, long long size, long long after) {{
    long long k = (long long)indices[n] % size;
    if (k < 0) k += size;
    return ((n / (after * count)) * size + k) * after + n % after;
}}

"""

# moving elements of any type (as unsigned integers of their size)
_MOVES = (
    _POSITION
    + r"""
extern "C" __global__ void burn_gather_along(
    const T* __restrict__ x, const I* __restrict__ indices, T* __restrict__ y, const long long total,
    const long long count, const long long size, const long long after) {{
    for (long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x; n < total;
         n += (long long)gridDim.x * blockDim.x) {{
        y[n] = x[position(indices, n, count, size, after)];
    }}
}}

extern "C" __global__ void burn_positions_along(
    const I* __restrict__ indices, long long* __restrict__ positions, const long long total,
    const long long count, const long long size, const long long after) {{
    for (long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x; n < total;
         n += (long long)gridDim.x * blockDim.x) {{
        positions[n] = position(indices, n, count, size, after);
    }}
}}
"""
)

# adding values of a type CUDA's atomicAdd takes
_ADDS = (
    _POSITION
    + r"""
// out[position(n)] += values[n], atomically (T float or double; duplicates add in no fixed order)
extern "C" __global__ void burn_scatter_add_along(
    const T* __restrict__ values, const I* __restrict__ indices, T* __restrict__ out, const long long total,
    const long long count, const long long size, const long long after) {{
    for (long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x; n < total;
         n += (long long)gridDim.x * blockDim.x) {{
        atomicAdd(out + position(indices, n, count, size, after), values[n]);
    }}
}}

"""
)

_kernels: dict[tuple[str, str, str], Any] = {}


def _kernel(name: str, item: str, index: str) -> Any:
    key = (name, item, index)
    kernel = _kernels.get(key)
    if kernel is None:
        source = _ADDS if name == "burn_scatter_add_along" else _MOVES
        kernel = _kernels[key] = cp.RawKernel(source.format(T=item, I=index), name)
    return kernel


def fits(shape: tuple[int, ...], dim: int, indices: Array) -> bool:
    """Whether the kernels take ``indices`` into a tensor of ``shape`` along ``dim``: the tensor's shape
    outside ``dim``, an integer dtype, and something to index along ``dim``."""
    index_shape = indices.shape
    return (
        indices.dtype in _INDICES
        and len(index_shape) == len(shape)
        and shape[dim] > 0
        and all(a == b for d, (a, b) in enumerate(zip(shape, index_shape)) if d != dim)
    )


def _geometry(shape: tuple[int, ...], dim: int, indices: Array) -> tuple[Any, ...]:
    """The kernels' sizes: (total, count, size, after) as int64 scalars."""
    after = math.prod(shape[dim + 1 :])
    return tuple(np.int64(v) for v in (indices.size, indices.shape[dim], shape[dim], after))


def gather(tensor: Array, dim: int, indices: Array) -> Array:
    """``out[..., i, ...] = tensor[..., indices[..., i, ...], ...]`` along ``dim`` (``fits`` holds)."""
    out = cp.empty(indices.shape, dtype=tensor.dtype)
    total = out.size
    if total:
        tensor, indices = contiguous(tensor), contiguous(indices)
        kernel = _kernel("burn_gather_along", _ITEMS[tensor.itemsize], _INDICES[indices.dtype])
        blocks = min(_GRID_MAX, -(-total // _BLOCK))
        kernel((blocks,), (_BLOCK,), (tensor, indices, out, *_geometry(tensor.shape, dim, indices)))
    return out


def scatter_add(tensor: Array, dim: int, indices: Array, values: Array) -> Array:
    """A copy of ``tensor`` (f32 or f64) with ``values`` (of ``indices``' shape) added at ``indices``
    along ``dim`` (``fits`` holds): one copy and one kernel of atomic adds, so duplicates add in no
    fixed order, as ``cupy.add.at``'s do."""
    out = tensor.copy()  # C order
    total = indices.size
    if total:
        values = contiguous(values.astype(tensor.dtype, copy=False))
        indices = contiguous(indices)
        kernel = _kernel("burn_scatter_add_along", ADDS[tensor.dtype], _INDICES[indices.dtype])
        blocks = min(_GRID_MAX, -(-total // _BLOCK))
        kernel((blocks,), (_BLOCK,), (values, indices, out, *_geometry(tensor.shape, dim, indices)))
    return out


def positions(shape: tuple[int, ...], dim: int, indices: Array) -> Array:
    """The flat C-order positions (int64, 1-d) of a tensor of ``shape`` that ``indices`` address along
    ``dim`` (``fits`` holds)."""
    out = cp.empty(indices.size, dtype=np.int64)
    total = out.size
    if total:
        indices = contiguous(indices)
        kernel = _kernel("burn_positions_along", "unsigned char", _INDICES[indices.dtype])
        blocks = min(_GRID_MAX, -(-total // _BLOCK))
        kernel((blocks,), (_BLOCK,), (indices, out, *_geometry(shape, dim, indices)))
    return out
