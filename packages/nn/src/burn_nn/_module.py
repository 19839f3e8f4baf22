"""``Module``: a tree of parameters, running state, sub-modules and constants, handled as a value."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as _FilePath
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import numpy as np

from burn_backend import AutodiffBackend, Device, DType, Kind, ParamRecord, Recorder, Tensor, TensorData
from burn_backend.quantization import QuantizedData

from ._module_hints import spelling_error
from ._param import Param, RunningState
from ._quantize import load_quantized

if TYPE_CHECKING:
    from ._lora import LoraConfig
    from ._param_groups import ParamGroup
    from ._quantize import Quantizer

__all__ = [
    "LoadResult",
    "Module",
    "ModuleMapper",
    "ModuleVisitor",
    "RecordError",
    "is_training",
]

M = TypeVar("M", bound="Module")
Path = tuple[str, ...]


def is_training(tensor: Tensor) -> bool:
    """Whether layers with train/eval behaviour (dropout, batch norm) train on ``tensor``.

    As in Burn, a module trains on an autodiff backend and evaluates on a plain one: ``model.valid()``
    is the evaluation copy.
    """
    return tensor.device.backend.ad_enabled()


class ModuleVisitor:
    """Reads the parameters of a module: ``Module.visit`` calls ``enter_module``/``exit_module`` around
    each sub-module and ``visit_<kind>_with_path`` for each parameter, which call ``visit_<kind>`` unless
    overridden. Override what you need; every method does nothing by default."""

    def enter_module(self, name: str, container_type: str) -> None:
        """Called before the parameters of the sub-module (or list, tuple, dict) in field ``name``."""

    def exit_module(self, name: str, container_type: str) -> None:
        """Called after them."""

    def visit_float(self, param: Param) -> None:
        """A float parameter."""

    def visit_int(self, param: Param) -> None:
        """An int parameter."""

    def visit_bool(self, param: Param) -> None:
        """A bool parameter."""

    def visit_float_with_path(self, path: Sequence[str], param: Param) -> None:
        """A float parameter and its path of field names from the root."""
        self.visit_float(param)

    def visit_int_with_path(self, path: Sequence[str], param: Param) -> None:
        """An int parameter and its path."""
        self.visit_int(param)

    def visit_bool_with_path(self, path: Sequence[str], param: Param) -> None:
        """A bool parameter and its path."""
        self.visit_bool(param)


class ModuleMapper:
    """Rewrites the parameters of a module: ``Module.map`` calls ``map_<kind>_with_path`` for each
    parameter (which calls ``map_<kind>`` unless overridden) and builds a new module from the results.
    Every method returns the parameter unchanged by default."""

    def map_float(self, param: Param) -> Param:
        """A float parameter's replacement."""
        return param

    def map_int(self, param: Param) -> Param:
        """An int parameter's replacement."""
        return param

    def map_bool(self, param: Param) -> Param:
        """A bool parameter's replacement."""
        return param

    def map_float_with_path(self, path: Sequence[str], param: Param) -> Param:
        """A float parameter's replacement, knowing its path."""
        return self.map_float(param)

    def map_int_with_path(self, path: Sequence[str], param: Param) -> Param:
        """An int parameter's replacement, knowing its path."""
        return self.map_int(param)

    def map_bool_with_path(self, path: Sequence[str], param: Param) -> Param:
        """A bool parameter's replacement, knowing its path."""
        return self.map_bool(param)


_KIND_NAME = {Kind.FLOAT: "float", Kind.INT: "int", Kind.BOOL: "bool"}


class RecordError(ValueError):
    """A record does not fit the module: entries missing, unexpected (unused), or of the wrong shape,
    kind or range. Every such entry is named by its path in one error; the module is left as it was.

    Attributes:
        missing: paths of the module's entries the record lacks.
        unexpected: paths of the record's entries the module lacks (``unused`` is the same list).
        mismatched: one line per entry of the wrong shape, kind or value range, path first.
    """

    def __init__(self, missing: list[str], unexpected: list[str], mismatched: list[str]) -> None:
        self.missing = missing
        self.unexpected = unexpected
        self.mismatched = mismatched
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if unexpected:
            parts.append("unexpected " + ", ".join(unexpected))
        if mismatched:
            parts.append("mismatched " + "; ".join(mismatched))
        super().__init__("load_record: the record does not fit the module: " + "; ".join(parts))

    @property
    def unused(self) -> list[str]:
        """The record's entries the module has no place for (Burn's name for ``unexpected``)."""
        return self.unexpected


@dataclass(frozen=True)
class LoadResult(Generic[M]):
    """What ``Module.load_record_partial`` loaded: the new module, and the paths of the module's entries
    the record lacked (they keep the module's values) and of the record's entries nothing used.

    Example:
        >>> result = model.load_record_partial(record)
        >>> result.missing, result.unused
        (['head.bias'], ['old_head.weight'])
        >>> model = result.module
    """

    module: M
    missing: list[str]
    unused: list[str]


_PLAIN, _PARAM, _STATE, _MODULE, _TENSOR, _SEQUENCE, _MAPPING = range(7)
_CATEGORIES: dict[type, int] = {}
"""What each type of field value is, worked out once per type: the module walks (every optimizer step
makes two and rebuilds the module) look a field's type up here instead of calling ``isinstance`` on
it up to six times."""


def _category(value: Any) -> int:
    kind = type(value)
    category = _CATEGORIES.get(kind)
    if category is None:
        if issubclass(kind, Param):
            category = _PARAM
        elif issubclass(kind, RunningState):
            category = _STATE
        elif issubclass(kind, Module):
            category = _MODULE
        elif issubclass(kind, Tensor):
            category = _TENSOR
        elif issubclass(kind, (list, tuple)):
            category = _SEQUENCE
        elif issubclass(kind, dict):
            category = _MAPPING
        else:
            category = _PLAIN
        _CATEGORIES[kind] = category
    return category


def _is_leaf(value: Any) -> bool:
    return _category(value) in (_PARAM, _STATE, _TENSOR)


def _is_structural(value: Any, tensors: bool = True) -> bool:
    """Whether ``value`` holds parameters, running state or sub-modules, or (with ``tensors``) constant
    tensors; anything else on a module is a plain constant."""
    category = _category(value)
    if category == _PLAIN:
        return False
    if category == _TENSOR:
        return tensors
    if category == _SEQUENCE:
        return any(_is_structural(item, tensors) for item in value)
    if category == _MAPPING:
        return any(_is_structural(item, tensors) for item in value.values())
    return True


def _items(value: Any, tensors: bool = True) -> Iterator[tuple[str, Any]]:
    """The named structural children of a module, list, tuple or dict (constant tensors included with
    ``tensors``)."""
    category = _category(value)
    if category == _MODULE:
        for name, item in vars(value).items():
            if _is_structural(item, tensors):
                yield name, item
    elif category == _SEQUENCE:
        for index, item in enumerate(value):
            if _is_structural(item, tensors):
                yield str(index), item
    elif category == _MAPPING:
        for key, item in value.items():
            if _is_structural(item, tensors):
                yield str(key), item


def _rebuild(value: Any, path: Path, leaf: Callable[[Path, Any], Any]) -> Any:
    """``value`` with every Param and RunningState replaced by ``leaf(path, it)``; constants shared."""
    category = _category(value)
    if category in (_PARAM, _STATE, _TENSOR):
        return leaf(path, value)
    if category == _MODULE:
        new = copy.copy(value)
        for name, item in list(_items(value)):
            object.__setattr__(new, name, _rebuild(item, (*path, name), leaf))
        return new
    if category == _SEQUENCE:
        items = [_rebuild(item, (*path, str(i)), leaf) for i, item in enumerate(value)]
        return items if isinstance(value, list) else type(value)(items)
    if category == _MAPPING:
        return {key: _rebuild(item, (*path, str(key)), leaf) for key, item in value.items()}
    return value


def _leaves(value: Any, path: Path = (), tensors: bool = True) -> Iterator[tuple[Path, Any]]:
    if _is_leaf(value):
        if tensors or not isinstance(value, Tensor):
            yield path, value
        return
    if isinstance(value, (Module, list, tuple, dict)):
        for name, item in _items(value, tensors):
            yield from _leaves(item, (*path, name), tensors)


def _visit(value: Any, path: Path, visitor: ModuleVisitor) -> None:
    category = _category(value)
    if category == _PARAM:
        getattr(visitor, f"visit_{_KIND_NAME[value.kind]}_with_path")(path, value)
        return
    if category in (_STATE, _TENSOR):
        return
    for name, item in _items(value, tensors=False):
        category = _category(item)
        if category == _STATE:
            continue
        if category == _PARAM:
            _visit(item, (*path, name), visitor)
            continue
        container = type(item).__name__
        visitor.enter_module(name, container)
        _visit(item, (*path, name), visitor)
        visitor.exit_module(name, container)


class Module:
    """The base of every layer and model.

    A module's attributes are its fields: ``Param``s, ``RunningState``, sub-modules, lists, tuples and
    dicts of those, constant tensors (which follow the module between devices but are not recorded),
    and constants (anything else, shared between copies). ``forward`` is an ordinary
    method; calling the module calls it. Modules are values: ``map``, ``to_device``, ``no_grad``,
    ``load_record`` and optimizer steps return new modules and leave the original as it was.
    ``into_record`` and ``load_record`` turn the parameters into a record and back; ``save_file`` and
    ``load_file`` write and read records through a ``Recorder``.

    Example:
        >>> class Mlp(Module):
        ...     def __init__(self, device):
        ...         self.hidden = LinearConfig(4, 8).init(device)
        ...         self.out = LinearConfig(8, 2).init(device)
        ...
        ...     def forward(self, x):
        ...         return self.out(relu(self.hidden(x)))
    """

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The module's computation; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} defines no forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    if not TYPE_CHECKING:  # hidden from the type checker, which would accept any attribute otherwise

        def __getattr__(self, name: str) -> Any:
            # only names normal lookup missed get here (a subclass's own ``train`` wins): a PyTorch
            # spelling gets Burn's replacement in the error
            raise spelling_error(self, name)

    # -- traversal ---------------------------------------------------------------------------------
    def visit(self, visitor: ModuleVisitor) -> None:
        """Show every parameter to ``visitor``, in field order."""
        _visit(self, (), visitor)

    def map(self: M, mapper: ModuleMapper) -> M:
        """A new module whose parameters are ``mapper``'s replacements."""

        def leaf(path: Path, value: Any) -> Any:
            if isinstance(value, (RunningState, Tensor)):
                return value
            replacement = getattr(mapper, f"map_{_KIND_NAME[value.kind]}_with_path")(path, value)
            if not isinstance(replacement, Param):
                raise TypeError(
                    f"map: {type(mapper).__name__} returned {type(replacement).__name__} for "
                    f"{'.'.join(path)}, expected a Param"
                )
            return replacement

        return _rebuild(self, (), leaf)  # type: ignore[no-any-return]

    def named_params(self) -> list[tuple[str, Param]]:
        """Every parameter with its dotted path (``"layers.0.weight"``), in field order."""
        return [(".".join(path), leaf) for path, leaf in _leaves(self) if isinstance(leaf, Param)]

    def params(self) -> list[Param]:
        """Every parameter, in field order."""
        return [param for _, param in self.named_params()]

    def num_params(self) -> int:
        """The number of values in the parameters (running state not included)."""
        return sum(param.num_elements() for param in self.params())

    def devices(self) -> list[Device]:
        """The distinct devices of the parameters and running state, in field order."""
        found: list[Device] = []
        for _, leaf in _leaves(self):
            if leaf.device not in found:
                found.append(leaf.device)
        return found

    # -- devices and gradients ---------------------------------------------------------------------
    def to_device(self: M, device: Device) -> M:
        """The module on ``device``; its float parameters are fresh graph leaves there."""

        def leaf(path: Path, value: Any) -> Any:
            if isinstance(value, RunningState):
                return value.map(lambda tensor: tensor.to_device(device))
            return value.to_device(device)  # a Param, or a constant tensor

        return _rebuild(self, (), leaf)  # type: ignore[no-any-return]

    def fork(self: M, device: Device) -> M:
        """The module on ``device`` with parameters detached from any graph they were part of, so that a
        copy can train independently (on another thread, say)."""
        return self.to_device(device)

    def no_grad(self: M) -> M:
        """The module with no parameter requiring a gradient (frozen)."""
        return _rebuild(  # type: ignore[no-any-return]
            self,
            (),
            lambda _, value: value if isinstance(value, RunningState) else value.set_require_grad(False),
        )

    def valid(self: M) -> M:
        """The module on the inner backend of its autodiff backend, for evaluation: no graph recording,
        dropout off, batch norm on its running statistics."""

        def inner(tensor: Tensor) -> Tensor:
            if not isinstance(tensor.device.backend, AutodiffBackend):
                raise TypeError(f"valid: the module is on {tensor.device}, which has no autodiff")
            return tensor.inner()

        return _map_values(self, inner)

    @classmethod
    def from_inner(cls, module: M, device: Device) -> M:
        """``module`` (on an autodiff backend's inner backend) lifted onto the autodiff ``device``'s
        backend, parameters requiring gradients as they did before ``valid``."""
        backend = device.backend
        if not isinstance(backend, AutodiffBackend):
            raise TypeError(f"from_inner: {device} is not a device of an autodiff backend")

        def lift(tensor: Tensor) -> Tensor:
            return Tensor.from_inner(tensor, backend.device(tensor.device.index))

        return _map_values(module, lift)

    # -- records -----------------------------------------------------------------------------------
    def into_record(self) -> dict[str, Any]:
        """The module's parameters and running state as a nested record: a dict per module (field name
        to entry), a list per list or tuple, a dict per dict, a ``ParamRecord`` (id and ``TensorData``)
        per parameter or running state. Records hold no backend or device; constants are not in them."""
        return _record_of(self)  # type: ignore[no-any-return]

    def load_record(
        self: M, record: Mapping[str, Any], *, strict: bool = True, dequantize: bool = False
    ) -> M:
        """A new module with the parameters and running state of ``record``.

        Each entry takes the module's dtype for it (records convert precision) and stays on the module's
        device. A ``ParamRecord`` brings its id along; a bare ``TensorData`` entry keeps the module's id.

        Args:
            record: as made by ``into_record`` (possibly by another backend or process).
            strict: whether missing and unexpected entries are errors (mis-shaped ones always are);
                when not strict, missing entries keep the module's values.
            dequantize: whether a quantized entry may load into a float parameter as the numbers it
                stands for (by default that is an error: quantize_weights the module first to keep it
                quantized).

        Raises:
            RecordError: naming every missing, unexpected, mis-shaped or wrong-kind entry, and every entry
                with a value the module's dtype cannot hold (``1e5`` into f16); the module is unchanged.
        """
        missing: list[str] = []
        unexpected: list[str] = []
        mismatched: list[str] = []
        loaded = _load(self, record, (), missing, unexpected, mismatched, dequantize)
        if mismatched or (strict and (missing or unexpected)):
            raise RecordError(missing, unexpected if strict else [], mismatched)
        return loaded  # type: ignore[no-any-return]

    def load_record_partial(self: M, record: Mapping[str, Any]) -> LoadResult[M]:
        """Load what fits of ``record`` and say what did not: the module's entries the record lacks keep
        their values, the record's entries the module has no place for are ignored, and both are listed.

        Returns:
            The new module with the ``missing`` and ``unused`` paths.

        Raises:
            RecordError: entries of the wrong shape, kind or value range (always errors), all named; the
                module is unchanged.

        Example:
            >>> result = model.load_record_partial(pretrained.into_record())
            >>> print("kept initial values:", result.missing)
        """
        missing: list[str] = []
        unexpected: list[str] = []
        mismatched: list[str] = []
        loaded = _load(self, record, (), missing, unexpected, mismatched)
        if mismatched:
            raise RecordError(missing, unexpected, mismatched)
        return LoadResult(loaded, missing, unexpected)

    def save_file(self, path: str | os.PathLike[str], recorder: Recorder) -> _FilePath:
        """Save the module's record (``into_record``) to ``path`` with ``recorder``, as Burn's
        ``save_file``.

        Args:
            path: where to write; the recorder may add its format's extension.
            recorder: the file format, such as one of burn-record's recorders.

        Returns:
            The path the recorder wrote.

        Example:
            >>> from burn_record import NamedMpkFileRecorder  # doctest: +SKIP
            >>> written = model.save_file("artifacts/model", NamedMpkFileRecorder())  # doctest: +SKIP
        """
        return recorder.save(self.into_record(), path)

    def load_file(
        self: M,
        path: str | os.PathLike[str],
        recorder: Recorder,
        device: Device | None = None,
        *,
        strict: bool = True,
        dequantize: bool = False,
    ) -> M:
        """A new module with the parameters and running state saved at ``path`` by ``save_file`` (or any
        record ``recorder`` reads there), as Burn's ``load_file``.

        Args:
            path: the path given to ``save_file``.
            recorder: the same kind of recorder that saved the file.
            device: where the loaded module lives; by default, where this module does.
            strict, dequantize: as for ``load_record``.

        Raises:
            RecordError: the record does not fit the module (see ``load_record``); nothing is changed.

        Example:
            >>> model = ModelConfig(10).init(device).load_file(  # doctest: +SKIP
            ...     "artifacts/model", NamedMpkFileRecorder(), device
            ... )
        """
        record = recorder.load(path)
        module = self if device is None else self.to_device(device)
        return module.load_record(record, strict=strict, dequantize=dequantize)

    def load_file_partial(
        self: M, path: str | os.PathLike[str], recorder: Recorder, device: Device | None = None
    ) -> LoadResult[M]:
        """``load_record_partial`` of the record saved at ``path`` (see ``load_file``).

        Example:
            >>> result = model.load_file_partial("pretrained", NamedMpkFileRecorder(), device)
        """
        record = recorder.load(path)
        module = self if device is None else self.to_device(device)
        return module.load_record_partial(record)

    # -- parameter groups and LoRA (burn_nn._param_groups, burn_nn._lora) ------------------------------
    def freeze_group(self: M, group: ParamGroup) -> M:
        """The module with the float parameters of ``group`` frozen (no gradient, so no optimizer update
        or state), as Burn's ``freeze_group``; ``no_grad`` freezes them all.

        Raises:
            ParamGroupError: ``group`` selects none of the module's float parameters (they are named).

        Example:
            >>> model = model.freeze_group(ParamGroup.from_predicate("encoder"))  # doctest: +SKIP
        """
        from ._param_groups import set_require_grad_group

        return set_require_grad_group("freeze_group", self, group, False)

    def unfreeze_group(self: M, group: ParamGroup) -> M:
        """The module with the float parameters of ``group`` requiring gradients again (see
        ``freeze_group``)."""
        from ._param_groups import set_require_grad_group

        return set_require_grad_group("unfreeze_group", self, group, True)

    def into_record_group(self, group: ParamGroup) -> dict[str, Any]:
        """The record of ``group``'s parameters alone (nested dicts by field name, list items by index),
        for ``load_record_group`` and any recorder: LoRA adapters without the base model, say.

        Raises:
            ParamGroupError: ``group`` selects none of the module's parameters.
        """
        from ._param_groups import into_record_group

        return into_record_group(self, group)

    def load_record_group(self: M, record: Mapping[str, Any], group: ParamGroup) -> M:
        """A new module whose parameters in ``group`` come from ``record`` (as ``into_record_group`` makes
        it); the others are kept. The record must hold exactly the group's parameters.

        Raises:
            RecordError: naming the group's parameters the record lacks, its entries outside the group,
                and entries of the wrong shape, kind or range; the module is unchanged.
        """
        from ._param_groups import load_record_group

        return load_record_group(self, record, group)

    def apply_lora(self: M, config: LoraConfig) -> M:
        """The module with every parameter frozen and each ``Linear`` layer ``config`` targets replaced by
        a ``LoraLinear`` whose low-rank adapter trains, as Burn's ``apply_lora`` and PEFT's
        ``get_peft_model``. The base weights keep their paths and ids.

        Raises:
            ValueError: the targets match no ``Linear`` layer (the layers' paths are named), or the
                module has adapters already.

        Example:
            >>> config = LoraConfig(8, 16.0, targets=("*.query", "*.value"))
            >>> model = model.apply_lora(config)  # doctest: +SKIP
        """
        from ._lora import apply_lora

        return apply_lora(self, config)

    def merge_lora(self: M) -> M:
        """The module with each ``LoraLinear`` folded into a plain ``Linear`` (``weight + A @ B * scale``),
        as PEFT's ``merge_and_unload``: same outputs, no adapter cost; gradient flags are kept.

        Raises:
            ValueError: the module has no LoRA adapters.
        """
        from ._lora import merge_lora

        return merge_lora(self)

    # -- quantization (burn_nn._quantize) ------------------------------------------------------------
    def quantize_weights(self: M, quantizer: Quantizer) -> M:
        """The module with every float parameter quantized by ``quantizer``, as Burn's
        ``quantize_weights``: linear layers then multiply by the quantized weight, the other layers by
        the numbers it stands for; quantized parameters get no gradient, and records store them
        quantized (``load_record`` takes them back into a quantized module).

        Example:
            >>> model = model.quantize_weights(Quantizer(Calibration.MinMax, QuantScheme()))  # doctest: +SKIP
        """
        from ._quantize import quantize_weights

        return quantize_weights(self, quantizer)

    # -- display -----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return _describe(self, "")


def _map_values(module: M, function: Callable[[Tensor], Tensor]) -> M:
    """``module`` with ``function`` applied to every parameter's, running state's and constant tensor's
    value (ids kept)."""

    def leaf(path: Path, value: Any) -> Any:
        return function(value) if isinstance(value, Tensor) else value.map(function)

    return _rebuild(module, (), leaf)  # type: ignore[no-any-return]


def _record_of(value: Any) -> Any:
    if not _is_structural(value, tensors=False):
        return None  # a constant (tensor or not) inside a list: not recorded, its place kept
    if isinstance(value, Param):
        return ParamRecord(value.id, value.val().to_data())
    if isinstance(value, RunningState):
        return ParamRecord(value.id, value.value().to_data())
    if isinstance(value, (list, tuple)):
        return [_record_of(item) for item in value]
    return {name: _record_of(item) for name, item in _items(value, tensors=False)}


def _load(
    value: Any,
    record: Any,
    path: Path,
    missing: list[str],
    unexpected: list[str],
    mismatched: list[str],
    dequantize: bool = False,
) -> Any:
    where = ".".join(path) or "<root>"
    if not _is_structural(value, tensors=False):
        return value  # a constant (tensor or not) inside a list or dict
    if _is_leaf(value):
        data: TensorData | QuantizedData
        if isinstance(record, ParamRecord):
            data, param_id = record.value, record.id
        elif isinstance(record, (TensorData, QuantizedData)):
            data, param_id = record, value.id
        else:
            mismatched.append(f"{where}: expected a ParamRecord or TensorData, got {type(record).__name__}")
            return value
        if tuple(data.shape) != tuple(value.shape):
            mismatched.append(f"{where}: record shape {list(data.shape)}, module shape {list(value.shape)}")
            return value
        held = value.quant_scheme if isinstance(value, Param) else value.value().quant_scheme
        if isinstance(data, QuantizedData) or held is not None:
            found = load_quantized(value, data, dequantize)
            if isinstance(found, str):
                mismatched.append(f"{where}: {found}")
                return value
            if isinstance(found, Tensor):
                if isinstance(value, RunningState):
                    return RunningState(found, id=param_id)
                return Param.initialized(found, id=param_id, require_grad=False)
            data = cast(TensorData, found)
        dtype = value.dtype if isinstance(value, Param) else value.value().dtype
        if data.kind is not dtype.kind:
            mismatched.append(f"{where}: record holds {data.dtype}, module holds {dtype}")
            return value
        converted = _convert_checked(data, dtype)
        if isinstance(converted, str):
            mismatched.append(f"{where}: {converted}")
            return value
        tensor = Tensor.from_data(converted, value.device)
        if isinstance(value, RunningState):
            return RunningState(tensor, id=param_id)
        return Param.initialized(tensor, id=param_id, require_grad=value.require_grad)

    if isinstance(value, (list, tuple)):
        if not isinstance(record, (list, tuple)):
            mismatched.append(f"{where}: expected a list record, got {type(record).__name__}")
            return value
        items = []
        for index, item in enumerate(value):
            if index < len(record):
                items.append(
                    _load(
                        item, record[index], (*path, str(index)), missing, unexpected, mismatched, dequantize
                    )
                )
            else:
                missing.extend(".".join(p) for p, _ in _leaves(item, (*path, str(index)), tensors=False))
                items.append(item)
        unexpected.extend(".".join((*path, str(i))) for i in range(len(value), len(record)))
        return items if isinstance(value, list) else type(value)(items)

    if not isinstance(record, Mapping):
        mismatched.append(f"{where}: expected a dict record, got {type(record).__name__}")
        return value
    fields = dict(_items(value, tensors=False))
    loaded: dict[str, Any] = {}
    for name, item in fields.items():
        if name in record:
            loaded[name] = _load(
                item, record[name], (*path, name), missing, unexpected, mismatched, dequantize
            )
        else:
            missing.extend(".".join(p) for p, _ in _leaves(item, (*path, name), tensors=False))
    unexpected.extend(".".join((*path, str(key))) for key in record if str(key) not in fields)
    if isinstance(value, Module):
        new = copy.copy(value)
        for name, item in loaded.items():
            object.__setattr__(new, name, item)
        return new
    return {key: loaded.get(str(key), item) for key, item in value.items()}


def _convert_checked(data: TensorData, dtype: DType) -> TensorData | str:
    """``data`` in ``dtype``, or what does not fit: a finite float that would become infinite (``1e5``
    into f16), an int out of the target's range."""
    if data.dtype is dtype:
        return data
    converted = data.convert(dtype)
    source = data.to_numpy()
    if dtype.is_float:
        bad = np.isfinite(source) & ~np.isfinite(converted.to_numpy())
    elif dtype.is_int:
        info = np.iinfo(dtype.numpy)
        bad = (source < info.min) | (source > info.max)
    else:
        return converted
    if not bad.any():
        return converted
    flat = int(np.flatnonzero(bad.reshape(-1))[0])
    index = [int(i) for i in np.unravel_index(flat, source.shape)] if source.ndim else []
    value = source.reshape(-1)[flat].item()
    count = int(np.count_nonzero(bad))
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"record value {value!r} at index {index}{more} ({data.dtype}) does not fit the module's {dtype}"


def _describe(value: Any, indent: str) -> str:
    """Burn-style display: ``Name {field: ..., params: N}``, one line for a module without sub-modules."""
    inner_indent = indent + "  "
    if isinstance(value, Param):
        return str(list(value.shape))
    if isinstance(value, RunningState):
        return f"running {list(value.shape)}"
    if isinstance(value, Tensor):
        return f"tensor {value.dims()}"
    if isinstance(value, (list, tuple)) and _is_structural(value):
        parts = [f"{inner_indent}{_describe(item, inner_indent)}" for item in value]
        return "[\n" + ",\n".join(parts) + f"\n{indent}]"
    if isinstance(value, dict) and _is_structural(value):
        parts = [f"{inner_indent}{key!r}: {_describe(item, inner_indent)}" for key, item in value.items()]
        return "{\n" + ",\n".join(parts) + f"\n{indent}}}"
    if not isinstance(value, Module):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    fields = [(name, item) for name, item in vars(value).items() if not name.startswith("_")]
    nested = any(isinstance(item, (Module, list, tuple, dict)) and _is_structural(item) for _, item in fields)
    entries = [(name, _describe(item, inner_indent)) for name, item in fields]
    entries.append(("params", str(value.num_params())))
    name = type(value).__name__
    if not nested:
        return f"{name} {{" + ", ".join(f"{key}: {text}" for key, text in entries) + "}"
    body = "\n".join(f"{inner_indent}{key}: {text}" for key, text in entries)
    return f"{name} {{\n{body}\n{indent}}}"
