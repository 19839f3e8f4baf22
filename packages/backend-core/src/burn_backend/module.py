"""Module functions on tensors, as Burn's ``burn::tensor::module``: convolution, pooling, interpolation,
embedding, linear, attention, layer, RMS, group and batch normalization and padding.

Each function checks its inputs (kinds, dtypes, devices, ranks, channels and groups, options, that the
kernel fits the padded input) and raises an error naming the function, the shapes and what was
expected; then it runs the backend's kernel (``burn_backend.ModuleOps``). Layouts are channels-first
(``[batch, channels, *spatial]``); the semantics are PyTorch's (``torch.nn.functional``) for the same
arguments, with Burn's weight layout for ``linear`` (``[d_in, d_out]``).

Example:
    >>> from burn_backend import Tensor, module
    >>> x = Tensor.ones([1, 1, 4, 4])
    >>> module.avg_pool2d(x, 2).dims()
    [1, 1, 2, 2]

The output sizes and the tables that every implementation shares (``conv_output_size``,
``avg_pool_divisors``, ...) are in ``burn_backend.kit``, the module for backend authors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import kit as _kit
from ._dtype import Kind
from ._module_norm import batch_norm as batch_norm
from ._module_norm import batch_norm_training as batch_norm_training
from ._module_norm import group_norm as group_norm
from ._module_norm import rms_norm as rms_norm
from ._module_rnn import gru as gru
from ._module_rnn import lstm as lstm
from ._options import (
    AttentionOptions,
    ConvOptions,
    ConvTransposeOptions,
    DeformConvOptions,
    GridSampleOptions,
    InterpolateMode,
    InterpolateOptions,
    UnfoldOptions,
)
from ._pad import pad as pad
from ._tensor import Tensor
from ._tensor_base import KIND_NAMES

__all__ = [
    # convolution
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "deform_conv2d",
    "unfold4d",
    # pooling
    "avg_pool1d",
    "avg_pool2d",
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    # resampling, embedding, dense layers
    "interpolate",
    "embedding",
    "linear",
    "attention",
    "layer_norm",
    "lstm",
    "gru",
    "rms_norm",
    "group_norm",
    "batch_norm",
    "batch_norm_training",
    "ctc_loss",
    # padding, folding and grid sampling
    "pad",
    "fold4d",
    "grid_sample_2d",
    "affine_grid_2d",
]

IntOrTuple = int | Sequence[int]


# -- checks ------------------------------------------------------------------------------------------
def _tensor(op: str, name: str, value: object, kind: Kind) -> Tensor:
    """``value`` checked to be a Tensor of ``kind``; a quantized one as the numbers it stands for (the
    layers without a quantized kernel run on those: a module's quantized weights work everywhere)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if value.is_quantized:
        return value.dequantize()
    if value.kind is not kind:
        wanted = KIND_NAMES[kind]
        article = "an" if wanted[0] in "AEIOU" else "a"
        got = value._describe()
        raise TypeError(
            f"{op}: {name} must be {article} {wanted} tensor, got {'an' if got[0] in 'AEIOU' else 'a'} {got}"
        )
    return value


def _rank(op: str, name: str, tensor: Tensor, rank: int, layout: str) -> None:
    if tensor.rank != rank:
        raise ValueError(f"{op}: {name} must have rank {rank} ({layout}), got shape {tensor.dims()}")


def _sizes(op: str, name: str, value: object, n: int, minimum: int) -> tuple[int, ...]:
    """``value`` (an int, or a sequence of ``n`` ints) as an ``n``-tuple of ints >= ``minimum``."""
    if type(value) is int:
        out: tuple[int, ...] = (value,) * n
    elif isinstance(value, (tuple, list)) and len(value) == n and all(type(v) is int for v in value):
        out = tuple(value)
    else:
        items = [value] * n if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(items, Sequence) or isinstance(items, str) or len(items) != n:
            raise ValueError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
        if any(isinstance(item, bool) or not hasattr(item, "__index__") for item in items):
            raise TypeError(f"{op}: {name} must hold ints, got {value!r}")
        out = tuple(int(item) for item in items)
    if min(out) < minimum:
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return out


def _pair(sizes: tuple[int, ...]) -> tuple[int, int]:
    return sizes[0], sizes[1]


def _same(op: str, x: Tensor, name: str, other: Tensor, primary: str = "x") -> None:
    if other.dtype is not x.dtype:
        raise TypeError(
            f"{op}: {name} has dtype {other.dtype}, {primary} has {x.dtype}; cast one with .cast(...)"
        )
    x._check_device_of(op, other)


def _bias(op: str, x: Tensor, bias: object, channels: int) -> Any:
    if bias is None:
        return None
    tensor = _tensor(op, "bias", bias, Kind.FLOAT)
    _same(op, x, "bias", tensor)
    if tensor.dims() != [channels]:
        raise ValueError(
            f"{op}: bias must have shape [{channels}] (one per output channel), got {tensor.dims()}"
        )
    return tensor._primitive


def _layout(n: int) -> str:
    return [
        "[batch, channels, length]",
        "[batch, channels, height, width]",
        "[batch, channels, depth, height, width]",
    ][n - 1]


def _kernel_fits(
    op: str, x: Tensor, kernel: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
) -> None:
    for dim, (size, k, p, d) in enumerate(zip(x.dims()[2:], kernel, padding, dilation)):
        effective = d * (k - 1) + 1
        if effective > size + 2 * p:
            raise ValueError(
                f"{op}: the kernel {list(kernel)} (dilation {list(dilation)}, {effective} samples along "
                f"spatial dim {dim}) is larger than the padded input ({size} + 2 * {p}) of x with shape "
                f"{x.dims()}"
            )


# -- convolution -------------------------------------------------------------------------------------
def _conv(op: str, n: int, x: object, weight: object, bias: object, options: ConvOptions | None) -> Tensor:
    x = _tensor(op, "x", x, Kind.FLOAT)
    weight = _tensor(op, "weight", weight, Kind.FLOAT)
    _rank(op, "x", x, n + 2, _layout(n))
    _rank(op, "weight", weight, n + 2, "[out_channels, in_channels / groups, *kernel]")
    _same(op, x, "weight", weight)
    if options is None:
        options = ConvOptions((1,) * n, (0,) * n, (1,) * n, 1)
    stride = _sizes(op, "stride", options.stride, n, 1)
    padding = _sizes(op, "padding", options.padding, n, 0)
    dilation = _sizes(op, "dilation", options.dilation, n, 1)
    (groups,) = _sizes(op, "groups", options.groups, 1, 1)
    in_channels = x.dims()[1]
    out_channels, per_group, *kernel = weight.dims()
    if in_channels % groups or out_channels % groups:
        raise ValueError(
            f"{op}: groups ({groups}) must divide the input channels ({in_channels}, x of shape {x.dims()}) "
            f"and the output channels ({out_channels}, weight of shape {weight.dims()})"
        )
    if per_group != in_channels // groups:
        raise ValueError(
            f"{op}: weight of shape {weight.dims()} takes {per_group} channels per group, but x of shape "
            f"{x.dims()} has {in_channels} channels in {groups} group(s)"
        )
    if min(kernel) < 1:
        raise ValueError(f"{op}: the kernel must not be empty, got weight of shape {weight.dims()}")
    bias_primitive = _bias(op, x, bias, out_channels)
    _kernel_fits(op, x, kernel, padding, dilation)
    checked = ConvOptions(stride, padding, dilation, groups)
    method = getattr(x._device.backend, op)
    return x._new(method(x._primitive, weight._primitive, bias_primitive, checked))


def conv1d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvOptions | None = None
) -> Tensor:
    """1-d convolution (cross-correlation, as PyTorch's ``conv1d``).

    Args:
        x: ``[batch, in_channels, length]``.
        weight: ``[out_channels, in_channels / groups, kernel]``.
        bias: ``[out_channels]`` or ``None``.
        options: stride, padding, dilation (1-tuples) and groups; by default stride 1, no padding.

    Returns:
        ``[batch, out_channels, (length + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1]``.
    """
    return _conv("conv1d", 1, x, weight, bias, options)


def conv2d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvOptions | None = None
) -> Tensor:
    """2-d convolution of ``x [batch, in_channels, height, width]`` with ``weight [out_channels,
    in_channels / groups, kh, kw]`` (see ``conv1d``; options hold 2-tuples).

    Example:
        >>> from burn_backend import Tensor, ConvOptions
        >>> x, w = Tensor.ones([1, 2, 5, 5]), Tensor.ones([4, 2, 3, 3])
        >>> conv2d(x, w, options=ConvOptions((2, 2), (1, 1), (1, 1))).dims()
        [1, 4, 3, 3]
    """
    return _conv("conv2d", 2, x, weight, bias, options)


def conv3d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvOptions | None = None
) -> Tensor:
    """3-d convolution of ``x [batch, in_channels, depth, height, width]`` with ``weight [out_channels,
    in_channels / groups, kd, kh, kw]`` (see ``conv1d``; options hold 3-tuples)."""
    return _conv("conv3d", 3, x, weight, bias, options)


def _conv_transpose(
    op: str, n: int, x: object, weight: object, bias: object, options: ConvTransposeOptions | None
) -> Tensor:
    x = _tensor(op, "x", x, Kind.FLOAT)
    weight = _tensor(op, "weight", weight, Kind.FLOAT)
    _rank(op, "x", x, n + 2, _layout(n))
    _rank(op, "weight", weight, n + 2, "[in_channels, out_channels / groups, *kernel]")
    _same(op, x, "weight", weight)
    if options is None:
        options = ConvTransposeOptions((1,) * n, (0,) * n, (0,) * n, (1,) * n, 1)
    stride = _sizes(op, "stride", options.stride, n, 1)
    padding = _sizes(op, "padding", options.padding, n, 0)
    padding_out = _sizes(op, "padding_out", options.padding_out, n, 0)
    dilation = _sizes(op, "dilation", options.dilation, n, 1)
    (groups,) = _sizes(op, "groups", options.groups, 1, 1)
    in_channels = x.dims()[1]
    weight_in, per_group, *kernel = weight.dims()
    if weight_in != in_channels:
        raise ValueError(
            f"{op}: weight of shape {weight.dims()} takes {weight_in} input channels, but x of shape "
            f"{x.dims()} has {in_channels}"
        )
    if in_channels % groups:
        raise ValueError(
            f"{op}: groups ({groups}) must divide the input channels ({in_channels}, x {x.dims()})"
        )
    if min(kernel) < 1:
        raise ValueError(f"{op}: the kernel must not be empty, got weight of shape {weight.dims()}")
    for q, s, d in zip(padding_out, stride, dilation):
        if q >= max(s, d):
            raise ValueError(
                f"{op}: padding_out {list(padding_out)} must be smaller than the stride {list(stride)} or "
                f"the dilation {list(dilation)} along each dim"
            )
    out = [
        _kit.conv_transpose_output_size(size, k, s, p, q, d)
        for size, k, s, p, q, d in zip(x.dims()[2:], kernel, stride, padding, padding_out, dilation)
    ]
    if min(out) < 1:
        raise ValueError(
            f"{op}: the output would be empty (spatial size {out}) for x of shape {x.dims()}, "
            f"kernel {kernel}, padding {list(padding)}"
        )
    bias_primitive = _bias(op, x, bias, per_group * groups)
    checked = ConvTransposeOptions(stride, padding, padding_out, dilation, groups)
    method = getattr(x._device.backend, op)
    return x._new(method(x._primitive, weight._primitive, bias_primitive, checked))


def conv_transpose1d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvTransposeOptions | None = None
) -> Tensor:
    """1-d transposed convolution (the gradient of ``conv1d`` with respect to its input), as PyTorch.

    Args:
        x: ``[batch, in_channels, length]``.
        weight: ``[in_channels, out_channels / groups, kernel]``.
        bias: ``[out_channels]`` or ``None``.
        options: stride, padding, padding_out (extra samples at the end, smaller than the stride or
            the dilation), dilation and groups; by default stride 1, no padding.

    Returns:
        ``[batch, out_channels, (length - 1) * stride - 2 * padding + dilation * (kernel - 1)
        + padding_out + 1]``.
    """
    return _conv_transpose("conv_transpose1d", 1, x, weight, bias, options)


def conv_transpose2d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvTransposeOptions | None = None
) -> Tensor:
    """2-d transposed convolution of ``x [batch, in_channels, height, width]`` with ``weight
    [in_channels, out_channels / groups, kh, kw]`` (see ``conv_transpose1d``)."""
    return _conv_transpose("conv_transpose2d", 2, x, weight, bias, options)


def conv_transpose3d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvTransposeOptions | None = None
) -> Tensor:
    """3-d transposed convolution of ``x [batch, in_channels, depth, height, width]`` with ``weight
    [in_channels, out_channels / groups, kd, kh, kw]`` (see ``conv_transpose1d``)."""
    return _conv_transpose("conv_transpose3d", 3, x, weight, bias, options)


def unfold4d(x: Tensor, kernel_size: IntOrTuple, options: UnfoldOptions | None = None) -> Tensor:
    """The sliding windows of ``x [batch, channels, height, width]`` as columns (im2col), like PyTorch's
    ``F.unfold``: ``[batch, channels * kh * kw, windows]``, channel-major then kernel row and column,
    windows in row-major order."""
    op = "unfold4d"
    x = _tensor(op, "x", x, Kind.FLOAT)
    _rank(op, "x", x, 4, _layout(2))
    kernel = _sizes(op, "kernel_size", kernel_size, 2, 1)
    options = options if options is not None else UnfoldOptions()
    stride = _sizes(op, "stride", options.stride, 2, 1)
    padding = _sizes(op, "padding", options.padding, 2, 0)
    dilation = _sizes(op, "dilation", options.dilation, 2, 1)
    _kernel_fits(op, x, kernel, padding, dilation)
    checked = UnfoldOptions(_pair(stride), _pair(padding), _pair(dilation))
    return x._new(x._device.backend.unfold4d(x._primitive, _pair(kernel), checked))


# -- pooling -----------------------------------------------------------------------------------------
def _pool_args(
    op: str,
    n: int,
    x: object,
    kernel_size: object,
    stride: object,
    padding: object,
    dilation: object,
    ceil_mode: bool,
) -> tuple[Tensor, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    x = _tensor(op, "x", x, Kind.FLOAT)
    _rank(op, "x", x, n + 2, _layout(n))
    kernel = _sizes(op, "kernel_size", kernel_size, n, 1)
    strides = kernel if stride is None else _sizes(op, "stride", stride, n, 1)
    paddings = _sizes(op, "padding", padding, n, 0)
    dilations = _sizes(op, "dilation", dilation, n, 1)
    if any(p > k // 2 for p, k in zip(paddings, kernel)):
        raise ValueError(
            f"{op}: padding {list(paddings)} must be at most half the kernel size {list(kernel)} "
            "(a window would hold padding only)"
        )
    _kernel_fits(op, x, kernel, paddings, dilations)
    out = [
        _kit.pool_output_size(size, k, s, p, d, ceil_mode)
        for size, k, s, p, d in zip(x.dims()[2:], kernel, strides, paddings, dilations)
    ]
    if min(out) < 1:
        raise ValueError(f"{op}: the output would be empty (spatial size {out}) for x of shape {x.dims()}")
    return x, kernel, strides, paddings, dilations


def avg_pool1d(
    x: Tensor,
    kernel_size: int,
    stride: int | None = None,
    padding: int = 0,
    count_include_pad: bool = True,
    ceil_mode: bool = False,
) -> Tensor:
    """1-d average pooling of ``x [batch, channels, length]``, as PyTorch's ``avg_pool1d``.

    Args:
        kernel_size: the window length.
        stride: the step between windows (default: ``kernel_size``).
        padding: zeros added at both ends (at most half the kernel).
        count_include_pad: whether the padding counts in a window's divisor.
        ceil_mode: keep a last partial window (its overhang never counts in the divisor).
    """
    x, kernel, strides, paddings, _ = _pool_args(
        "avg_pool1d", 1, x, kernel_size, stride, padding, 1, ceil_mode
    )
    out = x._device.backend.avg_pool1d(
        x._primitive, kernel[0], strides[0], paddings[0], bool(count_include_pad), bool(ceil_mode)
    )
    return x._new(out)


def avg_pool2d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    count_include_pad: bool = True,
    ceil_mode: bool = False,
) -> Tensor:
    """2-d average pooling of ``x [batch, channels, height, width]`` (see ``avg_pool1d``; sizes are an
    int or a pair)."""
    x, kernel, strides, paddings, _ = _pool_args(
        "avg_pool2d", 2, x, kernel_size, stride, padding, 1, ceil_mode
    )
    out = x._device.backend.avg_pool2d(
        x._primitive, _pair(kernel), _pair(strides), _pair(paddings), bool(count_include_pad), bool(ceil_mode)
    )
    return x._new(out)


def max_pool1d(
    x: Tensor,
    kernel_size: int,
    stride: int | None = None,
    padding: int = 0,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """1-d max pooling of ``x [batch, channels, length]``, as PyTorch's ``max_pool1d`` (padding never
    wins; ``stride`` defaults to ``kernel_size``)."""
    x, k, s, p, d = _pool_args("max_pool1d", 1, x, kernel_size, stride, padding, dilation, ceil_mode)
    return x._new(x._device.backend.max_pool1d(x._primitive, k[0], s[0], p[0], d[0], bool(ceil_mode)))


def max_pool2d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """2-d max pooling of ``x [batch, channels, height, width]`` (see ``max_pool1d``)."""
    x, k, s, p, d = _pool_args("max_pool2d", 2, x, kernel_size, stride, padding, dilation, ceil_mode)
    return x._new(
        x._device.backend.max_pool2d(x._primitive, _pair(k), _pair(s), _pair(p), _pair(d), bool(ceil_mode))
    )


def max_pool1d_with_indices(
    x: Tensor,
    kernel_size: int,
    stride: int | None = None,
    padding: int = 0,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    """``max_pool1d`` and, as an Int tensor of the same shape, the position in ``x``'s last dim each
    maximum came from (the first one on ties, as PyTorch)."""
    x, k, s, p, d = _pool_args(
        "max_pool1d_with_indices", 1, x, kernel_size, stride, padding, dilation, ceil_mode
    )
    values, indices = x._device.backend.max_pool1d_with_indices(
        x._primitive, k[0], s[0], p[0], d[0], bool(ceil_mode)
    )
    return x._new(values), x._new(indices)


def max_pool2d_with_indices(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    """``max_pool2d`` and each maximum's flat position ``row * width + column`` within its input plane,
    as an Int tensor (PyTorch's indices)."""
    x, k, s, p, d = _pool_args(
        "max_pool2d_with_indices", 2, x, kernel_size, stride, padding, dilation, ceil_mode
    )
    values, indices = x._device.backend.max_pool2d_with_indices(
        x._primitive, _pair(k), _pair(s), _pair(p), _pair(d), bool(ceil_mode)
    )
    return x._new(values), x._new(indices)


def adaptive_avg_pool1d(x: Tensor, output_size: int) -> Tensor:
    """Averages of ``x [batch, channels, length]`` over ``output_size`` windows, window ``i`` spanning
    ``[floor(i * length / output_size), ceil((i + 1) * length / output_size))`` (as PyTorch)."""
    op = "adaptive_avg_pool1d"
    x = _tensor(op, "x", x, Kind.FLOAT)
    _rank(op, "x", x, 3, _layout(1))
    (size,) = _sizes(op, "output_size", output_size, 1, 1)
    if x.dims()[2] < 1:
        raise ValueError(f"{op}: x must not be empty along its length, got shape {x.dims()}")
    return x._new(x._device.backend.adaptive_avg_pool1d(x._primitive, size))


def adaptive_avg_pool2d(x: Tensor, output_size: IntOrTuple) -> Tensor:
    """Adaptive average pooling of ``x [batch, channels, height, width]`` to ``output_size`` (an int or
    a pair), with ``adaptive_avg_pool1d``'s windows along each spatial dim."""
    op = "adaptive_avg_pool2d"
    x = _tensor(op, "x", x, Kind.FLOAT)
    _rank(op, "x", x, 4, _layout(2))
    sizes = _sizes(op, "output_size", output_size, 2, 1)
    if min(x.dims()[2:]) < 1:
        raise ValueError(f"{op}: x must not be empty along its spatial dims, got shape {x.dims()}")
    return x._new(x._device.backend.adaptive_avg_pool2d(x._primitive, _pair(sizes)))


# -- interpolation, embedding, dense layers ------------------------------------------------------------
def interpolate(
    x: Tensor,
    output_size: IntOrTuple,
    options: InterpolateOptions | InterpolateMode | str | None = None,
) -> Tensor:
    """``x [batch, channels, height, width]`` resampled to ``output_size`` (an int or a pair).

    Modes (``InterpolateOptions``, an ``InterpolateMode`` or its name; default nearest): ``nearest``
    reads input ``floor(o * in / out)`` (PyTorch's ``nearest``); ``bilinear`` and ``bicubic`` align the
    corners (as Burn and PyTorch with ``align_corners=True``).
    """
    op = "interpolate"
    x = _tensor(op, "x", x, Kind.FLOAT)
    _rank(op, "x", x, 4, _layout(2))
    sizes = _sizes(op, "output_size", output_size, 2, 1)
    if options is None:
        options = InterpolateOptions()
    elif isinstance(options, InterpolateMode):
        options = InterpolateOptions(options)
    elif isinstance(options, str):
        try:
            options = InterpolateOptions(InterpolateMode(options.lower()))
        except ValueError:
            modes = [m.value for m in InterpolateMode]
            raise ValueError(f"{op}: unknown mode {options!r}; expected one of {modes}") from None
    elif not isinstance(options, InterpolateOptions) or not isinstance(options.mode, InterpolateMode):
        raise TypeError(
            f"{op}: options must be InterpolateOptions, an InterpolateMode or a mode name, got {options!r}"
        )
    if min(x.dims()[2:]) < 1:
        raise ValueError(f"{op}: x must not be empty along its spatial dims, got shape {x.dims()}")
    return x._new(x._device.backend.interpolate(x._primitive, _pair(sizes), options))


def embedding(weights: Tensor, indices: Tensor) -> Tensor:
    """The rows of ``weights [n, d]`` that Int ``indices`` (any shape; Burn's is ``[batch, seq]``) pick:
    ``[*indices.shape, d]``.

    Raises:
        IndexError: an index is outside ``[0, n)`` (negative ones too: they are not counted from the
            end); checked where the backend ``validates_index_values``.
    """
    op = "embedding"
    weights = _tensor(op, "weights", weights, Kind.FLOAT)
    indices = _tensor(op, "indices", indices, Kind.INT)
    _rank(op, "weights", weights, 2, "[num_embeddings, dim]")
    if indices.rank < 1:
        raise ValueError(f"{op}: indices must have rank >= 1 ([batch, seq]), got a scalar")
    weights._check_device_of(op, indices)
    weights._check_index_values(op, indices, 0)
    backend = weights._device.backend
    shape = indices.dims()
    primitive = indices._primitive
    if len(shape) != 2:
        primitive = backend.int_reshape(primitive, (1, math.prod(shape)))
    out = backend.embedding(weights._primitive, primitive)
    if len(shape) != 2:
        out = backend.float_reshape(out, (*shape, weights.dims()[1]))
    return weights._new(out)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight + bias`` over the last dim of ``x`` (any rank >= 1), with Burn's ``weight`` layout
    ``[d_in, d_out]`` and ``bias`` ``[d_out]`` or ``None``."""
    op = "linear"
    x = _tensor(op, "x", x, Kind.FLOAT)
    if isinstance(weight, Tensor) and weight.is_quantized and not x.device.backend.ad_enabled():
        return _quantized_linear(op, x, weight, bias)
    weight = _tensor(op, "weight", weight, Kind.FLOAT)
    _same(op, x, "weight", weight)
    _rank(op, "weight", weight, 2, "[d_in, d_out]")
    if x.rank < 1:
        raise ValueError(f"{op}: x must have rank >= 1, got a scalar")
    d_in, d_out = weight.dims()
    if x.dims()[-1] != d_in:
        raise ValueError(
            f"{op}: the last dim of x (shape {x.dims()}) must match weight's d_in (shape {weight.dims()}, "
            "layout [d_in, d_out])"
        )
    bias_primitive = _bias(op, x, bias, d_out)
    return x._new(x._device.backend.linear(x._primitive, weight._primitive, bias_primitive))


def _quantized_linear(op: str, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``linear`` with a quantized weight through ``matmul``, whose ``q_matmul`` has the backend's fast
    paths. Not on an autodiff backend: its quantized ops run untracked, and ``x`` needs its gradient
    there, so ``linear`` multiplies by the dequantized weight instead."""
    x._check_device_of(op, weight)
    _rank(op, "weight", weight, 2, "[d_in, d_out]")
    d_in, d_out = weight.dims()
    if x.rank < 1 or x.dims()[-1] != d_in:
        raise ValueError(
            f"{op}: the last dim of x (shape {x.dims()}) must match weight's d_in (shape {weight.dims()}, "
            "layout [d_in, d_out])"
        )
    rows = x.reshape([-1, d_in]) if x.rank != 2 else x
    out = rows.matmul(weight)
    if out.dtype is not x.dtype:
        out = out.cast(x.dtype)
    if bias is not None:
        bias_primitive = _bias(op, x, bias, d_out)
        out = out._new(out._device.backend.float_add(out._primitive, bias_primitive))
    return out if x.rank == 2 else out.reshape([*x.dims()[:-1], d_out])


def _broadcast_operand(op: str, name: str, x: Tensor, tensor: Tensor, full: list[int]) -> Any:
    """``tensor`` (rank <= 4) reshaped to rank 4, checked to broadcast to ``full``."""
    dims = tensor.dims()
    if not 1 <= len(dims) <= 4:
        raise ValueError(f"{op}: {name} must have rank 2 to 4 (broadcasting to {full}), got shape {dims}")
    dims = [1] * (4 - len(dims)) + dims
    if any(d not in (1, f) for d, f in zip(dims, full)):
        raise ValueError(
            f"{op}: {name} of shape {tensor.dims()} does not broadcast to the scores "
            f"[batch, heads, seq_q, seq_k] = {full}"
        )
    x._check_device_of(op, tensor)
    primitive = tensor._primitive
    if tensor.rank != 4:
        primitive = tensor._op("reshape")(primitive, tuple(dims))
    return primitive


def attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    attn_bias: Tensor | None = None,
    options: AttentionOptions | None = None,
) -> Tensor:
    """Scaled dot-product attention: ``softmax(query @ key^T * scale + ...) @ value``.

    Args:
        query: ``[batch, heads, seq_q, dim]``.
        key: ``[batch, kv_heads, seq_k, dim]``; ``kv_heads`` divides ``heads`` (grouped-query attention:
            query head ``h`` reads key head ``h // (heads / kv_heads)``).
        value: ``[batch, kv_heads, seq_k, value_dim]``.
        mask: a Bool tensor broadcasting to ``[batch, heads, seq_q, seq_k]``; true masks a key out.
        attn_bias: a Float tensor broadcasting to the scores, added after masking (ALiBi, ...).
        options: ``scale`` (default ``1 / sqrt(dim)``), ``softcap`` (``softcap * tanh(s / softcap)`` on
            the scaled scores), ``is_causal`` (mask keys after the query's position, top-left aligned).

    Returns:
        ``[batch, heads, seq_q, value_dim]``; a query whose every key is masked gets zeros.
    """
    op = "attention"
    query = _tensor(op, "query", query, Kind.FLOAT)
    key = _tensor(op, "key", key, Kind.FLOAT)
    value = _tensor(op, "value", value, Kind.FLOAT)
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        _rank(op, name, tensor, 4, "[batch, heads, seq, dim]")
    _same(op, query, "key", key, "query")
    _same(op, query, "value", value, "query")
    batch, heads, seq_q, dim = query.dims()
    key_batch, kv_heads, seq_k, key_dim = key.dims()
    value_batch, value_heads, value_seq, _ = value.dims()
    if (
        key_batch != batch
        or value_batch != batch
        or key_dim != dim
        or value_heads != kv_heads
        or value_seq != seq_k
    ):
        raise ValueError(
            f"{op}: incompatible shapes query {query.dims()}, key {key.dims()}, value {value.dims()}: "
            "expected the same batch, key dim = query dim, and key/value with the same heads and length"
        )
    if kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"{op}: key/value heads ({kv_heads}) must divide query heads ({heads})")
    full = [batch, heads, seq_q, seq_k]
    mask_primitive = None
    if mask is not None:
        mask = _tensor(op, "mask", mask, Kind.BOOL)
        mask_primitive = _broadcast_operand(op, "mask", query, mask, full)
    bias_primitive = None
    if attn_bias is not None:
        attn_bias = _tensor(op, "attn_bias", attn_bias, Kind.FLOAT)
        _same(op, query, "attn_bias", attn_bias, "query")
        bias_primitive = _broadcast_operand(op, "attn_bias", query, attn_bias, full)
    options = options if options is not None else AttentionOptions()
    if options.softcap is not None and not options.softcap > 0:
        raise ValueError(f"{op}: softcap must be positive, got {options.softcap}")
    if options.scale is not None and not math.isfinite(options.scale):
        raise ValueError(f"{op}: scale must be finite, got {options.scale}")
    primitive = query._device.backend.attention(
        query._primitive, key._primitive, value._primitive, mask_primitive, bias_primitive, options
    )
    return query._new(primitive)


def layer_norm(
    x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None, epsilon: float = 1e-5
) -> Tensor:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last dim of ``x`` (biased variance, as
    PyTorch's ``layer_norm``); ``gamma`` and ``beta`` are ``[d]`` or ``None``."""
    op = "layer_norm"
    x = _tensor(op, "x", x, Kind.FLOAT)
    if x.rank < 1:
        raise ValueError(f"{op}: x must have rank >= 1, got a scalar")
    d = x.dims()[-1]
    params: list[Any] = []
    for name, param in (("gamma", gamma), ("beta", beta)):
        if param is None:
            params.append(None)
            continue
        tensor = _tensor(op, name, param, Kind.FLOAT)
        _same(op, x, name, tensor)
        if tensor.dims() != [d]:
            raise ValueError(
                f"{op}: {name} must have shape [{d}] (the last dim of x {x.dims()}), got {tensor.dims()}"
            )
        params.append(tensor._primitive)
    if not epsilon >= 0:
        raise ValueError(f"{op}: epsilon must be >= 0, got {epsilon}")
    return x._new(x._device.backend.layer_norm(x._primitive, params[0], params[1], float(epsilon)))


# -- folding and grid sampling -------------------------------------------------------------------------
def fold4d(
    x: Tensor, output_size: IntOrTuple, kernel_size: IntOrTuple, options: UnfoldOptions | None = None
) -> Tensor:
    """The inverse of ``unfold4d`` (col2im), like PyTorch's ``F.fold``: the columns ``x [batch, channels
    * kh * kw, windows]`` summed back into ``[batch, channels, *output_size]``, each value at the
    position of the window and kernel offset it stands for; where windows overlap the values add, so
    ``fold4d(unfold4d(x))`` is ``x`` times the number of windows covering each sample.

    Args:
        x: the columns, channel-major then kernel row and column; ``windows`` must be the number of
            windows ``unfold4d`` makes of an input of ``output_size`` with these options.
        output_size: the spatial size of the result (an int or a pair).
        kernel_size: the window size (an int or a pair).
        options: stride, padding and dilation, as for ``unfold4d``.

    Example:
        >>> from burn_backend import Tensor
        >>> fold4d(Tensor.ones([1, 4, 4]), (3, 3), 2).to_data().tolist()[0][0]
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    op = "fold4d"
    x = _tensor(op, "x", x, Kind.FLOAT)
    _rank(op, "x", x, 3, "[batch, channels * kh * kw, windows]")
    sizes = _sizes(op, "output_size", output_size, 2, 1)
    kernel = _sizes(op, "kernel_size", kernel_size, 2, 1)
    options = options if options is not None else UnfoldOptions()
    stride = _sizes(op, "stride", options.stride, 2, 1)
    padding = _sizes(op, "padding", options.padding, 2, 0)
    dilation = _sizes(op, "dilation", options.dilation, 2, 1)
    _, depth, length = x.dims()
    taps = kernel[0] * kernel[1]
    if depth < 1 or depth % taps:
        raise ValueError(
            f"{op}: dim 1 of x (shape {x.dims()}) must be a positive multiple of kh * kw = {taps} "
            f"(kernel {list(kernel)})"
        )
    out = [
        _kit.conv_output_size(n, k, s, p, d)
        for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)
    ]
    if min(out) < 1:
        raise ValueError(
            f"{op}: the kernel {list(kernel)} (dilation {list(dilation)}) is larger than the padded output "
            f"{list(sizes)} + 2 * {list(padding)}"
        )
    if length != out[0] * out[1]:
        raise ValueError(
            f"{op}: x of shape {x.dims()} has {length} windows, but an output of size {list(sizes)} has "
            f"{out[0]} x {out[1]} = {out[0] * out[1]} windows of kernel {list(kernel)} (stride "
            f"{list(stride)}, padding {list(padding)}, dilation {list(dilation)})"
        )
    checked = UnfoldOptions(_pair(stride), _pair(padding), _pair(dilation))
    return x._new(x._device.backend.fold4d(x._primitive, _pair(sizes), _pair(kernel), checked))


def grid_sample_2d(x: Tensor, grid: Tensor, options: GridSampleOptions | None = None) -> Tensor:
    """``x [batch, channels, height, width]`` sampled at the points of ``grid [batch, height_out,
    width_out, 2]``: ``[batch, channels, height_out, width_out]``, as PyTorch's ``F.grid_sample``.

    ``grid[..., 0]`` is the x (width) and ``grid[..., 1]`` the y (height) coordinate, normalized so that
    -1 and 1 are the left / top and right / bottom of the input (the corner samples' centres with
    ``align_corners``, their outer edges without). ``options`` (``GridSampleOptions``; default bilinear,
    zeros padding, corners not aligned) pick the interpolation and what points outside the input read.

    Example:
        >>> from burn_backend import Tensor
        >>> x = Tensor.from_data([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> grid_sample_2d(x, Tensor.zeros([1, 1, 1, 2])).to_data().tolist()
        [[[[2.5]]]]
    """
    op = "grid_sample_2d"
    x = _tensor(op, "x", x, Kind.FLOAT)
    grid = _tensor(op, "grid", grid, Kind.FLOAT)
    _rank(op, "x", x, 4, _layout(2))
    _rank(op, "grid", grid, 4, "[batch, height_out, width_out, 2]")
    _same(op, x, "grid", grid)
    batch, _, height, width = x.dims()
    if grid.dims()[0] != batch or grid.dims()[3] != 2:
        raise ValueError(
            f"{op}: grid must have shape [{batch}, height_out, width_out, 2] for x of shape {x.dims()}, "
            f"got {grid.dims()}"
        )
    if min(height, width) < 1:
        raise ValueError(f"{op}: x must not be empty along its spatial dims, got shape {x.dims()}")
    if options is None:
        options = GridSampleOptions()
    elif not isinstance(options, GridSampleOptions):
        raise TypeError(f"{op}: options must be GridSampleOptions or None, got {options!r}")
    return x._new(x._device.backend.float_grid_sample_2d(x._primitive, grid._primitive, options))


def _centres(steps: int, align_corners: bool) -> np.ndarray[Any, Any]:
    """The normalized coordinates of ``steps`` sample centres along one dim (PyTorch's base grid)."""
    if steps <= 1:
        return np.zeros(steps)
    centres = np.linspace(-1.0, 1.0, steps)
    return centres if align_corners else centres * ((steps - 1) / steps)


def affine_grid_2d(theta: Tensor, size: Sequence[int], align_corners: bool = False) -> Tensor:
    """The sampling grid of the affine maps ``theta [batch, 2, 3]`` for an output of ``size`` ``[batch,
    channels, height, width]``, as PyTorch's ``F.affine_grid``: ``[batch, height, width, 2]``, point
    ``(i, j)`` being ``theta @ (x_j, y_i, 1)`` with ``x``, ``y`` the normalized centres of the output's
    samples (see ``grid_sample_2d`` for ``align_corners``). Differentiable in ``theta``.

    Example:
        >>> from burn_backend import Tensor
        >>> identity = Tensor.from_data([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> affine_grid_2d(identity, [1, 1, 2, 2], align_corners=True).to_data().tolist()[0][0]
        [[-1.0, -1.0], [1.0, -1.0]]
    """
    op = "affine_grid_2d"
    theta = _tensor(op, "theta", theta, Kind.FLOAT)
    _rank(op, "theta", theta, 3, "[batch, 2, 3]")
    if isinstance(size, int) or not isinstance(size, Sequence):
        raise TypeError(f"{op}: size must be 4 ints [batch, channels, height, width], got {size!r}")
    batch, _, height, width = _sizes(op, "size", size, 4, 1)
    if theta.dims() != [batch, 2, 3]:
        raise ValueError(
            f"{op}: theta must have shape [batch, 2, 3] = [{batch}, 2, 3] for size {list(size)}, "
            f"got {theta.dims()}"
        )
    if not isinstance(align_corners, bool):
        raise TypeError(f"{op}: align_corners must be a bool, got {align_corners!r}")
    xs, ys = np.meshgrid(_centres(width, align_corners), _centres(height, align_corners))
    base = np.stack([xs, ys, np.ones_like(xs)], axis=-1).reshape(1, height * width, 3)
    points = Tensor.from_data(base, theta.device, theta.dtype)
    return points.matmul(theta.swap_dims(1, 2)).reshape([batch, height, width, 2])


# -- deformable convolution and CTC loss ---------------------------------------------------------------
def deform_conv2d(
    x: Tensor,
    offset: Tensor,
    weight: Tensor,
    mask: Tensor | None = None,
    bias: Tensor | None = None,
    options: DeformConvOptions | None = None,
) -> Tensor:
    """Deformable 2-d convolution, as torchvision's ``deform_conv2d`` (DCN; DCNv2 with a ``mask``).

    Kernel tap ``k = i * kw + j`` of output ``(oy, ox)`` reads each input channel bilinearly at
    ``(oy * stride_h - pad_h + i * dilation_h + dy, ox * stride_w - pad_w + j * dilation_w + dx)`` (zero
    outside the input), where ``(dy, dx)`` are offset channels ``g * 2 * kh * kw + 2 * k`` and ``... + 1``
    for the channel's offset group ``g``; the read is scaled by mask channel ``g * kh * kw + k``, then the
    reads are convolved with ``weight`` as by ``conv2d`` with ``groups = weight_groups``.

    Args:
        x: ``[batch, in_channels, height, width]``.
        offset: ``[batch, 2 * offset_groups * kh * kw, out_h, out_w]``; ``out_h``/``out_w`` are
            ``conv2d``'s output size for these options.
        weight: ``[out_channels, in_channels / weight_groups, kh, kw]``.
        mask: ``[batch, offset_groups * kh * kw, out_h, out_w]`` or ``None`` (no modulation).
        bias: ``[out_channels]`` or ``None``.
        options: stride, padding, dilation, weight_groups and offset_groups (``offset_groups`` divides
            ``in_channels``); by default stride 1, no padding, one group of each.

    Returns:
        ``[batch, out_channels, out_h, out_w]``.

    Example:
        >>> from burn_backend import Tensor
        >>> x, w = Tensor.ones([1, 2, 4, 4]), Tensor.ones([3, 2, 3, 3])
        >>> deform_conv2d(x, Tensor.zeros([1, 18, 2, 2]), w).dims()
        [1, 3, 2, 2]
    """
    op = "deform_conv2d"
    x = _tensor(op, "x", x, Kind.FLOAT)
    offset = _tensor(op, "offset", offset, Kind.FLOAT)
    weight = _tensor(op, "weight", weight, Kind.FLOAT)
    _rank(op, "x", x, 4, _layout(2))
    _rank(op, "offset", offset, 4, "[batch, 2 * offset_groups * kh * kw, out_h, out_w]")
    _rank(op, "weight", weight, 4, "[out_channels, in_channels / weight_groups, kh, kw]")
    _same(op, x, "offset", offset)
    _same(op, x, "weight", weight)
    if options is None:
        options = DeformConvOptions()
    elif not isinstance(options, DeformConvOptions):
        raise TypeError(f"{op}: options must be DeformConvOptions, got {type(options).__name__}")
    stride = _sizes(op, "stride", options.stride, 2, 1)
    padding = _sizes(op, "padding", options.padding, 2, 0)
    dilation = _sizes(op, "dilation", options.dilation, 2, 1)
    (weight_groups,) = _sizes(op, "weight_groups", options.weight_groups, 1, 1)
    (offset_groups,) = _sizes(op, "offset_groups", options.offset_groups, 1, 1)
    batch, in_channels = x.dims()[:2]
    out_channels, per_group, kh, kw = weight.dims()
    if in_channels % weight_groups or out_channels % weight_groups:
        raise ValueError(
            f"{op}: weight_groups ({weight_groups}) must divide the input channels ({in_channels}, x of "
            f"shape {x.dims()}) and the output channels ({out_channels}, weight of shape {weight.dims()})"
        )
    if per_group != in_channels // weight_groups:
        raise ValueError(
            f"{op}: weight of shape {weight.dims()} takes {per_group} channels per group, but x of shape "
            f"{x.dims()} has {in_channels} channels in {weight_groups} weight group(s)"
        )
    if in_channels % offset_groups:
        raise ValueError(
            f"{op}: offset_groups ({offset_groups}) must divide the input channels ({in_channels}, x of "
            f"shape {x.dims()})"
        )
    if min(kh, kw) < 1:
        raise ValueError(f"{op}: the kernel must not be empty, got weight of shape {weight.dims()}")
    _kernel_fits(op, x, (kh, kw), padding, dilation)
    out = [
        _kit.conv_output_size(size, k, s, p, d)
        for size, k, s, p, d in zip(x.dims()[2:], (kh, kw), stride, padding, dilation)
    ]
    taps = offset_groups * kh * kw
    expected = [batch, 2 * taps, *out]
    if offset.dims() != expected:
        raise ValueError(
            f"{op}: offset must have shape {expected} ([batch, 2 * offset_groups * kh * kw, out_h, out_w] "
            f"with {offset_groups} offset group(s) and a {kh}x{kw} kernel), got {offset.dims()}"
        )
    mask_primitive = None
    if mask is not None:
        mask = _tensor(op, "mask", mask, Kind.FLOAT)
        _same(op, x, "mask", mask)
        if mask.dims() != [batch, taps, *out]:
            raise ValueError(
                f"{op}: mask must have shape {[batch, taps, *out]} ([batch, offset_groups * kh * kw, out_h, "
                f"out_w]), got {mask.dims()}"
            )
        mask_primitive = mask._primitive
    bias_primitive = _bias(op, x, bias, out_channels)
    checked = DeformConvOptions(_pair(stride), _pair(padding), _pair(dilation), weight_groups, offset_groups)
    primitive = x._device.backend.deform_conv2d(
        x._primitive, offset._primitive, weight._primitive, mask_primitive, bias_primitive, checked
    )
    return x._new(primitive)


_REDUCTIONS = ("mean", "sum", "none")


def _lengths(op: str, name: str, value: object, batch: int, like: Tensor) -> Tensor:
    """``value`` (an Int tensor or a sequence of ints) as an Int tensor ``[batch]`` on ``like``'s device."""
    if not isinstance(value, Tensor):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise TypeError(f"{op}: {name} must be an Int tensor or a sequence of ints, got {value!r}")
        if any(isinstance(v, bool) or not hasattr(v, "__index__") for v in value):
            raise TypeError(f"{op}: {name} must hold ints, got {value!r}")
        value = Tensor.from_ints([int(v) for v in value], like.device)
    tensor = _tensor(op, name, value, Kind.INT)
    like._check_device_of(op, tensor)
    if tensor.dims() != [batch]:
        raise ValueError(f"{op}: {name} must have shape [{batch}] (one per sample), got {tensor.dims()}")
    return tensor


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
) -> Tensor:
    """The connectionist temporal classification loss, as PyTorch's ``ctc_loss`` (``zero_infinity=False``).

    Each sample's loss is ``-log`` of the probability, summed over every alignment of its target (labels
    with blanks between and around them, each symbol repeated over one or more frames) with its input.
    A sample whose target cannot fit its input has an infinite loss.

    Args:
        log_probs: ``[time, batch, classes]`` log-probabilities (log-softmax outputs).
        targets: Int ``[batch, max_target_length]``: each sample's labels, padded past its target
            length with any values; labels lie in ``[0, classes)`` and are not ``blank``.
        input_lengths: Int ``[batch]`` (a tensor or a sequence of ints), each in ``[0, time]``.
        target_lengths: Int ``[batch]``, each in ``[0, max_target_length]``.
        blank: the blank class.
        reduction: ``"none"`` (the losses ``[batch]``), ``"sum"``, or ``"mean"`` (each loss divided by its
            target length, at least 1, then averaged over the batch); the last two give ``[1]``.

    Example:
        >>> from burn_backend import Tensor
        >>> log_probs = Tensor.full([2, 1, 2], -0.6931471805599453)  # two frames, blank or label 1
        >>> round(ctc_loss(log_probs, Tensor.from_ints([[1]]), [2], [1], reduction="none").item(), 4)
        0.2877
    """
    op = "ctc_loss"
    log_probs = _tensor(op, "log_probs", log_probs, Kind.FLOAT)
    targets = _tensor(op, "targets", targets, Kind.INT)
    _rank(op, "log_probs", log_probs, 3, "[time, batch, classes]")
    _rank(op, "targets", targets, 2, "[batch, max_target_length]")
    log_probs._check_device_of(op, targets)
    frames, batch, classes = log_probs.dims()
    if targets.dims()[0] != batch:
        raise ValueError(
            f"{op}: targets of shape {targets.dims()} must have one row per sample of log_probs "
            f"(shape {log_probs.dims()}, layout [time, batch, classes])"
        )
    max_length = targets.dims()[1]
    inputs = _lengths(op, "input_lengths", input_lengths, batch, log_probs)
    lengths = _lengths(op, "target_lengths", target_lengths, batch, log_probs)
    if isinstance(blank, bool) or not hasattr(blank, "__index__"):
        raise TypeError(f"{op}: blank must be an int, got {blank!r}")
    blank = int(blank)
    if not 0 <= blank < classes:
        raise ValueError(f"{op}: blank ({blank}) must be a class of log_probs, in [0, {classes})")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: unknown reduction {reduction!r}; expected one of {list(_REDUCTIONS)}")
    input_values = inputs.to_numpy().astype(np.int64)
    length_values = lengths.to_numpy().astype(np.int64)
    for name, values, high in (
        ("input_lengths", input_values, frames),
        ("target_lengths", length_values, max_length),
    ):
        wrong = np.flatnonzero((values < 0) | (values > high))
        if wrong.size:
            first = int(wrong[0])
            raise ValueError(
                f"{op}: {name} must lie in [0, {high}], got {int(values[first])} for sample {first}"
            )
    labels = targets.to_numpy().astype(np.int64)
    within = np.arange(max_length)[None, :] < length_values[:, None]
    wrong_label = within & ((labels < 0) | (labels >= classes) | (labels == blank))
    if wrong_label.any():
        sample, position = (int(i) for i in np.argwhere(wrong_label)[0])
        raise ValueError(
            f"{op}: target {sample} holds {int(labels[sample, position])} at position {position}; labels "
            f"must lie in [0, {classes}) and differ from the blank ({blank})"
        )
    backend = log_probs._device.backend
    losses = backend.ctc_loss(
        log_probs._primitive, targets._primitive, inputs._primitive, lengths._primitive, blank
    )
    if reduction == "none":
        return log_probs._new(losses)
    if reduction == "sum":
        return log_probs._new(backend.float_sum(losses))
    divisors = backend.int_into_float(backend.int_clamp_min(lengths._primitive, 1), log_probs.dtype)
    return log_probs._new(backend.float_mean(backend.float_div(losses, divisors)))
