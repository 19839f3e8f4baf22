"""``ActivationOps``: activation kernels and their backward kernels; every method has a default.

The defaults are built only from the float and bool ops of the backend, so a new backend runs every
activation as soon as its required ops exist; backends override the ones they can do faster (a fused
kernel, one pass over memory). Activation functions of the user API are in ``burn_backend.activation``.
"""

from __future__ import annotations

import math
from typing import Any

from ._low_precision import in_f32

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _log_sigmoid(b: Any, tensor: P) -> P:
    # log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)): exp never sees a positive argument
    softplus_of_minus_abs = b.float_log1p(b.float_exp(b.float_neg(b.float_abs(tensor))))
    return b.float_sub(b.float_clamp_max(tensor, 0.0), softplus_of_minus_abs)


class ActivationOps:
    """The activation op group, as Burn's ``ActivationOps``: every method has a default.

    The conventions of ``FloatTensorOps`` hold: inputs are Float primitives, never mutated; ``dim``
    arrives non-negative and in range; results have the input's shape and dtype. The transcendental
    defaults (gelu, sigmoid, log_sigmoid, the softmax family) compute f16 and bf16 inputs in f32
    (``in_f32``): f16 and bf16 lose too much in exp / log / erf chains.
    """

    # -- rectifiers -------------------------------------------------------------------------------
    def relu(self, tensor: P) -> P:
        """``max(x, 0)``; NaN stays NaN.

        Default: the values ``<= 0`` filled with 0.
        """
        b: Any = self
        return b.float_mask_fill(tensor, b.float_lower_equal_elem(tensor, 0.0), 0.0)

    def relu_backward(self, output: P, grad: P) -> P:
        """The gradient of ``relu`` given its ``output``: ``grad`` where ``output > 0``, else 0.

        Default: ``grad`` with the positions where ``output > 0`` does not hold (a NaN output too)
        filled with 0.
        """
        b: Any = self
        return b.float_mask_fill(grad, b.bool_not(b.float_greater_elem(output, 0.0)), 0.0)

    def leaky_relu(self, tensor: P, negative_slope: float) -> P:
        """``x`` where ``x >= 0``, else ``negative_slope * x``.

        Default: the negative values replaced by the scaled tensor.
        """
        b: Any = self
        scaled = b.float_mul_scalar(tensor, negative_slope)
        return b.float_mask_where(tensor, b.float_lower_elem(tensor, 0.0), scaled)

    def prelu(self, tensor: P, alpha: P) -> P:
        """``x`` where ``x >= 0``, else ``alpha * x``, with learned slopes ``alpha``.

        ``alpha`` is a Float primitive of the tensor's dtype: of the tensor's rank and broadcastable
        to it (one slope per channel has shape ``[1, C, 1, ...]``), or of shape ``[1]`` (one slope
        for all), or of shape ``[C]`` (one slope per channel, dim 1).

        Default: ``alpha`` reshaped to the tensor's rank, then the negative values replaced by the
        product.
        """
        b: Any = self
        rank = len(tensor.shape)
        if len(alpha.shape) != rank:
            count = math.prod(alpha.shape)
            if count == 1:
                alpha = b.float_reshape(alpha, (1,) * rank)
            else:
                shape = [1] * rank
                shape[1] = count
                alpha = b.float_reshape(alpha, tuple(shape))
        scaled = b.float_mul(tensor, alpha)
        return b.float_mask_where(tensor, b.float_lower_elem(tensor, 0.0), scaled)

    # -- gelu -------------------------------------------------------------------------------------
    @in_f32
    def gelu(self, tensor: P) -> P:
        """The exact Gaussian error linear unit: ``x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2)))``.

        Default: from ``float_erf``.
        """
        b: Any = self
        cdf = b.float_add_scalar(b.float_erf(b.float_div_scalar(tensor, _SQRT_2)), 1.0)
        return b.float_mul_scalar(b.float_mul(tensor, cdf), 0.5)

    @in_f32
    def gelu_backward(self, x: P, grad: P) -> P:
        """The gradient of the exact ``gelu`` at input ``x``: ``grad * (Phi(x) + x * phi(x))``, with
        ``Phi`` the standard normal CDF and ``phi`` its density.

        Default: from ``float_erf`` and ``float_exp``. (Burn's default differentiates the tanh
        approximation instead; this one matches the exact forward.)
        """
        b: Any = self
        cdf = b.float_mul_scalar(b.float_add_scalar(b.float_erf(b.float_div_scalar(x, _SQRT_2)), 1.0), 0.5)
        # phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        pdf = b.float_mul_scalar(b.float_exp(b.float_mul_scalar(b.float_mul(x, x), -0.5)), _INV_SQRT_2PI)
        derivative = b.float_add(cdf, b.float_mul(x, pdf))
        return b.float_mul(grad, derivative)

    # -- sigmoids ---------------------------------------------------------------------------------
    @in_f32
    def sigmoid(self, tensor: P) -> P:
        """The logistic function ``1 / (1 + exp(-x))``, accurate (relative) for any ``x``.

        Default: ``exp(log_sigmoid(x))`` with the stable ``log_sigmoid`` below, so no ``exp``
        overflows and tiny results keep their digits.
        """
        b: Any = self
        return b.float_exp(_log_sigmoid(self, tensor))

    def sigmoid_backward(self, output: P, grad: P) -> P:
        """The gradient of ``sigmoid`` given its ``output``: ``grad * output * (1 - output)``."""
        b: Any = self
        one_minus = b.float_add_scalar(b.float_neg(output), 1.0)
        return b.float_mul(grad, b.float_mul(output, one_minus))

    @in_f32
    def hard_sigmoid(self, tensor: P, alpha: float, beta: float) -> P:
        """``max(0, min(1, alpha * x + beta))`` (ONNX HardSigmoid; Burn's ``hard_sigmoid``).

        Default: an affine map and ``float_clamp``.
        """
        b: Any = self
        return b.float_clamp(b.float_add_scalar(b.float_mul_scalar(tensor, alpha), beta), 0.0, 1.0)

    @in_f32
    def log_sigmoid(self, tensor: P) -> P:
        """``log(sigmoid(x))``, accurate for large ``|x|`` (``log_sigmoid(-100) == -100``, and
        ``log_sigmoid(40)`` is ``-exp(-40)``, not 0).

        Default: ``min(x, 0) - log1p(exp(-|x|))``.
        """
        return _log_sigmoid(self, tensor)

    @in_f32
    def log_sigmoid_backward(self, x: P, grad: P) -> P:
        """The gradient of ``log_sigmoid`` at input ``x``: ``grad * sigmoid(-x)``.

        Default: ``sigmoid(-x)`` as ``exp(log_sigmoid(-x))``, exact for large ``|x|``.
        """
        b: Any = self
        derivative = b.float_exp(_log_sigmoid(self, b.float_neg(x)))
        return b.float_mul(grad, derivative)

    # -- softmax family ---------------------------------------------------------------------------
    @in_f32
    def softmax(self, tensor: P, dim: int) -> P:
        """``exp(x) / sum(exp(x))`` along ``dim``; the sums along ``dim`` are 1.

        Default: the maximum along ``dim`` is subtracted first, so no ``exp`` overflows (a row of
        values in the thousands is fine). An empty input is returned as is.
        """
        b: Any = self
        if 0 in tuple(tensor.shape):
            return tensor
        exps = b.float_exp(b.float_sub(tensor, b.float_max_dim(tensor, dim)))
        return b.float_div(exps, b.float_sum_dim(exps, dim))

    @in_f32
    def log_softmax(self, tensor: P, dim: int) -> P:
        """``log(softmax(x))`` along ``dim``: ``x - logsumexp(x)``, accurate where softmax underflows.

        Default: ``(x - max) - log(sum(exp(x - max)))``. An empty input is returned as is.
        """
        b: Any = self
        if 0 in tuple(tensor.shape):
            return tensor
        shifted = b.float_sub(tensor, b.float_max_dim(tensor, dim))
        log_sum = b.float_log(b.float_sum_dim(b.float_exp(shifted), dim))
        return b.float_sub(shifted, log_sum)

    def softmin(self, tensor: P, dim: int) -> P:
        """``softmax(-x)`` along ``dim``: the smallest values get the largest weights.

        Default: ``softmax`` of the negated tensor.
        """
        b: Any = self
        return self.softmax(b.float_neg(tensor), dim)
