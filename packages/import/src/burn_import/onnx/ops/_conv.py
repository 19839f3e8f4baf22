"""Convolutions: ``Conv``, ``ConvTranspose``, ``DeformConv`` and ``Col2Im`` (the quantized ones are in
``_quant``), with ONNX's padding rules (explicit, possibly asymmetric, or ``auto_pad``)."""

from __future__ import annotations

from collections.abc import Sequence

from burn_backend import ConvOptions, ConvTransposeOptions, DeformConvOptions, Tensor, UnfoldOptions
from burn_backend import module as F

from .._ir import Node
from ._registry import Context, Value, register
from ._util import pad_constant

__all__ = ["auto_pads", "check_auto_pad", "conv", "spatial_pads"]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def check_auto_pad(node: Node) -> str | None:
    """Why ``auto_pad`` cannot be honoured, or ``None``."""
    mode = node.attrs.get("auto_pad", "NOTSET")
    ok = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
    return None if mode in ok else f"auto_pad {mode!r} is not one of {ok}"


def auto_pads(
    mode: str, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> tuple[list[int], list[int]]:
    """The (begin, end) pads of ``auto_pad`` ``mode`` (``SAME_*`` keep ``ceil(size / stride)``)."""
    n = len(sizes)
    if mode == "VALID":
        return [0] * n, [0] * n
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else large)
        ends.append(large if mode == "SAME_UPPER" else small)
    return begins, ends


def spatial_pads(
    ctx: Context,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[list[int], list[int]]:
    """The (begin, end) pads of a conv or pool node: ``pads`` or ``auto_pad``."""
    n = len(sizes)
    mode = ctx.attr("auto_pad", "NOTSET")
    if mode not in ("NOTSET", ""):
        return auto_pads(mode, sizes, kernel, strides, dilations)
    pads = ctx.attr("pads")
    pads = [0] * (2 * n) if pads is None else [int(p) for p in pads]
    return pads[:n], pads[n:]


def conv(ctx: Context, x: Tensor, w: Tensor, bias: Tensor | None, group: int | None = None) -> Tensor:
    """ONNX ``Conv`` of float tensors."""
    n = x.rank - 2
    kernel = w.dims()[2:]
    strides = list(ctx.attr("strides") or [1] * n)
    dilations = list(ctx.attr("dilations") or [1] * n)
    begins, ends = spatial_pads(ctx, x.dims()[2:], kernel, strides, dilations)
    groups = int(ctx.attr("group", 1)) if group is None else group
    if begins != ends:
        x = pad_constant(x, [0, 0, *begins], [0, 0, *ends], 0.0, ctx)
        padding = [0] * n
    else:
        padding = begins
    if n not in _CONV:
        raise ctx.error(f"{n}-d convolution is not supported (input {x.dims()})")
    options = ConvOptions(tuple(strides), tuple(padding), tuple(dilations), groups)
    return _CONV[n](x, w, bias, options)


@register("Conv", attrs=_CONV_ATTRS, check=check_auto_pad)
def conv_op(ctx: Context, x: Value, w: Value, b: Value = None) -> Tensor:
    t = ctx.tensor(x)
    weight = ctx.tensor(w)
    bias = None if b is None else ctx.tensor(b)
    return conv(ctx, t, weight, bias)


@register("ConvTranspose", attrs=(*_CONV_ATTRS, "output_padding", "output_shape"), check=check_auto_pad)
def conv_transpose(ctx: Context, x: Value, w: Value, b: Value = None) -> Tensor:
    t, weight = ctx.tensor(x), ctx.tensor(w)
    n = t.rank - 2
    sizes = t.dims()[2:]
    kernel = weight.dims()[2:]
    strides = list(ctx.attr("strides") or [1] * n)
    dilations = list(ctx.attr("dilations") or [1] * n)
    out_pad = list(ctx.attr("output_padding") or [0] * n)
    groups = int(ctx.attr("group", 1))
    full = [(i - 1) * s + (k - 1) * d + 1 for i, s, k, d in zip(sizes, strides, kernel, dilations)]
    output_shape = ctx.attr("output_shape")
    mode = ctx.attr("auto_pad", "NOTSET")
    if output_shape is not None or mode in ("SAME_UPPER", "SAME_LOWER"):
        target = (
            list(output_shape)[-n:] if output_shape is not None else [i * s for i, s in zip(sizes, strides)]
        )
        totals = [f + p - o for f, p, o in zip(full, out_pad, target)]
        lower = mode == "SAME_LOWER"
        begins = [(tp - int(tp / 2)) if lower else int(tp / 2) for tp in totals]
        ends = [tp - b_ for tp, b_ in zip(totals, begins)]
    else:
        pads = ctx.attr("pads")
        pads = [0] * (2 * n) if pads is None or mode == "VALID" else [int(p) for p in pads]
        begins, ends = pads[:n], pads[n:]
    if n not in _CONV_T:
        raise ctx.error(f"{n}-d transposed convolution is not supported (input {t.dims()})")
    options = ConvTransposeOptions(tuple(strides), (0,) * n, (0,) * n, tuple(dilations), groups)
    out = _CONV_T[n](t, weight, None, options)
    # crop the pads, add the output padding (zeros before the bias)
    out = pad_constant(
        out, [0, 0, *[-b_ for b_ in begins]], [0, 0, *[p - e for p, e in zip(out_pad, ends)]], 0.0, ctx
    )
    if b is not None:
        out = out.add(ctx.tensor(b).reshape([1, -1] + [1] * n))
    return out


@register("DeformConv", attrs=(*_CONV_ATTRS, "offset_group"))
def deform_conv(
    ctx: Context, x: Value, w: Value, offset: Value, b: Value = None, mask: Value = None
) -> Tensor:
    t, weight = ctx.tensor(x), ctx.tensor(w)
    strides = list(ctx.attr("strides") or [1, 1])
    dilations = list(ctx.attr("dilations") or [1, 1])
    pads = list(ctx.attr("pads") or [0, 0, 0, 0])
    if pads[:2] != pads[2:]:
        t = pad_constant(t, [0, 0, *pads[:2]], [0, 0, *pads[2:]], 0.0, ctx)
        pads = [0, 0, 0, 0]
    options = DeformConvOptions(
        tuple(strides),
        tuple(pads[:2]),
        tuple(dilations),
        int(ctx.attr("group", 1)),
        int(ctx.attr("offset_group", 1)),
    )
    bias = None if b is None else ctx.tensor(b)
    m = None if mask is None else ctx.tensor(mask)
    return F.deform_conv2d(t, ctx.tensor(offset), weight, m, bias, options)


@register("Col2Im", attrs=("dilations", "pads", "strides"))
def col2im(ctx: Context, x: Value, image_shape: Value, block_shape: Value) -> Tensor:
    t = ctx.tensor(x)
    size, block = ctx.ints(image_shape), ctx.ints(block_shape)
    if len(size) != 2:
        raise ctx.error(f"Col2Im over {len(size)} spatial dims is not supported (2 are)")
    strides = list(ctx.attr("strides") or [1, 1])
    dilations = list(ctx.attr("dilations") or [1, 1])
    pads = list(ctx.attr("pads") or [0, 0, 0, 0])
    if pads[:2] != pads[2:]:
        raise ctx.error(f"Col2Im with asymmetric pads {pads} is not supported")
    options = UnfoldOptions(tuple(strides), tuple(pads[:2]), tuple(dilations))
    return F.fold4d(t, tuple(size), tuple(block), options)
