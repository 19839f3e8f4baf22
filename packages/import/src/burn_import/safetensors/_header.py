"""A safetensors file's header, read and validated as the reference ``safetensors`` package does.

What it refuses (each with a ``SafetensorsError`` naming the file and the entry): a file under 8
bytes; a header length over the limit or past the end of the file; a header that is not UTF-8, not
JSON, not an object, nested deeper than 127 levels, or uses ``NaN``/``Infinity`` or unpaired
surrogates; duplicate keys (the reference keeps the last of a tensor's duplicates, and so refuses
them unless they are identical: we refuse them all); ``__metadata__`` other than null or an object of
strings; an entry that is not an object with a known ``dtype``, a ``shape`` of non-negative integers
and ``data_offsets`` of exactly two non-negative integers; offsets that, sorted, do not tile the data
exactly from its first byte to the file's last (gaps, overlaps, reversed pairs, trailing bytes, past
the end); and offsets whose span is not ``shape`` times the dtype's size. Fields other than these
three are ignored, as by the reference.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["DEFAULT_MAX_HEADER_BYTES", "DTYPES", "Entry", "Header", "SafetensorsError", "read_header"]

DTYPES: dict[str, np.dtype[Any]] = {
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
DEFAULT_MAX_HEADER_BYTES = 100_000_000  # the reference's limit
_MAX_NESTING = 127  # the reference's JSON parser refuses a 128th level
_MAX_U64 = 2**64 - 1
_MAX_DIMS = 64  # NumPy's
_MAX_DIM = 2**63 - 1  # NumPy's


class SafetensorsError(ValueError):
    """A file is not valid safetensors (the message says what is wrong and where)."""


@dataclass(frozen=True)
class Entry:
    """A tensor of the header: its name, dtype, shape and byte range in the data."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class Header:
    """A validated header: the tensors in header order, the metadata, and where the data starts."""

    entries: list[Entry]
    metadata: dict[str, str]
    data_start: int


class _Refused(Exception):
    """A header refused while parsing (turned into a ``SafetensorsError`` with the file's name)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"the key {key[:80]!r} appears twice in one object")
        for text in (key, value):
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise _Refused(f"a string of key {key[:80]!r} holds an unpaired surrogate") from None
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON")


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= _MAX_NESTING:
                stack.extend(
                    (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
                )
    return deepest


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _MAX_U64


def read_header(path: Path, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> Header:
    """The validated header of the safetensors file at ``path`` (see the module docstring).

    Raises:
        SafetensorsError: what is wrong, and where.
    """
    with open(path, "rb") as file:
        file_size = path.stat().st_size
        raw = file.read(8)
        if len(raw) != 8:
            raise SafetensorsError(f"{path}: {len(raw)} bytes, too short to be a safetensors file")
        (size,) = struct.unpack("<Q", raw)
        if size > max_header_bytes:
            raise SafetensorsError(
                f"{path}: a header of {size} bytes exceeds the limit of {max_header_bytes} (max_header_bytes)"
            )
        if 8 + size > file_size:
            raise SafetensorsError(
                f"{path}: a header of {size} bytes, past the end of the {file_size}-byte file"
            )
        text = file.read(size)
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant)
    except UnicodeDecodeError as error:
        raise SafetensorsError(f"{path}: the header is not UTF-8 ({error})") from None
    except json.JSONDecodeError as error:
        raise SafetensorsError(f"{path}: the header is not JSON ({error})") from None
    except RecursionError:
        raise SafetensorsError(f"{path}: the header nests deeper than {_MAX_NESTING} levels") from None
    except _Refused as error:
        raise SafetensorsError(f"{path}: the header is refused: {error}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header is a JSON {type(header).__name__}, not an object")
    if _depth(header) > _MAX_NESTING:
        raise SafetensorsError(f"{path}: the header nests deeper than {_MAX_NESTING} levels")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(value, str) for value in metadata.values())
    ):
        raise SafetensorsError(f"{path}: __metadata__ must be an object of strings")
    entries = [_entry(path, name, value) for name, value in header.items()]
    _check_offsets(path, entries, file_size - 8 - size)
    return Header(entries, dict(metadata or {}), 8 + size)


def _entry(path: Path, name: str, value: Any) -> Entry:
    where = f"{path}: entry {name[:80]!r}"
    if not isinstance(value, dict):
        raise SafetensorsError(f"{where} is a JSON {type(value).__name__}, not an object")
    for field in ("dtype", "shape", "data_offsets"):
        if field not in value:
            raise SafetensorsError(f"{where} has no {field!r}")
    dtype, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        known = ", ".join(DTYPES)
        raise SafetensorsError(f"{where}: dtype {str(dtype)[:40]!r} is not one this reader knows ({known})")
    if not (isinstance(shape, list) and all(_count(n) for n in shape)):
        raise SafetensorsError(
            f"{where}: shape must be a list of non-negative integers, got {str(shape)[:80]}"
        )
    # NumPy's limits, which the reference's NumPy loading meets too (a zero-sized shape included)
    if len(shape) > _MAX_DIMS or math.prod(n for n in shape if n) * DTYPES[dtype].itemsize > _MAX_DIM:
        raise SafetensorsError(
            f"{where}: shape {shape} has more than {_MAX_DIMS} dimensions or sizes whose product (zeros "
            f"left out) exceeds NumPy's largest array, {_MAX_DIM} bytes"
        )
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_count(n) for n in offsets)):
        raise SafetensorsError(
            f"{where}: data_offsets must be two non-negative integers, got {str(offsets)[:80]}"
        )
    return Entry(name, DTYPES[dtype], tuple(shape), offsets[0], offsets[1])


def _check_offsets(path: Path, entries: list[Entry], data_size: int) -> None:
    """The entries, sorted by offsets, must tile the data exactly, each the size its shape says."""
    position = 0
    for entry in sorted(entries, key=lambda e: (e.begin, e.end)):
        where = f"{path}: entry {entry.name[:80]!r} ({_name(entry.dtype)} {list(entry.shape)})"
        if entry.begin != position or entry.end < entry.begin:
            raise SafetensorsError(
                f"{where} has data_offsets [{entry.begin}, {entry.end}], expected to start at {position} "
                "(the tensors' byte ranges must follow one another without gaps or overlaps)"
            )
        nbytes = math.prod(entry.shape) * entry.dtype.itemsize
        if entry.end - entry.begin != nbytes:
            raise SafetensorsError(
                f"{where} spans {entry.end - entry.begin} bytes, its shape and dtype make {nbytes}"
            )
        position = entry.end
    if position != data_size:
        raise SafetensorsError(
            f"{path}: the tensors' data_offsets cover {position} bytes of data, the file holds {data_size} "
            f"({'past its end' if position > data_size else 'bytes no tensor covers'})"
        )


def _name(dtype: np.dtype[Any]) -> str:
    return next(name for name, known in DTYPES.items() if known == dtype)
