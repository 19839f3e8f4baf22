"""Activation modules (Burn's ``burn::nn::activation``): one module per function of
``burn_backend.activation``, a ``XConfig`` where the function has settings, and the ``ActivationConfig``
family that chooses an activation by name.

Each activation is declared once, as a class statement whose keywords say what it computes:
``function=`` the function of ``burn_backend.activation`` that ``forward`` applies, to the input and then
to the module's settings in the order of its config's fields; the base says where the settings come from
(none, ``_AlongDim``: a ``dim``, ``_Configured[XConfig]``: the fields of ``XConfig``, checked as finite
numbers, ``positive=``/``non_negative=``/``ordered=`` adding bounds); a class with learned parameters
(``_Learned[XConfig]``) writes its ``__init__`` and ``forward``. ``forward`` and each config's ``init``
are made from the declaration, and so is the ``ActivationConfig`` kind of every activation.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

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

M = TypeVar("M", bound="Activation")
S = TypeVar("S", bound=Config)
S_co = TypeVar("S_co", bound=Config, covariant=True)
S_contra = TypeVar("S_contra", bound=Config, contravariant=True)


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


# Every activation module declared in this file, in order: the ActivationConfig kinds are made from it.
_DECLARED: list[type[Activation]] = []


class Activation(Module):
    """The base of the activation modules (the role of Burn's ``Activation`` enum): ``forward`` maps a
    Float tensor to one of the same shape (``GLU`` and ``SwiGlu`` change the size of one dim).
    ``ActivationConfig.init`` returns one."""

    def __init_subclass__(cls, *, function: Callable[..., Tensor] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if function is not None:
            # setattr: a method made at run time has no static type to assign
            setattr(cls, "forward", _forward(cls, function, cls._setting_names()))  # noqa: B010
        if cls.__module__ == __name__ and not cls.__name__.startswith("_"):
            if "forward" not in vars(cls):
                raise TypeError(f"activation {cls.__name__} needs function= or its own forward")
            _DECLARED.append(cls)

    @classmethod
    def _setting_names(cls) -> tuple[str, ...]:
        """The attributes ``forward`` passes to the function after the input, in order."""
        return ()

    def forward(self, input: Tensor) -> Tensor:
        """The activation of ``input``."""
        raise NotImplementedError(f"{type(self).__name__} defines no forward")


def _forward(
    cls: type[Activation], function: Callable[..., Tensor], names: tuple[str, ...]
) -> Callable[[Activation, Tensor], Tensor]:
    """The ``forward`` of a declared activation: ``function(input, *settings)``."""
    if names:

        def forward(self: Activation, input: Tensor) -> Tensor:
            return function(input, *[getattr(self, name) for name in names])

    else:

        def forward(self: Activation, input: Tensor) -> Tensor:
            return function(input)

    forward.__doc__ = f"``{function.__name__}({', '.join(('input', *names))})``."
    forward.__qualname__ = f"{cls.__qualname__}.forward"
    return forward


class _AlongDim(Activation):
    """An activation along one dim, given when the module is built."""

    def __init__(self, dim: int) -> None:
        self.dim = _dim(type(self).__name__, dim)

    @classmethod
    def _setting_names(cls) -> tuple[str, ...]:
        return ("dim",)


class _Settings(Config, Generic[M]):
    """The config of an activation with settings: ``init`` builds the activation declared with it."""

    _module: ClassVar[Callable[[Any], Activation]]

    def init(self, device: Device | None = None) -> M:
        """The activation (it has no parameters; ``device`` is accepted for uniformity)."""
        return cast(M, type(self)._module(self))


def _settings_of(cls: type, base: type) -> Any:
    """``XConfig`` of a class declared as ``base[XConfig]`` (or inheriting from one)."""
    for origin in vars(cls).get("__orig_bases__", ()):
        if typing.get_origin(origin) is base:
            return typing.get_args(origin)[0]
    inherited = getattr(cls, "_settings", None)
    if inherited is None:
        raise TypeError(f"{cls.__name__} must be declared as {base.__name__}[ItsConfig]")
    return inherited


class _Configured(Activation, Generic[S]):
    """An activation whose settings are the fields of its config ``S``: finite numbers, checked when the
    module is built (bounds from the declaration's ``positive=``, ``non_negative=`` and ``ordered=``)."""

    _settings: ClassVar[type[Config]]
    _positive: ClassVar[frozenset[str]] = frozenset()
    _non_negative: ClassVar[frozenset[str]] = frozenset()
    _ordered: ClassVar[tuple[str, str] | None] = None

    def __init_subclass__(
        cls,
        *,
        positive: tuple[str, ...] = (),
        non_negative: tuple[str, ...] = (),
        ordered: tuple[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        cls._settings = _settings_of(cls, _Configured)
        cls._positive = frozenset(positive)
        cls._non_negative = frozenset(non_negative)
        cls._ordered = ordered
        if issubclass(cls._settings, _Settings):
            cls._settings._module = cls
        super().__init_subclass__(**kwargs)

    @classmethod
    def _setting_names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls._settings))  # type: ignore[arg-type]

    def __init__(self, config: S) -> None:
        layer = type(self).__name__
        for name in self._setting_names():
            minimum = 0.0 if name in self._positive or name in self._non_negative else None
            value = _number(
                layer, name, getattr(config, name), minimum=minimum, strict=name in self._positive
            )
            setattr(self, name, value)
        if self._ordered is not None:
            low, high = self._ordered
            if getattr(self, low) > getattr(self, high):
                raise ValueError(f"{layer}: {low} {getattr(self, low)} is above {high} {getattr(self, high)}")


class _Learned(Activation, Generic[S]):
    """An activation with parameters, built from its config ``S`` on a device; it writes its own
    ``__init__(config, device)`` and ``forward``."""

    _settings: ClassVar[type[Config]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        cls._settings = _settings_of(cls, _Learned)
        super().__init_subclass__(**kwargs)


# -- activations without settings -----------------------------------------------------------------------
class Relu(Activation, function=A.relu):
    """``max(x, 0)`` (see ``burn_backend.activation.relu``)."""


class Relu6(Activation, function=A.relu6):
    """``min(max(x, 0), 6)``."""


class Gelu(Activation, function=A.gelu):
    """The exact Gaussian error linear unit ``x * Phi(x)`` (PyTorch's ``nn.GELU()``)."""


class GeluApproximate(Activation, function=A.gelu_tanh):
    """GELU with the tanh approximation ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))``
    (PyTorch's ``nn.GELU(approximate="tanh")``)."""


class Sigmoid(Activation, function=A.sigmoid):
    """The logistic function ``1 / (1 + exp(-x))``."""


class LogSigmoid(Activation, function=A.log_sigmoid):
    """``log(sigmoid(x))``, without overflow."""


class SiLU(Activation, function=A.silu):
    """The sigmoid linear unit (swish) ``x * sigmoid(x)``."""


class HardSwish(Activation, function=A.hard_swish):
    """``x * relu6(x + 3) / 6`` (PyTorch's ``nn.Hardswish``)."""


class Mish(Activation, function=A.mish):
    """``x * tanh(softplus(x))``."""


class Selu(Activation, function=A.selu):
    """The scaled exponential linear unit, with PyTorch's constants."""


class Softsign(Activation, function=A.softsign):
    """``x / (1 + |x|)``."""


class Tanh(Activation, function=A.tanh):
    """The hyperbolic tangent."""


class Tanhshrink(Activation, function=A.tanhshrink):
    """``x - tanh(x)``."""


# -- activations along a dim ----------------------------------------------------------------------------
class Softmax(_AlongDim, function=A.softmax):
    """``exp(x) / sum(exp(x))`` along ``dim`` (negative counts from the end), as ``nn.Softmax(dim)``.

    Args:
        dim: the dim that sums to 1.
    """


class LogSoftmax(_AlongDim, function=A.log_softmax):
    """``log(softmax(x))`` along ``dim``, as ``nn.LogSoftmax(dim)``.

    Args:
        dim: the dim normalized over.
    """


class Softmin(_AlongDim, function=A.softmin):
    """``softmax(-x)`` along ``dim``, as ``nn.Softmin(dim)``.

    Args:
        dim: the dim that sums to 1.
    """


class QuietSoftmax(_AlongDim, function=A.quiet_softmax):
    """Burn's quiet softmax ``exp(x) / (1 + sum(exp(x)))`` along ``dim``: a row may sum to less than 1.

    Args:
        dim: the dim normalized over.
    """


class GLU(_AlongDim, function=A.glu):
    """The gated linear unit ``a * sigmoid(b)``, ``a`` and ``b`` the halves of the input along ``dim``
    (whose size must be even; the output has half of it), as ``nn.GLU(dim)``.

    Args:
        dim: the dim split in two (the last by default, as PyTorch's).
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__(dim)


# -- activations with settings --------------------------------------------------------------------------
class LeakyReluConfig(_Settings["LeakyRelu"]):
    """Settings of a ``LeakyRelu``: ``negative_slope``, the slope for negative inputs."""

    negative_slope: float = 0.01


class LeakyRelu(_Configured[LeakyReluConfig], function=A.leaky_relu):
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""


class RReluConfig(_Settings["RRelu"]):
    """Settings of an ``RRelu``: the range ``[lower, upper)`` of the random negative slopes."""

    lower: float = 1.0 / 8.0
    upper: float = 1.0 / 3.0


class RRelu(_Configured[RReluConfig], ordered=("lower", "upper")):
    """The randomized leaky ReLU (Xu et al., 2015), as PyTorch's ``nn.RReLU``: while training (on an
    autodiff backend) each negative value is scaled by its own slope drawn uniformly from
    ``[lower, upper)`` with the device's generator; in evaluation by ``(lower + upper) / 2``."""

    lower: float
    upper: float

    def forward(self, input: Tensor) -> Tensor:
        """``rrelu(input, lower, upper, training)``, training where the input is on an autodiff backend."""
        return A.rrelu(input, self.lower, self.upper, training=is_training(input))


class HardSigmoidConfig(_Settings["HardSigmoid"]):
    """Settings of a ``HardSigmoid``: ``max(0, min(1, alpha * x + beta))`` (ONNX's defaults; PyTorch's
    ``nn.Hardsigmoid`` is ``alpha = 1/6``)."""

    alpha: float = 0.2
    beta: float = 0.5


class HardSigmoid(_Configured[HardSigmoidConfig], function=A.hard_sigmoid):
    """``max(0, min(1, alpha * x + beta))``."""


class EluConfig(_Settings["Elu"]):
    """Settings of an ``Elu``: ``alpha``, the scale of the negative part."""

    alpha: float = 1.0


class Elu(_Configured[EluConfig], function=A.elu):
    """The exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""


class CeluConfig(_Settings["Celu"]):
    """Settings of a ``Celu``: ``alpha`` (positive)."""

    alpha: float = 1.0


class Celu(_Configured[CeluConfig], function=A.celu, positive=("alpha",)):
    """The continuously differentiable ELU ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""


class SoftplusConfig(_Settings["Softplus"]):
    """Settings of a ``Softplus``: ``beta`` (positive) and the ``threshold`` of ``beta * x`` above which
    the function is the identity."""

    beta: float = 1.0
    threshold: float = 20.0


class Softplus(_Configured[SoftplusConfig], function=A.softplus, positive=("beta",)):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold``."""


class HardtanhConfig(_Settings["Hardtanh"]):
    """Settings of a ``Hardtanh``: the finite range ``[min_val, max_val]``."""

    min_val: float = -1.0
    max_val: float = 1.0


class Hardtanh(_Configured[HardtanhConfig], function=A.hardtanh, ordered=("min_val", "max_val")):
    """``x`` clamped to ``[min_val, max_val]``."""


class ThresholdConfig(_Settings["Threshold"]):
    """Settings of a ``Threshold``: values at or below ``threshold`` become ``value``."""

    threshold: float
    value: float


class Threshold(_Configured[ThresholdConfig], function=A.threshold):
    """``x`` where ``x > threshold``, else ``value`` (PyTorch's ``nn.Threshold``)."""


class ThresholdedReluConfig(_Settings["ThresholdedRelu"]):
    """Settings of a ``ThresholdedRelu``: ``alpha``, the threshold."""

    alpha: float = 1.0


class ThresholdedRelu(_Configured[ThresholdedReluConfig], function=A.thresholded_relu):
    """``x`` where ``x > alpha``, else 0 (ONNX ThresholdedRelu)."""


class ShrinkConfig(_Settings["Shrink"]):
    """Settings of a ``Shrink`` (ONNX Shrink): ``lambd`` (Burn's ``lambda``, a Python keyword), the
    half-width of the zeroed band, and ``bias``, subtracted from the magnitude of the values outside it."""

    lambd: float = 0.5
    bias: float = 0.5


class Shrink(_Configured[ShrinkConfig], function=A.shrink, non_negative=("lambd",)):
    """``x - bias`` where ``x > lambd``, ``x + bias`` where ``x < -lambd``, else 0."""


class HardShrinkConfig(_Settings["HardShrink"]):
    """Settings of a ``HardShrink``: ``lambd`` (Burn's ``lambda``), the half-width of the zeroed band."""

    lambd: float = 0.5


class HardShrink(_Configured[HardShrinkConfig], function=A.hard_shrink, non_negative=("lambd",)):
    """``x`` where ``|x| > lambd``, else 0 (PyTorch's ``nn.Hardshrink``)."""


class SoftShrinkConfig(_Settings["SoftShrink"]):
    """Settings of a ``SoftShrink``: ``lambd`` (Burn's ``lambda``), the half-width of the zeroed band."""

    lambd: float = 0.5


class SoftShrink(_Configured[SoftShrinkConfig], function=A.soft_shrink, non_negative=("lambd",)):
    """``x - lambd`` where ``x > lambd``, ``x + lambd`` where ``x < -lambd``, else 0 (PyTorch's
    ``nn.Softshrink``)."""


# -- activations with parameters ------------------------------------------------------------------------
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


class PRelu(_Learned[PReluConfig]):
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


class SwiGlu(_Learned[SwiGluConfig]):
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
class _Unit(Protocol):
    """The type of a kind without settings (for type checkers): ``ActivationConfig.Relu()``."""

    def __call__(self) -> ActivationConfig: ...


class _WithConfig(Protocol[S_contra]):
    """The type of a kind holding a config (for type checkers): ``ActivationConfig.Elu(EluConfig(0.5))``."""

    def __call__(self, config: S_contra = ...) -> ActivationConfig: ...


class _AlongADim(Protocol):
    """The type of a kind along a dim (for type checkers): ``ActivationConfig.Softmax(-1)``."""

    def __call__(self, dim: int = ...) -> ActivationConfig: ...


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

    The kinds are made from the activation modules' declarations; the annotations below only give them
    their types.

    Example:
        >>> activation = ActivationConfig.LeakyRelu(LeakyReluConfig(0.2)).init(device)
        >>> type(activation).__name__
        'LeakyRelu'
    """

    Relu: ClassVar[_Unit]
    Relu6: ClassVar[_Unit]
    Gelu: ClassVar[_Unit]
    GeluApproximate: ClassVar[_Unit]
    Sigmoid: ClassVar[_Unit]
    LogSigmoid: ClassVar[_Unit]
    SiLU: ClassVar[_Unit]
    HardSwish: ClassVar[_Unit]
    Mish: ClassVar[_Unit]
    Selu: ClassVar[_Unit]
    Softsign: ClassVar[_Unit]
    Tanh: ClassVar[_Unit]
    Tanhshrink: ClassVar[_Unit]
    LeakyRelu: ClassVar[_WithConfig[LeakyReluConfig]]
    PRelu: ClassVar[_WithConfig[PReluConfig]]
    RRelu: ClassVar[_WithConfig[RReluConfig]]
    HardSigmoid: ClassVar[_WithConfig[HardSigmoidConfig]]
    Elu: ClassVar[_WithConfig[EluConfig]]
    Celu: ClassVar[_WithConfig[CeluConfig]]
    Softplus: ClassVar[_WithConfig[SoftplusConfig]]
    Hardtanh: ClassVar[_WithConfig[HardtanhConfig]]
    Threshold: ClassVar[_WithConfig[ThresholdConfig]]
    ThresholdedRelu: ClassVar[_WithConfig[ThresholdedReluConfig]]
    Shrink: ClassVar[_WithConfig[ShrinkConfig]]
    HardShrink: ClassVar[_WithConfig[HardShrinkConfig]]
    SoftShrink: ClassVar[_WithConfig[SoftShrinkConfig]]
    SwiGlu: ClassVar[_WithConfig[SwiGluConfig]]
    Softmax: ClassVar[_AlongADim]
    LogSoftmax: ClassVar[_AlongADim]
    Softmin: ClassVar[_AlongADim]
    QuietSoftmax: ClassVar[_AlongADim]
    GLU: ClassVar[_AlongADim]

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


def _kind(module: type[Activation]) -> type[ActivationConfig]:
    """The ``ActivationConfig`` kind of a declared activation: a frozen dataclass named like it, holding
    what builds it (nothing, its ``dim`` or its ``config``)."""
    name = module.__name__
    fields: dict[str, Any] = {}
    init: Callable[[Any, Device | None], Activation]
    if issubclass(module, _AlongDim):
        fields["dim"] = int
        default = inspect.signature(module.__init__).parameters["dim"].default
        defaults = {} if default is inspect.Parameter.empty else {"dim": default}
        doc = f"``{name}`` along ``dim``."

        def init(self: Any, device: Device | None = None) -> Activation:
            return module(self.dim)

    elif issubclass(module, (_Configured, _Learned)):
        settings = module._settings
        fields["config"] = settings
        required = any(
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            for f in dataclasses.fields(settings)  # type: ignore[arg-type]
        )
        defaults = {} if required else {"config": dataclasses.field(default_factory=settings)}
        learned = issubclass(module, _Learned)
        doc = f"``{name}`` with ``config``" + (" (needs a device)." if learned else ".")

        def init(self: Any, device: Device | None = None) -> Activation:
            built = self.config.init(_needs_device(name, device) if learned else device)
            return cast(Activation, built)

    else:
        defaults = {}
        doc = f"``{name}``."

        def init(self: Any, device: Device | None = None) -> Activation:
            return module()

    init.__doc__ = ActivationConfig.init.__doc__
    init.__qualname__ = f"ActivationConfig.{name}.init"
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__qualname__": f"ActivationConfig.{name}",
        "__doc__": doc,
        "__annotations__": fields,
        "init": init,
        **defaults,
    }
    return dataclasses.dataclass(frozen=True)(type(name, (ActivationConfig,), namespace))


for _module in _DECLARED:
    setattr(ActivationConfig, _module.__name__, _kind(_module))
