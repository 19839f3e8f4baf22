"""Hostile PyTorch files, each built here: views outside their storage, sizes that lie, memory bombs,
deep and shared structures, and fuzzed files. Every one must be refused with ``PyTorchReadError``
naming the file, before memory is touched or allocated; nothing else may escape."""

from __future__ import annotations

import io
import pickle
import struct
import tracemalloc
import zipfile
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import default_device
from burn_import.pytorch import (
    LazyArray,
    PyTorchFileRecorder,
    PyTorchReadError,
    ReadLimits,
    load_pytorch,
    read_pytorch,
)
from burn_nn import LinearConfig, Module

torch = pytest.importorskip("torch")

_MIB = 1024 * 1024


class _Storage:
    """Pickles as a persistent storage id, as ``torch.save`` writes one."""

    def __init__(self, key: str, numel: int, kind: Any = None) -> None:
        self.key, self.numel, self.kind = key, numel, kind or torch.FloatStorage


class _Tensor:
    """Pickles as PyTorch's ``_rebuild_tensor_v2`` call over a storage, with any size and stride."""

    def __init__(self, storage: _Storage, offset: Any, size: Any, stride: Any) -> None:
        self.args = (storage, offset, size, stride)

    def __reduce__(self) -> tuple[Any, ...]:
        return (torch._utils._rebuild_tensor_v2, (*self.args, False, OrderedDict()))


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            return ("storage", obj.kind, obj.key, "cpu", obj.numel)
        return None


def _pickle(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump(obj)
    return buffer.getvalue()


def _zip_pt(path: Path, data_pkl: bytes, storages: dict[str, bytes], *, compress: bool = False) -> Path:
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        archive.writestr("archive/data.pkl", data_pkl)
        for key, data in storages.items():
            archive.writestr(f"archive/data/{key}", data)
        archive.writestr("archive/version", "3\n")
    return path


def _legacy_pt(path: Path, pickles: list[bytes], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(pickles) + tail)
    return path


_MAGIC = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)
_FOUR = np.arange(4, dtype=np.float32).tobytes()


@pytest.mark.parametrize(
    ("case", "offset", "size", "stride"),
    [
        ("past the end", 0, (100,), (1,)),
        ("strided far past the end", 0, (1000, 1000), (1_000_000, 1)),
        ("the offset past the end", 4, (1,), (1,)),
        ("a negative stride", 3, (4,), (-1,)),
        ("a negative stride far back", 0, (65536,), (-1,)),
        ("a negative offset", -1, (2,), (1,)),
        ("a negative size", 0, (-2,), (1,)),
        ("fewer strides than sizes", 0, (2, 2), (1,)),
        ("a float size", 0, (2.0,), (1,)),
        ("a size that is a list", 0, [2], (1,)),
        ("a zero-sized shape past NumPy's limit", 0, (0, 2**62, 4), (4, 4, 1)),
    ],
)
@pytest.mark.parametrize("compress", [False, True])
def test_views_outside_their_storage_are_refused_before_any_read(
    tmp_path: Path, case: str, offset: int, size: Any, stride: Any, compress: bool
) -> None:
    data_pkl = _pickle({"w": _Tensor(_Storage("0", 4), offset, size, stride)})
    path = _zip_pt(tmp_path / "view.pt", data_pkl, {"0": _FOUR}, compress=compress)
    for mmap in (True, False):
        with pytest.raises(PyTorchReadError, match=str(path)):
            read_pytorch(path, mmap=mmap)


def test_a_view_made_by_hand_is_checked_when_read() -> None:
    from burn_import.pytorch._lazy import Storage

    storage = Storage(np.dtype(np.float32), "0", 4, "by hand", ReadLimits())
    storage.array = np.arange(4, dtype=np.float32)
    with pytest.raises(PyTorchReadError, match=r"reaches element 6 of storage '0', which holds 4"):
        LazyArray(storage, 0, (2, 2), (4, 2)).numpy()
    np.testing.assert_array_equal(
        LazyArray(storage, 0, (2, 2), (1, 2)).numpy(), [[0, 2], [1, 3]]
    )  # the last element
    with pytest.raises(PyTorchReadError, match="reaches element 4"):
        LazyArray(storage, 1, (2, 2), (1, 2)).numpy()


def test_storage_sizes_must_match_their_entries(tmp_path: Path) -> None:
    for numel in (1000, 2):
        path = _zip_pt(
            tmp_path / f"n{numel}.pt",
            _pickle({"w": _Tensor(_Storage("0", numel), 0, (2,), (1,))}),
            {"0": _FOUR},
        )
        with pytest.raises(PyTorchReadError, match=rf"holds 16 bytes; its storage declares {numel} float32"):
            read_pytorch(path)
    path = _zip_pt(
        tmp_path / "missing.pt", _pickle({"w": _Tensor(_Storage("7", 4), 0, (2,), (1,))}), {"0": _FOUR}
    )
    with pytest.raises(PyTorchReadError, match="storage '7' has no entry archive/data/7"):
        read_pytorch(path)
    # the legacy format: the count before the data against the pickle's and the bytes left
    tensor = _pickle({"w": _Tensor(_Storage("0", 4), 0, (4,), (1,))})
    head = [_MAGIC, pickle.dumps(1001, protocol=2), pickle.dumps({"little_endian": True}, protocol=2), tensor]
    keys = pickle.dumps(["0"], protocol=2)
    for count, data in ((4, _FOUR[:8]), (5, _FOUR), (-1, _FOUR)):
        path = _legacy_pt(tmp_path / "legacy.pt", [*head, keys], struct.pack("<q", count) + data)
        with pytest.raises(PyTorchReadError, match="storage '0' declares"):
            read_pytorch(path)
    path = _legacy_pt(tmp_path / "legacy.pt", [*head, keys], struct.pack("<q", 4) + _FOUR)
    np.testing.assert_array_equal(read_pytorch(path)["w"].numpy(), [0, 1, 2, 3])


def test_expanded_views_are_copied_within_a_limit(tmp_path: Path) -> None:
    expanded = torch.arange(3.0).expand(4, 3)  # stride (0, 1): 12 elements over a storage of 3
    path = tmp_path / "expanded.pt"
    torch.save({"e": expanded}, path)
    np.testing.assert_array_equal(read_pytorch(path)["e"].numpy(), expanded.numpy())
    with pytest.raises(PyTorchReadError, match="repeats its storage's 3 elements as 12"):
        read_pytorch(path, limits=ReadLimits(max_expanded_bytes=47))
    # one float repeated 2**31 x 4 times: 32 GiB from a file of a few hundred bytes
    bomb = _pickle({"e": _Tensor(_Storage("0", 1), 0, (2**31, 4), (0, 0))})
    path = _zip_pt(tmp_path / "bomb.pt", bomb, {"0": _FOUR[:4]})
    assert path.stat().st_size < 1000
    with _peak_below(_MIB), pytest.raises(PyTorchReadError, match="34359738368 bytes, over ReadLimits"):
        read_pytorch(path)


class _PeakBelow:
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __enter__(self) -> None:
        tracemalloc.start()

    def __exit__(self, *exc: object) -> None:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < self.limit, f"allocated {peak} bytes"


def _peak_below(limit: int) -> _PeakBelow:
    return _PeakBelow(limit)


def test_a_pickle_declaring_gigabytes_allocates_nothing(tmp_path: Path) -> None:
    # BINBYTES8 declaring an 8 GiB bytes object, followed by 16 bytes
    declared = b"\x80\x02\x8e" + struct.pack("<Q", 8 << 30) + b"x" * 16 + b"."
    legacy = _legacy_pt(tmp_path / "legacy.pt", [_MAGIC, declared])
    zipped = _zip_pt(tmp_path / "zipped.pt", declared, {})
    for path in (legacy, zipped):
        with _peak_below(_MIB), pytest.raises(PyTorchReadError, match=str(path)):
            read_pytorch(path)


def _patch_sizes(path: Path, name: str, size: int) -> None:
    """Make the zip's central directory declare ``size`` bytes (stored and inflated) for ``name``."""
    blob = bytearray(path.read_bytes())
    at = blob.index(b"PK\x01\x02")
    while True:
        name_len = struct.unpack("<H", blob[at + 28 : at + 30])[0]
        if blob[at + 46 : at + 46 + name_len] == name.encode():
            break
        at = blob.index(b"PK\x01\x02", at + 4)
    blob[at + 20 : at + 28] = struct.pack("<II", size, size)
    path.write_bytes(bytes(blob))


def test_zip_entries_are_checked_before_they_are_read(tmp_path: Path) -> None:
    tensor = _pickle({"w": _Tensor(_Storage("0", 8 * _MIB), 0, (8 * _MIB,), (1,))})
    zeros = bytes(32 * _MIB)
    path = _zip_pt(tmp_path / "zeros.pt", tensor, {"0": zeros}, compress=True)
    assert path.stat().st_size < 200_000
    with _peak_below(_MIB), pytest.raises(PyTorchReadError, match=r"inflates \d+ bytes to 33554432, over"):
        read_pytorch(path)
    with pytest.raises(PyTorchReadError, match=r"more than ReadLimits\.max_inflated_bytes = 16777216"):
        read_pytorch(path, limits=ReadLimits(max_ratio=10_000, max_inflated_bytes=16 * _MIB))
    loaded = read_pytorch(path, limits=ReadLimits(max_ratio=10_000))["w"].numpy()
    assert loaded.shape == (8 * _MIB,)
    assert not loaded.any()
    # a stored entry declaring 2 GB in a file of a few hundred bytes
    path = _zip_pt(
        tmp_path / "lie.pt", _pickle({"w": _Tensor(_Storage("0", 4), 0, (4,), (1,))}), {"0": _FOUR}
    )
    _patch_sizes(path, "archive/data/0", 2_000_000_000)
    with pytest.raises(PyTorchReadError, match=r"holds 2000000000 bytes|past the end"):
        read_pytorch(path)
    _patch_sizes(path, "archive/data.pkl", 2_000_000_000)
    with _peak_below(_MIB), pytest.raises(PyTorchReadError, match="past the end"):
        read_pytorch(path, limits=ReadLimits(max_pickle_bytes=2**31))


def test_counts_are_limited(tmp_path: Path) -> None:
    path = tmp_path / "two.pt"
    torch.save({"a": torch.ones(2), "b": torch.zeros(3)}, path)
    np.testing.assert_array_equal(read_pytorch(path)["b"].numpy(), [0, 0, 0])
    for limits, message in (
        (ReadLimits(max_tensors=1), r"more than 1 (tensors|storages) \(ReadLimits.max_tensors\)"),
        (ReadLimits(max_members=3), "over ReadLimits.max_members = 3"),
        (ReadLimits(max_pickle_bytes=50), "over ReadLimits.max_pickle_bytes = 50"),
        (ReadLimits(max_objects=3), "more than 3 objects"),
        (ReadLimits(max_depth=1), "nested more than 1 deep"),
    ):
        with pytest.raises(PyTorchReadError, match=message):
            read_pytorch(path, limits=limits)


def test_the_recorder_takes_limits(tmp_path: Path) -> None:
    path = tmp_path / "two.pt"
    torch.save({"a": torch.ones(2), "b": torch.zeros(3)}, path)
    np.testing.assert_array_equal(PyTorchFileRecorder().load(path)["b"].to_numpy(), [0, 0, 0])
    with pytest.raises(PyTorchReadError, match=r"ReadLimits.max_tensors"):
        PyTorchFileRecorder(limits=ReadLimits(max_tensors=1)).load(path)


_DEPTH = 100_000


def _nested(opcodes: bytes) -> bytes:
    return b"\x80\x02" + opcodes + b"."


_STRUCTURES: dict[str, bytes] = {
    "lists": _nested(b"]" * _DEPTH + b"a" * (_DEPTH - 1)),
    "dicts": _nested(b"}X\x01\x00\x00\x00k" * _DEPTH + b"}" + b"s" * _DEPTH),
    "tuples as a dict key": _nested(b"}" + b")" + b"\x85" * _DEPTH + b"Ns"),
    "tuples built with marks": _nested(b"}" + b"(" * _DEPTH + b"t" * _DEPTH + b"Ns"),
    "frozensets": _nested(b"}" + b"(" * _DEPTH + b")" + b"\x91" * _DEPTH + b"Ns"),
    "a list holding itself": _nested(b"]q\x00h\x00a"),
    # d_i = {"a": d_(i-1), "b": d_(i-1)}: 2**60 paths through 60 dicts
    "shared dicts": _nested(
        b"}q\x00"
        + b"".join(b"}(X\x01\x00\x00\x00ah%cX\x01\x00\x00\x00bh%cuq%c" % (i, i, i + 1) for i in range(60))
    ),
}


@pytest.mark.parametrize("case", list(_STRUCTURES))
def test_deep_and_shared_structures_are_refused(tmp_path: Path, case: str) -> None:
    limits = ReadLimits(max_objects=100_000)  # the default, 10 million, takes seconds to count to
    path = _zip_pt(tmp_path / "deep.pt", _STRUCTURES[case], {})
    with pytest.raises(PyTorchReadError, match=r"nested more than 100 deep|more than 100000 objects"):
        read_pytorch(path, limits=limits)


def test_deep_structures_are_refused_in_every_pickle_and_on_the_way_into_a_module(tmp_path: Path) -> None:
    # the legacy format's second pickle (its protocol version) is checked as the object is
    for case in ("a list holding itself", "shared dicts"):
        path = _legacy_pt(tmp_path / "legacy.pt", [_MAGIC, _STRUCTURES[case]])
        with pytest.raises(PyTorchReadError, match=r"nested more than 100 deep|more than 100000 objects"):
            read_pytorch(path, limits=ReadLimits(max_objects=100_000))
    path = _zip_pt(tmp_path / "deep.pt", _STRUCTURES["dicts"], {})
    with pytest.raises(PyTorchReadError, match=rf"{path}: containers nested more than 100 deep"):
        load_pytorch(path, _Linear(default_device()))


def test_nesting_within_the_limit_is_read(tmp_path: Path) -> None:
    state: Any = {"w": torch.ones(2)}
    for _ in range(40):
        state = {"inner": state, "t": ((1, (2,)),)}
    path = tmp_path / "nested.pt"
    torch.save(state, path)
    loaded = read_pytorch(path)
    for _ in range(40):
        loaded = loaded["inner"]
    np.testing.assert_array_equal(loaded["w"].numpy(), [1, 1])


class _Linear(Module):
    def __init__(self, device: Any) -> None:
        self.fc = LinearConfig(2, 2).init(device)


def test_state_and_instances_are_refused(tmp_path: Path) -> None:
    tensor = _pickle(_Tensor(_Storage("0", 4), 0, (4,), (1,)))[:-1]  # without STOP
    # BUILD setting a tensor's offset after its checks: refused
    build = tensor + b"N}X\x06\x00\x00\x00offsetJ\x00\x00\x00\x80s\x86b."
    path = _zip_pt(tmp_path / "build.pt", build, {"0": _FOUR})
    with pytest.raises(PyTorchReadError, match="refused to set the state of a LazyArray"):
        read_pytorch(path)
    newobj = b"\x80\x02ccollections\nOrderedDict\n)\x81."
    with pytest.raises(PyTorchReadError, match="refused to create an instance"):
        read_pytorch(_zip_pt(tmp_path / "newobj.pt", newobj, {}))


def _mutations(good: bytes, rng: np.random.Generator, count: int) -> Iterator[bytes]:
    for _ in range(count):
        blob = bytearray(good)
        kind = rng.integers(3)
        if kind == 0:
            blob = blob[: rng.integers(len(blob))]
        for _ in range(int(rng.integers(1, 5))):
            at = int(rng.integers(len(blob))) if blob else 0
            if kind == 1 and blob:
                blob[at] = int(rng.integers(256))
            elif kind == 2 and blob:
                del blob[at]
        yield bytes(blob)


def _tensors(value: Any) -> Iterator[LazyArray]:
    if isinstance(value, LazyArray):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


@pytest.mark.parametrize("legacy", [False, True])
def test_fuzzed_files_raise_only_pytorch_read_error(tmp_path: Path, legacy: bool) -> None:
    torch.manual_seed(0)
    state = {
        "w": torch.randn(3, 2),
        "t": torch.arange(6).reshape(2, 3).t(),
        "n": {"b": torch.ones(2)},
        "e": (3, 1.5, "x", b"\xff"),  # bytes: pickled through _codecs.encode(..., "latin1")
    }
    source = tmp_path / "good.pt"
    torch.save(state, source, _use_new_zipfile_serialization=not legacy)
    assert read_pytorch(source)["e"] == state["e"]
    good = source.read_bytes()
    rng = np.random.default_rng(11 + legacy)
    path = tmp_path / "fuzzed.pt"
    refused = read = 0
    for blob in _mutations(good, rng, 200):
        path.write_bytes(blob)
        try:
            for tensor in _tensors(read_pytorch(path)):
                tensor.numpy()
            read += 1
        except PyTorchReadError:
            refused += 1
    assert refused > 60
    assert read > 0  # some mutations (of tensor data) leave a readable file
