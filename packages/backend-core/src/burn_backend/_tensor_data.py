"""Host data, interop and devices of ``Tensor``: reading values back, NumPy and DLPack, ``*_like``
creation, moving between devices."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._data import TensorData
from ._device import Device
from ._distribution import Distribution
from ._dtype import DType, Kind
from ._registry import default_device, parse_device
from ._tensor_base import DeviceLike, DTypeLike, KindConversions, Number

if TYPE_CHECKING:
    from ._tensor import Tensor


def resolve(device: DeviceLike, dtype: DTypeLike, kind: Kind, op: str = "create") -> tuple[Device, DType]:
    """The device and dtype a creation op uses: defaults from the process and the device's backend.

    Raises:
        TypeError: ``device`` is neither a Device nor a spec string.
        ValueError: the device's backend has no device of that index.
    """
    device = default_device() if device is None else target_device(op, device)
    if dtype is None:
        return device, device.backend.default_dtype(kind)
    if isinstance(dtype, Kind):
        return device, device.backend.default_dtype(dtype)
    return device, DType.of(dtype)


def target_device(op: str, device: Device | str) -> Device:
    """``device`` as a ``Device``: a spec string parsed, a ``Device`` checked to exist.

    Raises:
        TypeError: ``device`` is neither a Device nor a spec string.
        ValueError: the device's backend has no device of that index.
    """
    if isinstance(device, str):
        return parse_device(device)
    if not isinstance(device, Device):
        raise TypeError(f"{op}: expected a Device or a device spec string, got {device!r}")
    check_device_exists(op, device)
    return device


def check_device_exists(op: str, device: Device) -> None:
    """Raise unless ``device``'s backend has a device of its index (a ``Device`` can be built with any
    index; the backend's own handles are known good and cost one lookup)."""
    backend = device.backend
    if backend._devices.get(device.index) is device:
        return
    try:
        backend.device(operator.index(device.index))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{op}: {device} is not a device: {error}") from None


class TensorDataOps(KindConversions):
    """Host data, interop, ``*_like`` creation and devices."""

    __slots__ = ()

    def zeros_like(self) -> Tensor:
        """Zeros of this tensor's shape, dtype and device."""
        return self._cls.zeros(self.dims(), self._device, self.dtype)

    def ones_like(self) -> Tensor:
        """Ones of this tensor's shape, dtype and device."""
        return self._cls.ones(self.dims(), self._device, self.dtype)

    def full_like(self, fill_value: Number) -> Tensor:
        """``fill_value`` in this tensor's shape, dtype and device."""
        return self._cls.full(self.dims(), fill_value, self._device, self.dtype)

    def random_like(self, distribution: Distribution | None = None) -> Tensor:
        """Random values of this tensor's shape, dtype and device."""
        return self._cls.random(self.dims(), distribution, self._device, self.dtype)

    # == data ======================================================================================
    def to_data(self) -> TensorData:
        """The values on the host (this synchronizes with the device)."""
        return self._op("into_data")(self._primitive)  # type: ignore[no-any-return]

    into_data = to_data

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """The values as a read-only NumPy array."""
        return self.to_data().to_numpy()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        array = self.to_numpy()
        if dtype is not None:
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(self, **kwargs: Any) -> Any:
        primitive = self._primitive
        if hasattr(primitive, "__dlpack__"):
            return primitive.__dlpack__(**kwargs)
        return self.to_numpy().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        primitive = self._primitive
        if hasattr(primitive, "__dlpack_device__"):
            return primitive.__dlpack_device__()  # type: ignore[no-any-return]
        return (1, 0)

    def numpy(self) -> np.ndarray[Any, Any]:
        """The values as a new, writable NumPy array (a host copy; PyTorch's ``x.numpy()``, which
        shares memory instead). ``to_numpy()`` returns a read-only array without the extra copy.

        Example:
            >>> Tensor.from_data([1, 2]).numpy()
            array([1, 2])
        """
        return np.array(self.to_numpy(), copy=True)

    def clone(self) -> Tensor:
        """This tensor (Burn's ``clone``, PyTorch's ``clone``): tensors are immutable values, so a
        clone shares the values and nothing is copied."""
        return cast("Tensor", self)

    def into_primitive(self) -> Any:
        """The backend's primitive (Burn's ``into_primitive``; the same as the ``primitive`` property)."""
        return self._primitive

    def tolist(self) -> Any:
        """The values as nested Python lists."""
        return self.to_data().tolist()

    def into_scalar(self) -> Any:
        """The value of a one-element tensor as a Python float, int or bool.

        Raises:
            ValueError: the tensor has more or fewer than one element.
        """
        if self.num_elements() != 1:
            raise ValueError(f"into_scalar: expected a tensor of one element, got shape {self.dims()}")
        value = self.to_data().to_numpy().reshape(()).item()
        return float(value) if self.kind is Kind.FLOAT else value

    item = into_scalar

    # == devices, kinds and dtypes =================================================================
    def to_device(self, device: Device | str) -> Tensor:
        """This tensor on ``device``; across backends the values travel through ``TensorData``."""
        device = target_device("to_device", device)
        if device.backend == self._device.backend:
            return self._cls(self._op("to_device")(self._primitive, device), device)
        return self._cls.from_data(self.to_data(), device, self.dtype)
