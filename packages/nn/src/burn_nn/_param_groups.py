"""``ParamGroup``: a set of a module's parameters chosen by id, path, substring or regex, as Burn's; and the
module operations over a group (freezing, records of the group alone)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from burn_backend import Kind, ParamId, ParamRecord, Tensor, TensorData

from ._module import Module, ModuleMapper, RecordError, _convert_checked
from ._param import Param

__all__ = ["ParamGroup", "ParamGroupError"]

M = TypeVar("M", bound=Module)


class ParamGroupError(ValueError):
    """A parameter group is malformed (an invalid regex, a path that is not a string) or selects none of
    the parameters of the module it is applied to."""


@dataclass(frozen=True)
class _Matcher:
    """One way of choosing parameters (the leaves of a ``ParamGroup``'s unions and differences)."""

    kind: str  # "all", "ids", "paths", "include" (every substring), "regex" (every pattern)
    ids: frozenset[ParamId] = frozenset()
    texts: tuple[str, ...] = ()
    patterns: tuple[re.Pattern[str], ...] = ()

    def matches(self, id: ParamId, path: str) -> bool:
        if self.kind == "all":
            return True
        if self.kind == "ids":
            return id in self.ids
        if self.kind == "paths":
            return path in self.texts
        if self.kind == "include":
            return all(text in path for text in self.texts)
        return all(pattern.search(path) is not None for pattern in self.patterns)

    def describe(self) -> str:
        if self.kind == "all":
            return "all()"
        if self.kind == "ids":
            return f"ids({len(self.ids)})"
        if self.kind == "regex":
            return f"regex{tuple(p.pattern for p in self.patterns)!r}"
        return f"{self.kind}{self.texts!r}"


@dataclass(frozen=True)
class _AnyOf:
    parts: tuple[_Node, ...]

    def matches(self, id: ParamId, path: str) -> bool:
        return any(part.matches(id, path) for part in self.parts)

    def describe(self) -> str:
        return " | ".join(part.describe() for part in self.parts)


@dataclass(frozen=True)
class _Minus:
    base: _Node
    removed: _Node

    def matches(self, id: ParamId, path: str) -> bool:
        return self.base.matches(id, path) and not self.removed.matches(id, path)

    def describe(self) -> str:
        return f"({self.base.describe()}) - ({self.removed.describe()})"


_Node = _Matcher | _AnyOf | _Minus


def _strings(op: str, values: Iterable[str] | str) -> tuple[str, ...]:
    items = (values,) if isinstance(values, str) else tuple(values)
    for item in items:
        if not isinstance(item, str):
            raise ParamGroupError(f"ParamGroup.{op}: expected strings, got {type(item).__name__} {item!r}")
    return items


def _compile(op: str, patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as error:
            raise ParamGroupError(f"ParamGroup.{op}: invalid regex {pattern!r}: {error}") from None
    return tuple(compiled)


class ParamGroup:
    """A group of a module's parameters, as Burn's ``ParamGroup``: chosen by ``ParamId``, by exact dotted
    path (``"layers.0.mha.query.weight"``), by substrings of the path, or by regular expressions searched
    in it. Groups combine with ``fuse`` (union) and ``exclude`` (difference); a group is a value, and
    both return a new one.

    ``Module.freeze_group``/``unfreeze_group`` (un)freeze a group's parameters, ``into_record_group`` and
    ``load_record_group`` save and load the group alone, and ``LoraConfig`` uses module paths the same
    way.

    Example:
        >>> group = ParamGroup.from_predicate("encoder").exclude(ParamGroup.from_regex(r"bias$"))
        >>> group.matches(ParamId(), "encoder.linear.weight"), group.matches(ParamId(), "encoder.linear.bias")
        (True, False)
    """

    __slots__ = ("_node",)

    def __init__(self, node: _Node) -> None:
        self._node = node

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def all(cls) -> ParamGroup:
        """Every parameter."""
        return cls(_Matcher("all"))

    @classmethod
    def from_ids(cls, ids: Iterable[ParamId]) -> ParamGroup:
        """The parameters with these ids (wherever they are in the module)."""
        ids = tuple(ids)
        for id in ids:
            if not isinstance(id, ParamId):
                raise ParamGroupError(f"ParamGroup.from_ids: expected ParamIds, got {type(id).__name__}")
        return cls(_Matcher("ids", ids=frozenset(ids)))

    @classmethod
    def ids_from_module(cls, module: Module) -> ParamGroup:
        """The parameters of ``module`` (by id: they stay in the group when ``module`` is part of a larger
        one, and through optimizer steps)."""
        return cls.from_ids(param.id for param in module.params())

    @classmethod
    def from_path(cls, path: str) -> ParamGroup:
        """The parameter at exactly this dotted path."""
        return cls.from_paths([path])

    @classmethod
    def from_paths(cls, paths: Iterable[str]) -> ParamGroup:
        """The parameters at exactly these dotted paths."""
        return cls(_Matcher("paths", texts=_strings("from_paths", paths)))

    @classmethod
    def from_predicate(cls, text: str) -> ParamGroup:
        """The parameters whose path contains ``text``."""
        return cls.from_predicates([text])

    @classmethod
    def from_predicates(cls, texts: Iterable[str]) -> ParamGroup:
        """The parameters whose path contains every one of ``texts``."""
        return cls(_Matcher("include", texts=_strings("from_predicates", texts)))

    @classmethod
    def from_any_predicates(cls, texts: Iterable[str]) -> ParamGroup:
        """The parameters whose path contains any one of ``texts``."""
        items = _strings("from_any_predicates", texts)
        return cls(_AnyOf(tuple(_Matcher("include", texts=(text,)) for text in items)))

    @classmethod
    def from_regex(cls, pattern: str) -> ParamGroup:
        """The parameters whose path ``pattern`` is found in (``re.search``; anchor with ``^``/``$``).

        Raises:
            ParamGroupError: ``pattern`` is not a valid regular expression.
        """
        return cls.from_regexes([pattern])

    @classmethod
    def from_regexes(cls, patterns: Iterable[str]) -> ParamGroup:
        """The parameters whose path every one of ``patterns`` is found in."""
        compiled = _compile("from_regexes", _strings("from_regexes", patterns))
        return cls(_Matcher("regex", patterns=compiled))

    @classmethod
    def from_any_regexes(cls, patterns: Iterable[str]) -> ParamGroup:
        """The parameters whose path any one of ``patterns`` is found in."""
        compiled = _compile("from_any_regexes", _strings("from_any_regexes", patterns))
        return cls(_AnyOf(tuple(_Matcher("regex", patterns=(pattern,)) for pattern in compiled)))

    # -- combination -------------------------------------------------------------------------------
    def fuse(self, other: ParamGroup) -> ParamGroup:
        """The parameters of either group."""
        if not isinstance(other, ParamGroup):
            raise ParamGroupError(f"ParamGroup.fuse: expected a ParamGroup, got {type(other).__name__}")
        return ParamGroup(_AnyOf((self._node, other._node)))

    def exclude(self, other: ParamGroup) -> ParamGroup:
        """The parameters of this group that are not in ``other``."""
        if not isinstance(other, ParamGroup):
            raise ParamGroupError(f"ParamGroup.exclude: expected a ParamGroup, got {type(other).__name__}")
        return ParamGroup(_Minus(self._node, other._node))

    # -- use ---------------------------------------------------------------------------------------
    def matches(self, id: ParamId, path: str) -> bool:
        """Whether the parameter ``id`` at dotted ``path`` is in the group."""
        return self._node.matches(id, path)

    def __repr__(self) -> str:
        return f"ParamGroup({self._node.describe()})"


# -- module operations over a group (Module's methods call these) ------------------------------------
def _check_group(op: str, group: object) -> ParamGroup:
    if not isinstance(group, ParamGroup):
        raise ParamGroupError(f"{op}: expected a ParamGroup, got {type(group).__name__}")
    return group


def _matched(op: str, module: Module, group: ParamGroup, float_only: bool) -> dict[str, Param]:
    """The parameters of ``module`` in ``group`` by path; an error naming the module's parameters if there
    are none."""
    candidates = [
        (path, param) for path, param in module.named_params() if not float_only or param.kind is Kind.FLOAT
    ]
    found = {path: param for path, param in candidates if group.matches(param.id, path)}
    if not found:
        paths = [path for path, _ in candidates]
        shown = ", ".join(paths[:12]) + (f" (and {len(paths) - 12} more)" if len(paths) > 12 else "")
        what = "float parameters" if float_only else "parameters"
        raise ParamGroupError(
            f"{op}: {group!r} selects none of the {type(module).__name__}'s {len(paths)} {what}"
            + (f": {shown}" if paths else "")
        )
    return found


class _ByPath(ModuleMapper):
    def __init__(self, replacements: Mapping[str, Param]) -> None:
        self._replacements = replacements

    def _replace(self, path: Sequence[str], param: Param) -> Param:
        return self._replacements.get(".".join(path), param)

    map_float_with_path = _replace
    map_int_with_path = _replace
    map_bool_with_path = _replace


def set_require_grad_group(op: str, module: M, group: object, require_grad: bool) -> M:
    """``module`` with the float parameters of ``group`` (un)frozen."""
    found = _matched(op, module, _check_group(op, group), float_only=True)
    return module.map(_ByPath({path: param.set_require_grad(require_grad) for path, param in found.items()}))


def into_record_group(module: Module, group: object) -> dict[str, Any]:
    """The record of ``group``'s parameters alone: nested dicts by field name (list items by their index
    as a string), leaves ``ParamRecord``."""
    found = _matched("into_record_group", module, _check_group("into_record_group", group), False)
    record: dict[str, Any] = {}
    for path, param in found.items():
        node = record
        *parents, name = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[name] = ParamRecord(param.id, param.val().to_data())
    return record


_MAX_DEPTH = 256
"""How deep a group record may nest: far beyond any model's tree, and far within Python's stack."""


def _flatten(record: Mapping[str, Any], mismatched: list[str]) -> dict[str, Any]:
    """The leaves of a nested record by dotted path. A record nested deeper than ``_MAX_DEPTH`` or that
    holds itself is an error, not a ``RecursionError`` or an endless walk."""
    out: dict[str, Any] = {}
    stack: list[tuple[Any, tuple[str, ...], frozenset[int]]] = [(record, (), frozenset())]
    while stack:
        value, path, above = stack.pop()
        if isinstance(value, (Mapping, list, tuple)):
            if id(value) in above:
                mismatched.append(f"{'.'.join(path)}: the record holds itself here")
                continue
            if len(path) >= _MAX_DEPTH:
                mismatched.append(f"{'.'.join(path[:8])}...: the record nests deeper than {_MAX_DEPTH}")
                continue
            inside = above | {id(value)}
            items = value.items() if isinstance(value, Mapping) else enumerate(value)
            children = [(item, (*path, str(key)), inside) for key, item in items]
            stack.extend(reversed(children))
        elif value is not None:  # ``into_record`` keeps the place of a constant in a list with None
            out[".".join(path) or "<root>"] = value
    return out


def load_record_group(module: M, record: object, group: object) -> M:
    """``module`` with ``group``'s parameters taken from ``record`` (see ``Module.load_record_group``)."""
    op = "load_record_group"
    found = _matched(op, module, _check_group(op, group), float_only=False)
    if not isinstance(record, Mapping):
        raise RecordError([], [], [f"<root>: expected a dict record, got {type(record).__name__}"])
    mismatched: list[str] = []
    entries = _flatten(record, mismatched)
    missing = [path for path in found if path not in entries]
    unexpected = [path for path in entries if path not in found]
    loaded: dict[str, Param] = {}
    for path, param in found.items():
        if path not in entries:
            continue
        entry = entries[path]
        if isinstance(entry, ParamRecord):
            data, param_id = entry.value, entry.id
        elif isinstance(entry, TensorData):
            data, param_id = entry, param.id
        else:
            mismatched.append(f"{path}: expected a ParamRecord or TensorData, got {type(entry).__name__}")
            continue
        if tuple(data.shape) != tuple(param.shape):
            mismatched.append(f"{path}: record shape {list(data.shape)}, module shape {list(param.shape)}")
            continue
        if data.kind is not param.kind:
            mismatched.append(f"{path}: record holds {data.dtype}, module holds {param.dtype}")
            continue
        converted = _convert_checked(data, param.dtype)
        if isinstance(converted, str):
            mismatched.append(f"{path}: {converted}")
            continue
        tensor = Tensor.from_data(converted, param.device)
        loaded[path] = Param.initialized(tensor, id=param_id, require_grad=param.require_grad)
    if missing or unexpected or mismatched:
        raise RecordError(missing, unexpected, mismatched)
    return module.map(_ByPath(loaded))
