"""``QTensorOps``: the quantized op group of the backend interface (Burn's ``QTensorOps``)."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._dtype import Kind, kind_of
from .._ops.float import FloatTensorOps
from ._scheme import QuantScheme, is_quantized

if TYPE_CHECKING:
    from .._device import Device
    from ._data import QuantizedData

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype (a QuantScheme when quantized)
Shape = tuple[int, ...]


class QTensorOps(abc.ABC):
    """Ops on quantized primitives, whose ``dtype`` is their ``QuantScheme``.

    The nine methods Burn requires are abstract: moving data in and out (``q_from_data``,
    ``q_into_data``, ``q_to_device``), ``quantize``/``dequantize`` and the layout ops that a backend
    does on the stored values (``q_reshape``, ``q_swap_dims``, ``q_permute``, ``q_flip``). Every other
    op has a default that dequantizes its quantized operands, runs the float op and requantizes the
    float results with the first operand's scheme (dynamic scales; per tensor where the scheme's block
    size does not divide the result's last dim), so a backend works at once and overrides what it does
    better. ``q_matmul`` returns a float primitive (the product of weights and activations is an
    activation), as a quantized linear layer needs. Quantized primitives are constants: autodiff never
    tracks them (``q_set_require_grad`` refuses ``True``).
    """

    # -- required ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def q_from_data(self, data: QuantizedData, device: Device) -> P:
        """A quantized primitive on ``device`` holding ``data``'s values, scales and scheme."""

    @abc.abstractmethod
    def q_into_data(self, tensor: P) -> QuantizedData:
        """The values, scales and scheme of a quantized primitive, on the host."""

    @abc.abstractmethod
    def q_to_device(self, tensor: P, device: Device) -> P:
        """``tensor`` on another device of this backend."""

    @abc.abstractmethod
    def quantize(self, tensor: P, scheme: QuantScheme, scales: P) -> P:
        """The float primitive ``tensor`` quantized under ``scheme`` with the float primitive ``scales``
        (of ``scheme.scales_shape``: one per tensor or one per block).

        Raises:
            TypeError: the backend cannot hold the scheme.
            ValueError: the block size does not divide the last dim.
        """

    @abc.abstractmethod
    def dequantize(self, tensor: P) -> P:
        """The float primitive (the backend's float dtype) of the numbers a quantized one stands for."""

    @abc.abstractmethod
    def q_reshape(self, tensor: P, shape: Shape) -> P:
        """``tensor`` in another shape of as many elements."""

    @abc.abstractmethod
    def q_swap_dims(self, tensor: P, dim1: int, dim2: int) -> P:
        """``tensor`` with two dims exchanged."""

    @abc.abstractmethod
    def q_permute(self, tensor: P, axes: Shape) -> P:
        """``tensor`` with its dims reordered: result dim ``i`` is input dim ``axes[i]``."""

    @abc.abstractmethod
    def q_flip(self, tensor: P, axes: Shape) -> P:
        """``tensor`` reversed along ``axes``."""

    # -- defaults ---------------------------------------------------------------------------------
    def quantize_dynamic(self, tensor: P, scheme: QuantScheme) -> P:
        """``tensor`` quantized with scales computed from it: ``max|x|`` of each block (or of the tensor)
        to the end of the value range (``max|x| / qmax`` for symmetric ints), 1 for an all-zero block."""
        shape = tuple(tensor.shape)
        scales_shape = scheme.scales_shape(shape)
        magnitude = self.float_abs(tensor)  # type: ignore[attr-defined]
        if scheme.block_size is None:
            amax = self.float_max(magnitude)  # type: ignore[attr-defined]
        else:
            blocks = self.float_reshape(magnitude, (*scales_shape, scheme.block_size))  # type: ignore[attr-defined]
            amax = self.float_reshape(self.float_max_dim(blocks, len(scales_shape)), scales_shape)  # type: ignore[attr-defined]
        low, high = scheme.value.range
        scales = self.float_div_scalar(amax, high if scheme.value.is_float else (high - low) / 2.0)  # type: ignore[attr-defined]
        scales = self.float_mask_fill(scales, self.float_equal_elem(scales, 0.0), 1.0)  # type: ignore[attr-defined]
        scales = self.float_cast(scales, scheme.param.dtype)  # type: ignore[attr-defined]
        if scheme.block_size is None:
            scales = self.float_reshape(scales, ())  # type: ignore[attr-defined]
        return self.quantize(tensor, scheme, scales)

    def q_detach(self, tensor: P) -> P:
        """``tensor``: quantized primitives are never tracked."""
        return tensor

    def q_set_require_grad(self, tensor: P, require_grad: bool) -> P:
        """``tensor`` for ``False``.

        Raises:
            TypeError: ``require_grad`` is true: quantized tensors are constants, without gradients.
        """
        if require_grad:
            raise TypeError(
                f"require_grad: a quantized tensor ({tensor.dtype}) is a constant and has no gradient; "
                "dequantize() it to train a float copy"
            )
        return tensor

    def q_is_require_grad(self, tensor: P) -> bool:
        """False: quantized tensors are constants."""
        return False

    def q_transpose(self, tensor: P) -> P:
        """The last two dims swapped."""
        rank = len(tensor.shape)
        return self.q_swap_dims(tensor, rank - 2, rank - 1)

    def q_matmul(self, lhs: P, rhs: P) -> P:
        """The float product of ``lhs`` and ``rhs``, each float or quantized (quantized ones dequantized)."""
        lhs = self.dequantize(lhs) if is_quantized(lhs) else lhs
        rhs = self.dequantize(rhs) if is_quantized(rhs) else rhs
        return self.float_matmul(lhs, rhs)  # type: ignore[attr-defined]

    def _requantize(self, result: Any, scheme: QuantScheme) -> Any:
        """A float op's result quantized under ``scheme`` (per tensor where the scheme's block size does
        not divide its last dim), int and bool primitives as they are, tuples and lists item by item:
        how the defaults finish."""
        if isinstance(result, (tuple, list)):
            return type(result)(self._requantize(item, scheme) for item in result)
        if not hasattr(result, "dtype") or kind_of(result.dtype) is not Kind.FLOAT:
            return result
        shape = tuple(result.shape)
        if scheme.block_size is not None and (not shape or shape[-1] % scheme.block_size):
            scheme = scheme.with_block_size(None)
        return self.quantize_dynamic(result, scheme)


DEFAULT_OPS = (
    "expand", "select", "slice", "gather", "repeat_dim", "cat",
    "add", "add_scalar", "sub", "sub_scalar", "mul", "mul_scalar", "div", "div_scalar",
    "clamp", "clamp_min", "clamp_max", "neg", "recip",
    "sum", "sum_dim", "prod", "prod_dim", "mean", "mean_dim", "cumsum", "cumprod", "cummin", "cummax",
    "exp", "log", "log1p", "powf", "powi", "powi_scalar", "powf_scalar", "sqrt", "abs",
    "cos", "sin", "tan", "cosh", "sinh", "tanh", "erf",
    "argmax", "argmin", "argtopk", "topk", "topk_with_indices",
    "max", "max_dim", "max_dim_with_indices", "min", "min_dim", "min_dim_with_indices",
    "max_abs", "max_abs_dim",
    "any", "any_dim", "all", "all_dim", "sort", "sort_with_indices", "argsort",
)  # fmt: skip
"""The ops whose quantized form (``q_<name>``) is ``float_<name>`` on dequantized operands, requantized."""


def _dequantized(self: Any, value: Any) -> Any:
    if is_quantized(value):
        return self.dequantize(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_dequantized(self, item) for item in value)
    return value


def _first_scheme(values: tuple[Any, ...]) -> QuantScheme | None:
    for value in values:
        if is_quantized(value):
            scheme: QuantScheme = value.dtype
            return scheme
        if isinstance(value, (list, tuple)):
            found = _first_scheme(tuple(value))
            if found is not None:
                return found
    return None


def _make_default(name: str) -> Callable[..., Any]:
    float_name = f"float_{name}"
    interface = getattr(FloatTensorOps, float_name)

    def method(self: Any, *args: Any) -> Any:
        result = getattr(self, float_name)(*(_dequantized(self, arg) for arg in args))
        scheme = _first_scheme(args)
        return result if scheme is None else self._requantize(result, scheme)

    method.__name__ = f"q_{name}"
    method.__qualname__ = f"QTensorOps.q_{name}"
    method.__doc__ = (
        f"``{float_name}`` on the dequantized values; float results requantized with the scheme of the "
        "first quantized operand (a default: dequantize, run, requantize)."
    )
    method.__signature__ = inspect.signature(interface)  # type: ignore[attr-defined]
    method.__annotations__ = dict(interface.__annotations__)
    return method


for _name in DEFAULT_OPS:
    setattr(QTensorOps, f"q_{_name}", _make_default(_name))
