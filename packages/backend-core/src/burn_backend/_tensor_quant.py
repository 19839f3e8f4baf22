"""Quantized tensors in the ``Tensor`` API: ``quantize``, ``quantize_dynamic``, ``dequantize``, and the
ops whose quantized form differs from the float one (``matmul``, gradients, devices, ``repr``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ._device import Device
from ._dtype import Kind
from ._tensor_data import target_device
from ._tensor_protocol import TensorProtocol
from .quantization._data import QuantizedData
from .quantization._scheme import QuantScheme

if TYPE_CHECKING:
    from ._tensor import Tensor


class TensorQuantization(TensorProtocol):
    """Quantization of Float tensors.

    A quantized tensor is a Float tensor whose primitive's dtype is a ``QuantScheme``. The ops that go
    through the backend's op groups by name (shape and layout ops, slicing, arithmetic, element-wise
    math, reductions) run its ``q_*`` ops: exact moves of the stored values for layout ops, otherwise
    dequantize, run the float op, requantize. ``matmul`` returns a Float tensor. Int and Bool ops refuse
    it with a clear error; ``dequantize()`` gives the Float tensor for anything else.
    """

    __slots__ = ()

    @property
    def is_quantized(self) -> bool:
        """Whether this tensor holds quantized values.

        Example:
            >>> from burn_backend import Tensor
            >>> Tensor.from_data([1.0]).is_quantized
            False
        """
        return type(self._primitive.dtype) is QuantScheme

    @property
    def quant_scheme(self) -> QuantScheme | None:
        """The ``QuantScheme`` of a quantized tensor, ``None`` for any other."""
        dtype = self._primitive.dtype
        return dtype if type(dtype) is QuantScheme else None

    def quantize(self, scheme: QuantScheme, scales: Tensor) -> Tensor:
        """This Float tensor quantized under ``scheme`` with the given scales (Burn's ``quantize`` with
        its ``QuantizationParameters``): a Float tensor of ``scheme.scales_shape(dims)`` (one element
        for per-tensor scales).

        Args:
            scheme: the ``QuantScheme``.
            scales: the scales, on this tensor's device.

        Returns:
            the quantized tensor.

        Raises:
            TypeError: this tensor is not a (non-quantized) Float tensor, the scales are not Float, or the
                backend cannot hold the scheme.
            ValueError: the block size does not divide the last dim, or the scales' shape is wrong.

        Example:
            >>> from burn_backend import Tensor
            >>> from burn_backend.quantization import QuantScheme
            >>> q = Tensor.from_data([1.0, -2.0]).quantize(QuantScheme(), Tensor.from_data([0.5]))
            >>> q.to_data().values.tolist()
            [2, -4]
        """
        self._check_float("quantize")
        if not isinstance(scheme, QuantScheme):
            raise TypeError(f"quantize: expected a QuantScheme, got {scheme!r}")
        if not isinstance(scales, TensorQuantization) or scales.is_quantized or scales.kind is not Kind.FLOAT:
            got = scales._describe() if isinstance(scales, TensorQuantization) else type(scales).__name__
            raise TypeError(f"quantize: scales must be a Float tensor, got {got}")
        self._check_device_of("quantize", scales)
        expected = scheme.scales_shape(tuple(self._primitive.shape))
        given = tuple(scales._primitive.shape)
        if given != expected and not (scheme.block_size is None and scales.num_elements() == 1):
            raise ValueError(
                f"quantize: scales of shape {list(given)} for a tensor of shape {self.dims()} "
                f"under {scheme}; "
                f"expected {list(expected)}"
            )
        backend = self._device.backend
        scales_primitive = scales._primitive
        if given != expected:
            scales_primitive = backend.float_reshape(scales_primitive, expected)
        return self._new(backend.quantize(self._primitive, scheme, scales_primitive))

    def quantize_dynamic(self, scheme: QuantScheme) -> Tensor:
        """This Float tensor quantized under ``scheme`` with scales computed from its values: ``max|x|``
        of each block (or of the tensor) maps to the end of the value range.

        Raises:
            TypeError: not a Float tensor, or the backend cannot hold the scheme.
            ValueError: the block size does not divide the last dim.

        Example:
            >>> from burn_backend import Tensor
            >>> from burn_backend.quantization import QuantScheme
            >>> Tensor.from_data([1.0, -2.0]).quantize_dynamic(QuantScheme()).to_data().values.tolist()
            [64, -127]
        """
        self._check_float("quantize_dynamic")
        if not isinstance(scheme, QuantScheme):
            raise TypeError(f"quantize_dynamic: expected a QuantScheme, got {scheme!r}")
        scheme.scales_shape(tuple(self._primitive.shape))
        return self._new(self._device.backend.quantize_dynamic(self._primitive, scheme))

    def dequantize(self) -> Tensor:
        """The Float tensor (the backend's float dtype) of the numbers a quantized tensor stands for; any
        other tensor as it is.

        Example:
            >>> from burn_backend import Tensor
            >>> from burn_backend.quantization import QuantScheme
            >>> Tensor.from_data([1.0, -2.0]).quantize_dynamic(QuantScheme()).dequantize().tolist()
            [1.0078740119934082, -2.0]
        """
        if not self.is_quantized:
            return cast("Tensor", self)
        return self._new(self._device.backend.dequantize(self._primitive))

    def quantized_data(self) -> QuantizedData:
        """The values, scales and scheme of a quantized tensor on the host (what ``to_data`` returns for
        it, typed as such).

        Raises:
            TypeError: the tensor is not quantized.

        Example:
            >>> from burn_backend import Tensor
            >>> from burn_backend.quantization import QuantScheme
            >>> Tensor.from_data([1.0, -2.0]).quantize_dynamic(QuantScheme()).quantized_data().scales.tolist()
            0.015748031437397003
        """
        if not self.is_quantized:
            raise TypeError(f"quantized_data: expected a quantized tensor, got a {self._describe()}")
        data: QuantizedData = self._device.backend.q_into_data(self._primitive)
        return data

    def _check_float(self, op: str) -> None:
        if self.is_quantized:
            raise TypeError(
                f"{op}: the tensor is quantized already ({self._primitive.dtype}); dequantize() it first"
            )
        self._require_kind(op, Kind.FLOAT)

    # -- ops whose quantized form differs -------------------------------------------------------------
    def matmul(self, other: Tensor) -> Tensor:
        if not (self.is_quantized or (isinstance(other, TensorQuantization) and other.is_quantized)):
            return super().matmul(other)
        if not isinstance(other, TensorQuantization):
            raise TypeError(f"matmul: expected a Tensor, got {type(other).__name__}")
        for operand in (self, other):
            if not operand.is_quantized:
                operand._require_kind("matmul", Kind.FLOAT)
        self._check_device_of("matmul", other)
        a, b = self.dims(), other.dims()
        if len(a) < 2 or len(b) < 2:
            raise ValueError(f"matmul: operands need a rank of at least 2; got shapes {a} and {b}")
        if a[-1] != b[-2]:
            raise ValueError(f"matmul: inner dimensions differ: shapes {a} and {b}")
        backend = self._device.backend
        if len(b) == 2 and len(a) > 2:
            # a weight of rank 2: the leading dims of the activations fold into its rows
            rows = self.reshape([-1, a[-1]])
            product = backend.q_matmul(rows._primitive, other._primitive)
            return self._new(product).reshape([*a[:-1], b[-1]])
        if a[:-2] != b[:-2]:
            return self.dequantize().matmul(other.dequantize())
        return self._new(backend.q_matmul(self._primitive, other._primitive))

    def set_require_grad(self, require_grad: bool) -> Tensor:
        if self.is_quantized:
            return self._new(self._device.backend.q_set_require_grad(self._primitive, require_grad))
        return super().set_require_grad(require_grad)

    def is_require_grad(self) -> bool:
        return not self.is_quantized and super().is_require_grad()

    def detach(self) -> Tensor:
        return cast("Tensor", self) if self.is_quantized else super().detach()

    def to_device(self, device: Device | str) -> Tensor:
        if not self.is_quantized:
            return super().to_device(device)
        device = target_device("to_device", device)
        if device.backend == self._device.backend:
            return self._cls(self._device.backend.q_to_device(self._primitive, device), device)
        return self._cls(device.backend.q_from_data(self.quantized_data(), device), device)

    def __repr__(self) -> str:
        if not self.is_quantized:
            return super().__repr__()
        data = self.quantized_data()
        return (
            f"Tensor(quantized {self._primitive.dtype}, shape={self.dims()}, device={self._device}, "
            f"values={data.values.reshape(-1)[:8].tolist()}{'...' if data.values.size > 8 else ''})"
        )
