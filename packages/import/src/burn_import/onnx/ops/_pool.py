"""Pooling: ``MaxPool`` (with indices), ``AveragePool``, ``LpPool``, their global forms and
``MaxUnpool``.

The backends' 1-d/2-d pools run where their semantics match ONNX's (symmetric padding within half the
kernel, no ceil overhang); everything else (3-d, asymmetric or ``auto_pad`` padding, ceil mode,
dilations of average pools, indices in column-major order) goes through windows made with
``Tensor.unfold``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import Tensor
from burn_backend import module as F

from ._conv import check_auto_pad, spatial_pads
from ._registry import Context, Value, register, to_tensor
from ._util import pad_constant

__all__: list[str] = []

_POOL_ATTRS = ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides")


def _geometry(
    ctx: Context, t: Tensor
) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """Kernel, strides, dilations, begin and end pads, and output sizes of a pooling node."""
    n = t.rank - 2
    sizes = t.dims()[2:]
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides = [int(s) for s in (ctx.attr("strides") or [1] * n)]
    dilations = [int(d) for d in (ctx.attr("dilations") or [1] * n)]
    begins, ends = spatial_pads(ctx, sizes, kernel, strides, dilations)
    ceil = int(ctx.attr("ceil_mode", 0))
    outs = []
    for size, k, s, d, b, e in zip(sizes, kernel, strides, dilations, begins, ends):
        span = (k - 1) * d + 1
        if ctx.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
            out = -(-size // s)
        elif ctx.attr("auto_pad", "NOTSET") == "VALID":
            out = (size - span) // s + 1
        else:
            extent = size + b + e - span
            out = (-(-extent // s) if ceil else extent // s) + 1
            if ceil and (out - 1) * s >= size + b:
                out -= 1
        outs.append(max(out, 0))
    return kernel, strides, dilations, begins, ends, outs


def _windows(t: Tensor, kernel: list[int], strides: list[int], dilations: list[int]) -> Tensor:
    """``t`` (already padded) unfolded into windows: ``[N, C, *out, *kernel]``."""
    n = len(kernel)
    for i in range(n):
        span = (kernel[i] - 1) * dilations[i] + 1
        t = t.unfold(2 + i, span, strides[i])
        if dilations[i] > 1:
            t = t.slice([slice(None)] * (t.rank - 1) + [slice(0, span, dilations[i])])
    return t


def _padded(ctx: Context, t: Tensor, begins: list[int], ends: list[int], outs: list[int], kernel: list[int],
            strides: list[int], dilations: list[int], fill: float) -> Tensor:  # fmt: skip
    """``t`` padded by the pads, plus whatever the last (ceil mode) window overhangs."""
    extra = []
    for size, k, s, d, b, e, o in zip(t.dims()[2:], kernel, strides, dilations, begins, ends, outs):
        need = (o - 1) * s + (k - 1) * d + 1
        extra.append(max(need - (size + b + e), 0))
    ends = [e + x for e, x in zip(ends, extra)]
    t = pad_constant(t, [0, 0, *begins], [0, 0, *ends], fill, ctx)
    return t


def _crop(t: Tensor, outs: list[int]) -> Tensor:
    region = [slice(None), slice(None)] + [slice(0, o) for o in outs]
    return t.slice(region + [slice(None)] * (t.rank - 2 - len(outs)))


def _reduce_windows(t: Tensor, n: int, method: str) -> Tensor:
    for _ in range(n):
        t = getattr(t, method)(t.rank - 1).squeeze_dim(t.rank - 1)
    return t


def _fast_ok(ctx: Context, t: Tensor, kernel: list[int], begins: list[int], ends: list[int]) -> bool:
    return (
        t.rank in (3, 4)
        and begins == ends
        and all(p <= k // 2 for p, k in zip(begins, kernel))
        and not int(ctx.attr("ceil_mode", 0))
        and ctx.attr("auto_pad", "NOTSET") in ("NOTSET", "", "VALID")
    )


@register("MaxPool", attrs=(*_POOL_ATTRS, "storage_order"), check=check_auto_pad)
def max_pool(ctx: Context, x: Value) -> Any:
    t = ctx.tensor(x)
    kernel, strides, dilations, begins, ends, outs = _geometry(ctx, t)
    n = len(kernel)
    want_indices = ctx.wants(1)
    if not want_indices and _fast_ok(ctx, t, kernel, begins, ends) and t.dtype.is_float:
        if n == 1:
            return F.max_pool1d(t, kernel[0], strides[0], begins[0], dilations[0])
        return F.max_pool2d(t, tuple(kernel), tuple(strides), tuple(begins), tuple(dilations))
    low = -math.inf if t.dtype.is_float else int(np.iinfo(t.dtype.numpy).min)
    padded = _padded(ctx, t, begins, ends, outs, kernel, strides, dilations, low)
    win = _crop(_windows(padded, kernel, strides, dilations), outs)
    values = _reduce_windows(win, n, "max_dim")
    if not want_indices:
        return values
    # indices: the flat position in the input of each maximum (row- or column-major by storage_order)
    dims = t.dims()
    positions = np.arange(math.prod(dims), dtype=np.int64).reshape(dims)
    if int(ctx.attr("storage_order", 0)):
        spatial = dims[2:]
        col = np.arange(math.prod(spatial), dtype=np.int64).reshape(spatial[::-1]).T
        plane = math.prod(spatial)
        base = (np.arange(dims[0] * dims[1], dtype=np.int64) * plane).reshape(dims[0], dims[1], *[1] * n)
        positions = base + col
    index_t = to_tensor(positions.astype(np.float64), ctx.device)
    index_p = _padded(ctx, index_t, begins, ends, outs, kernel, strides, dilations, -1.0)
    index_w = _crop(_windows(index_p, kernel, strides, dilations), outs)
    flat_v = win.reshape([*win.dims()[: 2 + n], -1])
    flat_i = index_w.reshape([*index_w.dims()[: 2 + n], -1])
    arg = flat_v.argmax(flat_v.rank - 1)
    picked = flat_i.gather(flat_i.rank - 1, arg).squeeze_dim(flat_i.rank - 1)
    return values, picked.int("i64")


@register("AveragePool", attrs=(*_POOL_ATTRS, "count_include_pad"), check=check_auto_pad)
def average_pool(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    kernel, strides, dilations, begins, ends, outs = _geometry(ctx, t)
    n = len(kernel)
    include = bool(int(ctx.attr("count_include_pad", 0)))
    if _fast_ok(ctx, t, kernel, begins, ends) and all(d == 1 for d in dilations):
        if n == 1:
            return F.avg_pool1d(t, kernel[0], strides[0], begins[0], include)
        return F.avg_pool2d(t, tuple(kernel), tuple(strides), tuple(begins), include)
    padded = _padded(ctx, t, begins, ends, outs, kernel, strides, dilations, 0.0)
    sums = _reduce_windows(_crop(_windows(padded, kernel, strides, dilations), outs), n, "sum_dim")
    ones = Tensor.ones([1, 1, *t.dims()[2:]], ctx.device, t.dtype)
    if include and ctx.attr("auto_pad", "NOTSET") in ("NOTSET", ""):
        # the declared pads count, the ceil-mode overhang does not
        ones = pad_constant(ones, [0, 0, *begins], [0, 0, *ends], 1.0, ctx)
        counted = _padded(ctx, ones, [0] * n, [0] * n, outs, kernel, strides, dilations, 0.0)
    else:
        counted = _padded(ctx, ones, begins, ends, outs, kernel, strides, dilations, 0.0)
    counts = _reduce_windows(_crop(_windows(counted, kernel, strides, dilations), outs), n, "sum_dim")
    return sums.div(counts)


@register("LpPool", attrs=(*_POOL_ATTRS, "p"), check=check_auto_pad)
def lp_pool(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    p = float(ctx.attr("p", 2))
    kernel, strides, dilations, begins, ends, outs = _geometry(ctx, t)
    padded = _padded(ctx, t.abs().powf(p), begins, ends, outs, kernel, strides, dilations, 0.0)
    sums = _reduce_windows(_crop(_windows(padded, kernel, strides, dilations), outs), len(kernel), "sum_dim")
    return sums.powf(1.0 / p)


def _global(t: Tensor, method: str) -> Tensor:
    for d in range(2, t.rank):
        t = getattr(t, method)(d)
    return t


@register("GlobalAveragePool")
def global_average_pool(ctx: Context, x: Value) -> Tensor:
    return _global(ctx.tensor(x), "mean_dim")


@register("GlobalMaxPool")
def global_max_pool(ctx: Context, x: Value) -> Tensor:
    return _global(ctx.tensor(x), "max_dim")


@register("GlobalLpPool", attrs=("p",))
def global_lp_pool(ctx: Context, x: Value) -> Tensor:
    p = float(ctx.attr("p", 2))
    return _global(ctx.tensor(x).abs().powf(p), "sum_dim").powf(1.0 / p)


@register("MaxUnpool", attrs=("kernel_shape", "pads", "strides"))
def max_unpool(ctx: Context, x: Value, indices: Value, output_shape: Value = None) -> Tensor:
    t = ctx.tensor(x)
    idx = ctx.tensor(indices).int("i64")
    n = t.rank - 2
    kernel = list(ctx.attr("kernel_shape"))
    strides = list(ctx.attr("strides") or [1] * n)
    pads = list(ctx.attr("pads") or [0] * (2 * n))
    spatial = [
        (i - 1) * s + k - pads[d] - pads[d + n]
        for d, (i, s, k) in enumerate(zip(t.dims()[2:], strides, kernel))
    ]
    shape = [*t.dims()[:2], *spatial]
    out = Tensor.zeros([math.prod(shape)], ctx.device, t.dtype)
    out = out.scatter(0, idx.reshape([-1]), t.reshape([-1]), "assign").reshape(shape)
    if output_shape is not None:  # the indices address the default shape; the rest is zeros
        target = ctx.ints(output_shape)
        out = pad_constant(out, [0] * len(shape), [w - s for w, s in zip(target, shape)], 0.0, ctx)
    return out
