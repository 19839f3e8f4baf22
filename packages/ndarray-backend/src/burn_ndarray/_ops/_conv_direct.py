"""Direct numba kernels for convolutions with few channels per group (depthwise and the like).

A grouped convolution whose groups hold one or a few channels is a GEMM with ``K = channels per group *
taps`` (9 for a depthwise 3x3) per group: im2col then copies every sample ``taps`` times to run tiny
products, six to ten times the time of a GEMM with the same FLOPs. Here each (batch item, channel) pair
is computed on its own, in cache: its input is copied once into a zeroed buffer that holds the padding
and, with strides, one plane per stride phase (every ``stride``-th sample), so that each tap reads one
contiguous run of the buffer for a contiguous run of outputs computed at the buffer's padded width
(the junk past each row is never copied out). The forward adds nine taps a pass (a 3x3 kernel in one),
the weight gradient takes nine dot products a pass, and the input gradient runs the forward's passes
backwards (each tap adding into the pair's own buffer, then the input's samples gathered back), so two
pairs never write the same memory. Where the padded width would multiply an inf or NaN into a result
(a weight gradient with such an input, an input gradient with such a weight) the exact loops over
the windows alone run instead.

Shapes of any rank up to 3 are viewed as 3-d (leading size-1 dims). The pairs are split over numba's
threads as the thread policy grants them (``_threads``). Arrays are f32 or f64: ``burn_backend.array``
widens f16 and bf16 to f32 before the binding's kernels run. This module imports numba: import it only
after ``burn_ndarray._numba.kernels()`` returned a module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from .. import _threads

Array = Any
Sizes = Sequence[int]
MAX_PAIRS = 16
"""The most ``in channels per group * out channels per group`` the direct kernels take: past that a
group's GEMM is large enough for BLAS to win (a depthwise convolution with a channel multiplier of 4 is
4; a dense convolution is the square of its channels)."""
_PARALLEL_WORK = 1 << 16
"""Multiply-adds below which a kernel runs on the calling thread alone (a parallel launch costs more)."""


def suits(in_per_group: int, out_per_group: int, groups: int, rank: int) -> bool:
    """Whether a convolution with these channel counts per group takes the direct kernels: grouped,
    with at most ``MAX_PAIRS`` channel pairs per group, and at most 3 spatial dims."""
    return groups > 1 and in_per_group * out_per_group <= MAX_PAIRS and rank <= 3


def _span(size: int, offset: int, step: int, extent: int) -> tuple[int, int]:
    """The outputs ``o`` in ``[0, size)`` whose sample ``o * step + offset`` lies in ``[0, extent)``,
    as ``(first, stop)`` (empty when ``stop <= first``)."""
    first = -(offset // step) if offset < 0 else 0
    stop = min(size, (extent - offset + step - 1) // step) if extent > offset else 0
    return first, stop


_span_jit = njit(cache=True, inline="always")(_span)


@njit(cache=True, error_model="numpy")
def _input_grad_pair(
    grad: Any, w: Any, out: Any, stride: Any, padding: Any, dilation: Any
) -> None:  # pragma: no cover - compiled
    # grad: [out channels of the group, OD, OH, OW], w: [same, KD, KH, KW] (this input channel's
    # slice), out: [D, H, W], the input channel's gradient
    out[:] = 0.0
    depth, height, width = out.shape
    sd, sh, sw = stride
    for j in range(w.shape[0]):
        for kd in range(w.shape[1]):
            od0, od1 = _span_jit(grad.shape[1], kd * dilation[0] - padding[0], sd, depth)
            for kh in range(w.shape[2]):
                oh0, oh1 = _span_jit(grad.shape[2], kh * dilation[1] - padding[1], sh, height)
                for kw in range(w.shape[3]):
                    off = kw * dilation[2] - padding[2]
                    ow0, ow1 = _span_jit(grad.shape[3], off, sw, width)
                    count = ow1 - ow0
                    if count <= 0:
                        continue
                    v = w[j, kd, kh, kw]
                    first = ow0 * sw + off
                    for od in range(od0, od1):
                        row_d = od * sd + kd * dilation[0] - padding[0]
                        for oh in range(oh0, oh1):
                            row_h = oh * sh + kh * dilation[1] - padding[1]
                            dst = out[row_d, row_h, first : first + (count - 1) * sw + 1 : sw]
                            src = grad[j, od, oh, ow0:ow1]
                            for i in range(count):
                                dst[i] += v * src[i]


# reassoc: the dot products vectorize (the order of a sum changes, not which terms it has)
@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _weight_grad_pair(
    x: Any, grad: Any, out: Any, stride: Any, padding: Any, dilation: Any
) -> None:  # pragma: no cover - compiled
    # x: [batch, D, H, W] (one input channel), grad: [batch, OD, OH, OW] (one output channel),
    # out: [KD, KH, KW], the weight gradient of that pair
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    sd, sh, sw = stride
    for kd in range(out.shape[0]):
        od0, od1 = _span_jit(grad.shape[1], kd * dilation[0] - padding[0], sd, depth)
        for kh in range(out.shape[1]):
            oh0, oh1 = _span_jit(grad.shape[2], kh * dilation[1] - padding[1], sh, height)
            for kw in range(out.shape[2]):
                off = kw * dilation[2] - padding[2]
                ow0, ow1 = _span_jit(grad.shape[3], off, sw, width)
                count = ow1 - ow0
                total = out.dtype.type(0.0)
                if count > 0:
                    first = ow0 * sw + off
                    for b in range(x.shape[0]):
                        for od in range(od0, od1):
                            row_d = od * sd + kd * dilation[0] - padding[0]
                            for oh in range(oh0, oh1):
                                row_h = oh * sh + kh * dilation[1] - padding[1]
                                src = x[b, row_d, row_h, first : first + (count - 1) * sw + 1 : sw]
                                g = grad[b, od, oh, ow0:ow1]
                                for i in range(count):
                                    total += g[i] * src[i]
                out[kd, kh, kw] = total


@njit(cache=True)
def _place(src: Any, buf: Any, low: Any) -> None:  # pragma: no cover - compiled
    """Copy the 3-d ``src`` into the 3-d ``buf`` at offset ``low`` (cropped where it falls outside)."""
    a0, a1 = max(0, -low[0]), min(src.shape[0], buf.shape[0] - low[0])
    b0, b1 = max(0, -low[1]), min(src.shape[1], buf.shape[1] - low[1])
    c0, c1 = max(0, -low[2]), min(src.shape[2], buf.shape[2] - low[2])
    if c1 <= c0:
        return
    count = c1 - c0
    # a loop from 0 over row views: numba's slice assignment costs more than a short row's copy, and
    # indices from a variable start keep a sign check in the loop
    for a in range(a0, a1):
        for b in range(b0, b1):
            dst = buf[a + low[0], b + low[1], c0 + low[2] : c1 + low[2]]
            row = src[a, b, c0:c1]
            for i in range(count):
                dst[i] = row[i]


@njit(cache=True)
def _wide(out: Any, kernel: Any, stride: Any, dilation: Any) -> tuple[Any, Any, int]:  # pragma: no cover
    """The layout of the padded input in a buffer: one plane per stride phase (``stride``-th samples,
    each plane ``extent``), so that every tap reads a contiguous run of one plane for contiguous
    outputs. Returns ``extent``, each tap's offset into the flat buffer and the length of the wide
    output, output ``(d, h, w)`` being at ``(d * e1 + h) * e2 + w`` (the junk past each row is never
    copied out). Tap ``k`` of output ``o`` reads padded sample ``o * stride + k * dilation``: plane
    ``k * dilation % stride``, position ``o + k * dilation // stride``."""
    e0 = out[0] + (kernel[0] - 1) * dilation[0] // stride[0]
    e1 = out[1] + (kernel[1] - 1) * dilation[1] // stride[1]
    e2 = out[2] + (kernel[2] - 1) * dilation[2] // stride[2]
    plane = e0 * e1 * e2
    offsets = np.empty(kernel[0] * kernel[1] * kernel[2], dtype=np.int64)
    t = 0
    for kd in range(kernel[0]):
        qd, rd = divmod(kd * dilation[0], stride[0])
        for kh in range(kernel[1]):
            qh, rh = divmod(kh * dilation[1], stride[1])
            for kw in range(kernel[2]):
                qw, rw = divmod(kw * dilation[2], stride[2])
                phase = (rd * stride[1] + rh) * stride[2] + rw
                offsets[t] = phase * plane + (qd * e1 + qh) * e2 + qw
                t += 1
    length = ((out[0] - 1) * e1 + out[1] - 1) * e2 + out[2]
    return (e0, e1, e2), offsets, length


@njit(cache=True)
def _maps(sizes: Any, padding: Any, stride: Any, extent: Any) -> tuple[Any, Any, Any]:  # pragma: no cover
    """Per dim, where each input sample lands in ``_wide``'s buffer (summed over the dims: a flat
    index), or -1 where no window reaches it."""
    plane = extent[0] * extent[1] * extent[2]
    scales = (
        (stride[1] * stride[2] * plane, extent[1] * extent[2]),
        (stride[2] * plane, extent[2]),
        (plane, 1),
    )
    maps = (np.empty(sizes[0], np.int64), np.empty(sizes[1], np.int64), np.empty(sizes[2], np.int64))
    for dim in range(3):
        target = maps[dim]
        for i in range(sizes[dim]):
            q, r = divmod(i + padding[dim], stride[dim])
            ok = i + padding[dim] >= 0 and q < extent[dim]
            target[i] = r * scales[dim][0] + q * scales[dim][1] if ok else -1
    return maps


@njit(cache=True)
def _fill(src: Any, buf: Any, maps: Any) -> None:  # pragma: no cover - compiled
    """Scatter the 3-d ``src`` into the flat ``buf`` where ``maps`` put its samples."""
    md, mh, mw = maps
    for a in range(src.shape[0]):
        if md[a] < 0:
            continue
        for b in range(src.shape[1]):
            if mh[b] < 0:
                continue
            base = md[a] + mh[b]
            row = src[a, b]
            for c in range(src.shape[2]):
                if mw[c] >= 0:
                    buf[base + mw[c]] = row[c]


@njit(cache=True, inline="always")
def _load(src: Any, plane: Any, extent: Any, padding: Any, maps: Any, unit: bool) -> None:  # pragma: no cover
    """``src`` into ``_wide``'s buffer: by rows at unit strides (one phase), else sample by sample."""
    if unit:
        _place(src, plane.reshape(extent), padding)
    else:
        _fill(src, plane, maps)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _forward_pair_wide(
    x: Any, w: Any, out: Any, bias: float, layout: Any, plane: Any, acc: Any, offsets: Any, extent: Any
) -> None:  # pragma: no cover - compiled
    # each channel's padded input in _wide's buffer (its padding zero, the same places every time),
    # each tap one long contiguous pass at the padded width
    padding, maps, unit = layout
    length = acc.shape[0]
    acc[:] = 0.0
    taps = offsets.shape[0]
    for c in range(w.shape[0]):
        _load(x[c], plane, extent, padding, maps, unit)
        weights = w[c].reshape(taps)
        t = 0
        while t + 9 <= taps:  # nine taps a pass (a 3x3 kernel in one): the accumulator in registers
            s0, s1, s2 = plane[offsets[t] :], plane[offsets[t + 1] :], plane[offsets[t + 2] :]
            s3, s4, s5 = plane[offsets[t + 3] :], plane[offsets[t + 4] :], plane[offsets[t + 5] :]
            s6, s7, s8 = plane[offsets[t + 6] :], plane[offsets[t + 7] :], plane[offsets[t + 8] :]
            v0, v1, v2, v3, v4 = weights[t], weights[t + 1], weights[t + 2], weights[t + 3], weights[t + 4]
            v5, v6, v7, v8 = weights[t + 5], weights[t + 6], weights[t + 7], weights[t + 8]
            for i in range(length):
                acc[i] += (
                    v0 * s0[i] + v1 * s1[i] + v2 * s2[i] + v3 * s3[i] + v4 * s4[i] + v5 * s5[i]
                    + v6 * s6[i] + v7 * s7[i] + v8 * s8[i]
                )  # fmt: skip
            t += 9
        while t + 3 <= taps:  # three taps a pass: a third of the accumulator's loads and stores
            v0, v1, v2 = weights[t], weights[t + 1], weights[t + 2]
            s0 = plane[offsets[t] : offsets[t] + length]
            s1 = plane[offsets[t + 1] : offsets[t + 1] + length]
            s2 = plane[offsets[t + 2] : offsets[t + 2] + length]
            for i in range(length):
                acc[i] += v0 * s0[i] + v1 * s1[i] + v2 * s2[i]
            t += 3
        while t < taps:
            v = weights[t]
            src = plane[offsets[t] : offsets[t] + length]
            for i in range(length):
                acc[i] += v * src[i]
            t += 1
    for od in range(out.shape[0]):
        for oh in range(out.shape[1]):
            start = (od * extent[1] + oh) * extent[2]
            row = acc[start : start + out.shape[2]]
            dst = out[od, oh]
            for i in range(out.shape[2]):
                dst[i] = row[i] + bias


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _weight_grad_pair_wide(
    x: Any, grad: Any, out: Any, layout: Any, plane: Any, wide: Any, offsets: Any, extent: Any
) -> None:  # pragma: no cover - compiled
    # per batch item, the padded input in _wide's buffer and the gradient at the padded width (its
    # junk columns zero, the same places every time), then contiguous dot products per tap
    padding, maps, unit = layout
    length = wide.shape[0]
    taps = offsets.shape[0]
    totals = np.zeros(taps, dtype=out.dtype)
    for b in range(x.shape[0]):
        _load(x[b], plane, extent, padding, maps, unit)
        for od in range(grad.shape[1]):
            for oh in range(grad.shape[2]):
                start = (od * extent[1] + oh) * extent[2]
                dst = wide[start : start + grad.shape[3]]
                row = grad[b, od, oh]
                for i in range(grad.shape[3]):
                    dst[i] = row[i]
        t = 0
        while t + 9 <= taps:  # nine dot products a pass (a 3x3 kernel in one)
            s0, s1, s2 = plane[offsets[t] :], plane[offsets[t + 1] :], plane[offsets[t + 2] :]
            s3, s4, s5 = plane[offsets[t + 3] :], plane[offsets[t + 4] :], plane[offsets[t + 5] :]
            s6, s7, s8 = plane[offsets[t + 6] :], plane[offsets[t + 7] :], plane[offsets[t + 8] :]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = out.dtype.type(0.0)
            for i in range(length):
                g = wide[i]
                a0 += g * s0[i]
                a1 += g * s1[i]
                a2 += g * s2[i]
                a3 += g * s3[i]
                a4 += g * s4[i]
                a5 += g * s5[i]
                a6 += g * s6[i]
                a7 += g * s7[i]
                a8 += g * s8[i]
            totals[t] += a0
            totals[t + 1] += a1
            totals[t + 2] += a2
            totals[t + 3] += a3
            totals[t + 4] += a4
            totals[t + 5] += a5
            totals[t + 6] += a6
            totals[t + 7] += a7
            totals[t + 8] += a8
            t += 9
        while t + 3 <= taps:  # three dot products a pass over the gradient
            s0 = plane[offsets[t] : offsets[t] + length]
            s1 = plane[offsets[t + 1] : offsets[t + 1] + length]
            s2 = plane[offsets[t + 2] : offsets[t + 2] + length]
            a0 = a1 = a2 = out.dtype.type(0.0)
            for i in range(length):
                g = wide[i]
                a0 += g * s0[i]
                a1 += g * s1[i]
                a2 += g * s2[i]
            totals[t] += a0
            totals[t + 1] += a1
            totals[t + 2] += a2
            t += 3
        while t < taps:
            src = plane[offsets[t] : offsets[t] + length]
            total = out.dtype.type(0.0)
            for i in range(length):
                total += wide[i] * src[i]
            totals[t] += total
            t += 1
    flat = out.reshape(taps)
    for t in range(taps):
        flat[t] = totals[t]


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _input_grad_pair_wide(
    grad: Any, w: Any, out: Any, maps: Any, plane: Any, wide: Any, offsets: Any, extent: Any
) -> None:  # pragma: no cover - compiled
    # the forward's passes run backwards: each out channel's gradient at the padded width (junk zero),
    # every tap adding its weight times it into _wide's buffer, then the input's samples gathered back
    # grad: [out channels of the group, OD, OH, OW], w: [same, KD, KH, KW] (this input channel's)
    plane[:] = 0.0
    taps = offsets.shape[0]
    for j in range(grad.shape[0]):
        _spread(grad[j], wide, extent, offsets, plane, np.ascontiguousarray(w[j]).reshape(taps))
    md, mh, mw = maps
    for a in range(out.shape[0]):
        for b in range(out.shape[1]):
            row = out[a, b]
            for c in range(out.shape[2]):
                inside = md[a] >= 0 and mh[b] >= 0 and mw[c] >= 0
                row[c] = plane[md[a] + mh[b] + mw[c]] if inside else 0.0


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _spread(
    grad: Any, wide: Any, extent: Any, offsets: Any, plane: Any, weights: Any
) -> None:  # pragma: no cover - compiled
    # grad: [OD, OH, OW] written at the wide layout's rows, then every tap's contribution
    length = wide.shape[0]
    width = grad.shape[2]
    for od in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            dst = wide[(od * extent[1] + oh) * extent[2] :]
            row = grad[od, oh]
            for i in range(width):
                dst[i] = row[i]
    for t in range(offsets.shape[0]):
        v = weights[t]
        dst = plane[offsets[t] : offsets[t] + length]
        for i in range(length):
            dst[i] += v * wide[i]


@njit(cache=True)
def _forward_range(
    x: Any, w: Any, bias: Any, y: Any, stride: Any, padding: Any, dilation: Any, first: int, last: int
) -> None:  # pragma: no cover - compiled
    """Output planes ``first`` to ``last`` (flat over batch and out channels) of the forward."""
    out_channels, per_group = w.shape[0], w.shape[1]
    per_out = out_channels // (x.shape[1] // per_group)
    unit = stride[0] == 1 and stride[1] == 1 and stride[2] == 1
    extent, offsets, length = _wide(y.shape[2:], w.shape[2:], stride, dilation)
    layout = (padding, _maps(x.shape[2:], padding, stride, extent), unit)
    # the buffers of one range of planes: allocated once, the padding written once
    phases = stride[0] * stride[1] * stride[2]
    plane = np.zeros(phases * extent[0] * extent[1] * extent[2], dtype=y.dtype)
    acc = np.zeros(max(length, 0), dtype=y.dtype)
    for t in range(first, last):
        b, oc = t // out_channels, t % out_channels
        c0 = oc // per_out * per_group
        value = bias[oc] if bias.shape[0] > 0 else 0.0
        _forward_pair_wide(
            x[b, c0 : c0 + per_group], w[oc], y[b, oc], value, layout, plane, acc, offsets, extent
        )


@njit(cache=True)
def _input_range(
    grad: Any, w: Any, dx: Any, stride: Any, padding: Any, dilation: Any, exact: bool, first: int, last: int
) -> None:  # pragma: no cover - compiled
    """Input-gradient planes ``first`` to ``last`` (flat over batch and input channels); ``exact``
    multiplies only the gradient's samples (for a weight with an inf or NaN)."""
    channels, per_group = dx.shape[1], w.shape[1]
    per_out = w.shape[0] // (channels // per_group)
    extent, offsets, length = _wide(grad.shape[2:], w.shape[2:], stride, dilation)
    maps = _maps(dx.shape[2:], padding, stride, extent)
    phases = stride[0] * stride[1] * stride[2]
    plane = np.zeros(0 if exact else phases * extent[0] * extent[1] * extent[2], dtype=dx.dtype)
    wide = np.zeros(0 if exact else max(length, 0), dtype=dx.dtype)
    for t in range(first, last):
        b, ic = t // channels, t % channels
        g, c = ic // per_group, ic % per_group
        o0 = g * per_out
        if exact:
            _input_grad_pair(
                grad[b, o0 : o0 + per_out], w[o0 : o0 + per_out, c], dx[b, ic], stride, padding, dilation
            )
        else:
            _input_grad_pair_wide(
                grad[b, o0 : o0 + per_out],
                w[o0 : o0 + per_out, c],
                dx[b, ic],
                maps,
                plane,
                wide,
                offsets,
                extent,
            )


@njit(cache=True)
def _weight_range(
    x: Any, grad: Any, dw: Any, stride: Any, padding: Any, dilation: Any, first: int, last: int
) -> None:  # pragma: no cover - compiled
    """Weight-gradient pairs ``first`` to ``last`` (flat over out channels and channels per group)."""
    per_group = dw.shape[1]
    per_out = dw.shape[0] // (x.shape[1] // per_group)
    unit = stride[0] == 1 and stride[1] == 1 and stride[2] == 1
    extent, offsets, length = _wide(grad.shape[2:], dw.shape[2:], stride, dilation)
    layout = (padding, _maps(x.shape[2:], padding, stride, extent), unit)
    phases = stride[0] * stride[1] * stride[2]
    plane = np.zeros(phases * extent[0] * extent[1] * extent[2], dtype=dw.dtype)
    wide = np.zeros(max(length, 0), dtype=dw.dtype)
    for t in range(first, last):
        oc, c = t // per_group, t % per_group
        ic = oc // per_out * per_group + c
        _weight_grad_pair_wide(x[:, ic], grad[:, oc], dw[oc, c], layout, plane, wide, offsets, extent)


@njit(cache=True)
def _weight_exact(
    x: Any, grad: Any, dw: Any, stride: Any, padding: Any, dilation: Any, first: int, last: int
) -> None:  # pragma: no cover - compiled
    """``_weight_range`` on the exact windows only (no padded width: inputs with an inf or NaN)."""
    per_group = dw.shape[1]
    per_out = dw.shape[0] // (x.shape[1] // per_group)
    for t in range(first, last):
        oc, c = t // per_group, t % per_group
        ic = oc // per_out * per_group + c
        _weight_grad_pair(x[:, ic], grad[:, oc], dw[oc, c], stride, padding, dilation)


@njit(cache=True, parallel=True)
def _forward_parallel(
    x: Any, w: Any, bias: Any, y: Any, stride: Any, padding: Any, dilation: Any, parts: int
) -> None:  # pragma: no cover - compiled
    pairs = y.shape[0] * y.shape[1]
    for p in prange(parts):
        _forward_range(x, w, bias, y, stride, padding, dilation, p * pairs // parts, (p + 1) * pairs // parts)


@njit(cache=True, parallel=True)
def _input_parallel(
    grad: Any, w: Any, dx: Any, stride: Any, padding: Any, dilation: Any, exact: bool, parts: int
) -> None:  # pragma: no cover - compiled
    pairs = dx.shape[0] * dx.shape[1]
    for p in prange(parts):
        first, last = p * pairs // parts, (p + 1) * pairs // parts
        _input_range(grad, w, dx, stride, padding, dilation, exact, first, last)


@njit(cache=True, parallel=True)
def _weight_parallel(
    x: Any, grad: Any, dw: Any, stride: Any, padding: Any, dilation: Any, parts: int
) -> None:  # pragma: no cover - compiled
    pairs = dw.shape[0] * dw.shape[1]
    for p in prange(parts):
        _weight_range(x, grad, dw, stride, padding, dilation, p * pairs // parts, (p + 1) * pairs // parts)


def _as_3d(a: Array) -> Array:
    """``[n, c, *spatial]`` as ``[n, c, D, H, W]`` (leading size-1 dims), C-contiguous."""
    a = np.ascontiguousarray(a)
    return a.reshape(*a.shape[:2], *(1,) * (5 - a.ndim), *a.shape[2:])


def _geometry(stride: Sizes, padding: Sizes, dilation: Sizes) -> tuple[Any, Any, Any]:
    lead = 3 - len(stride)
    return (
        (1,) * lead + tuple(int(s) for s in stride),
        (0,) * lead + tuple(int(p) for p in padding),
        (1,) * lead + tuple(int(d) for d in dilation),
    )


def _launch(serial: Any, parallel: Any, args: tuple[Any, ...], pairs: int, work: int) -> None:
    """``serial(*args, 0, pairs)`` on this thread, or ``parallel(*args, parts)`` over numba's threads
    (as many as the thread policy grants this thread) where the work pays for a parallel launch: a few
    ranges of pairs per thread, so that uneven ranges balance."""
    threads = _threads.numba_threads() if pairs > 1 and work >= _PARALLEL_WORK else 1
    if threads > 1:
        parallel(*args, min(pairs, 4 * threads))
    else:
        serial(*args, 0, pairs)


def forward(
    x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes, out: Sizes
) -> Array:
    """The grouped convolution of ``x`` (``[batch, channels, *spatial]``) with ``weight`` (``[out
    channels, channels / groups, *kernel]``, the groups implied by the channels) plus ``bias``: a new
    C-contiguous ``[batch, out channels, *out]``."""
    batch, out_channels = x.shape[0], weight.shape[0]
    y = np.empty((batch, out_channels, *out), dtype=x.dtype)
    b = np.zeros(0, dtype=x.dtype) if bias is None else np.ascontiguousarray(bias, dtype=x.dtype)
    w = _as_3d(weight.astype(x.dtype, copy=False))
    args = (_as_3d(x), w, b, _as_3d(y), *_geometry(stride, padding, dilation))
    _launch(
        _forward_range, _forward_parallel, args, batch * out_channels, y.size * math.prod(weight.shape[1:])
    )
    return y


def input_grad(
    grad: Array, weight: Array, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int, out: Sizes
) -> Array:
    """The transposed grouped convolution of ``grad`` (``[batch, out channels, *positions]``) with
    ``weight`` (``[out channels, channels / groups, *kernel]``): a new C-contiguous ``[batch, channels,
    *out]``, the input gradient of the convolution (samples no window reaches get 0). Only the samples
    of ``grad`` are multiplied (an inf or NaN weight meets no padding)."""
    batch = grad.shape[0]
    channels = groups * weight.shape[1]
    dx = np.empty((batch, channels, *out), dtype=grad.dtype)
    w = _as_3d(weight.astype(grad.dtype, copy=False))
    exact = not bool(np.isfinite(weight).all())
    args = (_as_3d(grad), w, _as_3d(dx), *_geometry(stride, padding, dilation), exact)
    _launch(_input_range, _input_parallel, args, batch * channels, grad.size * math.prod(weight.shape[1:]))
    return dx


def weight_grad(
    x: Array, grad: Array, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int
) -> Array:
    """``sum over batch and positions of grad * window of x``: a new ``[grad channels, x channels /
    groups, *kernel]``, the weight gradient of the grouped convolution. The sums run over the padded
    width (zeros of the gradient against samples no window reaches): an inf or NaN there would leak in,
    so a non-finite result is computed again on the exact windows."""
    per_group = x.shape[1] // groups
    dw = np.empty((grad.shape[1], per_group, *kernel), dtype=x.dtype)
    geometry = _geometry(stride, padding, dilation)
    args = (_as_3d(x), _as_3d(grad.astype(x.dtype, copy=False)), _as_3d(dw), *geometry)
    pairs = dw.shape[0] * per_group
    _launch(_weight_range, _weight_parallel, args, pairs, grad.size * per_group * math.prod(kernel))
    if not np.isfinite(dw).all():
        _weight_exact(*args[:3], *geometry, 0, pairs)
    return dw
