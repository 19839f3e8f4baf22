"""Writing a record in the binary container, streaming: each tensor's bytes go to the sink as they are
(converted to the stored dtype one tensor at a time where the precision asks for it), never gathered
into one buffer, so saving needs little memory beyond the record itself."""

from __future__ import annotations

import os
import sys
import threading
import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

import msgpack
import numpy as np
import zstandard

from burn_backend import DType

from ._checksum import crc32
from ._format import (
    MAX_CHUNK,
    SHUFFLE_BLOCK,
    Format,
    Frame,
    Trailer,
    encode_default,
    encode_descriptor,
    encode_header,
    frame,
)
from ._precision import PrecisionSettings, convert_checked
from ._tree import BigInt, SavedTensor, TensorSlot, flatten, join

__all__ = ["ZSTD_LEVEL", "crc_pool", "little_endian_bytes", "write_binary"]

ZSTD_LEVEL = 3
_PIECE = 256 << 10  # bytes checksummed then written at a time (compressed format)
_PARALLEL_CRC = 1 << 20  # tensors from this size are checksummed on a worker thread while written
_HELD = 64 << 20  # the most bytes of converted tensors kept for checksums still running
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool when one is needed."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def crc_pool() -> ThreadPoolExecutor:
    """The worker threads that compute the checksums of large tensors while saving and loading (the
    CRC-32 releases the GIL)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="burn-record")
        return _pool


def little_endian_bytes(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array``'s values as a flat uint8 array of little-endian bytes in C order (a view when they
    already are)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.byteorder == ">" or (flat.dtype.byteorder == "=" and sys.byteorder == "big"):
        flat = flat.astype(flat.dtype.newbyteorder("<"))
    return flat.view(np.uint8)


class _Checksummed:
    """A tensor's bytes in pieces to write, each checksummed just before it is written (while it is
    still in the CPU's cache: one pass over memory fewer than checksumming the tensor apart), and with
    ``shuffle`` byte-shuffled per block of ``SHUFFLE_BLOCK`` elements: the first byte of every element
    of the block, then the second, ... (zstandard compresses the slowly varying high bytes of floats far
    better that way)."""

    def __init__(self, data: np.ndarray[Any, Any], itemsize: int, shuffle: bool) -> None:
        self.data = data
        self.itemsize = itemsize if shuffle and itemsize > 1 else 1
        self.crc32 = 0

    def __iter__(self) -> Iterator[memoryview]:
        step = SHUFFLE_BLOCK * self.itemsize if self.itemsize > 1 else _PIECE
        for start in range(0, len(self.data), step):
            piece = self.data[start : start + step]
            self.crc32 = crc32(piece.data, self.crc32)
            if self.itemsize == 1:
                yield piece.data
            else:
                yield np.ascontiguousarray(piece.reshape(-1, self.itemsize).T).data.cast("B")


class _Sink:
    """Writes one tensor's frame: padding, then its bytes in ``bin 32`` pieces of at most ``chunk``."""

    def __init__(self, out: Any, chunk: int) -> None:
        self.out = out
        self.chunk = chunk

    def tensor(self, placement: Frame, size: int, pieces: Iterator[memoryview]) -> None:
        self.out.write(bytes((0xC4, placement.pad)) + bytes(placement.pad))
        left = size
        room = min(size, self.chunk)
        self.out.write(b"\xc6" + room.to_bytes(4, "big"))
        for piece in pieces:
            while len(piece):
                if room == 0:
                    room = min(left, self.chunk)
                    self.out.write(b"\xc6" + room.to_bytes(4, "big"))
                part = piece[:room]
                self.out.write(part)
                piece = piece[len(part) :]
                room -= len(part)
                left -= len(part)


def write_binary(
    out: BinaryIO,
    record: Mapping[str, Any],
    fmt: Format,
    settings: PrecisionSettings,
    max_depth: int,
    *,
    chunk: int = MAX_CHUNK,
) -> None:
    """Write ``record`` to ``out`` (a seekable binary file or ``BytesIO``) in format ``fmt``.

    Raises:
        TypeError, ValueError: the record holds something a record cannot (see ``flatten``).
        PrecisionError: a tensor value does not fit ``settings`` (named by its path).
    """
    skeleton, tensors = flatten(record, max_depth)
    shuffle = SHUFFLE_BLOCK if fmt.compressed else 0
    prelude = encode_header(fmt, settings, shuffle, chunk)
    base = 0 if fmt.compressed else len(prelude)
    stored = [
        DType.of(t.array.dtype) if t.exact else settings.stored_dtype(DType.of(t.array.dtype))
        for t in tensors
    ]
    frames = []
    position = 0
    for tensor, dtype in zip(tensors, stored):
        placement = frame(position, tensor.array.size * dtype.size, base, chunk)
        frames.append(placement)
        position = placement.end
    data_len = position

    out.write(prelude)
    start = out.tell()
    compressor = None
    target: Any = out
    if fmt.compressed:
        compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
        target = compressor.stream_writer(out, size=data_len, closefd=False)
    if shuffle:
        crcs = _write_tensors(_Sink(target, chunk), tensors, stored, frames, shuffle)
    else:
        crcs = _write_plain(target, tensors, stored, frames, chunk)
    if compressor is not None:
        target.flush(zstandard.FLUSH_FRAME)
    data_stored = out.tell() - start

    def default(value: Any) -> Any:
        if isinstance(value, TensorSlot):
            t, placement = tensors[value.index], frames[value.index]
            shape = tuple(int(d) for d in t.array.shape)
            size = t.array.size * stored[value.index].size
            param_id = None if t.param_id is None else t.param_id.value
            return encode_descriptor(
                fmt.named, stored[value.index], shape, placement.offset, size, crcs[value.index], param_id
            )
        if isinstance(value, BigInt):
            return encode_default(value)
        raise TypeError(f"cannot encode {type(value).__name__}")  # pragma: no cover (flatten checked)

    structure = msgpack.packb(skeleton, default=default, use_bin_type=True)
    stored_structure = structure
    if fmt.compressed:
        stored_structure = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True).compress(structure)
    out.write(stored_structure)
    trailer = Trailer(data_len, data_stored, len(structure), len(stored_structure), zlib.crc32(structure))
    out.write(trailer.pack())


def _write_tensors(
    sink: _Sink, tensors: list[SavedTensor], stored: list[DType], frames: list[Frame], shuffle: int
) -> list[int]:
    """Write every tensor's frame; their CRC-32s."""
    crcs: list[int] = []
    for tensor, dtype, placement in zip(tensors, stored, frames):
        converted = convert_checked(tensor.array, dtype, f"save: entry {join(tensor.path)!r}")
        data = little_endian_bytes(converted)
        pieces = _Checksummed(data, dtype.size, bool(shuffle))
        sink.tensor(placement, data.nbytes, iter(pieces))
        crcs.append(pieces.crc32)
        del converted, data, pieces  # a converted tensor is freed before the next is converted
    return crcs


def _write_plain(
    out: Any, tensors: list[SavedTensor], stored: list[DType], frames: list[Frame], chunk: int
) -> list[int]:
    """Write every tensor's frame uncompressed, straight from the tensor's memory (no copy when it is
    already in the stored dtype, little-endian and contiguous); their CRC-32s. A large tensor is
    checksummed on a worker thread while it is written (``crc32`` releases the GIL), and converted
    tensors waiting for their checksum are bounded (``_HELD`` bytes), so saving never holds a second
    copy of the model."""
    pool = crc_pool()
    crcs: list[Future[int] | int] = []
    held: deque[tuple[Future[int], int]] = deque()
    held_bytes = 0
    for tensor, dtype, placement in zip(tensors, stored, frames):
        converted = convert_checked(tensor.array, dtype, f"save: entry {join(tensor.path)!r}")
        data = little_endian_bytes(converted)
        view = data.data
        if data.nbytes >= _PARALLEL_CRC:
            future = pool.submit(crc32, view)
            crcs.append(future)
            if not np.may_share_memory(data, tensor.array):  # a converted copy: bound how many wait
                held.append((future, data.nbytes))
                held_bytes += data.nbytes
        else:
            crcs.append(crc32(view))
        size = data.nbytes
        room = min(size, chunk)
        head = b"\xc4" + bytes((placement.pad,)) + bytes(placement.pad)
        out.write(head + b"\xc6" + room.to_bytes(4, "big"))
        out.write(view[:room])
        for start in range(room, size, chunk):  # past 4 GiB: more bin 32 pieces
            piece = view[start : start + chunk]
            out.write(b"\xc6" + len(piece).to_bytes(4, "big"))
            out.write(piece)
        del converted, data, view
        while held_bytes > _HELD:
            oldest, nbytes = held.popleft()
            oldest.result()
            held_bytes -= nbytes
    return [crc if isinstance(crc, int) else crc.result() for crc in crcs]
