"""NdArray's module ops (convolution, pooling, interpolation, attention) on NumPy.

Convolutions are im2col plus BLAS: the columns of a block of the batch are gathered into a buffer that
stays in cache, then one GEMM per item, and the outputs are copied into a C-contiguous result while they
are still in cache (consumers' elementwise passes over a strided view are twice as slow). With unit
strides the columns are contiguous runs of the flattened (padded) input: an output row is computed at the
input's full width, so the window of each kernel offset is one contiguous slice, and the few extra columns
are never exposed. A bias is one more column of the weight against a row of ones. The input gradient of
a unit-stride convolution (and a unit-stride transposed convolution) is the same kernel on the padded
gradient with the flipped weight; the weight gradient is one GEMM per item over the same columns. Large
batches are split over a few threads (as Burn's NdArray splits them over rayon): NumPy releases the GIL
while it copies and multiplies, and a small GEMM gains little from BLAS's own threads. Pooling and
resampling are separable and run one axis at a time over strided views. f16 and bf16 compute in f32.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from burn_backend import (
    AttentionOptions,
    ConvOptions,
    ConvTransposeOptions,
    DeformConv2dBackward,
    DeformConvOptions,
    DType,
    InterpolateOptions,
    UnfoldOptions,
)
from burn_backend.module import (
    adaptive_pool_windows,
    avg_pool_divisors,
    conv_output_size,
    conv_transpose_output_size,
    interpolation_taps,
    pool_output_size,
)

from . import _ctc, _deform_conv

Array = Any
Sizes = Sequence[int]
_LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)
_CHUNK_BYTES = 1 << 20  # im2col columns and GEMM results per block: they stay in L2 between the steps
_PARALLEL_BYTES = 1 << 21  # the least im2col work per thread worth a thread


def _cpu_count() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


_THREADS = max(1, min(4, _cpu_count()))  # more threads contend for the GIL between the short NumPy calls
_pool: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    # a forked child has none of the parent's threads: it makes its own pool when it needs one
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _batch_ranges(batch: int, bytes_per_item: int) -> list[tuple[int, int]]:
    """The batch split into contiguous ranges, one per thread, each with enough work for one."""
    parts = max(1, min(_THREADS, batch, batch * bytes_per_item // _PARALLEL_BYTES))
    bounds = [batch * i // parts for i in range(parts + 1)]
    return list(itertools.pairwise(bounds))


def _quietly(body: Callable[[int, int, int], None], index: int, start: int, stop: int) -> None:
    # NumPy's error state is per thread: IEEE results (inf, NaN) stay silent in the workers too
    with np.errstate(all="ignore"):
        body(index, start, stop)


def _each(body: Callable[[int, int, int], None], ranges: list[tuple[int, int]]) -> None:
    """``body(index, start, stop)`` for every range: the calling thread runs the first one."""
    global _pool
    if len(ranges) == 1:
        _quietly(body, 0, *ranges[0])
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=_THREADS - 1, thread_name_prefix="burn-ndarray")
    futures = [
        _pool.submit(_quietly, body, index, start, stop)
        for index, (start, stop) in enumerate(ranges)
        if index
    ]
    _quietly(body, 0, *ranges[0])
    for future in futures:
        future.result()


def _work(array: Array) -> Array:
    """The array in the dtype to compute in (f32 for f16 / bf16, which have no BLAS)."""
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype in _LOW_PRECISION else array


def _done(result: Array, dtype: Any) -> Array:
    return result if result.dtype == dtype else result.astype(dtype)


def _placement(spatial: Sizes, low: Sizes, step: Sizes, size: Sizes) -> tuple[Any, Any] | None:
    """Where ``_place`` puts the samples: ``(source, target)`` slices of the trailing dims, or ``None``
    where no sample lands inside ``size``."""
    source: list[slice] = []
    target: list[slice] = []
    for length, lo, st, extent in zip(spatial, low, step, size):
        first = max(0, -(lo // st))
        last = min(length - 1, (extent - 1 - lo) // st)
        if last < first:
            return None
        source.append(slice(first, last + 1))
        target.append(slice(lo + first * st, lo + last * st + 1, st))
    return tuple(source), tuple(target)


def _place(x: Array, low: Sizes, step: Sizes, size: Sizes, fill: float) -> Array:
    """Trailing dims resized to ``size``: sample ``low + i * step`` holds ``x[i]``, the rest ``fill``."""
    n = len(size)
    lead = x.shape[: x.ndim - n]
    spatial = x.shape[x.ndim - n :]
    if tuple(low) == (0,) * n and tuple(step) == (1,) * n and tuple(size) == spatial:
        return x
    out = np.full(lead + tuple(size), fill, dtype=x.dtype)
    where = _placement(spatial, low, step, size)
    if where is not None:
        every = (slice(None),) * len(lead)
        out[every + where[1]] = x[every + where[0]]
    return out


def _along(array: Array, axis: int, start: int, count: int, step: int) -> Array:
    """The strided view ``array[..., start : start + (count - 1) * step + 1 : step, ...]`` on ``axis``."""
    index = [slice(None)] * array.ndim
    index[axis] = slice(start, start + (count - 1) * step + 1, step)
    return array[tuple(index)]


def _chunk(batch: int, per_item: int) -> int:
    return max(1, min(batch, _CHUNK_BYTES // max(1, per_item)))


class _Columns:
    """The im2col columns of ``x`` for a convolution whose output has spatial size ``out``.

    ``blocks`` gives them a few batch items at a time, ``[items, groups, depth, plane]`` with ``depth =
    channels / groups * taps``, in buffers that stay in cache between the gather and the GEMM. With unit
    strides (``wide``) each item's columns are computed at the padded input's full row width, so that
    every kernel offset gathers contiguous runs: ``plane = out[0] * row`` columns, of which ``grid`` views
    the valid ``[..., *out]`` (the rest are junk, and zero past the last window); a padded input is
    padded a block at a time, in cache. Otherwise (or ``compact``) the columns are exactly the
    ``prod(out)`` outputs.
    """

    def __init__(
        self,
        x: Array,
        kernel: Sizes,
        stride: Sizes,
        padding: Sizes,
        dilation: Sizes,
        out: Sizes,
        compact: bool = False,
    ) -> None:
        n = len(kernel)
        self.kernel, self.out = tuple(kernel), tuple(out)
        self.batch, self.channels = x.shape[:2]
        self.taps = math.prod(kernel)
        extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, stride, kernel, dilation)]
        self.dtype = x.dtype
        self.extent = extent
        self.wide = not compact and all(s == 1 for s in stride)
        self.pad_blocks = False  # whether blocks() pads each block (the whole input is never padded)
        self.placement: tuple[Any, Any] | None = None  # where the input lands in a padded block
        if self.wide:
            # the window of kernel offset (i, j, ...) starts i * dilation * row + j * dilation + ... samples
            # into the flattened plane: a single strided view [batch, channels, *kernel, length]
            strides = [math.prod(extent[i + 1 :]) for i in range(n)]
            self.length = sum((o - 1) * st for o, st in zip(out, strides)) + 1
            self.plane = out[0] * strides[0]
            self.tail: tuple[int, ...] = (self.plane,)
            self.tap_steps = tuple(d * st * x.itemsize for d, st in zip(dilation, strides))
            self.x = x
            if tuple(padding) == (0,) * n and tuple(extent) == x.shape[2:]:
                self.source = self._windows(np.ascontiguousarray(x))
            else:
                # padded a block at a time (in cache), not the whole batch at once
                self.pad_blocks = True
                self.placement = _placement(x.shape[2:], padding, [1] * n, extent)
        else:
            padded = _place(x, padding, [1] * n, extent, 0.0)
            self.length = self.plane = math.prod(out)
            effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
            windows = sliding_window_view(padded, effective, axis=tuple(range(2, 2 + n)))
            index = (slice(None), slice(None))
            index += tuple(slice(None, None, s) for s in stride) + tuple(
                slice(None, None, d) for d in dilation
            )
            windows = windows[index]
            order = (0, 1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n))
            self.source = windows.transpose(order)  # [batch, channels, *kernel, *out]
            self.tail = self.out

    def _windows(self, planes: Array) -> Array:
        """The strided view ``[items, channels, *kernel, length]`` of the windows in C-contiguous
        ``[items, channels, *extent]`` planes."""
        flat = planes.reshape(*planes.shape[:2], math.prod(self.extent))
        shape = (*flat.shape[:2], *self.kernel, self.length)
        steps = (*flat.strides[:2], *self.tap_steps, flat.itemsize)
        return as_strided(flat, shape, steps, writeable=False)

    @property
    def bytes_per_item(self) -> int:
        """The size of one batch item's columns."""
        return int(self.channels * self.taps * self.plane * self.dtype.itemsize)

    def blocks(self, first: int, last: int, groups: int, ones: bool = False, also: int = 0) -> Any:
        """Yield ``(start, stop, columns)`` over the batch range ``[first, last)``: ``columns`` is
        ``[stop - start, groups, depth (+ 1), plane]`` in a buffer of this generator's own, reused per
        block; with ``ones``, each group's last row is ones (a bias folded into the GEMM). A block's
        items are as many as fit in cache with ``also`` more bytes each (the caller's per-item buffers)."""
        padded = self.channels * math.prod(self.extent) * self.dtype.itemsize if self.pad_blocks else 0
        size = _chunk(last - first, self.bytes_per_item + padded + also)
        per_group = self.channels // groups
        depth = per_group * self.taps
        buffers: dict[int, tuple[Array, Array | None]] = {}
        every = (slice(None), slice(None))
        for start in range(first, last, size):
            stop = min(last, start + size)
            items = stop - start
            if items not in buffers:
                # zeros: the junk columns past each item's last window, and the padding, are never written
                columns = np.zeros((items, groups, depth + ones, self.plane), dtype=self.dtype)
                if ones:
                    columns[:, :, depth] = 1
                planes = None
                if self.pad_blocks:
                    planes = np.zeros((items, self.channels, *self.extent), dtype=self.dtype)
                buffers[items] = columns, planes
            columns, planes = buffers[items]
            target = columns[:, :, :depth].reshape(items, groups, per_group, *self.kernel, *self.tail)
            if self.wide:
                target = target[..., : self.length]
            if planes is None:
                source = self.source[start:stop]
            else:
                if self.placement is not None:
                    planes[every + self.placement[1]] = self.x[start:stop][every + self.placement[0]]
                source = self._windows(planes)
            np.copyto(target, source.reshape(items, groups, per_group, *source.shape[2:]))
            yield start, stop, columns

    def grid(self, buffer: Array) -> Array:
        """A ``[..., *out]`` view of a ``[..., plane]`` buffer (the valid outputs)."""
        lead = buffer.shape[:-1]
        if not self.wide:
            return buffer.reshape(*lead, *self.out)
        grid = buffer.reshape(*lead, self.out[0], *self.extent[1:])
        index = (Ellipsis, slice(None), *(slice(0, o) for o in self.out[1:]))
        return grid[index]


def _conv(
    x: Array,
    weight: Array,
    stride: Sizes,
    padding: Sizes,
    dilation: Sizes,
    groups: int,
    out: Sizes,
    bias: Array | None = None,
) -> Array:
    """A convolution of work-dtype arrays with spatial output ``out``, plus ``bias`` if given: a new
    C-contiguous ``[batch, out channels, *out]`` array.

    Per block of batch items, one GEMM per item of ``[out channels, depth (+ 1)]`` by its columns (the
    bias is one more column of the weight, against a row of ones), then the valid outputs copied into
    place while they are in cache."""
    batch = x.shape[0]
    out_channels, per_group = weight.shape[:2]
    per_out = out_channels // groups
    columns = _Columns(x, weight.shape[2:], stride, padding, dilation, out)
    depth = per_group * columns.taps
    with_bias = bias is not None
    w = np.empty((groups, per_out, depth + with_bias), dtype=columns.dtype)
    w[:, :, :depth] = weight.reshape(groups, per_out, depth)
    if bias is not None:
        w[:, :, depth] = bias.reshape(groups, per_out)
    y = np.empty((batch, out_channels, *out), dtype=columns.dtype)
    plane = columns.plane

    def body(_: int, first: int, last: int) -> None:
        results: dict[int, Array] = {}
        also = out_channels * plane * y.itemsize
        for start, stop, cols in columns.blocks(first, last, groups, with_bias, also):
            items = stop - start
            if not columns.wide:
                np.matmul(w, cols, out=y[start:stop].reshape(items, groups, per_out, plane))
                continue
            result = results.get(items)
            if result is None:
                result = results[items] = np.empty((items, groups, per_out, plane), dtype=y.dtype)
            np.matmul(w, cols, out=result)
            np.copyto(y[start:stop], columns.grid(result.reshape(items, out_channels, plane)))

    _each(body, _batch_ranges(batch, columns.bytes_per_item))
    return y


def _conv_weight_grad(
    x: Array, grad: Array, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int
) -> Array:
    """``sum over batch and positions of grad * window of x``: ``[grad channels, x channels / groups,
    *kernel]`` (the weight gradient of a convolution, and with roles swapped of a transposed one)."""
    total = _weight_grad(x, grad, kernel, stride, padding, dilation, groups, compact=False)
    if not np.isfinite(total).all():
        # the wide columns also hold samples no window reaches, multiplied by the zero junk of the
        # gradient: an inf or NaN there would leak into the sum, so compute it again on valid samples
        total = _weight_grad(x, grad, kernel, stride, padding, dilation, groups, compact=True)
    return total


def _weight_grad(
    x: Array,
    grad: Array,
    kernel: Sizes,
    stride: Sizes,
    padding: Sizes,
    dilation: Sizes,
    groups: int,
    compact: bool,
) -> Array:
    channels = x.shape[1]
    grad_channels = grad.shape[1]
    per_out = grad_channels // groups
    columns = _Columns(x, kernel, stride, padding, dilation, grad.shape[2:], compact)
    depth = channels // groups * columns.taps
    plane = columns.plane
    ranges = _batch_ranges(x.shape[0], columns.bytes_per_item)
    partials = [np.zeros((groups, per_out, depth), dtype=columns.dtype) for _ in ranges]

    def body(index: int, first: int, last: int) -> None:
        grads: dict[int, Array] = {}
        also = grad_channels * plane * columns.dtype.itemsize
        for start, stop, cols in columns.blocks(first, last, groups, also=also):
            items = stop - start
            if columns.wide:
                # the gradient's block in the columns' layout, junk zero
                g = grads.get(items)
                if g is None:
                    g = grads[items] = np.zeros((items, groups, per_out, plane), dtype=columns.dtype)
                np.copyto(columns.grid(g.reshape(items, grad_channels, plane)), grad[start:stop])
            else:
                g = grad[start:stop].reshape(items, groups, per_out, plane)
            partials[index] += np.matmul(g, cols.swapaxes(-1, -2)).sum(axis=0)

    _each(body, ranges)
    total = partials[0]
    for partial in partials[1:]:  # in range order, so the sum does not depend on thread timing
        total += partial
    return total.reshape(grad_channels, channels // groups, *kernel)


def _conv_transpose(
    x: Array, weight: Array, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int, out: Sizes
) -> Array:
    """A transposed convolution of work-dtype arrays, without bias, with spatial output ``out``.

    With unit strides it is a convolution of ``x`` padded by ``dilation * (kernel - 1) - padding`` (or
    cropped) with the flipped kernel, its in and out channels swapped in each group: the forward's
    blocked im2col and GEMMs. The padding multiplies zeros by the weight, so a weight with an inf or NaN
    takes the general path, which multiplies only the samples of ``x``.
    """
    kernel = weight.shape[2:]
    if all(s == 1 for s in stride) and np.isfinite(weight).all():
        in_channels, per_group_out = weight.shape[:2]
        grouped = weight.reshape(groups, in_channels // groups, per_group_out, *kernel)
        flipped = np.flip(grouped.swapaxes(1, 2), axis=tuple(range(3, 3 + len(kernel))))
        swapped = flipped.reshape(groups * per_group_out, in_channels // groups, *kernel)
        margins = [d * (k - 1) - p for k, d, p in zip(kernel, dilation, padding)]
        return _conv(x, swapped, stride, margins, dilation, groups, out)
    return _col2im(x, weight, stride, padding, dilation, groups, out)


def _col2im(
    x: Array, weight: Array, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int, out: Sizes
) -> Array:
    """A transposed convolution as one GEMM to the per-offset contributions, then a strided
    accumulation per kernel offset (col2im)."""
    batch, in_channels = x.shape[:2]
    per_group_out = weight.shape[1]
    kernel = weight.shape[2:]
    sizes = x.shape[2:]
    per_group_in = in_channels // groups
    taps = math.prod(kernel)
    w = np.ascontiguousarray(weight).reshape(groups, per_group_in, per_group_out * taps).swapaxes(1, 2)
    contributions = np.matmul(w, x.reshape(batch, groups, per_group_in, math.prod(sizes)))
    contributions = contributions.reshape(batch, groups * per_group_out, *kernel, *sizes)
    full = [
        max((n - 1) * s + (k - 1) * d + 1, p + o)
        for n, s, k, d, p, o in zip(sizes, stride, kernel, dilation, padding, out)
    ]
    total = np.zeros((batch, groups * per_group_out, *full), dtype=x.dtype)
    for offsets in itertools.product(*(range(k) for k in kernel)):
        spans = tuple(
            slice(i * d, i * d + (n - 1) * s + 1, s) for i, d, n, s in zip(offsets, dilation, sizes, stride)
        )
        target = (slice(None), slice(None), *spans)
        source = (slice(None), slice(None), *offsets)
        total[target] += contributions[source]
    crop = (slice(None), slice(None), *(slice(p, p + o) for p, o in zip(padding, out)))
    return total[crop]


def _add_bias(y: Array, bias: Array | None) -> Array:
    if bias is not None:
        y += _work(bias).reshape((-1,) + (1,) * (y.ndim - 2))
    return y


def _bias_grad(grad: Array) -> Array:
    work = _work(grad)
    batch, channels = work.shape[:2]
    positions = math.prod(work.shape[2:])
    # the positions of each item and channel summed by a matrix-vector product (BLAS, several threads),
    # then the batch
    ones = np.ones(positions, dtype=work.dtype)
    per_item = np.matmul(work.reshape(batch * channels, positions), ones).reshape(batch, channels)
    return _done(per_item.sum(axis=0), grad.dtype)


def _conv_forward(x: Array, weight: Array, bias: Array | None, options: ConvOptions) -> Array:
    out = [
        conv_output_size(n, k, s, p, d)
        for n, k, s, p, d in zip(
            x.shape[2:], weight.shape[2:], options.stride, options.padding, options.dilation
        )
    ]
    y = _conv(
        _work(x),
        _work(weight),
        options.stride,
        options.padding,
        options.dilation,
        options.groups,
        out,
        None if bias is None else _work(bias),
    )
    return _done(y, x.dtype)


def _conv_x_backward(x: Array, weight: Array, output_grad: Array, options: ConvOptions) -> Array:
    g = _conv_transpose(
        _work(output_grad),
        _work(weight),
        options.stride,
        options.padding,
        options.dilation,
        options.groups,
        x.shape[2:],
    )
    return _done(np.ascontiguousarray(g), output_grad.dtype)


def _conv_weight_backward(x: Array, weight: Array, output_grad: Array, options: ConvOptions) -> Array:
    g = _conv_weight_grad(
        _work(x),
        _work(output_grad),
        weight.shape[2:],
        options.stride,
        options.padding,
        options.dilation,
        options.groups,
    )
    return _done(g, output_grad.dtype)


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
    y = _conv_transpose(
        _work(x), _work(weight), options.stride, options.padding, options.dilation, options.groups, out
    )
    return _done(_add_bias(np.ascontiguousarray(y), bias), x.dtype)


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
    g = _conv(
        _work(output_grad),
        _work(weight),
        options.stride,
        options.padding,
        options.dilation,
        options.groups,
        sizes,
    )
    return _done(g, output_grad.dtype)


def _conv_transpose_weight_backward(
    x: Array, weight: Array, output_grad: Array, options: ConvTransposeOptions
) -> Array:
    g = _conv_weight_grad(
        _work(output_grad),
        _work(x),
        weight.shape[2:],
        options.stride,
        options.padding,
        options.dilation,
        options.groups,
    )
    return _done(g, output_grad.dtype)


# -- pooling ------------------------------------------------------------------------------------------
def _max_pool(
    x: Array, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, ceil_mode: bool
) -> Array:
    x = np.asarray(x)
    out = [
        pool_output_size(n, k, s, p, d, ceil_mode)
        for n, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation)
    ]
    extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, stride, kernel, dilation)]
    current = _place(x, padding, [1] * len(kernel), extent, -np.inf)
    for axis in range(2, x.ndim):
        k, s, d, o = kernel[axis - 2], stride[axis - 2], dilation[axis - 2], out[axis - 2]
        if k == 1:
            current = _along(current, axis, 0, o, s)
            continue
        result = np.maximum(_along(current, axis, 0, o, s), _along(current, axis, d, o, s))
        for j in range(2, k):
            np.maximum(result, _along(current, axis, j * d, o, s), out=result)
        current = result
    return np.ascontiguousarray(current)


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
    x = np.asarray(x)
    n = len(kernel)
    spatial = x.shape[2:]
    out = [
        pool_output_size(size, k, s, p, d, ceil_mode)
        for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)
    ]
    extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, stride, kernel, dilation)]
    values = _place(x, padding, [1] * n, extent, -np.inf)
    carried: list[Array] = []  # the input position along each axis reduced so far (last axis first)
    for dim in reversed(range(n)):
        axis = 2 + dim
        k, s, d, p, o = kernel[dim], stride[dim], dilation[dim], padding[dim], out[dim]
        starts = np.arange(o) * s - p
        first = starts + ((-starts).clip(min=0) + d - 1) // d * d  # first window sample inside x
        shape = [1] * x.ndim
        shape[axis] = o
        target_shape = list(values.shape)
        target_shape[axis] = o
        best = np.full(target_shape, -np.inf, dtype=values.dtype)
        position = np.broadcast_to(first.reshape(shape), target_shape).copy()
        # a window whose every sample is -inf is never updated: it keeps the first sample inside x
        kept = [_along(c, axis, 0, o, s).copy() for c in carried]
        for j in range(k):
            candidate = _along(values, axis, j * d, o, s)
            better = np.greater(candidate, best)
            better |= np.isnan(candidate)
            np.copyto(best, candidate, where=better)
            np.copyto(position, (starts + j * d).reshape(shape), where=better)
            for target, source in zip(kept, carried):
                np.copyto(target, _along(source, axis, j * d, o, s), where=better)
        values = best
        carried = [*kept, position]
    strides = [math.prod(spatial[i + 1 :]) for i in range(n)]
    flat = np.zeros(values.shape, dtype=np.int64)
    for position, st in zip(carried, reversed(strides)):
        flat += position * st
    return values, flat.astype(int_dtype)


def _max_pool_backward(x: Array, output_grad: Array, indices: Array) -> Array:
    batch, channels = x.shape[:2]
    plane = math.prod(x.shape[2:])
    planes = batch * channels
    length = math.prod(np.shape(indices)[2:])
    flat = np.asarray(indices).reshape(planes, length).astype(np.int64) + (np.arange(planes) * plane)[:, None]
    sums = np.bincount(
        flat.ravel(), weights=np.asarray(output_grad, dtype=np.float64).ravel(), minlength=planes * plane
    )
    return sums.reshape(x.shape).astype(output_grad.dtype)


def _divisor(sizes: Sizes, kernel: Sizes, stride: Sizes, padding: Sizes, include: bool, out: Sizes) -> Array:
    total: Array = np.ones((), dtype=np.float64)
    for size, k, s, p, o in zip(sizes, kernel, stride, padding, out):
        total = np.multiply.outer(total, np.asarray(avg_pool_divisors(size, k, s, p, include, o), np.float64))
    return total


def _avg_pool(
    x: Array, kernel: Sizes, stride: Sizes, padding: Sizes, count_include_pad: bool, ceil_mode: bool
) -> Array:
    work = _work(x)
    n = len(kernel)
    out = [
        pool_output_size(size, k, s, p, 1, ceil_mode)
        for size, k, s, p in zip(x.shape[2:], kernel, stride, padding)
    ]
    extent = [(o - 1) * s + k for o, s, k in zip(out, stride, kernel)]
    current = _place(work, padding, [1] * n, extent, 0.0)
    for axis in range(2, x.ndim):
        k, s, o = kernel[axis - 2], stride[axis - 2], out[axis - 2]
        total = _along(current, axis, 0, o, s).copy()
        for j in range(1, k):
            total += _along(current, axis, j, o, s)
        current = total
    current /= _divisor(x.shape[2:], kernel, stride, padding, count_include_pad, out).astype(work.dtype)
    return _done(current, x.dtype)


def _avg_pool_backward(
    x: Array, grad: Array, kernel: Sizes, stride: Sizes, padding: Sizes, count_include_pad: bool
) -> Array:
    out = grad.shape[2:]
    work = _work(grad)
    current = work / _divisor(x.shape[2:], kernel, stride, padding, count_include_pad, out).astype(work.dtype)
    for axis in range(2, x.ndim):
        k, s, o = kernel[axis - 2], stride[axis - 2], out[axis - 2]
        shape = list(current.shape)
        shape[axis] = (o - 1) * s + k
        total = np.zeros(shape, dtype=current.dtype)
        for j in range(k):
            _along(total, axis, j, o, s)[...] += current
        current = total
    result = _place(current, [-p for p in padding], [1] * len(kernel), x.shape[2:], 0.0)
    return _done(np.ascontiguousarray(result), grad.dtype)


def _adaptive_along(x: Array, axis: int, out: int) -> Array:
    """Adaptive average pooling of ``x`` along ``axis`` to ``out`` samples: a new array."""
    size = x.shape[axis]
    if size % out == 0:
        k = size // out
        total = _along(x, axis, 0, out, k).copy()
        for j in range(1, k):
            total += _along(x, axis, j, out, k)
        total /= x.dtype.type(k)
        return total
    # overlapping windows of unequal lengths: the j-th sample of every window longer than j, gathered
    # and added (sums of the samples themselves, no products with zero weights: an inf stays in its
    # windows)
    windows = np.asarray(adaptive_pool_windows(size, out), dtype=np.intp).reshape(out, 2)
    starts = windows[:, 0]
    lengths = windows[:, 1] - starts
    total = np.take(x, starts, axis=axis)
    index: list[Any] = [slice(None)] * x.ndim
    for j in range(1, int(lengths.max())):
        longer = np.flatnonzero(lengths > j)
        if len(longer) == out:
            total += np.take(x, starts + j, axis=axis)
        else:
            index[axis] = longer
            total[tuple(index)] += np.take(x, starts[longer] + j, axis=axis)
    shape = [1] * x.ndim
    shape[axis] = out
    total /= lengths.astype(x.dtype).reshape(shape)
    return total


def _along_matrix(x: Array, axis: int, matrix: Array) -> Array:
    """``sum over s of matrix[o, s] * x[..., s, ...]`` along ``axis``: one GEMM over the other axes."""
    size = x.shape[axis]
    out = matrix.shape[0]
    if axis == x.ndim - 1:
        lead = x.shape[:-1]
        return np.matmul(x.reshape(math.prod(lead), size), matrix.T).reshape(*lead, out)
    moved = np.moveaxis(x, axis, 0)
    rest = moved.shape[1:]
    product = np.matmul(matrix, moved.reshape(size, math.prod(rest)))
    return np.moveaxis(product.reshape(out, *rest), 0, axis)


def _adaptive_along_backward(grad: Array, axis: int, size: int) -> Array:
    out = grad.shape[axis]
    if size % out == 0:
        k = size // out
        return np.repeat(grad / grad.dtype.type(k), k, axis=axis)
    matrix = np.zeros((out, size), dtype=grad.dtype)
    for row, (start, end) in enumerate(adaptive_pool_windows(size, out)):
        matrix[row, start:end] = 1.0 / (end - start)
    return _along_matrix(grad, axis, matrix.T)


def _adaptive2d_backward(grad: Array, height: int, width: int) -> Array:
    """The gradient of ``adaptive_avg_pool2d``: a new C-contiguous ``[batch, channels, height, width]``."""
    out_h, out_w = grad.shape[2:]
    if height % out_h == 0 and width % out_w == 0:
        # each gradient spread over its window: repeated along the rows, then the rows repeated
        kh, kw = height // out_h, width // out_w
        rows = np.repeat(grad / grad.dtype.type(kh * kw), kw, axis=3)
        return np.repeat(rows, kh, axis=2)
    # rows first, on the small gradient; the columns' GEMM then writes the result in its final layout
    rows = _adaptive_along_backward(grad, 2, height)
    return np.ascontiguousarray(_adaptive_along_backward(rows, 3, width))


# -- interpolation ------------------------------------------------------------------------------------
def _taps_along(x: Array, axis: int, taps: list[tuple[list[int], list[float]]]) -> Array:
    shape = [1] * x.ndim
    shape[axis] = len(taps[0][0])
    total = None
    for indices, weights in taps:
        picked = np.take(x, np.asarray(indices, dtype=np.intp), axis=axis)
        if any(w != 1.0 for w in weights):
            picked *= np.asarray(weights, dtype=x.dtype).reshape(shape)
        total = picked if total is None else np.add(total, picked, out=total)
    return total


def _taps_matrix(taps: list[tuple[list[int], list[float]]], size: int, dtype: Any) -> Array:
    """The dense ``[out, size]`` matrix of a 1-d interpolation (for its adjoint)."""
    out = len(taps[0][0])
    matrix = np.zeros((out, size), dtype=np.float64)
    rows = np.arange(out)
    for indices, weights in taps:
        np.add.at(matrix, (rows, np.asarray(indices)), np.asarray(weights))
    return matrix.astype(dtype)


# -- attention ----------------------------------------------------------------------------------------
def _attention(
    query: Array, key: Array, value: Array, mask: Array | None, bias: Array | None, options: AttentionOptions
) -> Array:
    q, k, v = _work(query), _work(key), _work(value)
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads != heads:
        k = np.repeat(k, heads // kv_heads, axis=1)
        v = np.repeat(v, heads // kv_heads, axis=1)
    scale = options.scale if options.scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = np.matmul(q, k.swapaxes(-1, -2))
    scores *= q.dtype.type(scale)
    if options.softcap is not None:
        cap = q.dtype.type(options.softcap)
        scores = np.tanh(scores / cap) * cap
    hidden = None if mask is None else np.asarray(mask, dtype=bool)
    if options.is_causal:
        seq_q, seq_k = scores.shape[-2:]
        future = np.triu(np.ones((seq_q, seq_k), dtype=bool), 1)
        hidden = future if hidden is None else hidden | future
    if hidden is not None:
        scores = np.where(hidden, -np.inf, scores)
    if bias is not None:
        scores = scores + _work(bias)
    peak = np.max(scores, axis=-1, keepdims=True)
    peak[~np.isfinite(peak)] = 0.0  # a fully masked row: exp() gives zeros, not NaN
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.exp(scores - peak)
        total = np.sum(weights, axis=-1, keepdims=True)
        total[total == 0] = 1.0
        weights /= total
    return _done(np.matmul(weights, v), query.dtype)


_Method = Callable[..., Any]


def _silent(method: _Method) -> _Method:
    """``method`` with NumPy's floating-point warnings off: inf and NaN propagate as IEEE says, as in
    the float ops (a warning would be an error under ``filterwarnings = error``)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(all="ignore"):
            return method(*args, **kwargs)

    return wrapper


def _silence_all(cls: type) -> type:
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and callable(value):
            setattr(cls, name, _silent(value))
    return cls


@_silence_all
class ModuleOps:
    """Overrides of ``burn_backend.ModuleOps`` defaults where NumPy does better."""

    int_dtype: DType

    # -- embedding and linear ---------------------------------------------------------------------
    def embedding(self, weights: Array, indices: Array) -> Array:
        return np.take(weights, indices, axis=0)

    def embedding_backward(self, weights: Array, output_grad: Array, indices: Array) -> Array:
        dim = weights.shape[1]
        total = np.zeros((weights.shape[0], dim), dtype=np.float64)
        np.add.at(
            total,
            np.asarray(indices).ravel(),
            np.asarray(output_grad, dtype=np.float64).reshape(math.prod(indices.shape), dim),
        )
        return total.astype(output_grad.dtype)

    def linear(self, x: Array, weight: Array, bias: Array | None) -> Array:
        y = np.matmul(_work(x), _work(weight))
        if bias is not None:
            y += _work(bias)
        return _done(y, x.dtype)

    # -- convolution ------------------------------------------------------------------------------
    # One N-d kernel per role; the interface names each rank, so each is bound under three names.
    def _conv_nd(self, x: Array, weight: Array, bias: Array | None, options: ConvOptions) -> Array:
        return _conv_forward(x, weight, bias, options)

    def _conv_nd_x_backward(self, x: Array, weight: Array, output_grad: Array, options: ConvOptions) -> Array:
        return _conv_x_backward(x, weight, output_grad, options)

    def _conv_nd_weight_backward(
        self, x: Array, weight: Array, output_grad: Array, options: ConvOptions
    ) -> Array:
        return _conv_weight_backward(x, weight, output_grad, options)

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
        return _conv_transpose_weight_backward(x, weight, output_grad, options)

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

    def unfold4d(self, x: Array, kernel_size: tuple[int, int], options: UnfoldOptions) -> Array:
        out = [
            conv_output_size(n, k, s, p, d)
            for n, k, s, p, d in zip(
                x.shape[2:], kernel_size, options.stride, options.padding, options.dilation
            )
        ]
        n = len(out)
        extent = [
            (o - 1) * s + (k - 1) * d + 1
            for o, s, k, d in zip(out, options.stride, kernel_size, options.dilation)
        ]
        padded = _place(np.asarray(x), options.padding, [1] * n, extent, 0.0)
        effective = [(k - 1) * d + 1 for k, d in zip(kernel_size, options.dilation)]
        windows = sliding_window_view(padded, effective, axis=(2, 3))
        index = (slice(None), slice(None), *(slice(None, None, s) for s in options.stride))
        windows = windows[index + tuple(slice(None, None, d) for d in options.dilation)]
        batch, channels = x.shape[:2]
        columns = windows.transpose(0, 1, 4, 5, 2, 3)  # [batch, channels, kh, kw, oh, ow]
        return columns.reshape(batch, channels * math.prod(kernel_size), math.prod(out))

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
        return _done(_adaptive_along(_work(x), 2, output_size), x.dtype)

    def adaptive_avg_pool1d_backward(self, x: Array, grad: Array) -> Array:
        return _done(_adaptive_along_backward(_work(grad), 2, x.shape[2]), grad.dtype)

    def adaptive_avg_pool2d(self, x: Array, output_size: tuple[int, int]) -> Array:
        rows = _adaptive_along(_work(x), 2, output_size[0])
        return _done(_adaptive_along(rows, 3, output_size[1]), x.dtype)

    def adaptive_avg_pool2d_backward(self, x: Array, grad: Array) -> Array:
        return _done(_adaptive2d_backward(_work(grad), x.shape[2], x.shape[3]), grad.dtype)

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

    # -- interpolation ----------------------------------------------------------------------------
    def interpolate(self, x: Array, output_size: tuple[int, int], options: InterpolateOptions) -> Array:
        work = _work(x)
        height, width = x.shape[2:]
        columns = _taps_along(work, 3, interpolation_taps(options.mode, width, output_size[1]))
        rows = _taps_along(columns, 2, interpolation_taps(options.mode, height, output_size[0]))
        return _done(rows, x.dtype)

    def interpolate_backward(
        self, x: Array, grad: Array, output_size: tuple[int, int], options: InterpolateOptions
    ) -> Array:
        work = _work(grad)
        height, width = x.shape[2:]
        rows = _taps_matrix(interpolation_taps(options.mode, height, output_size[0]), height, work.dtype)
        columns = _taps_matrix(interpolation_taps(options.mode, width, output_size[1]), width, work.dtype)
        return _done(np.matmul(np.matmul(rows.T, work), columns), grad.dtype)

    # -- attention and normalization --------------------------------------------------------------
    def attention(
        self,
        query: Array,
        key: Array,
        value: Array,
        mask: Array | None,
        attn_bias: Array | None,
        options: AttentionOptions,
    ) -> Array:
        return _attention(query, key, value, mask, attn_bias, options)

    def layer_norm(self, x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
        work = _work(x)
        mean = np.mean(work, axis=-1, keepdims=True)
        centered = work - mean
        variance = np.mean(centered * centered, axis=-1, keepdims=True)
        y = centered / np.sqrt(variance + work.dtype.type(epsilon))
        if gamma is not None:
            y *= _work(gamma)
        if beta is not None:
            y += _work(beta)
        return _done(y, x.dtype)

    # -- FFT and folding ----------------------------------------------------------------------------
    def rfft(self, signal: Array, dim: int) -> tuple[Array, Array]:
        spectrum = np.fft.rfft(_work(signal), axis=dim)
        return (
            _done(np.ascontiguousarray(spectrum.real), signal.dtype),
            _done(np.ascontiguousarray(spectrum.imag), signal.dtype),
        )

    def irfft(self, spectrum_re: Array, spectrum_im: Array, dim: int, n: int) -> Array:
        re, im = _work(spectrum_re), _work(spectrum_im)
        spectrum = np.empty(re.shape, dtype=np.result_type(re.dtype, np.complex64))
        spectrum.real = re
        spectrum.imag = im
        return _done(np.fft.irfft(spectrum, n=n, axis=dim), spectrum_re.dtype)

    def fold4d(
        self, x: Array, output_size: tuple[int, int], kernel_size: tuple[int, int], options: UnfoldOptions
    ) -> Array:
        work = _work(x)
        batch, depth = x.shape[:2]
        kh, kw = kernel_size
        out = [
            conv_output_size(n, k, s, p, d)
            for n, k, s, p, d in zip(
                output_size, kernel_size, options.stride, options.padding, options.dilation
            )
        ]
        columns = work.reshape(batch, depth // (kh * kw), kh, kw, *out)
        (ph, pw), (sh, sw), (dh, dw) = options.padding, options.stride, options.dilation
        height, width = output_size
        total = np.zeros((batch, columns.shape[1], height + 2 * ph, width + 2 * pw), dtype=work.dtype)
        for i, j in itertools.product(range(kh), range(kw)):
            rows = slice(i * dh, i * dh + (out[0] - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (out[1] - 1) * sw + 1, sw)
            total[:, :, rows, cols] += columns[:, :, i, j]
        return _done(np.ascontiguousarray(total[:, :, ph : ph + height, pw : pw + width]), x.dtype)

    # -- deformable convolution and CTC loss ------------------------------------------------------
    def deform_conv2d(
        self,
        x: Array,
        offset: Array,
        weight: Array,
        mask: Array | None,
        bias: Array | None,
        options: DeformConvOptions,
    ) -> Array:
        return _deform_conv.deform_conv2d(x, offset, weight, mask, bias, options)

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
        return _deform_conv.deform_conv2d_backward(x, offset, weight, mask, bias, output_grad, options)

    def ctc_loss(
        self, log_probs: Array, targets: Array, input_lengths: Array, target_lengths: Array, blank: int
    ) -> Array:
        return _ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank)

    def ctc_loss_backward(
        self,
        log_probs: Array,
        targets: Array,
        input_lengths: Array,
        target_lengths: Array,
        blank: int,
        output_grad: Array,
    ) -> Array:
        return _ctc.ctc_loss_backward(log_probs, targets, input_lengths, target_lengths, blank, output_grad)
