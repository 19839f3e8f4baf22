"""The default of ``FloatTensorOps.float_grid_sample_2d``, built from float, int and bool ops.

The semantics are PyTorch's ``F.grid_sample`` for 4-d inputs: grid coordinates in ``[-1, 1]`` become
pixel coordinates (``align_corners`` decides whether -1 and 1 are the corner samples' centres or their
outer edges), ``padding_mode`` clamps or reflects them, then each output reads its nearest sample or
the four around it, a sample outside the input reading zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._dtype import DType

if TYPE_CHECKING:
    from .._options import GridSampleOptions

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype


def _reflect(b: Any, coord: P, twice_low: int, twice_high: int) -> P:
    """``coord`` reflected into ``[twice_low / 2, twice_high / 2]`` as often as needed (PyTorch's
    ``reflect_coordinates``; bounds are doubled so that half-integers stay exact)."""
    if twice_low == twice_high:
        return b.float_zeros(tuple(coord.shape), b.float_device(coord), DType.of(coord.dtype))
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    distance = b.float_abs(b.float_sub_scalar(coord, low))
    extra = b.float_remainder_scalar(distance, span)
    flips = b.float_floor(b.float_div_scalar(distance, span))
    odd = b.float_equal_elem(b.float_remainder_scalar(flips, 2.0), 1.0)
    forward = b.float_add_scalar(extra, low)
    backward = b.float_add_scalar(b.float_neg(extra), span + low)
    return b.float_mask_where(forward, odd, backward)


def source_coordinates(b: Any, coord: P, size: int, options: GridSampleOptions) -> P:
    """Normalized grid coordinates along a dim of ``size`` samples -> (fractional) sample indices,
    after ``padding_mode``: PyTorch's ``grid_sampler_compute_source_index``, in the same op order."""
    if options.align_corners:
        coord = b.float_mul_scalar(b.float_div_scalar(b.float_add_scalar(coord, 1.0), 2.0), size - 1)
    else:
        scaled = b.float_mul_scalar(b.float_add_scalar(coord, 1.0), size)
        coord = b.float_div_scalar(b.float_sub_scalar(scaled, 1.0), 2.0)
    if options.padding_mode == "zeros":
        return coord
    if options.padding_mode == "reflection":
        if options.align_corners:
            coord = _reflect(b, coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(b, coord, -1, 2 * size - 1)
    # NaN (a NaN or, reflected, an infinite coordinate) clamps to 0, as in PyTorch
    coord = b.float_mask_fill(coord, b.float_is_nan(coord), 0.0)
    return b.float_clamp(coord, 0.0, float(size - 1))


def _inside(b: Any, coord: P, size: int) -> P:
    """Whether an integral coordinate lies in ``[0, size)`` (false for NaN)."""
    return b.bool_and(b.float_greater_equal_elem(coord, 0.0), b.float_lower_equal_elem(coord, size - 1.0))


def _read(b: Any, planes: P, x: P, y: P, width: int, height: int) -> P:
    """``planes [n, c, h * w]`` read at the integral coordinates ``x``, ``y`` (``[n, 1, l]``) for every
    channel: ``[n, c, l]``, zero where the coordinate lies outside the input."""
    n, c = planes.shape[:2]
    length = x.shape[2]
    outside = b.bool_not(b.bool_and(_inside(b, x, width), _inside(b, y, height)))
    # outside coordinates (NaN and infinities included) read sample 0, then are zeroed
    safe_x = b.float_into_int(b.float_mask_fill(x, outside, 0.0), b.int_dtype)
    safe_y = b.float_into_int(b.float_mask_fill(y, outside, 0.0), b.int_dtype)
    flat = b.int_add(b.int_mul_scalar(safe_y, width), safe_x)
    values = b.float_gather(planes, 2, b.int_expand(flat, (n, c, length)))
    return b.float_mask_fill(values, b.bool_expand(outside, (n, c, length)), 0.0)


def grid_sample_2d(b: Any, tensor: P, grid: P, options: GridSampleOptions) -> P:
    """``tensor [n, c, h, w]`` sampled at ``grid [n, h_out, w_out, 2]`` (x, then y): ``[n, c, h_out,
    w_out]``."""
    n, c, height, width = tensor.shape
    h_out, w_out = grid.shape[1:3]
    length = h_out * w_out
    whole = [slice(0, n, 1), slice(0, h_out, 1), slice(0, w_out, 1)]
    gx = b.float_reshape(b.float_slice(grid, [*whole, slice(0, 1, 1)]), (n, 1, length))
    gy = b.float_reshape(b.float_slice(grid, [*whole, slice(1, 2, 1)]), (n, 1, length))
    x = source_coordinates(b, gx, width, options)
    y = source_coordinates(b, gy, height, options)
    planes = b.float_reshape(tensor, (n, c, height * width))
    if options.mode == "nearest":
        out = _read(b, planes, b.float_round(x), b.float_round(y), width, height)
        return b.float_reshape(out, (n, c, h_out, w_out))
    x0, y0 = b.float_floor(x), b.float_floor(y)
    x1, y1 = b.float_add_scalar(x0, 1.0), b.float_add_scalar(y0, 1.0)
    right, down = b.float_sub(x, x0), b.float_sub(y, y0)  # the weights of x1 and y1
    left, up = b.float_sub(x1, x), b.float_sub(y1, y)
    corners = ((x0, y0, left, up), (x1, y0, right, up), (x0, y1, left, down), (x1, y1, right, down))
    total = None
    for cx, cy, wx, wy in corners:
        term = b.float_mul(_read(b, planes, cx, cy, width, height), b.float_mul(wx, wy))
        total = term if total is None else b.float_add(total, term)
    return b.float_reshape(total, (n, c, h_out, w_out))
