"""Any state through any recorder: modules (parameters and running state), optimizer state, learning-rate
schedulers, random generators and nested dicts; loads that do not fit report every entry by path and
change nothing; partial loads say what was missing and unused; a resumed training run equals an
uninterrupted one bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _record_support import FILE_RECORDERS, equal

from burn_backend import ParamRecord, Tensor, TensorData
from burn_backend.activation import relu
from burn_record import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    NamedMpkFileRecorder,
    PrettyJsonFileRecorder,
)

burn_nn = pytest.importorskip("burn_nn")
burn_autodiff = pytest.importorskip("burn_autodiff")
burn_ndarray = pytest.importorskip("burn_ndarray")
from burn_nn import (  # noqa: E402
    BatchNormConfig,
    DropoutConfig,
    LinearConfig,
    Module,
    RecordError,
    load_rng_record,
    loss,
    rng_record,
)
from burn_nn.optim import AdamConfig, CosineAnnealingLrSchedulerConfig, GradientsParams  # noqa: E402


class Net(Module):
    """Linear layers, batch norm running state, dropout, a list of heads."""

    def __init__(self, device: Any, hidden: int = 8) -> None:
        self.input = LinearConfig(4, hidden).init(device)
        self.norm = BatchNormConfig(hidden).init(device)
        self.dropout = DropoutConfig(0.3).init()
        self.heads = [LinearConfig(hidden, 3).init(device), LinearConfig(hidden, 3).init(device)]

    def forward(self, x: Tensor) -> Tensor:
        h = self.dropout(relu(self.input(x)))
        h = self.norm(h.reshape([*h.dims(), 1])).reshape(h.dims())
        return self.heads[0](h) + self.heads[1](h)


def _device() -> Any:
    device = burn_autodiff.Autodiff(burn_ndarray.NdArray()).device()
    device.seed(0)
    return device


def _values(module: Module) -> dict[str, np.ndarray[Any, Any]]:
    record = module.into_record()
    out: dict[str, np.ndarray[Any, Any]] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, ParamRecord):
            out[path] = value.value.to_numpy().copy()
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}.{index}")

    walk(record, "")
    return out


@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_modules_save_and_load_through_every_recorder(recorder_type, tmp_path: Path) -> None:
    device = _device()
    model = Net(device)
    model.norm.running_mean.update(
        Tensor.from_data(np.arange(8, dtype=np.float32), device.backend.inner.device())
    )
    recorder = recorder_type(FullPrecisionSettings())
    written = model.save_file(tmp_path / "model", recorder)
    assert written == tmp_path / f"model.{recorder.file_extension}"
    fresh = Net(device)
    loaded = fresh.load_file(tmp_path / "model", recorder, device)
    for (name, ours), (_, theirs) in zip(loaded.named_params(), model.named_params()):
        assert ours.id == theirs.id, name
        np.testing.assert_array_equal(ours.val().to_data().to_numpy(), theirs.val().to_data().to_numpy())
    np.testing.assert_array_equal(loaded.norm.running_mean.value().to_data().to_numpy(), np.arange(8))
    assert loaded.input.weight.val().is_require_grad()
    assert fresh.input.weight.id != model.input.weight.id  # the module it was called on is unchanged


def test_a_record_that_does_not_fit_names_every_entry_and_changes_nothing(tmp_path: Path) -> None:
    device = _device()
    model = Net(device)
    before = _values(model)
    record = Net(device, hidden=6).into_record()  # every layer touching the hidden size is mis-shaped
    del record["heads"][1]["bias"]
    record["extra"] = {"weight": TensorData([1.0])}
    record["input"]["bias"] = "a string where a tensor belongs"
    NamedMpkFileRecorder().save(record, tmp_path / "other")
    with pytest.raises(RecordError) as error:
        model.load_file(tmp_path / "other", NamedMpkFileRecorder())
    assert error.value.missing == ["heads.1.bias"]
    assert error.value.unused == ["extra"]
    assert error.value.mismatched == [
        "input.weight: record shape [4, 6], module shape [4, 8]",
        "input.bias: expected a ParamRecord or TensorData, got str",
        "norm.gamma: record shape [6], module shape [8]",
        "norm.beta: record shape [6], module shape [8]",
        "norm.running_mean: record shape [6], module shape [8]",
        "norm.running_var: record shape [6], module shape [8]",
        "heads.0.weight: record shape [6, 3], module shape [8, 3]",
        "heads.1.weight: record shape [6, 3], module shape [8, 3]",
    ]
    assert "missing heads.1.bias; unexpected extra; mismatched input.weight" in str(error.value)
    after = _values(model)
    assert all(np.array_equal(before[key], after[key]) for key in before)


def test_partial_loading_returns_what_was_missing_and_unused(tmp_path: Path) -> None:
    device = _device()
    model = Net(device)
    source = Net(device)
    record = source.into_record()
    del record["heads"][1]
    record["old_head"] = {"weight": TensorData([1.0])}
    NamedMpkFileRecorder().save(record, tmp_path / "pretrained")
    result = model.load_file_partial(tmp_path / "pretrained", NamedMpkFileRecorder())
    assert result.missing == ["heads.1.weight", "heads.1.bias"]
    assert result.unused == ["old_head"]
    np.testing.assert_array_equal(
        result.module.input.weight.val().to_data().to_numpy(), source.input.weight.val().to_data().to_numpy()
    )
    assert result.module.heads[1].weight.id == model.heads[1].weight.id  # kept the module's own
    with pytest.raises(RecordError, match=r"input\.weight: record shape"):
        model.load_record_partial(Net(device, hidden=6).into_record())


@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_optimizer_scheduler_rng_and_nested_dicts_round_trip(recorder_type, tmp_path: Path) -> None:
    device = _device()
    model = Net(device)
    optim = AdamConfig().init()
    scheduler = CosineAnnealingLrSchedulerConfig(1e-2, 10).init()
    x = Tensor.random([5, 4], device=device)
    for _ in range(3):
        grads = GradientsParams.from_grads(model(x).sum().backward(), model)
        model = optim.step(scheduler.step(), model, grads)
    shuffle = np.random.default_rng(5)
    shuffle.random(3)
    legacy = np.random.Generator(np.random.MT19937(9))
    state = {
        "optimizer": optim.into_record(),
        "scheduler": scheduler.into_record(),
        "rng": {"device": rng_record(device), "shuffle": rng_record(shuffle), "legacy": rng_record(legacy)},
        "progress": {"epoch": 2, "metrics": {"loss": [0.5, 0.25], "name": "run-1"}, "done": False},
    }
    recorder = recorder_type(FullPrecisionSettings())
    loaded = recorder.load(recorder.save(state, tmp_path / "checkpoint"))
    assert equal(state, loaded)

    restored = AdamConfig().init().load_record(loaded["optimizer"])
    assert equal(restored.into_record(), optim.into_record())
    other = CosineAnnealingLrSchedulerConfig(1e-2, 10).init().load_record(loaded["scheduler"])
    assert [other.step() for _ in range(4)] == [scheduler.step() for _ in range(4)]
    generator = np.random.default_rng(0)
    load_rng_record(generator, loaded["rng"]["shuffle"])
    np.testing.assert_array_equal(generator.random(4), shuffle.random(4))
    mt = np.random.Generator(np.random.MT19937(0))
    load_rng_record(mt, loaded["rng"]["legacy"])
    np.testing.assert_array_equal(mt.random(4), legacy.random(4))
    with pytest.raises(ValueError, match="the record holds a 'MT19937' state, the generator is 'PCG64'"):
        load_rng_record(generator, loaded["rng"]["legacy"])


def test_device_rng_records_repeat_dropout_masks() -> None:
    device = _device()
    x = Tensor.ones([64], device=device)
    dropout = DropoutConfig(0.5).init()
    state = rng_record(device)
    first = dropout(x).to_data().to_numpy()
    device.seed(123)
    load_rng_record(device, state)
    np.testing.assert_array_equal(dropout(x).to_data().to_numpy(), first)
    with pytest.raises(TypeError, match="has no NumPy bit_generator state"):
        rng_record(object())  # type: ignore[arg-type]


def _train(
    device: Any, steps: range, state: dict[str, Any] | None, save_to: Path | None
) -> tuple[Net, dict[str, Any]]:
    """Train ``Net`` with dropout, Adam, a cosine schedule and shuffled batches over ``steps``, starting
    from ``state`` (a loaded checkpoint) or from scratch; save a checkpoint at the end to ``save_to``."""
    rng = np.random.default_rng(1)
    data = rng.normal(size=(64, 4)).astype(np.float32)
    labels = rng.integers(0, 3, 64)
    model = Net(device)
    optim = AdamConfig().init()
    scheduler = CosineAnnealingLrSchedulerConfig(1e-2, 20).init()
    shuffle = np.random.default_rng(2)
    criterion = loss.CrossEntropyLossConfig().init(device)
    if state is not None:
        model = model.load_record(state["model"])
        optim = optim.load_record(state["optimizer"])
        scheduler = scheduler.load_record(state["scheduler"])
        load_rng_record(shuffle, state["rng"]["shuffle"])
        load_rng_record(device, state["rng"]["device"])
    for _ in steps:
        batch = shuffle.permutation(64)[:16]
        output = model(Tensor.from_data(data[batch], device))
        value = criterion(output, Tensor.from_data(labels[batch], device))
        grads = GradientsParams.from_grads(value.backward(), model)
        model = optim.step(scheduler.step(), model, grads)
    checkpoint = {
        "model": model.into_record(),
        "optimizer": optim.into_record(),
        "scheduler": scheduler.into_record(),
        "rng": {"shuffle": rng_record(shuffle), "device": rng_record(device)},
    }
    if save_to is not None:
        NamedMpkFileRecorder(FullPrecisionSettings()).save(checkpoint, save_to)
    return model, checkpoint


@pytest.mark.parametrize(
    "settings", [FullPrecisionSettings(), DoublePrecisionSettings()], ids=["full", "double"]
)
def test_a_resumed_training_run_equals_an_uninterrupted_one_bit_for_bit(settings, tmp_path: Path) -> None:
    device = _device()
    uninterrupted, _ = _train(device, range(10), None, None)

    device.seed(0)
    _train(device, range(4), None, tmp_path / "checkpoint")
    device.seed(999)  # a fresh process would start from other random states: the checkpoint restores them
    checkpoint = NamedMpkFileRecorder(settings).load(tmp_path / "checkpoint")
    resumed, _ = _train(device, range(4, 10), checkpoint, None)

    expected, actual = _values(uninterrupted), _values(resumed)
    assert list(expected) == list(actual)
    for key in expected:
        assert expected[key].dtype == actual[key].dtype
        assert expected[key].tobytes() == actual[key].tobytes(), key


def test_json_checkpoints_of_training_state_are_readable(tmp_path: Path) -> None:
    device = _device()
    _, checkpoint = _train(device, range(2), None, None)
    path = PrettyJsonFileRecorder().save(
        {"scheduler": checkpoint["scheduler"], "rng": checkpoint["rng"]}, tmp_path / "s"
    )
    text = path.read_text()
    assert '"bit_generator": "PCG64"' in text
    assert all(f'"{key}": ' in text for key in checkpoint["scheduler"])
    assert equal(PrettyJsonFileRecorder().load(path)["rng"], checkpoint["rng"])
