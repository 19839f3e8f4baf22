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
    return op(backend, prefix, "mask_fill")(
        tensor, op(backend, prefix, "lower_elem")(tensor, minimum), minimum
    )


def clamp_max(backend: Any, prefix: str, tensor: P, maximum: Any) -> P:
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
