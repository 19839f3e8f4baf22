"""The safetensors format, read and written without dependencies: an 8-byte little-endian header
length, a JSON header (name -> dtype, shape, byte offsets; ``__metadata__``), then the raw bytes.
Reads memory-map the file, so tensors are views of it until used."""

from __future__ import annotations

import contextlib
import json
import mmap as mapping
import os
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._header import DEFAULT_MAX_HEADER_BYTES, DTYPES, SafetensorsError, read_header

__all__ = ["SafetensorsError", "read_safetensors", "read_safetensors_metadata", "write_safetensors"]

_NAMES = {dtype: name for name, dtype in DTYPES.items()}


def read_safetensors_metadata(
    path: str | os.PathLike[str], *, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
) -> dict[str, str]:
    """The ``__metadata__`` strings of a safetensors file (whose whole header is validated).

    Args:
        path: the file.
        max_header_bytes: the largest header accepted (the reference package's 100,000,000 bytes).

    Raises:
        SafetensorsError: the header is malformed (see ``read_safetensors``).

    Example:
        >>> read_safetensors_metadata("model.safetensors")  # doctest: +SKIP
        {'format': 'pt'}
    """
    return read_header(Path(path), max_header_bytes).metadata


def read_safetensors(
    path: str | os.PathLike[str], *, mmap: bool = True, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
) -> dict[str, np.ndarray[Any, Any]]:
    """Every tensor of a safetensors file, by name, in header order.

    The header is validated as the reference ``safetensors`` package does before any tensor is made:
    what it refuses is refused here too (and duplicate keys always).

    Args:
        path: the file.
        mmap: map the file (arrays are read-only views of it, read when used); ``False`` copies
            each tensor into a new writable array of its own.
        max_header_bytes: the largest header accepted (the reference package's 100,000,000 bytes).

    Raises:
        SafetensorsError: a file too short, a header length over the limit or past the end, a header
            that is not UTF-8 JSON of the expected form, an unknown dtype, duplicate keys, or offsets
            that do not tile the data exactly as the shapes and dtypes say.

    Example:
        >>> tensors = read_safetensors("model.safetensors")  # doctest: +SKIP
        >>> tensors["fc.weight"].shape  # doctest: +SKIP
    """
    path = Path(path)
    header = read_header(path, max_header_bytes)
    start = header.data_start
    total = path.stat().st_size - start
    entries = header.entries
    if mmap and total > 0:
        buffer = np.memmap(path, dtype=np.uint8, mode="r", offset=start, shape=(total,))
        return {e.name: buffer[e.begin : e.end].view(e.dtype).reshape(e.shape) for e in entries}
    # Each tensor copied out of a mapping of the file into a new array of its own: one copy (from the
    # page cache, which on Linux is faster than ``read`` into the same memory), writable arrays freed
    # each on its own (no view keeps a whole file's buffer alive).
    if total == 0 or not entries:
        return {e.name: np.empty(e.shape, dtype=e.dtype) for e in entries}
    with open(path, "rb") as file:
        mapped = mapping.mmap(file.fileno(), 0, access=mapping.ACCESS_READ)
    try:
        if hasattr(mapping, "MADV_WILLNEED"):
            mapped.madvise(mapping.MADV_WILLNEED)
        data = np.frombuffer(mapped, dtype=np.uint8, count=total, offset=start)
        out = {e.name: np.array(data[e.begin : e.end].view(e.dtype).reshape(e.shape)) for e in entries}
        del data
    finally:
        with contextlib.suppress(BufferError):  # a view held by a pending exception: unmapped when freed
            mapped.close()
    return out


def write_safetensors(
    path: str | os.PathLike[str],
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write ``tensors`` (name -> array-like) to a safetensors file, atomically (a temporary file
    renamed into place). ``safetensors.torch.load_file`` reads it."""
    path = Path(path)
    arrays = {name: np.asarray(value) for name, value in tensors.items()}
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, array in arrays.items():
        if array.dtype not in _NAMES:
            raise SafetensorsError(
                f"tensor {name!r} has dtype {array.dtype}, which safetensors does not store"
            )
        size = array.size * array.dtype.itemsize
        header[name] = {
            "dtype": _NAMES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    # a name of this process's own, removed if the write fails: nothing half-written is left behind
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as file:
            file.write(struct.pack("<Q", len(encoded)))
            file.write(encoded)
            for array in arrays.values():
                file.write(np.ascontiguousarray(array).tobytes() if array.ndim else array.tobytes())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path
