"""Quantized operators: ``QuantizeLinear``, ``DequantizeLinear``, ``DynamicQuantizeLinear``,
``MatMulInteger``, ``QLinearMatMul``, ``ConvInteger`` and ``QLinearConv``.

ONNX quantizes asymmetrically (``uint8`` values with a zero point, per tensor, per axis or per block),
which Burn's symmetric ``QuantScheme`` cannot hold, so these run on Int tensors: the integer products
subtract the zero points in int32 and accumulate in int32 (wrapping as ONNX's kernels do), the
requantizing ones scale the int32 accumulator by ``a_scale * b_scale / y_scale`` in float32 as
onnxruntime does, and every rounding is half to even.
"""

from __future__ import annotations

import numpy as np

from burn_backend import DType, Kind, Tensor

from .._dtypes import dtype_of
from .._ir import Node
from ._conv import check_auto_pad, conv
from ._linalg import matmul
from ._registry import Context, Value, register, to_tensor
from ._util import axis as norm_axis

__all__: list[str] = []

_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
_INTEGER_TYPES = (DType.U8, DType.I8, DType.U16, DType.I16, DType.I32)


def _integers(ctx: Context, value: Value, what: str, eight_bit: bool = False) -> Tensor:
    """A quantized operand (an 8-bit integer tensor; 16- and 32-bit ones where ONNX allows them)."""
    t = ctx.tensor(value, what)
    allowed = _INTEGER_TYPES[:2] if eight_bit else _INTEGER_TYPES
    if t.dtype not in allowed:
        expected = "an 8-bit integer (u8 or i8)" if eight_bit else "an integer (u8, i8, u16, i16 or i32)"
        raise ctx.error(f"{what} has dtype {t.dtype} {t.dims()}; expected {expected} tensor")
    return t


def _scale(ctx: Context, value: Value, what: str) -> Tensor:
    s = ctx.tensor(value, what)
    if s.kind is not Kind.FLOAT:
        raise ctx.error(f"{what} has dtype {s.dtype} {s.dims()}; expected a float tensor")
    return s


def _zero_point(ctx: Context, value: Value, like: Tensor, what: str) -> Tensor | None:
    """A zero point, which has the quantized operand's dtype (an error otherwise)."""
    if value is None:
        return None
    z = ctx.tensor(value, what)
    if z.dtype != like.dtype:
        raise ctx.error(
            f"{what} has dtype {z.dtype.numpy} {z.dims()} but the quantized values are {like.dtype.numpy}; "
            "ONNX needs them to be the same type"
        )
    return z


def _along(ctx: Context, param: Tensor, shape: list[int], what: str) -> Tensor:
    """A scale or zero point shaped to broadcast against a tensor of ``shape``: per tensor (one value),
    per axis (``axis``: one value per index of that dim) or per block (``block_size``: the parameter has
    the input's rank and ``ceil(size / block_size)`` entries along ``axis``)."""
    rank = len(shape)
    if param.num_elements() == 1 and (param.rank <= 1 or int(ctx.attr("block_size", 0)) == 0):
        return param.reshape([1] * rank)
    ax = norm_axis(ctx, int(ctx.attr("axis", 1)), rank)
    block = int(ctx.attr("block_size", 0))
    if block < 0:
        raise ctx.error(f"block_size {block} is negative")
    if block:
        want = list(shape)
        want[ax] = -(-shape[ax] // block)
        if param.dims() != want:
            raise ctx.error(
                f"{what} has shape {param.dims()}; block_size {block} along axis {ax} of an input of shape "
                f"{shape} needs {want}"
            )
        spread = param.unsqueeze_dim(ax + 1).repeat_dim(ax + 1, block).flatten(ax, ax + 1)
        return spread.narrow(ax, 0, shape[ax])
    if param.rank != 1 or param.dims()[0] != shape[ax]:
        raise ctx.error(
            f"{what} has shape {param.dims()}; per-axis parameters along axis {ax} of an input of shape "
            f"{shape} need one value or [{shape[ax]}]"
        )
    target = [1] * rank
    target[ax] = shape[ax]
    return param.reshape(target)


def _saturated(ctx: Context, q: Tensor, dtype: DType) -> Tensor:
    """Whole numbers held in a float tensor, clamped to ``dtype``'s range and converted to it."""
    if dtype.kind is not Kind.INT:
        raise ctx.error(f"quantizing to {dtype} is not supported (8-, 16- and 32-bit integers are)")
    info = np.iinfo(dtype.numpy)
    return q.clamp(float(info.min), float(info.max)).int(dtype)


def _compute_dtype(*scales: Tensor) -> DType:
    """float32, or float64 where a scale is float64 (half-precision scales are widened, as ONNX's
    kernels do)."""
    return DType.F64 if any(s.dtype == DType.F64 for s in scales) else DType.F32


def _check_output_dtype(node: Node) -> str | None:
    to = node.attrs.get("output_dtype")
    if to and (dtype_of(int(to)) is None or dtype_of(int(to)) not in _INTEGER_TYPES):
        from .._dtypes import elem_type_name

        return f"output_dtype {elem_type_name(int(to))} is not supported (8-, 16- and 32-bit integers are)"
    return None


@register(
    "QuantizeLinear",
    attrs=("axis", "block_size", "output_dtype", "saturate", "precision"),
    check=_check_output_dtype,
)
def quantize_linear(ctx: Context, x: Value, scale: Value, zero: Value = None) -> Tensor:
    t = ctx.tensor(x, "x")
    if t.kind is not Kind.FLOAT:
        raise ctx.error(f"x has dtype {t.dtype} {t.dims()}; expected a float tensor")
    s = _scale(ctx, scale, "y_scale")
    z = None if zero is None else ctx.tensor(zero, "y_zero_point")
    dtype = z.dtype if z is not None else dtype_of(int(ctx.attr("output_dtype", 0) or 2)) or DType.U8
    # ONNX divides in the input's type (or ``precision``): float64 would round some ties differently
    precision = ctx.attr("precision")
    if precision:
        compute = dtype_of(int(precision)) or DType.F32
    elif DType.F64 in (t.dtype, s.dtype):
        compute = DType.F64
    elif t.dtype == DType.F16 and s.dtype != DType.F16:
        compute = DType.F32
    else:
        compute = t.dtype
    shape = t.dims()
    q = t.float(compute).div(_along(ctx, s, shape, "y_scale").float(compute)).round()
    if z is not None:
        q = q.add(_along(ctx, z, shape, "y_zero_point").float(compute))
    return _saturated(ctx, q, dtype)


@register("DequantizeLinear", attrs=("axis", "block_size", "output_dtype"))
def dequantize_linear(ctx: Context, x: Value, scale: Value, zero: Value = None) -> Tensor:
    t = _integers(ctx, x, "x")
    s = _scale(ctx, scale, "x_scale")
    z = _zero_point(ctx, zero, t, "x_zero_point")
    shape = t.dims()
    values = t.int("i64")
    if z is not None:
        values = values.sub(_along(ctx, z, shape, "x_zero_point").int("i64"))
    compute = _compute_dtype(s)
    out = values.float(compute).mul(_along(ctx, s, shape, "x_scale").float(compute))
    target = dtype_of(int(ctx.attr("output_dtype", 0) or 0)) or s.dtype
    return out.float(target)


@register("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: Context, x: Value) -> tuple[Tensor, Tensor, Tensor]:
    t = ctx.tensor(x, "x")
    if t.dtype != DType.F32:
        raise ctx.error(f"x has dtype {t.dtype} {t.dims()}; expected f32")
    if t.num_elements() == 0:
        raise ctx.error(f"x {t.dims()} is empty: it has no range to quantize")
    low = min(np.float32(t.min().into_scalar()), np.float32(0.0))
    high = max(np.float32(t.max().into_scalar()), np.float32(0.0))
    # float32 throughout, as onnxruntime; an all-zero input gets scale 1 as there (ONNX's reference
    # implementation gives 1/255: the quantized values and zero point are 0 either way)
    scale = np.float32(1.0) if high == low else np.float32(high - low) / np.float32(255.0)
    zero = np.rint(np.clip(np.float32(0.0) - low / scale, np.float32(0.0), np.float32(255.0)))
    q = t.div_scalar(float(scale)).round().add_scalar(float(zero))
    return (
        _saturated(ctx, q, DType.U8),
        to_tensor(np.array(scale, dtype=np.float32), ctx.device),
        to_tensor(np.array(zero, dtype=np.uint8), ctx.device),
    )


# -- integer products -----------------------------------------------------------------------------
def _shifted(ctx: Context, value: Value, zero: Value, what: str, axis: int | None) -> Tensor:
    """``value - zero`` in int32; a zero point with several values applies along ``axis`` (counted from
    the end: the rows of a matmul's A, the columns of B, the output channels of a conv's weight)."""
    t = _integers(ctx, value, what, eight_bit=True)
    out = t.int("i32")
    if zero is None:
        return out
    z = _zero_point(ctx, zero, t, f"{what}'s zero point")
    assert z is not None
    if z.num_elements() == 1:
        return out.sub(z.int("i32").reshape([1] * t.rank))
    dims = t.dims()
    if axis is None or z.rank != 1 or t.rank < 2 or z.dims()[0] != dims[axis]:
        raise ctx.error(
            f"{what}'s zero point has shape {z.dims()}; for {what} of shape {dims} it needs one value"
            + (f" or [{dims[axis]}]" if axis is not None and t.rank >= 2 else "")
        )
    shape = [1] * t.rank
    shape[axis] = dims[axis]
    return out.sub(z.int("i32").reshape(shape))


def _integer_matmul(ctx: Context, a: Value, b: Value, a_zero: Value, b_zero: Value) -> Tensor:
    x = _shifted(ctx, a, a_zero, "A", -2 if ctx.tensor(a).rank >= 2 else None)
    y = _shifted(ctx, b, b_zero, "B", -1 if ctx.tensor(b).rank >= 2 else None)
    return matmul(x, y)


@register("MatMulInteger")
def matmul_integer(ctx: Context, a: Value, b: Value, a_zero: Value = None, b_zero: Value = None) -> Tensor:
    return _integer_matmul(ctx, a, b, a_zero, b_zero)


def _integer_conv(ctx: Context, x: Value, w: Value, x_zero: Value, w_zero: Value) -> Tensor:
    """The int32 accumulator of a convolution of shifted 8-bit values. It runs as a float64 convolution:
    the shifted values and their products are small integers and every partial sum stays below 2**53,
    so float64 holds them exactly whatever the summation order; the result wraps to int32 as ONNX's."""
    t = _shifted(ctx, x, x_zero, "x", None)
    weight = _shifted(ctx, w, w_zero, "w", -ctx.tensor(w).rank if ctx.tensor(w).rank >= 2 else None)
    if t.rank < 3 or weight.rank != t.rank:
        raise ctx.error(f"x {t.dims()} and w {weight.dims()} are not a convolution's input and weight")
    acc = conv(ctx, t.float("f64"), weight.float("f64"), None)
    return acc.int("i64").int("i32")


@register("ConvInteger", attrs=_CONV_ATTRS, check=check_auto_pad)
def conv_integer(ctx: Context, x: Value, w: Value, x_zero: Value = None, w_zero: Value = None) -> Tensor:
    return _integer_conv(ctx, x, w, x_zero, w_zero)


def _requantized(
    ctx: Context, acc: Tensor, scales: list[Tensor], y_scale: Value, y_zero: Value, like: Tensor
) -> Tensor:
    """``round(acc * (prod(scales) / y_scale)) + y_zero``, saturated to the zero point's dtype (the
    input's where there is none), the multiplier in float32 as onnxruntime computes it."""
    ys = _scale(ctx, y_scale, "y_scale")
    if ys.num_elements() != 1:
        raise ctx.error(f"y_scale has shape {ys.dims()}; expected one value")
    compute = _compute_dtype(*scales, ys)
    multiplier = scales[0].float(compute)
    for s in scales[1:]:
        multiplier = multiplier.mul(s.float(compute))
    multiplier = multiplier.div(ys.float(compute).reshape([1] * multiplier.rank))
    q = acc.float(compute).mul(multiplier).round()
    dtype = like.dtype
    if y_zero is not None:
        z = ctx.tensor(y_zero, "y_zero_point")
        if z.num_elements() != 1:
            raise ctx.error(f"y_zero_point has shape {z.dims()}; expected one value")
        q = q.add(z.float(compute).reshape([1] * q.rank))
        dtype = z.dtype
    return _saturated(ctx, q, dtype)


def _matmul_scale(ctx: Context, value: Value, operand: Tensor, axis: int, what: str) -> Tensor:
    """A QLinearMatMul scale: one value, or (opset 21) one per row of A / column of B."""
    s = _scale(ctx, value, what)
    if s.num_elements() == 1:
        return s.reshape([1] * max(operand.rank, 2))
    dims = operand.dims()
    if s.rank != 1 or operand.rank < 2 or s.dims()[0] != dims[axis]:
        raise ctx.error(f"{what} has shape {s.dims()}; for an operand of shape {dims} it needs one value")
    shape = [1] * operand.rank
    shape[axis] = dims[axis]
    return s.reshape(shape)


@register("QLinearMatMul")
def qlinear_matmul(
    ctx: Context, a: Value, a_scale: Value, a_zero: Value, b: Value, b_scale: Value, b_zero: Value,
    y_scale: Value, y_zero: Value = None,
) -> Tensor:  # fmt: skip
    acc = _integer_matmul(ctx, a, b, a_zero, b_zero)
    ta, tb = ctx.tensor(a), ctx.tensor(b)
    if ta.rank == 1 or tb.rank == 1:  # a vector operand: per-tensor scales only
        scales = [_single(ctx, a_scale, "a_scale", acc.rank), _single(ctx, b_scale, "b_scale", acc.rank)]
    else:
        sa = _matmul_scale(ctx, a_scale, ta, -2, "a_scale").unsqueeze(rank=acc.rank)
        sb = _matmul_scale(ctx, b_scale, tb, -1, "b_scale").unsqueeze(rank=acc.rank)
        scales = [sa, sb]
    return _requantized(ctx, acc, scales, y_scale, y_zero, ta)


def _single(ctx: Context, value: Value, what: str, rank: int) -> Tensor:
    s = _scale(ctx, value, what)
    if s.num_elements() != 1:
        raise ctx.error(f"{what} has shape {s.dims()}; expected one value")
    return s.reshape([1] * rank)


@register("QLinearConv", attrs=_CONV_ATTRS, check=check_auto_pad)
def qlinear_conv(
    ctx: Context, x: Value, x_scale: Value, x_zero: Value, w: Value, w_scale: Value, w_zero: Value,
    y_scale: Value, y_zero: Value = None, b: Value = None,
) -> Tensor:  # fmt: skip
    acc = _integer_conv(ctx, x, w, x_zero, w_zero)
    channels = acc.dims()[1]
    shape = [1, channels] + [1] * (acc.rank - 2)
    if b is not None:
        bias = ctx.tensor(b, "B")
        if bias.dtype != DType.I32 or bias.dims() != [channels]:
            raise ctx.error(f"B has dtype {bias.dtype} {bias.dims()}; expected i32 [{channels}]")
        acc = acc.add(bias.reshape(shape))
    sw = _scale(ctx, w_scale, "w_scale")
    if sw.num_elements() not in (1, channels) or sw.rank > 1:
        raise ctx.error(f"w_scale has shape {sw.dims()}; expected one value or [{channels}]")
    per_channel = shape if sw.num_elements() > 1 else [1] * acc.rank
    scales = [_single(ctx, x_scale, "x_scale", acc.rank), sw.reshape(per_channel)]
    return _requantized(ctx, acc, scales, y_scale, y_zero, ctx.tensor(x))
