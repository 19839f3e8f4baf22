"""NdArray's deformable convolution (torchvision's ``deform_conv2d``) and its gradients on NumPy.

The input is padded with a ring of zeros and laid out channels-last, one row of channels per (sample,
offset group, padded position): a bilinear read of every channel at once is then a gather of four rows
(corner indices clamped into the ring, so a corner outside the input reads zeros), which NumPy copies
far faster than scattered elements. One kernel tap at a time, the reads fill im2col columns ``[batch,
outputs, channels, taps]`` that one grouped ``matmul`` with the weight turns into the output.

Backwards, the columns' gradient is one ``matmul`` with the weight; per tap, the gradient of each corner
read is a dot product over the channels of a group, from which the offsets' and the mask's gradients
follow without any full-size product, and the input's gradient is a ``bincount`` over the corner
indices. f16 and bf16 compute in f32.
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


class _Tap:
    """One tap's reads for every output: per corner (top-left, top-right, bottom-left, bottom-right) the
    row indices ``[batch, groups, outputs]``, the weights and the values ``[batch, groups, outputs,
    channels per group]``; and the fractional parts ``ly``/``lx`` ``[batch, groups, outputs]``."""

    def __init__(self, rows: Array, y: Array, x: Array, height: int, width: int, base: Array) -> None:
        y0, x0 = np.floor(y), np.floor(x)
        self.ly, self.lx = y - y0, x - x0
        hy, hx = 1.0 - self.ly, 1.0 - self.lx
        iy, ix = y0.astype(np.intp), x0.astype(np.intp)
        row = width + 2
        ys = [np.clip(iy + d, -1, height) + 1 for d in (0, 1)]
        xs = [np.clip(ix + d, -1, width) + 1 for d in (0, 1)]
        self.indices = [base + r * row + c for r in ys for c in xs]
        self.weights = [hy * hx, hy * self.lx, self.ly * hx, self.ly * self.lx]
        self.values = [np.take(rows, index, axis=0) for index in self.indices]

    def sample(self) -> Array:
        total = self.values[0] * self.weights[0][..., None]
        for value, weight in zip(self.values[1:], self.weights[1:]):
            total += value * weight[..., None]
        return total


class _Reads:
    """The reads of every tap: positions from the offsets; ``tap(k)`` makes tap ``k``'s."""

    def __init__(self, x: Array, offset: Array, kernel: tuple[int, int], options: DeformConvOptions) -> None:
        self.batch, self.channels, self.height, self.width = x.shape
        self.kh, self.kw = kernel
        self.out_h, self.out_w = offset.shape[2:]
        self.taps = self.kh * self.kw
        self.length = self.out_h * self.out_w
        self.groups = options.offset_groups
        self.per_group = self.channels // self.groups
        h, w = self.height, self.width
        self.plane = (h + 2) * (w + 2)
        padded = np.zeros((self.batch, self.groups, h + 2, w + 2, self.per_group), dtype=x.dtype)
        grouped = x.reshape(self.batch, self.groups, self.per_group, h, w)
        padded[:, :, 1 : h + 1, 1 : w + 1] = grouped.transpose(0, 1, 3, 4, 2)
        self.rows = padded.reshape(self.batch * self.groups * self.plane, self.per_group)
        # the first row of each (sample, group) plane
        self.base = (np.arange(self.batch * self.groups) * self.plane).reshape(self.batch, self.groups, 1)
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

    def tap(self, k: int) -> _Tap:
        return _Tap(self.rows, self.y[:, :, k], self.x[:, :, k], self.height, self.width, self.base)

    def columns(self) -> Array:
        """An empty im2col buffer ``[batch, outputs, groups, channels per group, taps]``."""
        shape = (self.batch, self.length, self.groups, self.per_group, self.taps)
        return np.empty(shape, dtype=self.rows.dtype)


def _masks(mask: Array | None, reads: _Reads) -> Array | None:
    if mask is None:
        return None
    return _work(mask).reshape(reads.batch, reads.groups, reads.taps, reads.length)


def deform_conv2d(
    x: Array, offset: Array, weight: Array, mask: Array | None, bias: Array | None, options: DeformConvOptions
) -> Array:
    dtype = np.asarray(x).dtype
    out_channels, per_weight_group, kh, kw = weight.shape
    reads = _Reads(_work(x), _work(offset), (kh, kw), options)
    masks = _masks(mask, reads)
    columns = reads.columns()
    for k in range(reads.taps):
        sampled = reads.tap(k).sample()
        if masks is not None:
            sampled *= masks[:, :, k, :, None]
        columns[..., k] = sampled.transpose(0, 2, 1, 3)
    groups = options.weight_groups
    depth = per_weight_group * reads.taps
    w = np.ascontiguousarray(_work(weight)).reshape(groups, out_channels // groups, depth)
    grouped = columns.reshape(reads.batch, reads.length, groups, depth).transpose(0, 2, 1, 3)
    y = np.matmul(grouped, w.transpose(0, 2, 1))  # [batch, groups, outputs, out channels per group]
    y = np.ascontiguousarray(y.transpose(0, 1, 3, 2)).reshape(
        reads.batch, out_channels, reads.out_h, reads.out_w
    )
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
    out_channels, per_weight_group, kh, kw = weight.shape
    reads = _Reads(_work(x), _work(offset), (kh, kw), options)
    batch, taps, length, groups, per_group = (
        reads.batch,
        reads.taps,
        reads.length,
        reads.groups,
        reads.per_group,
    )
    masks = _masks(mask, reads)
    weight_groups = options.weight_groups
    per_out = out_channels // weight_groups
    depth = per_weight_group * taps
    w = np.ascontiguousarray(_work(weight)).reshape(weight_groups, per_out, depth)
    grad = np.ascontiguousarray(_work(output_grad)).reshape(batch, weight_groups, per_out, length)
    # the columns' gradient, laid out as the columns: [batch, outputs, groups, channels per group, taps]
    column_grad = np.matmul(grad.transpose(0, 1, 3, 2), w)  # [batch, weight groups, outputs, depth]
    column_grad = np.ascontiguousarray(column_grad.transpose(0, 2, 1, 3))
    column_grad = column_grad.reshape(batch, length, groups, per_group, taps)
    columns = reads.columns()
    offset_grad = np.empty((batch, groups, taps, 2, length), dtype=reads.rows.dtype)
    mask_grad = None if masks is None else np.empty((batch, groups, taps, length), dtype=reads.rows.dtype)
    row_grad = np.zeros(reads.rows.size, dtype=np.float64)
    lanes = np.arange(per_group)
    for k in range(taps):
        tap = reads.tap(k)
        sampled = tap.sample()
        tap_grad = np.ascontiguousarray(column_grad[..., k].transpose(0, 2, 1, 3))  # [b, g, outputs, c]
        # the gradient of each corner's read, summed over the channels of the group
        dots = [np.einsum("bglc,bglc->bgl", tap_grad, value) for value in tap.values]
        scale = 1.0 if masks is None else masks[:, :, k]
        if masks is not None and mask_grad is not None:
            mask_grad[:, :, k] = sum(weight * dot for weight, dot in zip(tap.weights, dots))
            sampled *= masks[:, :, k, :, None]
            tap_grad = tap_grad * masks[:, :, k, :, None]
        columns[..., k] = sampled.transpose(0, 2, 1, 3)
        d00, d01, d10, d11 = dots
        offset_grad[:, :, k, 0] = scale * ((1.0 - tap.lx) * (d10 - d00) + tap.lx * (d11 - d01))
        offset_grad[:, :, k, 1] = scale * ((1.0 - tap.ly) * (d01 - d00) + tap.ly * (d11 - d10))
        where = np.concatenate([index[..., None] * per_group + lanes for index in tap.indices], axis=2)
        amounts = np.concatenate([tap_grad * weight[..., None] for weight in tap.weights], axis=2)
        row_grad += np.bincount(where.ravel(), weights=amounts.ravel(), minlength=row_grad.size)
    h, w_ = reads.height, reads.width
    padded = row_grad.reshape(batch, groups, h + 2, w_ + 2, per_group)[:, :, 1 : h + 1, 1 : w_ + 1]
    x_grad = np.ascontiguousarray(padded.transpose(0, 1, 4, 2, 3)).reshape(x.shape)
    grouped = columns.reshape(batch, length, weight_groups, depth).transpose(0, 2, 1, 3)
    weight_grad = np.matmul(grad, grouped).sum(axis=0)
    bias_grad = None if bias is None else np.sum(_work(output_grad), axis=(0, 2, 3)).astype(dtype, copy=False)
    return DeformConv2dBackward(
        x_grad.astype(dtype, copy=False),
        offset_grad.reshape(offset.shape).astype(dtype, copy=False),
        weight_grad.reshape(weight.shape).astype(dtype, copy=False),
        None if mask_grad is None else mask_grad.reshape(batch, -1, reads.out_h, reads.out_w).astype(dtype),
        bias_grad,
    )
