"""Padding configurations of convolution and pooling layers: ``PaddingConfig1d``, ``PaddingConfig2d`` and
``PaddingConfig3d``, each a family of ``Valid``, ``Same`` and ``Explicit`` (as Burn's enums)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._config import Config, variant

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
        if len(kernel_size) != self._DIMS or len(stride) != self._DIMS:
            raise ValueError(
                f"{layer}: {type(self).__qualname__} pads {self._DIMS} spatial dim(s), got kernel_size "
                f"{list(kernel_size)} and stride {list(stride)}"
            )
        return self._padding(kernel_size, stride, dilation, layer)

    def _padding(
        self, kernel_size: Sequence[int], stride: Sequence[int], dilation: Sequence[int], layer: str
    ) -> tuple[int, ...]:
        raise NotImplementedError(f"{type(self).__qualname__} is not a padding kind")


class _Valid(_PaddingConfig):
    """No padding: windows lie inside the input."""

    def _padding(
        self, kernel_size: Sequence[int], stride: Sequence[int], dilation: Sequence[int], layer: str
    ) -> tuple[int, ...]:
        return (0,) * self._DIMS


class _Same(_PaddingConfig):
    """As many zeros on each side as keep the output the size of the input: ``dilation * (kernel_size -
    1) / 2`` per dim, which needs stride 1 and an odd kernel (PyTorch's ``padding="same"`` for those)."""

    def _padding(
        self, kernel_size: Sequence[int], stride: Sequence[int], dilation: Sequence[int], layer: str
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
                f"{layer}: Same padding with an even kernel size is not supported: it pads both sides "
                "equally, which needs dilation * (kernel_size - 1) even along every dim (an odd kernel), "
                f"got kernel_size {kernel} and dilation {dilations}; use Explicit padding"
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


class _Explicit(_PaddingConfig):
    """Given numbers of zeros on both sides of each spatial dim."""

    def __post_init__(self) -> None:
        _explicit_sizes(self)

    def _padding(
        self, kernel_size: Sequence[int], stride: Sequence[int], dilation: Sequence[int], layer: str
    ) -> tuple[int, ...]:
        return _explicit_sizes(self)


@variant
class PaddingConfig1d(_PaddingConfig):
    """Padding of 1-d layers, a family of frozen dataclasses as Burn's enum:

    - ``PaddingConfig1d.Valid()``: no padding;
    - ``PaddingConfig1d.Same()``: the output keeps the input's length (stride 1 and an odd kernel);
    - ``PaddingConfig1d.Explicit(length)``: ``length`` zeros at both ends.

    Padding configs are config values: a config field of this type saves to and loads from JSON.
    """

    _DIMS = 1
    Valid: ClassVar[type[PaddingConfig1d]]
    Same: ClassVar[type[PaddingConfig1d]]
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
    Valid: ClassVar[type[PaddingConfig2d]]
    Same: ClassVar[type[PaddingConfig2d]]
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
    Valid: ClassVar[type[PaddingConfig3d]]
    Same: ClassVar[type[PaddingConfig3d]]
    Explicit: ClassVar[type[_Explicit3d]]


@dataclass(frozen=True)
class _Explicit1d(_Explicit, PaddingConfig1d):
    """``length`` zeros at both ends."""

    length: int


@dataclass(frozen=True)
class _Explicit2d(_Explicit, PaddingConfig2d):
    """``height`` zeros above and below, ``width`` zeros left and right."""

    height: int
    width: int


@dataclass(frozen=True)
class _Explicit3d(_Explicit, PaddingConfig3d):
    """``depth``, ``height`` and ``width`` zeros on both sides of each dim."""

    depth: int
    height: int
    width: int


# JSON names the kind by class name (``{"Explicit": {...}}``), and pickling finds ``Family.Kind``
for _family, _explicit in (
    (PaddingConfig1d, _Explicit1d),
    (PaddingConfig2d, _Explicit2d),
    (PaddingConfig3d, _Explicit3d),
):
    for _name, _kind in (("Valid", _Valid), ("Same", _Same), ("Explicit", _explicit)):
        if _kind is not _explicit:
            _kind = dataclass(frozen=True)(type(_name, (_kind, _family), {"__doc__": _kind.__doc__}))
        _kind.__name__ = _name
        _kind.__qualname__ = f"{_family.__name__}.{_name}"
        setattr(_family, _name, _kind)


def check_padding(layer: str, padding: object, dims: int) -> None:
    """Raise ``TypeError`` unless ``padding`` is a padding config of ``dims`` spatial dims."""
    family = (PaddingConfig1d, PaddingConfig2d, PaddingConfig3d)[dims - 1]
    if not isinstance(padding, family):
        raise TypeError(f"{layer}: padding must be a {family.__name__}, got {padding!r}")


def frozen_sizes(config: Any) -> None:
    """Turn the list values of a config's fields into tuples (configs are frozen; JSON and callers may
    give lists), so that equal configs compare equal."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, list):
            object.__setattr__(config, field.name, tuple(value))


class SizesConfig(Config):
    """A config with size fields (``kernel_size``, ``stride``, ...) whose list values (as JSON and callers
    may give them) become tuples, so that equal configs compare equal."""

    def __post_init__(self) -> None:
        frozen_sizes(self)


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
