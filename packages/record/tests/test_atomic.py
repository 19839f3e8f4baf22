"""Saving is atomic and durable: a save killed by SIGKILL at a random moment leaves the previous file or
the new one, whole; a save that fails leaves the previous file and no temporary file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _record_support import FILE_RECORDERS

from burn_backend import TensorData
from burn_record import HalfPrecisionSettings, NamedMpkFileRecorder, PrecisionError, _checksum, _write
from burn_record._atomic import atomic_write

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the kill test forks (POSIX)")

# The subprocess forks a saver that alternates two records over one path forever, kills it with
# SIGKILL after a random delay, checks that the path holds one of the two records whole, and repeats.
CHILD = r"""
import json, os, random, signal, sys, time
import numpy as np
from burn_backend import TensorData
import burn_record

recorder = getattr(burn_record, sys.argv[1])()
path, kills, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
records = [
    {"version": v, "w": TensorData(np.full(size, float(v), np.float32)), "tail": list(range(v * 10))}
    for v in (1, 2)
]
written = recorder.save(records[0], path)
rng = random.Random(0)
seen = []
for kill in range(kills):
    pid = os.fork()
    if pid == 0:
        i = kill % 2
        while True:
            recorder.save(records[i % 2], path)
            i += 1
    time.sleep(rng.uniform(0.0, 0.08))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    loaded = recorder.load(written)
    version = loaded["version"]
    whole = (
        version in (1, 2)
        and loaded["tail"] == list(range(version * 10))
        and bool((loaded["w"].to_numpy() == float(version)).all())
        and loaded["w"].to_numpy().size == size
    )
    seen.append(version if whole else -1)
print(json.dumps(seen))
"""


@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_a_save_killed_at_random_moments_never_leaves_a_torn_file(recorder_type, tmp_path: Path) -> None:
    size = 20_000 if recorder_type.__name__.startswith("PrettyJson") else 2_000_000
    result = subprocess.run(
        [sys.executable, "-c", CHILD, recorder_type.__name__, str(tmp_path / "model"), "16", str(size)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert len(seen) == 16
    assert -1 not in seen, seen
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert all(p.name.startswith(".model.") for p in leftovers)  # killed saves leave only hidden temporaries
    recorder = recorder_type()
    recorder.save({"version": 3}, tmp_path / "model")  # and saving again is unaffected by them
    assert recorder.load(tmp_path / "model") == {"version": 3}


def test_a_failed_save_leaves_the_previous_file_and_no_temporary(tmp_path: Path) -> None:
    recorder = NamedMpkFileRecorder(HalfPrecisionSettings())
    path = recorder.save({"w": TensorData([1.0])}, tmp_path / "m")
    before = path.read_bytes()
    record = {"a": TensorData(np.ones(1 << 20, np.float32)), "b": TensorData(np.array([1e6], np.float32))}
    with pytest.raises(PrecisionError, match="entry 'b'"):
        recorder.save(record, tmp_path / "m")  # fails after the first tensor was written
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.mpk"]


def test_a_save_interrupted_by_a_signal_handler_cleans_up(tmp_path: Path) -> None:
    recorder = NamedMpkFileRecorder()
    path = recorder.save({"x": 1}, tmp_path / "m")

    class Interrupted(Exception):
        pass

    def interrupt(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    record = {"w": TensorData(np.ones(1 << 22, np.float32))}

    def save_until_interrupted() -> None:
        while True:
            recorder.save(record, tmp_path / "m")

    try:
        signal.setitimer(signal.ITIMER_REAL, 0.005)
        with pytest.raises(Interrupted):
            save_until_interrupted()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    loaded = recorder.load(path)
    assert loaded == {"x": 1} or loaded["w"].num_elements() == 1 << 22
    assert [p.name for p in tmp_path.iterdir()] == ["m.mpk"]


def test_durable_saves_fsync_the_file_and_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real_fsync(fd))
    NamedMpkFileRecorder().save({"x": 1}, tmp_path / "m")
    assert len(calls) == 2  # the file, then the folder (so that the rename survives a power loss)
    calls.clear()
    fast = NamedMpkFileRecorder(durable=False)
    fast.save({"x": 2}, tmp_path / "m")
    assert calls == []
    assert fast.load(tmp_path / "m") == {"x": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["m.mpk"]


def test_writes_of_every_size_land_in_order(tmp_path: Path) -> None:
    """Small writes are gathered, large ones written from their memory in steps (the disk being asked to
    start writing as they go): the file holds exactly what was written, in order."""
    rng = np.random.default_rng(3)
    pieces: list[Any] = []
    for size in (0, 3, 70_000, 1, 20 << 20, 65_535, 65_536, 9 << 20, 5, (8 << 20) + 1, 2):
        data = rng.integers(0, 256, size, dtype=np.uint8)
        pieces.append([bytes(data), bytearray(data), data.data, data.view(np.uint8)][size % 4])
    pieces.append(np.arange(300_000, dtype=np.float32).data)  # a typed buffer: written as its bytes
    path = tmp_path / "out.bin"
    with atomic_write(path) as file:
        for piece in pieces:
            before = file.tell()
            assert file.write(piece) == memoryview(piece).nbytes
            assert file.tell() == before + memoryview(piece).nbytes
    assert path.read_bytes() == b"".join(memoryview(piece).cast("B").tobytes() for piece in pieces)
    assert not [t for t in threading.enumerate() if t.name == "burn-record-writeback"]


def test_a_failing_write_stops_the_writeback_and_removes_the_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"

    def fail_midway() -> None:
        with atomic_write(path) as file:
            file.write(bytes(20 << 20))
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        fail_midway()
    assert list(tmp_path.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "burn-record-writeback"]


def test_converted_tensors_checksummed_on_workers_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half precision converts each tensor; large ones are checksummed on worker threads while written,
    with few converted copies kept waiting (a small bound here, so that the wait is exercised)."""
    monkeypatch.setattr(_write, "_HELD", 1 << 20)
    rng = np.random.default_rng(4)
    record = {f"w{i}": TensorData(rng.standard_normal(700_000 + i).astype(np.float32)) for i in range(6)}
    recorder = NamedMpkFileRecorder(HalfPrecisionSettings())
    loaded = recorder.load(recorder.save(record, tmp_path / "m"))
    for name, tensor in record.items():
        expected = tensor.to_numpy().astype(np.float16)
        assert np.array_equal(loaded[name].to_numpy().astype(np.float16), expected)


def test_the_checksum_is_zlibs_crc32() -> None:
    """The tensors' checksum is zlib's CRC-32 whichever implementation computes it (zlib-ng's when
    installed), so files are the same either way."""
    data = np.random.default_rng(5).integers(0, 256, 3_000_001, dtype=np.uint8)
    assert _checksum.crc32(data.data) == zlib.crc32(data.data)
    assert _checksum.crc32(data.data[7:], 99) == zlib.crc32(data.data[7:], 99)


def _dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    code = "import os; print(os.getpid())"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(child.stdout)


def test_stale_temporaries_of_dead_writers_are_removed_by_the_next_save_or_load(tmp_path: Path) -> None:
    from burn_record import _atomic

    recorder = NamedMpkFileRecorder()
    old = _atomic._STARTED - 3600
    dead, live = _dead_pid(), os.getppid()
    stale = [tmp_path / f".model-{i}.mpk.burn-{dead}-{i:012x}.tmp" for i in range(3)]
    kept = {
        "live writer": tmp_path / f".model.mpk.burn-{live}-0123456789ab.tmp",
        "this process": tmp_path / f".model.mpk.burn-{os.getpid()}-0123456789ab.tmp",
        "written since this process started": tmp_path / f".state.mpk.burn-{dead}-00000000000f.tmp",
        "not this library's": tmp_path / ".notes.txt.tmp",
    }
    for path in [*stale, *kept.values()]:
        path.write_bytes(b"x" * 1000)
    for path in [*stale, kept["live writer"], kept["this process"], kept["not this library's"]]:
        os.utime(path, (old, old))
    recorder.save({"step": 1}, tmp_path / "model")
    assert not any(path.exists() for path in stale)
    for why, path in kept.items():
        assert path.exists(), why
    (tmp_path / "other").mkdir()
    leftover = tmp_path / "other" / f".w.bin.burn-{dead}-abcdefabcdef.tmp"
    leftover.write_bytes(b"x")
    os.utime(leftover, (old, old))
    saved = recorder.save({"step": 2}, tmp_path / "other" / "w")
    assert not leftover.exists()  # a save cleans its own folder
    (tmp_path / "third").mkdir()
    moved = saved.rename(tmp_path / "third" / saved.name)  # a folder this process has not seen yet
    leftover = tmp_path / "third" / leftover.name
    leftover.write_bytes(b"x")
    os.utime(leftover, (old, old))
    assert recorder.load(moved) == {"step": 2}
    assert not leftover.exists()  # and so does a load


def test_a_temporary_names_its_writing_process(tmp_path: Path) -> None:
    from burn_record._atomic import temporary_name

    name = temporary_name(tmp_path / "m.bin").name
    assert name.startswith(f".m.bin.burn-{os.getpid()}-")
    assert name.endswith(".tmp")
    assert name != temporary_name(tmp_path / "m.bin").name
