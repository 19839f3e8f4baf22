"""The module op group over an array namespace: embedding, linear, convolution plumbing, folding,
pooling, interpolation, attention, normalization, the real FFT, deformable convolution and CTC loss.

Convolutions go through three kernels a binding replaces with its own (``_convolve``,
``_convolve_transpose``, ``_convolve_weight_grad``; by default the interface's lowering to im2col and
one matmul), so the thirty convolution methods exist once. f16 and bf16 compute in f32 (one rounding
per op); every op runs with floating-point warnings off (inf and NaN propagate as in PyTorch).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np

from .._ops import _conv as _interface
from .._ops._sizes import conv_output_size, conv_transpose_output_size, interpolation_taps
from .._ops.module import ModuleOps
from .._options import (
    ConvOptions,
    ConvTransposeOptions,
    IndexingUpdateOp,
    InterpolateMode,
    InterpolateOptions,
    UnfoldOptions,
)
from . import _attention, _ctc, _deform_conv, _norm, _pool
from ._pool import place
from ._runtime import ArrayRuntime

Array = Any
Sizes = Any  # a sequence of ints, one per spatial dim
C = TypeVar("C", bound=type)


_NO_ARITHMETIC = frozenset({"embedding", "unfold4d"})  # no floating-point warning to silence


def _quietly(cls: C) -> C:
    """``cls`` with each public method run in ``self.runtime.quiet()``: IEEE results, no warnings."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with self.runtime.quiet():
                return method(self, *args, **kwargs)

        return wrapper

    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and callable(value) and name not in _NO_ARITHMETIC:
            setattr(cls, name, wrap(value))
    return cls


@functools.lru_cache(maxsize=256)
def _taps(mode: InterpolateMode, size: int, out: int) -> list[tuple[list[int], list[float]]]:
    return interpolation_taps(mode, size, out)


def _tap_index(mode: InterpolateMode, size: int, out: int, tap: int) -> np.ndarray[Any, Any]:
    return np.asarray(_taps(mode, size, out)[tap][0], dtype=np.int64)


def _tap_weights(mode: InterpolateMode, size: int, out: int, tap: int, shape: tuple[int, ...]) -> Any:
    return np.asarray(_taps(mode, size, out)[tap][1]).reshape(shape)


def _taps_matrix(mode: InterpolateMode, size: int, out: int, transposed: bool) -> np.ndarray[Any, Any]:
    """The dense ``[out, size]`` matrix of a 1-d interpolation (``[size, out]`` transposed)."""
    matrix = np.zeros((out, size))
    for indices, weights in _taps(mode, size, out):
        np.add.at(matrix, (np.arange(out), np.asarray(indices)), np.asarray(weights))
    return np.ascontiguousarray(matrix.T) if transposed else matrix


@_quietly
class ArrayModuleOps(ModuleOps):
    """The module op group written once against ``self.xp``."""

    runtime: ClassVar[ArrayRuntime]
    xp: ClassVar[Any]

    # -- embedding and linear ---------------------------------------------------------------------
    def embedding(self, weights: Array, indices: Array) -> Array:
        xp: Any = self.xp
        rows = xp.take(weights, xp.reshape(indices, (-1,)), axis=0)
        return xp.reshape(rows, (*indices.shape, weights.shape[1]))

    def embedding_backward(self, weights: Array, output_grad: Array, indices: Array) -> Array:
        xp: Any = self.xp
        rows, dim = weights.shape
        grad = self.runtime.widen(output_grad)
        zeros = xp.zeros((rows, dim), dtype=grad.dtype)
        flat = xp.reshape(indices, (-1,))
        total = self.runtime.select_update(zeros, 0, flat, xp.reshape(grad, (-1, dim)), IndexingUpdateOp.ADD)
        return self.runtime.narrow(total, output_grad.dtype)

    def linear(self, x: Array, weight: Array, bias: Array | None) -> Array:
        widen = self.runtime.widen
        y = self.runtime.matmul(widen(x), widen(weight))
        if bias is not None:
            y += widen(bias)
        return self.runtime.narrow(y, x.dtype)

    # -- convolution ------------------------------------------------------------------------------
    # A binding's kernels take and return arrays of the compute dtype (f32 or f64).
    def _convolve(
        self, x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes,
        groups: int, out: Sizes,
    ) -> Array:  # fmt: skip
        """The cross-correlation of ``x`` with ``weight`` plus ``bias`` (if given) per output channel,
        with spatial output ``out``."""
        y = _interface._conv(self, x, weight, stride, padding, dilation, groups, out)
        return y if bias is None else y + self.xp.reshape(bias, (-1,) + (1,) * len(out))

    def _convolve_transpose(
        self, x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes,
        groups: int, out: Sizes,
    ) -> Array:  # fmt: skip
        """The transposed convolution (the adjoint of ``_convolve`` in ``x``) plus ``bias``, spatial
        output ``out``."""
        y = _interface._conv_transpose(self, x, weight, stride, padding, dilation, groups, out)
        return y if bias is None else y + self.xp.reshape(bias, (-1,) + (1,) * len(out))

    def _convolve_weight_grad(
        self,
        x: Array,
        grad: Array,
        kernel: Sizes,
        stride: Sizes,
        padding: Sizes,
        dilation: Sizes,
        groups: int,
    ) -> Array:
        """``sum over batch and positions of grad * window of x``: ``[grad channels, x channels /
        groups, *kernel]``, the weight gradient of a convolution (of a transposed one, roles swapped)."""
        return _interface._conv_weight_grad(self, x, grad, kernel, stride, padding, dilation, groups)

    def _channel_sums(self, grad: Array) -> Array:
        """``grad`` summed over every dim but the channels (dim 1): a convolution's bias gradient."""
        return self.xp.sum(grad, axis=(0, *range(2, grad.ndim)))

    def _conv_nd(self, x: Array, weight: Array, bias: Array | None, options: ConvOptions) -> Array:
        widen = self.runtime.widen
        geometry = zip(x.shape[2:], weight.shape[2:], options.stride, options.padding, options.dilation)
        out = [conv_output_size(*sizes) for sizes in geometry]
        wide_bias = None if bias is None else widen(bias)
        y = self._convolve(
            widen(x), widen(weight), wide_bias, options.stride, options.padding, options.dilation,
            options.groups, out,
        )  # fmt: skip
        return self.runtime.narrow(y, x.dtype)

    def _conv_nd_x_backward(self, x: Array, weight: Array, output_grad: Array, options: ConvOptions) -> Array:
        widen = self.runtime.widen
        g = self._convolve_transpose(
            widen(output_grad), widen(weight), None, options.stride, options.padding, options.dilation,
            options.groups, x.shape[2:],
        )  # fmt: skip
        return self.runtime.narrow(g, output_grad.dtype)

    def _conv_nd_weight_backward(
        self, x: Array, weight: Array, output_grad: Array, options: ConvOptions
    ) -> Array:
        widen = self.runtime.widen
        g = self._convolve_weight_grad(
            widen(x), widen(output_grad), weight.shape[2:], options.stride, options.padding,
            options.dilation, options.groups,
        )  # fmt: skip
        return self.runtime.narrow(g, output_grad.dtype)

    def _bias_backward(self, x: Array, bias: Array, output_grad: Array) -> Array:
        return self.runtime.narrow(self._channel_sums(self.runtime.widen(output_grad)), output_grad.dtype)

    def _conv_transpose_nd(
        self, x: Array, weight: Array, bias: Array | None, options: ConvTransposeOptions
    ) -> Array:
        widen = self.runtime.widen
        geometry = zip(
            x.shape[2:], weight.shape[2:], options.stride, options.padding, options.padding_out,
            options.dilation,
        )  # fmt: skip
        out = [conv_transpose_output_size(*sizes) for sizes in geometry]
        wide_bias = None if bias is None else widen(bias)
        y = self._convolve_transpose(
            widen(x), widen(weight), wide_bias, options.stride, options.padding, options.dilation,
            options.groups, out,
        )  # fmt: skip
        return self.runtime.narrow(y, x.dtype)

    def _conv_transpose_nd_x_backward(
        self, weight: Array, output_grad: Array, options: ConvTransposeOptions
    ) -> Array:
        widen = self.runtime.widen
        geometry = zip(
            output_grad.shape[2:], weight.shape[2:], options.stride, options.padding, options.padding_out,
            options.dilation,
        )  # fmt: skip
        # the forward convolution's geometry, less the output padding the transposed one added
        sizes = [conv_output_size(n - q, k, s, p, d) for n, k, s, p, q, d in geometry]
        g = self._convolve(
            widen(output_grad), widen(weight), None, options.stride, options.padding, options.dilation,
            options.groups, sizes,
        )  # fmt: skip
        return self.runtime.narrow(g, output_grad.dtype)

    def _conv_transpose_nd_weight_backward(
        self, x: Array, weight: Array, output_grad: Array, options: ConvTransposeOptions
    ) -> Array:
        widen = self.runtime.widen
        g = self._convolve_weight_grad(
            widen(output_grad), widen(x), weight.shape[2:], options.stride, options.padding,
            options.dilation, options.groups,
        )  # fmt: skip
        return self.runtime.narrow(g, output_grad.dtype)

    # the interface names each rank: one function per role, bound under each rank's name
    conv1d = conv2d = conv3d = _conv_nd
    conv1d_x_backward = conv2d_x_backward = conv3d_x_backward = _conv_nd_x_backward
    conv1d_weight_backward = conv2d_weight_backward = conv3d_weight_backward = _conv_nd_weight_backward
    conv1d_bias_backward = conv2d_bias_backward = conv3d_bias_backward = _bias_backward
    conv_transpose1d = conv_transpose2d = conv_transpose3d = _conv_transpose_nd
    conv_transpose1d_x_backward = conv_transpose2d_x_backward = _conv_transpose_nd_x_backward
    conv_transpose3d_x_backward = _conv_transpose_nd_x_backward
    conv_transpose1d_weight_backward = conv_transpose2d_weight_backward = _conv_transpose_nd_weight_backward
    conv_transpose3d_weight_backward = _conv_transpose_nd_weight_backward
    conv_transpose1d_bias_backward = conv_transpose2d_bias_backward = _bias_backward
    conv_transpose3d_bias_backward = _bias_backward

    # -- folding ----------------------------------------------------------------------------------
    def unfold4d(self, x: Array, kernel_size: tuple[int, int], options: UnfoldOptions) -> Array:
        xp: Any = self.xp
        geometry = zip(x.shape[2:], kernel_size, options.stride, options.padding, options.dilation)
        out = [conv_output_size(*sizes) for sizes in geometry]
        steps = zip(out, options.stride, kernel_size, options.dilation)
        windows = place(xp, x, options.padding, [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in steps], 0.0)
        for axis, (k, s, d) in enumerate(zip(kernel_size, options.stride, options.dilation), 2):
            windows = self.runtime.windows(windows, axis, (k - 1) * d + 1, s)[..., ::d]
        batch, channels = x.shape[:2]
        columns = xp.permute_dims(windows, (0, 1, 4, 5, 2, 3))  # [batch, channels, kh, kw, oh, ow]
        return xp.reshape(columns, (batch, channels * math.prod(kernel_size), math.prod(out)))

    def fold4d(
        self, x: Array, output_size: tuple[int, int], kernel_size: tuple[int, int], options: UnfoldOptions
    ) -> Array:
        xp: Any = self.xp
        work = self.runtime.widen(x)
        batch, depth = x.shape[:2]
        geometry = zip(output_size, kernel_size, options.stride, options.padding, options.dilation)
        out = [conv_output_size(*sizes) for sizes in geometry]
        columns = xp.reshape(work, (batch, depth // math.prod(kernel_size), *kernel_size, *out))
        padded = [size + 2 * p for size, p in zip(output_size, options.padding)]
        total = xp.zeros((batch, columns.shape[1], *padded), dtype=work.dtype)
        for offsets in itertools.product(*(range(k) for k in kernel_size)):
            steps = zip(offsets, options.dilation, out, options.stride)
            spans = (slice(i * d, i * d + (o - 1) * s + 1, s) for i, d, o, s in steps)
            into, at = (slice(None), slice(None), *spans), (slice(None), slice(None), *offsets, ...)
            total[into] += columns[at]
        result = place(xp, total, [-p for p in options.padding], output_size, 0.0)
        return self.runtime.narrow(result, x.dtype)

    # -- pooling (one function serves the 1-d and the 2-d op) -------------------------------------
    avg_pool1d = avg_pool2d = _pool.avg_pool
    avg_pool1d_backward = avg_pool2d_backward = _pool.avg_pool_backward
    adaptive_avg_pool1d = adaptive_avg_pool2d = _pool.adaptive_avg_pool
    adaptive_avg_pool1d_backward = adaptive_avg_pool2d_backward = _pool.adaptive_avg_pool_backward
    max_pool1d = max_pool2d = _pool.max_pool
    max_pool1d_with_indices = max_pool2d_with_indices = _pool.max_pool_with_indices
    max_pool1d_with_indices_backward = max_pool2d_with_indices_backward = _pool.max_pool_backward

    # -- interpolation ----------------------------------------------------------------------------
    def _taps_along(self, x: Array, axis: int, mode: InterpolateMode, out: int) -> Array:
        """``sum over taps of weight * x[..., index, ...]`` along ``axis`` (weights of 1 not multiplied)."""
        xp: Any = self.xp
        constant = self.runtime.constant
        size = x.shape[axis]
        shape = tuple(out if dim == axis else 1 for dim in range(x.ndim))
        total = None
        for tap, (_, weights) in enumerate(_taps(mode, size, out)):
            picked = xp.take(x, constant(_tap_index, mode, size, out, tap), axis=axis)
            if any(w != 1.0 for w in weights):
                picked *= constant(_tap_weights, mode, size, out, tap, shape, dtype=x.dtype)
            if total is None:
                total = picked
            else:
                total += picked
        return total

    def interpolate(self, x: Array, output_size: tuple[int, int], options: InterpolateOptions) -> Array:
        columns = self._taps_along(self.runtime.widen(x), 3, options.mode, output_size[1])
        return self.runtime.narrow(self._taps_along(columns, 2, options.mode, output_size[0]), x.dtype)

    def interpolate_backward(
        self, x: Array, grad: Array, output_size: tuple[int, int], options: InterpolateOptions
    ) -> Array:
        work = self.runtime.widen(grad)
        (height, width), constant = x.shape[2:], self.runtime.constant
        rows = constant(_taps_matrix, options.mode, height, output_size[0], True, dtype=work.dtype)
        columns = constant(_taps_matrix, options.mode, width, output_size[1], False, dtype=work.dtype)
        matmul = self.runtime.matmul
        return self.runtime.narrow(matmul(matmul(rows, work), columns), grad.dtype)

    # -- attention and normalization (in _attention and _norm) ---------------------------------------
    attention = _attention.attention
    attention_backward = _attention.attention_backward
    layer_norm = _norm.layer_norm
    layer_norm_backward = _norm.layer_norm_backward
    rms_norm = _norm.rms_norm
    rms_norm_backward = _norm.rms_norm_backward
    group_norm = _norm.group_norm
    group_norm_backward = _norm.group_norm_backward
    batch_norm = _norm.batch_norm
    batch_norm_training = _norm.batch_norm_training
    batch_norm_backward = _norm.batch_norm_backward

    # -- FFT --------------------------------------------------------------------------------------
    def rfft(self, signal: Array, dim: int) -> tuple[Array, Array]:
        xp: Any = self.xp
        spectrum = xp.fft.rfft(self.runtime.widen(signal), axis=dim)
        parts = (xp.asarray(xp.real(spectrum), copy=True), xp.asarray(xp.imag(spectrum), copy=True))
        return self.runtime.narrow(parts[0], signal.dtype), self.runtime.narrow(parts[1], signal.dtype)

    def irfft(self, spectrum_re: Array, spectrum_im: Array, dim: int, n: int) -> Array:
        xp: Any = self.xp
        re, im = self.runtime.widen(spectrum_re), self.runtime.widen(spectrum_im)
        # the imaginary parts of bin 0 and (even n) bin n / 2 are ignored, whatever the library's
        # transform makes of them
        bins = xp.arange(im.shape[dim])
        ignored = (bins == 0) | (bins == (n // 2 if n % 2 == 0 else -1))
        im = xp.where(
            xp.reshape(ignored, tuple(-1 if d == dim % im.ndim else 1 for d in range(im.ndim))), 0.0, im
        )
        complex_dtype = xp.complex128 if re.dtype == xp.float64 else xp.complex64
        spectrum = self.runtime.cast(re, complex_dtype) + self.runtime.cast(im, complex_dtype) * 1j
        return self.runtime.narrow(xp.fft.irfft(spectrum, n=n, axis=dim), spectrum_re.dtype)

    # -- deformable convolution -------------------------------------------------------------------
    deform_conv2d = _deform_conv.deform_conv2d
    deform_conv2d_backward = _deform_conv.deform_conv2d_backward

    # -- CTC loss ---------------------------------------------------------------------------------
    ctc_loss = _ctc.ctc_loss
    ctc_loss_backward = _ctc.ctc_loss_backward
