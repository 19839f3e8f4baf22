"""Deformable convolution (torchvision's ``deform_conv2d``, DCNv2 with a mask) and its gradients, over
an array namespace.

Written once: ``ArrayModuleOps`` binds it, and the interface's default runs it over NumPy on the host.
Kernel tap ``k = i * kw + j`` of output ``(oy, ox)`` reads every channel of its offset group bilinearly
at ``(oy * sh - ph + i * dh + dy, ox * sw - pw + j * dw + dx)``, scales the read by the tap's mask, and
the reads, as im2col columns, go through one grouped matrix product with the weight.

The layout makes each read cheap: the input gets a ring of zeros and is stored channels-last, one row
of a channel group's values per (sample, offset group, padded position). A corner of a bilinear read is
then a whole row, and clamping a corner's coordinates into the ring makes a read outside the input read
zeros, with no masking. Tap by tap, the four corners of every output are one ``take`` of rows, ordered
``[batch, outputs, offset groups]`` so that the reads are already the columns' channels. The columns
(and the weight's depth) are tap-major, so each tap's columns and their gradient are runs of channels.

Backwards, the columns' gradient is one matrix product with the weight. Per tap, the dot product of that
gradient with each corner's row over the channels gives the offsets' gradient (the read is piecewise
linear in its coordinates) and the mask's, and the gradient of each corner, weighted, is scatter-added
back onto the rows: the input's gradient. Each function takes the backend (an ``ArrayBackend``) first;
f16 and bf16 compute in f32, rounded once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dtype import DType
from .._ops.module import DeformConv2dBackward
from .._options import DeformConvOptions, IndexingUpdateOp

Array = Any
Pair = tuple[int, int]


def _undeformed(kernel: Pair, out: Pair, stride: Pair, padding: Pair, dilation: Pair) -> np.ndarray[Any, Any]:
    """``[taps, 2, 1, outputs, 1]``: the ``(y, x)`` each tap reads at each output before its offset."""
    (kh, kw), (oh, ow) = kernel, out
    y = np.arange(kh)[:, None, None, None] * dilation[0] + (np.arange(oh) * stride[0] - padding[0])[:, None]
    x = np.arange(kw)[None, :, None, None] * dilation[1] + (np.arange(ow) * stride[1] - padding[1])
    pairs = np.stack(np.broadcast_arrays(y, x), axis=2)  # [kh, kw, 2, oh, ow]
    return pairs.reshape(kh * kw, 2, 1, oh * ow, 1).astype(np.float64)


class _Reads:
    """The padded channels-last rows of one call and the deformed coordinates of every tap."""

    def __init__(self, b: Any, x: Array, offset: Array, kernel: Pair, options: DeformConvOptions) -> None:
        xp, runtime = b.xp, b.runtime
        self.xp, self.runtime = xp, runtime
        self.i64 = runtime.dtype(DType.I64)
        self.batch, self.channels, self.height, self.width = x.shape
        self.out_h, self.out_w = offset.shape[2:]
        self.taps = kernel[0] * kernel[1]
        self.length = self.out_h * self.out_w
        self.groups = options.offset_groups
        self.per_group = self.channels // self.groups
        h, w = self.height, self.width
        padded = xp.zeros((self.batch, self.groups, h + 2, w + 2, self.per_group), dtype=x.dtype)
        grouped = xp.reshape(x, (self.batch, self.groups, self.per_group, h, w))
        padded[:, :, 1 : h + 1, 1 : w + 1, :] = xp.permute_dims(grouped, (0, 1, 3, 4, 2))
        plane = (h + 2) * (w + 2)
        self.rows = xp.reshape(padded, (self.batch * self.groups * plane, self.per_group))
        starts = xp.arange(self.batch * self.groups, dtype=self.i64) * plane
        self.first = xp.reshape(starts, (self.batch, 1, self.groups))  # of each (sample, offset group)
        geometry = (kernel, (self.out_h, self.out_w), options.stride, options.padding, options.dilation)
        base = runtime.constant(_undeformed, *map(tuple, geometry), dtype=x.dtype)
        pairs = self.per_tap(offset, 2) + base  # [taps, 2, batch, outputs, offset groups]
        # coordinates far outside read only the zero ring either way; clipping keeps the ints small
        self.y = xp.clip(pairs[:, 0, ...], -2.0, h + 1.0)
        self.x = xp.clip(pairs[:, 1, ...], -2.0, w + 1.0)

    def per_tap(self, values: Array, per_tap: int) -> Array:
        """Offsets (``per_tap`` 2) or a mask (1) ``[batch, groups * taps * per_tap, oh, ow]`` as ``[taps,
        per_tap, batch, outputs, offset groups]``; ``from_taps`` undoes it."""
        xp, lead = self.xp, (self.taps, per_tap, self.batch)
        shape = (self.batch, self.groups, self.taps, per_tap, self.length)
        moved = xp.permute_dims(xp.reshape(values, shape), (2, 3, 0, 4, 1))
        # merging the last two dims copies the array in this order: what each tap computes from it, and
        # the reads it gathers, are then laid out in order too
        return xp.reshape(xp.reshape(moved, (*lead, -1)), (*lead, self.length, self.groups))

    def from_taps(self, values: Array) -> Array:
        grouped = self.xp.permute_dims(values, (2, 4, 0, 1, 3))
        return self.xp.reshape(grouped, (self.batch, -1, self.out_h, self.out_w))

    def tap(self, k: int) -> _Tap:
        return _Tap(self, self.y[k, ...], self.x[k, ...])


class _Tap:
    """One tap's bilinear reads ``[batch, outputs, offset groups]``, the four corners (top-left,
    top-right, bottom-left, bottom-right) stacked first: row ``indices``, ``weights`` and ``values``
    (with the channels last), and the fractional parts ``ly``, ``lx`` of the coordinates."""

    def __init__(self, reads: _Reads, y: Array, x: Array) -> None:
        xp = reads.xp
        y0, x0 = xp.floor(y), xp.floor(x)
        self.ly, self.lx = y - y0, x - x0
        hy, hx = 1.0 - self.ly, 1.0 - self.lx
        iy, ix = reads.runtime.cast(y0, reads.i64), reads.runtime.cast(x0, reads.i64)
        ys = [(xp.clip(iy + d, -1, reads.height) + 1) * (reads.width + 2) for d in (0, 1)]
        xs = [xp.clip(ix + d, -1, reads.width) + 1 for d in (0, 1)]
        self.indices = xp.stack([reads.first + r + c for r in ys for c in xs])
        self.weights = xp.stack([hy * hx, hy * self.lx, self.ly * hx, self.ly * self.lx])[..., None]
        taken = xp.take(reads.rows, xp.reshape(self.indices, (-1,)), axis=0)
        self.values = xp.reshape(taken, (*self.indices.shape, reads.per_group))

    def sample(self) -> Array:
        """The reads ``[batch, outputs, offset groups, channels per group]``."""
        total = self.values[0, ...] * self.weights[0, ...]
        for corner in range(1, 4):
            total += self.values[corner, ...] * self.weights[corner, ...]
        return total


def _tap_major(xp: Any, weight: Array, groups: int) -> Array:
    """``weight [c_out, c_in / groups, kh, kw]`` as ``[groups, c_out / groups, taps * c_in / groups]``,
    the depth tap-major as the columns'."""
    out_channels = weight.shape[0]
    by_tap = xp.permute_dims(weight, (0, 2, 3, 1))
    return xp.reshape(by_tap, (groups, out_channels // groups, -1))


def _columns(
    b: Any, x: Array, offset: Array, weight: Array, mask: Array | None, options: DeformConvOptions
) -> tuple[_Reads, Array | None, Array]:
    """The reads and the masks of every tap, and an empty buffer for the columns ``[batch, outputs,
    weight groups, taps, channels per weight group]``."""
    reads = _Reads(b, b.runtime.widen(x), b.runtime.widen(offset), weight.shape[2:], options)
    masks = None if mask is None else reads.per_tap(b.runtime.widen(mask), 1)[:, 0, ..., None]
    groups = options.weight_groups
    shape = (reads.batch, reads.length, groups, reads.taps, reads.channels // groups)
    return reads, masks, b.xp.empty(shape, dtype=reads.rows.dtype)


def _store(xp: Any, columns: Array, k: int, sampled: Array) -> None:
    columns[:, :, :, k, :] = xp.reshape(sampled, (*columns.shape[:3], columns.shape[4]))


def _grouped(xp: Any, columns: Array) -> Array:
    """The columns as ``[batch, weight groups, outputs, depth]``."""
    batch, length, groups = columns.shape[:3]
    return xp.permute_dims(xp.reshape(columns, (batch, length, groups, -1)), (0, 2, 1, 3))


def deform_conv2d(
    self: Any, x: Array, offset: Array, weight: Array, mask: Array | None, bias: Array | None,
    options: DeformConvOptions,
) -> Array:  # fmt: skip
    xp = self.xp
    out_channels = weight.shape[0]
    reads, masks, columns = _columns(self, x, offset, weight, mask, options)
    for k in range(reads.taps):
        sampled = reads.tap(k).sample()
        if masks is not None:
            sampled *= masks[k, ...]
        _store(xp, columns, k, sampled)
    w = _tap_major(xp, self.runtime.widen(weight), options.weight_groups)
    y = xp.matmul(w, xp.permute_dims(_grouped(xp, columns), (0, 1, 3, 2)))  # [b, groups, c_out / g, outputs]
    y = xp.reshape(y, (reads.batch, out_channels, reads.out_h, reads.out_w))
    if bias is not None:
        y += xp.reshape(self.runtime.widen(bias), (1, out_channels, 1, 1))
    return self.runtime.narrow(y, x.dtype)


def deform_conv2d_backward(
    self: Any, x: Array, offset: Array, weight: Array, mask: Array | None, bias: Array | None,
    output_grad: Array, options: DeformConvOptions,
) -> DeformConv2dBackward:  # fmt: skip
    xp, runtime = self.xp, self.runtime
    dtype = output_grad.dtype
    out_channels, per_weight_group, kh, kw = weight.shape
    reads, masks, columns = _columns(self, x, offset, weight, mask, options)
    batch, length, groups, per_group = reads.batch, reads.length, reads.groups, reads.per_group
    weight_groups = options.weight_groups
    w = _tap_major(xp, runtime.widen(weight), weight_groups)
    grad = xp.reshape(runtime.widen(output_grad), (batch, weight_groups, -1, length))
    # the columns' gradient: [batch, weight groups, outputs, taps, channels per weight group]
    column_grad = xp.matmul(xp.permute_dims(grad, (0, 1, 3, 2)), w)
    column_grad = xp.reshape(column_grad, (batch, weight_groups, length, reads.taps, per_weight_group))
    work = reads.rows.dtype
    offset_grad = xp.empty((reads.taps, 2, batch, length, groups), dtype=work)
    mask_grad = None if masks is None else xp.empty((reads.taps, 1, batch, length, groups), dtype=work)
    rows_grad = xp.zeros((reads.rows.shape[0] * per_group,), dtype=work)
    lanes = xp.arange(per_group, dtype=reads.i64)
    for k in range(reads.taps):
        tap = reads.tap(k)
        sampled = tap.sample()
        tap_grad = xp.permute_dims(column_grad[:, :, :, k, :], (0, 2, 1, 3))
        tap_grad = xp.reshape(tap_grad, (batch, length, groups, per_group))
        # the gradient of each corner's read, summed over the group's channels
        dots = xp.matmul(tap.values[..., None, :], tap_grad[..., None])[..., 0, 0]
        scale: Any = 1.0
        if masks is not None and mask_grad is not None:
            mask_grad[k, 0, ...] = xp.sum(tap.weights[..., 0] * dots, axis=0)
            sampled *= masks[k, ...]
            tap_grad = tap_grad * masks[k, ...]
            scale = masks[k, ..., 0]
        _store(xp, columns, k, sampled)
        d00, d01, d10, d11 = (dots[corner, ...] for corner in range(4))
        offset_grad[k, 0, ...] = scale * ((1.0 - tap.lx) * (d10 - d00) + tap.lx * (d11 - d01))
        offset_grad[k, 1, ...] = scale * ((1.0 - tap.ly) * (d01 - d00) + tap.ly * (d11 - d10))
        where = xp.reshape(tap.indices[..., None] * per_group + lanes, (-1,))
        amounts = xp.reshape(tap_grad[None, ...] * tap.weights, (-1,))
        rows_grad = runtime.scatter(rows_grad, 0, where, amounts, IndexingUpdateOp.ADD)
    planes = xp.reshape(rows_grad, (batch, groups, reads.height + 2, reads.width + 2, per_group))
    x_grad = xp.reshape(xp.permute_dims(planes[:, :, 1:-1, 1:-1, :], (0, 1, 4, 2, 3)), x.shape)
    weight_grad = xp.sum(xp.matmul(grad, _grouped(xp, columns)), axis=0)  # [groups, c_out / g, depth]
    weight_grad = xp.reshape(weight_grad, (out_channels, kh, kw, per_weight_group))
    weight_grad = xp.permute_dims(weight_grad, (0, 3, 1, 2))
    return DeformConv2dBackward(
        runtime.narrow(x_grad, dtype),
        runtime.narrow(reads.from_taps(offset_grad), dtype),
        runtime.narrow(weight_grad, dtype),
        None if mask_grad is None else runtime.narrow(reads.from_taps(mask_grad), dtype),
        None if bias is None else runtime.narrow(xp.sum(runtime.widen(output_grad), axis=(0, 2, 3)), dtype),
    )
