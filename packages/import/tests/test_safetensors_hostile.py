"""Malformed and hostile safetensors files: each is built here, and the reader must refuse what the
reference ``safetensors`` package refuses (with ``SafetensorsError``), accept what it accepts, and never
raise anything else, recurse out of stack or allocate what a header merely declares."""

from __future__ import annotations

import json
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_import.safetensors import (
    SafetensorsError,
    SafetensorsFileRecorder,
    read_safetensors,
    read_safetensors_metadata,
    write_safetensors,
)

st_numpy = pytest.importorskip("safetensors.numpy")

_F4 = b"\x00\x00\x80\x3f"  # 1.0 as float32


def _tensor(begin: int, end: int, shape: Any = (1,), dtype: Any = "F32") -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end]}


def _file(header: Any, data: bytes = b"", raw: bytes | None = None) -> bytes:
    text = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


_A = b'"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'

# (case, file bytes): the reference package refuses every one of them
_REFUSED = [
    ("shorter than the length field", b"\x01\x00\x00"),
    ("header length past the file", struct.pack("<Q", 100) + b"{}"),
    ("header length over the limit", struct.pack("<Q", 2**40) + b"{}"),
    ("empty header", _file(None, raw=b"")),
    ("header not JSON", _file(None, raw=b"{nope")),
    ("header not an object", _file([1, 2])),
    ("header a string", _file(None, raw=b'"a"')),
    ("header not UTF-8", _file(None, raw=b'{"\xff":1}')),
    ("header in UTF-16", _file(None, raw="{}".encode("utf-16-le"))),
    ("header with a byte order mark", _file(None, _F4, raw=b"\xef\xbb\xbf{" + _A + b"}")),
    ("trailing characters after the header", _file(None, _F4, raw=b"{" + _A + b"}x")),
    (
        "duplicate tensor names",
        _file(
            None,
            _F4 * 2,
            raw=b'{"a":'
            + json.dumps(_tensor(0, 4)).encode()
            + b',"a":'
            + json.dumps(_tensor(4, 8)).encode()
            + b"}",
        ),
    ),
    (
        "duplicate fields of an entry",
        _file(None, _F4, raw=b'{"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    ),
    ("duplicate __metadata__", _file(None, _F4, raw=b'{"__metadata__":{},"__metadata__":{},' + _A + b"}")),
    ("offsets reversed", _file({"a": _tensor(4, 0)}, _F4)),
    ("offsets overlapping", _file({"a": _tensor(0, 4), "b": _tensor(2, 6)}, _F4 * 2)),
    ("a gap between tensors", _file({"a": _tensor(0, 4), "b": _tensor(8, 12)}, _F4 * 3)),
    ("a gap before the first tensor", _file({"a": _tensor(4, 8)}, _F4 * 2)),
    ("trailing bytes after the tensors", _file({"a": _tensor(0, 4)}, _F4 * 2)),
    ("bytes and no tensor", _file({}, b"\x00")),
    ("offsets past the end", _file({"a": _tensor(0, 8, (2,))}, _F4)),
    ("offsets not matching shape and dtype", _file({"a": _tensor(0, 4, (2,))}, _F4 + _F4)),
    ("a shape whose size overflows", _file({"a": _tensor(0, 4, (2**32, 2**32))}, _F4)),
    ("unknown dtype", _file({"a": _tensor(0, 4, dtype="X32")}, _F4)),
    ("lowercase dtype", _file({"a": _tensor(0, 4, dtype="f32")}, _F4)),
    ("dtype not a string", _file({"a": _tensor(0, 4, dtype=1)}, _F4)),
    ("negative shape entry", _file({"a": _tensor(0, 4, (-1,))}, _F4)),
    ("float shape entry", _file({"a": _tensor(0, 4, (1.0,))}, _F4)),
    ("boolean shape entry", _file({"a": _tensor(0, 4, (True,))}, _F4)),
    ("string shape entry", _file({"a": _tensor(0, 4, ("1",))}, _F4)),
    ("shape entry over 64 bits", _file({"a": _tensor(0, 0, (0, 2**64))})),
    ("shape entry past NumPy's limit", _file({"a": _tensor(0, 0, (0, 2**63))})),
    ("zero-sized shape past NumPy's limit", _file({"a": _tensor(0, 0, (0, 2**62, 4))})),
    ("negative offset", _file({"a": _tensor(-4, 0)}, _F4)),
    ("float offset", _file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0.0, 4]}}, _F4)),
    ("three offsets", _file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 4]}}, _F4)),
    ("one offset", _file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4]}}, _F4)),
    ("offsets an object", _file({"a": {"dtype": "F32", "shape": [1], "data_offsets": {"0": 0}}}, _F4)),
    ("a missing field", _file({"a": {"dtype": "F32", "data_offsets": [0, 4]}}, _F4)),
    ("an entry not an object", _file({"a": [0, 4]}, _F4)),
    ("__metadata__ with a number", _file({"__metadata__": {"x": 1}, "a": _tensor(0, 4)}, _F4)),
    ("__metadata__ a list", _file({"__metadata__": ["x"], "a": _tensor(0, 4)}, _F4)),
    ("__metadata__ nested", _file({"__metadata__": {"x": {"y": "z"}}, "a": _tensor(0, 4)}, _F4)),
    (
        "NaN in the header",
        _file(None, _F4, raw=b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":NaN}}'),
    ),
    (
        "an unpaired surrogate",
        _file(None, _F4, raw=b'{"\\ud800":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    ),
    ("JSON nested 100,000 deep", _file(None, raw=b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}")),
    (
        "JSON nested 128 deep",
        _file(
            None,
            _F4,
            raw=b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":'
            + b"[" * 126
            + b"]" * 126
            + b"}}",
        ),
    ),
]

# (case, file bytes): the reference package accepts every one of them, and so does ours
_ACCEPTED = [
    ("one tensor", _file({"a": _tensor(0, 4)}, _F4)),
    ("offsets out of header order", _file({"b": _tensor(4, 8), "a": _tensor(0, 4)}, _F4 + b"\x00" * 4)),
    ("an unknown field", _file({"a": {**_tensor(0, 4), "x": [1, {"y": None}]}}, _F4)),
    ("null __metadata__", _file({"__metadata__": None, "a": _tensor(0, 4)}, _F4)),
    ("whitespace around the header", _file(None, _F4, raw=b" \n{" + _A + b"}   ")),
    ("zero-sized tensors", _file({"z": _tensor(0, 0, (0, 3)), "a": _tensor(0, 4)}, _F4)),
    ("a scalar", _file({"a": _tensor(0, 4, ())}, _F4)),
    ("no tensors", _file({"__metadata__": {"k": "v"}})),
    (
        "JSON nested 127 deep",
        _file(
            None,
            _F4,
            raw=b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":'
            + b"[" * 125
            + b"]" * 125
            + b"}}",
        ),
    ),
]


def _reference(blob: bytes) -> dict[str, np.ndarray[Any, Any]] | None:
    try:
        return dict(st_numpy.load(blob))
    except Exception:  # the reference's own error types vary (SafetensorError, ValueError)
        return None


@pytest.mark.parametrize(("case", "blob"), _REFUSED, ids=[case for case, _ in _REFUSED])
def test_what_the_reference_refuses_is_refused(tmp_path: Path, case: str, blob: bytes) -> None:
    assert _reference(blob) is None, f"the reference accepts {case}"
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(SafetensorsError, match=str(path)):
        read_safetensors(path)
    with pytest.raises(SafetensorsError):
        read_safetensors(path, mmap=False)
    with pytest.raises(SafetensorsError):
        read_safetensors_metadata(path)


@pytest.mark.parametrize(("case", "blob"), _ACCEPTED, ids=[case for case, _ in _ACCEPTED])
def test_what_the_reference_accepts_is_read_alike(tmp_path: Path, case: str, blob: bytes) -> None:
    expected = _reference(blob)
    assert expected is not None, f"the reference refuses {case}"
    path = tmp_path / "good.safetensors"
    path.write_bytes(blob)
    for ours in (read_safetensors(path), read_safetensors(path, mmap=False)):
        assert sorted(ours) == sorted(expected)
        for name, array in expected.items():
            assert ours[name].dtype == array.dtype
            assert ours[name].shape == array.shape
            np.testing.assert_array_equal(ours[name], array)


def test_identical_duplicates_are_refused_though_the_reference_keeps_one(tmp_path: Path) -> None:
    entry = json.dumps(_tensor(0, 4)).encode()
    blob = _file(None, _F4, raw=b'{"a":' + entry + b',"a":' + entry + b"}")
    assert _reference(blob) is not None  # it keeps the last: an ambiguity we do not resolve by guessing
    path = tmp_path / "dup.safetensors"
    path.write_bytes(blob)
    with pytest.raises(SafetensorsError, match="'a' appears twice"):
        read_safetensors(path)


def test_the_header_limit_is_checked_before_reading_and_can_be_raised(tmp_path: Path) -> None:
    path = write_safetensors(tmp_path / "x.safetensors", {"a": np.arange(3, dtype=np.float32)})
    header_size = struct.unpack("<Q", path.read_bytes()[:8])[0]
    with pytest.raises(SafetensorsError, match=f"header of {header_size} bytes exceeds the limit of 16"):
        read_safetensors(path, max_header_bytes=16)
    np.testing.assert_array_equal(read_safetensors(path, max_header_bytes=header_size)["a"], [0, 1, 2])
    # a length field declaring 99 MB, under the default limit, over a 20-byte file: refused unread
    (tmp_path / "bomb.safetensors").write_bytes(struct.pack("<Q", 99_000_000) + b"{}" + b" " * 10)
    tracemalloc.start()
    try:
        with pytest.raises(SafetensorsError, match="past the end of the 20-byte file"):
            read_safetensors(tmp_path / "bomb.safetensors")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_the_recorder_takes_the_header_limit(tmp_path: Path) -> None:
    path = write_safetensors(tmp_path / "x.safetensors", {"a": np.arange(3, dtype=np.float32)})
    np.testing.assert_array_equal(SafetensorsFileRecorder().load(path)["a"].to_numpy(), [0, 1, 2])
    with pytest.raises(SafetensorsError, match="exceeds the limit of 16"):
        SafetensorsFileRecorder(max_header_bytes=16).load(path)


def test_fuzzed_files_raise_only_safetensors_error_and_agree_with_the_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    arrays = {
        "w": rng.standard_normal((3, 2)).astype(np.float32),
        "b": np.arange(3, dtype=np.int64),
        "m": np.array([1, 0, 1], dtype=np.uint8),
    }
    good = write_safetensors(tmp_path / "good.safetensors", arrays, {"k": "v"}).read_bytes()
    path = tmp_path / "fuzzed.safetensors"
    outcomes = {"refused": 0, "read": 0}
    for _ in range(400):
        blob = bytearray(good)
        kind = rng.integers(4)
        if kind == 0:
            blob = blob[: rng.integers(len(blob))]
        else:
            for _ in range(int(rng.integers(1, 4))):
                at = int(rng.integers(len(blob)))
                if kind == 1:
                    blob[at] = int(rng.integers(256))
                elif kind == 2:
                    blob[at] = int(rng.choice(list(b'{}[]",:0123456789-. \\eE')))
                else:
                    del blob[at]
        path.write_bytes(bytes(blob))
        expected = _reference(bytes(blob))
        try:
            ours = read_safetensors(path)
        except SafetensorsError:
            outcomes["refused"] += 1
            continue
        outcomes["read"] += 1
        assert expected is not None, f"accepted a file the reference refuses: {bytes(blob[:120])!r}"
        assert sorted(ours) == sorted(expected)
        for name, array in expected.items():
            np.testing.assert_array_equal(ours[name], array)
    assert outcomes["refused"] > 100
    assert outcomes["read"] > 10
