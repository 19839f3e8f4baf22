"""``LearnerBuilder.with_step_replay``: the training step and the optimizer step as one function, wrapped
by ``burn_fusion.replay``. On NdArray (which cannot record, so every call runs the function) it must
train exactly as the usual step; with a backend that records (the CPU recording backend of
burn-fusion's tests, and CUDA graphs on a GPU) the replayed run must equal the eager one bit for bit,
a last, smaller batch in each epoch included (a second recording sharing the optimizer's state)."""

from __future__ import annotations

import gc
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


def _logs(folder: Path, split: str = "train", epochs: int = 2) -> list[str]:
    return [
        (folder / split / f"epoch-{e}" / name).read_text()
        for e in range(1, epochs + 1)
        for name in ("Loss.log", "Accuracy.log")
    ]


def _recorded_against_eager(folder: Path, device: Any) -> tuple[Any, Any, list[Any]]:
    """4 epochs of 11 batches of 32 and one of 24, eager and replayed: the two models and the replayed
    functions (train step, valid step)."""
    wrapped: list[Any] = []

    def recorder(function: Any) -> Any:
        wrapped.append(burn_fusion.replay(function))
        return wrapped[-1]

    def train(name: str, hook: Any = None) -> Any:
        return toy.run(
            folder / name, 4, devices=[device()], workers=0, lr=1e-2, capturable=True, train_items=376,
            builder_hook=hook,
        )  # fmt: skip

    eager = train("eager")
    replayed = train("replayed", lambda builder: builder.with_step_replay(recorder))
    for name, value in toy.weights(eager).items():
        np.testing.assert_array_equal(toy.weights(replayed)[name], value, err_msg=name)
    for split in ("train", "valid"):
        assert _logs(folder / "replayed", split, 4) == _logs(folder / "eager", split, 4)
    return eager, replayed, wrapped


def test_the_replayed_function_trains_as_the_usual_step(tmp_path: Path) -> None:
    # a Fusion layer of its own for each run: both compile their kernels after the same counts. Its
    # settings differ from the default stack's, so that its device never equals the default device (the
    # loader's): batches equal to the run's device would stay there, and the runs would share that
    # device's Fusion layer and its compile counts (BURN_DEVICE=autodiff-fusion-ndarray)
    usual = toy.run(
        tmp_path / "usual", 2, devices=[Autodiff(Fusion(NdArray(), compile_after=3)).device()], workers=0,
        capturable=True,
    )  # fmt: skip
    wrapped: list[Any] = []

    def recorder(function: Any) -> Any:
        replayed = burn_fusion.replay(function)
        wrapped.append(replayed)
        return replayed

    replayed = toy.run(
        tmp_path / "replayed",
        2,
        devices=[Autodiff(Fusion(NdArray(), compile_after=3)).device()],
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


def test_recorded_learner_steps_equal_eager_ones(tmp_path: Path) -> None:
    from recording import RecordingNdArray

    # chains fused from their first run, so that eager calls run the kernels the recordings hold; Python's
    # cycle collector off, so that the outputs must be released by reference counts alone (a recursive
    # closure's cycle once kept them until a collection, which decided how many a replay copied out)
    gc.disable()
    try:
        _, _, (train_step, valid_step) = _recorded_against_eager(
            tmp_path, lambda: Autodiff(Fusion(RecordingNdArray(), compile_after=1)).device()
        )
    finally:
        gc.enable()
    # full batches: the first step (no optimizer state yet), 2 traced, a capture, then replays; the last
    # batch of each epoch: traced in epochs 1 and 2, captured in 3, replayed in 4
    assert train_step.stats["captured"] == 2, train_step.stats
    assert train_step.stats["replayed"] == 4 * 12 - 1 - 2 - 1 - 3, train_step.stats
    assert (valid_step.stats["captured"], valid_step.stats["replayed"]) == (1, 8 - 3), valid_step.stats
    # each step's outputs are released before the next step: no replay copies one out
    assert train_step.stats["detached"] == valid_step.stats["detached"] == 0


def test_replayed_learner_steps_equal_eager_ones_on_the_gpu(tmp_path: Path) -> None:
    cuda = pytest.importorskip("burn_cuda")
    from burn_cuda._cupy import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs an NVIDIA GPU through CuPy: {reason}")
    # chains fused from their first run, as above; a Fusion layer of its own for each run, whose settings
    # differ from the default stack's (BURN_DEVICE=autodiff-fusion-cuda): a batch on a device equal to
    # the run's stays there, and the runs would share that device's Fusion layer and its compile counts
    _, _, (train_step, _) = _recorded_against_eager(
        tmp_path, lambda: Autodiff(Fusion(cuda.Cuda(), compile_after=1)).device(0)
    )
    assert train_step.stats["captured"] == 2, train_step.stats


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
