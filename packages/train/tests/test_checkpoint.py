"""A checkpoint is whole or absent as a unit: a save that crashes between its files leaves no checkpoint
of that epoch, files of different saves (an interrupted rewrite, a file copied from another epoch) are
refused on load naming the epochs involved, and the temporaries of killed saves are cleaned up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("burn_record")

from burn_backend import TensorData
from burn_record import NamedMpkFileRecorder
from burn_train import CheckpointError, FileCheckpointer


def _records(epoch: int) -> dict[str, dict[str, Any]]:
    values = np.full(64, float(epoch), np.float32)
    return {
        "model": {"w": TensorData(values)},
        "optim": {"moment": TensorData(values * 2)},
        "scheduler": {"iter_idx": epoch * 10},
        "state": {"epoch": epoch, "complete": True},
    }


def _checkpointer(tmp_path: Path) -> FileCheckpointer:
    checkpointer = FileCheckpointer(NamedMpkFileRecorder(), tmp_path / "checkpoint")
    for epoch in (1, 2, 3):
        checkpointer.save(epoch, _records(epoch))
    return checkpointer


def test_a_whole_checkpoint_loads_and_its_state_is_the_one_saved(tmp_path: Path) -> None:
    checkpointer = _checkpointer(tmp_path)
    assert checkpointer.load(2, "state") == {"epoch": 2, "complete": True}
    assert checkpointer.load(2, "scheduler") == {"iter_idx": 20}
    np.testing.assert_array_equal(checkpointer.load(3, "model")["w"].to_numpy(), np.full(64, 3.0, np.float32))


def test_a_save_crashing_between_its_files_leaves_no_checkpoint_of_that_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpointer = _checkpointer(tmp_path)
    save = checkpointer.recorder.save
    calls: list[str] = []

    def crashing(record: Any, path: Any) -> Path:
        calls.append(Path(path).name)
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed once the first file (the new model) is written
        return Path(save(record, path))

    monkeypatch.setattr(checkpointer.recorder, "save", crashing)
    with pytest.raises(KeyboardInterrupt):
        checkpointer.save(3, _records(30))  # a resumed run rewriting epoch 3's checkpoint
    monkeypatch.undo()
    assert calls == ["model-3", "optim-3"]
    assert checkpointer.epochs() == [1, 2]  # the old state went first: no mixed epoch 3
    with pytest.raises(FileNotFoundError, match=r"no complete checkpoint of epoch 3 .*\[1, 2\]"):
        checkpointer.load(3, "model")
    assert checkpointer.load(2, "scheduler") == {"iter_idx": 20}  # the last whole one still loads


def test_a_file_rewritten_behind_the_state_is_refused(tmp_path: Path) -> None:
    checkpointer = _checkpointer(tmp_path)
    # what an interrupted rewrite leaves where the state is not removed first: a new model, an old state
    checkpointer.recorder.save(_records(30)["model"], tmp_path / "checkpoint" / "model-3")
    with pytest.raises(CheckpointError, match=r"epoch 3 .*model-3\.mpk is not the file state-3 recorded"):
        checkpointer.load(3, "model")
    assert checkpointer.load(3, "optim")["moment"].to_numpy()[0] == 6.0  # the files that match still load


def test_files_of_two_epochs_mixed_by_hand_are_refused_naming_both(tmp_path: Path) -> None:
    checkpointer = _checkpointer(tmp_path)
    folder = tmp_path / "checkpoint"
    shutil.copy(folder / "optim-1.mpk", folder / "optim-3.mpk")
    with pytest.raises(CheckpointError) as error:
        checkpointer.load(3, "optim")
    message = str(error.value)
    assert "checkpoint of epoch 3" in message
    assert "optim-3.mpk holds epoch 1's optim" in message
    assert "not epoch 3's" in message
    shutil.copy(folder / "state-2.mpk", folder / "state-3.mpk")
    for part in ("model", "state"):
        with pytest.raises(CheckpointError, match="its state file is epoch 2's, not epoch 3's"):
            checkpointer.load(3, part)
    (folder / "model-1.mpk").unlink()
    with pytest.raises(CheckpointError, match=r"its model file model-1\.mpk is missing"):
        checkpointer.load(1, "model")


def test_stale_temporaries_of_killed_saves_are_removed_by_the_next_save(tmp_path: Path) -> None:
    from burn_record import _atomic

    folder = tmp_path / "checkpoint"
    folder.mkdir()
    code = "import os; print(os.getpid())"
    dead = int(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    # what 45 runs killed mid-save left (from earlier processes: written before this one started)
    stale = [folder / f".model-4.mpk.burn-{dead}-{i:012x}.tmp" for i in range(45)]
    for path in stale:
        path.write_bytes(bytes(100))
        os.utime(path, (_atomic._STARTED - 60, _atomic._STARTED - 60))
    FileCheckpointer(NamedMpkFileRecorder(), folder).save(1, _records(1))
    assert not any(path.exists() for path in stale)
    assert sorted(p.name for p in folder.iterdir()) == [
        "model-1.mpk",
        "optim-1.mpk",
        "scheduler-1.mpk",
        "state-1.mpk",
    ]


def test_resuming_from_a_mixed_checkpoint_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("burn_autodiff")
    sys.path.insert(0, str(Path(__file__).parent))
    import toy_training as toy

    toy.run(tmp_path, 2, workers=0)
    folder = tmp_path / "checkpoint"
    shutil.copy(folder / "model-1.mpk", folder / "model-2.mpk")
    with pytest.raises(CheckpointError, match=r"model-2\.mpk holds epoch 1's model"):
        toy.run(tmp_path, 3, resume=2, workers=0)
