"""NdArray's deformable convolution (torchvision's ``deform_conv2d``) and its gradients on NumPy.

One kernel tap at a time: the bilinear reads of every output and channel of the tap are four gathers
from the input padded by a ring of zeros (corner indices clamped into the ring, so a corner outside the
input reads zero), written into im2col columns that one grouped ``matmul`` with the weight turns into
the output. Backwards, the columns' gradient is one ``matmul`` with the weight, then per tap the reads
are undone: the input's gradient by a ``bincount`` over the corner indices, the offsets' and the mask's
by sums over the channels of their group. f16 and bf16 compute in f32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DeformConv2dBackward, DeformConvOptions, DType

Array = Any
_LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)


def _work(array: Array) -> Array:
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype in _LOW_PRECISION else array


class _Reads:
    """Every tap's bilinear reads: positions from the offsets, then per tap corner indices into the
    flattened padded plane, corner weights and corner values."""

    def __init__(self, x: Array, offset: Array, kernel: tuple[int, int], options: DeformConvOptions) -> None:
        self.batch, self.channels, self.height, self.width = x.shape
        self.kh, self.kw = kernel
        self.out_h, self.out_w = offset.shape[2:]
        self.taps = self.kh * self.kw
        self.length = self.out_h * self.out_w
        self.groups = options.offset_groups
        self.per_group = self.channels // self.groups
        h, w = self.height, self.width
        padded = np.zeros((self.batch, self.channels, h + 2, w + 2), dtype=x.dtype)
        padded[:, :, 1 : h + 1, 1 : w + 1] = x
        self.plane = padded.reshape(self.batch, self.groups, self.per_group, (h + 2) * (w + 2))
        (sh, sw), (ph, pw), (dh, dw) = options.stride, options.padding, options.dilation
        tap_rows = np.repeat(np.arange(self.kh), self.kw) * dh
        tap_cols = np.tile(np.arange(self.kw), self.kh) * dw
        base_y = tap_rows[:, None, None] + (np.arange(self.out_h) * sh - ph)[None, :, None]
        base_x = tap_cols[:, None, None] + (np.arange(self.out_w) * sw - pw)[None, None, :]
        pairs = offset.reshape(self.batch, self.groups, self.taps, 2, self.out_h, self.out_w)
        # coordinates far outside read only the zero ring either way; clipping keeps the ints small
        shape = (self.batch, self.groups, self.taps, self.length)
        self.y = np.clip(pairs[:, :, :, 0] + base_y, -2.0, h + 1.0).reshape(shape)
        self.x = np.clip(pairs[:, :, :, 1] + base_x, -2.0, w + 1.0).reshape(shape)

    def tap(self, k: int) -> tuple[list[Array], list[Array], list[Array], Array, Array]:
        """Tap ``k``'s corner indices ``[batch, groups, 1, outputs]`` (order: top-left, top-right,
        bottom-left, bottom-right), weights (same shape), values ``[batch, groups, channels per group,
        outputs]``, and the fractional parts ``(ly, lx)``."""
        y, x = self.y[:, :, k, None, :], self.x[:, :, k, None, :]
        y0, x0 = np.floor(y), np.floor(x)
        ly, lx = y - y0, x - x0
        hy, hx = 1.0 - ly, 1.0 - lx
        iy, ix = y0.astype(np.intp), x0.astype(np.intp)
        row = self.width + 2
        rows = [np.clip(iy + d, -1, self.height) + 1 for d in (0, 1)]
        cols = [np.clip(ix + d, -1, self.width) + 1 for d in (0, 1)]
        indices = [r * row + c for r in rows for c in cols]
        weights = [hy * hx, hy * lx, ly * hx, ly * lx]
        values = [np.take_along_axis(self.plane, index, axis=3) for index in indices]
        return indices, weights, values, ly, lx


def _sample(weights: list[Array], values: list[Array]) -> Array:
    total = weights[0] * values[0]
    for weight, value in zip(weights[1:], values[1:]):
        total += weight * value
    return total


def _mask_of(mask: Array, reads: _Reads) -> Array:
    return mask.reshape(reads.batch, reads.groups, reads.taps, 1, reads.length)


def _columns(reads: _Reads, mask: Array | None) -> Array:
    """The columns ``[batch, channels, taps, outputs]`` (modulated by ``mask``)."""
    columns = np.empty((reads.batch, reads.channels, reads.taps, reads.length), dtype=reads.plane.dtype)
    masks = None if mask is None else _mask_of(mask, reads)
    for k in range(reads.taps):
        _, weights, values, _, _ = reads.tap(k)
        sampled = _sample(weights, values)
        if masks is not None:
            sampled *= masks[:, :, k]
        columns[:, :, k] = sampled.reshape(reads.batch, reads.channels, reads.length)
    return columns


def deform_conv2d(
    x: Array, offset: Array, weight: Array, mask: Array | None, bias: Array | None, options: DeformConvOptions
) -> Array:
    dtype = np.asarray(x).dtype
    xw, ow, ww = _work(x), _work(offset), _work(weight)
    mw = None if mask is None else _work(mask)
    out_channels, per_group, kh, kw = weight.shape
    reads = _Reads(xw, ow, (kh, kw), options)
    groups = options.weight_groups
    depth = per_group * reads.taps
    columns = _columns(reads, mw).reshape(reads.batch, groups, depth, reads.length)
    w = np.ascontiguousarray(ww).reshape(groups, out_channels // groups, depth)
    y = np.matmul(w, columns).reshape(reads.batch, out_channels, reads.out_h, reads.out_w)
    if bias is not None:
        y += _work(bias).reshape(1, out_channels, 1, 1)
    return y.astype(dtype, copy=False)


def deform_conv2d_backward(
    x: Array,
    offset: Array,
    weight: Array,
    mask: Array | None,
    bias: Array | None,
    output_grad: Array,
    options: DeformConvOptions,
) -> DeformConv2dBackward:
    dtype = np.asarray(output_grad).dtype
    xw, ow, ww, gw = _work(x), _work(offset), _work(weight), _work(output_grad)
    mw = None if mask is None else _work(mask)
    out_channels, per_group, kh, kw = weight.shape
    reads = _Reads(xw, ow, (kh, kw), options)
    batch, channels, taps, length = reads.batch, reads.channels, reads.taps, reads.length
    groups, per_out = options.weight_groups, out_channels // options.weight_groups
    depth = per_group * taps
    w = np.ascontiguousarray(ww).reshape(groups, per_out, depth)
    grad = np.ascontiguousarray(gw).reshape(batch, groups, per_out, length)
    column_grad = np.matmul(w.swapaxes(1, 2), grad).reshape(batch, channels, taps, length)
    columns = np.empty((batch, channels, taps, length), dtype=xw.dtype)
    offset_grad = np.empty((batch, reads.groups, taps, 2, length), dtype=xw.dtype)
    mask_grad = None if mw is None else np.empty((batch, reads.groups, taps, length), dtype=xw.dtype)
    masks = None if mw is None else _mask_of(mw, reads)
    plane_size = reads.plane.shape[3]
    # the first sample of each (batch, group, channel) plane in the flattened gradient of the input
    starts = np.arange(batch * channels).reshape(batch, reads.groups, reads.per_group, 1) * plane_size
    plane_grad = np.zeros(batch * channels * plane_size, dtype=np.float64)
    for k in range(taps):
        indices, weights, values, ly, lx = reads.tap(k)
        sampled = _sample(weights, values)
        tap_grad = column_grad[:, :, k].reshape(batch, reads.groups, reads.per_group, length)
        if masks is not None and mask_grad is not None:
            mask_grad[:, :, k] = np.sum(tap_grad * sampled, axis=2)
            sampled = sampled * masks[:, :, k]
            tap_grad = tap_grad * masks[:, :, k]
        columns[:, :, k] = sampled.reshape(batch, channels, length)
        v00, v01, v10, v11 = values
        d_y = (1.0 - lx) * (v10 - v00) + lx * (v11 - v01)
        d_x = (1.0 - ly) * (v01 - v00) + ly * (v11 - v10)
        offset_grad[:, :, k, 0] = np.sum(tap_grad * d_y, axis=2)
        offset_grad[:, :, k, 1] = np.sum(tap_grad * d_x, axis=2)
        where = np.concatenate([np.broadcast_to(starts + index, tap_grad.shape) for index in indices], axis=3)
        amounts = np.concatenate([tap_grad * weight for weight in weights], axis=3)
        plane_grad += np.bincount(where.ravel(), weights=amounts.ravel(), minlength=plane_grad.size)
    h, w_ = reads.height, reads.width
    x_grad = plane_grad.reshape(batch, channels, h + 2, w_ + 2)[:, :, 1 : h + 1, 1 : w_ + 1]
    weight_grad = np.matmul(grad, columns.reshape(batch, groups, depth, length).swapaxes(2, 3)).sum(axis=0)
    bias_grad = None if bias is None else np.sum(gw, axis=(0, 2, 3)).astype(dtype, copy=False)
    return DeformConv2dBackward(
        np.ascontiguousarray(x_grad).astype(dtype),
        offset_grad.reshape(offset.shape).astype(dtype, copy=False),
        weight_grad.reshape(weight.shape).astype(dtype, copy=False),
        None if mask_grad is None else mask_grad.reshape(batch, -1, reads.out_h, reads.out_w).astype(dtype),
        bias_grad,
    )
