"""The quantized ops of ``ArrayBackend``: ``QuantizedArray`` primitives over the namespace ``xp``."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._device import Device
from ..quantization import _codec
from ..quantization._data import QuantizedData
from ..quantization._ops import QTensorOps
from ..quantization._scheme import QuantScheme, QuantStore

Array = Any


class QuantizedArray:
    """A quantized primitive of an array backend: the stored values and the scales (arrays of the
    namespace), the scheme (its ``dtype``) and the logical ``shape``. Never written to."""

    __slots__ = ("dtype", "scales", "shape", "values")

    def __init__(self, values: Array, scales: Array, scheme: QuantScheme, shape: tuple[int, ...]) -> None:
        self.values = values
        self.scales = scales
        self.dtype = scheme
        self.shape = shape

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        # the namespace's functions read arrays through this: an op on float values given a quantized
        # primitive (which the Tensor API routes to q_* ops) names the cause rather than failing deep down
        raise TypeError(
            f"a quantized tensor ({self.dtype}) was given to an op on float values; dequantize() it first"
        )

    def __repr__(self) -> str:
        return f"QuantizedArray(shape={list(self.shape)}, scheme={self.dtype})"


def _float8(xp: Any) -> Any:
    # NumPy's dtypes (NumPy itself; not CuPy, whose kernels know no ml_dtypes type) hold float8
    if xp is np:
        return lambda d: d
    return lambda d: None


class ArrayQTensorOps(QTensorOps):
    """The required quantized ops once over ``xp``; the values are those of ``QuantizedData.quantize``
    (the same code, ``burn_backend.quantization._codec``). Layout ops on a per-tensor scheme move the
    stored values themselves (packed ones unpacked and packed again): exact. On a per-block scheme
    they dequantize, move and requantize."""

    runtime: ClassVar[Any]
    xp: ClassVar[Any]

    def _ns(self) -> _codec.Namespace:
        runtime = self.runtime
        namespace = getattr(runtime, "_quant_namespace", None)
        if namespace is None:
            namespace = _codec.Namespace(runtime.xp, runtime.dtype, runtime.cast, _float8(runtime.xp))
            runtime._quant_namespace = namespace
        return namespace

    def q_from_data(self, data: QuantizedData, device: Device) -> QuantizedArray:
        scheme = data.scheme
        _codec.check_holds(self._ns(), scheme, self.name)  # type: ignore[attr-defined]
        with self.runtime.on_device(device.index):
            values = self.runtime.from_host(np.ascontiguousarray(data.values), device)
            scales = self.runtime.from_host(np.ascontiguousarray(data.scales), device)
        return QuantizedArray(values, scales, scheme, tuple(data.shape))

    def q_into_data(self, tensor: QuantizedArray) -> QuantizedData:
        values = self.runtime.to_host(tensor.values)
        scales = self.runtime.to_host(tensor.scales)
        return QuantizedData(values, scales, tensor.dtype, tensor.shape)

    def q_to_device(self, tensor: QuantizedArray, device: Device) -> QuantizedArray:
        self.check_device(device)  # type: ignore[attr-defined]
        move = self.runtime.move
        return QuantizedArray(
            move(tensor.values, device.index), move(tensor.scales, device.index), tensor.dtype, tensor.shape
        )

    def quantize(self, tensor: Array, scheme: QuantScheme, scales: Array) -> QuantizedArray:
        ns = self._ns()
        shape = tuple(tensor.shape)
        expected = scheme.scales_shape(shape)
        count = 1
        for size in expected:
            count *= size
        if tuple(scales.shape) != expected and not (scheme.block_size is None and _size(scales) == 1):
            raise ValueError(
                f"quantize: scales of shape {list(scales.shape)} for a tensor of shape {list(shape)} under "
                f"{scheme}; expected {list(expected)}"
            )
        scales = ns.cast(self.xp.reshape(scales, expected), ns.dtype(scheme.param.dtype))
        values = _codec.quantize(ns, tensor, scales, scheme, self.name)  # type: ignore[attr-defined]
        return QuantizedArray(values, scales, scheme, shape)

    def quantize_dynamic(self, tensor: Array, scheme: QuantScheme) -> QuantizedArray:
        ns = self._ns()
        return self.quantize(tensor, scheme, _codec.dynamic_scales(ns, tensor, scheme, self.name))  # type: ignore[attr-defined]

    def dequantize(self, tensor: QuantizedArray) -> Array:
        ns = self._ns()
        numbers = _codec.dequantize(ns, tensor.values, tensor.scales, tensor.dtype, tensor.shape)
        return ns.cast(numbers, self.runtime.dtype(self.float_dtype))  # type: ignore[attr-defined]

    # -- layout: on the stored values where the scales are per tensor ---------------------------
    def _layout(self, op: str, tensor: QuantizedArray, move: Any) -> QuantizedArray:
        scheme = tensor.dtype
        ns = self._ns()
        if scheme.block_size is not None:
            moved = move(self.dequantize(tensor))
            if not moved.shape or moved.shape[-1] % scheme.block_size:
                raise ValueError(
                    f"{op}: a tensor of shape {list(tensor.shape)} under {scheme} would get shape "
                    f"{list(moved.shape)}, whose last dim the block size does not divide; dequantize() first"
                )
            return self.quantize_dynamic(moved, scheme)
        values = tensor.values
        if scheme.store is QuantStore.PACKED_U32:
            values = _codec.unpack(ns, values, scheme, tensor.shape)
        moved = move(values)
        shape = tuple(moved.shape)
        if scheme.store is QuantStore.PACKED_U32:
            moved = _codec.pack(ns, moved, scheme)
        return QuantizedArray(moved, tensor.scales, scheme, shape)

    def q_reshape(self, tensor: QuantizedArray, shape: tuple[int, ...]) -> QuantizedArray:
        return self._layout("q_reshape", tensor, lambda a: self.xp.reshape(a, shape))

    def q_swap_dims(self, tensor: QuantizedArray, dim1: int, dim2: int) -> QuantizedArray:
        axes = list(range(len(tensor.shape)))
        axes[dim1], axes[dim2] = axes[dim2], axes[dim1]
        return self.q_permute(tensor, tuple(axes))

    def q_permute(self, tensor: QuantizedArray, axes: tuple[int, ...]) -> QuantizedArray:
        return self._layout("q_permute", tensor, lambda a: self.xp.permute_dims(a, axes))

    def q_flip(self, tensor: QuantizedArray, axes: tuple[int, ...]) -> QuantizedArray:
        return self._layout("q_flip", tensor, lambda a: self.xp.flip(a, axis=axes))


def _size(array: Array) -> int:
    count = 1
    for size in array.shape:
        count *= size
    return count
