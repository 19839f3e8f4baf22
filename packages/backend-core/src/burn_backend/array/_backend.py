"""``ArrayBackend``: the whole backend interface over an array namespace, for bindings to subclass."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from .._backend import Backend
from .._device import Device
from .._dtype import DType
from . import _lowp
from ._activation import ArrayActivationOps
from ._bool import ArrayBoolOps
from ._float import ArrayFloatOps
from ._int import ArrayIntOps
from ._module import ArrayModuleOps
from ._quant import ArrayQTensorOps
from ._runtime import LOW_PRECISION, ArrayRuntime

# One generator per (backend class, settings, device index): equal backends are one value and draw from
# one stream; NdArray(float_dtype="f64") has a stream of its own.
_generators: dict[tuple[Any, ...], Any] = {}
_generators_lock = threading.Lock()


class ArrayBackend(
    ArrayFloatOps, ArrayIntOps, ArrayBoolOps, ArrayModuleOps, ArrayActivationOps, ArrayQTensorOps, Backend
):
    """A backend whose primitives are arrays of one namespace (``runtime.xp``).

    A binding sets ``name``, ``is_cpu`` and ``runtime`` (an ``ArrayRuntime`` for its library) and
    overrides the ops its library does better; everything else (about 330 methods) comes from here.
    f16 and bf16 ops the namespace does not compute natively are computed in f32 and rounded once.

    Example:
        >>> import numpy as np
        >>> from burn_backend import Tensor
        >>> class Numpy(ArrayBackend):
        ...     name = "numpy-example"
        ...     is_cpu = True
        ...     runtime = ArrayRuntime(np)
        >>> Tensor.from_data([1.0, 2.0], Numpy().device()).sum().into_scalar()
        3.0
    """

    runtime: ClassVar[ArrayRuntime]
    """The namespace and what it does its own way."""
    xp: ClassVar[Any]
    """The array namespace (``runtime.xp``), read by every op."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        runtime = cls.__dict__.get("runtime")
        if runtime is not None:
            cls.xp = runtime.xp
            present = frozenset(dtype for dtype in LOW_PRECISION if DType.of(dtype) in runtime.dtypes)
            _lowp.apply(cls, present - runtime.native_low_precision)

    def check_device(self, device: Device) -> None:
        """Raise unless ``device`` is one of this backend's devices, saying what differs."""
        backend = device.backend
        if backend is self:
            return
        if type(backend) is not type(self):
            raise ValueError(
                f"{self.name}: {device} is a device of {backend!r}, not of this backend ({self!r})"
            )
        if backend != self:
            raise ValueError(
                f"{self.name}: {device} belongs to {backend!r}, another configuration than this "
                f"backend's ({self!r})"
            )

    def device_count(self) -> int:
        return self.runtime.device_count()

    def supports_dtype(self, device: Device, dtype: DType) -> bool:
        """The dtypes the namespace has (``runtime.dtypes``)."""
        return dtype in self.runtime.dtypes

    def generator(self, device: Device) -> Any:
        """The random generator of ``device`` (drawn from OS entropy until seeded)."""
        key = (type(self), self.settings(), device.index)
        generator = _generators.get(key)
        if generator is None:
            with _generators_lock, self.runtime.on_device(device.index):
                generator = _generators.setdefault(key, self.runtime.generator(None))
        return generator

    def seed(self, device: Device, seed: int) -> None:
        self.check_device(device)
        with self.runtime.on_device(device.index):
            _generators[type(self), self.settings(), device.index] = self.runtime.generator(seed)

    def sync(self, device: Device) -> None:
        self.check_device(device)
        self.runtime.synchronize(device.index)

    def from_dlpack(self, source: Any, device: Device) -> Any | None:
        """``xp.from_dlpack(source)`` moved to ``device``: shared memory where the namespace can read
        ``source`` in place; ``None`` where it cannot (another kind of device, a dtype it lacks)."""
        self.check_device(device)
        try:
            with self.runtime.on_device(device.index):
                array = self.xp.from_dlpack(source)
        except (BufferError, TypeError, ValueError, RuntimeError, NotImplementedError, AttributeError):
            return None
        if not any(array.dtype == known for known in self.runtime.dtypes.values()):
            return None
        return self.runtime.move(array, device.index)
