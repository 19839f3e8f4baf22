"""The record tree: checking what a record may hold on save, and rebuilding it on load.

A record is nested dicts (str keys) and lists whose leaves are tensors (``TensorData``, ``ParamRecord``,
backend ``Tensor``s and NumPy arrays, all stored as tensors), numbers of any size, strings, bytes,
booleans and ``None``. Saving splits a record into a *skeleton* (the tree with each tensor replaced by a
``TensorSlot``) and the list of its tensors in tree order; loading checks every node of a decoded
skeleton and puts the loaded tensors back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from burn_backend import DType, ParamId, ParamRecord, Tensor, TensorData
from burn_backend.quantization import QuantizedData

from . import _quantized
from ._errors import RecordFileError, RecordLimits

__all__ = [
    "BigInt",
    "InvalidEntry",
    "SavedTensor",
    "TensorDescriptor",
    "TensorSlot",
    "flatten",
    "join",
    "rebuild",
]

_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


def join(path: tuple[str, ...]) -> str:
    """A path for messages: ``layers.0.weight``, or ``<root>``."""
    return ".".join(path) or "<root>"


@dataclass
class SavedTensor:
    """A tensor to write: where it is in the record, its values, and its id when it is a parameter."""

    path: tuple[str, ...]
    array: np.ndarray[Any, Any]
    param_id: ParamId | None
    exact: bool = False
    """Stored in its own dtype whatever the precision settings (a quantized tensor's values and scales)."""


@dataclass
class TensorSlot:
    """The place of the ``index``-th tensor in a skeleton being saved."""

    index: int


@dataclass
class BigInt:
    """An int outside msgpack's 64-bit range, kept whole."""

    value: int


@dataclass
class TensorDescriptor:
    """A tensor as a file describes it, checked: dtype, shape, where its bytes are, their checksum, and
    the parameter id for a ``ParamRecord``."""

    dtype: DType
    shape: tuple[int, ...]
    offset: int
    size: int
    crc32: int
    param_id: int | None
    exact: bool = False
    """Part of a quantized entry: loaded in its own dtype whatever the precision settings."""


@dataclass
class InvalidEntry:
    """A typed value a decoder could not accept (reported with its path by ``rebuild``)."""

    reason: str


def _unsupported(value: object, path: tuple[str, ...]) -> TypeError:
    return TypeError(
        f"save: entry {join(path)!r} is a {type(value).__name__}; a record holds dicts with str keys, lists, "
        "tensors (TensorData, ParamRecord, Tensor, NumPy arrays), numbers, strings, bytes, booleans and None"
    )


def _array_of(value: Any, path: tuple[str, ...]) -> np.ndarray[Any, Any]:
    if isinstance(value, TensorData):
        return value.to_numpy()
    if isinstance(value, Tensor):
        return value.to_data().to_numpy()
    if not isinstance(value, np.ndarray):
        raise _unsupported(value, path)
    try:
        DType.of(value.dtype)
    except TypeError:
        raise TypeError(
            f"save: entry {join(path)!r} is a NumPy array of {value.dtype}, which no tensor dtype stores"
        ) from None
    return np.asarray(value)


def flatten(record: Mapping[str, Any], max_depth: int) -> tuple[dict[str, Any], list[SavedTensor]]:
    """Check ``record`` and split it into a skeleton and its tensors (in tree order).

    Raises:
        TypeError: a value a record cannot hold, or a dict key that is not a str (named by its path).
        ValueError: nesting deeper than ``max_depth`` (a dict or list that contains itself, say).
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"save: a record is a dict (str keys), got {type(record).__name__}")
    tensors: list[SavedTensor] = []
    return _walk(record, (), tensors, max_depth), tensors


def _walk(value: Any, path: tuple[str, ...], tensors: list[SavedTensor], max_depth: int) -> Any:
    """``value`` checked and with its tensors moved to ``tensors`` (see ``flatten``). A module function,
    not a closure: a recursive closure refers to itself, and that cycle would keep the tensors' host
    copies alive until Python's cycle collector ran."""
    kind = type(value)
    if kind is str or kind is float or kind is bool or value is None or kind is bytes:
        return value
    if kind is int:
        return value if _INT64_MIN <= value <= _UINT64_MAX else BigInt(value)
    if len(path) > max_depth:
        raise ValueError(
            f"save: entry {join(path[:8])}... is nested deeper than {max_depth} levels "
            "(a dict or list that contains itself?)"
        )
    quantized = _quantized_of(value)
    if quantized is not None:
        node = _quantized.to_node(quantized, value.id if isinstance(value, ParamRecord) else None)
        skeleton = _walk(node, path, tensors, max_depth)
        for tensor in tensors[-2:]:
            tensor.exact = True
        return skeleton
    if isinstance(value, ParamRecord):
        tensors.append(SavedTensor(path, _array_of(value.value, path), value.id))
        return TensorSlot(len(tensors) - 1)
    if isinstance(value, (TensorData, Tensor, np.ndarray)):
        tensors.append(SavedTensor(path, _array_of(value, path), None))
        return TensorSlot(len(tensors) - 1)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"save: entry {join(path)!r} has the key {key!r} ({type(key).__name__}); "
                    "record dicts are keyed by str"
                )
            out[key] = _walk(item, (*path, key), tensors, max_depth)
        return out
    if isinstance(value, (list, tuple)):
        return [_walk(item, (*path, str(index)), tensors, max_depth) for index, item in enumerate(value)]
    if isinstance(value, (bool, int, float, str, bytes)):  # subclasses (IntEnum, np.float64)
        return _walk(_plain(value), path, tensors, max_depth)
    if isinstance(value, np.generic):
        return _walk(
            value.item() if not isinstance(value, np.floating) else float(value), path, tensors, max_depth
        )
    raise _unsupported(value, path)


def _quantized_of(value: Any) -> QuantizedData | None:
    """The quantized data a record entry holds (a ``QuantizedData``, in a ``ParamRecord`` or not, or a
    quantized ``Tensor``), else ``None``."""
    if isinstance(value, ParamRecord):
        value = value.value
    if isinstance(value, Tensor) and value.is_quantized:
        return value.quantized_data()
    return value if isinstance(value, QuantizedData) else None


def _plain(value: bool | int | float | str | bytes) -> Any:
    """The plain Python value of an instance of a subclass of a plain type (``IntEnum``, ``np.float64``)."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return bytes(value)


def rebuild(
    skeleton: Any,
    limits: RecordLimits,
    source: Any,
    on_tensor: Callable[[TensorDescriptor, tuple[str, ...]], None],
) -> Callable[[list[TensorData]], dict[str, Any]]:
    """Check a decoded skeleton: dicts with str keys, lists, plain values and ``TensorDescriptor``s, no
    deeper than ``limits.max_depth``, no more than ``limits.max_entries`` values; ``on_tensor`` sees each
    descriptor in tree order. Returns the function that builds the record once the tensors are loaded
    (in the same order).

    Raises:
        RecordFileError: naming the path of the first value that breaks a rule.
    """
    if not isinstance(skeleton, dict):
        raise RecordFileError(f"the record is a {type(skeleton).__name__}, expected a dict", source)
    count = 0

    def check(value: Any, path: tuple[str, ...]) -> None:
        nonlocal count
        count += 1
        if count > limits.max_entries:
            raise RecordFileError(f"more than {limits.max_entries} values (RecordLimits.max_entries)", source)
        kind = type(value)
        if kind in (str, int, float, bool, bytes) or value is None:
            return
        if len(path) > limits.max_depth:
            raise RecordFileError(
                f"entry {join(path[:8])}... is nested deeper than {limits.max_depth} levels "
                "(RecordLimits.max_depth)",
                source,
            )
        if kind is TensorDescriptor:
            on_tensor(value, path)
        elif kind is InvalidEntry:
            raise RecordFileError(f"entry {join(path)!r}: {value.reason}", source)
        elif kind is dict:
            if _quantized.MARKER in value:
                for key in ("values", "scales"):
                    if type(value.get(key)) is TensorDescriptor:
                        value[key].exact = True
            for key, item in value.items():
                if type(key) is not str:
                    raise RecordFileError(f"entry {join(path)!r} has a {type(key).__name__} key", source)
                check(item, (*path, key))
        elif kind is list:
            for index, item in enumerate(value):
                check(item, (*path, str(index)))
        else:
            raise RecordFileError(
                f"entry {join(path)!r} holds a {kind.__name__}, which no record holds", source
            )

    check(skeleton, ())

    def build(loaded: list[TensorData]) -> dict[str, Any]:
        try:
            return _fill(skeleton, iter(loaded), ())  # type: ignore[no-any-return]
        except RecordFileError as error:
            raise RecordFileError(error.reason, source) from None

    return build


def _fill(value: Any, loaded: Iterator[TensorData], path: tuple[str, ...]) -> Any:
    """``value`` (a checked skeleton) with its descriptors replaced by the next ``loaded`` tensors, in tree
    order. A module function, not a closure: a recursive closure refers to itself, and that cycle would
    keep every loaded tensor alive until Python's cycle collector ran."""
    kind = type(value)
    if kind is dict:
        filled = {key: _fill(item, loaded, (*path, key)) for key, item in value.items()}
        return _quantized.from_node(filled, join(path)) if _quantized.is_node(filled) else filled
    if kind is list:
        return [_fill(item, loaded, (*path, str(index))) for index, item in enumerate(value)]
    if kind is TensorDescriptor:
        data = next(loaded)
        return data if value.param_id is None else ParamRecord(ParamId(value.param_id), data)
    return value
