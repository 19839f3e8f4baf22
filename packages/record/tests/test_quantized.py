"""Quantized tensors in records: every recorder round-trips their values, scales, scheme and ids exactly
(whatever the precision settings), files shrink, and hostile quantized entries are RecordFileErrors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from burn_backend import ParamId, ParamRecord, TensorData
from burn_backend.quantization import QuantizedData, QuantParam, QuantScheme, QuantStore, QuantValue
from burn_record import (
    BinBytesRecorder,
    DefaultFileRecorder,
    HalfPrecisionSettings,
    NamedMpkBytesRecorder,
    NamedMpkFileRecorder,
    PrettyJsonFileRecorder,
    RecordFileError,
)
from burn_record._quantized import MARKER

SCHEMES = [
    QuantScheme(),
    QuantScheme().with_value(QuantValue.Q4S).with_block_size(32).with_store(QuantStore.PACKED_U32),
    QuantScheme().with_value(QuantValue.Q4F).with_block_size(32).with_param(QuantParam.F16),
    QuantScheme().with_value(QuantValue.E4M3).with_param(QuantParam.BF16),
]


def _weights() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
@pytest.mark.parametrize(
    "recorder",
    [NamedMpkFileRecorder(), NamedMpkFileRecorder(HalfPrecisionSettings()), DefaultFileRecorder(),
     PrettyJsonFileRecorder()],
    ids=["named-mpk", "named-mpk-half", "default", "json"],
)  # fmt: skip
def test_round_trip_is_exact_and_smaller(tmp_path: Path, scheme: QuantScheme, recorder: object) -> None:
    data = QuantizedData.quantize(TensorData(_weights()), scheme)
    record = {"layer": {"weight": ParamRecord(ParamId(7), data), "plain": data}}
    written = recorder.save(record, tmp_path / "q")  # type: ignore[attr-defined]
    back = recorder.load(written)  # type: ignore[attr-defined]
    entry = back["layer"]["weight"]
    assert isinstance(entry, ParamRecord)
    assert entry.id == ParamId(7)
    assert entry.value == data
    assert entry.value.scheme == scheme
    assert back["layer"]["plain"] == data
    float_file = recorder.save({"layer": {"weight": TensorData(_weights())}}, tmp_path / "f")  # type: ignore[attr-defined]
    ratio = written.stat().st_size / (2 * float_file.stat().st_size)
    limit = 0.17 if scheme.store is QuantStore.PACKED_U32 else 0.28  # native: one value a byte
    if isinstance(recorder, NamedMpkFileRecorder) and recorder.settings.float_dtype.size == 2:
        limit *= 2  # the float file is f16
    if not isinstance(recorder, PrettyJsonFileRecorder):
        assert ratio <= limit, ratio


def _node(**changes: object) -> dict[str, object]:
    header = {"value": "q8s", "param": "f32", "store": "native", "block_size": None, "mode": "symmetric"}
    header["shape"] = [2, 2]
    node: dict[str, object] = {
        MARKER: header,
        "values": TensorData(np.array([1, -2, 3, 4], dtype=np.int8)),
        "scales": TensorData(np.array([0.5], dtype=np.float32)),
    }
    for key, value in changes.items():
        if key in node:
            node[key] = value
        else:
            header[key] = value
    return node


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"value": "q9x"}, r"value 'q9x' is not one of"),
        ({"block_size": 3, "shape": [2, 4]}, r"quantize: block size 3 .* does not divide the last dim \(4\)"),
        ({"shape": [3, 3]}, r"has 9 stored values, got 4"),
        (
            {"values": TensorData(np.array([1, 300, 3, 4], dtype=np.int16))},
            r"outside the range \[-127, 127\]",
        ),
        ({"values": TensorData(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32))}, "stored as ints"),
        ({"scales": TensorData(np.array([np.nan], dtype=np.float32))}, "scales must be finite floats"),
        ({"shape": "2x2"}, "is not a list of sizes"),
    ],
)
def test_hostile_quantized_entries(changes: dict[str, object], message: str) -> None:
    for recorder in (NamedMpkBytesRecorder(), BinBytesRecorder()):
        payload = recorder.to_bytes({"net": {"w": _node(**changes)}})
        with pytest.raises(RecordFileError, match=r"quantized entry 'net.w': .*" + message):
            recorder.from_bytes(payload)
