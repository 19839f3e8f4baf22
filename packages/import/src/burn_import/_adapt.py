"""Loading weights by name into a module, with key remapping and adapters from PyTorch's layouts.

A state dict (flat name -> array) is matched against the module's parameter and running-state paths
(``"encoder.layers.0.weight"``). Before matching, keys are rewritten by the remap rules (regular
expressions, applied in order) and, with the PyTorch adapter, translated from PyTorch's layouts by the
type of the module that owns them: ``Linear`` weights transposed; norm layers' ``weight``/``bias`` as
``gamma``/``beta``; ``nn.LSTM``/``nn.GRU``/``nn.RNN`` weights split into our gate controllers in
PyTorch's gate order; ``nn.MultiheadAttention``'s fused ``in_proj`` split into query, key and value.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from burn_backend import Tensor
from burn_nn import (
    BatchNorm,
    BiGru,
    BiLstm,
    GroupNorm,
    Gru,
    InstanceNorm,
    LayerNorm,
    Linear,
    Lstm,
    Module,
    MultiHeadAttention,
    Param,
    RmsNorm,
    Rnn,
    RunningState,
)

__all__ = [
    "LoadError",
    "LoadResult",
    "apply_remap",
    "export_state_dict",
    "load_state_dict",
    "module_state",
    "pick_top_level",
]

M = TypeVar("M", bound=Module)
KeyRemap = Sequence[tuple[str, str]]

_NORMS = (BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RmsNorm)
_LSTM_GATES: tuple[str, ...] = ("input_gate", "forget_gate", "cell_gate", "output_gate")  # i, f, g, o
_GRU_GATES: tuple[str, ...] = ("reset_gate", "update_gate", "new_gate")  # PyTorch: r, z, n


class LoadError(ValueError):
    """Weights do not fit the module: every mismatched entry is named, with both shapes."""


@dataclass
class LoadResult(Generic[M]):
    """What loading did: the new module, the module paths loaded, the module paths no weight reached
    (``missing``: they keep their values) and the source keys nothing used (``unused``)."""

    module: M
    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


def pick_top_level(state: Any, top_level_key: str | None) -> Mapping[str, Any]:
    """The state dict under ``top_level_key`` (dots descend), or ``state`` itself; nested dicts are
    flattened with dots (``{"a": {"b": x}}`` -> ``"a.b"``)."""
    if top_level_key:
        for part in top_level_key.split("."):
            if not isinstance(state, Mapping) or part not in state:
                keys = list(state) if isinstance(state, Mapping) else type(state).__name__
                raise KeyError(f"top_level_key {top_level_key!r}: no {part!r} among {keys}")
            state = state[part]
    if not isinstance(state, Mapping):
        raise TypeError(f"expected a dict of tensors, got {type(state).__name__}")
    flat: dict[str, Any] = {}
    _flatten(state, "", flat)
    return flat


def _flatten(state: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for key, value in state.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten(value, f"{name}.", out)
        elif hasattr(value, "shape") and hasattr(value, "dtype"):
            out[name] = value


def apply_remap(state: Mapping[str, Any], key_remap: KeyRemap) -> dict[str, Any]:
    """``state`` with each key rewritten by ``re.sub(pattern, replacement, key)`` for every rule in
    order (Burn's ``with_key_remap``)."""
    rules = [(re.compile(pattern), replacement) for pattern, replacement in key_remap]
    out: dict[str, Any] = {}
    for key, value in state.items():
        for pattern, replacement in rules:
            key = pattern.sub(replacement, key)
        out[key] = value
    return out


# -- the module's side ------------------------------------------------------------------------------
def _walk(
    value: Any, path: tuple[str, ...], owner: Any, found: dict[str, tuple[Any, Any]], modules: dict[str, Any]
) -> None:
    if isinstance(value, (Param, RunningState)):
        found[".".join(path)] = (value, owner)
        return
    if isinstance(value, Module):
        modules[".".join(path)] = value
        for name, item in vars(value).items():
            if isinstance(item, (Param, RunningState, Module, list, tuple, dict)):
                _walk(item, (*path, name), value, found, modules)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, (*path, str(i)), owner, found, modules)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, (*path, str(key)), owner, found, modules)


def module_state(module: Module) -> dict[str, Param | RunningState]:
    """The module's parameters and running state by dotted path."""
    found: dict[str, tuple[Any, Any]] = {}
    _walk(module, (), None, found, {})
    return {path: leaf for path, (leaf, _) in found.items()}


# -- adapters ---------------------------------------------------------------------------------------
def _array(value: Any) -> np.ndarray[Any, Any]:
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        return np.asarray(value.numpy())
    return np.asarray(value)


def _split(array: np.ndarray[Any, Any], parts: int) -> list[np.ndarray[Any, Any]]:
    return list(np.split(array, parts, axis=0))


def _adapt(key: str, value: Any, modules: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """PyTorch's entry ``key`` as ours: a list of (path, array or lazy value), or ``None`` when no
    adapter applies (the key is used as it is)."""
    prefix, _, leaf = key.rpartition(".")
    owner = modules.get(prefix)
    if isinstance(owner, Linear) and leaf == "weight":
        return [(key, _array(value).T)]
    if isinstance(owner, _NORMS) and leaf in ("weight", "bias"):
        return [(f"{prefix}.{'gamma' if leaf == 'weight' else 'beta'}", value)]
    if isinstance(owner, BatchNorm) and leaf == "num_batches_tracked":
        return []
    parent_prefix, _, child = prefix.rpartition(".")
    parent = modules.get(parent_prefix)
    if isinstance(parent, MultiHeadAttention) and child == "out_proj":
        array = _array(value)
        return [(f"{parent_prefix}.output.{leaf}", array.T if leaf == "weight" else array)]
    if isinstance(owner, MultiHeadAttention):
        return _adapt_mha(prefix, leaf, value)
    if isinstance(owner, (Lstm, Gru, Rnn, BiLstm, BiGru)):
        return _adapt_rnn(prefix, leaf, value, owner)
    return None


def _adapt_mha(prefix: str, leaf: str, value: Any) -> list[tuple[str, Any]] | None:
    names = ("query", "key", "value")
    if leaf == "in_proj_weight":
        return [(f"{prefix}.{n}.weight", part.T) for n, part in zip(names, _split(_array(value), 3))]
    if leaf == "in_proj_bias":
        return [(f"{prefix}.{n}.bias", part) for n, part in zip(names, _split(_array(value), 3))]
    match = re.fullmatch(r"([qkv])_proj_weight", leaf)
    if match:
        name = dict(zip("qkv", names))[match.group(1)]
        return [(f"{prefix}.{name}.weight", _array(value).T)]
    return None


def _adapt_rnn(prefix: str, leaf: str, value: Any, owner: Any) -> list[tuple[str, Any]] | None:
    match = re.fullmatch(r"(weight|bias)_(ih|hh)_l0(_reverse)?", leaf)
    if match is None:
        return None
    kind, which, reverse = match.groups()
    base = prefix
    if isinstance(owner, (BiLstm, BiGru)):
        base = f"{prefix}.{'reverse_direction' if reverse else 'forward_direction'}"
        owner = owner.reverse_direction if reverse else owner.forward_direction
    elif reverse:
        return None
    transform = "input_transform" if which == "ih" else "hidden_transform"
    array = _array(value)
    if isinstance(owner, Lstm):
        gates = _LSTM_GATES
    elif isinstance(owner, Gru):
        gates = _GRU_GATES
    else:
        return [(f"{base}.gate.{transform}.{kind}", array.T if kind == "weight" else array)]
    out = []
    for gate, part in zip(gates, _split(array, len(gates))):
        if getattr(owner, gate, None) is None:
            continue  # input_forget: no forget gate
        out.append((f"{base}.{gate}.{transform}.{kind}", part.T if kind == "weight" else part))
    return out


# -- loading ----------------------------------------------------------------------------------------
def load_state_dict(
    module: M,
    state: Mapping[str, Any],
    *,
    key_remap: KeyRemap = (),
    top_level_key: str | None = None,
    pytorch_adapter: bool = True,
    strict: bool = False,
) -> LoadResult[M]:
    """A copy of ``module`` with the entries of ``state`` (name -> array, ``LazyArray`` or tensor)
    loaded by name, as PyTorch's ``Module.load_state_dict``.

    Args:
        module: the module whose parameters and running state receive the values.
        state: the weights (nested dicts are flattened with dots).
        key_remap: ``(pattern, replacement)`` regular-expression rules applied to every key, in order.
        top_level_key: the entry of ``state`` holding the weights (``"state_dict"``, ``"model"``).
        pytorch_adapter: translate PyTorch's layouts (see the module docstring).
        strict: raise when an entry of the module is missing or an entry of ``state`` is unused.

    Returns:
        The new module and the ``loaded``, ``missing`` and ``unused`` lists.

    Raises:
        LoadError: an entry's shape does not fit (all mismatches listed), or with ``strict``, missing
            or unused entries; the module is unchanged.
    """
    flat = apply_remap(pick_top_level(state, top_level_key), key_remap)
    found: dict[str, tuple[Any, Any]] = {}
    modules: dict[str, Any] = {}
    _walk(module, (), None, found, modules)
    targets: dict[str, Any] = {}
    unused: list[str] = []
    for key, value in flat.items():
        adapted = _adapt(key, value, modules) if pytorch_adapter else None
        pairs = [(key, value)] if adapted is None else adapted
        if adapted == []:
            unused.append(key)
        for path, item in pairs:
            if path in found:
                targets[path] = item
            else:
                unused.append(key)
    mismatched: list[str] = []
    values: dict[str, Any] = {}
    for path, item in targets.items():
        leaf = found[path][0]
        array = _array(item)
        if tuple(array.shape) != tuple(leaf.shape):
            mismatched.append(
                f"{path}: weights of shape {list(array.shape)}, module expects {list(leaf.shape)}"
            )
            continue
        values[path] = array
    missing = [path for path in found if path not in values]
    if mismatched or (strict and (missing or unused)):
        parts = (
            mismatched
            + [f"missing {p}" for p in missing if strict]
            + [f"unused {k}" for k in unused if strict]
        )
        raise LoadError("load_state_dict: the weights do not fit the module:\n  " + "\n  ".join(parts))
    loaded = _rebuild(module, (), values)
    return LoadResult(loaded, sorted(values), missing, sorted(set(unused)))


def _tensor_like(leaf: Any, array: np.ndarray[Any, Any]) -> Tensor:
    dtype = leaf.dtype if isinstance(leaf, Param) else leaf.value().dtype
    converted = np.asarray(array, dtype=dtype.numpy)
    return Tensor.from_data(
        np.ascontiguousarray(converted) if converted.ndim else converted, leaf.device, dtype
    )


def _rebuild(value: Any, path: tuple[str, ...], values: dict[str, np.ndarray[Any, Any]]) -> Any:
    name = ".".join(path)
    if isinstance(value, Param):
        if name not in values:
            return value
        return Param.initialized(
            _tensor_like(value, values[name]), id=value.id, require_grad=value.require_grad
        )
    if isinstance(value, RunningState):
        if name not in values:
            return value
        return RunningState(_tensor_like(value, values[name]), id=value.id)
    if isinstance(value, Module):
        new = copy.copy(value)
        for field_name, item in vars(value).items():
            if isinstance(item, (Param, RunningState, Module, list, tuple, dict)):
                object.__setattr__(new, field_name, _rebuild(item, (*path, field_name), values))
        return new
    if isinstance(value, list):
        return [_rebuild(item, (*path, str(i)), values) for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return type(value)(_rebuild(item, (*path, str(i)), values) for i, item in enumerate(value))
    if isinstance(value, dict):
        return {key: _rebuild(item, (*path, str(key)), values) for key, item in value.items()}
    return value


def export_state_dict(module: Module, *, pytorch_layout: bool = True) -> dict[str, np.ndarray[Any, Any]]:
    """The module's parameters and running state as arrays by path; with ``pytorch_layout``, in
    PyTorch's names and layouts (``Linear`` weights transposed, norms' ``weight``/``bias``), so that
    ``torch_module.load_state_dict`` takes them for the same architecture (gated recurrent layers and
    fused attention are left in our layout)."""
    found: dict[str, tuple[Any, Any]] = {}
    _walk(module, (), None, found, {})
    out: dict[str, np.ndarray[Any, Any]] = {}
    for path, (leaf, owner) in found.items():
        tensor = leaf.val() if isinstance(leaf, Param) else leaf.value()
        array = tensor.to_numpy()
        prefix, _, name = path.rpartition(".")
        if pytorch_layout and isinstance(owner, Linear) and name == "weight":
            array = np.ascontiguousarray(array.T)
        elif pytorch_layout and isinstance(owner, _NORMS) and name in ("gamma", "beta"):
            path = f"{prefix}.{'weight' if name == 'gamma' else 'bias'}" if prefix else name
        out[path] = array
    return out


def _unused_iter(items: Iterable[str]) -> list[str]:
    return sorted(items)
