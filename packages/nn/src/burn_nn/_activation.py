"""Activation modules (Burn's ``burn::nn::activation``): one module per function of
``burn_backend.activation``, a ``XConfig`` where the function has settings, and the ``ActivationConfig``
family that chooses an activation by name."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from burn_backend import Device, Tensor
from burn_backend import activation as A

from ._config import Config, variant
from ._initializer import Initializer
from ._linear import Linear, LinearConfig
from ._module import Module, is_training
from ._param import Param

__all__ = [
    "Activation",
    "ActivationConfig",
    "Celu",
    "CeluConfig",
    "Elu",
    "EluConfig",
    "GLU",
    "Gelu",
    "GeluApproximate",
    "HardShrink",
    "HardShrinkConfig",
    "HardSigmoid",
    "HardSigmoidConfig",
    "HardSwish",
    "Hardtanh",
    "HardtanhConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PRelu",
    "PReluConfig",
    "QuietSoftmax",
    "RRelu",
    "RReluConfig",
    "Relu",
    "Relu6",
    "SiLU",
    "Selu",
    "Shrink",
    "ShrinkConfig",
    "Sigmoid",
    "SoftShrink",
    "SoftShrinkConfig",
    "Softmax",
    "Softmin",
    "Softplus",
    "SoftplusConfig",
    "Softsign",
    "SwiGlu",
    "SwiGluConfig",
    "Tanh",
    "Tanhshrink",
    "Threshold",
    "ThresholdConfig",
    "ThresholdedRelu",
    "ThresholdedReluConfig",
]


def _number(
    layer: str, name: str, value: object, *, minimum: float | None = None, strict: bool = False
) -> float:
    """``value`` as a finite float (at least, or with ``strict`` above, ``minimum``), else a ``ValueError``
    naming the layer and the setting."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{layer}: {name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{layer}: {name} must be finite, got {value!r}")
    if minimum is not None and (number < minimum or (strict and number == minimum)):
        bound = f"> {minimum}" if strict else f">= {minimum}"
        raise ValueError(f"{layer}: {name} must be {bound}, got {value!r}")
    return number


def _dim(layer: str, dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{layer}: dim must be an int, got {dim!r}")
    return dim


class Activation(Module):
    """The base of the activation modules (the role of Burn's ``Activation`` enum): ``forward`` maps a
    Float tensor to one of the same shape (``GLU`` and ``SwiGlu`` change the size of one dim).
    ``ActivationConfig.init`` returns one."""

    def forward(self, input: Tensor) -> Tensor:
        """The activation of ``input``."""
        raise NotImplementedError(f"{type(self).__name__} defines no forward")


# -- activations without settings -----------------------------------------------------------------------
class Relu(Activation):
    """``max(x, 0)`` (see ``burn_backend.activation.relu``)."""

    def forward(self, input: Tensor) -> Tensor:
        """``relu(input)``."""
        return A.relu(input)


class Relu6(Activation):
    """``min(max(x, 0), 6)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``relu6(input)``."""
        return A.relu6(input)


class Gelu(Activation):
    """The exact Gaussian error linear unit ``x * Phi(x)`` (PyTorch's ``nn.GELU()``)."""

    def forward(self, input: Tensor) -> Tensor:
        """``gelu(input)``."""
        return A.gelu(input)


class GeluApproximate(Activation):
    """GELU with the tanh approximation ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))``
    (PyTorch's ``nn.GELU(approximate="tanh")``)."""

    def forward(self, input: Tensor) -> Tensor:
        """``gelu_tanh(input)``."""
        return A.gelu_tanh(input)


class Sigmoid(Activation):
    """The logistic function ``1 / (1 + exp(-x))``."""

    def forward(self, input: Tensor) -> Tensor:
        """``sigmoid(input)``."""
        return A.sigmoid(input)


class LogSigmoid(Activation):
    """``log(sigmoid(x))``, without overflow."""

    def forward(self, input: Tensor) -> Tensor:
        """``log_sigmoid(input)``."""
        return A.log_sigmoid(input)


class SiLU(Activation):
    """The sigmoid linear unit (swish) ``x * sigmoid(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``silu(input)``."""
        return A.silu(input)


class HardSwish(Activation):
    """``x * relu6(x + 3) / 6`` (PyTorch's ``nn.Hardswish``)."""

    def forward(self, input: Tensor) -> Tensor:
        """``hard_swish(input)``."""
        return A.hard_swish(input)


class Mish(Activation):
    """``x * tanh(softplus(x))``."""

    def forward(self, input: Tensor) -> Tensor:
        """``mish(input)``."""
        return A.mish(input)


class Selu(Activation):
    """The scaled exponential linear unit, with PyTorch's constants."""

    def forward(self, input: Tensor) -> Tensor:
        """``selu(input)``."""
        return A.selu(input)


class Softsign(Activation):
    """``x / (1 + |x|)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``softsign(input)``."""
        return A.softsign(input)


class Tanh(Activation):
    """The hyperbolic tangent."""

    def forward(self, input: Tensor) -> Tensor:
        """``tanh(input)``."""
        return A.tanh(input)


class Tanhshrink(Activation):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``tanhshrink(input)``."""
        return A.tanhshrink(input)


# -- activations along a dim ----------------------------------------------------------------------------
class Softmax(Activation):
    """``exp(x) / sum(exp(x))`` along ``dim`` (negative counts from the end), as ``nn.Softmax(dim)``.

    Args:
        dim: the dim that sums to 1.
    """

    def __init__(self, dim: int) -> None:
        self.dim = _dim("Softmax", dim)

    def forward(self, input: Tensor) -> Tensor:
        """``softmax(input, dim)``."""
        return A.softmax(input, self.dim)


class LogSoftmax(Activation):
    """``log(softmax(x))`` along ``dim``, as ``nn.LogSoftmax(dim)``.

    Args:
        dim: the dim normalized over.
    """

    def __init__(self, dim: int) -> None:
        self.dim = _dim("LogSoftmax", dim)

    def forward(self, input: Tensor) -> Tensor:
        """``log_softmax(input, dim)``."""
        return A.log_softmax(input, self.dim)


class Softmin(Activation):
    """``softmax(-x)`` along ``dim``, as ``nn.Softmin(dim)``.

    Args:
        dim: the dim that sums to 1.
    """

    def __init__(self, dim: int) -> None:
        self.dim = _dim("Softmin", dim)

    def forward(self, input: Tensor) -> Tensor:
        """``softmin(input, dim)``."""
        return A.softmin(input, self.dim)


class QuietSoftmax(Activation):
    """Burn's quiet softmax ``exp(x) / (1 + sum(exp(x)))`` along ``dim``: a row may sum to less than 1.

    Args:
        dim: the dim normalized over.
    """

    def __init__(self, dim: int) -> None:
        self.dim = _dim("QuietSoftmax", dim)

    def forward(self, input: Tensor) -> Tensor:
        """``quiet_softmax(input, dim)``."""
        return A.quiet_softmax(input, self.dim)


class GLU(Activation):
    """The gated linear unit ``a * sigmoid(b)``, ``a`` and ``b`` the halves of the input along ``dim``
    (whose size must be even; the output has half of it), as ``nn.GLU(dim)``.

    Args:
        dim: the dim split in two (the last by default, as PyTorch's).
    """

    def __init__(self, dim: int = -1) -> None:
        self.dim = _dim("GLU", dim)

    def forward(self, input: Tensor) -> Tensor:
        """``glu(input, dim)``."""
        return A.glu(input, self.dim)


# -- activations with settings --------------------------------------------------------------------------
class LeakyReluConfig(Config):
    """Settings of a ``LeakyRelu``: ``negative_slope``, the slope for negative inputs."""

    negative_slope: float = 0.01

    def init(self, device: Device | None = None) -> LeakyRelu:
        """A ``LeakyRelu`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return LeakyRelu(self)


class LeakyRelu(Activation):
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""

    def __init__(self, config: LeakyReluConfig) -> None:
        self.negative_slope = _number("LeakyRelu", "negative_slope", config.negative_slope)

    def forward(self, input: Tensor) -> Tensor:
        """``leaky_relu(input, negative_slope)``."""
        return A.leaky_relu(input, self.negative_slope)


class PReluConfig(Config):
    """Settings of a ``PRelu``.

    Args:
        num_parameters: the number of learned slopes: 1 (shared) or the number of channels (dim 1 of
            the input).
        alpha: the slopes' initial value (PyTorch's default, 0.25).
    """

    num_parameters: int = 1
    alpha: float = 0.25

    def init(self, device: Device) -> PRelu:
        """A ``PRelu`` on ``device``."""
        return PRelu(self, device)


class PRelu(Activation):
    """The parametric ReLU: ``x`` where ``x >= 0``, else ``alpha * x``, with learned slopes ``alpha``
    (shape ``[num_parameters]``), as PyTorch's ``nn.PReLU``."""

    def __init__(self, config: PReluConfig, device: Device) -> None:
        count = config.num_parameters
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            raise ValueError(f"PRelu: num_parameters must be a positive int, got {count!r}")
        self.alpha_value = _number("PRelu", "alpha", config.alpha)
        self.alpha: Param = Initializer.Constant(self.alpha_value).init([count], device)

    def forward(self, input: Tensor) -> Tensor:
        """``prelu(input, alpha)``; with several slopes, one per channel of dim 1.

        Raises:
            ValueError: there are several slopes and dim 1 of the input is not their number.
        """
        return A.prelu(input, self.alpha.val())


class RReluConfig(Config):
    """Settings of an ``RRelu``: the range ``[lower, upper)`` of the random negative slopes."""

    lower: float = 1.0 / 8.0
    upper: float = 1.0 / 3.0

    def init(self, device: Device | None = None) -> RRelu:
        """An ``RRelu`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return RRelu(self)


class RRelu(Activation):
    """The randomized leaky ReLU (Xu et al., 2015), as PyTorch's ``nn.RReLU``: while training (on an
    autodiff backend) each negative value is scaled by its own slope drawn uniformly from
    ``[lower, upper)`` with the device's generator; in evaluation by ``(lower + upper) / 2``."""

    def __init__(self, config: RReluConfig) -> None:
        self.lower = _number("RRelu", "lower", config.lower)
        self.upper = _number("RRelu", "upper", config.upper)
        if self.lower > self.upper:
            raise ValueError(f"RRelu: lower {self.lower} is above upper {self.upper}")

    def forward(self, input: Tensor) -> Tensor:
        """``rrelu(input, lower, upper, training)``, training where the input is on an autodiff backend."""
        return A.rrelu(input, self.lower, self.upper, training=is_training(input))


class HardSigmoidConfig(Config):
    """Settings of a ``HardSigmoid``: ``max(0, min(1, alpha * x + beta))`` (ONNX's defaults; PyTorch's
    ``nn.Hardsigmoid`` is ``alpha = 1/6``)."""

    alpha: float = 0.2
    beta: float = 0.5

    def init(self, device: Device | None = None) -> HardSigmoid:
        """A ``HardSigmoid`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return HardSigmoid(self)


class HardSigmoid(Activation):
    """``max(0, min(1, alpha * x + beta))``."""

    def __init__(self, config: HardSigmoidConfig) -> None:
        self.alpha = _number("HardSigmoid", "alpha", config.alpha)
        self.beta = _number("HardSigmoid", "beta", config.beta)

    def forward(self, input: Tensor) -> Tensor:
        """``hard_sigmoid(input, alpha, beta)``."""
        return A.hard_sigmoid(input, self.alpha, self.beta)


class EluConfig(Config):
    """Settings of an ``Elu``: ``alpha``, the scale of the negative part."""

    alpha: float = 1.0

    def init(self, device: Device | None = None) -> Elu:
        """An ``Elu`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return Elu(self)


class Elu(Activation):
    """The exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, config: EluConfig) -> None:
        self.alpha = _number("Elu", "alpha", config.alpha)

    def forward(self, input: Tensor) -> Tensor:
        """``elu(input, alpha)``."""
        return A.elu(input, self.alpha)


class CeluConfig(Config):
    """Settings of a ``Celu``: ``alpha`` (positive)."""

    alpha: float = 1.0

    def init(self, device: Device | None = None) -> Celu:
        """A ``Celu`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return Celu(self)


class Celu(Activation):
    """The continuously differentiable ELU ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def __init__(self, config: CeluConfig) -> None:
        self.alpha = _number("Celu", "alpha", config.alpha, minimum=0.0, strict=True)

    def forward(self, input: Tensor) -> Tensor:
        """``celu(input, alpha)``."""
        return A.celu(input, self.alpha)


class SoftplusConfig(Config):
    """Settings of a ``Softplus``: ``beta`` (positive) and the ``threshold`` of ``beta * x`` above which
    the function is the identity."""

    beta: float = 1.0
    threshold: float = 20.0

    def init(self, device: Device | None = None) -> Softplus:
        """A ``Softplus`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return Softplus(self)


class Softplus(Activation):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold``."""

    def __init__(self, config: SoftplusConfig) -> None:
        self.beta = _number("Softplus", "beta", config.beta, minimum=0.0, strict=True)
        self.threshold = _number("Softplus", "threshold", config.threshold)

    def forward(self, input: Tensor) -> Tensor:
        """``softplus(input, beta, threshold)``."""
        return A.softplus(input, self.beta, self.threshold)


class HardtanhConfig(Config):
    """Settings of a ``Hardtanh``: the finite range ``[min_val, max_val]``."""

    min_val: float = -1.0
    max_val: float = 1.0

    def init(self, device: Device | None = None) -> Hardtanh:
        """A ``Hardtanh`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return Hardtanh(self)


class Hardtanh(Activation):
    """``x`` clamped to ``[min_val, max_val]``."""

    def __init__(self, config: HardtanhConfig) -> None:
        self.min_val = _number("Hardtanh", "min_val", config.min_val)
        self.max_val = _number("Hardtanh", "max_val", config.max_val)
        if self.min_val > self.max_val:
            raise ValueError(f"Hardtanh: min_val {self.min_val} is above max_val {self.max_val}")

    def forward(self, input: Tensor) -> Tensor:
        """``hardtanh(input, min_val, max_val)``."""
        return A.hardtanh(input, self.min_val, self.max_val)


class ThresholdConfig(Config):
    """Settings of a ``Threshold``: values at or below ``threshold`` become ``value``."""

    threshold: float
    value: float

    def init(self, device: Device | None = None) -> Threshold:
        """A ``Threshold`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return Threshold(self)


class Threshold(Activation):
    """``x`` where ``x > threshold``, else ``value`` (PyTorch's ``nn.Threshold``)."""

    def __init__(self, config: ThresholdConfig) -> None:
        self.threshold = _number("Threshold", "threshold", config.threshold)
        self.value = _number("Threshold", "value", config.value)

    def forward(self, input: Tensor) -> Tensor:
        """``threshold(input, threshold, value)``."""
        return A.threshold(input, self.threshold, self.value)


class ThresholdedReluConfig(Config):
    """Settings of a ``ThresholdedRelu``: ``alpha``, the threshold."""

    alpha: float = 1.0

    def init(self, device: Device | None = None) -> ThresholdedRelu:
        """A ``ThresholdedRelu`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return ThresholdedRelu(self)


class ThresholdedRelu(Activation):
    """``x`` where ``x > alpha``, else 0 (ONNX ThresholdedRelu)."""

    def __init__(self, config: ThresholdedReluConfig) -> None:
        self.alpha = _number("ThresholdedRelu", "alpha", config.alpha)

    def forward(self, input: Tensor) -> Tensor:
        """``thresholded_relu(input, alpha)``."""
        return A.thresholded_relu(input, self.alpha)


class ShrinkConfig(Config):
    """Settings of a ``Shrink`` (ONNX Shrink): ``lambd`` (Burn's ``lambda``, a Python keyword), the
    half-width of the zeroed band, and ``bias``, subtracted from the magnitude of the values outside it."""

    lambd: float = 0.5
    bias: float = 0.5

    def init(self, device: Device | None = None) -> Shrink:
        """A ``Shrink`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return Shrink(self)


class Shrink(Activation):
    """``x - bias`` where ``x > lambd``, ``x + bias`` where ``x < -lambd``, else 0."""

    def __init__(self, config: ShrinkConfig) -> None:
        self.lambd = _number("Shrink", "lambd", config.lambd, minimum=0.0)
        self.bias = _number("Shrink", "bias", config.bias)

    def forward(self, input: Tensor) -> Tensor:
        """``shrink(input, lambd, bias)``."""
        return A.shrink(input, self.lambd, self.bias)


class HardShrinkConfig(Config):
    """Settings of a ``HardShrink``: ``lambd`` (Burn's ``lambda``), the half-width of the zeroed band."""

    lambd: float = 0.5

    def init(self, device: Device | None = None) -> HardShrink:
        """A ``HardShrink`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return HardShrink(self)


class HardShrink(Activation):
    """``x`` where ``|x| > lambd``, else 0 (PyTorch's ``nn.Hardshrink``)."""

    def __init__(self, config: HardShrinkConfig) -> None:
        self.lambd = _number("HardShrink", "lambd", config.lambd, minimum=0.0)

    def forward(self, input: Tensor) -> Tensor:
        """``hard_shrink(input, lambd)``."""
        return A.hard_shrink(input, self.lambd)


class SoftShrinkConfig(Config):
    """Settings of a ``SoftShrink``: ``lambd`` (Burn's ``lambda``), the half-width of the zeroed band."""

    lambd: float = 0.5

    def init(self, device: Device | None = None) -> SoftShrink:
        """A ``SoftShrink`` (it has no parameters; ``device`` is accepted for uniformity)."""
        return SoftShrink(self)


class SoftShrink(Activation):
    """``x - lambd`` where ``x > lambd``, ``x + lambd`` where ``x < -lambd``, else 0 (PyTorch's
    ``nn.Softshrink``)."""

    def __init__(self, config: SoftShrinkConfig) -> None:
        self.lambd = _number("SoftShrink", "lambd", config.lambd, minimum=0.0)

    def forward(self, input: Tensor) -> Tensor:
        """``soft_shrink(input, lambd)``."""
        return A.soft_shrink(input, self.lambd)


class SwiGluConfig(Config):
    """Settings of a ``SwiGlu``.

    Args:
        d_input: the size of each input's last dim.
        d_output: the size of each output's last dim.
        bias: whether the two linear layers learn a bias (not by default, as usual for SwiGLU).
        initializer: how the linear layers' weights (and biases) are drawn; the default is
            ``LinearConfig``'s (PyTorch's ``nn.Linear`` rule).
    """

    d_input: int
    d_output: int
    bias: bool = False
    initializer: Initializer = Initializer.KaimingUniform(gain=1 / math.sqrt(3.0))

    def init(self, device: Device) -> SwiGlu:
        """A ``SwiGlu`` on ``device``."""
        return SwiGlu(self, device)


class SwiGlu(Activation):
    """The swish-gated linear unit (Shazeer, 2020): ``silu(linear_inner(x)) * linear_outer(x)``, two
    ``Linear`` layers ``[d_input] -> [d_output]``."""

    def __init__(self, config: SwiGluConfig, device: Device) -> None:
        linear = LinearConfig(
            config.d_input, config.d_output, bias=config.bias, initializer=config.initializer
        )
        self.linear_inner: Linear = linear.init(device)
        self.linear_outer: Linear = linear.init(device)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[..., d_input]`` to ``[..., d_output]``."""
        return A.silu(self.linear_inner.forward(input)) * self.linear_outer.forward(input)


# -- the family ----------------------------------------------------------------------------------------
@variant
class ActivationConfig:
    """The family of activations, as Burn's ``ActivationConfig`` enum: one frozen dataclass per kind, so
    that a config chooses its activation by name.

    Kinds without settings: ``Relu()``, ``Relu6()``, ``Gelu()``, ``GeluApproximate()``, ``Sigmoid()``,
    ``LogSigmoid()``, ``SiLU()``, ``HardSwish()``, ``Mish()``, ``Selu()``, ``Softsign()``, ``Tanh()``,
    ``Tanhshrink()``. Kinds holding the activation's config (``config`` defaults to the config's
    defaults where it has no required field): ``LeakyRelu``, ``PRelu``, ``RRelu``, ``HardSigmoid``,
    ``Elu``, ``Celu``, ``Softplus``, ``Hardtanh``, ``Threshold``, ``ThresholdedRelu``, ``Shrink``,
    ``HardShrink``, ``SoftShrink``, ``SwiGlu``. Kinds along a dim: ``Softmax(dim)``,
    ``LogSoftmax(dim)``, ``Softmin(dim)``, ``QuietSoftmax(dim)``, ``GLU(dim=-1)``.

    A config field of this type saves to and loads from JSON as ``{"Relu": {}}`` or
    ``{"LeakyRelu": {"config": {"negative_slope": 0.2}}}``.

    Example:
        >>> activation = ActivationConfig.LeakyRelu(LeakyReluConfig(0.2)).init(device)
        >>> type(activation).__name__
        'LeakyRelu'
    """

    Relu: ClassVar[type[_ReluKind]]
    Relu6: ClassVar[type[_Relu6Kind]]
    Gelu: ClassVar[type[_GeluKind]]
    GeluApproximate: ClassVar[type[_GeluApproximateKind]]
    Sigmoid: ClassVar[type[_SigmoidKind]]
    LogSigmoid: ClassVar[type[_LogSigmoidKind]]
    SiLU: ClassVar[type[_SiLUKind]]
    HardSwish: ClassVar[type[_HardSwishKind]]
    Mish: ClassVar[type[_MishKind]]
    Selu: ClassVar[type[_SeluKind]]
    Softsign: ClassVar[type[_SoftsignKind]]
    Tanh: ClassVar[type[_TanhKind]]
    Tanhshrink: ClassVar[type[_TanhshrinkKind]]
    LeakyRelu: ClassVar[type[_LeakyReluKind]]
    PRelu: ClassVar[type[_PReluKind]]
    RRelu: ClassVar[type[_RReluKind]]
    HardSigmoid: ClassVar[type[_HardSigmoidKind]]
    Elu: ClassVar[type[_EluKind]]
    Celu: ClassVar[type[_CeluKind]]
    Softplus: ClassVar[type[_SoftplusKind]]
    Hardtanh: ClassVar[type[_HardtanhKind]]
    Threshold: ClassVar[type[_ThresholdKind]]
    ThresholdedRelu: ClassVar[type[_ThresholdedReluKind]]
    Shrink: ClassVar[type[_ShrinkKind]]
    HardShrink: ClassVar[type[_HardShrinkKind]]
    SoftShrink: ClassVar[type[_SoftShrinkKind]]
    SwiGlu: ClassVar[type[_SwiGluKind]]
    Softmax: ClassVar[type[_SoftmaxKind]]
    LogSoftmax: ClassVar[type[_LogSoftmaxKind]]
    Softmin: ClassVar[type[_SoftminKind]]
    QuietSoftmax: ClassVar[type[_QuietSoftmaxKind]]
    GLU: ClassVar[type[_GLUKind]]

    def init(self, device: Device | None = None) -> Activation:
        """The activation module of this kind (``device`` is needed by the kinds with parameters:
        ``PRelu`` and ``SwiGlu``).

        Raises:
            ValueError: a kind with parameters got no device.
        """
        raise NotImplementedError(f"{type(self).__name__} is not an activation kind")


def _needs_device(kind: str, device: Device | None) -> Device:
    if device is None:
        raise ValueError(f"ActivationConfig.{kind}: init needs a device (the activation has parameters)")
    return device


class _Unit:
    """The ``init`` of a kind without settings: the module class, built with no argument."""

    module: ClassVar[type[Activation]]

    def init(self, device: Device | None = None) -> Activation:
        return self.module()


@dataclass(frozen=True)
class _ReluKind(_Unit, ActivationConfig):
    """``Relu``."""

    module = Relu


@dataclass(frozen=True)
class _Relu6Kind(_Unit, ActivationConfig):
    """``Relu6``."""

    module = Relu6


@dataclass(frozen=True)
class _GeluKind(_Unit, ActivationConfig):
    """``Gelu`` (exact)."""

    module = Gelu


@dataclass(frozen=True)
class _GeluApproximateKind(_Unit, ActivationConfig):
    """``GeluApproximate`` (tanh approximation)."""

    module = GeluApproximate


@dataclass(frozen=True)
class _SigmoidKind(_Unit, ActivationConfig):
    """``Sigmoid``."""

    module = Sigmoid


@dataclass(frozen=True)
class _LogSigmoidKind(_Unit, ActivationConfig):
    """``LogSigmoid``."""

    module = LogSigmoid


@dataclass(frozen=True)
class _SiLUKind(_Unit, ActivationConfig):
    """``SiLU``."""

    module = SiLU


@dataclass(frozen=True)
class _HardSwishKind(_Unit, ActivationConfig):
    """``HardSwish``."""

    module = HardSwish


@dataclass(frozen=True)
class _MishKind(_Unit, ActivationConfig):
    """``Mish``."""

    module = Mish


@dataclass(frozen=True)
class _SeluKind(_Unit, ActivationConfig):
    """``Selu``."""

    module = Selu


@dataclass(frozen=True)
class _SoftsignKind(_Unit, ActivationConfig):
    """``Softsign``."""

    module = Softsign


@dataclass(frozen=True)
class _TanhKind(_Unit, ActivationConfig):
    """``Tanh``."""

    module = Tanh


@dataclass(frozen=True)
class _TanhshrinkKind(_Unit, ActivationConfig):
    """``Tanhshrink``."""

    module = Tanhshrink


@dataclass(frozen=True)
class _LeakyReluKind(ActivationConfig):
    """``LeakyRelu`` with ``config``."""

    config: LeakyReluConfig = field(default_factory=LeakyReluConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _PReluKind(ActivationConfig):
    """``PRelu`` with ``config`` (needs a device)."""

    config: PReluConfig = field(default_factory=PReluConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(_needs_device("PRelu", device))


@dataclass(frozen=True)
class _RReluKind(ActivationConfig):
    """``RRelu`` with ``config``."""

    config: RReluConfig = field(default_factory=RReluConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _HardSigmoidKind(ActivationConfig):
    """``HardSigmoid`` with ``config``."""

    config: HardSigmoidConfig = field(default_factory=HardSigmoidConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _EluKind(ActivationConfig):
    """``Elu`` with ``config``."""

    config: EluConfig = field(default_factory=EluConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _CeluKind(ActivationConfig):
    """``Celu`` with ``config``."""

    config: CeluConfig = field(default_factory=CeluConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _SoftplusKind(ActivationConfig):
    """``Softplus`` with ``config``."""

    config: SoftplusConfig = field(default_factory=SoftplusConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _HardtanhKind(ActivationConfig):
    """``Hardtanh`` with ``config``."""

    config: HardtanhConfig = field(default_factory=HardtanhConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _ThresholdKind(ActivationConfig):
    """``Threshold`` with ``config`` (which has no defaults)."""

    config: ThresholdConfig

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _ThresholdedReluKind(ActivationConfig):
    """``ThresholdedRelu`` with ``config``."""

    config: ThresholdedReluConfig = field(default_factory=ThresholdedReluConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _ShrinkKind(ActivationConfig):
    """``Shrink`` with ``config``."""

    config: ShrinkConfig = field(default_factory=ShrinkConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _HardShrinkKind(ActivationConfig):
    """``HardShrink`` with ``config``."""

    config: HardShrinkConfig = field(default_factory=HardShrinkConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _SoftShrinkKind(ActivationConfig):
    """``SoftShrink`` with ``config``."""

    config: SoftShrinkConfig = field(default_factory=SoftShrinkConfig)

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(device)


@dataclass(frozen=True)
class _SwiGluKind(ActivationConfig):
    """``SwiGlu`` with ``config`` (which has required sizes; needs a device)."""

    config: SwiGluConfig

    def init(self, device: Device | None = None) -> Activation:
        return self.config.init(_needs_device("SwiGlu", device))


@dataclass(frozen=True)
class _SoftmaxKind(ActivationConfig):
    """``Softmax`` along ``dim``."""

    dim: int

    def init(self, device: Device | None = None) -> Activation:
        return Softmax(self.dim)


@dataclass(frozen=True)
class _LogSoftmaxKind(ActivationConfig):
    """``LogSoftmax`` along ``dim``."""

    dim: int

    def init(self, device: Device | None = None) -> Activation:
        return LogSoftmax(self.dim)


@dataclass(frozen=True)
class _SoftminKind(ActivationConfig):
    """``Softmin`` along ``dim``."""

    dim: int

    def init(self, device: Device | None = None) -> Activation:
        return Softmin(self.dim)


@dataclass(frozen=True)
class _QuietSoftmaxKind(ActivationConfig):
    """``QuietSoftmax`` along ``dim``."""

    dim: int

    def init(self, device: Device | None = None) -> Activation:
        return QuietSoftmax(self.dim)


@dataclass(frozen=True)
class _GLUKind(ActivationConfig):
    """``GLU`` along ``dim``."""

    dim: int = -1

    def init(self, device: Device | None = None) -> Activation:
        return GLU(self.dim)


for _kind in (
    _ReluKind,
    _Relu6Kind,
    _GeluKind,
    _GeluApproximateKind,
    _SigmoidKind,
    _LogSigmoidKind,
    _SiLUKind,
    _HardSwishKind,
    _MishKind,
    _SeluKind,
    _SoftsignKind,
    _TanhKind,
    _TanhshrinkKind,
    _LeakyReluKind,
    _PReluKind,
    _RReluKind,
    _HardSigmoidKind,
    _EluKind,
    _CeluKind,
    _SoftplusKind,
    _HardtanhKind,
    _ThresholdKind,
    _ThresholdedReluKind,
    _ShrinkKind,
    _HardShrinkKind,
    _SoftShrinkKind,
    _SwiGluKind,
    _SoftmaxKind,
    _LogSoftmaxKind,
    _SoftminKind,
    _QuietSoftmaxKind,
    _GLUKind,
):
    _name = _kind.__name__[1 : -len("Kind")]
    _kind.__name__ = _name
    _kind.__qualname__ = f"ActivationConfig.{_name}"
    setattr(ActivationConfig, _name, _kind)
