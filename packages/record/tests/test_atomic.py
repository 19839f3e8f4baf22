"""Saving is atomic and durable: a save killed by SIGKILL at a random moment leaves the previous file or
the new one, whole; a save that fails leaves the previous file and no temporary file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _record_support import FILE_RECORDERS

from burn_backend import TensorData
from burn_record import HalfPrecisionSettings, NamedMpkFileRecorder, PrecisionError

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
