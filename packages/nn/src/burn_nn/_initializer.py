"""``Initializer``: how a parameter's first values are drawn."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from burn_backend import Device, Distribution, DType, Tensor

from ._config import variant
from ._param import Param

__all__ = ["Initializer"]


@variant
class Initializer:
    """The family of initializers, one frozen dataclass per kind, as Burn's ``Initializer`` enum:
    ``Initializer.Constant(value)``, ``Ones()``, ``Zeros()``, ``Uniform(min, max)``, ``Normal(mean, std)``,
    ``KaimingUniform(gain, fan_out_only)``, ``KaimingNormal(gain, fan_out_only)``, ``XavierUniform(gain)``,
    ``XavierNormal(gain)``, ``Orthogonal(gain)``.

    Random kinds draw from the device's generator (``device.seed(n)`` repeats them). Initializers are
    config values: a config field of type ``Initializer`` saves to and loads from JSON.

    Example:
        >>> weight = Initializer.KaimingUniform(gain=1 / 3**0.5).init([4, 8], device, fan_in=4)
    """

    Constant: ClassVar[type[Constant]]
    Ones: ClassVar[type[Ones]]
    Zeros: ClassVar[type[Zeros]]
    Uniform: ClassVar[type[Uniform]]
    Normal: ClassVar[type[Normal]]
    KaimingUniform: ClassVar[type[KaimingUniform]]
    KaimingNormal: ClassVar[type[KaimingNormal]]
    XavierUniform: ClassVar[type[XavierUniform]]
    XavierNormal: ClassVar[type[XavierNormal]]
    Orthogonal: ClassVar[type[Orthogonal]]

    def tensor(
        self,
        shape: Sequence[int],
        device: Device,
        *,
        fan_in: int | None = None,
        fan_out: int | None = None,
        dtype: DType | None = None,
    ) -> Tensor:
        """The initial values, drawn now.

        Args:
            shape: the tensor's shape.
            device: where it lives.
            fan_in: the number of inputs each output sees (Kaiming, Xavier).
            fan_out: the number of outputs each input feeds (Kaiming with ``fan_out_only``, Xavier).
            dtype: a float dtype (default: the device's).
        """
        raise NotImplementedError(f"{type(self).__name__} is not an initializer kind")

    def init(
        self,
        shape: Sequence[int],
        device: Device,
        *,
        fan_in: int | None = None,
        fan_out: int | None = None,
        dtype: DType | None = None,
        require_grad: bool = True,
    ) -> Param:
        """A lazy parameter of ``shape`` whose values ``tensor`` draws on first use; missing fans fail
        here, not at first use. Arguments as ``tensor``'s, plus whether the parameter trains."""
        resolved = dtype or device.backend.float_dtype
        self._check(fan_in, fan_out)
        return Param.lazy(
            lambda: self.tensor(shape, device, fan_in=fan_in, fan_out=fan_out, dtype=resolved),
            shape,
            device,
            dtype=resolved,
            require_grad=require_grad,
        )

    def _check(self, fan_in: int | None, fan_out: int | None) -> None:
        """Raise when a fan this kind needs is missing (most kinds need none)."""

    def _fan(self, fan_in: int | None, fan_out: int | None) -> int:
        """The fan a Kaiming kind scales by: fan-in, or fan-out with ``fan_out_only``."""
        if getattr(self, "fan_out_only", False):
            return self._need(fan_out, "fan_out")
        return self._need(fan_in, "fan_in")

    def _fans(self, fan_in: int | None, fan_out: int | None) -> int:
        """``fan_in + fan_out``, which a Xavier kind scales by (both needed)."""
        return self._need(fan_in, "fan_in") + self._need(fan_out, "fan_out")

    def _need(self, fan: int | None, which: str) -> int:
        if fan is None or fan <= 0:
            raise ValueError(f"Initializer.{type(self).__name__}: needs a positive {which}, got {fan}")
        return fan


def _uniform(shape: Sequence[int], device: Device, dtype: DType | None, bound: float) -> Tensor:
    return Tensor.random(list(shape), Distribution.uniform(-bound, bound), device, dtype)


def _normal(shape: Sequence[int], device: Device, dtype: DType | None, mean: float, std: float) -> Tensor:
    return Tensor.random(list(shape), Distribution.normal(mean, std), device, dtype)


@dataclass(frozen=True)
class Constant(Initializer):
    """Every value ``value``."""

    value: float

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        return Tensor.full(list(shape), self.value, device, dtype)


@dataclass(frozen=True)
class Ones(Initializer):
    """Every value 1."""

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        return Tensor.ones(list(shape), device, dtype)


@dataclass(frozen=True)
class Zeros(Initializer):
    """Every value 0."""

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        return Tensor.zeros(list(shape), device, dtype)


@dataclass(frozen=True)
class Uniform(Initializer):
    """Uniform on ``[min, max)``."""

    min: float
    max: float

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        return Tensor.random(list(shape), Distribution.uniform(self.min, self.max), device, dtype)


@dataclass(frozen=True)
class Normal(Initializer):
    """Normal with ``mean`` and standard deviation ``std``."""

    mean: float
    std: float

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        return _normal(shape, device, dtype, self.mean, self.std)


@dataclass(frozen=True)
class KaimingUniform(Initializer):
    """Uniform on ``±gain * sqrt(3 / fan)``, ``fan`` being the fan-in (the fan-out with
    ``fan_out_only``). ``gain = 1/sqrt(3)`` is PyTorch's default for linear and convolution weights."""

    gain: float
    fan_out_only: bool = False

    def _check(self, fan_in: int | None, fan_out: int | None) -> None:
        self._fan(fan_in, fan_out)

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        fan = self._fan(fan_in, fan_out)
        return _uniform(shape, device, dtype, self.gain * math.sqrt(3.0 / fan))


@dataclass(frozen=True)
class KaimingNormal(Initializer):
    """Normal with standard deviation ``gain / sqrt(fan)``."""

    gain: float
    fan_out_only: bool = False

    def _check(self, fan_in: int | None, fan_out: int | None) -> None:
        self._fan(fan_in, fan_out)

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        fan = self._fan(fan_in, fan_out)
        return _normal(shape, device, dtype, 0.0, self.gain / math.sqrt(fan))


@dataclass(frozen=True)
class XavierUniform(Initializer):
    """Uniform on ``±gain * sqrt(6 / (fan_in + fan_out))``."""

    gain: float

    def _check(self, fan_in: int | None, fan_out: int | None) -> None:
        self._fans(fan_in, fan_out)

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        fans = self._fans(fan_in, fan_out)
        return _uniform(shape, device, dtype, self.gain * math.sqrt(6.0 / fans))


@dataclass(frozen=True)
class XavierNormal(Initializer):
    """Normal with standard deviation ``gain * sqrt(2 / (fan_in + fan_out))``."""

    gain: float

    def _check(self, fan_in: int | None, fan_out: int | None) -> None:
        self._fans(fan_in, fan_out)

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        fans = self._fans(fan_in, fan_out)
        return _normal(shape, device, dtype, 0.0, self.gain * math.sqrt(2.0 / fans))


@dataclass(frozen=True)
class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix over the first dim and the others flattened, scaled by ``gain``: the
    Q factor of a normal matrix's QR decomposition, with the signs that make it uniformly distributed
    (as ``torch.nn.init.orthogonal_``). Needs at least 2 dims."""

    gain: float = 1.0

    def tensor(self, shape, device, *, fan_in=None, fan_out=None, dtype=None):  # type: ignore[no-untyped-def]
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError(f"Initializer.Orthogonal: needs at least 2 dims, got shape {shape}")
        rows, cols = shape[0], math.prod(shape[1:])
        draw = _normal([rows, cols], device, dtype, 0.0, 1.0).to_data().to_numpy().astype(np.float64)
        matrix = draw.T if rows < cols else draw
        q, r = np.linalg.qr(matrix)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return Tensor.from_data((self.gain * q).reshape(shape), device, dtype or device.backend.float_dtype)


for _kind in (
    Constant,
    Ones,
    Zeros,
    Uniform,
    Normal,
    KaimingUniform,
    KaimingNormal,
    XavierUniform,
    XavierNormal,
    Orthogonal,
):
    _kind.__qualname__ = f"Initializer.{_kind.__name__}"
    setattr(Initializer, _kind.__name__, _kind)
