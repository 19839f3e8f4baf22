"""``ModuleOps``: convolution, pooling, interpolation, embedding, attention and normalization kernels.

Every method has a default built from the float, int and bool ops, so a new backend runs them as soon
as its required ops exist; backends override the ones they can do faster. Layouts are channels-first
(``[batch, channels, *spatial]``); weights of convolutions are ``[out, in / groups, *kernel]`` and of
transposed convolutions ``[in, out / groups, *kernel]``, as in Burn and PyTorch.

The defaults lower convolutions to im2col plus one batched matrix product (a loop over kernel offsets
gathers the windows), transposed convolutions to a convolution of the zero-interleaved input with the
flipped kernel, pooling to a reduction over the stacked windows, and the separable resampling ops
(adaptive pooling, interpolation) to gathers along one axis at a time.

The shape helpers at the top (output sizes, pooling divisors, interpolation taps) are shared with the
public ``burn_backend.module`` and with backends, so every implementation agrees on them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._data import TensorData
from .._dtype import DType
from .._options import InterpolateMode
from . import _ctc, _deform_conv, _dft
from ._deform_conv import DeformConv2dBackward

if TYPE_CHECKING:
    from .._options import (
        AttentionOptions,
        ConvOptions,
        ConvTransposeOptions,
        DeformConvOptions,
        InterpolateOptions,
        UnfoldOptions,
    )

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype
Sizes = Sequence[int]


# -- shape helpers (shared with burn_backend.module and the backends) -------------------------------
def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """The length of a convolution's output along one dim (may be <= 0 for a too large kernel)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_output_size(
    size: int, kernel: int, stride: int, padding: int, padding_out: int, dilation: int
) -> int:
    """The length of a transposed convolution's output along one dim."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + padding_out + 1


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool
) -> int:
    """The length of a pooling output along one dim, as PyTorch computes it.

    With ``ceil_mode`` a last, partial window is kept if it starts inside the input or its left padding.
    """
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + padding:
        out -= 1
    return out


def avg_pool_divisors(
    size: int, kernel: int, stride: int, padding: int, count_include_pad: bool, out: int
) -> list[int]:
    """The divisor of each output of an average pool along one dim (PyTorch's rule).

    A window counts its padding (if ``count_include_pad``) but never the overhang of ``ceil_mode``.
    """
    divisors = []
    for index in range(out):
        start = index * stride - padding
        end = min(start + kernel, size + padding)
        with_padding = end - start
        inside = min(end, size) - max(start, 0)
        divisors.append(max(1, with_padding if count_include_pad else inside))
    return divisors


def adaptive_pool_windows(size: int, out: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` input range each output of an adaptive pool averages."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def nearest_indices(size: int, out: int) -> list[int]:
    """The input index each output of a nearest interpolation reads (PyTorch's ``nearest`` rule).

    PyTorch computes ``floor(o * (size / out))`` in single precision; so does this, bit for bit.
    """
    scale = np.float32(size) / np.float32(out)
    positions = np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64)
    return [min(int(p), size - 1) for p in positions]


def _cubic_near(t: float, a: float) -> float:
    return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0


def _cubic_far(t: float, a: float) -> float:
    return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a


def interpolation_taps(mode: InterpolateMode, size: int, out: int) -> list[tuple[list[int], list[float]]]:
    """The taps of a 1-d interpolation from ``size`` to ``out`` samples: a list of ``(indices, weights)``
    pairs, one entry per output in each, such that ``y[o] = sum(w[o] * x[i[o]] for i, w in taps)``.

    ``NEAREST`` follows PyTorch's ``nearest`` rule; ``BILINEAR`` and ``BICUBIC`` align corners (as Burn),
    and bicubic uses the cubic convolution with ``A = -0.75`` and clamped borders (as PyTorch).
    """
    if mode is InterpolateMode.NEAREST:
        return [(nearest_indices(size, out), [1.0] * out)]
    scale = (size - 1) / (out - 1) if out > 1 else 0.0
    sources = [scale * o for o in range(out)]
    if mode is InterpolateMode.BILINEAR:
        low, high, w_low, w_high = [], [], [], []
        for source in sources:
            index = min(math.floor(source), size - 1)
            frac = source - index
            low.append(index)
            high.append(index + 1 if index < size - 1 else index)
            w_low.append(1.0 - frac)
            w_high.append(frac)
        return [(low, w_low), (high, w_high)]
    if mode is InterpolateMode.BICUBIC:
        a = -0.75
        taps: list[tuple[list[int], list[float]]] = [([], []) for _ in range(4)]
        for source in sources:
            index = math.floor(source)
            t = source - index
            weights = (
                _cubic_far(t + 1.0, a),
                _cubic_near(t, a),
                _cubic_near(1.0 - t, a),
                _cubic_far(2.0 - t, a),
            )
            for tap, weight in enumerate(weights):
                taps[tap][0].append(min(max(index - 1 + tap, 0), size - 1))
                taps[tap][1].append(weight)
        return taps
    raise ValueError(f"interpolate: unsupported mode {mode!r}")


# -- building blocks of the defaults ----------------------------------------------------------------
_FINITE_MIN = {DType.F64: -1.7976931348623157e308, DType.F32: -3.4028234663852886e38, DType.F16: -65504.0}
_FINITE_MIN[DType.BF16] = -3.3895313892515355e38
_TINY = {DType.F64: 2.2250738585072014e-308, DType.F32: 1.1754943508222875e-38, DType.F16: 6.103515625e-05}
_TINY[DType.BF16] = 1.1754943508222875e-38


def _dtype(tensor: P) -> DType:
    return DType.of(tensor.dtype)


def _whole(shape: Sizes) -> list[slice]:
    return [slice(0, size, 1) for size in shape]


def _span(start: int, count: int, step: int) -> slice:
    """The canonical slice of ``count`` samples from ``start`` every ``step``."""
    return slice(start, start + (count - 1) * step + 1, step)


def _float_constant(b: Any, values: list[Any], shape: Sizes, like: P) -> P:
    data = TensorData(values, _dtype(like), shape=tuple(shape))
    return b.float_from_data(data, b.float_device(like))


def _int_constant(b: Any, values: list[int], shape: Sizes, like: P) -> P:
    data = TensorData(values, b.int_dtype, shape=tuple(shape))
    return b.int_from_data(data, b.float_device(like))


def _bool_constant(b: Any, values: list[bool], shape: Sizes, like: P) -> P:
    data = TensorData(values, DType.BOOL, shape=tuple(shape))
    return b.bool_from_data(data, b.float_device(like))


def _axis_shape(rank: int, axis: int, size: int) -> tuple[int, ...]:
    """``[1, ..., size, ..., 1]``: a constant that broadcasts along every dim but ``axis``."""
    return tuple(size if dim == axis else 1 for dim in range(rank))


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


def _flat_positions(out: Sizes, stride: Sizes, padding: Sizes, spatial: Sizes) -> list[int]:
    """For each output (row-major), the flat input position of its window's first (top-left) sample."""
    strides = [math.prod(spatial[i + 1 :]) for i in range(len(spatial))]
    starts = [[o * s - p for o in range(size)] for size, s, p in zip(out, stride, padding)]
    return [sum(c * st for c, st in zip(combo, strides)) for combo in itertools.product(*starts)]


def _max_pool(
    b: Any,
    x: P,
    kernel: Sizes,
    stride: Sizes,
    padding: Sizes,
    dilation: Sizes,
    ceil_mode: bool,
) -> tuple[P, P]:
    batch, channels = x.shape[:2]
    spatial = tuple(x.shape[2:])
    out = [
        pool_output_size(size, k, s, p, d, ceil_mode)
        for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)
    ]
    stacked = _stack_windows(b, x, kernel, stride, padding, dilation, out, -math.inf)
    values, offsets = b.float_max_dim_with_indices(stacked, 2)
    # the kernel offset -> its displacement in the flattened input plane (mixed radix over kernel dims)
    strides = [math.prod(spatial[i + 1 :]) for i in range(len(spatial))]
    displacement = None
    remaining = offsets
    for k, d, st in reversed(list(zip(kernel, dilation, strides))):
        digit = b.int_remainder_scalar(remaining, k)
        remaining = b.int_div_scalar(remaining, k)
        term = b.int_mul_scalar(digit, d * st)
        displacement = term if displacement is None else b.int_add(displacement, term)
    base = _flat_positions(out, stride, padding, spatial)
    base_tensor = _int_constant(b, base, (1, 1, 1, len(base)), x)
    indices = b.int_add(displacement, base_tensor)
    shape = (batch, channels, *out)
    return b.float_reshape(values, shape), b.int_reshape(indices, shape)


def _max_pool_backward(b: Any, x: P, output_grad: P, indices: P) -> P:
    batch, channels = x.shape[:2]
    plane = math.prod(x.shape[2:])
    length = math.prod(output_grad.shape[2:])
    zeros = b.float_zeros((batch, channels, plane), b.float_device(x), _dtype(output_grad))
    grad = b.float_reshape(output_grad, (batch, channels, length))
    flat_indices = b.int_reshape(indices, (batch, channels, length))
    return b.float_reshape(b.float_scatter_add(zeros, 2, flat_indices, grad), tuple(x.shape))


def _avg_divisor_tensor(
    b: Any, x: P, kernel: Sizes, stride: Sizes, padding: Sizes, count_include_pad: bool, out: Sizes
) -> P:
    per_dim = [
        avg_pool_divisors(size, k, s, p, count_include_pad, o)
        for size, k, s, p, o in zip(x.shape[2:], kernel, stride, padding, out)
    ]
    values = [float(math.prod(combo)) for combo in itertools.product(*per_dim)]
    return _float_constant(b, values, (1, 1, *out), x)


def _avg_pool(
    b: Any, x: P, kernel: Sizes, stride: Sizes, padding: Sizes, count_include_pad: bool, ceil_mode: bool
) -> P:
    batch, channels = x.shape[:2]
    ones = [1] * len(kernel)
    out = [
        pool_output_size(size, k, s, p, 1, ceil_mode)
        for size, k, s, p in zip(x.shape[2:], kernel, stride, padding)
    ]
    stacked = _stack_windows(b, x, kernel, stride, padding, ones, out, 0.0)
    sums = b.float_reshape(b.float_sum_dim(stacked, 2), (batch, channels, *out))
    return b.float_div(sums, _avg_divisor_tensor(b, x, kernel, stride, padding, count_include_pad, out))


def _avg_pool_backward(
    b: Any, x: P, grad: P, kernel: Sizes, stride: Sizes, padding: Sizes, count_include_pad: bool
) -> P:
    batch, channels = x.shape[:2]
    out = tuple(grad.shape[2:])
    scaled = b.float_div(grad, _avg_divisor_tensor(b, x, kernel, stride, padding, count_include_pad, out))
    extent = [(o - 1) * s + k for o, s, k in zip(out, stride, kernel)]
    total = b.float_zeros((batch, channels, *extent), b.float_device(x), _dtype(grad))
    lead = _whole((batch, channels))
    for offsets in itertools.product(*(range(k) for k in kernel)):
        spans = lead + [_span(i, o, s) for i, o, s in zip(offsets, out, stride)]
        total = b.float_slice_assign(total, spans, b.float_add(b.float_slice(total, spans), scaled))
    return _place(b, total, [-p for p in padding], [1] * len(kernel), x.shape[2:], 0.0)


def _taps_along(b: Any, x: P, axis: int, taps: list[tuple[list[int], list[float]]]) -> P:
    """``sum(w * x[..., i, ...])`` over the taps, along ``axis``."""
    rank = len(x.shape)
    out = len(taps[0][0])
    total = None
    for indices, weights in taps:
        picked = b.float_select(x, axis, _int_constant(b, indices, (out,), x))
        if any(w != 1.0 for w in weights):
            picked = b.float_mul(picked, _float_constant(b, weights, _axis_shape(rank, axis, out), x))
        total = picked if total is None else b.float_add(total, picked)
    return total


def _taps_along_backward(
    b: Any, grad: P, axis: int, size: int, taps: list[tuple[list[int], list[float]]]
) -> P:
    """The adjoint of ``_taps_along``: each tap's weighted gradient added back to where it was read."""
    rank = len(grad.shape)
    out = grad.shape[axis]
    shape = tuple(size if dim == axis else n for dim, n in enumerate(grad.shape))
    total = b.float_zeros(shape, b.float_device(grad), _dtype(grad))
    for indices, weights in taps:
        values = grad
        if any(w != 1.0 for w in weights):
            values = b.float_mul(grad, _float_constant(b, weights, _axis_shape(rank, axis, out), grad))
        total = b.float_select_add(total, axis, _int_constant(b, indices, (out,), grad), values)
    return total


def _adaptive_along(b: Any, x: P, axis: int, out: int) -> P:
    """Averages over PyTorch's adaptive windows along ``axis``: one gather per offset into the windows,
    with the offsets past a window's end masked out (never multiplied, so infinities stay local)."""
    rank = len(x.shape)
    size = x.shape[axis]
    windows = adaptive_pool_windows(size, out)
    longest = max(end - start for start, end in windows)
    full = tuple(out if dim == axis else n for dim, n in enumerate(x.shape))
    total = None
    for offset in range(longest):
        indices = [min(start + offset, size - 1) for start, _ in windows]
        picked = b.float_select(x, axis, _int_constant(b, indices, (out,), x))
        outside = [start + offset >= end for start, end in windows]
        if any(outside):
            mask = _bool_constant(b, outside, _axis_shape(rank, axis, out), x)
            picked = b.float_mask_fill(picked, b.bool_expand(mask, full), 0.0)
        total = picked if total is None else b.float_add(total, picked)
    lengths = [float(end - start) for start, end in windows]
    return b.float_div(total, _float_constant(b, lengths, _axis_shape(rank, axis, out), x))


def _adaptive_along_backward(b: Any, grad: P, axis: int, size: int) -> P:
    rank = len(grad.shape)
    out = grad.shape[axis]
    windows = adaptive_pool_windows(size, out)
    lengths = [float(end - start) for start, end in windows]
    scaled = b.float_div(grad, _float_constant(b, lengths, _axis_shape(rank, axis, out), grad))
    shape = tuple(size if dim == axis else n for dim, n in enumerate(grad.shape))
    total = b.float_zeros(shape, b.float_device(grad), _dtype(grad))
    for offset in range(max(end - start for start, end in windows)):
        indices = [min(start + offset, size - 1) for start, _ in windows]
        outside = [start + offset >= end for start, end in windows]
        values = scaled
        if any(outside):
            mask = _bool_constant(b, outside, _axis_shape(rank, axis, out), grad)
            values = b.float_mask_fill(scaled, b.bool_expand(mask, tuple(grad.shape)), 0.0)
        total = b.float_select_add(total, axis, _int_constant(b, indices, (out,), grad), values)
    return total


class ModuleOps:
    """The module op group. All methods have defaults (see the module docstring).

    Conventions: inputs are channels-first; options carry one entry per spatial dim; returned indices
    have the backend's ``int_dtype``; inputs are valid (the public ``burn_backend.module`` functions
    check shapes, kinds and options before calling these).
    """

    int_dtype: DType

    # -- embedding and linear ---------------------------------------------------------------------
    def embedding(self, weights: P, indices: P) -> P:
        """Rows of ``weights`` ``[n, d]`` picked by int ``indices`` ``[b, s]``: ``[b, s, d]``."""
        b: Any = self
        batch, seq = indices.shape
        flat = b.int_reshape(indices, (batch * seq,))
        rows = b.float_select(weights, 0, flat)
        return b.float_reshape(rows, (batch, seq, weights.shape[1]))

    def embedding_backward(self, weights: P, output_grad: P, indices: P) -> P:
        """The gradient of ``embedding`` with respect to ``weights``: each row of ``output_grad`` added
        to the row of ``weights`` it came from (``[n, d]``)."""
        b: Any = self
        batch, seq = indices.shape
        flat = b.int_reshape(indices, (batch * seq,))
        zeros = b.float_zeros(tuple(weights.shape), b.float_device(output_grad), _dtype(output_grad))
        grad = b.float_reshape(output_grad, (batch * seq, weights.shape[1]))
        return b.float_select_add(zeros, 0, flat, grad)

    def linear(self, x: P, weight: P, bias: P | None) -> P:
        """``x @ weight + bias`` with ``weight`` of shape ``[d_in, d_out]`` (Burn's layout) over the last
        dim of ``x`` (any rank >= 1); ``bias`` is ``[d_out]`` or ``None``."""
        b: Any = self
        rank = len(x.shape)
        d_in, d_out = weight.shape
        if rank == 1:
            y = b.float_reshape(b.float_matmul(b.float_reshape(x, (1, d_in)), weight), (d_out,))
        else:
            w = weight if rank == 2 else b.float_reshape(weight, (1,) * (rank - 2) + (d_in, d_out))
            y = b.float_matmul(x, w)
        if bias is None:
            return y
        return b.float_add(y, b.float_reshape(bias, (1,) * (rank - 1) + (d_out,)))

    # -- convolution ------------------------------------------------------------------------------
    def conv1d(self, x: P, weight: P, bias: P | None, options: ConvOptions) -> P:
        """1-d convolution (cross-correlation): ``x [b, c_in, l]``, ``weight [c_out, c_in / groups, k]``,
        ``bias [c_out]`` or ``None``; returns ``[b, c_out, l_out]``."""
        return _conv_forward(self, x, weight, bias, options)

    def conv2d(self, x: P, weight: P, bias: P | None, options: ConvOptions) -> P:
        """2-d convolution: ``x [b, c_in, h, w]``, ``weight [c_out, c_in / groups, kh, kw]``."""
        return _conv_forward(self, x, weight, bias, options)

    def conv3d(self, x: P, weight: P, bias: P | None, options: ConvOptions) -> P:
        """3-d convolution: ``x [b, c_in, d, h, w]``, ``weight [c_out, c_in / groups, kd, kh, kw]``."""
        return _conv_forward(self, x, weight, bias, options)

    def conv1d_x_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of ``conv1d`` with respect to ``x`` (shape of ``x``)."""
        return _conv_x_backward(self, x, weight, output_grad, options)

    def conv1d_weight_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of ``conv1d`` with respect to ``weight`` (shape of ``weight``)."""
        return _conv_weight_backward(self, x, weight, output_grad, options)

    def conv1d_bias_backward(self, x: P, bias: P, output_grad: P) -> P:
        """The gradient of ``conv1d`` with respect to ``bias``: ``output_grad`` summed per channel."""
        return _bias_grad(self, output_grad)

    def conv2d_x_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of ``conv2d`` with respect to ``x``."""
        return _conv_x_backward(self, x, weight, output_grad, options)

    def conv2d_weight_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of ``conv2d`` with respect to ``weight``."""
        return _conv_weight_backward(self, x, weight, output_grad, options)

    def conv2d_bias_backward(self, x: P, bias: P, output_grad: P) -> P:
        """The gradient of ``conv2d`` with respect to ``bias``."""
        return _bias_grad(self, output_grad)

    def conv3d_x_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of ``conv3d`` with respect to ``x``."""
        return _conv_x_backward(self, x, weight, output_grad, options)

    def conv3d_weight_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of ``conv3d`` with respect to ``weight``."""
        return _conv_weight_backward(self, x, weight, output_grad, options)

    def conv3d_bias_backward(self, x: P, bias: P, output_grad: P) -> P:
        """The gradient of ``conv3d`` with respect to ``bias``."""
        return _bias_grad(self, output_grad)

    # -- transposed convolution -------------------------------------------------------------------
    def conv_transpose1d(self, x: P, weight: P, bias: P | None, options: ConvTransposeOptions) -> P:
        """1-d transposed convolution: ``x [b, c_in, l]``, ``weight [c_in, c_out / groups, k]``,
        ``bias [c_out]`` or ``None``; returns ``[b, c_out, l_out]``."""
        return _conv_transpose_forward(self, x, weight, bias, options)

    def conv_transpose2d(self, x: P, weight: P, bias: P | None, options: ConvTransposeOptions) -> P:
        """2-d transposed convolution: ``weight [c_in, c_out / groups, kh, kw]``."""
        return _conv_transpose_forward(self, x, weight, bias, options)

    def conv_transpose3d(self, x: P, weight: P, bias: P | None, options: ConvTransposeOptions) -> P:
        """3-d transposed convolution: ``weight [c_in, c_out / groups, kd, kh, kw]``."""
        return _conv_transpose_forward(self, x, weight, bias, options)

    def conv_transpose1d_x_backward(self, weight: P, output_grad: P, options: ConvTransposeOptions) -> P:
        """The gradient of ``conv_transpose1d`` with respect to ``x``."""
        return _conv_transpose_x_backward(self, weight, output_grad, options)

    def conv_transpose1d_weight_backward(
        self, x: P, weight: P, output_grad: P, options: ConvTransposeOptions
    ) -> P:
        """The gradient of ``conv_transpose1d`` with respect to ``weight``."""
        return _conv_transpose_weight_backward(self, x, weight, output_grad, options)

    def conv_transpose1d_bias_backward(self, x: P, bias: P, output_grad: P) -> P:
        """The gradient of ``conv_transpose1d`` with respect to ``bias``."""
        return _bias_grad(self, output_grad)

    def conv_transpose2d_x_backward(self, weight: P, output_grad: P, options: ConvTransposeOptions) -> P:
        """The gradient of ``conv_transpose2d`` with respect to ``x``."""
        return _conv_transpose_x_backward(self, weight, output_grad, options)

    def conv_transpose2d_weight_backward(
        self, x: P, weight: P, output_grad: P, options: ConvTransposeOptions
    ) -> P:
        """The gradient of ``conv_transpose2d`` with respect to ``weight``."""
        return _conv_transpose_weight_backward(self, x, weight, output_grad, options)

    def conv_transpose2d_bias_backward(self, x: P, bias: P, output_grad: P) -> P:
        """The gradient of ``conv_transpose2d`` with respect to ``bias``."""
        return _bias_grad(self, output_grad)

    def conv_transpose3d_x_backward(self, weight: P, output_grad: P, options: ConvTransposeOptions) -> P:
        """The gradient of ``conv_transpose3d`` with respect to ``x``."""
        return _conv_transpose_x_backward(self, weight, output_grad, options)

    def conv_transpose3d_weight_backward(
        self, x: P, weight: P, output_grad: P, options: ConvTransposeOptions
    ) -> P:
        """The gradient of ``conv_transpose3d`` with respect to ``weight``."""
        return _conv_transpose_weight_backward(self, x, weight, output_grad, options)

    def conv_transpose3d_bias_backward(self, x: P, bias: P, output_grad: P) -> P:
        """The gradient of ``conv_transpose3d`` with respect to ``bias``."""
        return _bias_grad(self, output_grad)

    def unfold4d(self, x: P, kernel_size: tuple[int, int], options: UnfoldOptions) -> P:
        """The sliding windows of ``x [b, c, h, w]`` as columns: ``[b, c * kh * kw, windows]`` (channel
        major, then kernel row and column; windows row-major), like PyTorch's ``F.unfold``."""
        out = [
            conv_output_size(size, k, s, p, d)
            for size, k, s, p, d in zip(
                x.shape[2:], kernel_size, options.stride, options.padding, options.dilation
            )
        ]
        return _im2col(self, x, kernel_size, options.stride, options.padding, options.dilation, out)

    # -- average pooling --------------------------------------------------------------------------
    def avg_pool1d(
        self, x: P, kernel_size: int, stride: int, padding: int, count_include_pad: bool, ceil_mode: bool
    ) -> P:
        """1-d average pooling of ``x [b, c, l]`` (PyTorch's padding, divisor and ``ceil_mode`` rules)."""
        return _avg_pool(self, x, [kernel_size], [stride], [padding], count_include_pad, ceil_mode)

    def avg_pool1d_backward(
        self,
        x: P,
        grad: P,
        kernel_size: int,
        stride: int,
        padding: int,
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> P:
        """The gradient of ``avg_pool1d`` with respect to ``x``."""
        return _avg_pool_backward(self, x, grad, [kernel_size], [stride], [padding], count_include_pad)

    def avg_pool2d(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> P:
        """2-d average pooling of ``x [b, c, h, w]``."""
        return _avg_pool(self, x, kernel_size, stride, padding, count_include_pad, ceil_mode)

    def avg_pool2d_backward(
        self,
        x: P,
        grad: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> P:
        """The gradient of ``avg_pool2d`` with respect to ``x``."""
        return _avg_pool_backward(self, x, grad, kernel_size, stride, padding, count_include_pad)

    def adaptive_avg_pool1d(self, x: P, output_size: int) -> P:
        """Averages of ``x [b, c, l]`` over ``output_size`` windows ``[floor(i*l/o), ceil((i+1)*l/o))``."""
        return _adaptive_along(self, x, 2, output_size)

    def adaptive_avg_pool1d_backward(self, x: P, grad: P) -> P:
        """The gradient of ``adaptive_avg_pool1d`` with respect to ``x``."""
        return _adaptive_along_backward(self, grad, 2, x.shape[2])

    def adaptive_avg_pool2d(self, x: P, output_size: tuple[int, int]) -> P:
        """Adaptive average pooling of ``x [b, c, h, w]`` to ``output_size`` (separable windows)."""
        return _adaptive_along(self, _adaptive_along(self, x, 2, output_size[0]), 3, output_size[1])

    def adaptive_avg_pool2d_backward(self, x: P, grad: P) -> P:
        """The gradient of ``adaptive_avg_pool2d`` with respect to ``x``."""
        partial = _adaptive_along_backward(self, grad, 3, x.shape[3])
        return _adaptive_along_backward(self, partial, 2, x.shape[2])

    # -- max pooling ------------------------------------------------------------------------------
    def max_pool1d(
        self, x: P, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> P:
        """1-d max pooling of ``x [b, c, l]``; padding never wins."""
        return self.max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]

    def max_pool1d_with_indices(
        self, x: P, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> tuple[P, P]:
        """``max_pool1d`` and the position in ``x``'s last dim each maximum came from (first on ties)."""
        return _max_pool(self, x, [kernel_size], [stride], [padding], [dilation], ceil_mode)

    def max_pool1d_with_indices_backward(
        self,
        x: P,
        kernel_size: int,
        stride: int,
        padding: int,
        dilation: int,
        ceil_mode: bool,
        output_grad: P,
        indices: P,
    ) -> P:
        """The gradient of ``max_pool1d`` with respect to ``x``: each output's gradient added at its
        index."""
        return _max_pool_backward(self, x, output_grad, indices)

    def max_pool2d(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> P:
        """2-d max pooling of ``x [b, c, h, w]``."""
        return self.max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]

    def max_pool2d_with_indices(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> tuple[P, P]:
        """``max_pool2d`` and each maximum's flat position ``row * w + col`` in its input plane (as
        PyTorch; the first in row-major window order on ties)."""
        return _max_pool(self, x, kernel_size, stride, padding, dilation, ceil_mode)

    def max_pool2d_with_indices_backward(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
        output_grad: P,
        indices: P,
    ) -> P:
        """The gradient of ``max_pool2d`` with respect to ``x``."""
        return _max_pool_backward(self, x, output_grad, indices)

    # -- interpolation ----------------------------------------------------------------------------
    def interpolate(self, x: P, output_size: tuple[int, int], options: InterpolateOptions) -> P:
        """``x [b, c, h, w]`` resampled to ``output_size`` (see ``interpolation_taps`` for the modes)."""
        height, width = x.shape[2:]
        rows = interpolation_taps(options.mode, height, output_size[0])
        columns = interpolation_taps(options.mode, width, output_size[1])
        return _taps_along(self, _taps_along(self, x, 3, columns), 2, rows)

    def interpolate_backward(
        self, x: P, grad: P, output_size: tuple[int, int], options: InterpolateOptions
    ) -> P:
        """The gradient of ``interpolate`` with respect to ``x``."""
        height, width = x.shape[2:]
        rows = interpolation_taps(options.mode, height, output_size[0])
        columns = interpolation_taps(options.mode, width, output_size[1])
        partial = _taps_along_backward(self, grad, 2, height, rows)
        return _taps_along_backward(self, partial, 3, width, columns)

    # -- attention and normalization --------------------------------------------------------------
    def attention(
        self,
        query: P,
        key: P,
        value: P,
        mask: P | None,
        attn_bias: P | None,
        options: AttentionOptions,
    ) -> P:
        """Scaled dot-product attention on ``[batch, heads, seq, dim]``: ``softmax(scores) @ value``.

        ``scores = query @ key^T * scale``, then softcapped, then masked (``mask`` true and, if causal,
        keys after the query position: ``-inf``), then ``attn_bias`` added. Rows with every key masked
        give zeros. ``key``/``value`` may have fewer heads than ``query`` (grouped-query attention: query
        head ``h`` reads key head ``h // (heads / kv_heads)``). ``mask`` and ``attn_bias`` broadcast to
        ``[batch, heads, seq_q, seq_k]``.
        """
        b: Any = self
        batch, heads, seq_q, head_dim = query.shape
        kv_heads, seq_k = key.shape[1], key.shape[2]
        if kv_heads != heads:
            group = heads // kv_heads
            key, value = (
                b.float_reshape(
                    b.float_expand(
                        b.float_reshape(t, (batch, kv_heads, 1, seq_k, t.shape[3])),
                        (batch, kv_heads, group, seq_k, t.shape[3]),
                    ),
                    (batch, heads, seq_k, t.shape[3]),
                )
                for t in (key, value)
            )
        scale = options.scale if options.scale is not None else 1.0 / math.sqrt(head_dim)
        scores = b.float_mul_scalar(b.float_matmul(query, b.float_transpose(key)), scale)
        if options.softcap is not None:
            scores = b.float_div_scalar(scores, options.softcap)
            scores = b.float_mul_scalar(b.float_tanh(scores), options.softcap)
        full = (batch, heads, seq_q, seq_k)
        if mask is not None:
            scores = b.float_mask_fill(scores, b.bool_expand(mask, full), -math.inf)
        if options.is_causal:
            device = b.float_device(query)
            rows = b.int_reshape(b.int_arange(0, seq_q, device, b.int_dtype), (seq_q, 1))
            columns = b.int_reshape(b.int_arange(0, seq_k, device, b.int_dtype), (1, seq_k))
            future = b.bool_reshape(b.int_lower(rows, columns), (1, 1, seq_q, seq_k))
            scores = b.float_mask_fill(scores, b.bool_expand(future, full), -math.inf)
        if attn_bias is not None:
            scores = b.float_add(scores, attn_bias)
        dtype = _dtype(scores)
        # a row with every key masked has max -inf: clamping keeps exp() at 0 instead of NaN
        peak = b.float_clamp_min(b.float_max_dim(scores, 3), _FINITE_MIN[dtype])
        weights = b.float_exp(b.float_sub(scores, peak))
        total = b.float_clamp_min(b.float_sum_dim(weights, 3), _TINY[dtype])
        return b.float_matmul(b.float_div(weights, total), value)

    def layer_norm(self, x: P, gamma: P | None, beta: P | None, epsilon: float) -> P:
        """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last dim (biased variance);
        ``gamma`` and ``beta`` are ``[d]`` or ``None``."""
        b: Any = self
        rank = len(x.shape)
        last = rank - 1
        centered = b.float_sub(x, b.float_mean_dim(x, last))
        variance = b.float_mean_dim(b.float_mul(centered, centered), last)
        y = b.float_div(centered, b.float_sqrt(b.float_add_scalar(variance, epsilon)))
        shape = (1,) * last + (x.shape[last],)
        if gamma is not None:
            y = b.float_mul(y, b.float_reshape(gamma, shape))
        if beta is not None:
            y = b.float_add(y, b.float_reshape(beta, shape))
        return y

    # -- FFT and folding ----------------------------------------------------------------------------
    def rfft(self, signal: P, dim: int) -> tuple[P, P]:
        """The DFT of a real ``signal`` along ``dim`` (of length ``n >= 1``): its real and imaginary parts,
        each with ``n // 2 + 1`` bins along ``dim`` (``X[k] = sum_t x[t] * exp(-2 pi i k t / n)``, as
        ``numpy.fft.rfft``). The default multiplies by dense DFT matrices (``O(n^2)``)."""
        return _dft.rfft(self, signal, dim)

    def irfft(self, spectrum_re: P, spectrum_im: P, dim: int, n: int) -> P:
        """The inverse of ``rfft``: the real signal of length ``n`` along ``dim`` whose spectrum has the
        bins ``spectrum_re + i * spectrum_im`` (same shapes), as ``numpy.fft.irfft``: the bins are
        trimmed or zero-padded to ``n // 2 + 1``, and the imaginary parts of bin 0 and (even ``n``) bin
        ``n / 2`` are ignored."""
        return _dft.irfft(self, spectrum_re, spectrum_im, dim, n)

    def fold4d(
        self, x: P, output_size: tuple[int, int], kernel_size: tuple[int, int], options: UnfoldOptions
    ) -> P:
        """The inverse of ``unfold4d`` (PyTorch's ``F.fold``): columns ``x [b, c * kh * kw, windows]``
        summed back into ``[b, c, *output_size]``, each at the window it came from (overlaps add)."""
        b: Any = self
        batch, depth = x.shape[:2]
        taps = kernel_size[0] * kernel_size[1]
        channels = depth // taps
        out = [
            conv_output_size(size, k, s, p, d)
            for size, k, s, p, d in zip(
                output_size, kernel_size, options.stride, options.padding, options.dilation
            )
        ]
        columns = b.float_reshape(x, (batch, channels, taps, *out))
        padded = [size + 2 * p for size, p in zip(output_size, options.padding)]
        total = b.float_zeros((batch, channels, *padded), b.float_device(x), _dtype(x))
        lead = _whole((batch, channels))
        offsets = itertools.product(*(range(k) for k in kernel_size))
        for tap, offset in enumerate(offsets):
            column = b.float_slice(columns, [*lead, slice(tap, tap + 1, 1), *_whole(out)])
            column = b.float_reshape(column, (batch, channels, *out))
            spans = lead + [
                _span(i * d, o, s) for i, d, o, s in zip(offset, options.dilation, out, options.stride)
            ]
            total = b.float_slice_assign(total, spans, b.float_add(b.float_slice(total, spans), column))
        return _place(b, total, [-p for p in options.padding], [1, 1], output_size, 0.0)

    # -- deformable convolution -------------------------------------------------------------------
    def deform_conv2d(
        self, x: P, offset: P, weight: P, mask: P | None, bias: P | None, options: DeformConvOptions
    ) -> P:
        """Deformable 2-d convolution (torchvision's ``deform_conv2d``; DCNv2 with a ``mask``).

        ``x [b, c_in, h, w]``, ``offset [b, 2 * offset_groups * kh * kw, oh, ow]`` (a ``(dy, dx)`` pair
        per kernel tap, tap-major within each offset group), ``weight [c_out, c_in / weight_groups, kh,
        kw]``, ``mask [b, offset_groups * kh * kw, oh, ow]`` or ``None``, ``bias [c_out]`` or ``None``.
        Each tap reads its input bilinearly at its displaced position (zero outside the input), scaled by
        its mask; returns ``[b, c_out, oh, ow]``.
        """
        return _deform_conv.deform_conv2d(self, x, offset, weight, mask, bias, options)

    def deform_conv2d_backward(
        self,
        x: P,
        offset: P,
        weight: P,
        mask: P | None,
        bias: P | None,
        output_grad: P,
        options: DeformConvOptions,
    ) -> DeformConv2dBackward:
        """The gradients of ``deform_conv2d`` with respect to each input, as a ``DeformConv2dBackward``
        ``(x_grad, offset_grad, weight_grad, mask_grad, bias_grad)``; ``mask_grad`` and ``bias_grad``
        are ``None`` when ``mask`` and ``bias`` are. The offset gradient is that of the bilinear read
        (piecewise linear in the offsets: one-sided where a coordinate is integral)."""
        return _deform_conv.deform_conv2d_backward(self, x, offset, weight, mask, bias, output_grad, options)

    # -- CTC loss ---------------------------------------------------------------------------------
    def ctc_loss(self, log_probs: P, targets: P, input_lengths: P, target_lengths: P, blank: int) -> P:
        """The connectionist temporal classification loss of each sample: ``-log p(target | input)``.

        ``log_probs [T, n, classes]`` are log-softmax outputs; ``targets [n, s]`` (int) hold each sample's
        labels padded past its target length; ``input_lengths`` and ``target_lengths`` (int ``[n]``) are
        at most ``T`` and ``s``; ``blank`` is the blank class. Returns ``[n]``: PyTorch's ``ctc_loss``
        with ``reduction='none'``, ``inf`` where no alignment fits in the input.
        """
        return _ctc.ctc_loss(self, log_probs, targets, input_lengths, target_lengths, blank)

    def has_ctc_loss_backward(self) -> bool:
        """Whether ``ctc_loss_backward`` is available; the default one is, so autodiff may call it
        instead of differentiating through the recursion of ``ctc_loss``."""
        return True

    def ctc_loss_backward(
        self, log_probs: P, targets: P, input_lengths: P, target_lengths: P, blank: int, output_grad: P
    ) -> P:
        """The gradient of ``ctc_loss`` ``[T, n, classes]`` given ``output_grad [n]``, as PyTorch computes
        it: ``(exp(log_probs) - posterior) * output_grad`` within each input, zero after it (NaN within an
        input whose loss is infinite). That is the gradient with respect to the logits behind
        ``log_probs = log_softmax(logits)``, and also what autodiff through the log-softmax yields."""
        return _ctc.ctc_loss_backward(
            self, log_probs, targets, input_lengths, target_lengths, blank, output_grad
        )
