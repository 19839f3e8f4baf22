"""Activation functions on Float tensors (Burn's ``burn::tensor::activation``).

Functions with a kernel in the backend interface (``relu``, ``gelu``, ``sigmoid``, ``softmax``, ...)
call it through the tensor's backend, so a backend's fused kernel (and an autodiff backend's gradient)
is used; the others are compositions of ``Tensor`` ops. Every function takes Float tensors only and
returns a tensor of the input's shape, dtype and device (``glu`` and ``swiglu`` halve one dim).

Example:
    >>> from burn_backend import Tensor, activation
    >>> x = Tensor.from_data([[-1.0, 0.0, 2.0]])
    >>> activation.relu(x).tolist()
    [[0.0, 0.0, 2.0]]
    >>> [round(v, 4) for v in activation.softmax(x, dim=1).tolist()[0]]
    [0.042, 0.1142, 0.8438]
"""

from __future__ import annotations

import math
from typing import Any, Literal

from ._distribution import Distribution
from ._dtype import Kind
from ._tensor import Tensor

__all__ = [
    "celu",
    "elu",
    "gelu",
    "gelu_tanh",
    "glu",
    "hard_shrink",
    "hard_sigmoid",
    "hard_swish",
    "hardtanh",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "mish",
    "prelu",
    "quiet_softmax",
    "relu",
    "relu6",
    "rrelu",
    "selu",
    "shrink",
    "sigmoid",
    "silu",
    "soft_shrink",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "swiglu",
    "swish",
    "tanh",
    "tanhshrink",
    "threshold",
    "thresholded_relu",
]

SELU_ALPHA = 1.6732632423543772848170429916717
"""The ``alpha`` of SELU (Klambauer et al., 2017)."""
SELU_SCALE = 1.0507009873554804934193349852946
"""The ``scale`` of SELU (Klambauer et al., 2017)."""

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = 0.044715
_GELU_TANH_CLAMP = 20.0


# -- checks -----------------------------------------------------------------------------------------
def _float_tensor(op: str, tensor: object) -> Tensor:
    """``tensor`` if it is a Float tensor, else a ``TypeError`` naming ``op`` and what was given."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: expected a Float tensor, got {type(tensor).__name__}")
    tensor._require_kind(op, Kind.FLOAT)
    return tensor


def _number(op: str, name: str, value: object) -> float:
    """``value`` as a float if it is a real number (not a bool, not NaN), else a clear error."""
    if isinstance(value, bool) or not hasattr(value, "__float__") or isinstance(value, (complex, Tensor)):
        raise TypeError(f"{op}: {name} must be a number, got {value!r}")
    number = float(value)
    if math.isnan(number):
        raise ValueError(f"{op}: {name} must not be NaN")
    return number


def _positive(op: str, name: str, value: object) -> float:
    number = _number(op, name, value)
    if not number > 0.0:
        raise ValueError(f"{op}: {name} must be positive, got {value!r}")
    return number


def _non_negative(op: str, name: str, value: object) -> float:
    number = _number(op, name, value)
    if number < 0.0:
        raise ValueError(f"{op}: {name} must be non-negative, got {value!r}")
    return number


def _backend(tensor: Tensor) -> Any:
    return tensor._device.backend


def _halves(op: str, tensor: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """The two halves of ``tensor`` along ``dim``, which must have an even size."""
    axis = tensor._dim(op, dim)
    size = tensor.dims()[axis]
    if size % 2:
        raise ValueError(
            f"{op}: dim {dim} of a tensor of shape {tensor.dims()} has odd size {size}; it must be even "
            f"to split into two halves"
        )
    half = size // 2
    return tensor.narrow(axis, 0, half), tensor.narrow(axis, half, half)


# -- rectifiers -------------------------------------------------------------------------------------
def relu(tensor: Tensor) -> Tensor:
    """The rectified linear unit ``max(x, 0)`` (NaN stays NaN).

    Example:
        >>> relu(Tensor.from_data([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    tensor = _float_tensor("relu", tensor)
    return tensor._new(_backend(tensor).relu(tensor._primitive))


def relu6(tensor: Tensor) -> Tensor:
    """``min(max(x, 0), 6)``."""
    tensor = _float_tensor("relu6", tensor)
    return tensor.clamp(0.0, 6.0)


def leaky_relu(tensor: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` where ``x >= 0``, else ``negative_slope * x``.

    Args:
        tensor: a Float tensor.
        negative_slope: the slope for negative inputs (PyTorch's default, 0.01).
    """
    tensor = _float_tensor("leaky_relu", tensor)
    slope = _number("leaky_relu", "negative_slope", negative_slope)
    return tensor._new(_backend(tensor).leaky_relu(tensor._primitive, slope))


def prelu(tensor: Tensor, alpha: Tensor | float) -> Tensor:
    """The parametric ReLU: ``x`` where ``x >= 0``, else ``alpha * x``, with learned slopes.

    Args:
        tensor: a Float tensor.
        alpha: the slopes: a 1-d Float tensor of the tensor's dtype and device with one element (one
            slope for all) or ``C`` elements, one per channel of dim 1 (so ``C == tensor.dims()[1]``);
            or a number.

    Raises:
        ValueError: ``alpha`` is not 1-d, or its size is neither 1 nor the number of channels.
    """
    tensor = _float_tensor("prelu", tensor)
    if not isinstance(alpha, Tensor):
        alpha = Tensor.full([1], _number("prelu", "alpha", alpha), tensor._device, tensor.dtype)
    else:
        _float_tensor("prelu", alpha)
        tensor._check_other("prelu", alpha)
    if alpha.rank != 1:
        raise ValueError(f"prelu: alpha must be 1-d, got shape {alpha.dims()}")
    count = alpha.dims()[0]
    if count != 1 and (tensor.rank < 2 or tensor.dims()[1] != count):
        raise ValueError(
            f"prelu: alpha of {count} slopes for a tensor of shape {tensor.dims()}: it needs 1 slope, or "
            f"one per channel (dim 1)"
        )
    shape = [1] * tensor.rank
    if count != 1:
        shape[1] = count
    weights = alpha.reshape(shape)
    return tensor._new(_backend(tensor).prelu(tensor._primitive, weights._primitive))


def rrelu(
    tensor: Tensor, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, training: bool = False
) -> Tensor:
    """The randomized leaky ReLU: ``x`` where ``x >= 0``, else ``a * x``.

    In training, each element draws its own slope ``a`` uniformly from ``[lower, upper)`` with the
    device's generator; otherwise ``a`` is ``(lower + upper) / 2`` (a ``leaky_relu``).

    Raises:
        ValueError: ``lower`` is above ``upper``.
    """
    tensor = _float_tensor("rrelu", tensor)
    low, high = _number("rrelu", "lower", lower), _number("rrelu", "upper", upper)
    if low > high:
        raise ValueError(f"rrelu: lower {lower} is above upper {upper}")
    if not training or low == high:
        return leaky_relu(tensor, (low + high) / 2.0)
    slopes = Tensor.random(tensor.dims(), Distribution.uniform(low, high), tensor._device, tensor.dtype)
    return tensor.mask_where(tensor.lower_elem(0.0), tensor * slopes)


def threshold(tensor: Tensor, threshold: float, value: float) -> Tensor:
    """``x`` where ``x > threshold``, else ``value`` (PyTorch's ``threshold``)."""
    tensor = _float_tensor("threshold", tensor)
    limit = _number("threshold", "threshold", threshold)
    fill = _number("threshold", "value", value)
    return tensor.mask_fill(tensor.lower_equal_elem(limit), fill)


def thresholded_relu(tensor: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where ``x > alpha``, else 0 (ONNX ThresholdedRelu)."""
    tensor = _float_tensor("thresholded_relu", tensor)
    limit = _number("thresholded_relu", "alpha", alpha)
    return tensor.mask_fill(tensor.lower_equal_elem(limit), 0.0)


# -- exponential units ------------------------------------------------------------------------------
def _expm1_of_negative_part(tensor: Tensor) -> Tensor:
    # exp(min(x, 0)) - 1: the exp never overflows, whatever the positive values are
    return tensor.clamp_max(0.0).exp() - 1.0


def elu(tensor: Tensor, alpha: float = 1.0) -> Tensor:
    """The exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    tensor = _float_tensor("elu", tensor)
    scale = _number("elu", "alpha", alpha)
    negative = _expm1_of_negative_part(tensor) * scale
    return negative.mask_where(tensor.greater_elem(0.0), tensor)


def selu(tensor: Tensor) -> Tensor:
    """The scaled ELU: ``SELU_SCALE * elu(x, SELU_ALPHA)``, self-normalizing."""
    tensor = _float_tensor("selu", tensor)
    return elu(tensor, SELU_ALPHA) * SELU_SCALE


def celu(tensor: Tensor, alpha: float = 1.0) -> Tensor:
    """The continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Raises:
        ValueError: ``alpha`` is not positive.
    """
    tensor = _float_tensor("celu", tensor)
    scale = _positive("celu", "alpha", alpha)
    negative = _expm1_of_negative_part(tensor / scale) * scale
    return negative.mask_where(tensor.greater_elem(0.0), tensor)


# -- gelu -------------------------------------------------------------------------------------------
def gelu(tensor: Tensor, approximate: Literal["none", "tanh"] = "none") -> Tensor:
    """The Gaussian error linear unit ``x * Phi(x)``, ``Phi`` the standard normal CDF.

    Args:
        tensor: a Float tensor.
        approximate: ``"none"`` for the exact function (``x / 2 * (1 + erf(x / sqrt(2)))``, Burn's
            ``gelu``), ``"tanh"`` for the tanh approximation (see ``gelu_tanh``).

    Raises:
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.
    """
    tensor = _float_tensor("gelu", tensor)
    if approximate == "tanh":
        return gelu_tanh(tensor)
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return tensor._new(_backend(tensor).gelu(tensor._primitive))


def gelu_tanh(tensor: Tensor) -> Tensor:
    """GELU with the tanh approximation: ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))``.

    Computed as ``x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 x^3))``, the same function.
    """
    tensor = _float_tensor("gelu_tanh", tensor)
    # (1 + tanh(z)) / 2 is sigmoid(2 z), which keeps its digits where 1 + tanh(z) cancels (x << 0);
    # beyond |x| = 20 the gate is 0 or 1 to double precision, and clamping there keeps x^3 finite in f16
    x = tensor.clamp(-_GELU_TANH_CLAMP, _GELU_TANH_CLAMP)
    inner = (x + x * x * x * _GELU_TANH_CUBIC) * (2.0 * _SQRT_2_OVER_PI)
    return tensor * sigmoid(inner)


# -- sigmoids ---------------------------------------------------------------------------------------
def sigmoid(tensor: Tensor) -> Tensor:
    """The logistic function ``1 / (1 + exp(-x))``."""
    tensor = _float_tensor("sigmoid", tensor)
    return tensor._new(_backend(tensor).sigmoid(tensor._primitive))


def log_sigmoid(tensor: Tensor) -> Tensor:
    """``log(sigmoid(x))`` computed without overflow: ``log_sigmoid(-100)`` is ``-100``."""
    tensor = _float_tensor("log_sigmoid", tensor)
    return tensor._new(_backend(tensor).log_sigmoid(tensor._primitive))


def hard_sigmoid(tensor: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """``max(0, min(1, alpha * x + beta))`` (ONNX HardSigmoid, whose defaults these are)."""
    tensor = _float_tensor("hard_sigmoid", tensor)
    a = _number("hard_sigmoid", "alpha", alpha)
    b = _number("hard_sigmoid", "beta", beta)
    return tensor._new(_backend(tensor).hard_sigmoid(tensor._primitive, a, b))


def silu(tensor: Tensor) -> Tensor:
    """The sigmoid linear unit (swish) ``x * sigmoid(x)``."""
    tensor = _float_tensor("silu", tensor)
    return tensor * sigmoid(tensor)


def swish(tensor: Tensor) -> Tensor:
    """Another name of ``silu``: ``x * sigmoid(x)``."""
    tensor = _float_tensor("swish", tensor)
    return tensor * sigmoid(tensor)


def hard_swish(tensor: Tensor) -> Tensor:
    """``x * relu6(x + 3) / 6``, that is ``x * hard_sigmoid(x, 1/6, 1/2)`` (MobileNetV3)."""
    tensor = _float_tensor("hard_swish", tensor)
    gate = tensor._new(_backend(tensor).hard_sigmoid(tensor._primitive, 1.0 / 6.0, 0.5))
    return tensor * gate


# -- softmax family ---------------------------------------------------------------------------------
def softmax(tensor: Tensor, dim: int) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (negative counts from the end); stable for large values.

    Raises:
        IndexError: ``dim`` is out of range.
    """
    tensor = _float_tensor("softmax", tensor)
    axis = tensor._dim("softmax", dim)
    return tensor._new(_backend(tensor).softmax(tensor._primitive, axis))


def log_softmax(tensor: Tensor, dim: int) -> Tensor:
    """``log(softmax(x))`` along ``dim``, accurate where the softmax underflows.

    Raises:
        IndexError: ``dim`` is out of range.
    """
    tensor = _float_tensor("log_softmax", tensor)
    axis = tensor._dim("log_softmax", dim)
    return tensor._new(_backend(tensor).log_softmax(tensor._primitive, axis))


def softmin(tensor: Tensor, dim: int) -> Tensor:
    """``softmax(-x)`` along ``dim``.

    Raises:
        IndexError: ``dim`` is out of range.
    """
    tensor = _float_tensor("softmin", tensor)
    axis = tensor._dim("softmin", dim)
    return tensor._new(_backend(tensor).softmin(tensor._primitive, axis))


def quiet_softmax(tensor: Tensor, dim: int) -> Tensor:
    """Burn's quiet softmax along ``dim``: ``exp(x) / (1 + sum(exp(x)))``.

    The extra 1 in the denominator is an implicit zero logit, so a row may sum to less than 1: an
    attention head can attend to nothing. Stable for large values of either sign.

    Raises:
        IndexError: ``dim`` is out of range.
    """
    tensor = _float_tensor("quiet_softmax", tensor)
    axis = tensor._dim("quiet_softmax", dim)
    if tensor.num_elements() == 0:
        return tensor
    # shifting by max(max(x), 0) keeps every exp, the implicit exp(0) included, at most 1; the
    # shift cancels out of the value, so it takes no part in gradients
    shift = tensor.max_dim(axis).clamp_min(0.0).detach()
    exps = (tensor - shift).exp()
    return exps / (exps.sum_dim(axis) + shift.neg().exp())


# -- smooth functions -------------------------------------------------------------------------------
def softplus(tensor: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold`` (as PyTorch).

    Computed as ``-log_sigmoid(-beta x) / beta``, which never overflows; its gradient is
    ``sigmoid(beta x)`` everywhere, 0.5 at 0 as PyTorch's (the pieces of
    ``max(beta x, 0) + log1p(exp(-|beta x|))`` would each claim a one-sided derivative there).

    Raises:
        ValueError: ``beta`` is not positive.
    """
    tensor = _float_tensor("softplus", tensor)
    b = _positive("softplus", "beta", beta)
    limit = _number("softplus", "threshold", threshold)
    scaled = tensor * b if b != 1.0 else tensor
    smooth = -log_sigmoid(-scaled)
    if b != 1.0:
        smooth = smooth / b
    return smooth.mask_where(scaled.greater_elem(limit), tensor)


def softsign(tensor: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    tensor = _float_tensor("softsign", tensor)
    return tensor / (tensor.abs() + 1.0)


def mish(tensor: Tensor) -> Tensor:
    """``x * tanh(softplus(x))`` (Misra, 2019)."""
    tensor = _float_tensor("mish", tensor)
    return tensor * softplus(tensor).tanh()


def tanh(tensor: Tensor) -> Tensor:
    """The hyperbolic tangent."""
    tensor = _float_tensor("tanh", tensor)
    return tensor.tanh()


def tanhshrink(tensor: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    tensor = _float_tensor("tanhshrink", tensor)
    return tensor - tensor.tanh()


def hardtanh(tensor: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``x`` limited to ``[min_val, max_val]``.

    Raises:
        ValueError: ``min_val`` is above ``max_val``.
    """
    tensor = _float_tensor("hardtanh", tensor)
    low = _number("hardtanh", "min_val", min_val)
    high = _number("hardtanh", "max_val", max_val)
    if low > high:
        raise ValueError(f"hardtanh: min_val {min_val} is above max_val {max_val}")
    return tensor.clamp(low, high)


# -- shrinkage --------------------------------------------------------------------------------------
def shrink(tensor: Tensor, lambd: float = 0.5, bias: float = 0.0) -> Tensor:
    """ONNX Shrink: ``x - bias`` where ``x > lambd``, ``x + bias`` where ``x < -lambd``, else 0.

    Raises:
        ValueError: ``lambd`` is negative.
    """
    tensor = _float_tensor("shrink", tensor)
    limit = _non_negative("shrink", "lambd", lambd)
    offset = _number("shrink", "bias", bias)
    return _shrink(tensor, limit, offset)


def _shrink(tensor: Tensor, limit: float, offset: float) -> Tensor:
    shifted = tensor - tensor.sign() * offset if offset != 0.0 else tensor
    return shifted.mask_fill(tensor.abs().lower_equal_elem(limit), 0.0)


def hard_shrink(tensor: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0.

    Raises:
        ValueError: ``lambd`` is negative.
    """
    tensor = _float_tensor("hard_shrink", tensor)
    return _shrink(tensor, _non_negative("hard_shrink", "lambd", lambd), 0.0)


def soft_shrink(tensor: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` where ``x > lambd``, ``x + lambd`` where ``x < -lambd``, else 0.

    Raises:
        ValueError: ``lambd`` is negative.
    """
    tensor = _float_tensor("soft_shrink", tensor)
    limit = _non_negative("soft_shrink", "lambd", lambd)
    return _shrink(tensor, limit, limit)


# -- gated units ------------------------------------------------------------------------------------
def glu(tensor: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: ``a * sigmoid(b)``, where ``a`` and ``b`` are the first and second
    halves of ``tensor`` along ``dim``; the result has half the size along ``dim``.

    Raises:
        IndexError: ``dim`` is out of range.
        ValueError: ``dim`` has an odd size.
    """
    tensor = _float_tensor("glu", tensor)
    value, gate = _halves("glu", tensor, dim)
    return value * sigmoid(gate)


def swiglu(tensor: Tensor, dim: int = -1) -> Tensor:
    """The SwiGLU gate: ``a * silu(b)`` with ``a``, ``b`` the halves of ``tensor`` along ``dim`` (as
    ``glu``, with ``silu`` in place of ``sigmoid``; Shazeer, 2020). The ``SwiGlu`` module computes
    both halves with linear layers; this is the gate on their concatenation.

    Raises:
        IndexError: ``dim`` is out of range.
        ValueError: ``dim`` has an odd size.
    """
    tensor = _float_tensor("swiglu", tensor)
    value, gate = _halves("swiglu", tensor, dim)
    return value * silu(gate)
