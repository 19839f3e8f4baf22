"""The safetensors format, read and written without dependencies: an 8-byte little-endian header
length, a JSON header (name -> dtype, shape, byte offsets; ``__metadata__``), then the raw bytes.
Reads memory-map the file, so tensors are views of it until used."""

from __future__ import annotations

import contextlib
import json
import math
import mmap as mapping
import os
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["SafetensorsError", "read_safetensors", "read_safetensors_metadata", "write_safetensors"]

_DTYPES: dict[str, np.dtype[Any]] = {
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "I64": np.dtype(np.int64),
    "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U64": np.dtype(np.uint64),
    "U32": np.dtype(np.uint32),
    "U16": np.dtype(np.uint16),
    "U8": np.dtype(np.uint8),
    "BOOL": np.dtype(np.bool_),
}
_NAMES = {dtype: name for name, dtype in _DTYPES.items()}
_MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    """A file is not valid safetensors (the message says what is wrong and where)."""


def _header(path: Path) -> tuple[dict[str, Any], int]:
    with open(path, "rb") as file:
        raw = file.read(8)
        if len(raw) != 8:
            raise SafetensorsError(f"{path}: too short to be a safetensors file")
        (size,) = struct.unpack("<Q", raw)
        if size > _MAX_HEADER:
            raise SafetensorsError(f"{path}: header of {size} bytes exceeds the limit of {_MAX_HEADER}")
        try:
            header = json.loads(file.read(size))
        except json.JSONDecodeError as error:
            raise SafetensorsError(f"{path}: the header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header is not a JSON object")
    return header, 8 + size


def read_safetensors_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``__metadata__`` strings of a safetensors file."""
    header, _ = _header(Path(path))
    return dict(header.get("__metadata__") or {})


def read_safetensors(path: str | os.PathLike[str], *, mmap: bool = True) -> dict[str, np.ndarray[Any, Any]]:
    """Every tensor of a safetensors file, by name, in file order.

    Args:
        path: the file.
        mmap: map the file (arrays are read-only views of it, read when used); ``False`` copies
            each tensor into a new writable array of its own.

    Raises:
        SafetensorsError: a malformed header, an unknown dtype, or offsets outside the file.
    """
    path = Path(path)
    header, start = _header(path)
    total = path.stat().st_size - start
    entries: list[tuple[str, np.dtype[Any], tuple[int, ...], int, int]] = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES[entry["dtype"]]
            shape = tuple(int(s) for s in entry["shape"])
            begin, end = (int(o) for o in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(
                f"{path}: entry {name!r} is malformed or of an unsupported dtype: {entry}"
            ) from None
        if end - begin != math.prod(shape) * dtype.itemsize or end > total or begin < 0:
            raise SafetensorsError(
                f"{path}: entry {name!r} ({entry['dtype']} {list(shape)}) has offsets [{begin}, {end}) "
                "that do "
                f"not fit its size or the file's {total} data bytes"
            )
        entries.append((name, dtype, shape, begin, end))
    if mmap and total > 0:
        buffer = np.memmap(path, dtype=np.uint8, mode="r", offset=start, shape=(total,))
        return {name: buffer[b:e].view(dtype).reshape(shape) for name, dtype, shape, b, e in entries}
    # Each tensor copied out of a mapping of the file into a new array of its own: one copy (from the
    # page cache, which on Linux is faster than ``read`` into the same memory), writable arrays freed
    # each on its own (no view keeps a whole file's buffer alive).
    if total == 0 or not entries:
        return {name: np.empty(shape, dtype=dtype) for name, dtype, shape, _, _ in entries}
    with open(path, "rb") as file:
        mapped = mapping.mmap(file.fileno(), 0, access=mapping.ACCESS_READ)
    try:
        if hasattr(mapping, "MADV_WILLNEED"):
            mapped.madvise(mapping.MADV_WILLNEED)
        data = np.frombuffer(mapped, dtype=np.uint8, count=total, offset=start)
        out = {name: np.array(data[b:e].view(dtype).reshape(shape)) for name, dtype, shape, b, e in entries}
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
