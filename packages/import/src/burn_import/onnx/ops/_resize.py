"""Resampling: ``Resize`` and ``Upsample`` (separable: one interpolation matrix per resized axis,
built on the host with ONNX's coordinate rules and applied as a matrix product). ``GridSample`` and
``AffineGrid`` are in ``_grid``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from burn_backend import Kind, Tensor

from .._ir import Node
from ._registry import Context, Value, register, to_tensor

__all__ = ["axis_weights"]

Array = np.ndarray[Any, Any]
_MODES = ("nearest", "linear", "cubic")
_COORDS = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _nearest(mode: str) -> Callable[[float, float], Array]:
    def coeffs(ratio: float, scale: float) -> Array:
        if float(ratio).is_integer():
            return np.array([0.0, 1.0])
        if mode == "round_prefer_floor":
            return np.array([ratio <= 0.5, ratio > 0.5], dtype=np.float64)
        if mode == "round_prefer_ceil":
            return np.array([ratio < 0.5, ratio >= 0.5], dtype=np.float64)
        return np.array([1.0, 0.0]) if mode == "floor" else np.array([0.0, 1.0])

    return coeffs


def _linear(antialias: bool) -> Callable[[float, float], Array]:
    def coeffs(ratio: float, scale: float) -> Array:
        if not antialias:
            return np.array([1 - ratio, ratio])
        s = min(scale, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, start + 2 - 2 * start) - ratio) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum()  # type: ignore[no-any-return]

    return coeffs


def _cubic(antialias: bool, a: float) -> Callable[[float, float], Array]:
    def kernel(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x**3 - (a + 3) * x**2 + 1
        if x < 2:
            return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
        return 0.0

    def coeffs(ratio: float, scale: float) -> Array:
        if not antialias:
            return np.array([kernel(ratio + 1), kernel(ratio), kernel(1 - ratio), kernel(2 - ratio)])
        s = min(scale, 1.0)
        start = int(np.floor(-2 / s) + 1)
        c = np.array([kernel(s * (i - ratio)) for i in range(start, 2 - start)])
        return c / c.sum()  # type: ignore[no-any-return]

    return coeffs


def axis_weights(
    in_size: int,
    out_size: int,
    scale: float,
    coeffs: Callable[[float, float], Array],
    coordinate_mode: str,
    roi: tuple[float, float] | None,
    exclude_outside: bool,
) -> tuple[Array, Array | None]:
    """The ``[out_size, in_size]`` interpolation matrix of one axis and, for ``tf_crop_and_resize``,
    which outputs fall outside the input (as ONNX's reference ``Resize``)."""
    out_float = scale * in_size
    y = np.arange(out_size, dtype=np.float64)
    outside = None
    if coordinate_mode == "align_corners":
        x = np.zeros(out_size) if out_float == 1 else y * (in_size - 1) / (out_float - 1)
    elif coordinate_mode == "asymmetric":
        x = y / scale
    elif coordinate_mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        if out_float == 1:
            x = np.full(out_size, (hi - lo) * (in_size - 1) / 2)
        else:
            x = y * (hi - lo) * (in_size - 1) / (out_float - 1)
        x = x + lo * (in_size - 1)
        outside = (x < 0) | (x > in_size - 1)
    elif coordinate_mode == "pytorch_half_pixel":
        x = np.full(out_size, -0.5) if out_float == 1 else (y + 0.5) / scale - 0.5
    elif coordinate_mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        adjustment = out_size / out_float
        x = in_size / 2 * (1 - adjustment) + (y + 0.5) / scale - 0.5
    base = np.floor(x).astype(np.int64)
    ratios = np.where(x == base, 1.0, x - base)
    rows = (
        np.stack([np.asarray(coeffs(float(r), scale), dtype=np.float64) for r in ratios])
        if out_size
        else (np.zeros((0, 2)))
    )
    n = rows.shape[1]
    pad = int(np.ceil(n / 2))
    padded = x + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    taps = (p + offset)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        rows = np.where((taps < 0) | (taps >= in_size), 0.0, rows)
        total = rows.sum(axis=-1, keepdims=True)
        rows = rows / np.where(total == 0, 1.0, total)
    weights = np.zeros((out_size, in_size))
    clamped = np.clip(taps, 0, in_size - 1)
    for k in range(n):
        np.add.at(weights, (np.arange(out_size), clamped[:, k]), rows[:, k])
    return weights, outside


def _apply(ctx: Context, t: Tensor, ax: int, weights: Array, outside: Array | None, fill: float) -> Tensor:
    moved = t.swap_dims(ax, t.rank - 1) if ax != t.rank - 1 else t
    w = to_tensor(weights.T.astype(t.dtype.numpy), ctx.device)
    if moved.num_elements() == 0 or weights.shape[0] == 0:
        dims = moved.dims()
        dims[-1] = weights.shape[0]
        out = Tensor.zeros(dims, ctx.device, t.dtype)
    else:
        out = moved.matmul(w)
    if outside is not None and outside.any():
        mask = to_tensor(outside, ctx.device)
        out = out.mask_fill(mask.reshape([1] * (out.rank - 1) + [-1]).expand(out.dims()), fill)
    return out.swap_dims(ax, t.rank - 1) if ax != t.rank - 1 else out


def _check_resize(node: Node) -> str | None:
    mode = node.attrs.get("mode", "nearest")
    coords = node.attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest = node.attrs.get("nearest_mode", "round_prefer_floor")
    if mode not in _MODES and mode != "bilinear":
        return f"mode {mode!r} is not one of {_MODES}"
    if coords not in _COORDS:
        return f"coordinate_transformation_mode {coords!r} is not supported"
    if nearest not in _NEAREST:
        return f"nearest_mode {nearest!r} is not supported"
    return None


def resize(
    ctx: Context,
    t: Tensor,
    scales: list[float] | None,
    sizes: list[int] | None,
    roi: list[float] | None,
    coordinate_mode: str,
) -> Tensor:
    """``Resize`` of ``t`` (float or int; ints interpolate in f64 and cast back)."""
    rank = t.rank
    axes_attr = ctx.attr("axes")
    axes = list(range(rank)) if axes_attr is None else [int(a) % rank for a in axes_attr]
    dims = t.dims()
    factor: list[float] = [1.0] * rank
    out: list[int] = list(dims)
    if sizes:
        for a, s in zip(axes, sizes):
            out[a] = int(s)
            factor[a] = s / dims[a] if dims[a] else 1.0
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            picked = [factor[a] for a in axes]
            scale = min(picked) if policy == "not_larger" else max(picked)
            for a in axes:
                factor[a] = scale
                out[a] = int(scale * dims[a] + 0.5)
    elif scales:
        for a, value in zip(axes, scales):
            factor[a] = float(value)
            out[a] = int(float(value) * dims[a])
    mode = ctx.attr("mode", "nearest")
    antialias = bool(int(ctx.attr("antialias", 0)))
    if mode == "nearest":
        coeffs = _nearest(ctx.attr("nearest_mode", "round_prefer_floor"))
    elif mode == "cubic":
        coeffs = _cubic(antialias, float(ctx.attr("cubic_coeff_a", -0.75)))
    else:
        coeffs = _linear(antialias)
    work = t if t.kind is Kind.FLOAT else t.float("f64")
    roi_pairs = None
    if roi:
        full_roi = [0.0] * rank + [1.0] * rank
        if len(roi) == 2 * len(axes) and len(axes) != rank:
            for i, a in enumerate(axes):
                full_roi[a], full_roi[a + rank] = roi[i], roi[i + len(axes)]
        else:
            full_roi = list(roi)
        roi_pairs = [(full_roi[a], full_roi[a + rank]) for a in range(rank)]
    fill = float(ctx.attr("extrapolation_value", 0.0))
    exclude = bool(int(ctx.attr("exclude_outside", 0)))
    for a in range(rank):
        pair = None if roi_pairs is None else roi_pairs[a]
        if (
            np.isclose(factor[a], 1.0)
            and out[a] == dims[a]
            and (
                pair is None
                or coordinate_mode != "tf_crop_and_resize"
                or (np.isclose(pair[0], 0) and np.isclose(pair[1], 1))
            )
        ):
            continue
        weights, outside = axis_weights(dims[a], out[a], factor[a], coeffs, coordinate_mode, pair, exclude)
        work = _apply(ctx, work, a, weights, outside, fill)
    if t.kind is not Kind.FLOAT:
        info = np.iinfo(t.dtype.numpy)
        return work.round().clamp(float(info.min), float(info.max)).int(t.dtype)
    return work


@register(
    "Resize",
    attrs=(
        "antialias",
        "axes",
        "coordinate_transformation_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "keep_aspect_ratio_policy",
        "mode",
        "nearest_mode",
    ),
    check=_check_resize,
)
def resize_op(ctx: Context, x: Value, roi: Value = None, scales: Value = None, sizes: Value = None) -> Tensor:
    t = ctx.tensor(x)
    if ctx.opset < 11:  # Resize-10: (X, scales), asymmetric coordinates
        legacy = [float(s) for s in ctx.array(roi).reshape(-1)]
        return resize(ctx, t, legacy, None, None, "asymmetric")
    scale_list = (
        None
        if scales is None or ctx.array(scales).size == 0
        else [float(s) for s in ctx.array(scales).reshape(-1)]
    )
    size_list = None if sizes is None or ctx.array(sizes).size == 0 else ctx.ints(sizes)
    roi_list = (
        None if roi is None or ctx.array(roi).size == 0 else [float(r) for r in ctx.array(roi).reshape(-1)]
    )
    coords = ctx.attr("coordinate_transformation_mode", "half_pixel")
    return resize(ctx, t, scale_list, size_list, roi_list, coords)


@register("Upsample", attrs=("mode", "scales"), check=_check_resize)
def upsample(ctx: Context, x: Value, scales: Value = None) -> Tensor:
    t = ctx.tensor(x)
    factors = ctx.attr("scales") if scales is None else ctx.array(scales).reshape(-1).tolist()
    if ctx.attr("mode", "nearest") == "nearest":
        out = t
        for a, s in enumerate(factors):
            if float(s).is_integer() and s != 1:
                out = out.unsqueeze_dim(a + 1).repeat_dim(a + 1, int(s)).flatten(a, a + 1)
        return out
    return resize(ctx, t, [float(s) for s in factors], None, None, "asymmetric")
