"""Cuda's module ops: convolutions and pooling as GPU code, and the ones a few CuPy calls do better than
backend-core's defaults.

Convolutions, their gradients and the transposed convolutions are im2col/col2im kernels around batched
cuBLAS GEMMs (``_conv``). Pooling reduces strided views one spatial axis at a time, and ``fold4d`` sums
in f32. Interpolation, attention and the rest keep the defaults, which are built from the float ops and
so run on the GPU already. f16 and bf16 compute in f32 here, also around the defaults of deformable
convolution (whose bilinear taps lose too much in f16).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from burn_backend import (
    ConvOptions,
    ConvTransposeOptions,
    DeformConv2dBackward,
    DeformConvOptions,
    DType,
    UnfoldOptions,
)
from burn_backend import ModuleOps as DefaultModuleOps
from burn_backend.module import (
    adaptive_pool_windows,
    avg_pool_divisors,
    conv_output_size,
    conv_transpose_output_size,
    pool_output_size,
)

from .._cupy import cp
from ._array import LOW_PRECISION, narrow, widen
from ._conv import add_bias, convolve, convolve_adjoint, convolve_weight_grad

Array = Any
Sizes = Sequence[int]


def _maybe(tensor: Array | None) -> Array | None:
    return None if tensor is None else widen(tensor)


# -- layout helpers -----------------------------------------------------------------------------------
def _place(x: Array, low: Sizes, size: Sizes, fill: float) -> Array:
    """The trailing dims resized to ``size``, ``x[i]`` at ``low + i`` (``low`` may be negative: a crop),
    the rest ``fill``; ``x`` itself where nothing moves."""
    n = len(size)
    lead = x.shape[: x.ndim - n]
    spatial = x.shape[x.ndim - n :]
    if all(lo == 0 for lo in low) and tuple(size) == tuple(spatial):
        return x
    if all(lo <= 0 for lo in low) and all(-lo + s <= length for lo, s, length in zip(low, size, spatial)):
        crop = (Ellipsis, *(slice(-lo, -lo + s) for lo, s in zip(low, size)))
        return x[crop]
    out = cp.full(lead + tuple(size), fill, dtype=x.dtype)
    source: list[slice] = []
    target: list[slice] = []
    for length, lo, extent in zip(spatial, low, size):
        first, last = max(0, -lo), min(length, extent - lo)
        if last <= first:
            return out
        source.append(slice(first, last))
        target.append(slice(lo + first, lo + last))
    into, at = (Ellipsis, *target), (Ellipsis, *source)
    out[into] = x[at]
    return out


def _along(array: Array, axis: int, start: int, count: int, step: int) -> Array:
    """The strided view ``array[..., start : start + (count - 1) * step + 1 : step, ...]`` on ``axis``."""
    index: list[Any] = [slice(None)] * array.ndim
    index[axis] = slice(start, start + (count - 1) * step + 1, step)
    return array[tuple(index)]


def _add_bias(y: Array, bias: Array | None) -> Array:
    return y if bias is None else add_bias(y, widen(bias))


def _conv_forward(x: Array, weight: Array, bias: Array | None, options: ConvOptions) -> Array:
    out = [
        conv_output_size(n, k, s, p, d)
        for n, k, s, p, d in zip(
            x.shape[2:], weight.shape[2:], options.stride, options.padding, options.dilation
        )
    ]
    y = convolve(
        widen(x), widen(weight), options.stride, options.padding, options.dilation, options.groups, out
    )
    return narrow(_add_bias(y, bias), x.dtype)


def _conv_transpose_forward(
    x: Array, weight: Array, bias: Array | None, options: ConvTransposeOptions
) -> Array:
    out = [
        conv_transpose_output_size(n, k, s, p, q, d)
        for n, k, s, p, q, d in zip(
            x.shape[2:],
            weight.shape[2:],
            options.stride,
            options.padding,
            options.padding_out,
            options.dilation,
        )
    ]
    y = convolve_adjoint(
        widen(x), widen(weight), options.stride, options.padding, options.dilation, options.groups, out
    )
    return narrow(_add_bias(y, bias), x.dtype)


def _conv_transpose_x_backward(weight: Array, output_grad: Array, options: ConvTransposeOptions) -> Array:
    sizes = [
        (n + 2 * p - d * (k - 1) - q - 1) // s + 1
        for n, k, s, p, q, d in zip(
            output_grad.shape[2:],
            weight.shape[2:],
            options.stride,
            options.padding,
            options.padding_out,
            options.dilation,
        )
    ]
    g = convolve(
        widen(output_grad),
        widen(weight),
        options.stride,
        options.padding,
        options.dilation,
        options.groups,
        sizes,
    )
    return narrow(g, output_grad.dtype)


def _bias_grad(grad: Array) -> Array:
    axes = (0, *range(2, grad.ndim))
    return narrow(cp.sum(widen(grad), axis=axes), grad.dtype)


# -- pooling --------------------------------------------------------------------------------------------
def _max_pool(
    x: Array, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, ceil_mode: bool
) -> Array:
    work = widen(x)
    out = [
        pool_output_size(n, k, s, p, d, ceil_mode)
        for n, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation)
    ]
    extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, stride, kernel, dilation)]
    current = _place(work, padding, extent, -math.inf)
    for axis in range(2, x.ndim):
        k, s, d, o = kernel[axis - 2], stride[axis - 2], dilation[axis - 2], out[axis - 2]
        result = cp.array(_along(current, axis, 0, o, s))
        for j in range(1, k):
            cp.maximum(result, _along(current, axis, j * d, o, s), out=result)
        current = result
    return narrow(cp.ascontiguousarray(current), x.dtype)


@functools.lru_cache(maxsize=128)
def _window_samples(out: int, stride: int, padding: int, dilation: int, kernel: int, device: int) -> Any:
    """Along one axis of a pool: the first sample inside the input of each window, and the input
    position of each window's ``j``-th sample, as int64 arrays on ``device`` (built once: copying them
    from the host at every call would wait for the GPU)."""
    starts = np.arange(out, dtype=np.int64) * stride - padding
    first = starts + ((-starts).clip(min=0) + dilation - 1) // dilation * dilation
    with cp.cuda.Device(device):
        return cp.asarray(first), [cp.asarray(starts + j * dilation) for j in range(kernel)]


def _max_pool_with_indices(
    x: Array,
    kernel: Sizes,
    stride: Sizes,
    padding: Sizes,
    dilation: Sizes,
    ceil_mode: bool,
    int_dtype: Any,
) -> tuple[Array, Array]:
    """Max pooling with PyTorch's index rule: windows scanned row-major, a later value wins if greater
    or NaN. Reducing the last axis first, then the earlier ones, picks the same element."""
    work = widen(x)
    n = len(kernel)
    spatial = x.shape[2:]
    out = [
        pool_output_size(size, k, s, p, d, ceil_mode)
        for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)
    ]
    extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, stride, kernel, dilation)]
    values = _place(work, padding, extent, -math.inf)
    carried: list[Array] = []  # the input position along each axis reduced so far (last axis first)
    for dim in reversed(range(n)):
        axis = 2 + dim
        k, s, d, p, o = kernel[dim], stride[dim], dilation[dim], padding[dim], out[dim]
        first, samples = _window_samples(o, s, p, d, k, int(cp.cuda.runtime.getDevice()))
        shape = [1] * x.ndim
        shape[axis] = o
        target_shape = list(values.shape)
        target_shape[axis] = o
        best = cp.full(target_shape, -math.inf, dtype=values.dtype)
        position = cp.broadcast_to(first.reshape(shape), target_shape).copy()
        # a window whose every sample is -inf is never updated: it keeps the first sample inside x
        kept = [cp.array(_along(c, axis, 0, o, s)) for c in carried]
        for j in range(k):
            candidate = _along(values, axis, j * d, o, s)
            better = cp.greater(candidate, best)
            better |= cp.isnan(candidate)
            cp.copyto(best, candidate, where=better)
            cp.copyto(position, samples[j].reshape(shape), where=better)
            for target, source in zip(kept, carried):
                cp.copyto(target, _along(source, axis, j * d, o, s), where=better)
        values = best
        carried = [*kept, position]
    strides = [math.prod(spatial[i + 1 :]) for i in range(n)]
    flat = cp.zeros(values.shape, dtype=np.int64)
    for position, st in zip(carried, reversed(strides)):
        flat += position * st
    return narrow(values, x.dtype), flat.astype(int_dtype)


def _max_pool_backward(x: Array, output_grad: Array, indices: Array) -> Array:
    batch, channels = x.shape[:2]
    plane = math.prod(x.shape[2:])
    planes = batch * channels
    length = math.prod(indices.shape[2:])
    offsets = (cp.arange(planes, dtype=np.int64) * plane)[:, None]
    flat = indices.reshape(planes, length).astype(np.int64) + offsets
    grad = widen(output_grad)
    total = cp.zeros(planes * plane, dtype=grad.dtype)
    cp.add.at(total, flat.ravel(), grad.ravel())
    return narrow(total.reshape(x.shape), output_grad.dtype)


@functools.lru_cache(maxsize=128)
def _divisor(
    sizes: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    include: bool,
    out: tuple[int, ...],
    dtype: Any,
    device: int,
) -> Array:
    """The divisors of an average pool's outputs, on ``device`` (cached: built and copied to the GPU once,
    so that pooling does not wait on a host copy each call)."""
    total: Any = np.ones((), dtype=np.float64)
    for size, k, s, p, o in zip(sizes, kernel, stride, padding, out):
        total = np.multiply.outer(total, np.asarray(avg_pool_divisors(size, k, s, p, include, o), np.float64))
    with cp.cuda.Device(device):
        return cp.asarray(total.astype(dtype))


def _divisor_of(
    x: Array, work: Array, kernel: Sizes, stride: Sizes, padding: Sizes, include: bool, out: Sizes
) -> Array:
    """The divisors of the pool of ``x``'s spatial dims, in ``work``'s dtype."""
    return _divisor(
        tuple(x.shape[2:]),
        tuple(kernel),
        tuple(stride),
        tuple(padding),
        include,
        tuple(out),
        np.dtype(work.dtype),
        int(cp.cuda.runtime.getDevice()),
    )


def _avg_pool(
    x: Array, kernel: Sizes, stride: Sizes, padding: Sizes, count_include_pad: bool, ceil_mode: bool
) -> Array:
    work = widen(x)
    out = [
        pool_output_size(size, k, s, p, 1, ceil_mode)
        for size, k, s, p in zip(x.shape[2:], kernel, stride, padding)
    ]
    extent = [(o - 1) * s + k for o, s, k in zip(out, stride, kernel)]
    current = _place(work, padding, extent, 0.0)
    for axis in range(2, x.ndim):
        k, s, o = kernel[axis - 2], stride[axis - 2], out[axis - 2]
        total = cp.array(_along(current, axis, 0, o, s))
        for j in range(1, k):
            total += _along(current, axis, j, o, s)
        current = total
    current /= _divisor_of(x, work, kernel, stride, padding, count_include_pad, out)
    return narrow(current, x.dtype)


def _avg_pool_backward(
    x: Array, grad: Array, kernel: Sizes, stride: Sizes, padding: Sizes, count_include_pad: bool
) -> Array:
    out = grad.shape[2:]
    work = widen(grad)
    current = work / _divisor_of(x, work, kernel, stride, padding, count_include_pad, out).reshape(
        (1, 1, *out)
    )
    for axis in range(2, x.ndim):
        k, s, o = kernel[axis - 2], stride[axis - 2], out[axis - 2]
        shape = list(current.shape)
        shape[axis] = (o - 1) * s + k
        total = cp.zeros(shape, dtype=current.dtype)
        for j in range(k):
            target = _along(total, axis, j, o, s)
            target += current
        current = total
    result = _place(current, [-p for p in padding], x.shape[2:], 0.0)
    return narrow(cp.ascontiguousarray(result), grad.dtype)


@functools.lru_cache(maxsize=128)
def _adaptive_matrix(size: int, out: int, dtype: Any, device: int) -> Array:
    """``[out, size]``: row ``o`` averages the window of output ``o`` (cached per device)."""
    matrix = np.zeros((out, size), dtype=dtype)
    for row, (start, end) in enumerate(adaptive_pool_windows(size, out)):
        matrix[row, start:end] = 1.0 / (end - start)
    with cp.cuda.Device(device):
        return cp.asarray(matrix)


def _adaptive_along(x: Array, axis: int, out: int) -> Array:
    """Adaptive average pooling of ``x`` along ``axis`` to ``out`` samples: a new array."""
    size = x.shape[axis]
    if size % out == 0:
        k = size // out
        total = cp.array(_along(x, axis, 0, out, k))
        for j in range(1, k):
            total += _along(x, axis, j, out, k)
        total /= x.dtype.type(k)
        return total
    # overlapping windows of unequal lengths: the j-th sample of every window longer than j, gathered and
    # added (sums of the samples themselves, no products with zero weights: an inf stays in its windows)
    starts, taps, lengths = _adaptive_taps(size, out, np.dtype(x.dtype), int(cp.cuda.runtime.getDevice()))
    total = cp.take(x, starts, axis=axis)
    index: list[Any] = [slice(None)] * x.ndim
    for longer, samples in taps:
        picked = cp.take(x, samples, axis=axis)
        if longer is None:
            total += picked
        else:
            index[axis] = longer
            total[tuple(index)] += picked
    shape = [1] * x.ndim
    shape[axis] = out
    total /= lengths.reshape(shape)
    return total


@functools.lru_cache(maxsize=128)
def _adaptive_taps(size: int, out: int, dtype: Any, device: int) -> Any:
    """Uneven adaptive windows of ``size`` samples into ``out``, as arrays on ``device``: each window's
    first sample; for each further tap ``j``, the windows longer than ``j`` (``None`` for all) and their
    ``j``-th samples; the window lengths in ``dtype`` (built once: copying them from the host at every
    call would wait for the GPU)."""
    windows = np.asarray(adaptive_pool_windows(size, out), dtype=np.int64).reshape(out, 2)
    starts = windows[:, 0]
    lengths = windows[:, 1] - starts
    with cp.cuda.Device(device):
        taps = []
        for j in range(1, int(lengths.max())):
            longer = np.flatnonzero(lengths > j)
            taps.append((None if len(longer) == out else cp.asarray(longer), cp.asarray(starts[longer] + j)))
        return cp.asarray(starts), taps, cp.asarray(lengths.astype(dtype))


def _adaptive_along_backward(grad: Array, axis: int, size: int) -> Array:
    out = grad.shape[axis]
    if size % out == 0:
        k = size // out
        return cp.repeat(grad / grad.dtype.type(k), k, axis=axis)
    matrix = _adaptive_matrix(size, out, np.dtype(grad.dtype), int(cp.cuda.runtime.getDevice()))
    moved = cp.moveaxis(grad, axis, -1)
    return cp.ascontiguousarray(cp.moveaxis(cp.matmul(moved, matrix), -1, axis))


class ModuleOps:
    """Overrides of ``burn_backend.ModuleOps`` defaults."""

    int_dtype: DType

    def embedding(self, weights: Array, indices: Array) -> Array:
        return cp.take(weights, indices, axis=0)

    def embedding_backward(self, weights: Array, output_grad: Array, indices: Array) -> Array:
        rows, dim = weights.shape
        grad = widen(output_grad)
        total = cp.zeros((rows, dim), dtype=grad.dtype)
        cp.add.at(total, indices.reshape(-1), grad.reshape(math.prod(indices.shape), dim))
        return narrow(total, output_grad.dtype)

    def linear(self, x: Array, weight: Array, bias: Array | None) -> Array:
        y = cp.matmul(widen(x), widen(weight))
        if bias is not None:
            y += widen(bias)
        return narrow(y, x.dtype)

    def layer_norm(self, x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
        work = widen(x)
        mean = cp.mean(work, axis=-1, keepdims=True)
        centered = work - mean
        variance = cp.mean(centered * centered, axis=-1, keepdims=True)
        y = centered / cp.sqrt(variance + work.dtype.type(epsilon))
        if gamma is not None:
            y *= widen(gamma)
        if beta is not None:
            y += widen(beta)
        return narrow(y, x.dtype)

    # -- convolution ------------------------------------------------------------------------------
    # One N-d kernel per role; the interface names each rank, so each is bound under three names.
    def _conv_nd(self, x: Array, weight: Array, bias: Array | None, options: ConvOptions) -> Array:
        return _conv_forward(x, weight, bias, options)

    def _conv_nd_x_backward(self, x: Array, weight: Array, output_grad: Array, options: ConvOptions) -> Array:
        g = convolve_adjoint(
            widen(output_grad),
            widen(weight),
            options.stride,
            options.padding,
            options.dilation,
            options.groups,
            x.shape[2:],
        )
        return narrow(g, output_grad.dtype)

    def _conv_nd_weight_backward(
        self, x: Array, weight: Array, output_grad: Array, options: ConvOptions
    ) -> Array:
        g = convolve_weight_grad(
            widen(x),
            widen(output_grad),
            weight.shape[2:],
            options.stride,
            options.padding,
            options.dilation,
            options.groups,
        )
        return narrow(g, output_grad.dtype)

    def _bias_backward(self, x: Array, bias: Array, output_grad: Array) -> Array:
        return _bias_grad(output_grad)

    def _conv_transpose_nd(
        self, x: Array, weight: Array, bias: Array | None, options: ConvTransposeOptions
    ) -> Array:
        return _conv_transpose_forward(x, weight, bias, options)

    def _conv_transpose_nd_x_backward(
        self, weight: Array, output_grad: Array, options: ConvTransposeOptions
    ) -> Array:
        return _conv_transpose_x_backward(weight, output_grad, options)

    def _conv_transpose_nd_weight_backward(
        self, x: Array, weight: Array, output_grad: Array, options: ConvTransposeOptions
    ) -> Array:
        g = convolve_weight_grad(
            widen(output_grad),
            widen(x),
            weight.shape[2:],
            options.stride,
            options.padding,
            options.dilation,
            options.groups,
        )
        return narrow(g, output_grad.dtype)

    conv1d = conv2d = conv3d = _conv_nd
    conv1d_x_backward = conv2d_x_backward = conv3d_x_backward = _conv_nd_x_backward
    conv1d_weight_backward = conv2d_weight_backward = conv3d_weight_backward = _conv_nd_weight_backward
    conv1d_bias_backward = conv2d_bias_backward = conv3d_bias_backward = _bias_backward
    conv_transpose1d = conv_transpose2d = conv_transpose3d = _conv_transpose_nd
    conv_transpose1d_x_backward = conv_transpose2d_x_backward = _conv_transpose_nd_x_backward
    conv_transpose3d_x_backward = _conv_transpose_nd_x_backward
    conv_transpose1d_weight_backward = conv_transpose2d_weight_backward = _conv_transpose_nd_weight_backward
    conv_transpose3d_weight_backward = _conv_transpose_nd_weight_backward
    conv_transpose1d_bias_backward = conv_transpose2d_bias_backward = conv_transpose3d_bias_backward = (
        _bias_backward
    )

    def fold4d(
        self, x: Array, output_size: tuple[int, int], kernel_size: tuple[int, int], options: UnfoldOptions
    ) -> Array:
        # the default adds the taps one at a time in the input's dtype: in bf16 each add rounds, and a
        # sum of several overlapping taps drifts past the tolerance; this sums in f32 and rounds once
        work = widen(x)
        batch, depth = x.shape[:2]
        channels = depth // math.prod(kernel_size)
        out = [
            conv_output_size(size, k, s, p, d)
            for size, k, s, p, d in zip(
                output_size, kernel_size, options.stride, options.padding, options.dilation
            )
        ]
        columns = work.reshape(batch, channels, *kernel_size, *out)
        padded = [size + 2 * p for size, p in zip(output_size, options.padding)]
        total = cp.zeros((batch, channels, *padded), dtype=work.dtype)
        for offsets in itertools.product(*(range(k) for k in kernel_size)):
            spans = tuple(
                slice(i * d, i * d + (o - 1) * s + 1, s)
                for i, d, o, s in zip(offsets, options.dilation, out, options.stride)
            )
            into, at = (slice(None), slice(None), *spans), (slice(None), slice(None), *offsets)
            target = total[into]
            target += columns[at]
        result = _place(total, [-p for p in options.padding], output_size, 0.0)
        return narrow(cp.ascontiguousarray(result), x.dtype)

    # -- pooling ----------------------------------------------------------------------------------
    def avg_pool1d(
        self, x: Array, kernel_size: int, stride: int, padding: int, count_include_pad: bool, ceil_mode: bool
    ) -> Array:
        return _avg_pool(x, [kernel_size], [stride], [padding], count_include_pad, ceil_mode)

    def avg_pool1d_backward(
        self,
        x: Array,
        grad: Array,
        kernel_size: int,
        stride: int,
        padding: int,
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> Array:
        return _avg_pool_backward(x, grad, [kernel_size], [stride], [padding], count_include_pad)

    def avg_pool2d(
        self,
        x: Array,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> Array:
        return _avg_pool(x, kernel_size, stride, padding, count_include_pad, ceil_mode)

    def avg_pool2d_backward(
        self,
        x: Array,
        grad: Array,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> Array:
        return _avg_pool_backward(x, grad, kernel_size, stride, padding, count_include_pad)

    def adaptive_avg_pool1d(self, x: Array, output_size: int) -> Array:
        return narrow(_adaptive_along(widen(x), 2, output_size), x.dtype)

    def adaptive_avg_pool1d_backward(self, x: Array, grad: Array) -> Array:
        return narrow(_adaptive_along_backward(widen(grad), 2, x.shape[2]), grad.dtype)

    def adaptive_avg_pool2d(self, x: Array, output_size: tuple[int, int]) -> Array:
        rows = _adaptive_along(widen(x), 2, output_size[0])
        return narrow(_adaptive_along(rows, 3, output_size[1]), x.dtype)

    def adaptive_avg_pool2d_backward(self, x: Array, grad: Array) -> Array:
        rows = _adaptive_along_backward(widen(grad), 2, x.shape[2])
        return narrow(_adaptive_along_backward(rows, 3, x.shape[3]), grad.dtype)

    def max_pool1d(
        self, x: Array, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> Array:
        return _max_pool(x, [kernel_size], [stride], [padding], [dilation], ceil_mode)

    def max_pool1d_with_indices(
        self, x: Array, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> tuple[Array, Array]:
        return _max_pool_with_indices(
            x, [kernel_size], [stride], [padding], [dilation], ceil_mode, self.int_dtype.numpy
        )

    def max_pool1d_with_indices_backward(
        self,
        x: Array,
        kernel_size: int,
        stride: int,
        padding: int,
        dilation: int,
        ceil_mode: bool,
        output_grad: Array,
        indices: Array,
    ) -> Array:
        return _max_pool_backward(x, output_grad, indices)

    def max_pool2d(
        self,
        x: Array,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> Array:
        return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode)

    def max_pool2d_with_indices(
        self,
        x: Array,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> tuple[Array, Array]:
        return _max_pool_with_indices(
            x, kernel_size, stride, padding, dilation, ceil_mode, self.int_dtype.numpy
        )

    def max_pool2d_with_indices_backward(
        self,
        x: Array,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
        output_grad: Array,
        indices: Array,
    ) -> Array:
        return _max_pool_backward(x, output_grad, indices)

    def deform_conv2d(
        self,
        x: Array,
        offset: Array,
        weight: Array,
        mask: Array | None,
        bias: Array | None,
        options: DeformConvOptions,
    ) -> Array:
        default: Any = DefaultModuleOps.deform_conv2d
        if x.dtype not in LOW_PRECISION:
            return default(self, x, offset, weight, mask, bias, options)
        result = default(self, widen(x), widen(offset), widen(weight), _maybe(mask), _maybe(bias), options)
        return narrow(result, x.dtype)

    def deform_conv2d_backward(
        self,
        x: Array,
        offset: Array,
        weight: Array,
        mask: Array | None,
        bias: Array | None,
        output_grad: Array,
        options: DeformConvOptions,
    ) -> DeformConv2dBackward:
        default: Any = DefaultModuleOps.deform_conv2d_backward
        if x.dtype not in LOW_PRECISION:
            grads: DeformConv2dBackward = default(self, x, offset, weight, mask, bias, output_grad, options)
            return grads
        wide = (widen(x), widen(offset), widen(weight), _maybe(mask), _maybe(bias), widen(output_grad))
        grads = default(self, *wide, options)
        return DeformConv2dBackward(*(None if g is None else narrow(g, x.dtype) for g in grads))
