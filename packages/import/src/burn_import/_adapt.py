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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from burn_backend import Tensor
from burn_nn import (
    BatchNorm,
    BiGru,
    BiLstm,
    BiRnn,
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
_BIDIRECTIONAL = (BiLstm, BiGru, BiRnn)
_RNNS = (Lstm, Gru, Rnn, *_BIDIRECTIONAL)
_RNN_KEY = re.compile(r"(weight|bias)_(ih|hh)_l(\d+)(_reverse)?")


class LoadError(ValueError):
    """Weights do not fit the module: every mismatched entry is named, with both shapes."""


@dataclass
class LoadResult(Generic[M]):
    """What loading did: the new module, the module paths loaded, the module paths no weight reached
    (``missing``: they keep their values), the source keys nothing used (``unused``) and the source
    keys the PyTorch adapter accepted and dropped on purpose (``ignored``: a ``BatchNorm``'s
    ``num_batches_tracked``, a counter ours does not keep), which ``strict`` does not count as unused.

    Example:
        >>> result = load_pytorch("model.pt", Net(device), strict=True)  # doctest: +SKIP
        >>> result.ignored  # doctest: +SKIP
        ['bn.num_batches_tracked']
    """

    module: M
    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def pick_top_level(state: Any, top_level_key: str | None) -> Mapping[str, Any]:
    """The state dict under ``top_level_key`` (dots descend), or ``state`` itself; nested dicts are
    flattened with dots (``{"a": {"b": x}}`` -> ``"a.b"``).

    Raises:
        LoadError: no such key, or what is there is not a dict.
    """
    if top_level_key:
        for part in top_level_key.split("."):
            if not isinstance(state, Mapping) or part not in state:
                where = (
                    _listed(state) if isinstance(state, Mapping) else f"{type(state).__name__} (not a dict)"
                )
                raise LoadError(f"top_level_key {top_level_key!r}: no {part!r} in {where}")
            state = state[part]
    if not isinstance(state, Mapping):
        raise LoadError(f"expected a dict of tensors, got a {type(state).__name__}")
    flat: dict[str, Any] = {}
    _flatten(state, "", flat)
    return flat


def _listed(state: Mapping[str, Any]) -> str:
    keys = [str(key)[:80] for _, key in zip(range(20), state)]
    return f"the keys {keys}" + (f" and {len(state) - 20} more" if len(state) > 20 else "")


def _flatten(state: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
    # depth first in key order, without recursion: a deeply nested dict raises no RecursionError
    stack = [(prefix, iter(state.items()))]
    while stack:
        base, items = stack[-1]
        entry = next(items, None)
        if entry is None:
            stack.pop()
            continue
        name = f"{base}{entry[0]}"
        value = entry[1]
        if isinstance(value, Mapping):
            stack.append((f"{name}.", iter(value.items())))
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
        return []  # ignored: our BatchNorm keeps no counter (its momentum is fixed)
    parent_prefix, _, child = prefix.rpartition(".")
    parent = modules.get(parent_prefix)
    if isinstance(parent, MultiHeadAttention) and child == "out_proj":
        array = _array(value)
        return [(f"{parent_prefix}.output.{leaf}", array.T if leaf == "weight" else array)]
    if isinstance(owner, MultiHeadAttention):
        return _adapt_mha(prefix, leaf, value)
    if _RNN_KEY.fullmatch(leaf):
        return _adapt_rnn(prefix, leaf, value, modules)
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


def _adapt_rnn(prefix: str, leaf: str, value: Any, modules: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """PyTorch's ``nn.LSTM``/``nn.GRU``/``nn.RNN`` entry ``leaf`` (``weight_ih_l1_reverse``) of the module
    at ``prefix``: layer 0 of a single recurrent module, or layer ``k`` of a list of them (ours are one
    layer each: ``num_layers=2`` is ``[LstmConfig(...).init(device), LstmConfig(...).init(device)]``)."""
    match = _RNN_KEY.fullmatch(leaf)
    if match is None:
        return None
    kind, which, layer, reverse = match.groups()
    owner = modules.get(prefix)
    base = prefix
    if not (isinstance(owner, _RNNS) and layer == "0"):
        base = f"{prefix}.{layer}"
        owner = modules.get(base)
        if not isinstance(owner, _RNNS):
            return None
    if isinstance(owner, _BIDIRECTIONAL):
        base = f"{base}.{'reverse_direction' if reverse else 'forward_direction'}"
        owner = owner.reverse_direction if reverse else owner.forward_direction
    elif reverse:
        return None
    transform = "input_transform" if which == "ih" else "hidden_transform"
    array = _array(value)
    gates = _gates(owner)
    if not gates:
        return [(f"{base}.gate.{transform}.{kind}", array.T if kind == "weight" else array)]
    out = []
    for gate, part in zip(gates, _split(array, len(gates))):
        if getattr(owner, gate, None) is None:
            continue  # input_forget: no forget gate
        out.append((f"{base}.{gate}.{transform}.{kind}", part.T if kind == "weight" else part))
    return out


def _gates(owner: Any) -> tuple[str, ...]:
    """The gate controllers of a one-direction recurrent module in PyTorch's order (none: ``Rnn``)."""
    if isinstance(owner, Lstm):
        return _LSTM_GATES
    if isinstance(owner, Gru):
        return _GRU_GATES
    return ()


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
    match = match_state(module, flat, pytorch_adapter=pytorch_adapter)
    values, missing, unused, mismatched = match.values, match.missing, match.unused, match.mismatched
    if mismatched or (strict and (missing or unused)):
        parts = (
            mismatched
            + [f"missing {p}" for p in missing if strict]
            + [f"unused {k}" for k in unused if strict]
        )
        raise LoadError("load_state_dict: the weights do not fit the module:\n  " + "\n  ".join(parts))
    loaded = _rebuild(module, (), values)
    return LoadResult(loaded, sorted(values), missing, unused, match.ignored)


@dataclass
class StateMatch:
    """A flat state dict matched against a module: its leaves by path (leaf, owner), the arrays that
    fit by path, the module paths no entry reached, the unused source keys, the source keys the adapter
    ignored on purpose, and the shape mismatches (one line each)."""

    found: dict[str, tuple[Any, Any]]
    values: dict[str, np.ndarray[Any, Any]]
    missing: list[str]
    unused: list[str]
    ignored: list[str]
    mismatched: list[str]


def match_state(module: Module, flat: Mapping[str, Any], *, pytorch_adapter: bool = True) -> StateMatch:
    """Match a flat state dict against ``module`` (see ``StateMatch``)."""
    found: dict[str, tuple[Any, Any]] = {}
    modules: dict[str, Any] = {}
    _walk(module, (), None, found, modules)
    targets: dict[str, Any] = {}
    unused: list[str] = []
    ignored: list[str] = []
    for key, value in flat.items():
        adapted = _adapt(key, value, modules) if pytorch_adapter else None
        pairs = [(key, value)] if adapted is None else adapted
        if adapted == []:
            ignored.append(key)
        for path, item in pairs:
            if path in found:
                targets[path] = item
            else:
                unused.append(key)
    mismatched: list[str] = []
    values: dict[str, np.ndarray[Any, Any]] = {}
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
    return StateMatch(found, values, missing, sorted(set(unused)), sorted(ignored), mismatched)


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
    PyTorch's names and layouts, so that ``torch_module.load_state_dict`` takes them for the same
    architecture: ``Linear`` weights transposed, norms' ``weight``/``bias``, recurrent layers as
    ``weight_ih_l0``... (a list of them as layers ``l0``, ``l1``, ...; bidirectional ones with
    ``_reverse``) and ``MultiHeadAttention`` as ``in_proj_weight``/``in_proj_bias``/``out_proj``.
    An LSTM with a coupled input-forget gate has no PyTorch layout and is left in ours."""
    found: dict[str, tuple[Any, Any]] = {}
    modules: dict[str, Any] = {}
    _walk(module, (), None, found, modules)
    arrays = {path: _leaf_array(leaf) for path, (leaf, _) in found.items()}
    out: dict[str, np.ndarray[Any, Any]] = {}
    done: set[str] = set()
    fused: list[str] = []
    if pytorch_layout:
        for path, owner in modules.items():  # parents before their children
            inside = any(not f or path.startswith(f"{f}.") for f in fused)
            if not inside and isinstance(owner, (*_RNNS, MultiHeadAttention)):
                exported = _export_fused(module, path, owner, arrays)
                if exported is not None:
                    out.update(exported)
                    fused.append(path)
                    done.update(p for p in arrays if not path or p.startswith(f"{path}."))
    for path, (_leaf, owner) in found.items():
        if path in done:
            continue
        array = arrays[path]
        prefix, _, name = path.rpartition(".")
        if pytorch_layout and isinstance(owner, Linear) and name == "weight":
            array = np.ascontiguousarray(array.T)
        elif pytorch_layout and isinstance(owner, _NORMS) and name in ("gamma", "beta"):
            path = f"{prefix}.{'weight' if name == 'gamma' else 'bias'}" if prefix else name
        out[path] = array
    return out


def _leaf_array(leaf: Any) -> np.ndarray[Any, Any]:
    tensor = leaf.val() if isinstance(leaf, Param) else leaf.value()
    return np.asarray(tensor.to_numpy())


def _child(value: Any, name: str) -> Any:
    if isinstance(value, (list, tuple)):
        return value[int(name)]
    if isinstance(value, dict):
        return value[name]
    return getattr(value, name)


def _export_fused(
    root: Module, path: str, owner: Any, arrays: dict[str, np.ndarray[Any, Any]]
) -> dict[str, np.ndarray[Any, Any]] | None:
    """PyTorch's entries for the recurrent or attention module at ``path``, or ``None`` (no layout)."""
    dot = f"{path}." if path else ""
    if isinstance(owner, MultiHeadAttention):
        projections = (owner.query, owner.key, owner.value)
        d_model = owner.d_model
        weights = [arrays[f"{dot}{n}.weight"].T for n in ("query", "key", "value")]
        out = {f"{dot}in_proj_weight": np.ascontiguousarray(np.concatenate(weights, axis=0))}
        if any(p.bias is not None for p in projections):
            biases = [
                arrays[f"{dot}{n}.bias"] if p.bias is not None else np.zeros(d_model, weights[0].dtype)
                for n, p in zip(("query", "key", "value"), projections)
            ]
            out[f"{dot}in_proj_bias"] = np.concatenate(biases)
        out[f"{dot}out_proj.weight"] = np.ascontiguousarray(arrays[f"{dot}output.weight"].T)
        if owner.output.bias is not None:
            out[f"{dot}out_proj.bias"] = arrays[f"{dot}output.bias"]
        return out
    prefix, layer = path, 0
    parent_path, _, last = path.rpartition(".")
    if last.isdigit():
        parent: Any = root
        for part in parent_path.split(".") if parent_path else []:
            parent = _child(parent, part)
        if isinstance(parent, (list, tuple)):
            prefix, layer = parent_path, int(last)
    directions: list[tuple[str, Any]] = (
        [("forward_direction", owner.forward_direction), ("reverse_direction", owner.reverse_direction)]
        if isinstance(owner, _BIDIRECTIONAL)
        else [("", owner)]
    )
    out = {}
    for direction, cell in directions:
        gates = _gates(cell)
        if any(getattr(cell, gate, None) is None for gate in gates):
            return None  # a coupled input-forget gate
        base = f"{dot}{direction}." if direction else dot
        suffix = f"_l{layer}" + ("_reverse" if direction == "reverse_direction" else "")
        for which, transform in (("ih", "input_transform"), ("hh", "hidden_transform")):
            names = [f"{base}{gate}.{transform}" for gate in gates] or [f"{base}gate.{transform}"]
            weight = np.concatenate([arrays[f"{n}.weight"].T for n in names], axis=0)
            out[f"{prefix}.weight_{which}{suffix}" if prefix else f"weight_{which}{suffix}"] = (
                np.ascontiguousarray(weight)
            )
            if f"{names[0]}.bias" in arrays:
                bias = np.concatenate([arrays[f"{n}.bias"] for n in names])
                out[f"{prefix}.bias_{which}{suffix}" if prefix else f"bias_{which}{suffix}"] = bias
    return out
