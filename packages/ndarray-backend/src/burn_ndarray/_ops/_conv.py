"""NdArray's convolutions: cache-blocked im2col plus BLAS, split over a few threads.

The im2col columns of a block of the batch are gathered into a buffer that stays in cache, then one
GEMM per item, and the outputs are copied into a C-contiguous result while they are still in cache
(consumers' elementwise passes over a strided view are twice as slow). With unit strides the columns are
contiguous runs of the flattened (padded) input: an output row is computed at the input's full width, so
the window of each kernel offset is one contiguous slice, and the few extra columns are never exposed. A
bias is one more column of the weight against a row of ones. A unit-stride transposed convolution is the
same kernel on the padded input with the flipped weight; the weight gradient is one GEMM per item over
the same columns. Large batches are split over the workers the thread policy grants (``_threads``, as
Burn's NdArray splits them over rayon), BLAS running on each worker's share of the threads: NumPy
releases the GIL while it copies and multiplies, and a small GEMM gains little from BLAS's own threads.
Two shapes take other kernels: a grouped convolution with one or a few channels per group (depthwise)
runs the direct numba kernels of ``_conv_direct`` (im2col would copy each sample once per tap for
products too small for BLAS), and a transposed convolution with strides (a strided convolution's input
gradient) runs as one unit-stride transposed convolution per stride phase of its output, each on the
blocked GEMMs above, instead of col2im's strided accumulation per tap.
Arrays are f32 or f64 (``burn_backend.array`` computes f16 and bf16 in f32).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from .. import _numba, _threads

Array = Any
Sizes = Sequence[int]
_CHUNK_BYTES = 1 << 20  # im2col columns and GEMM results per block: they stay in L2 between the steps
_PARALLEL_BYTES = 1 << 21  # the least im2col work per thread worth a thread


def _batch_ranges(batch: int, bytes_per_item: int) -> list[tuple[int, int]]:
    """The batch split into contiguous ranges, one per worker the thread policy grants, each with
    enough work for one."""
    parts = _threads.workers(max(1, min(batch, batch * bytes_per_item // _PARALLEL_BYTES)))
    bounds = [batch * i // parts for i in range(parts + 1)]
    return list(itertools.pairwise(bounds))


def _each(body: Callable[[int, int, int], None], ranges: list[tuple[int, int]]) -> None:
    """``body(index, start, stop)`` for every range, one worker each (``_threads.parallel``: BLAS runs
    on the workers' share of the threads, one each where they are as many as the cores)."""
    _threads.parallel(lambda index: body(index, *ranges[index]), len(ranges))


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
    """Trailing dims resized to ``size``: sample ``low + i * step`` holds ``x[i]``, the rest ``fill``
    (a view of ``x`` where that only crops it)."""
    n = len(size)
    lead = x.shape[: x.ndim - n]
    spatial = x.shape[x.ndim - n :]
    if tuple(low) == (0,) * n and tuple(step) == (1,) * n and all(e <= s for e, s in zip(size, spatial)):
        # no padding: a view of the samples that windows reach (a strided convolution whose last
        # window stops short of the edge took a copy of the whole input here)
        crop = (Ellipsis, *(slice(0, e) for e in size))
        return x[crop]
    out = np.full(lead + tuple(size), fill, dtype=x.dtype)
    where = _placement(spatial, low, step, size)
    if where is not None:
        every = (slice(None),) * len(lead)
        out[every + where[1]] = x[every + where[0]]
    return out


class _BufferPool:
    """Column buffers kept between convolutions, by layout: ``take`` lends one out (never to two callers
    at once, whatever the thread), ``give`` returns it; at most ``limit`` bytes are kept."""

    def __init__(self, limit: int) -> None:
        self._free: dict[tuple[Any, ...], list[tuple[Array, Array | None]]] = {}
        self._bytes = 0
        self._limit = limit
        self._lock = threading.Lock()

    def take(self, key: tuple[Any, ...]) -> tuple[Array, Array | None] | None:
        with self._lock:
            free = self._free.get(key)
            if not free:
                return None
            pair = free.pop()
            self._bytes -= _nbytes(pair)
            return pair

    def give(self, key: tuple[Any, ...], pair: tuple[Array, Array | None]) -> None:
        with self._lock:
            if self._bytes + _nbytes(pair) > self._limit:
                return
            self._free.setdefault(key, []).append(pair)
            self._bytes += _nbytes(pair)


def _nbytes(pair: tuple[Array, Array | None]) -> int:
    return int(pair[0].nbytes + (0 if pair[1] is None else pair[1].nbytes))


_BUFFERS = _BufferPool(64 << 20)


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
        # the layout of what a block writes: buffers of one layout are written at the same places each time,
        # so the places never written (junk columns, padding) stay zero from one call to the next
        layout = (
            groups, per_group, ones, self.plane, self.dtype.str, self.kernel, self.tail, self.length,
            self.wide, self.channels, tuple(self.extent), repr(self.placement),
        )  # fmt: skip
        try:
            for start in range(first, last, size):
                stop = min(last, start + size)
                items = stop - start
                if items not in buffers:
                    buffers[items] = _BUFFERS.take((items, *layout)) or self._new_buffers(
                        items, groups, depth, ones
                    )
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
        finally:  # the buffers serve the next convolution of this layout (np.zeros of a few MB is not free)
            for items, pair in buffers.items():
                _BUFFERS.give((items, *layout), pair)

    def _new_buffers(self, items: int, groups: int, depth: int, ones: bool) -> tuple[Array, Array | None]:
        # zeros: the junk columns past each item's last window, and the padding, are never written
        columns = np.zeros((items, groups, depth + ones, self.plane), dtype=self.dtype)
        if ones:
            columns[:, :, depth] = 1
        planes = None
        if self.pad_blocks:
            planes = np.zeros((items, self.channels, *self.extent), dtype=self.dtype)
        return columns, planes

    def grid(self, buffer: Array) -> Array:
        """A ``[..., *out]`` view of a ``[..., plane]`` buffer (the valid outputs)."""
        lead = buffer.shape[:-1]
        if not self.wide:
            return buffer.reshape(*lead, *self.out)
        grid = buffer.reshape(*lead, self.out[0], *self.extent[1:])
        index = (Ellipsis, slice(None), *(slice(0, o) for o in self.out[1:]))
        return grid[index]


def _direct(in_per_group: int, out_per_group: int, groups: int, rank: int) -> Any:
    """``_conv_direct`` where it takes this shape and numba is available, else ``None``."""
    if groups <= 1 or _numba.kernels() is None:
        return None
    from . import _conv_direct

    return _conv_direct if _conv_direct.suits(in_per_group, out_per_group, groups, rank) else None


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
    direct = _direct(per_group, per_out, groups, len(out))
    if direct is not None:
        return direct.forward(x, weight, bias, stride, padding, dilation, out)
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


def weight_grad(
    x: Array, grad: Array, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int
) -> Array:
    """``sum over batch and positions of grad * window of x``: ``[grad channels, x channels / groups,
    *kernel]`` (the weight gradient of a convolution, and with roles swapped of a transposed one)."""
    direct = _direct(x.shape[1] // groups, grad.shape[1] // groups, groups, len(kernel))
    if direct is not None:
        return direct.weight_grad(x, grad, kernel, stride, padding, dilation, groups)
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
    partials = [np.zeros((groups, depth, per_out), dtype=columns.dtype) for _ in ranges]

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
            # the columns [depth, plane] times the gradient's transpose [plane, out] (the weight's
            # gradient transposed): OpenBLAS computes it 1.1-1.4x as fast as the gradient times the
            # columns' transpose at a ResNet's shapes, with the same sums
            partials[index] += np.matmul(cols, g.swapaxes(-1, -2)).sum(axis=0)

    _each(body, ranges)
    total = partials[0]
    for partial in partials[1:]:  # in range order, so the sum does not depend on thread timing
        total += partial
    return np.ascontiguousarray(total.swapaxes(1, 2)).reshape(grad_channels, channels // groups, *kernel)


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
    finite = bool(np.isfinite(weight).all())
    unit = all(s == 1 for s in stride)
    direct = _direct(weight.shape[0] // groups, weight.shape[1], groups, len(kernel))
    if direct is not None and not (unit and finite):
        return direct.input_grad(x, weight, stride, padding, dilation, groups, out)
    if not unit and finite:
        return _phases(x, weight, stride, padding, dilation, groups, out)
    if unit and finite:
        in_channels, per_group_out = weight.shape[:2]
        grouped = weight.reshape(groups, in_channels // groups, per_group_out, *kernel)
        flipped = np.flip(grouped.swapaxes(1, 2), axis=tuple(range(3, 3 + len(kernel))))
        swapped = flipped.reshape(groups * per_group_out, in_channels // groups, *kernel)
        margins = [d * (k - 1) - p for k, d, p in zip(kernel, dilation, padding)]
        return _conv(x, swapped, stride, margins, dilation, groups, out)
    return _col2im(x, weight, stride, padding, dilation, groups, out)


def _phases(
    x: Array, weight: Array, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int, out: Sizes
) -> Array:
    """A strided transposed convolution as one unit-stride transposed convolution per stride phase.

    Along a dim, output ``i`` gets ``x[o] * w[k]`` where ``o * stride + k * dilation = i + padding``:
    the outputs with ``(i + padding) % stride == r`` (phase ``r``) get exactly the taps with ``k *
    dilation % stride == r``, every ``stride / gcd(stride, dilation)``-th one, and between two of them
    ``o`` moves by ``dilation / gcd``. So each phase is a unit-stride transposed convolution of ``x`` with
    that slice of the kernel and that dilation (the blocked GEMMs of ``_conv``), written to its outputs
    at step ``stride``: every output written once, no col2im accumulation. A phase that no tap reaches
    (when the dilation shares a factor with the stride) is zero."""
    batch = x.shape[0]
    n = len(stride)
    per_dim: list[list[tuple[slice, tuple[slice, int, int, int] | None]]] = []
    for size, s, p, d, k in zip(out, stride, padding, dilation, weight.shape[2:]):
        step = s // math.gcd(s, d)
        phases: list[tuple[slice, tuple[slice, int, int, int] | None]] = []
        for r in range(s):
            first = (r - p) % s  # the first output of the phase
            if first >= size:
                continue
            count = (size - 1 - first) // s + 1
            span = slice(first, first + (count - 1) * s + 1, s)
            taps = [t for t in range(k) if (t * d - r) % s == 0]
            if not taps:
                phases.append((span, None))
                continue
            # the phase's outputs start at x's sample (first + p - r) / s, less the first tap's reach
            reach = (first + p - r) // s + (r - taps[0] * d) // s
            phases.append((span, (slice(taps[0], None, step), d // math.gcd(s, d), reach, count)))
        per_dim.append(phases)
    y = np.empty((batch, weight.shape[1] * groups, *out), dtype=x.dtype)
    lead = (slice(None), slice(None))
    for combination in itertools.product(*per_dim):
        target = lead + tuple(phase[0] for phase in combination)
        parts = [phase[1] for phase in combination]
        if any(part is None for part in parts):
            y[target] = 0
            continue
        sub = weight[lead + tuple(part[0] for part in parts if part is not None)]
        sizes = [part[3] for part in parts if part is not None]
        low = [part[2] for part in parts if part is not None]
        sub_dilation = [part[1] for part in parts if part is not None]
        y[target] = _conv_transpose(x, sub, [1] * n, low, sub_dilation, groups, sizes)
    return y


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


def convolve(
    x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int,
    out: Sizes,
) -> Array:  # fmt: skip
    """A convolution plus ``bias`` (if given): a new C-contiguous ``[batch, out channels, *out]``."""
    return _conv(x, weight, stride, padding, dilation, groups, out, bias)


def convolve_transpose(
    x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int,
    out: Sizes,
) -> Array:  # fmt: skip
    """A transposed convolution plus ``bias`` (if given): a new C-contiguous array."""
    y = np.ascontiguousarray(_conv_transpose(x, weight, stride, padding, dilation, groups, out))
    if bias is not None:
        y += bias.reshape((-1,) + (1,) * (y.ndim - 2))
    return y


def channel_sums(grad: Array) -> Array:
    """``grad`` summed over every dim but dim 1: per item and channel by a matrix-vector product (BLAS,
    several threads), then over the batch."""
    batch, channels = grad.shape[:2]
    positions = math.prod(grad.shape[2:])
    ones = np.ones(positions, dtype=grad.dtype)
    per_item = np.matmul(grad.reshape(batch * channels, positions), ones).reshape(batch, channels)
    return per_item.sum(axis=0)
