"""Damaged, truncated and hostile files raise ``RecordFileError`` (one documented type) with a message
naming what was found and what was expected, before anything large is allocated."""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgpack
import numpy as np
import pytest
import zstandard
from _record_support import (
    BINARY_RECORDERS,
    FILE_RECORDERS,
    forge,
    reforge,
    sample_record,
    sections,
    tensor_ext,
)

from burn_backend import TensorData
from burn_record import (
    BinFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkZstFileRecorder,
    PrettyJsonFileRecorder,
    RecordFileError,
    RecordLimits,
)
from burn_record._format import frame


@contextmanager
def allocates_at_most(limit: int) -> Iterator[None]:
    """Fail if the block's peak traced allocation (Python and NumPy) exceeds ``limit`` bytes."""
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= limit, f"allocated {peak} bytes"


def _raises(load: Callable[[], Any], match: str) -> RecordFileError:
    with allocates_at_most(2 << 20), pytest.raises(RecordFileError, match=match) as error:
        load()
    return error.value


@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_empty_and_foreign_data_are_refused(recorder_type, tmp_path) -> None:
    recorder = recorder_type()
    (tmp_path / "empty").write_bytes(b"")
    error = _raises(lambda: recorder.load(tmp_path / "empty"), "empty")
    assert error.source == tmp_path / "empty"
    assert str(error).startswith(f"load {tmp_path / 'empty'}: ")
    foreign = b"PK\x03\x04" + bytes(200)
    _raises(lambda: recorder.from_bytes(foreign), "not a burn-record|not valid JSON")


def test_a_file_of_another_format_names_both_formats() -> None:
    data = BinFileRecorder().to_bytes({"x": 1})
    _raises(
        lambda: NamedMpkFileRecorder().from_bytes(data),
        r"this is a 'bin' record \(written by burn-record 0\.1\.0\), expected 'named-mpk': load it with the "
        r"recorder that saved it",
    )
    json = PrettyJsonFileRecorder().to_bytes({"x": 1})
    _raises(lambda: NamedMpkZstFileRecorder().from_bytes(json), r"starts with b'\{\\n  \"mag'")
    _raises(lambda: PrettyJsonFileRecorder().from_bytes(data), "not valid JSON")


def test_a_newer_version_asks_for_an_upgrade() -> None:
    data = forge("named-mpk", {"x": 1}, header={"version": 2, "package_version": "0.9.0"})
    _raises(
        lambda: NamedMpkFileRecorder().from_bytes(data),
        r"format version 2 \(written by burn-record 0\.9\.0\); this burn-record 0\.1\.0 reads versions 1 "
        r"to 1: upgrade burn-record",
    )
    json = PrettyJsonFileRecorder().to_bytes({"x": 1}).replace(b'"version": 1', b'"version": 7')
    _raises(lambda: PrettyJsonFileRecorder().from_bytes(json), "format version 7")


@pytest.mark.parametrize(
    ("header", "match"),
    [
        ({"precision": "quarter"}, "unknown precision 'quarter'"),
        ({"float": "f16"}, "precision 'full' with float f16 and int i32, expected f32 and i32"),
        ({"compression": "zstd"}, "the header's 'compression' is 'zstd', expected 'none'"),
        ({"byteorder": "big"}, "expected 'little'"),
        ({"alignment": 8}, "alignment 8, expected 64"),
        ({"chunk": 10}, "chunk size 10"),
        ({"shuffle": 4}, "shuffle block 4, expected 0"),
        ({"version": "1"}, "the header's 'version' is '1', expected a int"),
        ({"format": ...}, "the header's 'format' is nothing, expected a str"),
    ],
)
def test_headers_are_checked_field_by_field(header, match) -> None:
    data = forge("named-mpk", {"x": 1}, header=header)
    _raises(lambda: NamedMpkFileRecorder().from_bytes(data), match)


@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_every_truncation_is_refused(recorder_type) -> None:
    data = recorder_type().to_bytes({"w": TensorData(np.arange(40, dtype=np.float32)), "n": [1, "a"]})
    for length in range(len(data.rstrip())):  # (a JSON document without its final newline is whole)
        with pytest.raises(RecordFileError):
            recorder_type().from_bytes(data[:length])
    with pytest.raises(RecordFileError):
        recorder_type().from_bytes(data + b"\x00")


@pytest.mark.parametrize("recorder_type", BINARY_RECORDERS, ids=lambda cls: cls.__name__)
def test_checksums_catch_a_flipped_bit_in_each_section(recorder_type) -> None:
    recorder = recorder_type()
    data = recorder.to_bytes({"w": TensorData(np.arange(64, dtype=np.float32)), "n": 5})
    header_len = int.from_bytes(data[8:12], "little")
    positions = {
        "header": 14,
        "the header's checksum": 12 + header_len + 1,
        "trailer's checksum": len(data) - 20,
        "structure": len(data) - 60,
        "tensor": 12 + header_len + 4 + 200,
    }
    for where, position in positions.items():
        flipped = bytearray(data)
        flipped[position] ^= 0x10
        with pytest.raises(RecordFileError):
            recorder.from_bytes(bytes(flipped))
        assert where
    flipped = bytearray(data)
    flipped[len(data) - 20] ^= 1
    _raises(lambda: recorder.from_bytes(bytes(flipped)), "the trailer's checksum does not match")


def test_a_flipped_tensor_bit_names_the_tensor() -> None:
    data = bytearray(NamedMpkFileRecorder().to_bytes({"a": {"w": TensorData(np.ones(64, np.float32))}}))
    data[data.index(np.ones(1, np.float32).tobytes()) + 8] ^= 0x01
    _raises(
        lambda: NamedMpkFileRecorder().from_bytes(bytes(data)),
        r"entry 'a.w': the checksum of its bytes does not match",
    )


@pytest.mark.parametrize("compressed", [False, True])
def test_a_two_to_the_forty_element_shape_is_refused_before_allocating(compressed) -> None:
    name = "named-mpk-zst" if compressed else "named-mpk"
    recorder = NamedMpkZstFileRecorder() if compressed else NamedMpkFileRecorder()
    size = 4 * 2**40
    prelude = 16 + int.from_bytes(forge(name, {}, compressed=compressed)[8:12], "little")
    offset = frame(0, size, 0 if compressed else prelude, 2**32 - 1).offset
    structure = {"w": tensor_ext("f32", [2**40], offset, size)}
    data = forge(name, structure, compressed=compressed)
    _raises(
        lambda: recorder.from_bytes(data),
        r"the tensors take \d+ bytes of the data section, the trailer says 0",
    )
    claimed = forge(name, structure, compressed=compressed, data_len=frame(0, size, 0, 2**32 - 1).end)
    match = "RecordLimits.max_tensor_bytes" if compressed else "stored and raw section sizes differ"
    _raises(lambda: recorder.from_bytes(claimed), match)
    small = RecordLimits(max_tensor_bytes=1 << 20)
    placement = frame(0, 4 << 20, 0, 2**32 - 1)
    big = forge(
        "named-mpk-zst", {"w": tensor_ext("f32", [1 << 20], placement.offset, 4 << 20)}, compressed=True,
        data_len=placement.end,
    )  # fmt: skip
    _raises(lambda: NamedMpkZstFileRecorder(limits=small).from_bytes(big), r"more than 1048576")


def test_deep_nesting_is_refused() -> None:
    deep = b"\x91" * 100_000 + b"\xc0"  # a list in a list ... 100,000 deep: msgpack's own stack limit
    _raises(
        lambda: NamedMpkFileRecorder().from_bytes(forge("named-mpk", None, raw_structure=deep)), "msgpack"
    )
    nested: Any = 1
    for _ in range(200):
        nested = [nested]
    data = forge("named-mpk", {"a": nested})
    _raises(lambda: NamedMpkFileRecorder().from_bytes(data), r"entry a\.0\.0.*nested deeper than 100 levels")
    shallow = RecordLimits(max_depth=3)
    _raises(
        lambda: NamedMpkFileRecorder(limits=shallow).from_bytes(forge("named-mpk", {"a": [[[[1]]]]})),
        "deeper",
    )
    json = b'{"magic": "burn-record", "record": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _raises(lambda: PrettyJsonFileRecorder().from_bytes(json), "not valid JSON")


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        (tensor_ext(5, [2], 71, 8), "entry 'w': dtype 5, expected one of"),  # type: ignore[arg-type]
        (tensor_ext("f32", "abc", 71, 8), "entry 'w': shape 'abc', expected a list of ints >= 0"),
        (tensor_ext("f32", [-2], 71, 8), "shape \\[-2\\]"),
        (tensor_ext("f32", [True], 71, 4), "shape \\[True\\]"),
        (tensor_ext("f32", [2], 71, 9), "size 9, expected 8 bytes for shape \\[2\\] of f32"),
        (tensor_ext("f32", [2], "x", 8), "offset 'x'"),  # type: ignore[arg-type]
        (tensor_ext("f32", [2], 71, 8, param_id=-1), "parameter id -1"),
        (tensor_ext("f32", [1] * 40, 71, 4), "40 dimensions, more than 32"),
        (msgpack.ExtType(1, b"\xc1"), "a tensor descriptor that is not msgpack"),
        (msgpack.ExtType(1, msgpack.packb({"dtype": "f32"})), "a tensor described by \\['dtype'\\]"),
        (msgpack.ExtType(9, b""), "the msgpack extension type 9, which no record holds"),
        (msgpack.Timestamp(1), "holds a Timestamp"),
        (msgpack.ExtType(3, b""), "an int of 0 bytes"),
        (tensor_ext("f32", [2], 1 << 40, 8), r"its bytes are at offset 1099511627776, expected \d+"),
    ],
)
def test_wrong_types_and_lengths_in_descriptors_are_named_by_path(entry, match) -> None:
    _raises(lambda: NamedMpkFileRecorder().from_bytes(forge("named-mpk", {"w": entry})), match)


def test_structures_that_are_not_records_are_refused() -> None:
    for structure, match in [
        ([1, 2], "the record is a list, expected a dict"),
        ({"a": {1: 2}}, "int is not allowed for map key"),
        ({b"k": 1}, "entry '<root>' has a bytes key"),
    ]:
        data = forge("named-mpk", None, raw_structure=msgpack.packb(structure, use_bin_type=True))
        _raises(lambda data=data: NamedMpkFileRecorder().from_bytes(data), match)
    past_end = msgpack.packb({"a": b""})[:-1] + b"\xc6\xff\xff\xff\xff"  # a bin claiming 4 GiB
    _raises(
        lambda: NamedMpkFileRecorder().from_bytes(forge("named-mpk", None, raw_structure=past_end)),
        "not a valid msgpack record",
    )


def test_limits_bound_entries_and_sizes() -> None:
    data = NamedMpkFileRecorder().to_bytes({"list": list(range(100))})
    _raises(
        lambda: NamedMpkFileRecorder(limits=RecordLimits(max_entries=50)).from_bytes(data), "max_entries|50"
    )
    _raises(
        lambda: NamedMpkFileRecorder(limits=RecordLimits(max_structure_bytes=10)).from_bytes(data),
        r"a structure of \d+ bytes, more than 10",
    )
    json = PrettyJsonFileRecorder().to_bytes({"list": list(range(100))})
    _raises(
        lambda: PrettyJsonFileRecorder(limits=RecordLimits(max_structure_bytes=10)).from_bytes(json),
        "more than 10",
    )
    with pytest.raises(TypeError, match="limits must be RecordLimits"):
        NamedMpkFileRecorder(limits=5)  # type: ignore[arg-type]


def test_tampered_framing_and_bool_bytes_are_refused() -> None:
    data = NamedMpkFileRecorder().to_bytes({"b": TensorData(np.array([True, False]))})
    start = 12 + int.from_bytes(data[8:12], "little") + 4  # the data section
    tampered = bytearray(data)
    tampered[start + 3] = 1  # a padding byte, which must be zero
    _raises(lambda: NamedMpkFileRecorder().from_bytes(bytes(tampered)), "the framing of its bytes is damaged")

    _, section, raw = sections(data)
    structure = msgpack.unpackb(raw, strict_map_key=False)
    descriptor = msgpack.unpackb(structure["b"].data)
    payload = bytearray(section)
    payload[descriptor["offset"]] = 2  # a bool stored as 2, with every checksum made to match
    descriptor["crc32"] = zlib.crc32(bytes(payload[descriptor["offset"] : descriptor["offset"] + 2]))
    structure["b"] = msgpack.ExtType(1, msgpack.packb(descriptor))
    rebuilt = reforge(data, lambda _: structure, data=bytes(payload))
    _raises(
        lambda: NamedMpkFileRecorder().from_bytes(rebuilt), "a bool tensor holds bytes other than 0 and 1"
    )


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.replace(b'"magic": "burn-record"', b'"magic": "other"'), "its magic is 'other'"),
        (lambda d: d.replace(b'"precision": "full"', b'"precision": "fast"'), "precision 'fast'"),
        (lambda d: d.replace(b"[0.0, 1.0]", b"[0.0, 2.0]"), "the record's checksum does not match"),
        (lambda d: d.replace(b'"crc32": ', b'"crc32": "x", "_": '), "no int 'crc32'"),
        (lambda d: b"\xff" + d, "not valid JSON"),
        (lambda d: d.replace(b'"n": 3', b'"n": ' + b"9" * 5000), "not valid JSON"),
    ],
)
def test_json_documents_are_checked(edit, match) -> None:
    data = PrettyJsonFileRecorder().to_bytes({"w": TensorData([0.0, 1.0]), "n": 3})
    _raises(lambda: PrettyJsonFileRecorder().from_bytes(edit(data)), match)


@pytest.mark.parametrize(
    ("tensor", "match"),
    [
        ({"dtype": "f32", "shape": [2**40], "values": [1.0]}, r"1 values for shape \[1099511627776\]"),
        ({"dtype": "f32", "shape": [2], "values": "ab"}, "2 values|str values"),
        ({"dtype": "f32", "shape": [1], "values": ["one"]}, "values that are not all floats"),
        ({"dtype": "i32", "shape": [1], "values": [2**40]}, "values out of the range of i32"),
        ({"dtype": "f16", "shape": [1], "values": [1e6]}, "values out of the range of f16"),
        ({"dtype": "q8", "shape": [1], "values": [1]}, "dtype 'q8'"),
        ({"dtype": "f32", "shape": [1]}, "a tensor needs exactly the fields"),
    ],
)
def test_hostile_json_tensors_are_refused_before_allocating(tensor, match) -> None:
    import json
    import zlib

    body = {"w": {"$tensor": tensor}}
    canonical = json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode()
    document = {
        "magic": "burn-record",
        "format": "pretty-json",
        "version": 1,
        "precision": "full",
        "float": "f32",
        "int": "i32",
        "crc32": zlib.crc32(canonical),
        "record": body,
    }
    _raises(lambda: PrettyJsonFileRecorder().from_bytes(json.dumps(document).encode()), match)


def test_a_failed_load_of_the_sample_record_returns_nothing() -> None:
    data = NamedMpkZstFileRecorder().to_bytes(sample_record())
    with pytest.raises(RecordFileError, match=r"does not decompress|checksum"):
        NamedMpkZstFileRecorder().from_bytes(data[:200] + bytes([data[200] ^ 0x40]) + data[201:])


def test_a_small_file_of_many_empty_lists_stops_at_the_entry_limit() -> None:
    """Empty containers cost memory far beyond their one byte each: they are counted as they are
    decoded, and decoding stops at ``max_entries``."""
    many = msgpack.packb({"a": [[[] for _ in range(5000)] for _ in range(100)]})  # 500,000 empty lists
    bomb = forge("named-mpk-zst", None, raw_structure=many, compressed=True)
    assert len(bomb) < 10_000
    limits = RecordLimits(max_entries=10_000)
    _raises(lambda: NamedMpkZstFileRecorder(limits=limits).from_bytes(bomb), r"more than 10000 values")
    json = b'{"magic": "burn-record", "record": [' + b"[]," * 20_000 + b"[]]}"
    _raises(
        lambda: PrettyJsonFileRecorder(limits=limits).from_bytes(json), "more than 10000 lists and objects"
    )


def test_a_zstandard_bomb_is_refused_by_the_default_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from burn_record import _errors

    zeros = {"w": TensorData(np.zeros(4 << 20, np.float32))}  # 16 MiB of zeros: a few KB compressed
    bomb = NamedMpkZstFileRecorder().to_bytes(zeros)
    assert len(bomb) < 16 << 10
    monkeypatch.delenv("BURN_RECORD_MAX_TENSOR_BYTES", raising=False)
    monkeypatch.setattr(_errors, "DECOMPRESSED_DEFAULT", 8 << 20)  # the 2 GiB default, scaled down
    _raises(
        lambda: NamedMpkZstFileRecorder().from_bytes(bomb),
        r"16777\d+ bytes of tensor data, more than 8388608 .*BURN_RECORD_MAX_TENSOR_BYTES",
    )
    monkeypatch.setenv("BURN_RECORD_MAX_TENSOR_BYTES", str(32 << 20))  # the documented override
    assert not NamedMpkZstFileRecorder().from_bytes(bomb)["w"].to_numpy().any()
    monkeypatch.setenv("BURN_RECORD_MAX_TENSOR_BYTES", "lots")
    with pytest.raises(ValueError, match="BURN_RECORD_MAX_TENSOR_BYTES='lots'"):
        NamedMpkZstFileRecorder().from_bytes(bomb)
    monkeypatch.delenv("BURN_RECORD_MAX_TENSOR_BYTES")
    roomy = RecordLimits(max_tensor_bytes=32 << 20)  # the argument overrides both
    assert NamedMpkZstFileRecorder(limits=roomy).from_bytes(bomb)["w"].to_numpy().shape == (4 << 20,)
    # uncompressed data is what the file holds: no default limit applies to it
    plain = NamedMpkFileRecorder().to_bytes(zeros)
    assert NamedMpkFileRecorder().from_bytes(plain)["w"].to_numpy().shape == (4 << 20,)


def test_the_default_decompression_limit_is_two_gib_or_half_the_memory() -> None:
    from burn_record import _errors

    assert RecordLimits().tensor_bytes(compressed=True) == min(2 << 30, _errors._physical_memory() // 2)
    assert RecordLimits().tensor_bytes(compressed=False) is None


def test_a_frame_declaring_another_size_than_the_trailer_is_refused_before_allocating() -> None:
    data = NamedMpkZstFileRecorder().to_bytes({"w": TensorData(np.ones(1000, np.float32))})
    header, raw, structure = sections(data)
    lying = zstandard.ZstdCompressor().compress(raw + bytes(1 << 20))  # declares 1 MiB more
    hostile = forge(header["format"], None, header=header, raw_structure=structure, compressed=True)
    prelude = hostile[: 16 + int.from_bytes(hostile[8:12], "little")]
    stored_structure = zstandard.ZstdCompressor().compress(structure)
    from burn_record._format import Trailer

    trailer = Trailer(len(raw), len(lying), len(structure), len(stored_structure), zlib.crc32(structure))
    _raises(
        lambda: NamedMpkZstFileRecorder().from_bytes(prelude + lying + stored_structure + trailer.pack()),
        rf"frame declares {len(raw) + (1 << 20)} bytes, the trailer says {len(raw)}",
    )
