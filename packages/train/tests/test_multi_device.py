"""Data-parallel training over two devices (``Autodiff(Router(NdArray(), NdArray()))``, two CPU devices):
the step's gradients are the average of each device's, the Learner splits the loader and trains, and a
multi-device run resumes from its checkpoint bit-identically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("burn_autodiff")
pytest.importorskip("burn_record")
pytest.importorskip("burn_router")

import toy_training as toy

from burn_autodiff import Autodiff
from burn_backend import Device, Tensor
from burn_ndarray import NdArray
from burn_nn import LinearConfig, Module, loss
from burn_router import Router
from burn_train import SplitLoader, TrainOutput, data_parallel_step
from burn_train.data import DataLoaderBuilder


def two_devices() -> list[Device]:
    backend = Autodiff(Router(NdArray(), NdArray()))
    return [backend.device(0), backend.device(1)]


class Regression(Module):
    def __init__(self, device: Device) -> None:
        self.linear = LinearConfig(5, 3).init(device)

    def train_step(self, batch: tuple[Tensor, Tensor]) -> TrainOutput[Tensor]:
        x, y = batch
        value = loss.MseLoss().forward(self.linear(x), y)
        return TrainOutput(self, value.backward(), value)


def test_the_step_averages_every_devices_gradients() -> None:
    devices = two_devices()
    model = Regression(devices[0])
    rng = np.random.default_rng(0)
    data = [
        (rng.normal(size=(4, 5)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32))
        for _ in range(2)
    ]
    batches = [(Tensor.from_data(x, d), Tensor.from_data(y, d)) for (x, y), d in zip(data, devices)]
    outputs, grads = data_parallel_step(model, devices, batches)
    assert len(outputs) == 2
    # the reference: both halves as one batch of 8 on one device (the MSE's mean over 8 = the mean of means)
    x = Tensor.from_data(np.concatenate([x for x, _ in data]), devices[0])
    y = Tensor.from_data(np.concatenate([y for _, y in data]), devices[0])
    reference = model.train_step((x, y)).grads
    for param in (model.linear.weight, model.linear.bias):
        got = grads.get(param.id)
        assert got is not None
        assert got.device == devices[0].backend.inner_device(devices[0])
        np.testing.assert_allclose(
            got.to_data().to_numpy(), reference.get(param.id).to_data().to_numpy(), rtol=1e-5, atol=1e-6
        )


def test_the_split_loader_gives_each_device_its_part_in_lockstep() -> None:
    devices = two_devices()
    loader = (
        DataLoaderBuilder(toy.Batcher()).batch_size(32).shuffle(3).num_workers(1).build(toy.dataset(200, 1))
    )
    split = SplitLoader(loader.to_device(devices[0]), devices)
    steps = list(split)
    assert len(steps) == len(split) == 4  # 100 items a device: 4 batches of 32, 32, 32, 4
    assert [len(batches) for batches in steps] == [2, 2, 2, 2]
    for batches in steps:
        assert [b[0].device for b in batches] == devices
    seen = np.concatenate([b[0].to_data().to_numpy() for batches in steps for b in batches])
    assert seen.shape == (200, toy.FEATURES)
    with pytest.raises(TypeError, match="must be a DataLoader"):
        SplitLoader([1, 2], devices)  # type: ignore[arg-type]


def test_two_devices_train_and_resume_bit_identically(tmp_path: Path) -> None:
    model = toy.run(tmp_path / "full", 2, devices=two_devices())
    lines = (tmp_path / "full" / "valid" / "epoch-2" / "Accuracy.log").read_text().split()
    accuracies = [float(line.split(",")[0]) for line in lines]  # "value,items" per batch
    assert np.mean(accuracies) > 70.0  # 4 classes: chance is 25%
    toy.run(tmp_path / "part", 1, devices=two_devices())
    resumed = toy.run(tmp_path / "part", 2, resume=1, devices=two_devices())
    full, again = toy.weights(model), toy.weights(resumed)
    assert full.keys() == again.keys()
    for key in full:
        np.testing.assert_array_equal(full[key], again[key], err_msg=key)


def test_a_multi_device_run_stopped_mid_epoch_resumes_bit_identically(tmp_path: Path) -> None:
    full = toy.weights(toy.run(tmp_path / "full", 2, devices=two_devices()))
    stopper = toy.StopAfter(epoch=2, iteration=3)

    def hook(builder: Any) -> Any:
        stopper.interrupter = builder.interrupter()
        return builder.metric_train(stopper)

    toy.run(tmp_path / "part", 2, devices=two_devices(), builder_hook=hook)
    log = tmp_path / "part" / "train" / "epoch-2" / "Loss.log"
    # the stop asked while step 3's metrics are read takes effect after step 4 (metrics run one step
    # behind): 4 steps, a line per device and step
    assert len(log.read_text().splitlines()) == 8
    resumed = toy.weights(toy.run(tmp_path / "part", 2, resume=2, devices=two_devices()))
    assert len(log.read_text().splitlines()) == 12  # 6 steps of 2 batches: 192 items a device
    for key in full:
        np.testing.assert_array_equal(full[key], resumed[key], err_msg=key)
