"""Reading a record from the binary container, checking everything before trusting it.

The order matters: the magic number, the header and the trailer are checked first (small reads), then
the structure section (bounded by ``RecordLimits`` before it is read), then every tensor descriptor
against the layout the writer follows, and only then is the data section mapped, read or decompressed
(into one buffer of the size the checked descriptors add up to). Uncompressed tensors are views of the
memory-mapped file (or of the bytes given), compressed ones views of the decompressed buffer: no tensor
is copied unless its precision is converted. Every failure is a ``RecordFileError``.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import sys
import zlib
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import zstandard

from burn_backend import DType, TensorData

from ._checksum import crc32
from ._errors import LIMIT_VARIABLE, PrecisionError, RecordFileError, RecordLimits
from ._format import (
    ALIGNMENT,
    MAGIC,
    MAX_HEADER,
    PRELUDE,
    TRAILER,
    Format,
    Header,
    Trailer,
    decode_header,
    ext_hook,
    frame,
)
from ._precision import PrecisionSettings, convert_checked
from ._tree import TensorDescriptor, join, rebuild
from ._write import crc_pool

__all__ = ["read_binary_bytes", "read_binary_file"]

_PARALLEL_CRC = 1 << 20
_FRAME_HEADER = 18  # the longest zstandard frame header
_MIN_SIZE = PRELUDE.size + 4 + TRAILER.size
_LITTLE = sys.byteorder == "little"
_Placed = tuple[TensorDescriptor, tuple[str, ...]]
"""A tensor's descriptor and its path in the record."""


class _Bytes:
    """Random access to a record in memory."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def read_at(self, offset: int, length: int) -> bytes:
        return self.data[offset : offset + length]

    def region(self, offset: int, length: int) -> Any:
        return _ViewReader(memoryview(self.data)[offset : offset + length])

    def buffer(self) -> np.ndarray[Any, Any]:
        return np.frombuffer(self.data, np.uint8)


class _ViewReader:
    """A ``read``-able view of a memory region (for the zstandard stream reader)."""

    def __init__(self, view: memoryview) -> None:
        self.view = view
        self.position = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.view) if size < 0 else min(len(self.view), self.position + size)
        chunk = bytes(self.view[self.position : end])
        self.position = end
        return chunk


class _File:
    """Random access to a record file, memory-mapped on request."""

    def __init__(self, file: Any, memory_map: bool) -> None:
        self.file = file
        self.size = os.fstat(file.fileno()).st_size
        self.memory_map = memory_map

    def read_at(self, offset: int, length: int) -> bytes:
        self.file.seek(offset)
        data: bytes = self.file.read(length)
        return data

    def region(self, offset: int, length: int) -> Any:
        self.file.seek(offset)
        return _FileRegion(self.file, length)

    def buffer(self) -> np.ndarray[Any, Any]:
        if self.memory_map:
            with contextlib.suppress(OSError, ValueError):  # file systems without mmap: read instead
                mapped = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
                with contextlib.suppress(AttributeError, OSError):
                    mapped.madvise(mmap.MADV_WILLNEED)
                return np.frombuffer(mapped, np.uint8)
        buffer = _aligned_empty(self.size, 0)
        self.file.seek(0)
        view = buffer.data
        done = 0
        while done < self.size:
            count = self.file.readinto(view[done:])
            if not count:
                raise OSError(f"the file shrank while it was read ({done} of {self.size} bytes)")
            done += count
        return buffer


class _FileRegion:
    """A ``read``-able region of a file (for the zstandard stream reader)."""

    def __init__(self, file: Any, length: int) -> None:
        self.file = file
        self.left = length

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        chunk: bytes = self.file.read(size)
        self.left -= len(chunk)
        return chunk


def _aligned_empty(size: int, shift: int) -> np.ndarray[Any, Any]:
    """A new uint8 buffer of ``size`` bytes whose byte ``i`` lies at an address congruent to
    ``shift + i`` modulo the alignment."""
    raw = np.empty(size + ALIGNMENT, np.uint8)
    start = (shift - raw.ctypes.data) % ALIGNMENT
    return raw[start : start + size]


@dataclass
class _Sections:
    header: Header
    trailer: Trailer
    prelude_len: int


def _sections(src: Any, fmt: Format, limits: RecordLimits, source: Any) -> _Sections:
    if src.size < _MIN_SIZE:
        what = "empty" if src.size == 0 else f"{src.size} bytes long"
        raise RecordFileError(f"the file is {what}, shorter than any record ({_MIN_SIZE} bytes)", source)
    magic, header_len = PRELUDE.unpack(src.read_at(0, PRELUDE.size))
    if magic != MAGIC:
        raise RecordFileError(
            f"not a burn-record {fmt.name} record: it starts with {magic!r}, "
            f"expected the magic number {MAGIC!r}",
            source,
        )
    if header_len > MAX_HEADER or PRELUDE.size + header_len + 4 + TRAILER.size > src.size:
        raise RecordFileError(
            f"a header of {header_len} bytes does not fit a file of {src.size} bytes: truncated or damaged",
            source,
        )
    raw = src.read_at(PRELUDE.size, header_len + 4)
    (crc,) = struct.unpack("<I", raw[header_len:])
    if zlib.crc32(raw[:header_len]) != crc:
        raise RecordFileError("the header's checksum does not match: the file is damaged", source)
    header = decode_header(raw[:header_len], fmt, source)
    prelude_len = PRELUDE.size + header_len + 4
    trailer = Trailer.unpack(src.read_at(src.size - TRAILER.size, TRAILER.size), source)
    total = prelude_len + trailer.data_stored + trailer.structure_stored + TRAILER.size
    if total != src.size:
        raise RecordFileError(
            f"the sections add up to {total} bytes, the file has {src.size}: it is truncated or damaged",
            source,
        )
    if not fmt.compressed and (
        trailer.data_stored != trailer.data_len or trailer.structure_stored != trailer.structure_len
    ):
        raise RecordFileError("stored and raw section sizes differ in an uncompressed record", source)
    if trailer.structure_len > limits.max_structure_bytes:
        raise RecordFileError(
            f"a structure of {trailer.structure_len} bytes, more than {limits.max_structure_bytes} "
            "(RecordLimits.max_structure_bytes)",
            source,
        )
    limit = limits.tensor_bytes(fmt.compressed)
    if limit is not None and trailer.data_len > limit:
        raise RecordFileError(
            f"{trailer.data_len} bytes of tensor data, more than {limit} (RecordLimits.max_tensor_bytes; "
            f"a larger RecordLimits(max_tensor_bytes=...) or {LIMIT_VARIABLE} admits it)",
            source,
        )
    return _Sections(header, trailer, prelude_len)


def _structure(src: Any, sections: _Sections, fmt: Format, source: Any) -> bytes:
    trailer = sections.trailer
    stored = src.read_at(sections.prelude_len + trailer.data_stored, trailer.structure_stored)
    structure = stored
    if fmt.compressed:
        try:
            structure = zstandard.ZstdDecompressor().decompress(stored, max_output_size=trailer.structure_len)
        except zstandard.ZstdError as error:
            raise RecordFileError(f"the structure section does not decompress ({error})", source) from None
    if len(structure) != trailer.structure_len:
        raise RecordFileError(
            f"the structure section holds {len(structure)} bytes, the trailer says {trailer.structure_len}",
            source,
        )
    if zlib.crc32(structure) != trailer.structure_crc32:
        raise RecordFileError("the structure's checksum does not match: the file is damaged", source)
    return bytes(structure)


def _decompressed(src: Any, sections: _Sections, source: Any) -> np.ndarray[Any, Any]:
    """The data section, decompressed into a new aligned buffer of exactly the declared size."""
    size = sections.trailer.data_len
    head = src.read_at(sections.prelude_len, min(sections.trailer.data_stored, _FRAME_HEADER))
    try:
        declared = zstandard.get_frame_parameters(head).content_size
    except zstandard.ZstdError as error:
        raise RecordFileError(f"the data section is not a zstandard frame ({error})", source) from None
    # the writer declares the frame's size: a frame declaring another is refused before the buffer is
    # made (one declaring none is decompressed into the trailer's size and stops there)
    if declared not in (zstandard.CONTENTSIZE_UNKNOWN, size):
        raise RecordFileError(
            f"the data section's zstandard frame declares {declared} bytes, the trailer says {size}", source
        )
    buffer = _aligned_empty(size, 0)
    region = src.region(sections.prelude_len, sections.trailer.data_stored)
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(region, read_across_frames=False)
        view = buffer.data
        done = 0
        while done < size:
            count = reader.readinto(view[done:])
            if not count:
                break
            done += count
        extra = reader.read(1)
    except zstandard.ZstdError as error:
        raise RecordFileError(f"the data section does not decompress ({error})", source) from None
    if done != size or extra:
        found = f"more than {size}" if extra else str(done)
        raise RecordFileError(f"the data section decompresses to {found} bytes, expected {size}", source)
    return buffer


def _check_frames(
    buffer: np.ndarray[Any, Any], base: int, placed: list[_Placed], chunk: int, source: Any
) -> None:
    """Every padding and ``bin 32`` header byte of the data section is what the writer writes."""
    position = 0
    for descriptor, path in placed:
        placement = frame(position, descriptor.size, base, chunk)
        start = base + position
        pad = buffer[start : start + 2 + placement.pad]
        ok = pad[0] == 0xC4 and pad[1] == placement.pad and not pad[2:].any()
        left, cursor = descriptor.size, base + placement.offset - 5
        for _ in range(placement.chunks):
            piece = min(left, chunk)
            ok = ok and bytes(buffer[cursor : cursor + 5]) == b"\xc6" + piece.to_bytes(4, "big")
            cursor += 5 + piece
            left -= piece
        if not ok:
            raise RecordFileError(f"entry {join(path)!r}: the framing of its bytes is damaged", source)
        position = placement.end


def _tensor_bytes(
    buffer: np.ndarray[Any, Any], base: int, descriptor: TensorDescriptor, chunk: int
) -> np.ndarray[Any, Any]:
    """A tensor's bytes: a view of the buffer, or (past one chunk) a new array gathering its pieces."""
    start = base + descriptor.offset
    if descriptor.size <= chunk:
        return buffer[start : start + descriptor.size]
    gathered = np.empty(descriptor.size, np.uint8)
    done = 0
    while done < descriptor.size:
        piece = min(chunk, descriptor.size - done)
        gathered[done : done + piece] = buffer[start : start + piece]
        start += piece + 5
        done += piece
    return gathered


def _unshuffle(data: np.ndarray[Any, Any], itemsize: int, block: int) -> None:
    """Undo the writer's byte shuffle in place, block by block."""
    if itemsize == 1 or block == 0:
        return
    step = block * itemsize
    for start in range(0, len(data), step):
        part = data[start : start + step]
        shuffled = part.copy()
        part[:] = shuffled.reshape(itemsize, -1).T.reshape(-1)


def _typed(data: np.ndarray[Any, Any], descriptor: TensorDescriptor) -> np.ndarray[Any, Any]:
    dtype = descriptor.dtype.numpy
    array: np.ndarray[Any, Any] = data.view(dtype.newbyteorder("<")).reshape(descriptor.shape)
    if not _LITTLE:
        array = array.astype(dtype)
    if not array.flags.aligned:
        array = array.copy()
    return array


class _TooMany(Exception):
    """The structure holds more values than the limits allow (raised while msgpack decodes it)."""


def _load(
    src: Any, fmt: Format, settings: PrecisionSettings, limits: RecordLimits, source: Any
) -> dict[str, Any]:
    sections = _sections(src, fmt, limits, source)
    structure = _structure(src, sections, fmt, source)
    count = 0

    def counted(container: Any) -> Any:
        """Count every container and its items as msgpack builds them, so that a small structure of
        many (empty) containers stops at the limit instead of filling memory."""
        nonlocal count
        count += 1 + len(container)
        if count > limits.max_entries:
            raise _TooMany
        return container

    try:
        skeleton = msgpack.unpackb(
            structure,
            ext_hook=ext_hook(fmt.named, limits),
            object_hook=counted,
            list_hook=counted,
            strict_map_key=True,
            max_array_len=limits.max_entries,
            max_map_len=limits.max_entries,
        )
    except _TooMany:
        raise RecordFileError(
            f"more than {limits.max_entries} values (RecordLimits.max_entries)", source
        ) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as error:
        raise RecordFileError(f"the structure is not a valid msgpack record ({error})", source) from None
    placed: list[_Placed] = []
    build = rebuild(skeleton, limits, source, lambda descriptor, path: placed.append((descriptor, path)))

    header, trailer = sections.header, sections.trailer
    base = 0 if fmt.compressed else sections.prelude_len
    position = 0
    for descriptor, path in placed:
        placement = frame(position, descriptor.size, base, header.chunk)
        if descriptor.offset != placement.offset:
            raise RecordFileError(
                f"entry {join(path)!r}: its bytes are at offset {descriptor.offset}, "
                f"expected {placement.offset}",
                source,
            )
        position = placement.end
    if position != trailer.data_len:
        raise RecordFileError(
            f"the tensors take {position} bytes of the data section, the trailer says {trailer.data_len}",
            source,
        )

    buffer = _decompressed(src, sections, source) if fmt.compressed else src.buffer()
    _check_frames(buffer, base, placed, header.chunk, source)
    pieces = [_tensor_bytes(buffer, base, descriptor, header.chunk) for descriptor, _ in placed]
    for piece, (descriptor, _) in zip(pieces, placed):
        _unshuffle(piece, descriptor.dtype.size, header.shuffle)
    _check_crcs(pieces, placed, source)

    loaded = []
    for piece, (descriptor, path) in zip(pieces, placed):
        array = _typed(piece, descriptor)
        if descriptor.dtype is DType.BOOL and piece.size and int(piece.max()) > 1:
            raise RecordFileError(
                f"entry {join(path)!r}: a bool tensor holds bytes other than 0 and 1", source
            )
        try:
            if not descriptor.exact:
                array = convert_checked(
                    array, settings.stored_dtype(descriptor.dtype), f"entry {join(path)!r}"
                )
        except PrecisionError as error:
            raise RecordFileError(f"{error} of {settings!r}", source) from None
        loaded.append(TensorData.from_numpy(array, copy=False))
    return build(loaded)


def _check_crcs(pieces: list[np.ndarray[Any, Any]], placed: list[_Placed], source: Any) -> None:
    pending: list[Future[int] | int] = []
    pool = crc_pool()
    for piece in pieces:
        view = piece.data
        pending.append(pool.submit(crc32, view) if piece.nbytes >= _PARALLEL_CRC else crc32(view))
    for result, (descriptor, path) in zip(pending, placed):
        crc = result if isinstance(result, int) else result.result()
        if crc != descriptor.crc32:
            raise RecordFileError(f"entry {join(path)!r}: the checksum of its bytes does not match", source)


def read_binary_bytes(
    data: bytes, fmt: Format, settings: PrecisionSettings, limits: RecordLimits
) -> dict[str, Any]:
    """The record in ``data``; its uncompressed tensors are views of ``data``.

    Raises:
        RecordFileError: ``data`` is not a whole, undamaged record of ``fmt`` within ``limits``.
    """
    return _load(_Bytes(data), fmt, settings, limits, None)


def read_binary_file(
    path: Path, fmt: Format, settings: PrecisionSettings, limits: RecordLimits, memory_map: bool
) -> dict[str, Any]:
    """The record in the file at ``path``; with ``memory_map``, its uncompressed tensors are views of the
    memory-mapped file.

    Raises:
        OSError: the file cannot be opened or read.
        RecordFileError: the file is not a whole, undamaged record of ``fmt`` within ``limits``.
    """
    with open(path, "rb") as file:
        return _load(_File(file, memory_map), fmt, settings, limits, path)
