"""``ModuleOps``: convolution, pooling, interpolation, embedding, attention and normalization kernels.

Every method has a default built from the float, int and bool ops, so a new backend runs them as soon
as its required ops exist; backends override the ones they can do faster. Layouts are channels-first
(``[batch, channels, *spatial]``); weights of convolutions are ``[out, in / groups, *kernel]`` and of
transposed convolutions ``[in, out / groups, *kernel]``, as in Burn and PyTorch.

The defaults lower convolutions to im2col plus one batched matrix product (a loop over kernel offsets
gathers the windows), transposed convolutions to a convolution of the zero-interleaved input with the
flipped kernel (``_conv``). Attention and the normalizations, forward and backward, are written over
float ops in ``_attention`` and ``_norm``, the LSTM and GRU layers in ``_rnn`` (bound here). Pooling,
folding, interpolation, the real FFT, deformable convolution and CTC loss are written once, in
``burn_backend.array``: their defaults run that code over NumPy on the host (``_host``). Defaults that
compute floats take f16 and bf16 inputs to f32 and round the result once (``in_f32``).

The shape helpers (output sizes, pooling divisors, interpolation taps, in ``_sizes``) are shared with
``burn_backend.kit`` and with backends, so every implementation agrees on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .._dtype import DType
from . import _attention, _norm, _rnn
from ._conv import (
    _bias_grad,
    _conv_forward,
    _conv_transpose_forward,
    _conv_transpose_weight_backward,
    _conv_transpose_x_backward,
    _conv_weight_backward,
    _conv_x_backward,
    _dtype,
)
from ._host import run_on_host
from ._low_precision import in_f32

if TYPE_CHECKING:
    from .._options import (
        ConvOptions,
        ConvTransposeOptions,
        DeformConvOptions,
        InterpolateOptions,
        UnfoldOptions,
    )

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype
Sizes = Sequence[int]


class DeformConv2dBackward(NamedTuple):
    """The gradients ``ModuleOps.deform_conv2d_backward`` returns, each of its input's shape; ``mask_grad``
    and ``bias_grad`` are ``None`` when the forward had no mask or no bias."""

    x_grad: Any
    offset_grad: Any
    weight_grad: Any
    mask_grad: Any | None
    bias_grad: Any | None


class ModuleOps:
    """The module op group. All methods have defaults (see the module docstring).

    Conventions: inputs are channels-first; options carry one entry per spatial dim; returned indices
    have the backend's ``int_dtype``; inputs are valid (the public ``burn_backend.module`` functions
    check shapes, kinds and options before calling these).
    """

    int_dtype: DType

    # -- embedding and linear ---------------------------------------------------------------------
    def embedding(self, weights: P, indices: P) -> P:
        """Rows of ``weights`` ``[n, d]`` picked by int ``indices`` ``[b, s]``: ``[b, s, d]``."""
        b: Any = self
        batch, seq = indices.shape
        flat = b.int_reshape(indices, (batch * seq,))
        rows = b.float_select(weights, 0, flat)
        return b.float_reshape(rows, (batch, seq, weights.shape[1]))

    @in_f32
    def embedding_backward(self, weights: P, output_grad: P, indices: P) -> P:
        """The gradient of ``embedding`` with respect to ``weights``: each row of ``output_grad`` added
        to the row of ``weights`` it came from (``[n, d]``)."""
        b: Any = self
        batch, seq = indices.shape
        flat = b.int_reshape(indices, (batch * seq,))
        zeros = b.float_zeros(tuple(weights.shape), b.float_device(output_grad), _dtype(output_grad))
        grad = b.float_reshape(output_grad, (batch * seq, weights.shape[1]))
        return b.float_select_add(zeros, 0, flat, grad)

    @in_f32
    def linear(self, x: P, weight: P, bias: P | None) -> P:
        """``x @ weight + bias`` with ``weight`` of shape ``[d_in, d_out]`` (Burn's layout) over the last
        dim of ``x`` (any rank >= 1); ``bias`` is ``[d_out]`` or ``None``."""
        b: Any = self
        rank = len(x.shape)
        d_in, d_out = weight.shape
        if rank == 1:
            y = b.float_reshape(b.float_matmul(b.float_reshape(x, (1, d_in)), weight), (d_out,))
        else:
            w = weight if rank == 2 else b.float_reshape(weight, (1,) * (rank - 2) + (d_in, d_out))
            y = b.float_matmul(x, w)
        if bias is None:
            return y
        return b.float_add(y, b.float_reshape(bias, (1,) * (rank - 1) + (d_out,)))

    # -- convolution: one default per role, bound under each rank's name (N = 1, 2, 3) -------------
    @in_f32
    def _conv_nd(self, x: P, weight: P, bias: P | None, options: ConvOptions) -> P:
        """N-d convolution (cross-correlation): ``x [b, c_in, *size]``, ``weight [c_out, c_in / groups,
        *kernel]``, ``bias [c_out]`` or ``None``; returns ``[b, c_out, *out]``."""
        return _conv_forward(self, x, weight, bias, options)

    @in_f32
    def _conv_nd_x_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of a convolution with respect to ``x`` (shape of ``x``)."""
        return _conv_x_backward(self, x, weight, output_grad, options)

    @in_f32
    def _conv_nd_weight_backward(self, x: P, weight: P, output_grad: P, options: ConvOptions) -> P:
        """The gradient of a convolution with respect to ``weight`` (shape of ``weight``)."""
        return _conv_weight_backward(self, x, weight, output_grad, options)

    @in_f32
    def _bias_backward(self, x: P, bias: P, output_grad: P) -> P:
        """The gradient of a convolution or transposed convolution with respect to ``bias``:
        ``output_grad`` summed per channel."""
        return _bias_grad(self, output_grad)

    @in_f32
    def _conv_transpose_nd(self, x: P, weight: P, bias: P | None, options: ConvTransposeOptions) -> P:
        """N-d transposed convolution: ``x [b, c_in, *size]``, ``weight [c_in, c_out / groups, *kernel]``,
        ``bias [c_out]`` or ``None``; returns ``[b, c_out, *out]``."""
        return _conv_transpose_forward(self, x, weight, bias, options)

    @in_f32
    def _conv_transpose_nd_x_backward(self, weight: P, output_grad: P, options: ConvTransposeOptions) -> P:
        """The gradient of a transposed convolution with respect to ``x``."""
        return _conv_transpose_x_backward(self, weight, output_grad, options)

    @in_f32
    def _conv_transpose_nd_weight_backward(
        self, x: P, weight: P, output_grad: P, options: ConvTransposeOptions
    ) -> P:
        """The gradient of a transposed convolution with respect to ``weight``."""
        return _conv_transpose_weight_backward(self, x, weight, output_grad, options)

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

    def unfold4d(self, x: P, kernel_size: tuple[int, int], options: UnfoldOptions) -> P:
        """The sliding windows of ``x [b, c, h, w]`` as columns: ``[b, c * kh * kw, windows]`` (channel
        major, then kernel row and column; windows row-major), like PyTorch's ``F.unfold``."""
        return run_on_host(self, "unfold4d", x, kernel_size, options)

    # -- average pooling --------------------------------------------------------------------------
    def avg_pool1d(
        self, x: P, kernel_size: int, stride: int, padding: int, count_include_pad: bool, ceil_mode: bool
    ) -> P:
        """1-d average pooling of ``x [b, c, l]`` (PyTorch's padding, divisor and ``ceil_mode`` rules)."""
        return run_on_host(self, "avg_pool1d", x, kernel_size, stride, padding, count_include_pad, ceil_mode)

    def avg_pool1d_backward(
        self,
        x: P,
        grad: P,
        kernel_size: int,
        stride: int,
        padding: int,
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> P:
        """The gradient of ``avg_pool1d`` with respect to ``x``."""
        args = (kernel_size, stride, padding, count_include_pad, ceil_mode)
        return run_on_host(self, "avg_pool1d_backward", x, grad, *args)

    def avg_pool2d(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> P:
        """2-d average pooling of ``x [b, c, h, w]``."""
        return run_on_host(self, "avg_pool2d", x, kernel_size, stride, padding, count_include_pad, ceil_mode)

    def avg_pool2d_backward(
        self,
        x: P,
        grad: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> P:
        """The gradient of ``avg_pool2d`` with respect to ``x``."""
        args = (kernel_size, stride, padding, count_include_pad, ceil_mode)
        return run_on_host(self, "avg_pool2d_backward", x, grad, *args)

    def adaptive_avg_pool1d(self, x: P, output_size: int) -> P:
        """Averages of ``x [b, c, l]`` over ``output_size`` windows ``[floor(i*l/o), ceil((i+1)*l/o))``."""
        return run_on_host(self, "adaptive_avg_pool1d", x, output_size)

    def adaptive_avg_pool1d_backward(self, x: P, grad: P) -> P:
        """The gradient of ``adaptive_avg_pool1d`` with respect to ``x``."""
        return run_on_host(self, "adaptive_avg_pool1d_backward", x, grad)

    def adaptive_avg_pool2d(self, x: P, output_size: tuple[int, int]) -> P:
        """Adaptive average pooling of ``x [b, c, h, w]`` to ``output_size`` (separable windows)."""
        return run_on_host(self, "adaptive_avg_pool2d", x, output_size)

    def adaptive_avg_pool2d_backward(self, x: P, grad: P) -> P:
        """The gradient of ``adaptive_avg_pool2d`` with respect to ``x``."""
        return run_on_host(self, "adaptive_avg_pool2d_backward", x, grad)

    # -- max pooling ------------------------------------------------------------------------------
    def max_pool1d(
        self, x: P, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> P:
        """1-d max pooling of ``x [b, c, l]``; padding never wins."""
        return self.max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]

    def max_pool1d_with_indices(
        self, x: P, kernel_size: int, stride: int, padding: int, dilation: int, ceil_mode: bool
    ) -> tuple[P, P]:
        """``max_pool1d`` and the position in ``x``'s last dim each maximum came from (first on ties)."""
        args = (kernel_size, stride, padding, dilation, ceil_mode)
        pooled: tuple[P, P] = run_on_host(self, "max_pool1d_with_indices", x, *args)
        return pooled

    def max_pool1d_with_indices_backward(
        self,
        x: P,
        kernel_size: int,
        stride: int,
        padding: int,
        dilation: int,
        ceil_mode: bool,
        output_grad: P,
        indices: P,
    ) -> P:
        """The gradient of ``max_pool1d`` with respect to ``x``: each output's gradient added at its
        index."""
        args = (kernel_size, stride, padding, dilation, ceil_mode, output_grad, indices)
        return run_on_host(self, "max_pool1d_with_indices_backward", x, *args)

    def max_pool2d(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> P:
        """2-d max pooling of ``x [b, c, h, w]``."""
        return self.max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]

    def max_pool2d_with_indices(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
    ) -> tuple[P, P]:
        """``max_pool2d`` and each maximum's flat position ``row * w + col`` in its input plane (as
        PyTorch; the first in row-major window order on ties)."""
        args = (kernel_size, stride, padding, dilation, ceil_mode)
        pooled: tuple[P, P] = run_on_host(self, "max_pool2d_with_indices", x, *args)
        return pooled

    def max_pool2d_with_indices_backward(
        self,
        x: P,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        ceil_mode: bool,
        output_grad: P,
        indices: P,
    ) -> P:
        """The gradient of ``max_pool2d`` with respect to ``x``."""
        args = (kernel_size, stride, padding, dilation, ceil_mode, output_grad, indices)
        return run_on_host(self, "max_pool2d_with_indices_backward", x, *args)

    # -- interpolation ----------------------------------------------------------------------------
    def interpolate(self, x: P, output_size: tuple[int, int], options: InterpolateOptions) -> P:
        """``x [b, c, h, w]`` resampled to ``output_size`` (see ``interpolation_taps`` for the modes)."""
        return run_on_host(self, "interpolate", x, output_size, options)

    def interpolate_backward(
        self, x: P, grad: P, output_size: tuple[int, int], options: InterpolateOptions
    ) -> P:
        """The gradient of ``interpolate`` with respect to ``x``."""
        return run_on_host(self, "interpolate_backward", x, grad, output_size, options)

    # -- attention and normalization (written in _attention and _norm) ---------------------------------
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

    # -- recurrent layers (written in _rnn) -----------------------------------------------------------
    lstm = _rnn.lstm
    lstm_backward = _rnn.lstm_backward
    gru = _rnn.gru
    gru_backward = _rnn.gru_backward

    # -- FFT and folding ----------------------------------------------------------------------------
    def rfft(self, signal: P, dim: int) -> tuple[P, P]:
        """The DFT of a real ``signal`` along ``dim`` (of length ``n >= 1``): its real and imaginary parts,
        each with ``n // 2 + 1`` bins along ``dim`` (``X[k] = sum_t x[t] * exp(-2 pi i k t / n)``, as
        ``numpy.fft.rfft``)."""
        parts: tuple[P, P] = run_on_host(self, "rfft", signal, dim)
        return parts

    def irfft(self, spectrum_re: P, spectrum_im: P, dim: int, n: int) -> P:
        """The inverse of ``rfft``: the real signal of length ``n`` along ``dim`` whose spectrum has the
        bins ``spectrum_re + i * spectrum_im`` (same shapes), as ``numpy.fft.irfft``: the bins are
        trimmed or zero-padded to ``n // 2 + 1``, and the imaginary parts of bin 0 and (even ``n``) bin
        ``n / 2`` are ignored."""
        return run_on_host(self, "irfft", spectrum_re, spectrum_im, dim, n)

    def fold4d(
        self, x: P, output_size: tuple[int, int], kernel_size: tuple[int, int], options: UnfoldOptions
    ) -> P:
        """The inverse of ``unfold4d`` (PyTorch's ``F.fold``): columns ``x [b, c * kh * kw, windows]``
        summed back into ``[b, c, *output_size]``, each at the window it came from (overlaps add)."""
        return run_on_host(self, "fold4d", x, output_size, kernel_size, options)

    # -- deformable convolution -------------------------------------------------------------------
    def deform_conv2d(
        self, x: P, offset: P, weight: P, mask: P | None, bias: P | None, options: DeformConvOptions
    ) -> P:
        """Deformable 2-d convolution (torchvision's ``deform_conv2d``; DCNv2 with a ``mask``).

        ``x [b, c_in, h, w]``, ``offset [b, 2 * offset_groups * kh * kw, oh, ow]`` (a ``(dy, dx)`` pair
        per kernel tap, tap-major within each offset group), ``weight [c_out, c_in / weight_groups, kh,
        kw]``, ``mask [b, offset_groups * kh * kw, oh, ow]`` or ``None``, ``bias [c_out]`` or ``None``.
        Each tap reads its input bilinearly at its displaced position (zero outside the input), scaled by
        its mask; returns ``[b, c_out, oh, ow]``.
        """
        return run_on_host(self, "deform_conv2d", x, offset, weight, mask, bias, options)

    def deform_conv2d_backward(
        self,
        x: P,
        offset: P,
        weight: P,
        mask: P | None,
        bias: P | None,
        output_grad: P,
        options: DeformConvOptions,
    ) -> DeformConv2dBackward:
        """The gradients of ``deform_conv2d`` with respect to each input, as a ``DeformConv2dBackward``
        ``(x_grad, offset_grad, weight_grad, mask_grad, bias_grad)``; ``mask_grad`` and ``bias_grad``
        are ``None`` when ``mask`` and ``bias`` are. The offset gradient is that of the bilinear read
        (piecewise linear in the offsets: one-sided where a coordinate is integral)."""
        args = (x, offset, weight, mask, bias, output_grad, options)
        grads: DeformConv2dBackward = run_on_host(self, "deform_conv2d_backward", *args)
        return grads

    # -- CTC loss ---------------------------------------------------------------------------------
    def ctc_loss(self, log_probs: P, targets: P, input_lengths: P, target_lengths: P, blank: int) -> P:
        """The connectionist temporal classification loss of each sample: ``-log p(target | input)``.

        ``log_probs [T, n, classes]`` are log-softmax outputs; ``targets [n, s]`` (int) hold each sample's
        labels padded past its target length; ``input_lengths`` and ``target_lengths`` (int ``[n]``) are
        at most ``T`` and ``s``; ``blank`` is the blank class. Returns ``[n]``: PyTorch's ``ctc_loss``
        with ``reduction='none'``, ``inf`` where no alignment fits in the input.
        """
        return run_on_host(self, "ctc_loss", log_probs, targets, input_lengths, target_lengths, blank)

    def has_ctc_loss_backward(self) -> bool:
        """Whether ``ctc_loss_backward`` is available; the default one is, so autodiff may call it
        instead of differentiating through the recursion of ``ctc_loss``."""
        return True

    def ctc_loss_backward(
        self, log_probs: P, targets: P, input_lengths: P, target_lengths: P, blank: int, output_grad: P
    ) -> P:
        """The gradient of ``ctc_loss`` ``[T, n, classes]`` given ``output_grad [n]``, as PyTorch computes
        it: ``(exp(log_probs) - posterior) * output_grad`` within each input, zero after it (NaN within an
        input whose loss is infinite). That is the gradient with respect to the logits behind
        ``log_probs = log_softmax(logits)``, and also what autodiff through the log-softmax yields."""
        args = (log_probs, targets, input_lengths, target_lengths, blank, output_grad)
        return run_on_host(self, "ctc_loss_backward", *args)
