"""Autotune of cuDNN's engines (``burn_cuda._cudnn._autotune``): a new convolution key times its
candidates once and writes its choice to the disk cache; a fresh process (simulated by forgetting the
plans and the files read) takes the choice from disk without timing; the result equals the one of the
heuristics' engine; ``BURN_CUDA_AUTOTUNE=0`` times nothing; an unreadable cache file is ignored and
rewritten. The settings and the file handling are tested without a GPU too."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from burn_backend import ConvOptions, Tensor, module
from burn_cuda import Cuda
from burn_cuda._cudnn import _autotune
from burn_cuda._cupy import unavailable_reason

REASON = unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(_autotune.DIRECTORY, str(tmp_path))
    monkeypatch.setattr(_autotune, "_files", {})
    return tmp_path


@pytest.mark.parametrize(("value", "on"), [(None, True), ("1", True), ("0", False), ("off", False)])
def test_the_setting_turns_tuning_off(monkeypatch: pytest.MonkeyPatch, value: str | None, on: bool) -> None:
    if value is None:
        monkeypatch.delenv(_autotune.ENVIRONMENT, raising=False)
    else:
        monkeypatch.setenv(_autotune.ENVIRONMENT, value)
    assert _autotune.enabled() is on


def test_choices_are_stored_atomically_and_an_unreadable_file_is_rewritten(cache_dir: Path) -> None:
    path = cache_dir / "gpu.json"
    path.write_text("{not json")
    assert _autotune._choices(path) == {}
    _autotune._store(path, "forward f32 [1]", "engine_7")
    _autotune._store(path, "forward f32 [2]", "engine_3")
    assert json.loads(path.read_text()) == {"forward f32 [1]": "engine_7", "forward f32 [2]": "engine_3"}
    assert not list(cache_dir.glob("*.tmp"))
    _autotune._files.clear()
    assert _autotune._choices(path)["forward f32 [2]"] == "engine_3"


def _conv(seed: int) -> np.ndarray:
    device = Cuda(cudnn=True).device()
    rng = np.random.default_rng(seed)
    x = Tensor.from_data(rng.standard_normal((8, 16, 20, 20)).astype(np.float32), device)
    weight = Tensor.from_data(rng.standard_normal((24, 16, 3, 3)).astype(np.float32), device)
    options = ConvOptions((1, 1), (1, 1), (1, 1), 1)
    return module.conv2d(x, weight, None, options).to_numpy()


@needs_gpu
def test_a_key_is_timed_once_then_read_from_disk(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from burn_cuda._cudnn import PLANS
    from burn_cuda._cudnn import unavailable_reason as cudnn_reason

    if cudnn_reason() is not None:
        pytest.skip(f"needs the cuDNN frontend: {cudnn_reason()}")
    monkeypatch.delenv(_autotune.ENVIRONMENT, raising=False)
    monkeypatch.setattr(_autotune, "stats", {"timed": 0, "from_disk": 0})
    PLANS.clear()
    monkeypatch.setenv(_autotune.ENVIRONMENT, "0")
    heuristic = _conv(0)
    assert _autotune.stats == {"timed": 0, "from_disk": 0}
    PLANS.clear()
    monkeypatch.setenv(_autotune.ENVIRONMENT, "1")
    tuned = _conv(0)
    files = list(cache_dir.glob("*.json"))
    if _autotune.stats["timed"] == 0:
        pytest.skip("cuDNN proposed one engine only for this case: nothing to time")
    assert len(files) == 1
    assert "forward float32" in files[0].read_text()
    np.testing.assert_allclose(tuned, heuristic, rtol=1e-4, atol=1e-4)
    PLANS.clear()
    _autotune._files.clear()  # as a new process: the choice comes from the file
    again = _conv(0)
    assert _autotune.stats == {"timed": 1, "from_disk": 1}
    np.testing.assert_array_equal(again, tuned)
    PLANS.clear()
