"""Pooling written once over an array namespace: average, max (with indices) and adaptive average
pooling and their gradients, for 1-d and 2-d inputs alike.

Each function takes the backend first (``self``: an ``ArrayBackend``), so ``ArrayModuleOps`` binds one
function under the 1-d and the 2-d name (the interface's defaults run them over NumPy on the host,
``_ops._host``). Pools are separable: one spatial axis after the other is reduced tap by tap over
strided views, so no window is ever gathered, and padding is never materialized: each tap adds into
(or compares with) only the outputs whose sample lies inside the input (``_span``), so memory is
O(output) whatever the padding, the ``ceil_mode`` overhang or a kernel larger than its input (ONNX
models pool a 7x7 map with such kernels; padding it first took hundreds of megabytes). Sums compute
in f32 for f16 and bf16; maxima in the input's dtype where the namespace
compares it. Tables (divisors, window positions) come from ``runtime.constant``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._ops._sizes import adaptive_pool_windows as _adaptive_windows
from .._ops._sizes import avg_pool_divisors, pool_output_size
from .._options import IndexingUpdateOp

Array = Any
Host = np.ndarray[Any, Any]
Ints = tuple[int, ...]
Size = Any  # an int (1-d ops) or a tuple of ints (2-d ops)


adaptive_pool_windows = functools.lru_cache(maxsize=256)(_adaptive_windows)


def _sizes(value: Size) -> tuple[int, ...]:
    return (value,) if isinstance(value, int) else tuple(value)


def _at(ndim: int, axis: int, index: Any) -> tuple[Any, ...]:
    return (*(slice(None),) * axis, index, *(slice(None),) * (ndim - axis - 1))


def along(array: Array, axis: int, start: int, count: int, step: int) -> Array:
    """The strided view ``array[..., start : start + (count - 1) * step + 1 : step, ...]`` on ``axis``."""
    return array[_at(array.ndim, axis, slice(start, start + (count - 1) * step + 1, step))]


def fills(spatial: Sequence[int], low: Sequence[int], size: Sequence[int]) -> bool:
    """Whether ``place`` of trailing dims ``spatial`` at ``low`` in ``size`` writes a fill anywhere, so
    returns a new array; otherwise it returns its input or a view of it (a crop), not to be written."""
    return any(lo > 0 or lo + length < extent for length, lo, extent in zip(spatial, low, size))


def place(xp: Any, x: Array, low: Sequence[int], size: Sequence[int], fill: float) -> Array:
    """``x`` with its trailing dims resized to ``size``: ``x[i]`` lands at ``low + i`` (a negative
    ``low`` crops) and the rest is ``fill``; ``x`` itself, or a view of it, where nothing is filled."""
    n = len(size)
    spatial = tuple(x.shape[x.ndim - n :])
    if all(lo == 0 for lo in low) and tuple(size) == spatial:
        return x
    source, target = [], []
    for length, lo, extent in zip(spatial, low, size):
        first = max(0, -lo)
        last = max(first, min(length, extent - lo))
        source.append(slice(first, last))
        target.append(slice(lo + first, lo + last))
    into, at = (..., *target), (..., *source)
    if not fills(spatial, low, size):
        return x[at]
    out = xp.full((*x.shape[: x.ndim - n], *size), fill, dtype=x.dtype)
    out[into] = x[at]
    return out


def _sum_taps(array: Array, axis: int, taps: int, count: int, step: int) -> Array:
    """``sum over j < taps of along(array, axis, j, count, step)``; a new array unless ``taps`` is 1."""
    total = along(array, axis, 0, count, step)
    for j in range(1, taps):
        term = along(array, axis, j, count, step)
        if j == 1:
            total = total + term
        else:
            total += term
    return total


def _span(size: int, offset: int, step: int, low: int, count: int) -> tuple[int, int] | None:
    """The outputs ``[first, stop)`` among ``count`` whose sample ``o * step - low + offset`` lies in
    ``[0, size)``, or ``None`` where none does."""
    first = max(0, -((offset - low) // step))
    stop = min(count, (size - 1 + low - offset) // step + 1)
    return (first, stop) if stop > first else None


def _spans(
    size: int, kernel: int, step: int, low: int, count: int, dilation: int = 1
) -> list[tuple[int, int, int]]:
    """``(input start, first, stop)`` per tap whose sample lies inside the input for some output (taps
    past both ends of every window are skipped without being visited one by one)."""
    lowest = max(0, -(-(low - (count - 1) * step) // dilation))
    highest = min(kernel, (size - 1 + low) // dilation + 1)
    spans = []
    for tap in range(lowest, highest):
        span = _span(size, tap * dilation, step, low, count)
        if span is not None:
            spans.append((span[0] * step - low + tap * dilation, *span))
    return spans


def _reduce_axis(
    xp: Any,
    array: Array,
    axis: int,
    spans: list[tuple[int, int, int]],
    count: int,
    step: int,
    combine: Any,
    fill: float,
) -> tuple[Array, bool]:
    """``combine`` (``xp.add`` or ``xp.maximum``) over the taps' ``spans`` along ``axis``, into ``count``
    outputs that start at ``fill``; also whether the result is a new array (a single tap covering
    every output is a view of ``array``)."""
    covering = [span for span in spans if span[1] == 0 and span[2] == count]
    if len(spans) == 1 and covering:
        return along(array, axis, spans[0][0], count, step), False
    if len(covering) >= 2:
        total = combine(*(along(array, axis, start, count, step) for start, _, _ in covering[:2]))
        rest = [span for span in spans if span not in covering[:2]]
    else:
        shape = list(array.shape)
        shape[axis] = count
        total = xp.full(tuple(shape), fill, dtype=array.dtype)
        rest = spans
    for start, first, stop in rest:
        into = _at(total.ndim, axis, slice(first, stop))
        total[into] = combine(total[into], along(array, axis, start, stop - first, step))
    return total, True


# -- tables (host arrays of their arguments alone, for runtime.constant) ------------------------------
def _divisors(sizes: Ints, kernel: Ints, stride: Ints, padding: Ints, include: bool, out: Ints) -> Host:
    per_dim = zip(sizes, kernel, stride, padding, out)
    divisors = [
        np.asarray(avg_pool_divisors(n, k, s, p, include, o), np.float64) for n, k, s, p, o in per_dim
    ]
    return functools.reduce(np.multiply.outer, divisors)


def _window_starts(sizes: Ints, stride: Ints, padding: Ints, out: Ints) -> Host:
    """The flat input position of each window's first sample (maybe outside x): ``[*out]``."""
    steps = [math.prod(sizes[dim + 1 :]) for dim in range(len(sizes))]
    starts = [(np.arange(o) * s - p) * step for s, p, o, step in zip(stride, padding, out, steps)]
    return functools.reduce(np.add.outer, starts)


def _adaptive_index(size: int, out: int, tap: int) -> Host:
    """Each adaptive window's ``tap``-th input position (clamped into range where it is shorter)."""
    return np.asarray([min(start + tap, size - 1) for start, _ in adaptive_pool_windows(size, out)])


def _adaptive_mask(size: int, out: int, tap: int, shape: Ints) -> Host:
    return np.asarray([start + tap < end for start, end in adaptive_pool_windows(size, out)]).reshape(shape)


def _adaptive_lengths(size: int, out: int, shape: Ints) -> Host:
    return np.asarray([end - start for start, end in adaptive_pool_windows(size, out)], float).reshape(shape)


def _adaptive_matrix(size: int, out: int, transposed: bool) -> Host:
    """``[out, size]`` (``[size, out]`` transposed): row ``o`` averages the window of output ``o``."""
    matrix = np.zeros((out, size))
    for row, (start, end) in enumerate(adaptive_pool_windows(size, out)):
        matrix[row, start:end] = 1.0 / (end - start)
    return np.ascontiguousarray(matrix.T) if transposed else matrix


# -- average pooling ----------------------------------------------------------------------------------
def avg_pool(
    self: Any,
    x: Array,
    kernel_size: Size,
    stride: Size,
    padding: Size,
    count_include_pad: bool,
    ceil_mode: bool,
) -> Array:
    kernel, strides, pads = _sizes(kernel_size), _sizes(stride), _sizes(padding)
    sizes = tuple(x.shape[2:])
    out = tuple(
        pool_output_size(n, k, s, p, 1, ceil_mode) for n, k, s, p in zip(sizes, kernel, strides, pads)
    )
    work = self.runtime.widen(x)
    current = work
    # a buffer of this call's own, not x or a view of it: a single tap that covers every output is a
    # view of x (a kernel of 1, a stride past the kernel), which the divide must not write into
    private = work is not x
    for dim, (k, s, p, o) in enumerate(zip(kernel, strides, pads, out)):
        spans = _spans(current.shape[2 + dim], k, s, p, o)
        current, new = _reduce_axis(self.xp, current, 2 + dim, spans, o, s, self.xp.add, 0.0)
        private = private or new
    key = (sizes, kernel, strides, pads, count_include_pad, out)
    divisor = self.runtime.constant(_divisors, *key, dtype=work.dtype)
    if not private:
        return self.runtime.narrow(current / divisor, x.dtype)
    current /= divisor
    return self.runtime.narrow(current, x.dtype)


def avg_pool_backward(
    self: Any,
    x: Array,
    grad: Array,
    kernel_size: Size,
    stride: Size,
    padding: Size,
    count_include_pad: bool,
    ceil_mode: bool,
) -> Array:
    xp = self.xp
    kernel, strides, pads = _sizes(kernel_size), _sizes(stride), _sizes(padding)
    out = tuple(grad.shape[2:])
    work = self.runtime.widen(grad)
    key = (tuple(x.shape[2:]), kernel, strides, pads, count_include_pad, out)
    current = work / self.runtime.constant(_divisors, *key, dtype=work.dtype)
    for dim, (k, s, p, o) in enumerate(zip(kernel, strides, pads, out)):
        # each tap spreads the outputs whose sample lies inside x back onto x's samples (padding and
        # the ceil_mode overhang receive nothing, so they are never allocated)
        axis, size = 2 + dim, x.shape[2 + dim]
        shape = list(current.shape)
        shape[axis] = size
        total = xp.zeros(tuple(shape), dtype=current.dtype)
        for start, first, stop in _spans(size, k, s, p, o):
            index = _at(total.ndim, axis, slice(start, start + (stop - first - 1) * s + 1, s))
            total[index] += current[_at(current.ndim, axis, slice(first, stop))]
        current = total
    return self.runtime.narrow(current, grad.dtype)


# -- max pooling --------------------------------------------------------------------------------------
def _max_pool(
    self: Any,
    x: Array,
    kernel_size: Size,
    stride: Size,
    padding: Size,
    dilation: Size,
    ceil_mode: bool,
    with_indices: bool,
) -> tuple[Array, Array | None]:
    """Max pooling, and with ``with_indices`` the flat position in its input plane of each window's
    first sample (row-major) that is its maximum, or NaN (PyTorch's indices on every input without
    NaN; with several NaNs in a window, the first of them)."""
    xp, runtime = self.xp, self.runtime
    kernel, strides, pads, dilations = _sizes(kernel_size), _sizes(stride), _sizes(padding), _sizes(dilation)
    sizes = tuple(x.shape[2:])
    geometry = zip(sizes, kernel, strides, pads, dilations)
    out = tuple(pool_output_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in geometry)
    source = runtime.sortable(x)
    values = source
    per_axis = []
    for dim, (n, k, s, p, d, o) in enumerate(zip(sizes, kernel, strides, pads, dilations, out)):
        spans = _spans(n, k, s, p, o, d)
        per_axis.append({(start + p - first * s) // d: (start, first, stop) for start, first, stop in spans})
        values = _reduce_axis(xp, values, 2 + dim, spans, o, s, xp.maximum, -math.inf)[0]
    if not with_indices:
        return runtime.narrow(values, x.dtype), None
    # the taps in reverse order, each hit overwriting: the first hit in row-major order stays; a tap
    # compares only the outputs whose sample lies inside x (the padding never holds a maximum)
    int_dtype = runtime.dtype(self.int_dtype)
    position = xp.zeros(values.shape, dtype=int_dtype)
    plane_steps = [math.prod(sizes[dim + 1 :]) for dim in range(len(sizes))]
    taps = itertools.product(*(sorted(spans) for spans in per_axis))
    for tap in reversed(list(taps)):
        found = [spans[i] for spans, i in zip(per_axis, tap)]
        inputs = (..., *(slice(a, a + (b - f - 1) * s + 1, s) for (a, f, b), s in zip(found, strides)))
        outputs = (..., *(slice(f, b) for _, f, b in found))
        sample = source[inputs]
        hit = (sample == values[outputs]) | xp.isnan(sample)
        flat = sum(i * d * step for i, d, step in zip(tap, dilations, plane_steps))
        position[outputs] = xp.where(hit, flat, position[outputs])
    starts = runtime.constant(_window_starts, sizes, strides, pads, out, dtype=int_dtype)
    return runtime.narrow(values, x.dtype), position + starts


def max_pool(
    self: Any, x: Array, kernel_size: Size, stride: Size, padding: Size, dilation: Size, ceil_mode: bool
) -> Array:
    return _max_pool(self, x, kernel_size, stride, padding, dilation, ceil_mode, False)[0]


def max_pool_with_indices(
    self: Any, x: Array, kernel_size: Size, stride: Size, padding: Size, dilation: Size, ceil_mode: bool
) -> tuple[Array, Array]:
    values, indices = _max_pool(self, x, kernel_size, stride, padding, dilation, ceil_mode, True)
    return values, indices


def max_pool_backward(
    self: Any,
    x: Array,
    kernel_size: Size,
    stride: Size,
    padding: Size,
    dilation: Size,
    ceil_mode: bool,
    output_grad: Array,
    indices: Array,
) -> Array:
    xp = self.xp
    batch, channels = x.shape[:2]
    grad = self.runtime.widen(output_grad)
    flat = (batch, channels, math.prod(grad.shape[2:]))
    zeros = xp.zeros((batch, channels, math.prod(x.shape[2:])), dtype=grad.dtype)
    add = IndexingUpdateOp.ADD
    total = self.runtime.scatter(zeros, 2, xp.reshape(indices, flat), xp.reshape(grad, flat), add)
    return self.runtime.narrow(xp.reshape(total, x.shape), output_grad.dtype)


# -- adaptive average pooling -------------------------------------------------------------------------
def _adaptive_along(self: Any, x: Array, axis: int, out: int) -> Array:
    """Averages over PyTorch's adaptive windows along ``axis``: uneven windows add one gathered tap
    after the other, masked past each window's end (never multiplied, so an inf stays in its windows)."""
    xp, runtime = self.xp, self.runtime
    size = x.shape[axis]
    if size % out == 0:
        k = size // out
        if k == 1:
            return x
        total = _sum_taps(x, axis, k, out, k)
        total /= k
        return total
    windows = adaptive_pool_windows(size, out)
    shape = tuple(out if dim == axis else 1 for dim in range(x.ndim))
    total = None
    for tap in range(max(end - start for start, end in windows)):
        picked = xp.take(x, runtime.constant(_adaptive_index, size, out, tap), axis=axis)
        if any(start + tap >= end for start, end in windows):
            picked = xp.where(runtime.constant(_adaptive_mask, size, out, tap, shape), picked, 0.0)
        if total is None:
            total = picked
        else:
            total += picked
    total /= runtime.constant(_adaptive_lengths, size, out, shape, dtype=x.dtype)
    return total


def adaptive_avg_pool(self: Any, x: Array, output_size: Size) -> Array:
    current = self.runtime.widen(x)
    for dim, out in enumerate(_sizes(output_size)):
        current = _adaptive_along(self, current, 2 + dim, out)
    return self.runtime.narrow(current, x.dtype)


def adaptive_avg_pool_backward(self: Any, x: Array, grad: Array) -> Array:
    xp = self.xp
    current = self.runtime.widen(grad)
    # even windows spread each gradient by repeating it (divided once, on the small gradient); the
    # last axis first, so that the other repeats copy whole rows
    even = [
        x.shape[axis] // grad.shape[axis]
        for axis in range(2, grad.ndim)
        if x.shape[axis] % grad.shape[axis] == 0
    ]
    if math.prod(even) != 1:
        current = current / math.prod(even)
    for axis in reversed(range(2, grad.ndim)):
        size, out = x.shape[axis], grad.shape[axis]
        if size % out == 0:
            current = xp.repeat(current, size // out, axis=axis) if size != out else current
            continue
        # a product with the window matrix on the side of ``axis`` (the last dim, or the one before it)
        last = axis == current.ndim - 1
        matrix = self.runtime.constant(_adaptive_matrix, size, out, not last, dtype=current.dtype)
        current = xp.matmul(current, matrix) if last else xp.matmul(matrix, current)
    return self.runtime.narrow(current, grad.dtype)
