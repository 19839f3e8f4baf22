"""Padding configurations of convolution and pooling layers: ``PaddingConfig1d``, ``PaddingConfig2d`` and
``PaddingConfig3d``, each a family of ``Valid``, ``Same`` and ``Explicit`` (as Burn's enums)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._config import variant

__all__ = ["PaddingConfig1d", "PaddingConfig2d", "PaddingConfig3d"]


class _PaddingConfig:
    """What the three families share: ``calculate_padding`` over ``_DIMS`` spatial dims."""

    _DIMS: ClassVar[int]

    def calculate_padding(
        self,
        kernel_size: Sequence[int],
        stride: Sequence[int],
        dilation: Sequence[int],
        *,
        layer: str = "padding",
    ) -> tuple[int, ...]:
        """The zeros added on each side of every spatial dim, one value per dim.

        Args:
            kernel_size: the kernel's size along each spatial dim.
            stride: the step between windows along each spatial dim.
            dilation: the spacing between kernel elements along each spatial dim.
            layer: the layer's name, for error messages.

        Raises:
            ValueError: ``Same`` padding where the output cannot keep the input's size with equal
                padding on both sides (a stride other than 1, or an even ``dilation * (kernel_size - 1)``).
        """
        raise NotImplementedError(f"{type(self).__qualname__} is not a padding kind")


def _same_padding(
    kernel_size: Sequence[int], stride: Sequence[int], dilation: Sequence[int], layer: str
) -> tuple[int, ...]:
    kernel, strides, dilations = list(kernel_size), list(stride), list(dilation)
    if any(s != 1 for s in strides):
        raise ValueError(
            f"{layer}: Same padding keeps the input size only with stride 1 along every dim, got stride "
            f"{strides}; use Explicit padding with a larger stride"
        )
    spans = [d * (k - 1) for k, d in zip(kernel, dilations)]
    if any(span % 2 for span in spans):
        raise ValueError(
            f"{layer}: Same padding with an even kernel size is not supported: it pads both sides equally, "
            f"which needs dilation * (kernel_size - 1) even along every dim (an odd kernel), got kernel_size "
            f"{kernel} and dilation {dilations}; use Explicit padding"
        )
    return tuple(span // 2 for span in spans)


def _explicit_sizes(config: Any) -> tuple[int, ...]:
    sizes = tuple(getattr(config, field.name) for field in dataclasses.fields(config))
    for field, size in zip(dataclasses.fields(config), sizes):
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(
                f"{type(config).__qualname__}: {field.name} must be an int >= 0 (zeros added on each side), "
                f"got {size!r}"
            )
    return sizes


def _check_dims(
    config: _PaddingConfig, kernel_size: Sequence[int], stride: Sequence[int], layer: str
) -> None:
    if len(kernel_size) != config._DIMS or len(stride) != config._DIMS:
        raise ValueError(
            f"{layer}: {type(config).__qualname__} pads {config._DIMS} spatial dim(s), got kernel_size "
            f"{list(kernel_size)} and stride {list(stride)}"
        )


@variant
class PaddingConfig1d(_PaddingConfig):
    """Padding of 1-d layers, a family of frozen dataclasses as Burn's enum:

    - ``PaddingConfig1d.Valid()``: no padding;
    - ``PaddingConfig1d.Same()``: the output keeps the input's length (stride 1 and an odd kernel);
    - ``PaddingConfig1d.Explicit(length)``: ``length`` zeros at both ends.

    Padding configs are config values: a config field of this type saves to and loads from JSON.
    """

    _DIMS = 1
    Valid: ClassVar[type[_Valid1d]]
    Same: ClassVar[type[_Same1d]]
    Explicit: ClassVar[type[_Explicit1d]]


@variant
class PaddingConfig2d(_PaddingConfig):
    """Padding of 2-d layers, a family of frozen dataclasses as Burn's enum:

    - ``PaddingConfig2d.Valid()``: no padding;
    - ``PaddingConfig2d.Same()``: the output keeps the input's height and width (stride 1, odd kernel);
    - ``PaddingConfig2d.Explicit(height, width)``: zeros on both sides of each dim.

    Example:
        >>> Conv2dConfig((3, 8), (3, 3), padding=PaddingConfig2d.Explicit(1, 1))
    """

    _DIMS = 2
    Valid: ClassVar[type[_Valid2d]]
    Same: ClassVar[type[_Same2d]]
    Explicit: ClassVar[type[_Explicit2d]]


@variant
class PaddingConfig3d(_PaddingConfig):
    """Padding of 3-d layers, a family of frozen dataclasses as Burn's enum:

    - ``PaddingConfig3d.Valid()``: no padding;
    - ``PaddingConfig3d.Same()``: the output keeps the input's depth, height and width (stride 1, odd
      kernel);
    - ``PaddingConfig3d.Explicit(depth, height, width)``: zeros on both sides of each dim.
    """

    _DIMS = 3
    Valid: ClassVar[type[_Valid3d]]
    Same: ClassVar[type[_Same3d]]
    Explicit: ClassVar[type[_Explicit3d]]


class _Valid(_PaddingConfig):
    """No padding: windows lie inside the input."""

    def calculate_padding(
        self,
        kernel_size: Sequence[int],
        stride: Sequence[int],
        dilation: Sequence[int],
        *,
        layer: str = "padding",
    ) -> tuple[int, ...]:
        _check_dims(self, kernel_size, stride, layer)
        return (0,) * self._DIMS


class _Same(_PaddingConfig):
    """As many zeros on each side as keep the output the size of the input: ``dilation * (kernel_size -
    1) / 2`` per dim, which needs stride 1 and an odd kernel (PyTorch's ``padding="same"`` for those)."""

    def calculate_padding(
        self,
        kernel_size: Sequence[int],
        stride: Sequence[int],
        dilation: Sequence[int],
        *,
        layer: str = "padding",
    ) -> tuple[int, ...]:
        _check_dims(self, kernel_size, stride, layer)
        return _same_padding(kernel_size, stride, dilation, layer)


class _Explicit(_PaddingConfig):
    """Given numbers of zeros on both sides of each spatial dim."""

    def __post_init__(self) -> None:
        _explicit_sizes(self)

    def calculate_padding(
        self,
        kernel_size: Sequence[int],
        stride: Sequence[int],
        dilation: Sequence[int],
        *,
        layer: str = "padding",
    ) -> tuple[int, ...]:
        _check_dims(self, kernel_size, stride, layer)
        return _explicit_sizes(self)


@dataclass(frozen=True)
class _Valid1d(_Valid, PaddingConfig1d):
    """No padding."""


@dataclass(frozen=True)
class _Same1d(_Same, PaddingConfig1d):
    """The output keeps the input's length (stride 1, odd kernel)."""


@dataclass(frozen=True)
class _Explicit1d(_Explicit, PaddingConfig1d):
    """``length`` zeros at both ends."""

    length: int


@dataclass(frozen=True)
class _Valid2d(_Valid, PaddingConfig2d):
    """No padding."""


@dataclass(frozen=True)
class _Same2d(_Same, PaddingConfig2d):
    """The output keeps the input's height and width (stride 1, odd kernel)."""


@dataclass(frozen=True)
class _Explicit2d(_Explicit, PaddingConfig2d):
    """``height`` zeros above and below, ``width`` zeros left and right."""

    height: int
    width: int


@dataclass(frozen=True)
class _Valid3d(_Valid, PaddingConfig3d):
    """No padding."""


@dataclass(frozen=True)
class _Same3d(_Same, PaddingConfig3d):
    """The output keeps the input's depth, height and width (stride 1, odd kernel)."""


@dataclass(frozen=True)
class _Explicit3d(_Explicit, PaddingConfig3d):
    """``depth``, ``height`` and ``width`` zeros on both sides of each dim."""

    depth: int
    height: int
    width: int


# JSON names the kind by class name (``{"Explicit": {...}}``), and pickling finds ``Family.Kind``
for _family, _kinds in (
    (PaddingConfig1d, (_Valid1d, _Same1d, _Explicit1d)),
    (PaddingConfig2d, (_Valid2d, _Same2d, _Explicit2d)),
    (PaddingConfig3d, (_Valid3d, _Same3d, _Explicit3d)),
):
    for _kind, _name in zip(_kinds, ("Valid", "Same", "Explicit")):
        _kind.__name__ = _name
        _kind.__qualname__ = f"{_family.__name__}.{_name}"
        setattr(_family, _name, _kind)


def frozen_sizes(config: Any) -> None:
    """Turn the list values of a config's fields into tuples (configs are frozen; JSON and callers may
    give lists), so that equal configs compare equal."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, list):
            object.__setattr__(config, field.name, tuple(value))


def check_sizes(layer: str, name: str, value: Any, count: int, minimum: int) -> tuple[int, ...]:
    """``value`` (an int, or ``count`` ints) as a ``count``-tuple of ints ``>= minimum``.

    Raises:
        ValueError: naming ``layer`` and the field ``name`` when ``value`` is of the wrong length or type,
            or too small.
    """
    items = (value,) * count if isinstance(value, int) and not isinstance(value, bool) else value
    if (
        not isinstance(items, (tuple, list))
        or len(items) != count
        or any(isinstance(item, bool) or not isinstance(item, int) for item in items)
    ):
        raise ValueError(
            f"{layer}: {name} must be {'an int' if count == 1 else f'{count} ints'}, got {value!r}"
        )
    if min(items) < minimum:
        raise ValueError(f"{layer}: {name} must be >= {minimum}, got {value!r}")
    return tuple(items)
