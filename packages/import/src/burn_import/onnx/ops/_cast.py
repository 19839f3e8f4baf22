"""Type conversions: ``Cast``, ``CastLike``, ``BitCast`` and (de)quantization."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType, Kind, Tensor

from .._dtypes import dtype_of
from .._ir import Node
from ._registry import Context, Value, register, to_tensor
from ._util import axis as norm_axis
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


# -- quantization ---------------------------------------------------------------------------------
def _per_axis(ctx: Context, param: Tensor, like: Tensor) -> Tensor:
    """A scale or zero point broadcast against ``like`` (per tensor, per axis or per block)."""
    if param.rank == 0 or param.num_elements() == 1:
        return param.reshape([1] * like.rank) if like.rank else param.reshape([])
    ax = norm_axis(ctx, int(ctx.attr("axis", 1)), like.rank)
    block = int(ctx.attr("block_size", 0))
    if block and param.rank == like.rank:
        spread = param.unsqueeze_dim(ax + 1).repeat_dim(ax + 1, block).flatten(ax, ax + 1)
        return spread.narrow(ax, 0, like.dims()[ax])
    shape = [1] * like.rank
    shape[ax] = param.num_elements()
    return param.reshape(shape)


@register("DequantizeLinear", attrs=("axis", "block_size", "output_dtype"))
def dequantize_linear(ctx: Context, x: Value, scale: Value, zero: Value = None) -> Tensor:
    t = ctx.tensor(x)
    s = ctx.tensor(scale)
    out = t.float("f64")
    if zero is not None:
        out = out.sub(_per_axis(ctx, ctx.tensor(zero).float("f64"), t))
    out = out.mul(_per_axis(ctx, s.float("f64"), t))
    return out.float(s.dtype)


@register("QuantizeLinear", attrs=("axis", "block_size", "output_dtype", "saturate", "precision"))
def quantize_linear(ctx: Context, x: Value, scale: Value, zero: Value = None) -> Tensor:
    t = ctx.tensor(x).float("f64")
    s = _per_axis(ctx, ctx.tensor(scale).float("f64"), t)
    if zero is not None:
        zp = ctx.tensor(zero)
        dtype = zp.dtype
        z = _per_axis(ctx, zp.float("f64"), t)
    else:
        dtype = target_dtype(ctx, ctx.attr("output_dtype", 2) or 2)
        z = None
    out = t.div(s).round()
    if z is not None:
        out = out.add(z)
    info = np.iinfo(dtype.numpy)
    return out.clamp(float(info.min), float(info.max)).int(dtype)


@register("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: Context, x: Value) -> tuple[Tensor, Tensor, Tensor]:
    t = ctx.tensor(x)
    low = min(float(t.min().into_scalar()), 0.0)
    high = max(float(t.max().into_scalar()), 0.0)
    scale = np.float32((high - low) / 255.0)
    zero = 0.0 if scale == 0 else float(np.clip(np.round(-low / scale), 0, 255))
    quantized = t if scale == 0 else t.div_scalar(float(scale)).round().add_scalar(zero)
    y = quantized.clamp(0.0, 255.0).int("u8")
    return (
        y,
        to_tensor(np.array(scale, dtype=np.float32), ctx.device),
        to_tensor(np.array(zero, dtype=np.uint8), ctx.device),
    )
