"""The op table of the wire: every op of the backend interface that can travel, read once from the
interface's annotations, and the shape each result takes.

The client and the server build the same table from ``burn_backend``'s interface, so an op added to the
interface travels without a line here. An op travels when each of its parameters has an annotation of
``ARGUMENT_KINDS`` (a primitive, an int, a shape, options, ...); the server checks every argument
against its annotation before it calls the backend, and calls only the ops of this table (the
allow-list: a name from the wire is looked up here, never passed to ``getattr``).
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from typing import Any

from burn_backend import (
    AdamOptions,
    AttentionOptions,
    ConvOptions,
    ConvTransposeOptions,
    DeformConvOptions,
    Distribution,
    GridSampleOptions,
    IndexingUpdateOp,
    InterpolateMode,
    InterpolateOptions,
    ReduceOperation,
    SgdOptions,
    UnfoldOptions,
)
from burn_backend._backend import BACKEND_METHODS, interface_methods

PROTOCOL_VERSION = 1
"""The version of the wire format; a server refuses a client of another version."""

ANSWER_IDS = 1 << 20
"""The ids a client reserves for an op answered with its results (at most this many primitives)."""

OPTION_CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        AdamOptions,
        AttentionOptions,
        ConvOptions,
        ConvTransposeOptions,
        DeformConvOptions,
        Distribution,
        GridSampleOptions,
        InterpolateOptions,
        SgdOptions,
        UnfoldOptions,
    )
}
"""The options dataclasses that travel (by class name, fields in order)."""

ENUM_CLASSES: dict[str, type[enum.Enum]] = {
    cls.__name__: cls for cls in (IndexingUpdateOp, InterpolateMode, ReduceOperation)
}
"""The enums that travel (by class name, then member value)."""

ARGUMENT_KINDS = frozenset(
    {
        "P",
        "P | None",
        "Sequence[P]",
        "Sequence[P | None]",
        "int",
        "float",
        "bool",
        "tuple[int, int]",
        "Sequence[int]",
        "Sequence[slice]",
        "Shape",
        "DType",
        "Device",
        "TensorData",
        *OPTION_CLASSES,
        *ENUM_CLASSES,
    }
)
"""The parameter annotations an op may have to travel."""


class Results(enum.Enum):
    """What an op returns, from its return annotation, and so how the client takes it."""

    ONE = "one"
    """One primitive (``P``): streamed, its id named by the client."""
    TWO = "two"
    """Two primitives (``tuple[P, P]``): streamed, ids ``base`` and ``base + 1``."""
    READ = "read"
    """Values (``TensorData``): a read, answered with raw bytes."""
    LOCAL = "local"
    """A device (``*_device``): answered by the client from the handle."""
    ANSWER = "answer"
    """Anything else (a bool, a list or named tuple of primitives): the client waits for the answer,
    whose primitives get the ids ``base``, ``base + 1``, ... in order."""


_RESULTS = {"P": Results.ONE, "tuple[P, P]": Results.TWO, "TensorData": Results.READ, "Device": Results.LOCAL}


@dataclass(frozen=True)
class OpSpec:
    """One op of the wire: its interface name, parameter names and annotations, and what it returns."""

    name: str
    params: tuple[str, ...]
    kinds: tuple[str, ...]
    results: Results


def _build() -> tuple[dict[str, OpSpec], dict[str, str]]:
    specs: dict[str, OpSpec] = {}
    refused: dict[str, str] = {}
    for name, function in interface_methods().items():
        if name in BACKEND_METHODS:
            continue
        signature = inspect.signature(function)
        parameters = list(signature.parameters.values())[1:]
        kinds = tuple(str(p.annotation) for p in parameters)
        unknown = [f"{p.name}: {k}" for p, k in zip(parameters, kinds) if k not in ARGUMENT_KINDS]
        if unknown:
            refused[name] = f"its argument {', '.join(unknown)} cannot travel"
            continue
        results = _RESULTS.get(str(signature.return_annotation), Results.ANSWER)
        specs[name] = OpSpec(name, tuple(p.name for p in parameters), kinds, results)
    return specs, refused


OPS, REFUSED = _build()
"""``OPS``: the ops that travel, by name (the server's allow-list). ``REFUSED``: the interface's other
ops, each with the reason (process-group collectives take a process group, which cannot travel)."""
