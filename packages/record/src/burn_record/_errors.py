"""The errors of burn-record and the limits that loading checks before allocating anything large."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PrecisionError", "RecordFileError", "RecordLimits"]


class RecordFileError(ValueError):
    """The one error every recorder's ``load`` and ``from_bytes`` raise for data they cannot read as a
    record: not a record at all (wrong magic number), another format or a newer version, damaged
    (checksum mismatch, bit flips), truncated, hostile (sizes past the end, a 2^40-element shape,
    nesting deeper than the limits, a string where a tensor belongs) or holding a value that does not
    fit the recorder's precision. Nothing large is allocated before the checks that raise it, and
    nothing is returned half-read. (Operating-system failures, such as a missing file, stay
    ``OSError``.)

    Attributes:
        source: the file's path, or ``None`` for bytes.
        reason: what was found and what was expected, without the source.

    Example:
        >>> try:
        ...     NamedMpkFileRecorder().from_bytes(b"PK" + bytes(100))
        ... except RecordFileError as error:
        ...     print(error.reason.split(":")[0])
        not a burn-record named-mpk record
    """

    def __init__(self, reason: str, source: str | os.PathLike[str] | None = None) -> None:
        self.reason = reason
        self.source = None if source is None else Path(source)
        where = "bytes" if source is None else str(source)
        super().__init__(f"load {where}: {reason}")


class PrecisionError(ValueError):
    """A value does not fit the dtype a precision setting converts it to (``1e5`` into f16 would
    become ``inf``): raised by ``save`` and ``to_bytes`` instead of writing a changed value. On load the
    same condition raises ``RecordFileError``.

    Example:
        >>> NamedMpkFileRecorder(HalfPrecisionSettings()).to_bytes({"w": TensorData([1e5])})
        Traceback (most recent call last):
        PrecisionError: save: entry 'w': 100000 at index [0] does not fit f16 (largest finite 65504)
    """


_GIB = 1 << 30
DECOMPRESSED_DEFAULT = 2 * _GIB
"""The most bytes a compressed record's tensor data may decompress to by default (or half the machine's
memory, where that is less)."""
LIMIT_VARIABLE = "BURN_RECORD_MAX_TENSOR_BYTES"
"""The environment variable that sets ``RecordLimits.max_tensor_bytes`` where the limits leave it out."""


def _physical_memory() -> int:
    """The machine's memory in bytes (1 TiB where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 1024 * _GIB


@dataclass(frozen=True)
class RecordLimits:
    """What loading accepts, checked before anything is allocated for it. A file over a limit raises
    ``RecordFileError``, whose message names the limit and how to raise it.

    Args:
        max_depth: the deepest nesting of dicts, lists and records (a module inside a module inside a
            list is depth 3).
        max_entries: the most values (dicts and lists, and their entries and items) in the whole record,
            counted as they are decoded. A model's record holds a few per parameter; store long lists of
            numbers as tensors.
        max_rank: the most dimensions of one tensor.
        max_structure_bytes: the largest structure section (everything but the tensors' bytes), and the
            largest JSON document.
        max_tensor_bytes: the most bytes of tensor data in all. Where it is ``None`` (the default), the
            environment variable ``BURN_RECORD_MAX_TENSOR_BYTES`` sets it, and otherwise a compressed
            record may decompress to at most 2 GiB or half the machine's memory, whichever is less (a
            65 KB zstandard file can hold 2 GiB of zeros), while an uncompressed one is bounded by its
            own size (its tensors are mapped or read from the bytes present, never decompressed).

    Example:
        >>> recorder = NamedMpkZstFileRecorder(limits=RecordLimits(max_tensor_bytes=16 << 30))
    """

    max_depth: int = 100
    max_entries: int = 1_000_000
    max_rank: int = 32
    max_structure_bytes: int = 64 << 20
    max_tensor_bytes: int | None = None

    def tensor_bytes(self, compressed: bool = True) -> int | None:
        """The most bytes of tensor data a record may hold: ``max_tensor_bytes``, else the environment
        variable ``BURN_RECORD_MAX_TENSOR_BYTES``, else (for a ``compressed`` record) the lesser of
        2 GiB and half the machine's memory, or ``None`` (no limit but the record's own size).

        Raises:
            ValueError: the environment variable is not a whole number of bytes.

        Example:
            >>> RecordLimits(max_tensor_bytes=1 << 20).tensor_bytes()
            1048576
        """
        if self.max_tensor_bytes is not None:
            return self.max_tensor_bytes
        configured = os.environ.get(LIMIT_VARIABLE, "").strip()
        if configured:
            try:
                value = int(configured)
            except ValueError:
                value = -1
            if value < 0:
                raise ValueError(f"{LIMIT_VARIABLE}={configured!r}: expected a whole number of bytes")
            return value
        return min(DECOMPRESSED_DEFAULT, _physical_memory() // 2) if compressed else None
