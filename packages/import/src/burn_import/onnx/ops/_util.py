"""Helpers shared by the operator implementations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from burn_backend import DType, Kind, Tensor

from .._dtypes import dtype_of
from .._errors import OnnxImportError
from ._registry import Context, Value

__all__ = [
    "axis",
    "broadcast_shape",
    "full",
    "host_dtype",
    "np_result",
    "pad_constant",
    "same_dtype",
    "target_dtype",
]


def axis(ctx: Context | None, value: int, rank: int, what: str = "axis") -> int:
    """``value`` (negative counts from the end) as an index into ``rank`` dims."""
    index = value + rank if value < 0 else value
    if not 0 <= index < max(rank, 1):
        message = f"{what} {value} is out of range for rank {rank}"
        raise ctx.error(message) if ctx is not None else OnnxImportError(message)
    return index


def target_dtype(ctx: Context, elem_type: int) -> DType:
    """The burn dtype of ONNX element type ``elem_type`` (an error naming the node otherwise)."""
    dtype = dtype_of(int(elem_type))
    if dtype is None:
        raise ctx.error(f"element type {elem_type} has no burn dtype")
    return dtype


def host_dtype(ctx: Context, elem_type: int) -> np.dtype[Any]:
    """The NumPy dtype of ONNX element type ``elem_type``."""
    return target_dtype(ctx, elem_type).numpy


def np_result(array: Any, dtype: np.dtype[Any] | None = None) -> np.ndarray[Any, Any]:
    """A NumPy result as an array (not a NumPy scalar), in ``dtype`` if given."""
    out = np.asarray(array)
    return out.astype(dtype, copy=False) if dtype is not None else out


def broadcast_shape(*shapes: Sequence[int]) -> list[int]:
    """The broadcast of ``shapes`` (NumPy's rules)."""
    return list(np.broadcast_shapes(*(tuple(s) for s in shapes)))


def same_dtype(ctx: Context, a: Value, b: Value) -> tuple[Tensor, Tensor]:
    """Both operands as tensors; host operands take the other's dtype when one is a tensor."""
    if isinstance(a, Tensor) and not isinstance(b, Tensor):
        b = np.asarray(b).astype(a.dtype.numpy, copy=False)  # a constant stays itself: cached
    elif isinstance(b, Tensor) and not isinstance(a, Tensor):
        a = np.asarray(a).astype(b.dtype.numpy, copy=False)
    x, y = ctx.tensor(a), ctx.tensor(b)
    if x.dtype != y.dtype:
        raise ctx.error(f"operands have different dtypes: {x.dtype} {x.dims()} and {y.dtype} {y.dims()}")
    return x, y


def full(shape: Sequence[int], value: Any, dtype: DType, ctx: Context) -> Tensor:
    """A tensor of ``shape`` filled with ``value`` in ``dtype``."""
    if dtype.kind is Kind.BOOL:
        return Tensor.full(list(shape), bool(value), ctx.device, dtype)
    if dtype.kind is Kind.INT:
        return Tensor.full(list(shape), int(value), ctx.device, dtype)
    return Tensor.full(list(shape), float(value), ctx.device, dtype)


def pad_constant(x: Tensor, begins: Sequence[int], ends: Sequence[int], value: Any, ctx: Context) -> Tensor:
    """``x`` with ``begins[d]``/``ends[d]`` elements of ``value`` added before/after each dim
    (negative amounts crop)."""
    dims = x.dims()
    crop = []
    for d in range(len(dims)):
        b, e = begins[d], ends[d]
        crop.append(slice(max(-b, 0), dims[d] - max(-e, 0)))
    if any(b < 0 or e < 0 for b, e in zip(begins, ends)):
        x = x.slice(crop)
        dims = x.dims()
    begins = [max(b, 0) for b in begins]
    ends = [max(e, 0) for e in ends]
    if not any(begins) and not any(ends):
        return x
    out_shape = [d + b + e for d, b, e in zip(dims, begins, ends)]
    out = full(out_shape, value, x.dtype, ctx)
    if x.num_elements() == 0:
        return out
    region = [slice(b, b + d) for b, d in zip(begins, dims)]
    return out.slice_assign(region, x)
