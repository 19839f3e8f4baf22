"""Fuzzing: saved files mutated at random (truncation, bit flips, overwritten and deleted bytes, junk
appended) and, behind valid checksums, structures, headers and JSON documents tampered with (lengths,
types, values). Every load either raises ``RecordFileError`` or returns a well-formed record (the
original one, where the checksums were left as they were); nothing else is ever raised, and a module
is never changed by a failed load.

CI runs a seeded subset (``BURN_RECORD_FUZZ_CASES``, 3,000 cases by default, a few seconds); ``nox -s
record_fuzz`` runs 20,000.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from _record_support import FILE_RECORDERS, equal, forge, sample_record, sections

from burn_backend import ParamRecord, TensorData
from burn_record import FileRecorder, PrettyJsonFileRecorder, RecordFileError

CASES = int(os.environ.get("BURN_RECORD_FUZZ_CASES", "3000"))
SEED = int(os.environ.get("BURN_RECORD_FUZZ_SEED", "2024"))
_PLAIN = (str, int, float, bool, bytes, type(None))


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        position = rng.randrange(len(out))
        out[position] ^= 1 << rng.randrange(8)
    return bytes(out)


def _overwrite(data: bytes, rng: random.Random) -> bytes:
    start = rng.randrange(len(data))
    run = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return data[:start] + run + data[start + len(run) :]


def _delete(data: bytes, rng: random.Random) -> bytes:
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.randint(1, 16) :]


def _insert(data: bytes, rng: random.Random) -> bytes:
    start = rng.randrange(len(data) + 1)
    return data[:start] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[start:]


_BYTE_MUTATIONS: list[Callable[[bytes, random.Random], bytes]] = [_flip, _overwrite, _delete, _insert]
# msgpack type bytes worth planting: nil, false, bin/str/array/map/ext headers with long lengths, ints
_TYPE_BYTES = [
    0xC0,
    0xC2,
    0xC4,
    0xC6,
    0xD9,
    0xDB,
    0xDC,
    0xDD,
    0xDE,
    0xDF,
    0xC7,
    0xC9,
    0xD4,
    0xCF,
    0xD3,
    0xA0,
    0x90,
]


def _plain_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A mutation the checksums (or the sizes) must catch."""
    choice = rng.randrange(6)
    if choice == 0:
        return "truncate", data[: rng.randrange(len(data))]
    if choice == 1:
        return "append", data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    mutation = _BYTE_MUTATIONS[choice - 2]
    return mutation.__name__[1:], mutation(data, rng)


def _tamper_msgpack(raw: bytes, rng: random.Random) -> bytes:
    """``raw`` with a type byte, a length or any bytes changed."""
    if rng.random() < 0.5 and raw:
        position = rng.randrange(len(raw))
        return raw[:position] + bytes([rng.choice(_TYPE_BYTES)]) + raw[position + 1 :]
    return rng.choice(_BYTE_MUTATIONS)(raw, rng) if raw else raw


def _binary_forged_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A tampered structure, header or data section behind valid checksums."""
    header, section, structure = sections(data)
    compressed = header["compression"] == "zstd"
    choice = rng.randrange(4)
    if choice == 0:
        return "structure", forge(
            header["format"], None, section, header=header, compressed=compressed,
            raw_structure=_tamper_msgpack(structure, rng),
        )  # fmt: skip
    if choice == 1:
        tree = msgpack.unpackb(structure, strict_map_key=False)
        return "descriptor", forge(
            header["format"], _tamper_tree(tree, rng), section, header=header, compressed=compressed
        )
    if choice == 2:
        changed = dict(header)
        key = rng.choice(list(changed))
        changed[key] = rng.choice([0, -1, 2**40, "x", None, 2, [1], "named-mpk", "zstd", 1.5])
        return "header", forge(header["format"], None, section, header=changed, compressed=compressed,
                               raw_structure=structure)  # fmt: skip
    if not section:
        return "data", data
    claims = {"data_len": rng.choice([None, 0, len(section) - 1, len(section) + 1, 2**40])}
    return "data", forge(
        header["format"], None, _tamper_msgpack(section, rng), header=header, compressed=compressed,
        raw_structure=structure, **claims,
    )  # fmt: skip


def _tamper_tree(tree: Any, rng: random.Random) -> Any:
    """``tree`` with one value (a descriptor field, a leaf, a container) replaced by another type."""
    replacements: list[Any] = [None, -1, 2**63, "f32", [2**40], {"a": 1}, 1.5, b"\x00", [], True]
    nodes: list[tuple[Any, Any]] = []

    def collect(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            nodes.append((node, key))
            collect(value)

    collect(tree)
    if not nodes:
        return tree
    parent, key = rng.choice(nodes)
    value = parent[key]
    if isinstance(value, msgpack.ExtType) and value.code in (1, 2) and rng.random() < 0.8:
        descriptor = msgpack.unpackb(value.data, strict_map_key=False)
        if isinstance(descriptor, dict):
            field = rng.choice(list(descriptor))
            nearby = descriptor[field] + 1 if isinstance(descriptor[field], int) else 0
            descriptor[field] = rng.choice([*replacements, nearby])
        parent[key] = msgpack.ExtType(value.code, msgpack.packb(descriptor))
    else:
        parent[key] = rng.choice(replacements)
    return tree


def _json_forged_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A JSON document with one value replaced, its checksum recomputed."""
    document = json.loads(data)
    tree = {"record": document["record"]}
    nodes: list[tuple[Any, Any]] = []

    def collect(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            nodes.append((node, key))
            collect(value)

    collect(tree)
    parent, key = rng.choice(nodes)
    parent[key] = rng.choice(
        [None, -1, 2**70, "nan", [2**40], {"$tensor": {}}, {"$float": 1}, 1e308, [], "x"]
    )
    if rng.random() < 0.3 and nodes:
        document[rng.choice(list(document))] = rng.choice([None, 2, "pretty-json", "x"])
    document["record"] = tree["record"]
    canonical = json.dumps(tree["record"], separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()
    document["crc32"] = zlib.crc32(canonical)
    return "json-value", json.dumps(document).encode()


def _well_formed(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is a record value as loading promises: plain values, str-keyed dicts, lists,
    ``TensorData`` whose bytes match its shape, ``ParamRecord``s."""
    if isinstance(value, ParamRecord):
        return _well_formed(value.value, depth)
    if isinstance(value, TensorData):
        return value.to_numpy().size == value.num_elements() and value.to_numpy().shape == tuple(value.shape)
    if isinstance(value, dict):
        return all(type(k) is str and _well_formed(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_well_formed(v, depth + 1) for v in value)
    return isinstance(value, _PLAIN)


def _records() -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    return [
        sample_record(),
        {"w": TensorData(rng.normal(size=(32, 16)).astype(np.float32)), "n": 1},
        {"layers": [{"weight": TensorData(np.eye(3, dtype=np.float32))}], "step": 2**70, "empty": {}},
    ]


def test_mutated_files_raise_the_documented_error_or_load_a_well_formed_record(tmp_path: Path) -> None:
    recorders: list[FileRecorder] = [cls() for cls in FILE_RECORDERS]
    bases = [(recorder, record, recorder.to_bytes(record)) for recorder in recorders for record in _records()]
    outcomes: Counter[str] = Counter()
    for case in range(CASES):
        rng = random.Random(f"{SEED}-{case}")
        recorder, record, data = bases[case % len(bases)]
        forged = rng.random() < 0.5
        if forged and isinstance(recorder, PrettyJsonFileRecorder):
            kind, mutated = _json_forged_mutation(data, rng)
        elif forged:
            kind, mutated = _binary_forged_mutation(data, rng)
        else:
            kind, mutated = _plain_mutation(data, rng)
        where = f"case {case} (seed {SEED}, {type(recorder).__name__}, {kind})"
        try:
            if case % 25 == 0:  # through a file (memory-mapped where uncompressed)
                path = tmp_path / f"case{case % 50}"
                path.write_bytes(mutated)
                loaded = recorder.load(path)
            else:
                loaded = recorder.from_bytes(mutated)
        except RecordFileError:
            outcomes[f"{kind}: refused"] += 1
            continue
        except Exception as error:  # any other type is a crash
            pytest.fail(f"{where}: {type(error).__name__}: {error}")
        outcomes[f"{kind}: loaded"] += 1
        assert _well_formed(loaded), where
        if not forged:  # the checksums were left as they were: only meaning-preserving changes load
            assert equal(loaded, record), where
    assert sum(outcomes.values()) == CASES
    assert outcomes["flip: refused"] > 0, outcomes
    assert outcomes["truncate: refused"] > 0, outcomes


def test_a_failed_load_never_changes_a_module(tmp_path: Path) -> None:
    burn_nn = pytest.importorskip("burn_nn")
    burn_ndarray = pytest.importorskip("burn_ndarray")
    device = burn_ndarray.NdArray().device()
    device.seed(0)
    model = burn_nn.LinearConfig(8, 4).init(device)
    snapshot = {name: param.val().to_data() for name, param in model.named_params()}
    cases = max(200, CASES // 10)
    for recorder_type in FILE_RECORDERS:
        recorder = recorder_type()
        data = recorder.to_bytes(burn_nn.LinearConfig(8, 4).init(device).into_record())
        for case in range(cases // len(FILE_RECORDERS)):
            rng = random.Random(f"module-{SEED}-{case}")
            _, mutated = _plain_mutation(data, rng)
            path = tmp_path / f"m.{recorder.file_extension}"
            path.write_bytes(mutated)
            with contextlib.suppress(RecordFileError, burn_nn.RecordError):
                model.load_file(tmp_path / "m", recorder)
            for name, param in model.named_params():
                assert param.val().to_data() == snapshot[name], (
                    f"{recorder_type.__name__} case {case}: {name}"
                )
