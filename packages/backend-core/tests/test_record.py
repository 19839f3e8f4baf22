"""The record vocabulary: parameter ids, parameter records and the ``Recorder`` protocol."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

import burn_backend
from burn_backend import ParamId, ParamRecord, Recorder, TensorData


def test_the_vocabulary_is_public() -> None:
    for name in ("ParamId", "ParamRecord", "Recorder"):
        assert name in burn_backend.__all__


def test_param_ids_are_random_and_round_trip_through_text() -> None:
    first, second = ParamId(), ParamId()
    assert first != second
    assert ParamId.parse(str(first)) == first
    assert hash(ParamId(7)) == hash(ParamId.parse("7"))
    assert repr(ParamId(7)) == "ParamId(7)"
    assert 0 <= first.value < 2**63


def test_param_records_are_frozen_values() -> None:
    data = TensorData([1.0, 2.0], dtype="f32")
    record = ParamRecord(ParamId(3), data)
    assert record == ParamRecord(ParamId(3), TensorData([1.0, 2.0], dtype="f32"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.id = ParamId(4)  # type: ignore[misc]


class _DictRecorder:
    """A recorder keeping records in memory."""

    def __init__(self) -> None:
        self.files: dict[Path, dict[str, Any]] = {}

    def save(self, record: Any, path: Any) -> Path:
        self.files[Path(path)] = dict(record)
        return Path(path)

    def load(self, path: Any) -> dict[str, Any]:
        return dict(self.files[Path(path)])

    def to_bytes(self, record: Any) -> bytes:
        return repr(sorted(record)).encode()

    def from_bytes(self, data: bytes) -> dict[str, Any]:
        raise NotImplementedError


class _SaveOnly:
    def save(self, record: Any, path: Any) -> Path:
        return Path(path)


def test_anything_with_the_four_methods_is_a_recorder() -> None:
    recorder = _DictRecorder()
    assert isinstance(recorder, Recorder)
    assert not isinstance(_SaveOnly(), Recorder)
    record = {"weight": ParamRecord(ParamId(1), TensorData([0.5], dtype="f32"))}
    assert recorder.save(record, "model") == Path("model")
    assert recorder.load("model") == record


def test_the_protocol_documents_every_method() -> None:
    methods = {"save", "load", "to_bytes", "from_bytes"}
    assert {name for name, _ in inspect.getmembers(Recorder, inspect.isfunction)} >= methods
    for name in methods:
        assert inspect.getdoc(getattr(Recorder, name)), name
