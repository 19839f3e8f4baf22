"""The interface's default convolutions, built from float ops: im2col from one strided slice per kernel
offset and one batched matrix product; transposed convolutions as a convolution of the zero-interleaved
input with the flipped kernel; the weight gradient as one product with the same columns."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._dtype import DType
from ._sizes import conv_output_size, conv_transpose_output_size

if TYPE_CHECKING:
    from .._options import ConvOptions, ConvTransposeOptions

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype
Sizes = Sequence[int]


def _dtype(tensor: P) -> DType:
    return DType.of(tensor.dtype)


def _whole(shape: Sizes) -> list[slice]:
    return [slice(0, size, 1) for size in shape]


def _span(start: int, count: int, step: int) -> slice:
    """The canonical slice of ``count`` samples from ``start`` every ``step``."""
    return slice(start, start + (count - 1) * step + 1, step)


def _place(b: Any, x: P, low: Sizes, step: Sizes, size: Sizes, fill: float) -> P:
    """A tensor whose trailing dims have ``size``: sample ``low + i * step`` holds ``x[i]`` (along each
    trailing dim), every other sample is ``fill``. Pads (``low > 0``) and crops (``low < 0``) at once."""
    n = len(size)
    lead = tuple(x.shape[: len(x.shape) - n])
    spatial = tuple(x.shape[len(x.shape) - n :])
    if tuple(low) == (0,) * n and tuple(step) == (1,) * n and tuple(size) == spatial:
        return x
    out = b.float_full(lead + tuple(size), fill, b.float_device(x), _dtype(x))
    source, target = _whole(lead), _whole(lead)
    for length, lo, st, extent in zip(spatial, low, step, size):
        first = max(0, -(lo // st))
        last = min(length - 1, (extent - 1 - lo) // st)
        if last < first:
            return out
        source.append(slice(first, last + 1, 1))
        target.append(_span(lo + first * st, last - first + 1, st))
    whole = all(s.start == 0 and s.stop == length for s, length in zip(source[len(lead) :], spatial))
    value = x if whole else b.float_slice(x, source)
    return b.float_slice_assign(out, target, value)


def _window_views(b: Any, padded: P, kernel: Sizes, stride: Sizes, dilation: Sizes, out: Sizes) -> list[P]:
    """One strided view ``[batch, channels, *out]`` of ``padded`` per kernel offset (row-major order)."""
    lead = _whole(padded.shape[:2])
    views = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        spans = [_span(i * d, o, s) for i, d, o, s in zip(offsets, dilation, out, stride)]
        views.append(b.float_slice(padded, lead + spans))
    return views


def _stack_windows(
    b: Any, x: P, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, out: Sizes, fill: float
) -> P:
    """The windows of ``x`` stacked as ``[batch, channels, prod(kernel), prod(out)]``."""
    batch, channels = x.shape[:2]
    extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, stride, kernel, dilation)]
    padded = _place(b, x, padding, [1] * len(kernel), extent, fill)
    length = math.prod(out)
    views = _window_views(b, padded, kernel, stride, dilation, out)
    columns = [b.float_reshape(view, (batch, channels, 1, length)) for view in views]
    return b.float_cat(columns, 2) if len(columns) > 1 else columns[0]


def _im2col(b: Any, x: P, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, out: Sizes) -> P:
    """``[batch, channels * prod(kernel), prod(out)]``: channel-major, then kernel offsets."""
    batch, channels = x.shape[:2]
    stacked = _stack_windows(b, x, kernel, stride, padding, dilation, out, 0.0)
    return b.float_reshape(stacked, (batch, channels * math.prod(kernel), math.prod(out)))


def _conv(
    b: Any, x: P, weight: P, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int, out: Sizes
) -> P:
    """A convolution without bias whose output has the spatial ``out`` (the caller's choice)."""
    batch = x.shape[0]
    out_channels, per_group = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    depth = per_group * math.prod(kernel)
    columns = _im2col(b, x, kernel, stride, padding, dilation, out)
    columns = b.float_reshape(columns, (batch, groups, depth, math.prod(out)))
    w = b.float_reshape(weight, (1, groups, out_channels // groups, depth))
    return b.float_reshape(b.float_matmul(w, columns), (batch, out_channels, *out))


def _conv_transpose(
    b: Any, x: P, weight: P, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int, out: Sizes
) -> P:
    """A transposed convolution without bias with spatial output ``out``: a stride-1 convolution of the
    zero-interleaved, padded input with the flipped kernel."""
    n = len(out)
    in_channels, per_group_out = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    per_group_in = in_channels // groups
    low = [(k - 1) * d - p for k, d, p in zip(kernel, dilation, padding)]
    extent = [o + (k - 1) * d for o, k, d in zip(out, kernel, dilation)]
    interleaved = _place(b, x, low, stride, extent, 0.0)
    w = b.float_reshape(weight, (groups, per_group_in, per_group_out, *kernel))
    w = b.float_swap_dims(w, 1, 2)
    w = b.float_reshape(w, (groups * per_group_out, per_group_in, *kernel))
    w = b.float_flip(w, list(range(2, 2 + n)))
    return _conv(b, interleaved, w, [1] * n, [0] * n, dilation, groups, out)


def _conv_weight_grad(
    b: Any, x: P, grad: P, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int
) -> P:
    """``sum over batch and positions of grad * window of x``: ``[grad channels, x channels / groups,
    *kernel]``. The weight gradient of a convolution, and (roles swapped) of a transposed one."""
    batch, channels = x.shape[:2]
    grad_channels = grad.shape[1]
    out = tuple(grad.shape[2:])
    length = math.prod(out)
    depth = channels // groups * math.prod(kernel)
    columns = _im2col(b, x, kernel, stride, padding, dilation, out)
    columns = b.float_reshape(columns, (batch, groups, depth, length))
    g = b.float_reshape(grad, (batch, groups, grad_channels // groups, length))
    w = b.float_sum_dim(b.float_matmul(g, b.float_swap_dims(columns, 2, 3)), 0)
    return b.float_reshape(w, (grad_channels, channels // groups, *kernel))


def _bias_grad(b: Any, grad: P) -> P:
    batch, channels = grad.shape[:2]
    flat = b.float_reshape(grad, (batch, channels, math.prod(grad.shape[2:])))
    return b.float_reshape(b.float_sum_dim(b.float_sum_dim(flat, 2), 0), (channels,))


def _add_bias(b: Any, y: P, bias: P | None) -> P:
    if bias is None:
        return y
    shape = (1, bias.shape[0]) + (1,) * (len(y.shape) - 2)
    return b.float_add(y, b.float_reshape(bias, shape))


def _conv_forward(b: Any, x: P, weight: P, bias: P | None, options: ConvOptions) -> P:
    kernel = weight.shape[2:]
    out = [
        conv_output_size(size, k, s, p, d)
        for size, k, s, p, d in zip(x.shape[2:], kernel, options.stride, options.padding, options.dilation)
    ]
    y = _conv(b, x, weight, options.stride, options.padding, options.dilation, options.groups, out)
    return _add_bias(b, y, bias)


def _conv_x_backward(b: Any, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
    return _conv_transpose(
        b, output_grad, weight, options.stride, options.padding, options.dilation, options.groups, x.shape[2:]
    )


def _conv_weight_backward(b: Any, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
    return _conv_weight_grad(
        b, x, output_grad, weight.shape[2:], options.stride, options.padding, options.dilation, options.groups
    )


def _conv_transpose_forward(b: Any, x: P, weight: P, bias: P | None, options: ConvTransposeOptions) -> P:
    out = [
        conv_transpose_output_size(size, k, s, p, q, d)
        for size, k, s, p, q, d in zip(
            x.shape[2:],
            weight.shape[2:],
            options.stride,
            options.padding,
            options.padding_out,
            options.dilation,
        )
    ]
    y = _conv_transpose(b, x, weight, options.stride, options.padding, options.dilation, options.groups, out)
    return _add_bias(b, y, bias)


def _conv_transpose_x_backward(b: Any, weight: P, output_grad: P, options: ConvTransposeOptions) -> P:
    sizes = [
        (size + 2 * p - d * (k - 1) - q - 1) // s + 1
        for size, k, s, p, q, d in zip(
            output_grad.shape[2:],
            weight.shape[2:],
            options.stride,
            options.padding,
            options.padding_out,
            options.dilation,
        )
    ]
    return _conv(
        b, output_grad, weight, options.stride, options.padding, options.dilation, options.groups, sizes
    )


def _conv_transpose_weight_backward(
    b: Any, x: P, weight: P, output_grad: P, options: ConvTransposeOptions
) -> P:
    return _conv_weight_grad(
        b, output_grad, x, weight.shape[2:], options.stride, options.padding, options.dilation, options.groups
    )
