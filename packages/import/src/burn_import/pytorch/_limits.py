"""The limits a PyTorch file is read within (checked before anything is allocated)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReadLimits"]

_MIB = 1024 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """What ``read_pytorch`` accepts from a file before refusing it with ``PyTorchReadError``: sizes
    are checked against these limits and against the bytes actually in the file before memory is
    allocated. The defaults are far above what ``torch.save`` writes for real models; raise one with
    ``dataclasses.replace(ReadLimits(), max_tensors=...)`` or ``ReadLimits(max_tensors=...)``.

    Attributes:
        max_pickle_bytes: the size of the pickle that describes the saved object (not its tensors'
            data, which is memory-mapped).
        max_tensors: tensors, and storages, the file may hold (each).
        max_members: entries of the zip archive.
        max_objects: objects in the saved object, a container shared by several parents counted at
            every place (so that code walking the object meets at most this many).
        max_depth: how deep containers (dicts, lists, tuples) may nest.
        max_inflated_bytes: the total that compressed zip entries may inflate to (``torch.save``
            compresses nothing; an archive re-packed with compression is read into memory).
        max_ratio: how many times its compressed size a compressed entry over 1 MiB may inflate to.
        max_expanded_bytes: the size of a tensor that repeats its storage's elements (a stride-0
            view, as ``expand`` makes, holding more elements than its storage), which is copied out.

    Example:
        >>> state = read_pytorch("huge.pt", limits=ReadLimits(max_tensors=5_000_000))  # doctest: +SKIP
    """

    max_pickle_bytes: int = 256 * _MIB
    max_tensors: int = 1_000_000
    max_members: int = 1_000_000
    max_objects: int = 10_000_000
    max_depth: int = 100
    max_inflated_bytes: int = 1024 * _MIB
    max_ratio: int = 100
    max_expanded_bytes: int = 256 * _MIB
