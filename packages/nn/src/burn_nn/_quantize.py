"""Quantizing a module's weights (Burn's ``Quantizer`` and ``Calibration``): ``Module.quantize_weights``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, TypeVar

import numpy as np

from burn_backend import Tensor, TensorData
from burn_backend.quantization import QuantizedData, QuantScheme, QuantStore

from ._param import Param, RunningState

if TYPE_CHECKING:
    from ._module import Module

__all__ = ["Calibration", "Quantizer", "quantize_weights"]

M = TypeVar("M", bound="Module")


@dataclasses.dataclass(frozen=True)
class Calibration:
    """How a quantizer chooses the scales of a tensor (Burn's ``Calibration``).

    ``Calibration.MinMax`` (Burn's only one) maps the largest magnitude of each block (or of the tensor)
    to the end of the value range, so nothing is clipped. ``Calibration.Percentile(p)`` maps the ``p``-th
    percentile of the magnitudes instead: the rare outliers above it are clipped, and the remaining
    values get a finer step (useful at 4 bits and below). ``Calibration.MinError`` tries the min-max
    scale shrunk by 16 factors from 1 down to 0.7 and keeps, for each block, the one whose rounding
    leaves the least squared error (a finer step against a few clipped values, weighed per block).

    Args:
        percentile: ``None`` for min-max, else the percentile of ``|x|`` in ``(0, 100]``.
        min_error: search the scale of least squared error (``Calibration.MinError``).

    Raises:
        ValueError: a percentile outside ``(0, 100]``, or both a percentile and ``min_error``.

    Example:
        >>> Calibration.MinMax, Calibration.Percentile(99.9), Calibration.MinError
        (Calibration.MinMax, Calibration.Percentile(99.9), Calibration.MinError)
    """

    percentile: float | None = None
    min_error: bool = False

    MinMax: ClassVar[Calibration]
    MinError: ClassVar[Calibration]

    def __post_init__(self) -> None:
        p = self.percentile
        if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p <= 100.0):
            raise ValueError(f"Calibration.Percentile: the percentile must be in (0, 100], got {p!r}")
        if p is not None and self.min_error:
            raise ValueError("Calibration: a percentile and min_error exclude each other")

    @staticmethod
    def Percentile(percentile: float) -> Calibration:
        """Scales from the ``percentile``-th percentile of ``|x|`` per block (or per tensor)."""
        return Calibration(float(percentile))

    def scales(self, values: np.ndarray, scheme: QuantScheme) -> np.ndarray | None:
        """The scales for ``values`` (float64 host array) under ``scheme``, or ``None`` for min-max (the
        backend's ``quantize_dynamic`` computes those)."""
        if self.min_error:
            return _min_error_scales(values, scheme)
        if self.percentile is None:
            return None
        magnitude = np.abs(values.astype(np.float64))
        if scheme.block_size is not None:
            magnitude = magnitude.reshape(*values.shape[:-1], -1, scheme.block_size)
            clip = np.percentile(magnitude, self.percentile, axis=-1)
            top = magnitude.max(axis=-1)
        else:
            clip = np.asarray(np.percentile(magnitude, self.percentile))
            top = np.asarray(magnitude.max())
        clip = np.where(clip > 0, clip, top)  # a mostly-zero block keeps its largest value
        low, high = scheme.value.range
        span = high if scheme.value.is_float else (high - low) / 2.0
        scales = np.where(clip > 0, clip / span, 1.0)
        return scales.astype(scheme.param.dtype.numpy).reshape(scheme.scales_shape(values.shape))

    def __repr__(self) -> str:
        if self.min_error:
            return "Calibration.MinError"
        return (
            "Calibration.MinMax" if self.percentile is None else f"Calibration.Percentile({self.percentile})"
        )


Calibration.MinMax = Calibration()
Calibration.MinError = Calibration(min_error=True)

_SHRINK = np.linspace(1.0, 0.7, 16)


def _min_error_scales(values: np.ndarray, scheme: QuantScheme) -> np.ndarray:
    """Per block (or tensor), the min-max scale times the factor of ``_SHRINK`` whose rounding (the
    backends' codec, in the scheme's scale dtype) leaves the least squared error."""
    native = scheme.with_store(QuantStore.NATIVE)
    x = values.astype(np.float32)
    base = QuantizedData.quantize(TensorData(x), native).scales.astype(np.float64)
    size = scheme.block_size or x.size
    best, best_error = base, np.full(base.shape, np.inf)
    for factor in _SHRINK:
        scales = (base * factor).astype(scheme.param.dtype.numpy)
        rounded = QuantizedData.quantize(TensorData(x), native, scales).dequantize().to_numpy()
        error = ((rounded.astype(np.float64) - values) ** 2).reshape(*base.shape, size).sum(axis=-1)
        better = error < best_error
        best, best_error = np.where(better, scales, best), np.where(better, error, best_error)
    return best.astype(scheme.param.dtype.numpy)


@dataclasses.dataclass(frozen=True)
class Quantizer:
    """What ``Module.quantize_weights`` does (Burn's ``Quantizer { calibration, scheme }``).

    Args:
        calibration: how scales are chosen (default ``Calibration.MinMax``).
        scheme: the ``QuantScheme`` (default: int8 symmetric, one f32 scale per tensor).

    Example:
        >>> from burn_backend.quantization import QuantScheme, QuantValue
        >>> Quantizer(Calibration.MinMax, QuantScheme().with_value(QuantValue.Q4S).with_block_size(32))
        Quantizer(calibration=Calibration.MinMax, scheme=QuantScheme(value=<QuantValue.Q4S: 'q4s'>, ...))
    """

    calibration: Calibration = Calibration.MinMax
    scheme: QuantScheme = dataclasses.field(default_factory=QuantScheme)

    def __post_init__(self) -> None:
        if not isinstance(self.calibration, Calibration):
            raise TypeError(f"Quantizer: calibration must be a Calibration, got {self.calibration!r}")
        if not isinstance(self.scheme, QuantScheme):
            raise TypeError(f"Quantizer: scheme must be a QuantScheme, got {self.scheme!r}")

    def quantize(self, tensor: Tensor, where: str = "tensor") -> Tensor:
        """``tensor`` (float) quantized under the scheme with the calibration's scales. Where the block
        size does not divide the last dim (a bias of 10, a head of 10 classes), one scale per tensor is
        used for that tensor, as the quantized ops' requantization does.

        Raises:
            TypeError: ``tensor`` is not a float tensor, or the backend cannot hold the scheme (the
                message names ``where``).
        """
        scheme = self.scheme
        dims = tuple(tensor.dims())
        if scheme.block_size is not None and (not dims or dims[-1] % scheme.block_size):
            scheme = scheme.with_block_size(None)
        try:
            on_host = self.calibration.percentile is not None or self.calibration.min_error
            values = tensor.to_data().to_numpy() if on_host else None
            if values is None:
                return tensor.quantize_dynamic(scheme)
            scales = self.calibration.scales(values, scheme)
            return tensor.quantize(scheme, Tensor.from_data(scales, tensor.device).float())
        except TypeError as error:
            raise TypeError(f"quantize_weights: {where} of shape {list(dims)}: {error}") from None


def quantize_weights(module: M, quantizer: Quantizer) -> M:
    """``module`` with every float parameter quantized by ``quantizer`` (see ``Module.quantize_weights``)."""
    if not isinstance(quantizer, Quantizer):
        raise TypeError(f"quantize_weights: expected a Quantizer, got {type(quantizer).__name__}")
    from ._module import ModuleMapper

    class _Mapper(ModuleMapper):
        def map_float_with_path(self, path: Sequence[str], param: Param) -> Param:
            tensor = param.val()
            if tensor.is_quantized:
                return param
            quantized = quantizer.quantize(tensor.detach(), ".".join(path))
            # a quantized tensor is a constant: it gets no gradient, so the optimizers skip it
            return Param.initialized(quantized, id=param.id, require_grad=False)

    return module.map(_Mapper())


def load_quantized(value: Param | RunningState, data: object, dequantize: bool) -> object:
    """The value to load into ``value`` (a ``Param`` or ``RunningState``) from record ``data`` where
    either side is quantized: a quantized tensor (the record's scheme) into a quantized parameter, the
    numbers it stands for into a float one when ``dequantize``; otherwise a message for ``RecordError``."""
    held = value.quant_scheme if isinstance(value, Param) else value.value().quant_scheme
    if not isinstance(data, QuantizedData):
        described = getattr(data, "dtype", type(data).__name__)
        return (
            f"record holds {described} values, module holds quantized {held}; load the record into "
            "the float module, then quantize_weights"
        )
    if held is not None:
        return Tensor.from_data(data, value.device)
    if not dequantize:
        float_dtype = value.dtype if isinstance(value, Param) else value.value().dtype
        return (
            f"record holds quantized {data.scheme} values, module holds {float_dtype}: pass "
            "dequantize=True to load the float numbers they stand for, or quantize_weights the module "
            "first to keep them quantized"
        )
    return data.dequantize()
