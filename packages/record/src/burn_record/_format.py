"""The binary container shared by the msgpack recorders: constants, the header, the trailer, tensor
descriptors and the layout of the data section (the package README has the specification).

A file is ``prelude | data section | structure section | trailer``:

- prelude: the magic number, the header's length (u32 LE), the header (a msgpack map) and its CRC-32;
- data section: for each tensor, in record order, a padding ``bin 8`` of zeros that puts the tensor's
  first byte on a 64-byte boundary of the file, then its bytes as ``bin 32`` (split in ``chunk``-sized
  ``bin 32`` pieces past 4 GiB); zstandard-compressed as one frame in the compressed format, each
  tensor's bytes byte-shuffled in blocks first;
- structure section: the record's tree as one msgpack value, tensors as extension values that describe
  them (dtype, shape, offset, size, CRC-32); its own zstandard frame in the compressed format;
- trailer: the sections' sizes, the structure's CRC-32, the trailer's own CRC-32 and an end magic.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import msgpack

from burn_backend import DType

from ._errors import RecordFileError, RecordLimits
from ._precision import PrecisionSettings, settings_named
from ._tree import BigInt, InvalidEntry, TensorDescriptor
from ._version import __version__

__all__ = [
    "ALIGNMENT",
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_CHUNK",
    "PRELUDE",
    "SHUFFLE_BLOCK",
    "TRAILER",
    "Format",
    "Frame",
    "Header",
    "Trailer",
    "decode_header",
    "encode_descriptor",
    "encode_header",
    "ext_hook",
    "frame",
]

MAGIC = b"\x89BURN\r\n\x1a"
"""The first 8 bytes of every binary record file (a non-ASCII byte, the name, and line endings that a
text-mode transfer would change, as PNG's)."""
END_MAGIC = b"BURN-END"
FORMAT_VERSION = 1
"""The format version this package writes; it reads every version from 1 to this one."""
ALIGNMENT = 64
SHUFFLE_BLOCK = 1 << 16
MAX_CHUNK = (1 << 32) - 1
MAX_HEADER = 1 << 16
PRELUDE = struct.Struct("<8sI")
TRAILER = struct.Struct("<QQQQII8s")
EXT_TENSOR, EXT_PARAM, EXT_BIGINT = 1, 2, 3
_DTYPES = {dtype.value: dtype for dtype in DType}
_FIELDS = ("dtype", "shape", "offset", "size", "crc32")


@dataclass(frozen=True)
class Format:
    """One binary format: its header name, whether descriptors carry field names, whether it is
    compressed, and the extension its files get."""

    name: str
    named: bool
    compressed: bool
    extension: str


@dataclass(frozen=True)
class Header:
    """A checked header: the precision the file was saved with and its layout settings."""

    version: int
    settings: PrecisionSettings
    shuffle: int
    chunk: int
    writer: str


@dataclass(frozen=True)
class Trailer:
    """The sizes of the sections (raw and as stored) and the structure's checksum."""

    data_len: int
    data_stored: int
    structure_len: int
    structure_stored: int
    structure_crc32: int

    def pack(self) -> bytes:
        """The trailer's 48 bytes, its own checksum included."""
        fields = (self.data_len, self.data_stored, self.structure_len, self.structure_stored)
        body = struct.pack("<QQQQI", *fields, self.structure_crc32)
        return body + struct.pack("<I", zlib.crc32(body)) + END_MAGIC

    @staticmethod
    def unpack(raw: bytes, source: Any) -> Trailer:
        """The trailer in the last 48 bytes of a file, checked.

        Raises:
            RecordFileError: no end magic (a truncated or torn file) or a checksum mismatch.
        """
        data_len, data_stored, structure_len, structure_stored, crc, own, end = TRAILER.unpack(raw)
        if end != END_MAGIC:
            raise RecordFileError(
                f"the file ends with {end!r}, expected {END_MAGIC!r}: "
                "it is truncated or was not written whole",
                source,
            )
        if zlib.crc32(raw[:36]) != own:
            raise RecordFileError("the trailer's checksum does not match: the file is damaged", source)
        return Trailer(data_len, data_stored, structure_len, structure_stored, crc)


@dataclass(frozen=True)
class Frame:
    """Where one tensor lies in the data section: the padding before it, the offset of its first byte,
    the end of its last byte, and how many ``bin 32`` pieces hold it."""

    start: int
    pad: int
    offset: int
    end: int
    chunks: int


def frame(position: int, size: int, base: int, chunk: int) -> Frame:
    """The frame of a tensor of ``size`` bytes written at ``position`` of a data section that starts at
    ``base`` in its buffer (so that ``base + offset`` is a multiple of the alignment)."""
    pad = (-(base + position + 2 + 5)) % ALIGNMENT
    offset = position + 2 + pad + 5
    chunks = max(1, math.ceil(size / chunk))
    return Frame(position, pad, offset, offset + size + 5 * (chunks - 1), chunks)


def encode_header(fmt: Format, settings: PrecisionSettings, shuffle: int, chunk: int) -> bytes:
    """The prelude: magic, length, header map, header checksum."""
    header: bytes = msgpack.packb(
        {
            "format": fmt.name,
            "version": FORMAT_VERSION,
            "package": "burn-record",
            "package_version": __version__,
            "precision": settings.name,
            "float": settings.float_dtype.value,
            "int": settings.int_dtype.value,
            "compression": "zstd" if fmt.compressed else "none",
            "shuffle": shuffle,
            "chunk": chunk,
            "alignment": ALIGNMENT,
            "byteorder": "little",
        }
    )
    return PRELUDE.pack(MAGIC, len(header)) + header + struct.pack("<I", zlib.crc32(header))


def _field(header: dict[str, Any], name: str, kind: type, source: Any) -> Any:
    value = header.get(name)
    if type(value) is not kind:
        found = "nothing" if value is None else f"{value!r}"
        raise RecordFileError(f"the header's {name!r} is {found}, expected a {kind.__name__}", source)
    return value


def decode_header(raw: bytes, fmt: Format, source: Any) -> Header:
    """Check a header (the msgpack map after the magic and length) against ``fmt``.

    Raises:
        RecordFileError: the header is not a map of the expected fields, names another format, a
            version newer than this package reads, or unknown precision or layout settings.
    """
    try:
        header = msgpack.unpackb(raw, strict_map_key=True)
    except Exception as error:  # msgpack raises several types on malformed input
        raise RecordFileError(f"the header is not a msgpack map ({error})", source) from None
    if not isinstance(header, dict):
        raise RecordFileError(f"the header is a {type(header).__name__}, expected a map", source)
    name = _field(header, "format", str, source)
    version = _field(header, "version", int, source)
    writer = f"{header.get('package', '?')} {header.get('package_version', '?')}"
    if name != fmt.name:
        raise RecordFileError(
            f"this is a {name!r} record (written by {writer}), expected {fmt.name!r}: load it with the "
            "recorder that saved it; formats are not interchangeable",
            source,
        )
    if not 1 <= version <= FORMAT_VERSION:
        raise RecordFileError(
            f"format version {version} (written by {writer}); this burn-record {__version__} reads "
            f"versions 1 to {FORMAT_VERSION}: upgrade burn-record to read it",
            source,
        )
    precision = _field(header, "precision", str, source)
    settings = settings_named(precision)
    if settings is None:
        raise RecordFileError(f"unknown precision {precision!r}, expected full, half or double", source)
    stored = (_field(header, "float", str, source), _field(header, "int", str, source))
    if stored != (settings.float_dtype.value, settings.int_dtype.value):
        raise RecordFileError(
            f"precision {precision!r} with float {stored[0]} and int {stored[1]}, expected "
            f"{settings.float_dtype} and {settings.int_dtype}",
            source,
        )
    expected = {"compression": "zstd" if fmt.compressed else "none", "byteorder": "little"}
    for key, value in expected.items():
        found = _field(header, key, str, source)
        if found != value:
            raise RecordFileError(f"the header's {key!r} is {found!r}, expected {value!r}", source)
    if _field(header, "alignment", int, source) != ALIGNMENT:
        raise RecordFileError(f"alignment {header['alignment']}, expected {ALIGNMENT}", source)
    shuffle = _field(header, "shuffle", int, source)
    if shuffle != (SHUFFLE_BLOCK if fmt.compressed else 0):
        raise RecordFileError(
            f"shuffle block {shuffle}, expected {SHUFFLE_BLOCK if fmt.compressed else 0}", source
        )
    chunk = _field(header, "chunk", int, source)
    if not 1024 <= chunk <= MAX_CHUNK:
        raise RecordFileError(f"chunk size {chunk}, expected 1024 to {MAX_CHUNK}", source)
    return Header(version, settings, shuffle, chunk, writer)


def encode_descriptor(
    named: bool, dtype: DType, shape: tuple[int, ...], offset: int, size: int, crc: int, param_id: int | None
) -> msgpack.ExtType:
    """The extension value describing one tensor (with field names or positional)."""
    values: list[Any] = [dtype.value, list(shape), offset, size, crc]
    if named:
        payload: Any = dict(zip(_FIELDS, values))
        if param_id is not None:
            payload = {"id": param_id, **payload}
    else:
        payload = values if param_id is None else [param_id, *values]
    return msgpack.ExtType(EXT_TENSOR if param_id is None else EXT_PARAM, msgpack.packb(payload))


def encode_default(value: Any) -> Any:
    """msgpack's ``default`` for skeleton values other than tensors: big ints."""
    if isinstance(value, BigInt):
        length = (value.value.bit_length() + 8) // 8
        return msgpack.ExtType(EXT_BIGINT, value.value.to_bytes(length, "big", signed=True))
    raise TypeError(f"cannot encode {type(value).__name__}")  # pragma: no cover (flatten checked)


def _is_int(value: Any) -> bool:
    return type(value) is int


def _descriptor(
    code: int, payload: Any, named: bool, limits: RecordLimits
) -> TensorDescriptor | InvalidEntry:
    param = code == EXT_PARAM
    if named:
        keys = (("id",) if param else ()) + _FIELDS
        if not isinstance(payload, dict) or set(payload) != set(keys):
            found = sorted(map(str, payload)) if isinstance(payload, dict) else type(payload).__name__
            return InvalidEntry(f"a tensor described by {found}, expected the fields {list(keys)}")
        values = [payload[key] for key in keys]
    else:
        count = 6 if param else 5
        if not isinstance(payload, list) or len(payload) != count:
            return InvalidEntry(f"a tensor described by {payload!r:.60}, expected a list of {count} values")
        values = payload
    param_id = values.pop(0) if param else None
    dtype_name, shape, offset, size, crc = values
    dtype = _DTYPES.get(dtype_name) if isinstance(dtype_name, str) else None
    if dtype is None:
        return InvalidEntry(f"dtype {dtype_name!r:.40}, expected one of {list(_DTYPES)}")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        return InvalidEntry(f"shape {shape!r:.60}, expected a list of ints >= 0")
    if len(shape) > limits.max_rank:
        return InvalidEntry(f"{len(shape)} dimensions, more than {limits.max_rank} (RecordLimits.max_rank)")
    expected = math.prod(shape) * dtype.size
    if not (_is_int(size) and size == expected):
        return InvalidEntry(f"size {size!r:.40}, expected {expected} bytes for shape {shape} of {dtype}")
    if not (_is_int(offset) and offset >= 0 and _is_int(crc) and 0 <= crc < 1 << 32):
        return InvalidEntry(f"offset {offset!r:.40} and checksum {crc!r:.40}, expected ints >= 0")
    if param_id is not None and not (_is_int(param_id) and 0 <= param_id < 1 << 64):
        return InvalidEntry(f"parameter id {param_id!r:.40}, expected an int from 0 to 2^64 - 1")
    return TensorDescriptor(dtype, tuple(shape), offset, size, crc, param_id)


def ext_hook(named: bool, limits: RecordLimits) -> Any:
    """msgpack's ``ext_hook`` for structures: tensors and parameters to ``TensorDescriptor``s (or
    ``InvalidEntry`` for ``rebuild`` to report with the path), big ints to ints."""

    def hook(code: int, data: bytes) -> Any:
        if code == EXT_BIGINT:
            if not 1 <= len(data) <= 4096:
                return InvalidEntry(f"an int of {len(data)} bytes, expected 1 to 4096")
            return int.from_bytes(data, "big", signed=True)
        if code not in (EXT_TENSOR, EXT_PARAM):
            return InvalidEntry(f"the msgpack extension type {code}, which no record holds")
        try:
            payload = msgpack.unpackb(data, strict_map_key=True)
        except Exception as error:  # msgpack raises several types on malformed input
            return InvalidEntry(f"a tensor descriptor that is not msgpack ({error})")
        return _descriptor(code, payload, named, limits)

    return hook
