"""Sampling at grid points: ``GridSample`` (nearest and bilinear by the backend's ``grid_sample_2d``;
bicubic written here over tensor ops, as PyTorch's ``grid_sample`` and onnxruntime compute it) and
``AffineGrid``."""

from __future__ import annotations

from burn_backend import GridSampleOptions, Tensor
from burn_backend import module as F

from .._ir import Node
from ._registry import Context, Value, register

__all__ = ["grid_sample_bicubic"]

_CUBIC_A = -0.75  # the cubic convolution's parameter, as PyTorch and onnxruntime take it


def _check_grid(node: Node) -> str | None:
    mode = node.attrs.get("mode", "bilinear" if node.opset < 20 else "linear")
    if mode not in ("bilinear", "linear", "nearest", "bicubic", "cubic"):
        return f"mode {mode!r} is not supported (linear, nearest and cubic are)"
    padding = node.attrs.get("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        return f"padding_mode {padding!r} is not supported (zeros, border and reflection are)"
    return None


@register("GridSample", attrs=("align_corners", "mode", "padding_mode"), check=_check_grid)
def grid_sample(ctx: Context, x: Value, grid: Value) -> Tensor:
    t, g = ctx.tensor(x), ctx.tensor(grid)
    if t.rank != 4:
        raise ctx.error(f"GridSample of a rank-{t.rank} input is not supported (4-d inputs are)")
    if g.rank != 4 or g.dims()[0] != t.dims()[0] or g.dims()[3] != 2:
        raise ctx.error(f"grid of shape {g.dims()} for input {t.dims()}; expected [N, H_out, W_out, 2]")
    g = g if g.dtype == t.dtype else g.cast(t.dtype)
    mode = ctx.attr("mode", "bilinear")
    padding = ctx.attr("padding_mode", "zeros")
    align = bool(int(ctx.attr("align_corners", 0)))
    if mode in ("bicubic", "cubic"):
        return grid_sample_bicubic(t, g, padding, align)
    options = GridSampleOptions("nearest" if mode == "nearest" else "bilinear", padding, align)
    return F.grid_sample_2d(t, g, options)


def grid_sample_bicubic(x: Tensor, grid: Tensor, padding_mode: str, align_corners: bool) -> Tensor:
    """Bicubic sampling of ``x`` (``[N, C, H, W]``) at ``grid`` (``[N, H_out, W_out, 2]``, x then y in
    ``[-1, 1]``): the 4x4 samples around each point weighted by the cubic convolution kernel (``A =
    -0.75``); each sample's position is padded on its own (``"border"`` clamps it, ``"reflection"``
    reflects it at the edges then clamps it, ``"zeros"`` reads zero outside), as PyTorch's
    ``grid_sample(mode="bicubic")`` does.

    Returns:
        ``[N, C, H_out, W_out]`` in ``x``'s dtype.

    Example:
        >>> y = grid_sample_bicubic(x, grid, "border", align_corners=False)  # doctest: +SKIP
    """
    n, c, h, w = x.dims()
    _, h_out, w_out, _ = grid.dims()
    ix = _unnormalize(
        grid.slice([slice(None), slice(None), slice(None), slice(0, 1)]).squeeze_dim(3), w, align_corners
    )
    iy = _unnormalize(
        grid.slice([slice(None), slice(None), slice(None), slice(1, 2)]).squeeze_dim(3), h, align_corners
    )
    x0, y0 = ix.floor(), iy.floor()
    wx, wy = _cubic_weights(ix.sub(x0)), _cubic_weights(iy.sub(y0))
    flat = x.reshape([n, c, h * w])
    out: Tensor | None = None
    for i in range(4):
        cy = _pad(y0.add_scalar(i - 1), h, padding_mode, align_corners)
        row: Tensor | None = None
        for j in range(4):
            cx = _pad(x0.add_scalar(j - 1), w, padding_mode, align_corners)
            inside = cx.greater_equal_elem(0).bool_and(cx.lower_equal_elem(w - 1))
            inside = inside.bool_and(cy.greater_equal_elem(0)).bool_and(cy.lower_equal_elem(h - 1))
            index = cy.clamp(0, h - 1).mul_scalar(w).add(cx.clamp(0, w - 1)).int()
            index = index.reshape([n, 1, h_out * w_out]).expand([n, c, h_out * w_out])
            values = flat.gather(2, index).reshape([n, c, h_out, w_out])
            term = values.mul(Tensor.where(inside, wx[j], 0.0).unsqueeze_dim(1))
            row = term if row is None else row.add(term)
        assert row is not None
        term = row.mul(wy[i].unsqueeze_dim(1))
        out = term if out is None else out.add(term)
    assert out is not None
    return out


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """Grid coordinates in ``[-1, 1]`` as positions in samples."""
    if align_corners:
        return coord.add_scalar(1.0).mul_scalar((size - 1) / 2)
    return coord.add_scalar(1.0).mul_scalar(size / 2).sub_scalar(0.5)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """The kernel's weights of the samples at offsets -1, 0, 1, 2 from the floor, for fraction ``t``."""
    a = _CUBIC_A

    def near(d: Tensor) -> Tensor:  # |d| <= 1: ((a + 2)|d| - (a + 3))|d|^2 + 1
        return d.mul_scalar(a + 2).sub_scalar(a + 3).mul(d).mul(d).add_scalar(1.0)

    def far(d: Tensor) -> Tensor:  # 1 < |d| < 2: ((a|d| - 5a)|d| + 8a)|d| - 4a
        return d.mul_scalar(a).sub_scalar(5 * a).mul(d).add_scalar(8 * a).mul(d).sub_scalar(4 * a)

    one_minus = t.neg().add_scalar(1.0)
    return [far(t.add_scalar(1.0)), near(t), near(one_minus), far(one_minus.add_scalar(1.0))]


def _pad(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A sample position (whole numbers, as floats) moved by the padding mode: clamped (``border``),
    reflected then clamped (``reflection``), or kept (``zeros``: read as zero when outside)."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        low, high = (0.0, 2.0 * (size - 1)) if align_corners else (-1.0, 2.0 * size - 1)
        return _reflect(coord, low, high).clamp(0, size - 1)
    return coord


def _reflect(coord: Tensor, twice_low: float, twice_high: float) -> Tensor:
    """``coord`` reflected into ``[twice_low / 2, twice_high / 2]`` as many times as it takes."""
    if twice_low == twice_high:
        return coord.mul_scalar(0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = coord.sub_scalar(low).abs()
    extra = distance.fmod_scalar(span)
    flips = distance.div_scalar(span).floor()
    even = flips.fmod_scalar(2.0).equal_elem(0.0)
    return Tensor.where(even, extra.add_scalar(low), extra.neg().add_scalar(span + low))


@register("AffineGrid", attrs=("align_corners",))
def affine_grid(ctx: Context, theta: Value, size: Value) -> Tensor:
    t = ctx.tensor(theta)
    dims = ctx.ints(size)
    if len(dims) != 4:
        raise ctx.error(f"AffineGrid for size {dims} is not supported (2-d grids are)")
    return F.affine_grid_2d(t, dims, bool(int(ctx.attr("align_corners", 0))))
