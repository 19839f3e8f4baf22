"""The record vocabulary (Burn's ``burn::record``): parameter ids, parameter records and the ``Recorder``
protocol.

A *record* is the state of a module, an optimizer or a learning-rate scheduler as plain data, holding no
backend and no device: nested dicts (string keys) and lists whose leaves are ``ParamRecord``s,
``TensorData``, numbers, strings, booleans and ``None``. ``Module.into_record`` makes one and
``Module.load_record`` reads one back (burn-nn); a recorder writes records to files or bytes and reads
them back (burn-record). Both sides need only this module, so a recorder decodes a module's record
without importing burn-nn.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ._data import TensorData

__all__ = ["ParamId", "ParamRecord", "Recorder"]


class ParamId:
    """The stable identity of a parameter: kept by every mapping of the module (``to_device``,
    optimizer steps, ``load_record``) and by records, so optimizer state finds its parameter again.

    A new id is random (63 bits); ``str`` and ``parse`` convert it to and from text, the form records
    and optimizer states key it by.

    Example:
        >>> ParamId(7) == ParamId.parse("7")
        True
        >>> str(ParamId(7))
        '7'
    """

    __slots__ = ("value",)

    def __init__(self, value: int | None = None) -> None:
        self.value = secrets.randbits(63) if value is None else int(value)

    @classmethod
    def parse(cls, text: str) -> ParamId:
        """The id whose ``str`` is ``text``."""
        return cls(int(text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParamId) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"ParamId({self.value})"


@dataclass(frozen=True)
class ParamRecord:
    """One parameter (or running state) in a module's record: its id and its values.

    Example:
        >>> from burn_backend import TensorData
        >>> entry = ParamRecord(ParamId(7), TensorData([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], dtype="f32"))
        >>> entry.id, entry.value.shape
        (ParamId(7), Shape([2, 3]))
    """

    id: ParamId
    value: TensorData


@runtime_checkable
class Recorder(Protocol):
    """What saves records to files or bytes and loads them back (Burn's ``Recorder``): a file format
    with its precision settings. burn-record implements the recorders; any object with these four
    methods is one.

    ``Module.save_file(path, recorder)`` and ``Module.load_file(path, recorder)`` (burn-nn) go through
    ``save`` and ``load``. The same recorder (format and settings) must read what it wrote; the
    precision of the values it stores may differ from the module's, which converts on load.

    Example:
        A recorder that keeps records in memory (a real one writes files)::

            class MemoryRecorder:
                def __init__(self) -> None:
                    self.files: dict[Path, Mapping[str, Any]] = {}

                def save(self, record, path):
                    self.files[Path(path)] = record
                    return Path(path)

                def load(self, path):
                    return dict(self.files[Path(path)])

                def to_bytes(self, record):
                    raise NotImplementedError

                def from_bytes(self, data):
                    raise NotImplementedError

            model.save_file("model", MemoryRecorder())
    """

    def save(self, record: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
        """Write ``record`` to ``path``.

        A recorder may add its format's extension to ``path`` (as Burn's file recorders do); ``load``
        accepts the same ``path``.

        Returns:
            The path of the file written.
        """
        ...

    def load(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """The record saved at ``path`` (the ``path`` given to ``save``).

        Raises:
            OSError: the file cannot be read.
            ValueError: the file is not a record of this recorder's format, or is damaged.
        """
        ...

    def to_bytes(self, record: Mapping[str, Any]) -> bytes:
        """``record`` encoded in memory, as ``save`` would write it."""
        ...

    def from_bytes(self, data: bytes) -> dict[str, Any]:
        """The record encoded in ``data`` by ``to_bytes``.

        Raises:
            ValueError: ``data`` is not a record of this recorder's format, or is damaged.
        """
        ...
