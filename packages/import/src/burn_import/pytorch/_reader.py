"""Reading PyTorch ``.pt``/``.pth`` files without PyTorch and without running anything they contain.

The pickle inside is read by a restricted unpickler (``_unpickle``): it resolves only the globals a
state dict needs, each mapped to a stand-in of ours; any other global is refused with its name before
anything is called. Tensor data is not read while unpickling: each tensor is a ``LazyArray`` over its
storage, which is memory-mapped from the file where the format allows (the zip format stores it
uncompressed), so loading a large file does not hold it twice.

A file is data from anywhere: every size it declares (the pickle's, each zip entry's, each storage's,
each view's extent) is checked against the bytes actually present and against ``ReadLimits`` before
anything is allocated or mapped, and any damage is a ``PyTorchReadError`` naming the file.
"""

from __future__ import annotations

import io
import lzma
import os
import pickle
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ._lazy import LazyArray, PyTorchReadError, Storage
from ._limits import ReadLimits
from ._unpickle import RestrictedUnpickler, check_structure

__all__ = ["read_pytorch"]

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_PICKLE_NAME = re.compile(r"(?:[^/]+/)?data\.pkl")
_MIB = 1024 * 1024
# What a damaged file makes the readers below raise: each becomes a ``PyTorchReadError``.
_DAMAGE = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    struct.error,
    RecursionError,
    OverflowError,
    NotImplementedError,
    RuntimeError,
    OSError,  # a damaged bzip2 stream
    pickle.UnpicklingError,
    zlib.error,
    lzma.LZMAError,
)


def read_pytorch(path: str | os.PathLike[str], *, mmap: bool = True, limits: ReadLimits | None = None) -> Any:
    """The object saved in a PyTorch file (usually a state dict), with ``LazyArray`` tensors.

    Args:
        path: a ``.pt``/``.pth`` file written by ``torch.save`` (the zip format of PyTorch >= 1.6, or
            the legacy format before it).
        mmap: map storages from the file rather than reading them (zip format, uncompressed entries).
        limits: the sizes accepted (``ReadLimits()``: far above real models' files).

    Returns:
        The saved object: dicts, lists, numbers and ``LazyArray`` tensors, every view checked to lie
        within its storage.

    Raises:
        PyTorchReadError: the file is not a PyTorch file, is damaged, exceeds a limit, or its pickle
            names a global outside the allowed set (nothing is executed in that case).
        OSError: the file cannot be opened.

    Example:
        >>> state = read_pytorch("model.pt")  # doctest: +SKIP
        >>> state["fc.weight"].numpy().shape  # doctest: +SKIP
    """
    path = Path(path)
    limits = limits or ReadLimits()
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        try:
            if zipfile.is_zipfile(file):
                obj, storages, tensors = _read_zip(path, file, size, mmap, limits)
            else:
                file.seek(0)  # is_zipfile read the end
                obj, storages, tensors = _read_legacy(path, file, size, limits)
            for storage in storages.values():
                storage.data()
            for tensor in tensors:
                tensor.check()
        except PyTorchReadError:
            raise
        except _DAMAGE as error:
            raise PyTorchReadError(f"{path}: damaged or not a PyTorch file ({_describe(error)})") from None
    return obj


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 200 else f"{text[:197]}..."


def _unpickle(
    file: BinaryIO, path: Path, storages: dict[str, Storage], limits: ReadLimits
) -> tuple[Any, list[LazyArray]]:
    unpickler = RestrictedUnpickler(file, str(path), storages, limits)
    obj = unpickler.load()
    check_structure(obj, str(path), limits)
    return obj, unpickler.tensors


# -- the zip format ---------------------------------------------------------------------------------
def _read_zip(
    path: Path, file: BinaryIO, size: int, mmap: bool, limits: ReadLimits
) -> tuple[Any, dict[str, Storage], list[LazyArray]]:
    with zipfile.ZipFile(file) as archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            raise PyTorchReadError(
                f"{path}: {len(infos)} zip entries, over ReadLimits.max_members = {limits.max_members}"
            )
        pickles = [info for info in infos if _PICKLE_NAME.fullmatch(info.filename)]
        if len(pickles) != 1:
            raise PyTorchReadError(
                f"{path}: a PyTorch zip file holds one data.pkl (at its top or in one folder), "
                f"this one {len(pickles)}"
            )
        pickle_info = pickles[0]
        if pickle_info.file_size > limits.max_pickle_bytes:
            raise PyTorchReadError(
                f"{path}: a pickle of {pickle_info.file_size} bytes, over ReadLimits.max_pickle_bytes = "
                f"{limits.max_pickle_bytes}"
            )
        inflated = [0]
        data = _read_member(path, file, size, archive, pickle_info, limits, inflated)
        storages: dict[str, Storage] = {}
        obj, tensors = _unpickle(io.BytesIO(data), path, storages, limits)
        del data
        prefix = pickle_info.filename[: -len("data.pkl")]
        members = {info.filename: info for info in infos}
        mapping: list[np.memmap[Any, Any]] = []
        for key, storage in storages.items():
            info = members.get(f"{prefix}data/{key}")
            if info is None:
                raise PyTorchReadError(f"{path}: storage {key!r} has no entry {prefix}data/{key}")
            itemsize = storage.dtype.itemsize
            expected = storage.numel * itemsize if storage.numel is not None else None
            if (expected is not None and info.file_size != expected) or info.file_size % itemsize:
                raise PyTorchReadError(
                    f"{path}: entry {info.filename!r} holds {info.file_size} bytes; its storage declares "
                    f"{storage.numel} {storage.dtype} elements ({expected} bytes)"
                )
            count = info.file_size // itemsize
            if mmap and info.compress_type == zipfile.ZIP_STORED and count:
                offset = _stored_offset(path, file, size, info)
                storage.array = _mapped(path, mapping, offset, count * itemsize).view(storage.dtype)
            else:
                raw = _read_member(path, file, size, archive, info, limits, inflated)
                storage.array = np.frombuffer(raw, dtype=storage.dtype)
            storage.numel = count
    return obj, storages, tensors


def _read_member(
    path: Path,
    file: BinaryIO,
    size: int,
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    limits: ReadLimits,
    inflated: list[int],
) -> bytes:
    """A zip entry's bytes, read only after its declared sizes are checked against the file and the
    limits (``inflated[0]``: the total inflated so far), with a read bounded by its declared size."""
    name = info.filename
    if info.compress_type == zipfile.ZIP_STORED:
        _stored_offset(path, file, size, info)
    else:
        _data_offset(path, file, size, info)
        if info.file_size > _MIB and info.file_size > limits.max_ratio * info.compress_size:
            raise PyTorchReadError(
                f"{path}: entry {name!r} inflates {info.compress_size} bytes to {info.file_size}, over "
                f"ReadLimits.max_ratio = {limits.max_ratio}"
            )
        inflated[0] += info.file_size
        if inflated[0] > limits.max_inflated_bytes:
            raise PyTorchReadError(
                f"{path}: compressed entries inflate to more than ReadLimits.max_inflated_bytes = "
                f"{limits.max_inflated_bytes} bytes (at {name!r})"
            )
    with archive.open(info) as member:
        data = member.read(info.file_size)
    if len(data) != info.file_size:
        raise PyTorchReadError(f"{path}: entry {name!r} holds {len(data)} of its {info.file_size} bytes")
    return data


def _data_offset(path: Path, file: BinaryIO, size: int, info: zipfile.ZipInfo) -> int:
    """Where an entry's (possibly compressed) bytes start, after checking that they lie in the file."""
    file.seek(info.header_offset)
    header = file.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise PyTorchReadError(f"{path}: damaged zip entry {info.filename!r} (no local header)")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    offset = int(info.header_offset + 30 + name_len + extra_len)
    if offset + info.compress_size > size:
        raise PyTorchReadError(
            f"{path}: entry {info.filename!r} declares {info.compress_size} bytes at offset {offset}, "
            f"past the end of the {size}-byte file"
        )
    return offset


def _stored_offset(path: Path, file: BinaryIO, size: int, info: zipfile.ZipInfo) -> int:
    """Where an uncompressed entry's bytes start, after checking that they lie in the file."""
    if info.compress_size != info.file_size:
        raise PyTorchReadError(
            f"{path}: uncompressed entry {info.filename!r} declares {info.file_size} bytes but stores "
            f"{info.compress_size}"
        )
    return _data_offset(path, file, size, info)


def _mapped(path: Path, mapping: list[np.memmap[Any, Any]], offset: int, nbytes: int) -> np.ndarray[Any, Any]:
    """Bytes ``[offset, offset + nbytes)`` of the file, from one mapping of it made on first use (a
    mapping holds a file descriptor: one per storage would run out of them on a large model)."""
    if not mapping:
        mapping.append(np.memmap(path, dtype=np.uint8, mode="r"))
    return mapping[0][offset : offset + nbytes]


# -- the legacy format ------------------------------------------------------------------------------
class _BoundedReader:
    """A file's reads clamped to the bytes left in it and to a budget (a pickle declaring a
    gigabyte-long string reads what is there instead of allocating the gigabyte first)."""

    def __init__(self, file: BinaryIO, size: int, budget: int, path: Path) -> None:
        self.file = file
        self.size = size
        self.budget = budget
        self.path = path

    def _allow(self, n: int) -> int:
        left = max(self.size - self.file.tell(), 0)
        n = left if n < 0 else min(n, left)
        if n > self.budget:
            raise PyTorchReadError(
                f"{self.path}: pickles of more than ReadLimits.max_pickle_bytes bytes in all"
            )
        return n

    def read(self, n: int = -1) -> bytes:
        data = self.file.read(self._allow(n))
        self.budget -= len(data)
        return data

    def readline(self, n: int = -1) -> bytes:
        data = self.file.readline(self._allow(n if n >= 0 else self.size))
        self.budget -= len(data)
        return data


def _read_legacy(
    path: Path, file: BinaryIO, size: int, limits: ReadLimits
) -> tuple[Any, dict[str, Storage], list[LazyArray]]:
    reader: Any = _BoundedReader(file, size, limits.max_pickle_bytes, path)
    storages: dict[str, Storage] = {}
    try:
        magic, _ = _unpickle(reader, path, storages, limits)
    except PyTorchReadError:
        raise
    except _DAMAGE:
        magic = None
    if type(magic) is not int or magic != _LEGACY_MAGIC:
        raise PyTorchReadError(f"{path}: not a PyTorch file (no zip archive, no legacy magic number)")
    _unpickle(reader, path, storages, limits)  # protocol version
    system, _ = _unpickle(reader, path, storages, limits)
    if isinstance(system, dict) and system.get("little_endian") is False:
        raise PyTorchReadError(f"{path}: written on a big-endian machine, which this reader does not read")
    obj, tensors = _unpickle(reader, path, storages, limits)
    keys, _ = _unpickle(reader, path, storages, limits)
    mapping: list[np.memmap[Any, Any]] = []
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise PyTorchReadError(f"{path}: the list of storages is not a list of keys")
    for key in keys:
        storage = storages.get(key)
        if storage is None or storage.array is not None:
            raise PyTorchReadError(f"{path}: storage {key!r} is not referred to, or listed twice")
        raw = file.read(8)
        if len(raw) != 8:
            raise PyTorchReadError(f"{path}: storage {key!r} is cut off")
        (count,) = struct.unpack("<q", raw)
        offset = file.tell()
        nbytes = count * storage.dtype.itemsize
        if count < 0 or (storage.numel is not None and count != storage.numel) or offset + nbytes > size:
            raise PyTorchReadError(
                f"{path}: storage {key!r} declares {count} {storage.dtype} elements ({nbytes} bytes; the "
                f"pickle said {storage.numel}) with {size - offset} bytes left in the file"
            )
        if count:
            storage.array = _mapped(path, mapping, offset, nbytes).view(storage.dtype)
        else:
            storage.array = np.empty(0, dtype=storage.dtype)
        storage.numel = count
        file.seek(offset + nbytes)
    return obj, storages, tensors
