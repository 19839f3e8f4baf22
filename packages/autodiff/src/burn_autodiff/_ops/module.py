"""Autodiff's module ops: forward on the inner backend's kernel, backward on its backward kernels.

Convolutions, pooling, interpolation, embedding, linear, deformable convolution and (where the inner
backend has its backward) the CTC loss each record one node whose backward calls the inner backend's
``*_backward`` kernel: one kernel call per gradient instead of the graph of slices and products the
interface's defaults would record, and the inner backend's precision (f16 and bf16 accumulate in f32 on
the backends that can). A node keeps which of its inputs are tracked, so backward computes only the
gradients someone needs (the input gradient of a first layer is as costly as its forward).

``unfold4d`` and ``fold4d`` are each other's adjoints, and so are ``rfft`` and ``irfft`` up to a fixed
weight per frequency bin: each runs on the inner kernel and differentiates through the other.
Attention and the layer, RMS, group and batch norms run on the inner kernel and delegate their
gradients to its backward ops (``_norm``). Grid sampling has no backward kernel: with tracked inputs it
composes the interface's differentiable default (in f32 for f16 and bf16 inputs, as the inner kernels
compute); with none it runs the inner kernel directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from burn_backend import Backend, BatchNormTraining, DType, FloatTensorOps, RnnForward, TensorData

from .._graph import AutodiffTensor, OpSpec
from ._common import LOW_PRECISION, Recorder
from ._norm import ATTENTION, BATCH_NORM, NORMS
from ._rnn import RNNS

if TYPE_CHECKING:
    from burn_backend import (
        AttentionOptions,
        ConvOptions,
        ConvTransposeOptions,
        DeformConvOptions,
        GridSampleOptions,
        InterpolateOptions,
        UnfoldOptions,
    )

P = Any  # a primitive of the inner backend
T = AutodiffTensor
Grads = Sequence[P | None]


def _tracked(*tensors: T | None) -> tuple[bool, ...]:
    """Which of ``tensors`` carry a graph node, that is, which gradients backward must compute."""
    return tuple(isinstance(t, AutodiffTensor) and t.node is not None for t in tensors)


def _primitive(tensor: T | None) -> P | None:
    return None if tensor is None else tensor.primitive


# -- convolutions ---------------------------------------------------------------------------------
def _conv_spec(name: str, transposed: bool, with_bias: bool) -> OpSpec:
    """``conv{n}d`` or ``conv_transpose{n}d``: inputs ``(x, weight[, bias])``, args ``(options, tracked)``.

    An absent bias is no input at all: a kept input must be a tensor (balanced checkpointing would
    otherwise look for its parent).
    """
    x_backward, weight_backward, bias_backward = (
        f"{name}_{part}_backward" for part in ("x", "weight", "bias")
    )

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        options, needs = args
        x, weight = xs[0], xs[1]
        grad_x = None
        if needs[0]:
            # the input gradient of a transposed convolution is a convolution: it needs no x
            x_args = (weight, g, options) if transposed else (x, weight, g, options)
            grad_x = getattr(b, x_backward)(*x_args)
        grad_weight = getattr(b, weight_backward)(x, weight, g, options) if needs[1] else None
        if not with_bias:
            return grad_x, grad_weight
        return grad_x, grad_weight, getattr(b, bias_backward)(x, xs[2], g) if needs[2] else None

    return OpSpec(name, backward, keeps_inputs=(0, 1, 2) if with_bias else (0, 1))


_CONV = {
    (name, with_bias): _conv_spec(name, name.startswith("conv_transpose"), with_bias)
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    for with_bias in (False, True)
}


def _deform_conv2d_spec(with_mask: bool, with_bias: bool) -> OpSpec:
    """``deform_conv2d``: inputs ``(x, offset, weight[, mask][, bias])``, args the options."""

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, options: Any) -> Grads:
        x, offset, weight, *rest = xs
        mask = rest.pop(0) if with_mask else None
        bias = rest.pop(0) if with_bias else None
        grads = b.deform_conv2d_backward(x, offset, weight, mask, bias, g, options)
        present = (True, True, True, with_mask, with_bias)
        return tuple(grad for grad, keep in zip(grads, present) if keep)

    return OpSpec("deform_conv2d", backward, keeps_inputs=tuple(range(3 + with_mask + with_bias)))


_DEFORM_CONV2D = {
    (with_mask, with_bias): _deform_conv2d_spec(with_mask, with_bias)
    for with_mask in (False, True)
    for with_bias in (False, True)
}


# -- pooling and resampling -----------------------------------------------------------------------
def _avg_pool_spec(n: int) -> OpSpec:
    """``avg_pool{n}d``: input ``x``, args ``(kernel, stride, padding, count_include_pad, ceil_mode)``."""
    name = f"avg_pool{n}d_backward"
    return OpSpec(
        f"avg_pool{n}d", lambda b, g, xs, out, args: (getattr(b, name)(xs[0], g, *args),), keeps_inputs=(0,)
    )


def _adaptive_avg_pool_spec(n: int) -> OpSpec:
    name = f"adaptive_avg_pool{n}d_backward"
    return OpSpec(
        f"adaptive_avg_pool{n}d", lambda b, g, xs, out, args: (getattr(b, name)(xs[0], g),), keeps_inputs=(0,)
    )


def _max_pool_spec(n: int) -> OpSpec:
    """``max_pool{n}d``: input ``x``, args ``(indices, kernel, stride, padding, dilation, ceil_mode)``."""
    name = f"max_pool{n}d_with_indices_backward"

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        indices, *options = args
        return (getattr(b, name)(xs[0], *options, g, indices),)

    return OpSpec(f"max_pool{n}d", backward, keeps_inputs=(0,))


_AVG_POOL = {n: _avg_pool_spec(n) for n in (1, 2)}
_ADAPTIVE_AVG_POOL = {n: _adaptive_avg_pool_spec(n) for n in (1, 2)}
_MAX_POOL = {n: _max_pool_spec(n) for n in (1, 2)}
_INTERPOLATE = OpSpec(
    "interpolate",
    lambda b, g, xs, out, args: (b.interpolate_backward(xs[0], g, args[0], args[1]),),
    keeps_inputs=(0,),
)
# unfold4d and fold4d move data only: each is the other's adjoint and their backward reads no input
_UNFOLD4D = OpSpec(
    "unfold4d",
    lambda b, g, xs, out, args: (b.fold4d(g, args[0], args[1], args[2]),),
    lambda b, xs, args: b.unfold4d(xs[0], args[1], args[2]),
)
_FOLD4D = OpSpec(
    "fold4d",
    lambda b, g, xs, out, args: (b.unfold4d(g, args[1], args[2]),),
    lambda b, xs, args: b.fold4d(xs[0], args[0], args[1], args[2]),
)


# -- embedding, linear, CTC -----------------------------------------------------------------------
_EMBEDDING = OpSpec(
    "embedding",
    lambda b, g, xs, out, args: (b.embedding_backward(xs[0], g, xs[1]), None),
    keeps_inputs=(0, 1),
)


def _linear_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, needs: Any) -> Grads:
    x, weight, _ = xs
    d_in, d_out = weight.shape
    rows = math.prod(g.shape[:-1])
    # the leading dims flattened: one matrix product per gradient, no broadcast batch to sum back
    g_rows = b.float_reshape(g, (rows, d_out))
    grad_x = grad_weight = grad_bias = None
    if needs[0]:
        grad_x = b.float_reshape(b.float_matmul(g_rows, b.float_transpose(weight)), tuple(x.shape))
    if needs[1]:
        x_rows = b.float_reshape(x, (rows, d_in))
        grad_weight = b.float_matmul(b.float_transpose(x_rows), g_rows)
    if needs[2]:
        grad_bias = b.float_reshape(b.float_sum_dim(g_rows, 0), (d_out,))
    return grad_x, grad_weight, grad_bias


_LINEAR = OpSpec("linear", _linear_backward, keeps_inputs=(0, 1))


def _ctc_loss_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, blank: Any) -> Grads:
    log_probs, targets, input_lengths, target_lengths = xs
    grad = b.ctc_loss_backward(log_probs, targets, input_lengths, target_lengths, blank, g)
    return grad, None, None, None


_CTC_LOSS = OpSpec("ctc_loss", _ctc_loss_backward, keeps_inputs=(0, 1, 2, 3))


# -- FFT ------------------------------------------------------------------------------------------
def _bin_factors(b: Backend, n: int, like: P, dim: int, paired: float, lone: float) -> P:
    """A constant ``[1, .., n // 2 + 1, .., 1]`` along ``dim`` of the spectrum of a real signal of
    length ``n``: ``lone`` at bin 0 and (even ``n``) bin ``n / 2``, which stand for themselves only,
    ``paired`` at the others, which stand for a conjugate pair. The factors are powers of two (or 0),
    so scaling by them rounds nothing in any dtype."""
    bins = n // 2 + 1
    factors = [paired] * bins
    factors[0] = lone
    if n % 2 == 0:
        factors[n // 2] = lone
    shape = tuple(bins if d == dim else 1 for d in range(len(like.shape)))
    data = TensorData(factors, DType.of(like.dtype), shape)
    return b.float_from_data(data, b.float_device(like))


def _rfft_part_backward(imaginary: bool) -> Callable[[Backend, P, Sequence[Any], Any, Any], Grads]:
    """The gradient of one part of ``rfft``: ``sum_k g_k cos(2 pi k t / n)`` (real part) or
    ``-sum_k g_k sin(2 pi k t / n)`` (imaginary part), which is ``n * irfft`` of ``g`` (or ``i g``) with
    the paired bins halved."""

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        dim, n = args
        scaled = b.float_mul(g, _bin_factors(b, n, g, dim, paired=0.5, lone=1.0))
        zeros = b.float_zeros(tuple(g.shape), b.float_device(g), DType.of(g.dtype))
        re, im = (zeros, scaled) if imaginary else (scaled, zeros)
        return (b.float_mul_scalar(b.irfft(re, im, dim, n), float(n)),)

    return backward


_RFFT_RE = OpSpec("rfft_re", _rfft_part_backward(imaginary=False))
_RFFT_IM = OpSpec("rfft_im", _rfft_part_backward(imaginary=True))


def _fit_bins(b: Backend, tensor: P, dim: int, bins: int) -> P:
    """``tensor`` cut or zero-padded to ``bins`` along ``dim``."""
    have = tensor.shape[dim]
    if have > bins:
        slices = tuple(slice(0, bins if d == dim else size, 1) for d, size in enumerate(tensor.shape))
        return b.float_slice(tensor, slices)
    if have < bins:
        shape = tuple(bins - have if d == dim else size for d, size in enumerate(tensor.shape))
        padding = b.float_zeros(shape, b.float_device(tensor), DType.of(tensor.dtype))
        return b.float_cat([tensor, padding], dim)
    return tensor


def _irfft_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
    # y_t = (1/n) sum_k u_k (re_k cos - im_k sin)(2 pi k t / n) with u_k = 2 for the paired bins, 1 for
    # the lone ones, so the gradients are (u_k / n) rfft(g)_k, the lone bins' imaginary parts getting
    # none; bins the forward dropped get none either, and padded ones are no input
    dim, n, bins_in = args
    grad_re, grad_im = b.rfft(g, dim)
    grad_re = b.float_mul(grad_re, _bin_factors(b, n, g, dim, paired=1.0, lone=0.5))
    grad_im = b.float_mul(grad_im, _bin_factors(b, n, g, dim, paired=1.0, lone=0.0))
    return (
        _fit_bins(b, b.float_mul_scalar(grad_re, 2.0 / n), dim, bins_in),
        _fit_bins(b, b.float_mul_scalar(grad_im, 2.0 / n), dim, bins_in),
    )


_IRFFT = OpSpec("irfft", _irfft_backward)


class ModuleOps(Recorder):
    """Module ops with gradients: the inner backend's kernels forward and its backward kernels backward."""

    # -- helpers ----------------------------------------------------------------------------------
    def _composed(self, default: Callable[..., Any], args: Sequence[Any], like: T) -> Any:
        """``default(self, *args)``: an interface default composed of differentiable ops, computed in
        f32 when ``like`` is f16 or bf16 (as the inner kernels compute) and rounded back once."""
        dtype = DType.of(like.dtype)
        if dtype not in LOW_PRECISION:
            return default(self, *args)
        ops: Any = self
        wide = [ops.float_cast(a, DType.F32) if isinstance(a, AutodiffTensor) else a for a in args]
        return ops.float_cast(default(self, *wide), dtype)

    # -- embedding and linear ---------------------------------------------------------------------
    def embedding(self, weights: T, indices: P) -> T:
        """``embedding`` on the inner kernel; ``embedding_backward`` scatters the gradient rows (the
        int ``indices`` get none)."""
        output = self._inner.embedding(weights.primitive, indices)
        return self.track(_EMBEDDING, (weights, indices), output)

    def linear(self, x: T, weight: T, bias: T | None) -> T:
        """``linear`` on the inner kernel; backward is two matrix products over the flattened rows and a
        column sum."""
        output = self._inner.linear(x.primitive, weight.primitive, _primitive(bias))
        return self.track(_LINEAR, (x, weight, bias), output, _tracked(x, weight, bias))

    # -- convolution ------------------------------------------------------------------------------
    def _convolve(self, name: str, x: T, weight: T, bias: T | None, options: Any) -> T:
        """``name`` (a convolution or transposed convolution) on the inner kernel, recorded."""
        output = getattr(self._inner, name)(x.primitive, weight.primitive, _primitive(bias), options)
        inputs = (x, weight) if bias is None else (x, weight, bias)
        return self.track(_CONV[name, bias is not None], inputs, output, (options, _tracked(*inputs)))

    def conv1d(self, x: T, weight: T, bias: T | None, options: ConvOptions) -> T:
        """``conv1d`` on the inner kernel; gradients by ``conv1d_{x,weight,bias}_backward``."""
        return self._convolve("conv1d", x, weight, bias, options)

    def conv2d(self, x: T, weight: T, bias: T | None, options: ConvOptions) -> T:
        """``conv2d`` on the inner kernel; gradients by ``conv2d_{x,weight,bias}_backward``."""
        return self._convolve("conv2d", x, weight, bias, options)

    def conv3d(self, x: T, weight: T, bias: T | None, options: ConvOptions) -> T:
        """``conv3d`` on the inner kernel; gradients by ``conv3d_{x,weight,bias}_backward``."""
        return self._convolve("conv3d", x, weight, bias, options)

    def conv_transpose1d(self, x: T, weight: T, bias: T | None, options: ConvTransposeOptions) -> T:
        """``conv_transpose1d`` on the inner kernel; gradients by its backward kernels."""
        return self._convolve("conv_transpose1d", x, weight, bias, options)

    def conv_transpose2d(self, x: T, weight: T, bias: T | None, options: ConvTransposeOptions) -> T:
        """``conv_transpose2d`` on the inner kernel; gradients by its backward kernels."""
        return self._convolve("conv_transpose2d", x, weight, bias, options)

    def conv_transpose3d(self, x: T, weight: T, bias: T | None, options: ConvTransposeOptions) -> T:
        """``conv_transpose3d`` on the inner kernel; gradients by its backward kernels."""
        return self._convolve("conv_transpose3d", x, weight, bias, options)

    def deform_conv2d(
        self, x: T, offset: T, weight: T, mask: T | None, bias: T | None, options: DeformConvOptions
    ) -> T:
        """``deform_conv2d`` on the inner kernel; ``deform_conv2d_backward`` gives the gradients of x,
        the offsets, the weight, the mask and the bias in one pass."""
        output = self._inner.deform_conv2d(
            x.primitive, offset.primitive, weight.primitive, _primitive(mask), _primitive(bias), options
        )
        inputs = tuple(t for t in (x, offset, weight, mask, bias) if t is not None)
        return self.track(_DEFORM_CONV2D[mask is not None, bias is not None], inputs, output, options)

    def unfold4d(self, x: T, kernel_size: tuple[int, int], options: UnfoldOptions) -> T:
        """``unfold4d`` on the inner kernel; its gradient is ``fold4d`` of the output gradient."""
        output = self._inner.unfold4d(x.primitive, kernel_size, options)
        spatial = (x.shape[2], x.shape[3])
        return self.track(_UNFOLD4D, (x,), output, (spatial, kernel_size, options))

    def fold4d(
        self, x: T, output_size: tuple[int, int], kernel_size: tuple[int, int], options: UnfoldOptions
    ) -> T:
        """``fold4d`` on the inner kernel; its gradient is ``unfold4d`` of the output gradient."""
        output = self._inner.fold4d(x.primitive, output_size, kernel_size, options)
        return self.track(_FOLD4D, (x,), output, (output_size, kernel_size, options))

    # -- pooling ----------------------------------------------------------------------------------
    def avg_pool1d(
        self, x: T, kernel_size: int, stride: int, padding: int, count_include_pad: bool, ceil_mode: bool
    ) -> T:
        """``avg_pool1d`` on the inner kernel; gradient by ``avg_pool1d_backward``."""
        args = (kernel_size, stride, padding, count_include_pad, ceil_mode)
        return self.track(_AVG_POOL[1], (x,), self._inner.avg_pool1d(x.primitive, *args), args)

    def avg_pool2d(
        self,
        x: T,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> T:
        """``avg_pool2d`` on the inner kernel; gradient by ``avg_pool2d_backward``."""
        args = (kernel_size, stride, padding, count_include_pad, ceil_mode)
        return self.track(_AVG_POOL[2], (x,), self._inner.avg_pool2d(x.primitive, *args), args)

    def adaptive_avg_pool1d(self, x: T, output_size: int) -> T:
        """``adaptive_avg_pool1d`` on the inner kernel; gradient by its backward kernel."""
        output = self._inner.adaptive_avg_pool1d(x.primitive, output_size)
        return self.track(_ADAPTIVE_AVG_POOL[1], (x,), output)

    def adaptive_avg_pool2d(self, x: T, output_size: tuple[int, int]) -> T:
        """``adaptive_avg_pool2d`` on the inner kernel; gradient by its backward kernel."""
        output = self._inner.adaptive_avg_pool2d(x.primitive, output_size)
        return self.track(_ADAPTIVE_AVG_POOL[2], (x,), output)

    def max_pool1d(
        self, x: T, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> T:
        """``max_pool1d``; a tracked input is pooled with indices, which backward scatters through."""
        if not _tracked(x)[0]:
            return T(self._inner.max_pool1d(x.primitive, kernel_size, stride, padding, dilation, ceil_mode))
        return self.max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]

    def max_pool1d_with_indices(
        self, x: T, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> tuple[T, P]:
        """``max_pool1d_with_indices`` on the inner kernel; gradient by its backward kernel."""
        options = (kernel_size, stride, padding, dilation, ceil_mode)
        values, indices = self._inner.max_pool1d_with_indices(x.primitive, *options)
        return self.track(_MAX_POOL[1], (x,), values, (indices, *options)), indices

    def max_pool2d(
        self,
        x: T,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> T:
        """``max_pool2d``; a tracked input is pooled with indices, which backward scatters through."""
        if not _tracked(x)[0]:
            return T(self._inner.max_pool2d(x.primitive, kernel_size, stride, padding, dilation, ceil_mode))
        return self.max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]

    def max_pool2d_with_indices(
        self,
        x: T,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> tuple[T, P]:
        """``max_pool2d_with_indices`` on the inner kernel; gradient by its backward kernel."""
        options = (kernel_size, stride, padding, dilation, ceil_mode)
        values, indices = self._inner.max_pool2d_with_indices(x.primitive, *options)
        return self.track(_MAX_POOL[2], (x,), values, (indices, *options)), indices

    # -- interpolation ----------------------------------------------------------------------------
    def interpolate(self, x: T, output_size: tuple[int, int], options: InterpolateOptions) -> T:
        """``interpolate`` on the inner kernel; gradient by ``interpolate_backward``."""
        output = self._inner.interpolate(x.primitive, output_size, options)
        return self.track(_INTERPOLATE, (x,), output, (output_size, options))

    def float_grid_sample_2d(self, tensor: T, grid: T, options: GridSampleOptions) -> T:
        """``grid_sample_2d``: the inner kernel for untracked inputs, else the interface's
        differentiable default (gradients to the tensor and the grid)."""
        if not any(_tracked(tensor, grid)):
            return T(self._inner.float_grid_sample_2d(tensor.primitive, grid.primitive, options))
        return self._composed(FloatTensorOps.float_grid_sample_2d, (tensor, grid, options), tensor)  # type: ignore[no-any-return]

    # -- attention and normalization (specs in _norm) ------------------------------------------------
    def attention(
        self,
        query: T,
        key: T,
        value: T,
        mask: P | None,
        attn_bias: T | None,
        options: AttentionOptions,
    ) -> T:
        """``attention`` on the inner kernel; its gradients come from one ``attention_backward`` call,
        which reads the inputs and the output."""
        primitives = (query.primitive, key.primitive, value.primitive)
        output = self._inner.attention(*primitives, mask, _primitive(attn_bias), options)
        inputs = (query, key, value) if attn_bias is None else (query, key, value, attn_bias)
        return self.track(ATTENTION[attn_bias is not None], inputs, output, (mask, options))

    def _normalize(self, name: str, x: T, gamma: T | None, beta: T | None, args: tuple[Any, ...]) -> T:
        """``name`` (a layer, RMS or group norm) on the inner kernel; gradients by ``{name}_backward``."""
        params = (x.primitive, _primitive(gamma)) + (() if name == "rms_norm" else (_primitive(beta),))
        output = getattr(self._inner, name)(*params, *args)
        inputs = tuple(t for t in (x, gamma, beta) if t is not None)
        return self.track(NORMS[name, gamma is not None, beta is not None], inputs, output, args)

    def layer_norm(self, x: T, gamma: T | None, beta: T | None, epsilon: float) -> T:
        """``layer_norm`` on the inner kernel; gradients by ``layer_norm_backward``."""
        return self._normalize("layer_norm", x, gamma, beta, (epsilon,))

    def rms_norm(self, x: T, gamma: T | None, epsilon: float) -> T:
        """``rms_norm`` on the inner kernel; gradients by ``rms_norm_backward``."""
        return self._normalize("rms_norm", x, gamma, None, (epsilon,))

    def group_norm(self, x: T, gamma: T | None, beta: T | None, num_groups: int, epsilon: float) -> T:
        """``group_norm`` on the inner kernel; gradients by ``group_norm_backward``."""
        return self._normalize("group_norm", x, gamma, beta, (num_groups, epsilon))

    def batch_norm(
        self, x: T, gamma: T | None, beta: T | None, running_mean: T, running_var: T, epsilon: float
    ) -> T:
        """``batch_norm`` (inference form) on the inner kernel; the running statistics are constants
        (they get no gradient), and ``batch_norm_backward`` gives the others."""
        inner = self._inner
        mean, var = running_mean.primitive, running_var.primitive
        output = inner.batch_norm(x.primitive, _primitive(gamma), _primitive(beta), mean, var, epsilon)
        invstd = inner.float_recip(inner.float_sqrt(inner.float_add_scalar(var, epsilon)))
        inputs = tuple(t for t in (x, gamma, beta) if t is not None)
        spec = BATCH_NORM[gamma is not None, beta is not None]
        return self.track(spec, inputs, output, (mean, invstd, False))

    def batch_norm_training(
        self,
        x: T,
        gamma: T | None,
        beta: T | None,
        running_mean: T | None,
        running_var: T | None,
        momentum: float,
        epsilon: float,
    ) -> BatchNormTraining:
        """``batch_norm_training`` on the inner kernel: the output is recorded (gradients by
        ``batch_norm_backward`` from the saved batch statistics); the updated running statistics and
        the saved ones are constants."""
        result = self._inner.batch_norm_training(
            x.primitive,
            _primitive(gamma),
            _primitive(beta),
            _primitive(running_mean),
            _primitive(running_var),
            momentum,
            epsilon,
        )
        output, new_mean, new_var, mean, invstd = result
        inputs = tuple(t for t in (x, gamma, beta) if t is not None)
        tracked = self.track(
            BATCH_NORM[gamma is not None, beta is not None], inputs, output, (mean, invstd, True)
        )
        return BatchNormTraining(
            tracked,
            None if new_mean is None else T(new_mean),
            None if new_var is None else T(new_var),
            T(mean),
            T(invstd),
        )

    # -- recurrent layers (specs in _rnn) --------------------------------------------------------------
    def _recurrent(
        self,
        name: str,
        x: T,
        states: tuple[T, ...],
        weights: tuple[T, T],
        biases: tuple[T | None, T | None],
        reverse: bool,
    ) -> RnnForward:
        """``name`` (``lstm`` or ``gru``) on the inner kernel: the states are recorded, their gradients
        one ``{name}_backward`` call reading the saved workspace; the workspace is a constant."""
        primitives = (x.primitive, *(s.primitive for s in states), *(w.primitive for w in weights))
        outputs, workspace = getattr(self._inner, name)(*primitives, *map(_primitive, biases), reverse)
        inputs = tuple(t for t in (x, *states, *weights, *biases) if t is not None)
        spec = RNNS[name, biases[0] is not None, biases[1] is not None]
        tracked = self.track(spec, inputs, outputs, (reverse, workspace))
        return RnnForward(tracked, T(workspace))

    def lstm(
        self,
        x: T,
        h0: T,
        c0: T,
        weight_ih: T,
        weight_hh: T,
        bias_ih: T | None,
        bias_hh: T | None,
        reverse: bool,
    ) -> RnnForward:
        """``lstm`` on the inner kernel; gradients by ``lstm_backward``."""
        return self._recurrent("lstm", x, (h0, c0), (weight_ih, weight_hh), (bias_ih, bias_hh), reverse)

    def gru(
        self, x: T, h0: T, weight_ih: T, weight_hh: T, bias_ih: T | None, bias_hh: T | None, reverse: bool
    ) -> RnnForward:
        """``gru`` on the inner kernel; gradients by ``gru_backward``."""
        return self._recurrent("gru", x, (h0,), (weight_ih, weight_hh), (bias_ih, bias_hh), reverse)

    # -- FFT --------------------------------------------------------------------------------------
    def rfft(self, signal: T, dim: int) -> tuple[T, T]:
        """``rfft`` on the inner kernel; each part's gradient is an ``irfft`` of the output gradient."""
        re, im = self._inner.rfft(signal.primitive, dim)
        dim %= len(signal.shape)
        args = (dim, signal.shape[dim])
        return self.track(_RFFT_RE, (signal,), re, args), self.track(_RFFT_IM, (signal,), im, args)

    def irfft(self, spectrum_re: T, spectrum_im: T, dim: int, n: int) -> T:
        """``irfft`` on the inner kernel; the gradients of both parts come from one ``rfft`` of the
        output gradient."""
        output = self._inner.irfft(spectrum_re.primitive, spectrum_im.primitive, dim, n)
        dim %= len(spectrum_re.shape)
        return self.track(_IRFFT, (spectrum_re, spectrum_im), output, (dim, n, spectrum_re.shape[dim]))

    # -- CTC loss ---------------------------------------------------------------------------------
    def ctc_loss(self, log_probs: T, targets: P, input_lengths: P, target_lengths: P, blank: int) -> T:
        """``ctc_loss`` on the inner kernel, differentiated by ``ctc_loss_backward`` (PyTorch's gradient:
        the one with respect to the logits behind a log-softmax), which every backend has: the
        interface's default runs the shared implementation on the host."""
        output = self._inner.ctc_loss(log_probs.primitive, targets, input_lengths, target_lengths, blank)
        return self.track(_CTC_LOSS, (log_probs, targets, input_lengths, target_lengths), output, blank)
