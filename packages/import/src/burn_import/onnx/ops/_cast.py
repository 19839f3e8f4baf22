"""Type conversions: ``Cast``, ``CastLike`` and ``BitCast`` (quantization is in ``_quant``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType, Kind, Tensor

from .._dtypes import dtype_of
from .._ir import Node
from ._registry import Context, Value, register, to_tensor
from ._util import target_dtype

__all__ = ["cast_to"]

Array = np.ndarray[Any, Any]


def cast_to(t: Tensor, dtype: DType) -> Tensor:
    """``t`` converted to ``dtype`` with ONNX's rules (floats to ints truncate; to bool: non-zero)."""
    if t.dtype == dtype:
        return t
    if dtype.kind is Kind.BOOL:
        return t.bool()
    if t.kind is Kind.FLOAT and dtype.kind is Kind.INT and not dtype.is_signed:
        # negative floats to unsigned ints wrap as C's casts do on the common platforms
        return t.int("i64").int(dtype) if dtype != DType.U64 else t.int(dtype)
    return t.cast(dtype)


def _check_cast(node: Node) -> str | None:
    to = node.attrs.get("to")
    if to is not None and dtype_of(int(to)) is None:
        from .._dtypes import elem_type_name

        return f"cast to {elem_type_name(int(to))}, which our backends do not have (unsupported dtype)"
    return None


def _host_cast(ctx: Context, x: Array) -> Array:
    target = target_dtype(ctx, ctx.attr("to")).numpy
    if x.dtype.kind == "f" and target.kind in "iu":
        with np.errstate(all="ignore"):
            return np.trunc(x).astype(np.int64).astype(target) if target.kind == "u" else x.astype(target)
    return x.astype(target)


@register("Cast", attrs=("to", "saturate", "round_mode"), host=_host_cast, check=_check_cast)
def cast(ctx: Context, x: Value) -> Tensor:
    return cast_to(ctx.tensor(x), target_dtype(ctx, ctx.attr("to")))


def _host_cast_like(ctx: Context, x: Array, like: Array) -> Array:
    return x.astype(like.dtype)


@register("CastLike", attrs=("saturate", "round_mode"), host=_host_cast_like)
def cast_like(ctx: Context, x: Value, like: Value) -> Tensor:
    dtype = like.dtype if isinstance(like, Tensor) else DType.of(np.asarray(like).dtype)
    return cast_to(ctx.tensor(x), dtype)


@register("BitCast", attrs=("to",), check=_check_cast)
def bit_cast(ctx: Context, x: Value) -> Tensor:
    array = ctx.array(x)
    target = target_dtype(ctx, ctx.attr("to")).numpy
    if target.itemsize != array.dtype.itemsize:
        raise ctx.error(f"BitCast from {array.dtype} to {target}: the sizes differ")
    return to_tensor(np.array(array, order="C").view(target), ctx.device)
