"""Files written by version 1 of the format, kept in ``fixtures/``, load with every later version.

The files were written once, by burn-record 0.1.0 (format version 1), from ``fixture_record()`` below;
they must never be rewritten: they stand for the files users already have. A format change that cannot
read them is a breaking change (bump ``FORMAT_VERSION`` and keep a reader for version 1).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from _record_support import equal

from burn_backend import ParamId, ParamRecord, TensorData
from burn_record import (
    FORMAT_VERSION,
    BinBytesRecorder,
    BinFileRecorder,
    CompactRecorder,
    FileRecorder,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NamedMpkFileRecorder,
    NamedMpkZstFileRecorder,
    PrettyJsonFileRecorder,
)

FIXTURES = Path(__file__).parent / "fixtures"
# file name -> the recorder that wrote it, and the precision it was written in
FILES: dict[str, tuple[type[FileRecorder], Any]] = {
    "v1-model.mpk": (NamedMpkFileRecorder, FullPrecisionSettings()),
    "v1-model.mpk.zst": (NamedMpkZstFileRecorder, FullPrecisionSettings()),
    "v1-model.bin": (BinFileRecorder, FullPrecisionSettings()),
    "v1-model.json": (PrettyJsonFileRecorder, FullPrecisionSettings()),
    "v1-compact.mpk.zst": (CompactRecorder, HalfPrecisionSettings()),
}


def fixture_record() -> dict[str, Any]:
    """What the fixture files hold (in full precision). Frozen: the files were written from it."""
    weight = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 4
    return {
        "linear": {
            "weight": ParamRecord(ParamId(1234567890123), TensorData(weight)),
            "bias": ParamRecord(ParamId(7), TensorData(np.array([0.25, -1.0, 3.5], np.float32))),
        },
        "layers": [
            {"scale": TensorData(np.float32(1.5))},
            None,
            {"empty": TensorData(np.zeros((0, 2), np.float32))},
        ],
        "counts": TensorData(np.array([[1, -2], [300, 4]], np.int32)),
        "mask": TensorData(np.array([True, False, True])),
        "pixels": TensorData(np.array([0, 127, 255], np.uint8)),
        "optimizer": {"7": {"moment": TensorData(np.array([1e-3, 2e-3, -4e-3], np.float32)), "time": 3}},
        "scheduler": {"step": 10, "lr": 0.001},
        "rng": {"bit_generator": "PCG64", "state": {"state": 2**127 + 3, "inc": 2**64 + 1}, "has_uint32": 0},
        "values": [0, -1, 2**64 - 1, 2**70, 1.5, -0.0, math.inf, math.nan, "héllo", b"\x00\x01", True, None],
    }


def write_fixtures(folder: Path) -> None:
    """How the files were written (kept to document them; never run it over the kept files)."""
    for name, (recorder_type, settings) in FILES.items():
        recorder_type(settings).save(fixture_record(), folder / name)


@pytest.mark.parametrize("name", list(FILES))
def test_files_written_by_version_1_load(name: str) -> None:
    recorder_type, settings = FILES[name]
    path = FIXTURES / name
    loaded = recorder_type(settings).load(path)
    expected = fixture_record()
    if settings == HalfPrecisionSettings():
        expected = NamedMpkFileRecorder(settings).from_bytes(
            NamedMpkFileRecorder(settings).to_bytes(expected)
        )
    assert equal(loaded, expected)
    # and in full precision, whatever the file's precision
    assert loaded["linear"]["weight"].value.shape == (3, 4)
    full = recorder_type(FullPrecisionSettings()).load(path)
    np.testing.assert_array_equal(
        full["linear"]["weight"].value.to_numpy(), fixture_record()["linear"]["weight"].value.to_numpy()
    )


@pytest.mark.parametrize("name", list(FILES))
def test_the_fixtures_say_they_are_version_1(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    if name.endswith(".json"):
        header = json.loads(data)
    else:
        header = msgpack.unpackb(data[12 : 12 + int.from_bytes(data[8:12], "little")])
    assert header["version"] == 1 <= FORMAT_VERSION
    assert header["package_version"] == "0.1.0"


def test_the_binary_fixture_loads_from_bytes_too() -> None:
    loaded = BinBytesRecorder().load((FIXTURES / "v1-model.bin").read_bytes())
    assert equal(loaded, fixture_record())
