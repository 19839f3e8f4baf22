"""Shared helpers of burn_record's tests (imported by path, see conftest.py): a record holding every
kind of value, deep comparison of records, and ``forge``, which builds container files from raw
sections with valid checksums (so that tests reach the checks behind the checksums)."""

from __future__ import annotations

import enum
import math
import struct
import zlib
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
import zstandard

from burn_backend import DType, ParamId, ParamRecord, TensorData
from burn_record import (
    BinFileRecorder,
    FileRecorder,
    NamedMpkFileRecorder,
    NamedMpkZstFileRecorder,
    PrettyJsonFileRecorder,
)
from burn_record._format import MAGIC, SHUFFLE_BLOCK, Trailer

FILE_RECORDERS: list[type[FileRecorder]] = [
    NamedMpkFileRecorder,
    NamedMpkZstFileRecorder,
    BinFileRecorder,
    PrettyJsonFileRecorder,
]
BINARY_RECORDERS: list[type[FileRecorder]] = [NamedMpkFileRecorder, NamedMpkZstFileRecorder, BinFileRecorder]


class Color(enum.IntEnum):
    RED = 1


def sample_record() -> dict[str, Any]:
    """A small record with every kind of value a record holds (in full precision's dtypes)."""
    rng = np.random.default_rng(7)
    return {
        "model": {
            "linear": {
                "weight": ParamRecord(ParamId(11), TensorData(rng.normal(size=(3, 4)).astype(np.float32))),
                "bias": ParamRecord(
                    ParamId(2**63 - 1), TensorData(np.array([0.5, -1.5, 2.0, 0.0], np.float32))
                ),
            },
            "layers": [
                {"weight": ParamRecord(ParamId(3), TensorData(rng.normal(size=(2, 2)).astype(np.float32)))},
                None,
            ],
            "steps": TensorData(np.array([[1, -2], [3, 4]], np.int32)),
            "mask": TensorData(np.array([True, False, True])),
            "bytes_u8": TensorData(np.arange(5, dtype=np.uint8)),
            "scalar": TensorData(np.float32(2.5)),
            "empty": TensorData(np.zeros((0, 3), np.float32)),
        },
        "optimizer": {"17": {"moment": TensorData(np.array([1e-8, -3.0], np.float32)), "time": 4}},
        "scheduler": {"step": 12, "lr": 1e-3},
        "rng": {"bit_generator": "PCG64", "state": {"state": 2**127 + 5, "inc": 2**100 + 1}},
        "plain": [0, -1, 2**64 - 1, -(2**63), 2**80, -(2**90), 1.5, -0.0, math.inf, -math.inf, math.nan],
        "text": ["", "héllo ✓", "$tensor"],
        "misc": {"none": None, "yes": True, "no": False, "blob": b"\x00\xff", "$tensor": {"$$x": 1}},
    }


def equal(a: Any, b: Any) -> bool:
    """Deep equality of records: same structure, types, dtypes and bytes (NaNs equal)."""
    if isinstance(a, TensorData):
        return (
            isinstance(b, TensorData)
            and a.dtype is b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a.to_numpy(), b.to_numpy(), equal_nan=a.dtype.is_float))
        )
    if isinstance(a, ParamRecord):
        return isinstance(b, ParamRecord) and a.id == b.id and equal(a.value, b.value)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (
            type(b) is float
            and (a == b or (math.isnan(a) and math.isnan(b)))
            and math.copysign(1, a) == math.copysign(1, b)
        )
    return type(a) is type(b) and a == b


def forge(
    fmt_name: str,
    structure: Any,
    data: bytes = b"",
    *,
    header: dict[str, Any] | None = None,
    compressed: bool = False,
    raw_structure: bytes | None = None,
    data_len: int | None = None,
    structure_len: int | None = None,
) -> bytes:
    """A container file from raw sections, every checksum valid: ``structure`` is packed with msgpack
    (or ``raw_structure`` taken as it is), ``data`` is the data section (raw; compressed here when
    ``compressed``). ``data_len``/``structure_len`` override the trailer's raw sizes (hostile claims)."""
    fields = {
        "format": fmt_name,
        "version": 1,
        "package": "burn-record",
        "package_version": "0.1.0",
        "precision": "full",
        "float": "f32",
        "int": "i32",
        "compression": "zstd" if compressed else "none",
        "shuffle": SHUFFLE_BLOCK if compressed else 0,
        "chunk": 2**32 - 1,
        "alignment": 64,
        "byteorder": "little",
    }
    fields.update(header or {})
    fields = {key: value for key, value in fields.items() if value is not ...}
    head = msgpack.packb(fields)
    prelude = MAGIC + struct.pack("<I", len(head)) + head + struct.pack("<I", zlib.crc32(head))
    body = raw_structure if raw_structure is not None else msgpack.packb(structure, use_bin_type=True)
    stored_data, stored_body = data, body
    if compressed:
        stored_data = zstandard.ZstdCompressor().compress(data)
        stored_body = zstandard.ZstdCompressor().compress(body)
    trailer = Trailer(
        len(data) if data_len is None else data_len,
        len(stored_data),
        len(body) if structure_len is None else structure_len,
        len(stored_body),
        zlib.crc32(body),
    )
    return prelude + stored_data + stored_body + trailer.pack()


def tensor_ext(
    dtype: str, shape: list[Any], offset: int, size: int, crc: int = 0, *, param_id: int | None = None
) -> msgpack.ExtType:
    """A named tensor descriptor as the writer makes it (values unchecked, for forging)."""
    payload: dict[str, Any] = {"dtype": dtype, "shape": shape, "offset": offset, "size": size, "crc32": crc}
    if param_id is not None:
        payload = {"id": param_id, **payload}
    return msgpack.ExtType(1 if param_id is None else 2, msgpack.packb(payload))


def converted(value: TensorData, settings: Any) -> TensorData:
    """``value`` as NumPy converts it to the dtype ``settings`` store it in (the reference)."""
    target: DType = settings.stored_dtype(value.dtype)
    return TensorData.from_numpy(value.to_numpy().astype(target.numpy))


def sections(file: bytes) -> tuple[dict[str, Any], bytes, bytes]:
    """The header, the raw data section and the raw structure section of a container file."""
    (length,) = struct.unpack("<I", file[8:12])
    header = msgpack.unpackb(file[12 : 12 + length])
    start = 16 + length
    trailer = file[-48:]
    data_stored, structure_stored = (
        struct.unpack("<Q", trailer[8:16])[0],
        struct.unpack("<Q", trailer[24:32])[0],
    )
    data = file[start : start + data_stored]
    structure = file[start + data_stored : start + data_stored + structure_stored]
    if header["compression"] == "zstd":
        data = zstandard.ZstdDecompressor().decompress(data) if data else b""
        structure = zstandard.ZstdDecompressor().decompress(structure)
    return header, data, structure


def reforge(file: bytes, structure: Callable[[Any], Any] | None = None, **overrides: Any) -> bytes:
    """``file`` rebuilt with valid checksums after changing its structure (decoded with extension values
    as ``msgpack.ExtType``) or any argument of ``forge``."""
    header, data, raw = sections(file)
    tree = msgpack.unpackb(raw, strict_map_key=False)
    arguments: dict[str, Any] = {
        "data": data,
        "compressed": header["compression"] == "zstd",
        "header": header,
    }
    if structure is not None:
        tree = structure(tree)
    else:
        arguments["raw_structure"] = raw
    arguments.update(overrides)
    return forge(header["format"], tree, **arguments)
