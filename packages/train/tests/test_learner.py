"""The Learner: a run's artifacts in Burn's layout, resume from checkpoints (bit-identical to an
uninterrupted run, including after a SIGKILL mid-epoch, in a subprocess), graceful interruption,
gradient accumulation, early stopping, checkpoint retention, the summary and the evaluator."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("burn_autodiff")
pytest.importorskip("burn_record")

HERE = Path(__file__).parent
import toy_training as toy  # noqa: E402

from burn_train import (  # noqa: E402
    AccuracyMetric,
    Aggregate,
    Direction,
    EvaluatorBuilder,
    KeepLastNCheckpoints,
    LearnerSummary,
    LossMetric,
    MetricEarlyStoppingStrategy,
    MetricEntry,
    MetricMetadata,
    Split,
    StoppingCondition,
)
from burn_train.data import DataLoaderBuilder  # noqa: E402


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key, strict=True)


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The artifacts of 4 uninterrupted epochs (seed 7), their weights in ``weights.npz``."""
    folder = tmp_path_factory.mktemp("reference")
    np.savez(folder / "weights.npz", **toy.weights(toy.run(folder, 4)))
    return folder


@pytest.fixture(scope="module")
def reference(reference_dir: Path) -> dict[str, np.ndarray]:
    """The weights after 4 uninterrupted epochs (seed 7)."""
    with np.load(reference_dir / "weights.npz") as saved:
        return {key: saved[key] for key in saved.files}


def test_artifacts_follow_burns_layout(tmp_path: Path, reference: dict[str, np.ndarray]) -> None:
    model = toy.run(tmp_path, 4)
    _same(toy.weights(model), reference)  # the same seed, the same weights
    for split in ("train", "valid"):
        for epoch in range(1, 5):
            for name in ("Accuracy", "Loss"):
                assert (tmp_path / split / f"epoch-{epoch}" / f"{name}.log").exists()
    lines = (tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert len(lines) == 12  # 384 items in batches of 32
    value, count = lines[-1].split(",")
    assert float(value) > 0
    assert count == "32"
    log = (tmp_path / "experiment.log").read_text()
    assert "fit: 4 epochs" in log
    assert "checkpoint: saved epoch 4" in log
    html = (tmp_path / "curves.html").read_text()
    assert html.count("<svg") == 2
    assert "polyline" in html
    # kept: the last two epochs and the best by validation loss
    states = sorted(p.name for p in (tmp_path / "checkpoint").glob("state-*"))
    assert states == ["state-3.mpk", "state-4.mpk"]


def test_resume_after_an_epoch_is_bit_identical(tmp_path: Path, reference: dict[str, np.ndarray]) -> None:
    toy.run(tmp_path, 2)
    resumed = toy.run(tmp_path, 4, resume=2)
    _same(toy.weights(resumed), reference)
    assert len((tmp_path / "train" / "epoch-4" / "Loss.log").read_text().splitlines()) == 12


def test_interrupt_mid_epoch_checkpoints_and_resumes_bit_identically(
    tmp_path: Path, reference: dict[str, np.ndarray], reference_dir: Path
) -> None:
    stopper = toy.StopAfter(epoch=3, iteration=5)

    def hook(builder: Any) -> Any:
        stopper.interrupter = builder.interrupter()
        return builder.metric_train(stopper)

    toy.run(tmp_path, 4, builder_hook=hook)
    assert not (tmp_path / "valid" / "epoch-3").exists()
    # the stop asked while step 5's metrics are read (once step 6 is queued) ends the epoch after step 6
    assert len((tmp_path / "train" / "epoch-3" / "Loss.log").read_text().splitlines()) == 6
    resumed = toy.run(tmp_path, 4, resume=3)
    _same(toy.weights(resumed), reference)
    assert len((tmp_path / "train" / "epoch-3" / "Loss.log").read_text().splitlines()) == 12
    # epoch 3's values cover all of its batches, those before the stop included
    log = (tmp_path / "experiment.log").read_text()
    uninterrupted = (reference_dir / "experiment.log").read_text()
    line = next(text for text in uninterrupted.splitlines() if "epoch 3: " in text).split("epoch 3: ")[1]
    assert line in log


def test_sigkill_mid_epoch_then_resume_is_bit_identical(
    tmp_path: Path, reference: dict[str, np.ndarray]
) -> None:
    script = [sys.executable, str(HERE / "toy_training.py"), str(tmp_path), "--epochs", "4"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    errors = tmp_path / "stderr.txt"
    with open(errors, "wb") as stderr:
        child = subprocess.Popen([*script, "--delay", "0.02"], env=env, stderr=stderr)
    progress = tmp_path / "progress.txt"
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            lines = progress.read_text().splitlines() if progress.exists() else []
            reached = bool(lines) and lines[-1].split() >= ["3", "4"] and lines[-1].split()[0] == "3"
            # epoch 2's checkpoint is written while epoch 3 trains: kill once it is whole
            if reached and list((tmp_path / "checkpoint").glob("state-2.*")):
                break
            assert child.poll() is None, errors.read_text()
            time.sleep(0.005)
        else:
            pytest.fail("the child did not reach epoch 3 in time")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    last = progress.read_text().splitlines()[-1].split()
    assert last[0] == "3"
    assert 0 < int(last[1]) < 12, last  # killed mid-epoch
    assert not (tmp_path / "final.npz").exists()
    done = subprocess.run([*script, "--resume", "2"], env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    with np.load(tmp_path / "final.npz") as saved:
        _same({key: saved[key] for key in saved.files}, reference)
    assert len((tmp_path / "train" / "epoch-3" / "Loss.log").read_text().splitlines()) == 12


def test_gradient_accumulation_steps_the_optimizer_every_n_batches(tmp_path: Path) -> None:
    from burn_record import FullPrecisionSettings, NamedMpkFileRecorder

    recorder = NamedMpkFileRecorder(FullPrecisionSettings())
    for accumulation, steps in [(3, 4), (5, 3)]:  # 12 batches: 4 full groups of 3; 2 groups of 5 and a last 2
        toy.run(tmp_path / str(accumulation), 1, accumulation=accumulation)
        record = recorder.load(tmp_path / str(accumulation) / "checkpoint" / "scheduler-1")
        assert record == {"iter_idx": steps - 1}  # the index of the last step taken


def test_early_stopping_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def hook(builder: Any) -> Any:
        strategy = MetricEarlyStoppingStrategy(
            LossMetric(),
            Aggregate.MEAN,
            Direction.HIGHEST,
            Split.VALID,
            StoppingCondition.no_improvement_since(2),
        )  # validation loss keeps falling, so "highest" stops once epoch 1 stays the best for 2 epochs
        return builder.early_stopping(strategy).summary().with_checkpointing_strategy(KeepLastNCheckpoints(1))

    toy.run(tmp_path, 6, builder_hook=hook)
    output = capsys.readouterr().out
    assert "[Epoch 3/6]" in output
    assert "[Epoch 4/6]" not in output
    assert "Learner Summary" in output
    assert "| Valid | Loss" in output
    assert sorted(p.name for p in (tmp_path / "checkpoint").glob("state-*")) == ["state-3.mpk"]


def test_summary_table_and_evaluator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = toy.run(tmp_path, 1)
    loader = DataLoaderBuilder(toy.Batcher()).batch_size(50).build(toy.dataset(100, 3))
    evaluator = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).build(model)
    summary = evaluator.eval("test", loader)
    printed = capsys.readouterr().out
    assert "| test  | Accuracy" in printed
    assert 0 <= summary.values["Accuracy"] <= 100
    assert (tmp_path / "test" / "epoch-1" / "Loss.log").exists()
    from burn_train import MetricsStore

    store = MetricsStore()
    for epoch, value in [(1, 0.5), (2, 0.3), (3, 0.4)]:
        store.record(Split.VALID, epoch, "Loss", value)
    text = str(LearnerSummary.from_store(store))
    assert "Total Epochs: 3" in text
    assert "| Valid | Loss   | 0.300 | 2     | 0.500 | 1     |" in text


def test_training_without_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from burn_autodiff import Autodiff
    from burn_ndarray import NdArray
    from burn_nn.optim import AdamConfig
    from burn_train import CliRenderer, LearnerBuilder

    device = Autodiff(NdArray()).device()
    loader = DataLoaderBuilder(toy.Batcher()).batch_size(64).build(toy.dataset(128, 1))
    learner = (
        LearnerBuilder(tmp_path)
        .metrics(LossMetric())
        .renderer(CliRenderer())
        .with_application_logger(False)
        .build(toy.Model(device), AdamConfig().init(), 1e-3)
    )
    learner.fit(loader)
    assert capsys.readouterr().out.startswith("[Epoch 1/1] train Loss ")
    assert len((tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()) == 2
    learner.fit(loader)  # a new run in the same folder starts the logs over
    assert len((tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()) == 2
    assert not (tmp_path / "valid").exists()
    assert not (tmp_path / "experiment.log").exists()


def test_builder_errors_name_what_is_wrong(tmp_path: Path) -> None:
    from burn_autodiff import Autodiff
    from burn_ndarray import NdArray
    from burn_nn import LinearConfig
    from burn_nn.optim import AdamConfig
    from burn_train import LearnerBuilder

    device = Autodiff(NdArray()).device()
    with pytest.raises(ValueError, match="a device is listed twice"):
        LearnerBuilder(tmp_path).devices([device, device])
    with pytest.raises(ValueError, match="belong to different backends"):
        LearnerBuilder(tmp_path).devices([device, NdArray().device()])
    with pytest.raises(TypeError, match=r"needs a train_step\(batch\) method"):
        LearnerBuilder(tmp_path).build(LinearConfig(2, 2).init(device), AdamConfig().init(), 1e-3)
    with pytest.raises(ValueError, match="a metric named 'Loss' is registered already"):
        LearnerBuilder(tmp_path).metric_train(LossMetric()).metric_train(LossMetric())
    with pytest.raises(TypeError, match="expected a Metric"):
        LearnerBuilder(tmp_path).metric_train(object())
    learner = LearnerBuilder(tmp_path).checkpoint(3).build(toy.Model(device), AdamConfig().init(), 1e-3)
    loader = DataLoaderBuilder(toy.Batcher()).batch_size(64).build(toy.dataset(64, 1))
    with pytest.raises(ValueError, match="needs with_file_checkpointer"):
        learner.fit(loader, loader)
    missing = LearnerBuilder(tmp_path).with_file_checkpointer().checkpoint(3)
    with pytest.raises(FileNotFoundError, match="no complete checkpoint of epoch 3"):
        missing.build(toy.Model(device), AdamConfig().init(), 1e-3).fit(loader, loader)


def test_random_states_round_trip_through_a_recorder(tmp_path: Path) -> None:
    import random

    from burn_autodiff import Autodiff
    from burn_backend import Tensor
    from burn_ndarray import NdArray
    from burn_record import NamedMpkFileRecorder
    from burn_train._state import capture_rng, restore_rng

    device = Autodiff(NdArray()).device()
    device.seed(5)
    recorder = NamedMpkFileRecorder()
    recorder.save(capture_rng([device]), tmp_path / "rng")
    expected = (
        Tensor.random([4], device=device).tolist(),
        random.random(),
        np.random.rand(),  # noqa: NPY002 (the global generator is part of what is restored)
    )
    assert restore_rng(recorder.load(tmp_path / "rng"), [device]) == []
    assert (Tensor.random([4], device=device).tolist(), random.random(), np.random.rand()) == expected  # noqa: NPY002


def test_a_user_metric_as_the_books_metric_chapter_writes_it(tmp_path: Path) -> None:
    from burn_train import AccuracyInput, NumericMetricState, as_numpy

    class MaxLogit:
        input_type = AccuracyInput

        def __init__(self) -> None:
            self.state = NumericMetricState()

        def name(self) -> str:
            return "Max logit"

        def update(self, item: AccuracyInput, metadata: MetricMetadata) -> MetricEntry:
            return self.state.update(float(as_numpy(item.outputs).max()), 1, self.name(), precision=3)

        def clear(self) -> None:
            self.state.reset()

        def value(self) -> float:
            return self.state.value()

        def running_value(self) -> float:
            return self.state.running_value()

    captured: dict[str, Any] = {}

    def hook(builder: Any) -> Any:
        captured["builder"] = builder
        return builder.metric_valid_numeric(MaxLogit())

    toy.run(tmp_path, 2, builder_hook=hook)
    lines = (tmp_path / "valid" / "epoch-2" / "Max_logit.log").read_text().splitlines()
    assert len(lines) == 2  # 128 items in batches of 64
    assert all(float(line.split(",")[0]) > 0 for line in lines)


def test_the_async_checkpointer_writes_in_order_and_reports_a_failed_write(tmp_path: Path) -> None:
    from burn_train import AsyncCheckpointer, FileCheckpointer

    checkpointer = AsyncCheckpointer(FileCheckpointer(None, tmp_path / "checkpoint"))
    deleted: list[int] = []
    for epoch in (1, 2, 3):
        checkpointer.save(epoch, {"state": {"epoch": epoch}}, then=lambda e=epoch: deleted.append(e))
    assert checkpointer.epochs() == [1, 2, 3]  # waits for the write in flight
    assert deleted == [1, 2, 3]
    assert checkpointer.load(2, "state") == {"epoch": 2}

    class Failing(FileCheckpointer):
        def save(self, epoch: int, records: Any) -> list[Path]:
            raise OSError("disk full")

    failing = AsyncCheckpointer(Failing(None, tmp_path / "other"))
    failing.save(1, {"state": {}})
    with pytest.raises(OSError, match="disk full"):
        failing.wait()
    failing.wait()  # reported once


def test_a_learner_without_training_metrics_trains(tmp_path: Path) -> None:
    from burn_autodiff import Autodiff
    from burn_ndarray import NdArray
    from burn_nn.optim import AdamConfig
    from burn_train import LearnerBuilder

    device = Autodiff(NdArray()).device()
    loader = DataLoaderBuilder(toy.Batcher()).batch_size(64).build(toy.dataset(128, 1))
    learner = (
        LearnerBuilder(tmp_path)
        .metric_valid_numeric(LossMetric())
        .devices([device])
        .num_epochs(1)
        .build(toy.Model(device), AdamConfig().init(), 1e-3)
    )
    learner.fit(loader, loader)
    assert 1 in learner.store.history("Loss", Split.VALID)


class EventLog:
    """A metric that logs its updates (with the step they are for) beside the steps the model runs."""

    input_type = None

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def name(self) -> str:
        return "Events"

    def update(self, item: object, metadata: MetricMetadata) -> MetricEntry:
        self.events.append(f"metric {metadata.iteration}")
        return MetricEntry("Events", "", "")

    def clear(self) -> None:
        pass


def test_a_step_is_queued_before_the_last_steps_metrics_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the device computes one step while the host waits for the last one's values and prepares the next
    events: list[str] = []
    train_step, valid_step = toy.Model.train_step, toy.Model.valid_step

    def logged(step: Any, name: str) -> Any:
        def run(model: Any, batch: Any) -> Any:
            events.append(name)
            return step(model, batch)

        return run

    monkeypatch.setattr(toy.Model, "train_step", logged(train_step, "train"))
    monkeypatch.setattr(toy.Model, "valid_step", logged(valid_step, "valid"))
    log = EventLog(events)
    toy.run(tmp_path, 1, builder_hook=lambda builder: builder.metric_train(log).metric_valid(log))
    steps = 12  # 384 items in batches of 32
    expected = ["train", "train"]
    for step in range(1, steps):
        expected += ["metric", "train"] if step < steps - 1 else ["metric", "metric"]
    train_events = [event.split()[0] for event in events[: 2 * steps]]
    assert train_events == expected
    assert [event for event in events[: 2 * steps] if event.startswith("metric")] == [
        f"metric {step}" for step in range(1, steps + 1)
    ]
    assert events[2 * steps : 2 * steps + 3] == ["valid", "valid", "metric 1"]


def _epoch_mean(log: Path) -> float:
    rows = [line.split(",") for line in log.read_text().splitlines()]
    return sum(float(v) * int(n) for v, n in rows) / sum(int(n) for _, n in rows)


def test_restore_best_returns_the_model_of_the_best_epoch(tmp_path: Path) -> None:
    from burn_record import NamedMpkFileRecorder

    # the worst epoch by validation loss, so that the best by this measure is not the last epoch
    model = toy.run(tmp_path, 3, builder_hook=lambda b: b.restore_best("Loss", direction=Direction.HIGHEST))
    losses = {epoch: _epoch_mean(tmp_path / "valid" / f"epoch-{epoch}" / "Loss.log") for epoch in (1, 2, 3)}
    best = max(losses, key=losses.__getitem__)
    assert best != 3, losses
    weights = toy.weights(model)
    saved = NamedMpkFileRecorder().load(tmp_path / "checkpoint" / f"model-{best}")
    np.testing.assert_array_equal(weights["linear1.weight"], saved["linear1"]["weight"].value.to_numpy())
    # the returned model's validation loss, recomputed in float64, is the best epoch's
    items = toy.dataset(128, 2)
    x = np.stack([items.get(i).features for i in range(128)]).astype(np.float64)
    labels = np.array([items.get(i).label for i in range(128)])
    hidden = np.maximum(x @ weights["linear1.weight"] + weights["linear1.bias"], 0.0)
    logits = hidden @ weights["linear2.weight"] + weights["linear2.bias"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(-log_probs[np.arange(128), labels].mean(), losses[best], rtol=1e-5)
    assert (
        f"returning the model of epoch {best}, the best by valid Loss"
        in (tmp_path / "experiment.log").read_text()
    )


def test_restore_best_needs_a_checkpointer_and_a_numeric_metric(tmp_path: Path) -> None:
    from burn_autodiff import Autodiff
    from burn_ndarray import NdArray
    from burn_nn.optim import AdamConfig
    from burn_train import LearnerBuilder

    model = toy.Model(Autodiff(NdArray()).device())
    with pytest.raises(ValueError, match=r"restore_best\('Loss'\): .*add with_file_checkpointer\(\)"):
        LearnerBuilder(tmp_path).restore_best().build(model, AdamConfig().init(), 1e-3)
    builder = LearnerBuilder(tmp_path).with_file_checkpointer().metric_valid_numeric(LossMetric())
    with pytest.raises(ValueError, match=r"no numeric valid metric of that name \(registered: \['Loss'\]\)"):
        builder.restore_best("Accuracy", direction=Direction.HIGHEST).build(model, AdamConfig().init(), 1e-3)
