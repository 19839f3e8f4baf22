"""``LearnerBuilder.with_step_replay``: the training step and the optimizer step as one function, wrapped
by ``burn_fusion.replay``. On the CPU (NdArray cannot record, so every call runs the function) it must
train exactly as the usual step; on a GPU the replayed run must equal the eager one bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("burn_autodiff")
pytest.importorskip("burn_fusion")

import toy_training as toy

import burn_fusion
from burn_autodiff import Autodiff
from burn_fusion import Fusion
from burn_ndarray import NdArray
from burn_router import Router
from burn_train import LearnerBuilder


def _replayed(builder: LearnerBuilder) -> LearnerBuilder:
    return builder.with_step_replay(burn_fusion.replay)


def _logs(folder: Path, split: str = "train") -> list[str]:
    return [
        (folder / split / f"epoch-{e}" / name).read_text()
        for e in (1, 2)
        for name in ("Loss.log", "Accuracy.log")
    ]


def test_the_replayed_function_trains_as_the_usual_step(tmp_path: Path) -> None:
    # a Fusion layer of its own for each run: both compile their kernels after the same counts
    usual = toy.run(
        tmp_path / "usual", 2, devices=[Autodiff(Fusion(NdArray())).device()], workers=0, capturable=True
    )
    wrapped: list[Any] = []

    def recorder(function: Any) -> Any:
        replayed = burn_fusion.replay(function)
        wrapped.append(replayed)
        return replayed

    replayed = toy.run(
        tmp_path / "replayed",
        2,
        devices=[Autodiff(Fusion(NdArray())).device()],
        workers=0,
        capturable=True,
        builder_hook=lambda builder: builder.with_step_replay(recorder),
    )
    train_step, valid_step = wrapped
    assert train_step.stats["eager"] == 24  # 12 batches an epoch, each run by the function
    assert valid_step.stats["eager"] == 4  # 2 batches an epoch
    for name, value in toy.weights(usual).items():
        np.testing.assert_array_equal(toy.weights(replayed)[name], value, err_msg=name)
    assert _logs(tmp_path / "replayed") == _logs(tmp_path / "usual")
    assert _logs(tmp_path / "replayed", "valid") == _logs(tmp_path / "usual", "valid")


def test_without_a_recording_backend_the_option_changes_nothing(tmp_path: Path) -> None:
    usual = toy.run(tmp_path / "usual", 2, workers=0)
    replayed = toy.run(tmp_path / "replayed", 2, workers=0, builder_hook=_replayed)
    for name, value in toy.weights(usual).items():
        np.testing.assert_array_equal(toy.weights(replayed)[name], value, err_msg=name)


@pytest.mark.parametrize(
    "hook",
    [
        lambda b: b.grads_accumulation(2),
        lambda b: b.devices([Autodiff(Router(NdArray(), NdArray())).device(i) for i in (0, 1)]),
    ],
    ids=["accumulation", "devices"],
)
def test_replay_does_not_combine_with_several_steps_or_devices(tmp_path: Path, hook: Any) -> None:
    with pytest.raises(ValueError, match=r"with_step_replay\(\) replays the step of one device"):
        toy.run(tmp_path, 1, workers=0, builder_hook=lambda b: _replayed(hook(b)))
    with pytest.raises(TypeError, match=r"expected a step recorder such as burn_fusion\.replay, got bool"):
        LearnerBuilder(tmp_path).with_step_replay(True)  # type: ignore[arg-type]


def test_replayed_learner_steps_equal_eager_ones_on_the_gpu(tmp_path: Path) -> None:
    cuda = pytest.importorskip("burn_cuda")
    from burn_cuda._cupy import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs an NVIDIA GPU through CuPy: {reason}")

    def train(folder: Path, hook: Any = None) -> Any:
        device = Autodiff(Fusion(cuda.Cuda())).device(0)
        return toy.run(folder, 3, devices=[device], workers=0, lr=1e-2, capturable=True, builder_hook=hook)

    eager = train(tmp_path / "eager")
    replayed = train(tmp_path / "replayed", _replayed)
    for name, value in toy.weights(eager).items():
        np.testing.assert_array_equal(toy.weights(replayed)[name], value, err_msg=name)
    assert _logs(tmp_path / "replayed") == _logs(tmp_path / "eager")
    assert _logs(tmp_path / "replayed", "valid") == _logs(tmp_path / "eager", "valid")


def test_a_train_step_not_returning_a_train_output_is_named() -> None:
    from burn_train._output import run_train_step
    from burn_train._step_replay import train_and_update

    class Wrong:
        def train_step(self, batch: Any) -> Any:
            return batch

    with pytest.raises(TypeError, match="train_step must return a TrainOutput, got int"):
        run_train_step(Wrong(), 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="train_step must return a TrainOutput, got str"):
        train_and_update(Wrong(), None, 0.1, "batch")  # type: ignore[arg-type]
