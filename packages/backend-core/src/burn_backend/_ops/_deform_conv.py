"""The defaults of ``ModuleOps.deform_conv2d`` and its backward kernel, built from float and int ops.

The semantics are torchvision's ``deform_conv2d``: kernel tap ``k = i * kw + j`` of output ``(oy, ox)``
reads its input channel at ``(oy * sh - ph + i * dh + dy, ox * sw - pw + j * dw + dx)``, where
``(dy, dx)`` are channels ``2k`` and ``2k + 1`` of the offsets of the channel's offset group; the read is
bilinear over the four samples around that point, a sample outside the input reading zero; the value is
then scaled by the tap's modulation mask (if any) and the columns so made go through one grouped matrix
product with the weight, as an ordinary convolution's im2col columns do.

The input is padded with one ring of zeros and the corner indices clamped into that padded frame: a
corner outside the input then reads (and, backwards, writes to) the ring, so no masking is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from .._data import TensorData
from .._dtype import DType

if TYPE_CHECKING:
    from .._options import DeformConvOptions

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype


class DeformConv2dBackward(NamedTuple):
    """The gradients ``ModuleOps.deform_conv2d_backward`` returns, each of its input's shape; ``mask_grad``
    and ``bias_grad`` are ``None`` when the forward had no mask or no bias."""

    x_grad: Any
    offset_grad: Any
    weight_grad: Any
    mask_grad: Any | None
    bias_grad: Any | None


def _all(shape: tuple[int, ...]) -> list[slice]:
    return [slice(0, size, 1) for size in shape]


class _Taps:
    """The bilinear reads of one kernel tap for every output: corner indices into the flattened padded
    input plane, their weights, and the four corner values of every channel."""

    def __init__(self, b: Any, plane: P, dy: P, dx: P, base_y: P, base_x: P, height: int, width: int) -> None:
        # plane: [batch, offset groups, channels per group, (height + 2) * (width + 2)]
        # dy, dx: [batch, offset groups, 1, outputs]; base_y, base_x: [1, 1, 1, outputs]
        # coordinates far outside read only the zero ring either way; clamping keeps the ints small
        y = b.float_clamp(b.float_add(dy, base_y), -2.0, height + 1.0)
        x = b.float_clamp(b.float_add(dx, base_x), -2.0, width + 1.0)
        y0 = b.float_floor(y)
        x0 = b.float_floor(x)
        self.ly = b.float_sub(y, y0)
        self.lx = b.float_sub(x, x0)
        self.hy = b.float_neg(b.float_sub_scalar(self.ly, 1.0))
        self.hx = b.float_neg(b.float_sub_scalar(self.lx, 1.0))
        row = width + 2
        iy = b.float_into_int(y0, b.int_dtype)
        ix = b.float_into_int(x0, b.int_dtype)
        # padded-frame rows and columns of the low and high corners, in [0, height + 1] / [0, width + 1]
        rows = [b.int_add_scalar(b.int_clamp(b.int_add_scalar(iy, d), -1, height), 1) for d in (0, 1)]
        cols = [b.int_add_scalar(b.int_clamp(b.int_add_scalar(ix, d), -1, width), 1) for d in (0, 1)]
        full = (*plane.shape[:3], dy.shape[3])
        self.indices = [
            b.int_expand(b.int_add(b.int_mul_scalar(r, row), c), full) for r in rows for c in cols
        ]
        self.values = [b.float_gather(plane, 3, index) for index in self.indices]
        ly, lx, hy, hx = self.ly, self.lx, self.hy, self.hx
        self.weights = [b.float_mul(hy, hx), b.float_mul(hy, lx), b.float_mul(ly, hx), b.float_mul(ly, lx)]

    def sample(self, b: Any) -> P:
        """The bilinear values ``[batch, offset groups, channels per group, outputs]``."""
        total = None
        for value, weight in zip(self.values, self.weights):
            term = b.float_mul(value, weight)
            total = term if total is None else b.float_add(total, term)
        return total

    def coordinate_grads(self, b: Any, grad: P) -> tuple[P, P]:
        """``sum over channels of grad * d(sample)/dy`` and ``... d(sample)/dx``: ``[batch, groups, 1,
        outputs]`` each."""
        v00, v01, v10, v11 = self.values
        d_y = b.float_add(
            b.float_mul(self.hx, b.float_sub(v10, v00)), b.float_mul(self.lx, b.float_sub(v11, v01))
        )
        d_x = b.float_add(
            b.float_mul(self.hy, b.float_sub(v01, v00)), b.float_mul(self.ly, b.float_sub(v11, v10))
        )
        return b.float_sum_dim(b.float_mul(grad, d_y), 2), b.float_sum_dim(b.float_mul(grad, d_x), 2)

    def scatter(self, b: Any, total: P, grad: P) -> P:
        """``total`` (the padded plane's gradient) plus ``grad`` spread back onto the four corners."""
        values = b.float_cat([b.float_mul(grad, weight) for weight in self.weights], 3)
        return b.float_scatter_add(total, 3, b.int_cat(self.indices, 3), values)


class _Layout:
    """Shapes and per-tap base coordinates of one ``deform_conv2d`` call."""

    def __init__(self, b: Any, x: P, offset: P, weight: P, options: DeformConvOptions) -> None:
        self.batch, self.channels, self.height, self.width = x.shape
        self.out_channels, self.per_weight_group, self.kh, self.kw = weight.shape
        self.out_h, self.out_w = offset.shape[2:]
        self.taps = self.kh * self.kw
        self.length = self.out_h * self.out_w
        self.groups = options.offset_groups
        self.per_group = self.channels // self.groups
        self.weight_groups = options.weight_groups
        self.dtype = DType.of(x.dtype)
        self.device = b.float_device(x)
        sh, sw = options.stride
        ph, pw = options.padding
        self.dilation = options.dilation
        self.rows = [float(o * sh - ph) for o in range(self.out_h) for _ in range(self.out_w)]
        self.cols = [float(o * sw - pw) for _ in range(self.out_h) for o in range(self.out_w)]

    def base(self, b: Any, tap: int) -> tuple[P, P]:
        """The undeformed coordinates ``[1, 1, 1, outputs]`` that ``tap`` reads for every output."""
        i, j = divmod(tap, self.kw)
        dh, dw = self.dilation
        shape = (1, 1, 1, self.length)
        ys = TensorData([r + i * dh for r in self.rows], self.dtype, shape=shape)
        xs = TensorData([c + j * dw for c in self.cols], self.dtype, shape=shape)
        return b.float_from_data(ys, self.device), b.float_from_data(xs, self.device)

    def plane(self, b: Any, x: P) -> P:
        """``x`` with a ring of zeros, as ``[batch, offset groups, channels per group, padded plane]``."""
        h, w = self.height, self.width
        padded = b.float_zeros((self.batch, self.channels, h + 2, w + 2), self.device, self.dtype)
        inner = [*_all((self.batch, self.channels)), slice(1, h + 1, 1), slice(1, w + 1, 1)]
        padded = b.float_slice_assign(padded, inner, x)
        return b.float_reshape(padded, (self.batch, self.groups, self.per_group, (h + 2) * (w + 2)))

    def per_tap(self, b: Any, tensor: P, channels_per_tap: int, tap: int) -> list[P]:
        """Channels ``tap * n ... tap * n + n - 1`` of each offset group of ``tensor`` (offsets: ``n = 2``;
        mask: ``n = 1``), each ``[batch, offset groups, 1, outputs]``."""
        shape = (self.batch, self.groups, self.taps, channels_per_tap, self.length)
        flat = b.float_reshape(tensor, shape)
        parts = []
        for part in range(channels_per_tap):
            index = _all(shape)
            index[2] = slice(tap, tap + 1, 1)
            index[3] = slice(part, part + 1, 1)
            piece = b.float_slice(flat, index)
            parts.append(b.float_reshape(piece, (self.batch, self.groups, 1, self.length)))
        return parts

    def taps_of(self, b: Any, plane: P, offset: P, tap: int) -> _Taps:
        dy, dx = self.per_tap(b, offset, 2, tap)
        base_y, base_x = self.base(b, tap)
        return _Taps(b, plane, dy, dx, base_y, base_x, self.height, self.width)

    def grouped(self, b: Any, columns: list[P]) -> P:
        """Per-tap columns ``[batch, channels, 1, outputs]`` as ``[batch, weight groups, depth, outputs]``."""
        stacked = b.float_cat(columns, 2) if len(columns) > 1 else columns[0]
        depth = self.per_weight_group * self.taps
        return b.float_reshape(stacked, (self.batch, self.weight_groups, depth, self.length))

    def grouped_weight(self, b: Any, weight: P) -> P:
        depth = self.per_weight_group * self.taps
        per_out = self.out_channels // self.weight_groups
        return b.float_reshape(weight, (1, self.weight_groups, per_out, depth))


def deform_conv2d(
    b: Any, x: P, offset: P, weight: P, mask: P | None, bias: P | None, options: DeformConvOptions
) -> P:
    """The default of ``ModuleOps.deform_conv2d`` on backend ``b``."""
    layout = _Layout(b, x, offset, weight, options)
    plane = layout.plane(b, x)
    columns = []
    for tap in range(layout.taps):
        sampled = layout.taps_of(b, plane, offset, tap).sample(b)
        if mask is not None:
            sampled = b.float_mul(sampled, layout.per_tap(b, mask, 1, tap)[0])
        columns.append(b.float_reshape(sampled, (layout.batch, layout.channels, 1, layout.length)))
    y = b.float_matmul(layout.grouped_weight(b, weight), layout.grouped(b, columns))
    y = b.float_reshape(y, (layout.batch, layout.out_channels, layout.out_h, layout.out_w))
    if bias is not None:
        y = b.float_add(y, b.float_reshape(bias, (1, layout.out_channels, 1, 1)))
    return y


def deform_conv2d_backward(
    b: Any,
    x: P,
    offset: P,
    weight: P,
    mask: P | None,
    bias: P | None,
    output_grad: P,
    options: DeformConvOptions,
) -> DeformConv2dBackward:
    """The default of ``ModuleOps.deform_conv2d_backward`` on backend ``b``."""
    layout = _Layout(b, x, offset, weight, options)
    batch, channels, length, groups = layout.batch, layout.channels, layout.length, layout.groups
    plane = layout.plane(b, x)
    per_out = layout.out_channels // layout.weight_groups
    grad = b.float_reshape(output_grad, (batch, layout.weight_groups, per_out, length))
    # the gradient of the columns: weight^T @ grad, then one [batch, groups, per group, outputs] per tap
    column_grad = b.float_matmul(b.float_swap_dims(layout.grouped_weight(b, weight), 2, 3), grad)
    column_grad = b.float_reshape(column_grad, (batch, channels, layout.taps, length))
    plane_grad = b.float_zeros(tuple(plane.shape), layout.device, layout.dtype)
    columns: list[P] = []
    offset_grads: list[P] = []
    mask_grads: list[P] = []
    for tap in range(layout.taps):
        taps = layout.taps_of(b, plane, offset, tap)
        sampled = taps.sample(b)
        index = _all((batch, channels, layout.taps, length))
        index[2] = slice(tap, tap + 1, 1)
        tap_grad = b.float_reshape(
            b.float_slice(column_grad, index), (batch, groups, layout.per_group, length)
        )
        if mask is not None:
            tap_mask = layout.per_tap(b, mask, 1, tap)[0]
            mask_grads.append(b.float_sum_dim(b.float_mul(tap_grad, sampled), 2))
            sampled = b.float_mul(sampled, tap_mask)
            tap_grad = b.float_mul(tap_grad, tap_mask)
        columns.append(b.float_reshape(sampled, (batch, channels, 1, length)))
        offset_grads.extend(taps.coordinate_grads(b, tap_grad))
        plane_grad = taps.scatter(b, plane_grad, tap_grad)

    h, w = layout.height, layout.width
    plane_grad = b.float_reshape(plane_grad, (batch, channels, h + 2, w + 2))
    x_grad = b.float_slice(plane_grad, [*_all((batch, channels)), slice(1, h + 1, 1), slice(1, w + 1, 1)])
    # offset_grads holds (dy, dx) per tap, each [batch, groups, 1, outputs]: channel-major per group
    offset_grad = b.float_reshape(b.float_cat(offset_grads, 2), tuple(offset.shape))
    mask_grad = None if mask is None else b.float_reshape(b.float_cat(mask_grads, 2), tuple(mask.shape))
    weight_grad = b.float_sum_dim(
        b.float_matmul(grad, b.float_swap_dims(layout.grouped(b, columns), 2, 3)), 0
    )
    weight_grad = b.float_reshape(weight_grad, tuple(weight.shape))
    bias_grad = None
    if bias is not None:
        flat = b.float_reshape(output_grad, (batch, layout.out_channels, length))
        bias_grad = b.float_reshape(b.float_sum_dim(b.float_sum_dim(flat, 2), 0), (layout.out_channels,))
    return DeformConv2dBackward(x_grad, offset_grad, weight_grad, mask_grad, bias_grad)
