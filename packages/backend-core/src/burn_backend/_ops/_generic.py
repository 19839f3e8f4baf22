"""Default implementations shared by the float, int and bool op groups.

Each function takes the backend and the kind prefix (``"float"``, ``"int"``, ``"bool"``) and is built only
from that kind's other ops, so a backend that implements the required ops gets these for free.
Primitives expose ``.shape`` and ``.dtype``; dims arrive normalized (non-negative).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._data import TensorData
from .._dtype import DType
from .._options import IndexingUpdateOp

P = Any  # a backend's primitive: opaque, with .shape and .dtype


def op(backend: Any, prefix: str, name: str) -> Any:
    return getattr(backend, f"{prefix}_{name}")


def full_slices(shape: Sequence[int]) -> list[slice]:
    return [slice(0, size, 1) for size in shape]


def cat(backend: Any, prefix: str, tensors: Sequence[P], dim: int) -> P:
    first = tensors[0]
    shape = list(first.shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    out = op(backend, prefix, "empty")(
        tuple(shape), op(backend, prefix, "device")(first), DType.of(first.dtype)
    )
    offset = 0
    slice_assign = op(backend, prefix, "slice_assign")
    for tensor in tensors:
        slices = full_slices(shape)
        slices[dim] = slice(offset, offset + tensor.shape[dim], 1)
        out = slice_assign(out, tuple(slices), tensor)
        offset += tensor.shape[dim]
    return out


def repeat_dim(backend: Any, prefix: str, tensor: P, dim: int, times: int) -> P:
    if times == 0:
        slices = full_slices(tensor.shape)
        slices[dim] = slice(0, 0, 1)
        return op(backend, prefix, "slice")(tensor, tuple(slices))
    return op(backend, prefix, "cat")([tensor] * times, dim)


def transpose(backend: Any, prefix: str, tensor: P) -> P:
    rank = len(tensor.shape)
    if rank < 2:
        return tensor
    return op(backend, prefix, "swap_dims")(tensor, rank - 2, rank - 1)


def full(backend: Any, prefix: str, shape: Sequence[int], value: Any, device: Any, dtype: DType) -> P:
    data = TensorData._wrap(np.full(tuple(shape), value, dtype=dtype.numpy))
    return op(backend, prefix, "from_data")(data, device)


def clamp_min(backend: Any, prefix: str, tensor: P, minimum: Any) -> P:
    # a NaN bound: every value NaN, as the larger of x and NaN is (no comparison with NaN is true)
    if minimum != minimum:
        return op(backend, prefix, "add_scalar")(tensor, minimum)
    return op(backend, prefix, "mask_fill")(
        tensor, op(backend, prefix, "lower_elem")(tensor, minimum), minimum
    )


def clamp_max(backend: Any, prefix: str, tensor: P, maximum: Any) -> P:
    if maximum != maximum:  # a NaN bound, as in clamp_min
        return op(backend, prefix, "add_scalar")(tensor, maximum)
    return op(backend, prefix, "mask_fill")(
        tensor, op(backend, prefix, "greater_elem")(tensor, maximum), maximum
    )


def sign(backend: Any, prefix: str, tensor: P) -> P:
    dtype = DType.of(tensor.dtype)
    into = getattr(backend, f"bool_into_{prefix}")
    positive = into(op(backend, prefix, "greater_elem")(tensor, 0), dtype)
    negative = into(op(backend, prefix, "lower_elem")(tensor, 0), dtype)
    return op(backend, prefix, "sub")(positive, negative)


def flatten(backend: Any, prefix: str, tensor: P) -> P:
    return op(backend, prefix, "reshape")(tensor, (int(np.prod(tensor.shape)),))


def reduce_all(backend: Any, prefix: str, name: str, tensor: P) -> P:
    """``name``_dim over the flattened tensor: a result of shape [1]."""
    return op(backend, prefix, f"{name}_dim")(flatten(backend, prefix, tensor), 0)


def pick_dim(backend: Any, prefix: str, arg: str, tensor: P, dim: int) -> tuple[P, P]:
    indices = op(backend, prefix, arg)(tensor, dim)
    return op(backend, prefix, "gather")(tensor, dim, indices), indices


def last_along(backend: Any, prefix: str, tensor: P, dim: int) -> P:
    """The last entry along ``dim`` (kept with size 1); ones where the dim is empty (empty products)."""
    size = tensor.shape[dim]
    if size == 0:
        shape = list(tensor.shape)
        shape[dim] = 1
        device = op(backend, prefix, "device")(tensor)
        return op(backend, prefix, "ones")(tuple(shape), device, DType.of(tensor.dtype))
    slices = full_slices(tensor.shape)
    slices[dim] = slice(size - 1, size, 1)
    return op(backend, prefix, "slice")(tensor, tuple(slices))


def host_sort(backend: Any, prefix: str, tensor: P, dim: int, descending: bool) -> tuple[P, P]:
    """Sort on the host (stable); returns values and int indices on the tensor's device."""
    device = op(backend, prefix, "device")(tensor)
    values = op(backend, prefix, "into_data")(tensor).to_numpy()
    key = values
    if descending:
        # a stable descending order keeps equal elements in their original order
        key = -values.astype(np.float64) if values.dtype != np.bool_ else ~values
    indices = np.argsort(key, axis=dim, kind="stable")
    sorted_values = np.take_along_axis(values, indices, axis=dim)
    int_dtype: DType = backend.int_dtype
    return (
        op(backend, prefix, "from_data")(TensorData._wrap(sorted_values), device),
        backend.int_from_data(TensorData._wrap(indices.astype(int_dtype.numpy)), device),
    )


def topk(backend: Any, prefix: str, tensor: P, dim: int, k: int) -> tuple[P, P]:
    values, indices = op(backend, prefix, "sort_with_indices")(tensor, dim, True)
    slices = full_slices(tensor.shape)
    slices[dim] = slice(0, k, 1)
    return op(backend, prefix, "slice")(values, tuple(slices)), backend.int_slice(indices, tuple(slices))


def any_nonzero(backend: Any, prefix: str, tensor: P, dim: int | None) -> P:
    nonzero = op(backend, prefix, "not_equal_elem")(tensor, 0)
    return backend.bool_any(nonzero) if dim is None else backend.bool_any_dim(nonzero, dim)


def all_nonzero(backend: Any, prefix: str, tensor: P, dim: int | None) -> P:
    nonzero = op(backend, prefix, "not_equal_elem")(tensor, 0)
    return backend.bool_all(nonzero) if dim is None else backend.bool_all_dim(nonzero, dim)


_UFUNCS = {
    IndexingUpdateOp.ASSIGN: None,
    IndexingUpdateOp.ADD: np.add,
    IndexingUpdateOp.MUL: np.multiply,
    IndexingUpdateOp.MIN: np.minimum,
    IndexingUpdateOp.MAX: np.maximum,
}


def host_update(
    backend: Any, prefix: str, tensor: P, index: tuple[Any, ...], values: P, update: IndexingUpdateOp
) -> P:
    """``tensor`` with ``values`` combined in at the NumPy fancy ``index`` (built from host indices), on
    the host: the default of the update ops a backend does not override."""
    device = op(backend, prefix, "device")(tensor)
    out = np.array(op(backend, prefix, "into_data")(tensor).to_numpy(), copy=True)
    source = op(backend, prefix, "into_data")(values).to_numpy()
    ufunc = _UFUNCS[update]
    with np.errstate(all="ignore"):
        if ufunc is None:
            out[index] = source
        else:
            ufunc.at(out, index, source)
    return op(backend, prefix, "from_data")(TensorData._wrap(out), device)


def host_indices(backend: Any, indices: P) -> np.ndarray[Any, Any]:
    return np.asarray(backend.int_into_data(indices).to_numpy())


def scatter(
    backend: Any, prefix: str, tensor: P, dim: int, indices: P, values: P, update: IndexingUpdateOp
) -> P:
    if update is IndexingUpdateOp.ADD and prefix != "bool":
        return op(backend, prefix, "scatter_add")(tensor, dim, indices, values)
    index_array = host_indices(backend, indices)
    grids: list[Any] = list(np.indices(index_array.shape, sparse=True))
    grids[dim] = index_array
    return host_update(backend, prefix, tensor, tuple(grids), values, update)


def gather_nd(backend: Any, prefix: str, tensor: P, indices: P) -> P:
    """``out[i...] = tensor[indices[i..., 0], ..., indices[i..., k-1], ...]`` from float/int/bool ops."""
    depth = indices.shape[-1]
    shape = tuple(tensor.shape)
    leading = int(np.prod(shape[:depth], dtype=np.int64))
    strides = [int(np.prod(shape[j + 1 : depth], dtype=np.int64)) for j in range(depth)]
    batch = tuple(indices.shape[:-1])
    count = int(np.prod(batch, dtype=np.int64))
    flat = backend.int_reshape(indices, (count, depth))
    weights = backend.int_from_data(
        TensorData._wrap(np.array(strides, dtype=DType.of(indices.dtype).numpy).reshape(depth, 1)),
        op(backend, prefix, "device")(tensor),
    )
    rows = backend.int_reshape(backend.int_matmul(flat, weights), (count,))
    table = op(backend, prefix, "reshape")(tensor, (leading, *shape[depth:]))
    picked = op(backend, prefix, "select")(table, 0, rows)
    return op(backend, prefix, "reshape")(picked, (*batch, *shape[depth:]))


def scatter_nd(backend: Any, prefix: str, tensor: P, indices: P, values: P, update: IndexingUpdateOp) -> P:
    index_array = host_indices(backend, indices)
    index = tuple(index_array[..., j] for j in range(index_array.shape[-1]))
    return host_update(backend, prefix, tensor, index, values, update)


def mask_select(backend: Any, prefix: str, tensor: P, mask: P) -> P:
    """The values where ``mask`` (broadcast to the tensor's shape) is true, in row-major order: 1-d."""
    shape = tuple(tensor.shape)
    mask = backend.bool_expand(mask, shape) if tuple(mask.shape) != shape else mask
    count = int(np.prod(shape, dtype=np.int64))
    positions = backend.bool_argwhere(backend.bool_reshape(mask, (count,)))
    rows = backend.int_reshape(positions, (positions.shape[0],))
    return op(backend, prefix, "select")(op(backend, prefix, "reshape")(tensor, (count,)), 0, rows)
