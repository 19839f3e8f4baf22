"""NdArray's ``float_grid_sample_2d``: PyTorch's ``F.grid_sample`` on 4-d inputs with NumPy fancy indexing
(the same coordinate rules as the interface's default, ``burn_backend._ops._grid_sample``). f16 and bf16
compute in f32."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType, GridSampleOptions

Array = Any
_LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)


def _reflect(coord: Array, twice_low: int, twice_high: int) -> Array:
    if twice_low == twice_high:
        return np.zeros_like(coord)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    distance = np.abs(coord - coord.dtype.type(low))
    extra = np.fmod(distance, coord.dtype.type(span))
    odd = np.floor(distance / coord.dtype.type(span)) % 2 == 1
    return np.where(odd, coord.dtype.type(span + low) - extra, extra + coord.dtype.type(low))


def _source(coord: Array, size: int, options: GridSampleOptions) -> Array:
    one = coord.dtype.type(1)
    two = coord.dtype.type(2)
    if options.align_corners:
        coord = (coord + one) / two * coord.dtype.type(size - 1)
    else:
        coord = ((coord + one) * coord.dtype.type(size) - one) / two
    if options.padding_mode == "zeros":
        return coord
    if options.padding_mode == "reflection":
        if options.align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
    coord = np.where(np.isnan(coord), 0, coord)  # as PyTorch: NaN clamps to 0
    return np.clip(coord, 0, size - 1).astype(coord.dtype, copy=False)


def _read(planes: Array, batch: Array, x: Array, y: Array) -> Array:
    """``planes [n, h, w, c]`` at the integral float coordinates ``x``, ``y`` (``[n, h_out, w_out]``):
    ``[n, h_out, w_out, c]``, zero outside the input (and at NaN)."""
    height, width = planes.shape[1:3]
    inside = (x >= 0) & (x <= width - 1) & (y >= 0) & (y <= height - 1)
    values = planes[batch, np.where(inside, y, 0).astype(np.intp), np.where(inside, x, 0).astype(np.intp)]
    return np.where(inside[..., None], values, 0)


def grid_sample_2d(tensor: Array, grid: Array, options: GridSampleOptions) -> Array:
    """``tensor [n, c, h, w]`` sampled at ``grid [n, h_out, w_out, 2]``: ``[n, c, h_out, w_out]``."""
    dtype = np.asarray(tensor).dtype
    work = np.float32 if dtype in _LOW_PRECISION else dtype
    planes = np.asarray(tensor, dtype=work).transpose(0, 2, 3, 1)  # channels last: one gather per point
    g = np.asarray(grid, dtype=work)
    height, width = planes.shape[1:3]
    with np.errstate(all="ignore"):
        x = _source(g[..., 0], width, options)
        y = _source(g[..., 1], height, options)
        batch = np.arange(planes.shape[0])[:, None, None]
        if options.mode == "nearest":
            out = _read(planes, batch, np.rint(x), np.rint(y))
        else:
            x0, y0 = np.floor(x), np.floor(y)
            x1, y1 = x0 + 1, y0 + 1
            right, down = (x - x0)[..., None], (y - y0)[..., None]
            left, up = (x1 - x)[..., None], (y1 - y)[..., None]
            out = _read(planes, batch, x0, y0) * (left * up)
            out = out + _read(planes, batch, x1, y0) * (right * up)
            out = out + _read(planes, batch, x0, y1) * (left * down)
            out = out + _read(planes, batch, x1, y1) * (right * down)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)).astype(dtype, copy=False)
