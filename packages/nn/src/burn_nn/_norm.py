"""Normalization layers: ``BatchNorm``, ``LayerNorm``, ``GroupNorm``, ``InstanceNorm``, ``RmsNorm``, the
``NormalizationConfig`` family that chooses one of them by name. The layers run the backend's
normalization ops: ``LayerNorm`` and ``RmsNorm`` through ``burn_backend.module``, the others through the
functional forms ``batch_norm`` and ``group_norm`` of ``_norm_functional``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from burn_backend import Device, Tensor
from burn_backend import module as F

from ._config import Config, variant
from ._dropout import Identity
from ._initializer import Initializer
from ._module import Module, is_training
from ._norm_functional import _check_epsilon, _positive_size, batch_norm, group_norm
from ._param import Param, RunningState

__all__ = [
    "BatchNorm",
    "BatchNormConfig",
    "GroupNorm",
    "GroupNormConfig",
    "InstanceNorm",
    "InstanceNormConfig",
    "LayerNorm",
    "LayerNormConfig",
    "NormalizationConfig",
    "RmsNorm",
    "RmsNormConfig",
]


def _check_channels(layer: str, input: Tensor, channels: int, min_rank: int) -> None:
    """Raise unless ``input`` is ``[batch, channels, ...]`` with at least ``min_rank`` dims."""
    if input.rank < min_rank:
        raise ValueError(
            f"{layer}: expected an input of shape [batch, {channels}, ...] with rank >= {min_rank}, "
            f"got shape {input.dims()}"
        )
    if input.dims()[1] != channels:
        raise ValueError(f"{layer}: expected {channels} channels in dim 1, got shape {input.dims()}")


def _scale_and_shift(size: int, device: Device, affine: bool = True) -> tuple[Param | None, Param | None]:
    """A per-channel scale ``gamma`` (ones at first) and shift ``beta`` (zeros), or neither without
    ``affine``."""
    if not affine:
        return None, None
    return Initializer.Ones().init([size], device), Initializer.Zeros().init([size], device)


def _value(param: Param | None) -> Tensor | None:
    return None if param is None else param.val()


# -- batch norm --------------------------------------------------------------------------------------
class BatchNormConfig(Config):
    """Settings of a ``BatchNorm``.

    Args:
        num_features: the number of channels (dim 1 of the input).
        epsilon: added to the variance for numerical stability.
        momentum: the weight of the current batch in the running statistics' update
            (``running = (1 - momentum) * running + momentum * batch``), as PyTorch's.
    """

    num_features: int
    epsilon: float = 1e-5
    momentum: float = 0.1

    def init(self, device: Device) -> BatchNorm:
        """A ``BatchNorm`` on ``device``."""
        return BatchNorm(self, device)


class BatchNorm(Module):
    """Batch normalization over inputs ``[batch, num_features, ...]`` (any number of spatial dims), as
    PyTorch's ``nn.BatchNorm1d/2d/3d``.

    While training (the input is on an autodiff backend) each channel is normalized with the mean and
    biased variance of the batch (over every dim but 1), and the running statistics are updated with the
    batch mean and *unbiased* variance. In evaluation (a plain backend, as after ``model.valid()``) the
    running statistics normalize. Then ``gamma`` (ones at first) scales and ``beta`` (zeros) shifts.

    ``running_mean`` (zeros at first) and ``running_var`` (ones) are ``RunningState``: saved in records,
    not trained.

    Example:
        >>> norm = BatchNormConfig(3).init(device)
        >>> norm(Tensor.ones([4, 3, 8, 8], device)).dims()
        [4, 3, 8, 8]
    """

    def __init__(self, config: BatchNormConfig, device: Device) -> None:
        _positive_size("BatchNorm", "num_features", config.num_features)
        momentum = float(config.momentum)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"BatchNorm: momentum must be in [0, 1], got {config.momentum!r}")
        size = [config.num_features]
        self.gamma: Param = Initializer.Ones().init(size, device)
        self.beta: Param = Initializer.Zeros().init(size, device)
        self.running_mean = RunningState(Tensor.zeros(size, device))
        self.running_var = RunningState(Tensor.ones(size, device))
        self.momentum = momentum
        self.epsilon = _check_epsilon("BatchNorm", config.epsilon)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[batch, num_features, ...]``, normalized per channel.

        Raises:
            ValueError: the input's rank is below 2 or dim 1 is not ``num_features``; or, while training,
                a channel has a single value (its variance is undefined).
        """
        _check_channels("BatchNorm", input, self.gamma.shape[0], 2)
        return batch_norm(
            input,
            self.running_mean,
            self.running_var,
            self.gamma.val(),
            self.beta.val(),
            is_training(input),
            self.momentum,
            self.epsilon,
        )


# -- layer norm --------------------------------------------------------------------------------------
class LayerNormConfig(Config):
    """Settings of a ``LayerNorm``: ``d_model`` (the size of the normalized last dim), ``epsilon``, and
    whether to learn the ``gamma`` scale and ``beta`` shift (``elementwise_affine``, ``bias``)."""

    d_model: int
    epsilon: float = 1e-5
    elementwise_affine: bool = True
    bias: bool = True

    def init(self, device: Device) -> LayerNorm:
        """A ``LayerNorm`` on ``device``."""
        return LayerNorm(self, device)


class LayerNorm(Module):
    """Normalizes the last dim to zero mean and unit (biased) variance, then scales by ``gamma`` (ones
    at first) and shifts by ``beta`` (zeros at first), as PyTorch's ``nn.LayerNorm(d_model)``."""

    def __init__(self, config: LayerNormConfig, device: Device) -> None:
        if config.d_model <= 0:
            raise ValueError(f"LayerNorm: d_model must be positive, got {config.d_model}")
        self.epsilon = float(config.epsilon)
        affine = config.elementwise_affine
        self.gamma: Param | None = Initializer.Ones().init([config.d_model], device) if affine else None
        self.beta: Param | None = (
            Initializer.Zeros().init([config.d_model], device) if affine and config.bias else None
        )

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[..., d_model]``, normalized over its last dim."""
        return F.layer_norm(
            input,
            None if self.gamma is None else self.gamma.val(),
            None if self.beta is None else self.beta.val(),
            self.epsilon,
        )


# -- group and instance norm -------------------------------------------------------------------------
class GroupNormConfig(Config):
    """Settings of a ``GroupNorm``.

    Args:
        num_groups: the number of groups the channels are split into; it divides ``num_channels``.
        num_channels: the number of channels (dim 1 of the input).
        epsilon: added to the variance for numerical stability.
        affine: whether to learn a per-channel scale ``gamma`` (ones at first) and shift ``beta`` (zeros).
    """

    num_groups: int
    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device: Device) -> GroupNorm:
        """A ``GroupNorm`` on ``device``."""
        return GroupNorm(self, device)


class GroupNorm(Module):
    """Group normalization (Wu and He, 2018), as PyTorch's ``nn.GroupNorm``: the channels of an input
    ``[batch, num_channels, ...]`` are split into ``num_groups`` groups of consecutive channels, and each
    group of each sample is normalized with its own mean and biased variance (over its channels and the
    spatial dims); then the per-channel ``gamma`` and ``beta`` apply where ``affine``. The same in
    training and evaluation."""

    def __init__(self, config: GroupNormConfig, device: Device) -> None:
        _positive_size("GroupNorm", "num_groups", config.num_groups)
        _positive_size("GroupNorm", "num_channels", config.num_channels)
        if config.num_channels % config.num_groups:
            raise ValueError(
                f"GroupNorm: num_channels {config.num_channels} is not divisible by num_groups "
                f"{config.num_groups}"
            )
        self.gamma, self.beta = _scale_and_shift(config.num_channels, device, config.affine)
        self.num_groups = config.num_groups
        self.num_channels = config.num_channels
        self.epsilon = _check_epsilon("GroupNorm", config.epsilon)
        self.affine = config.affine

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[batch, num_channels, ...]``, normalized per sample and group.

        Raises:
            ValueError: the input's rank is below 2 or dim 1 is not ``num_channels``.
        """
        _check_channels("GroupNorm", input, self.num_channels, 2)
        return group_norm(input, self.num_groups, _value(self.gamma), _value(self.beta), self.epsilon)


class InstanceNormConfig(Config):
    """Settings of an ``InstanceNorm``.

    Args:
        num_channels: the number of channels (dim 1 of the input).
        epsilon: added to the variance for numerical stability.
        affine: whether to learn a per-channel scale ``gamma`` and shift ``beta``; ``True`` by default as
            in Burn (PyTorch's ``nn.InstanceNorm*d`` default to ``affine=False``).
    """

    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device: Device) -> InstanceNorm:
        """An ``InstanceNorm`` on ``device``."""
        return InstanceNorm(self, device)


class InstanceNorm(Module):
    """Instance normalization (Ulyanov et al., 2016): each channel of each sample of an input
    ``[batch, num_channels, spatial...]`` is normalized over its spatial dims (mean and biased
    variance), then scaled and shifted per channel where ``affine``. As PyTorch's
    ``nn.InstanceNorm1d/2d/3d`` without running statistics; the same in training and evaluation."""

    def __init__(self, config: InstanceNormConfig, device: Device) -> None:
        _positive_size("InstanceNorm", "num_channels", config.num_channels)
        self.gamma, self.beta = _scale_and_shift(config.num_channels, device, config.affine)
        self.num_channels = config.num_channels
        self.epsilon = _check_epsilon("InstanceNorm", config.epsilon)
        self.affine = config.affine

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[batch, num_channels, spatial...]``, normalized per sample and channel.

        Raises:
            ValueError: the input has no spatial dim (rank below 3) or dim 1 is not ``num_channels``.
        """
        _check_channels("InstanceNorm", input, self.num_channels, 3)
        return group_norm(input, self.num_channels, _value(self.gamma), _value(self.beta), self.epsilon)


# -- rms norm ----------------------------------------------------------------------------------------
class RmsNormConfig(Config):
    """Settings of an ``RmsNorm``: ``d_model``, the size of the normalized last dim, and ``epsilon``
    (positive), added to the mean square."""

    d_model: int
    epsilon: float = 1e-5

    def init(self, device: Device) -> RmsNorm:
        """An ``RmsNorm`` on ``device``."""
        return RmsNorm(self, device)


class RmsNorm(Module):
    """Root-mean-square normalization over the last dim (Zhang and Sennrich, 2019):
    ``x / sqrt(mean(x^2) + epsilon) * gamma``, ``gamma`` learned (ones at first), as PyTorch's
    ``nn.RMSNorm(d_model, eps=epsilon)``, on the backend's ``rms_norm`` op. Half-precision inputs are
    normalized and scaled in f32, rounded once."""

    def __init__(self, config: RmsNormConfig, device: Device) -> None:
        _positive_size("RmsNorm", "d_model", config.d_model)
        self.gamma: Param = Initializer.Ones().init([config.d_model], device)
        self.epsilon = _check_epsilon("RmsNorm", config.epsilon, strict=True)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[..., d_model]``, normalized over its last dim.

        Raises:
            ValueError: the input is a scalar or its last dim is not ``d_model``.
        """
        d_model = self.gamma.shape[0]
        if input.rank < 1 or input.dims()[-1] != d_model:
            raise ValueError(f"RmsNorm: expected an input of shape [..., {d_model}], got {input.dims()}")
        return F.rms_norm(input, self.gamma.val(), self.epsilon)


# -- the family --------------------------------------------------------------------------------------
@variant
class NormalizationConfig:
    """The family of normalization layers, as Burn's ``NormalizationConfig`` enum: one frozen dataclass
    per kind, holding the layer's config: ``NormalizationConfig.Identity()``,
    ``Batch(BatchNormConfig(...))``, ``Group(GroupNormConfig(...))``, ``Instance(InstanceNormConfig(...))``,
    ``Layer(LayerNormConfig(...))``, ``Rms(RmsNormConfig(...))``.

    A config field of this type saves to and loads from JSON as ``{"Batch": {"config": {...}}}``. A
    generic config can be written with any size (0, say) and fitted to a layer with
    ``with_num_features``.

    Example:
        >>> norm = NormalizationConfig.Group(GroupNormConfig(4, 0)).with_num_features(32).init(device)
        >>> type(norm).__name__
        'GroupNorm'
    """

    Identity: ClassVar[type[_IdentityKind]]
    Batch: ClassVar[type[_BatchKind]]
    Group: ClassVar[type[_GroupKind]]
    Instance: ClassVar[type[_InstanceKind]]
    Layer: ClassVar[type[_LayerKind]]
    Rms: ClassVar[type[_RmsKind]]

    def init(self, device: Device) -> Module:
        """The layer of this kind on ``device`` (an ``Identity`` for ``Identity``)."""
        raise NotImplementedError(f"{type(self).__name__} is not a normalization kind")

    @property
    def num_features(self) -> int:
        """The number of features (channels or ``d_model``) the layer normalizes; 0 for ``Identity``."""
        raise NotImplementedError(f"{type(self).__name__} is not a normalization kind")

    def with_num_features(self, num_features: int) -> NormalizationConfig:
        """A copy sized for ``num_features`` features (``Identity`` stays as it is)."""
        raise NotImplementedError(f"{type(self).__name__} is not a normalization kind")


@dataclass(frozen=True)
class _IdentityKind(NormalizationConfig):
    """No normalization: an ``Identity`` layer."""

    def init(self, device: Device) -> Module:
        return Identity()

    @property
    def num_features(self) -> int:
        return 0

    def with_num_features(self, num_features: int) -> NormalizationConfig:
        return self


@dataclass(frozen=True)
class _OfLayerConfig:
    """A normalization kind holding its layer's ``config``, whose field ``features`` counts the features."""

    config: Any
    features: ClassVar[str]

    def init(self, device: Device) -> Module:
        layer: Module = self.config.init(device)
        return layer

    @property
    def num_features(self) -> int:
        count: int = getattr(self.config, self.features)
        return count

    def with_num_features(self, num_features: int) -> NormalizationConfig:
        resized = dataclasses.replace(self.config, **{self.features: num_features})
        return cast(NormalizationConfig, dataclasses.replace(self, config=resized))


@dataclass(frozen=True)
class _BatchKind(_OfLayerConfig, NormalizationConfig):
    """A ``BatchNorm``."""

    config: BatchNormConfig
    features = "num_features"


@dataclass(frozen=True)
class _GroupKind(_OfLayerConfig, NormalizationConfig):
    """A ``GroupNorm`` (its ``num_channels`` are the features)."""

    config: GroupNormConfig
    features = "num_channels"


@dataclass(frozen=True)
class _InstanceKind(_OfLayerConfig, NormalizationConfig):
    """An ``InstanceNorm`` (its ``num_channels`` are the features)."""

    config: InstanceNormConfig
    features = "num_channels"


@dataclass(frozen=True)
class _LayerKind(_OfLayerConfig, NormalizationConfig):
    """A ``LayerNorm`` (its ``d_model`` is the number of features)."""

    config: LayerNormConfig
    features = "d_model"


@dataclass(frozen=True)
class _RmsKind(_OfLayerConfig, NormalizationConfig):
    """An ``RmsNorm`` (its ``d_model`` is the number of features)."""

    config: RmsNormConfig
    features = "d_model"


for _name, _kind in (
    ("Identity", _IdentityKind),
    ("Batch", _BatchKind),
    ("Group", _GroupKind),
    ("Instance", _InstanceKind),
    ("Layer", _LayerKind),
    ("Rms", _RmsKind),
):
    _kind.__name__ = _name
    _kind.__qualname__ = f"NormalizationConfig.{_name}"
    setattr(NormalizationConfig, _name, _kind)
