"""GPTQ: quantizing the weights of linear layers with calibration data (``quantize_weights_gptq``)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from burn_backend import Tensor, TensorData
from burn_backend.quantization import QuantizedData, QuantScheme, QuantStore

from ._linear import Linear
from ._module import ModuleMapper, _items
from ._param import Param
from ._quantize import Calibration, Quantizer

if TYPE_CHECKING:
    from ._module import Module

__all__ = ["quantize_weights_gptq"]

M = TypeVar("M", bound="Module")
Path = tuple[str, ...]


def quantize_weights_gptq(
    module: M,
    quantizer: Quantizer,
    batches: Iterable[Any],
    *,
    forward: Callable[[Any, Any], object] | None = None,
    damping: float = 0.01,
    block_rows: int = 128,
    act_order: bool = True,
    targets: Callable[[str, Any], bool] | None = None,
) -> M:
    """``module`` with its weights quantized by ``quantizer``'s scheme, the linear layers' weights by
    GPTQ (Frantar et al., 2022) from calibration data, every other float parameter as
    ``Module.quantize_weights`` does.

    Rounding each weight to the nearest level (``quantize_weights``) minimizes the error of the weights;
    what matters is the error of the layer's outputs on the inputs it sees. GPTQ minimizes
    ``||X W - X Q||`` for the layer's calibration inputs ``X``: with ``H = 2 X^T X`` (plus
    ``damping * mean(diag H)`` on the diagonal, so that ``H`` inverts), it quantizes the weight's input
    rows (Burn's ``Linear.weight`` is ``[d_input, d_output]``) one at a time and moves each row's
    rounding error onto the rows not yet quantized through the Cholesky factor of ``H^-1``, in blocks of
    ``block_rows`` rows with lazy updates of the rest. A block scheme's scales (blocks run along the last
    dim, ``d_output``) belong to one input row each, so they are chosen (by ``quantizer``'s calibration)
    from the row's values as they stand when the row is quantized, after the earlier rows' corrections.

    The layers are quantized in the order the model calls them, each from the inputs it receives when
    the layers before it are quantized already (GPTQ's sequential mode), so a layer also compensates the
    errors of the layers before it; layers called on the same input (an attention's query, key and value)
    share a pass. The other parameters (embeddings, norms, biases, ...) are quantized first, by
    ``quantizer``; parameters quantized already are kept (quantize parts with another quantizer first to
    mix schemes). Inputs are collected by wrapping the layers' ``forward`` for the duration of each pass
    (the model's code needs no change) on a copy of the model; ``module`` itself is left as it was. A pass
    stops the forward once the layers it collects have been called. A target layer the forward never
    calls is rounded to nearest. The work runs on the host in float64 NumPy: ``d_input^2`` per layer, and
    one forward pass of the model's prefix per calibration batch per group of layers.

    Args:
        module: the float model (on an inference device: ``model.valid()``).
        quantizer: the scheme and calibration (min-max or percentile per block, or per tensor: then one
            scale is chosen from the whole weight up front).
        batches: the calibration batches (a few batches of training data; not the data you evaluate on).
        forward: ``forward(model, batch)`` runs the model on one batch; default ``model(batch)``.
        damping: the fraction of ``mean(diag H)`` added to ``H``'s diagonal (GPTQ's 0.01).
        block_rows: rows quantized between two lazy updates of the remaining rows (only speed depends on
            it).
        act_order: quantize the rows of the inputs with the largest ``diag H`` first (GPTQ's
            ``act_order``): the rows quantized last have the fewest rows left to take their error, so the
            important ones go first. Scales are per row, so the order costs nothing at inference.
        targets: ``targets(path, module)`` says which sub-modules (dotted path) are GPTQ's linear layers;
            default: every ``Linear``. A target must hold a 2-d ``weight`` ``[d_input, d_output]`` that its
            ``forward(input, ...)`` multiplies ``input`` (``[..., d_input]``) by, as ``Linear`` does.

    Returns:
        The quantized model (parameters keep their ids; quantized ones get no gradient).

    Raises:
        TypeError: ``quantizer`` is not a ``Quantizer``, a target has no 2-d float ``weight``, or the
            backend cannot hold the scheme.
        ValueError: no calibration batches, no target layer, ``damping`` not positive and finite,
            ``block_rows`` below 1, calibration inputs of the wrong width or not finite, or a Hessian that
            stays singular (raise ``damping``); each names the layer.

    Example:
        >>> q4 = QuantScheme().with_value(QuantValue.Q4F).with_block_size(32)  # doctest: +SKIP
        >>> model = quantize_weights_gptq(model, Quantizer(Calibration.MinMax, q4), batches)  # doctest: +SKIP
    """
    if not isinstance(quantizer, Quantizer):
        raise TypeError(f"quantize_weights_gptq: expected a Quantizer, got {type(quantizer).__name__}")
    if isinstance(damping, bool) or not isinstance(damping, (int, float)) or not 0 < damping < math.inf:
        raise ValueError(f"quantize_weights_gptq: damping must be positive and finite, got {damping!r}")
    if isinstance(block_rows, bool) or not isinstance(block_rows, int) or block_rows < 1:
        raise ValueError(f"quantize_weights_gptq: block_rows must be an int >= 1, got {block_rows!r}")
    calibration_batches = list(batches)
    if not calibration_batches:
        raise ValueError(
            "quantize_weights_gptq: no calibration batches (give a few batches of training data)"
        )
    run = forward if forward is not None else (lambda model, batch: model(batch))
    chosen = targets if targets is not None else (lambda path, layer: isinstance(layer, Linear))
    layers = _find_targets(module, (), chosen)
    if not layers:
        raise ValueError(
            f"quantize_weights_gptq: {type(module).__name__} has no layer to calibrate (no Linear, or "
            "none that targets chose); use Module.quantize_weights"
        )
    pending: list[Path] = []
    for path, layer in layers:
        weight = getattr(layer, "weight", None)
        if not isinstance(weight, Param) or not weight.dtype.is_float:
            raise TypeError(
                f"quantize_weights_gptq: {_name(path)} ({type(layer).__name__}) has no float weight"
            )
        if weight.val().is_quantized:
            continue  # quantized already: kept, as quantize_weights does
        if weight.val().rank != 2:
            raise TypeError(
                f"quantize_weights_gptq: {_name(path)}.weight has shape {weight.val().dims()}, expected "
                "[d_input, d_output]"
            )
        pending.append(path)
    weight_paths = {(*path, "weight") for path in pending}
    # a copy with everything but the pending weights quantized: the passes run on the quantized model
    current = module.map(_RoundToNearest(quantizer, weight_paths))
    while pending:
        group, hessians = _collect(current, pending, calibration_batches, run)
        if not group:
            break  # the forward calls none of the remaining layers
        replacements = {}
        for path in group:
            param = _layer(current, path).weight
            hessian, rows = hessians[path]
            weight = param.val().to_data().to_numpy().astype(np.float64)
            scheme = _fitting(quantizer.scheme, weight.shape)
            dequantized, scales = gptq(
                weight,
                2.0 * hessian / rows,
                scheme,
                quantizer.calibration,
                damping,
                block_rows,
                act_order,
                _name(path),
            )
            key: Path = (*path, "weight")
            replacements[key] = _quantized_param(param, dequantized, scales, scheme, _name(path))
            pending.remove(path)
        current = current.map(_Replace(replacements))
    return current.map(_RoundToNearest(quantizer, set()))  # layers never called: rounded to nearest


def gptq(
    weight: np.ndarray,
    hessian: np.ndarray,
    scheme: QuantScheme,
    calibration: Calibration,
    damping: float,
    block_rows: int,
    act_order: bool,
    where: str = "weight",
) -> tuple[np.ndarray, np.ndarray]:
    """GPTQ of one weight ``[d_input, d_output]`` (float64) given ``hessian`` ``[d_input, d_input]``
    (``2 X^T X / n``): the numbers the quantized weight stands for (float64, quantizing them again with
    the scales gives the same values) and the scales (``scheme.scales_shape``, the scheme's scale dtype).
    """
    d_input = weight.shape[0]
    h = np.array(hessian, dtype=np.float64)
    if not np.isfinite(h).all():
        raise ValueError(f"quantize_weights_gptq: {where}: the calibration inputs are not all finite")
    w = np.array(weight, dtype=np.float64)
    damp = damping * float(np.mean(np.diag(h)))
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0  # an input that is always zero: its row is rounded, nothing depends on it
    order = np.argsort(-np.diag(h), kind="stable") if act_order else np.arange(d_input)
    w, h = w[order], h[np.ix_(order, order)]
    h[np.diag_indices(d_input)] += damp
    try:
        # the upper Cholesky factor U of H^-1 (H^-1 = U^T U): row i of U, over U[i, i], is the update
        # that moves row i's error onto the rows after it, with the rows before it eliminated
        lower = np.linalg.cholesky(h)
        identity = np.eye(d_input)
        inverse_lower = np.linalg.solve(lower, identity)
        upper = np.linalg.cholesky(inverse_lower.T @ inverse_lower).T
    except np.linalg.LinAlgError:
        raise ValueError(
            f"quantize_weights_gptq: {where}: the Hessian of its {d_input} inputs is not positive "
            f"definite with damping {damping}; raise damping"
        ) from None
    tensor_scales = None if scheme.block_size is not None else _scales(weight, scheme, calibration)
    quantized = np.empty_like(w)
    row_scales: list[np.ndarray] = []
    for start in range(0, d_input, block_rows):
        end = min(start + block_rows, d_input)
        block = w[start:end].copy()
        errors = np.empty_like(block)
        for i in range(end - start):
            row = block[i]
            scales = (
                tensor_scales if tensor_scales is not None else _scales(row[None, :], scheme, calibration)
            )
            q = _round(row[None, :], scales, scheme)[0]
            if tensor_scales is None:
                row_scales.append(scales[0])
            quantized[start + i] = q
            error = (row - q) / upper[start + i, start + i]
            block[i:] -= np.outer(upper[start + i, start + i : end], error)
            errors[i] = error
        w[end:] -= upper[start:end, end:].T @ errors
    restore = np.argsort(order)
    if tensor_scales is not None:
        return quantized[restore], tensor_scales
    return quantized[restore], np.stack(row_scales)[restore]


def _scales(values: np.ndarray, scheme: QuantScheme, calibration: Calibration) -> np.ndarray:
    """The scales ``calibration`` chooses for ``values`` (2-d) under ``scheme``."""
    chosen = calibration.scales(values, scheme)
    if chosen is not None:
        return chosen
    return QuantizedData.quantize(TensorData(values.astype(np.float32)), _native(scheme)).scales


def _round(values: np.ndarray, scales: np.ndarray, scheme: QuantScheme) -> np.ndarray:
    """The numbers ``values`` (2-d) stand for once quantized with ``scales`` (the backends' codec)."""
    data = QuantizedData.quantize(TensorData(values.astype(np.float32)), _native(scheme), scales)
    return data.dequantize().to_numpy().astype(np.float64)


def _native(scheme: QuantScheme) -> QuantScheme:
    return scheme if scheme.store is QuantStore.NATIVE else scheme.with_store(QuantStore.NATIVE)


def _fitting(scheme: QuantScheme, shape: tuple[int, ...]) -> QuantScheme:
    """``scheme``, per tensor where its block size does not divide the last dim (as ``Quantizer``)."""
    if scheme.block_size is not None and shape[-1] % scheme.block_size:
        return scheme.with_block_size(None)
    return scheme


def _quantized_param(
    param: Param, dequantized: np.ndarray, scales: np.ndarray, scheme: QuantScheme, where: str
) -> Param:
    device = param.val().device
    try:
        values = Tensor.from_data(dequantized.astype(np.float32), device)
        quantized = values.quantize(scheme, Tensor.from_data(np.asarray(scales), device).float())
    except TypeError as error:
        raise TypeError(f"quantize_weights_gptq: {where}.weight: {error}") from None
    return Param.initialized(quantized, id=param.id, require_grad=False)


class _RoundToNearest(ModuleMapper):
    """``quantizer`` on every float parameter not quantized yet, except those at ``skip``."""

    def __init__(self, quantizer: Quantizer, skip: set[Path]) -> None:
        self.quantizer, self.skip = quantizer, skip

    def map_float_with_path(self, path: Sequence[str], param: Param) -> Param:
        tensor = param.val()
        if tensor.is_quantized or tuple(path) in self.skip:
            return param
        quantized = self.quantizer.quantize(tensor.detach(), ".".join(path))
        return Param.initialized(quantized, id=param.id, require_grad=False)


class _Replace(ModuleMapper):
    def __init__(self, replacements: dict[Path, Param]) -> None:
        self.replacements = replacements

    def map_float_with_path(self, path: Sequence[str], param: Param) -> Param:
        return self.replacements.get(tuple(path), param)


class _Stop(BaseException):
    """Ends a calibration pass's forward early (a BaseException, so that a model's ``except Exception``
    does not swallow it)."""


class _Pass:
    """One calibration pass: the input statistics of the first pending layer the forward calls and of
    the pending layers called right after it on the same input."""

    def __init__(self) -> None:
        self.group: list[Path] = []
        self.fixed = False  # the group is known after the first batch
        self.anchor: object = None
        self.seen: set[Path] = set()
        self.hessians: dict[Path, tuple[np.ndarray, int]] = {}

    def called(self, path: Path, d_input: int, input: Any) -> None:
        if not self.fixed:
            if self.group and (input is not self.anchor or path in self.group):
                raise _Stop
            if not self.group:
                self.anchor = input
            self.group.append(path)
        elif path not in self.group or path in self.seen:
            raise _Stop
        self.seen.add(path)
        self._record(path, d_input, input)
        if self.fixed and len(self.seen) == len(self.group):
            raise _Stop

    def _record(self, path: Path, d_input: int, input: Any) -> None:
        if (
            not isinstance(input, Tensor)
            or not input.dtype.is_float
            or not input.dims()
            or input.dims()[-1] != d_input
        ):
            described = f"{input.dtype} {input.dims()}" if isinstance(input, Tensor) else type(input).__name__
            raise ValueError(
                f"quantize_weights_gptq: {_name(path)} was called on {described}, expected a float tensor "
                f"[..., {d_input}] (a target's forward must multiply its input by its weight)"
            )
        x = input.to_data().to_numpy().astype(np.float64).reshape(-1, d_input)
        if not np.isfinite(x).all():
            raise ValueError(
                f"quantize_weights_gptq: {_name(path)}: its calibration inputs are not all finite"
            )
        hessian, rows = self.hessians.get(path, (np.zeros((d_input, d_input)), 0))
        self.hessians[path] = (hessian + x.T @ x, rows + x.shape[0])


def _collect(
    model: Any, pending: list[Path], batches: list[Any], run: Callable[[Any, Any], object]
) -> tuple[list[Path], dict[Path, tuple[np.ndarray, int]]]:
    """The next group of pending layers and their ``(X^T X, rows)`` over ``batches``."""
    state = _Pass()
    wrapped = []
    try:
        for path in pending:
            layer = _layer(model, path)
            wrapped.append(layer)
            object.__setattr__(layer, "forward", _recording(layer, path, state))
        for batch in batches:
            state.seen = set()
            with contextlib.suppress(_Stop):
                run(model, batch)
            if not state.group:
                break
            state.fixed = True
    finally:
        for layer in wrapped:
            vars(layer).pop("forward", None)
    return state.group, state.hessians


def _recording(layer: Any, path: Path, state: _Pass) -> Callable[..., Any]:
    original = layer.forward
    d_input = layer.weight.val().dims()[0]

    def forward(input: Any, *args: Any, **kwargs: Any) -> Any:
        state.called(path, d_input, input)
        return original(input, *args, **kwargs)

    return forward


def _find_targets(value: Any, path: Path, chosen: Callable[[str, Any], bool]) -> list[tuple[Path, Any]]:
    from ._module import Module

    found: list[tuple[Path, Any]] = []
    for name, item in _items(value, tensors=False):
        where = (*path, name)
        if isinstance(item, Module) and chosen(_name(where), item):
            found.append((where, item))
        elif isinstance(item, (Module, list, tuple, dict)):
            found.extend(_find_targets(item, where, chosen))
    return found


def _layer(model: Any, path: Path) -> Any:
    value = model
    for name in path:
        if isinstance(value, (list, tuple)):
            value = value[int(name)]
        elif isinstance(value, dict):
            value = next(item for key, item in value.items() if str(key) == name)
        else:
            value = getattr(value, name)
    return value


def _name(path: Path) -> str:
    return ".".join(path)
