"""``replay`` with a backend that records (``recording.RecordingNdArray``, the CPU stand-in for CUDA
graphs): captured and replayed steps equal eager ones bit for bit, random draws included; what a step
stores into its arguments' objects is stored again after every replay, so several signatures share
one state; outputs and arguments in use keep their values; a host read runs the step eagerly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from recording import RecordingNdArray

from burn_backend import Distribution, Tensor, activation
from burn_fusion import Fusion, can_replay, replay

Autodiff = pytest.importorskip("burn_autodiff").Autodiff


class Momentum:
    """SGD with momentum whose velocities live in a dict of the object (as an optimizer's state)."""

    def __init__(self, lr: float) -> None:
        self.lr = lr
        self.velocity: dict[str, Tensor] = {}

    def step(self, params: dict[str, Tensor], grads: Any) -> dict[str, Tensor]:
        new = {}
        for name, param in params.items():
            grad = param.grad(grads)
            assert grad is not None
            velocity = self.velocity.get(name)
            velocity = grad if velocity is None else velocity * 0.9 + grad
            self.velocity[name] = velocity
            new[name] = Tensor.from_inner(param.inner() - velocity * self.lr, param.device).require_grad()
        return new


def train_step(params: dict[str, Tensor], optim: Momentum, x: Tensor, y: Tensor) -> tuple[Tensor, Any]:
    hidden = activation.relu(x.matmul(params["w1"]) + params["b1"])
    keep = Tensor.random(hidden.dims(), Distribution.bernoulli(0.75), hidden.device)  # dropout
    error = (hidden * keep / 0.75).matmul(params["w2"]) - y
    loss = (error * error).mean()
    return loss, optim.step(params, loss.backward())


def initial(device: Any) -> dict[str, Tensor]:
    rng = np.random.default_rng(0)
    shapes = {"w1": (6, 16), "b1": (1, 16), "w2": (16, 3)}
    return {
        name: Tensor.from_data(rng.normal(size=shape).astype(np.float32) * 0.3, device).require_grad()
        for name, shape in shapes.items()
    }


def batches(sizes: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)
    return [(rng.normal(size=(n, 6)), rng.normal(size=(n, 3))) for n in sizes]


def train(sizes: list[int], replayed: bool, keep: bool = False) -> tuple[list[float], dict[str, Any], Any]:
    # chains fused from their first run: eager calls run the kernels the recording holds (a chain run op
    # by op before its fusion rounds differently)
    device = Autodiff(Fusion(RecordingNdArray(), compile_after=1)).device()
    device.seed(7)
    params, optim = initial(device), Momentum(0.05)
    step = replay(train_step) if replayed else train_step
    losses, kept = [], []
    for x, y in batches(sizes):
        x, y = Tensor.from_data(x.astype(np.float32), device), Tensor.from_data(y.astype(np.float32), device)
        loss, params = step(params, optim, x, y)
        losses.append(loss)
        if keep:
            kept.append(params)
    values = {name: p.to_data().to_numpy() for name, p in params.items()}
    values.update({f"velocity {n}": v.to_data().to_numpy() for n, v in optim.velocity.items()})
    values["kept"] = [{n: p.to_data().to_numpy() for n, p in each.items()} for each in kept]
    return [loss.into_scalar() for loss in losses], values, step


def test_the_recording_backend_records() -> None:
    assert can_replay(Autodiff(Fusion(RecordingNdArray())).device())


def test_replayed_steps_equal_eager_ones_bit_for_bit() -> None:
    sizes = [8] * 7
    eager_losses, eager_values, _ = train(sizes, replayed=False, keep=True)
    losses, values, step = train(sizes, replayed=True, keep=True)
    # the first call is a signature of its own (no velocity yet); then 2 traced calls, a capture, replays
    assert (step.stats["captured"], step.stats["replayed"]) == (1, 3), step.stats
    assert losses == eager_losses
    for each, eager_each in zip(values.pop("kept"), eager_values.pop("kept"), strict=True):
        for name, value in eager_each.items():  # earlier results kept their values
            np.testing.assert_array_equal(each[name], value, err_msg=name)
    for name, value in eager_values.items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)


def test_signatures_sharing_an_optimizer_read_the_state_the_last_one_stored() -> None:
    # a last, smaller batch in every epoch: two recordings take turns with one optimizer's velocities
    sizes = ([8] * 4 + [3]) * 6
    eager_losses, eager_values, _ = train(sizes, replayed=False)
    losses, values, step = train(sizes, replayed=True)
    assert step.stats["captured"] == 2, step.stats
    assert step.stats["replayed"] >= 18, step.stats
    assert losses == eager_losses
    for name, value in eager_values.items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)


def test_stores_into_arguments_are_made_again_in_each_call_s_objects() -> None:
    device = Fusion(RecordingNdArray()).device()

    class Holder:
        def __init__(self) -> None:
            self.total = Tensor.zeros([2], device=device)
            self.items = [Tensor.zeros([2], device=device)]
            self.table: dict[str, Any] = {"last": Tensor.zeros([2], device=device), "gone": 1}

    @replay
    def accumulate(holder: Holder, x: Tensor) -> Tensor:
        holder.total = holder.total + x
        holder.items = [x * 2.0]
        holder.table.pop("gone", None)
        holder.table["last"] = x + 1.0
        return holder.total * 1.0

    holders = [Holder(), Holder()]
    for i in range(6):
        holder = holders[i % 2]  # other objects of the same structure: the stores go to each call's own
        holder.table["gone"] = 1
        x = Tensor.from_data(np.array([i, -i], dtype=np.float32), device)
        total = accumulate(holder, x)
        np.testing.assert_array_equal(total.to_data().to_numpy(), holder.total.to_data().to_numpy())
        np.testing.assert_array_equal(holder.items[0].to_data().to_numpy(), [2 * i, -2 * i])
        np.testing.assert_array_equal(holder.table["last"].to_data().to_numpy(), [i + 1, 1 - i])
        assert "gone" not in holder.table
    assert (accumulate.stats["captured"], accumulate.stats["replayed"]) == (1, 3), accumulate.stats
    np.testing.assert_array_equal(holders[0].total.to_data().to_numpy(), [0 + 2 + 4, -(0 + 2 + 4)])
    np.testing.assert_array_equal(holders[1].total.to_data().to_numpy(), [1 + 3 + 5, -(1 + 3 + 5)])


def test_outputs_and_arguments_in_use_keep_their_values() -> None:
    device = Fusion(RecordingNdArray()).device()

    @replay
    def step(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return x + y, x, y.reshape([2, 2])  # an argument returned as it is, and a view of one

    kept = []
    for i in range(6):
        x = Tensor.from_data(np.full(4, i, dtype=np.float32), device)
        y = Tensor.from_data(np.arange(4, dtype=np.float32) * i, device)
        kept.append(step(x, y))
    assert step.stats["replayed"] == 3, step.stats
    for i, (total, x, y) in enumerate(kept):
        np.testing.assert_array_equal(total.to_data().to_numpy(), i + np.arange(4) * i)
        np.testing.assert_array_equal(x.to_data().to_numpy(), np.full(4, i))
        np.testing.assert_array_equal(y.to_data().to_numpy(), (np.arange(4) * i).reshape(2, 2))


def test_a_step_reading_the_host_runs_eagerly() -> None:
    device = Fusion(RecordingNdArray()).device()

    @replay
    def step(x: Tensor) -> Tensor:
        return x * 2.0 if x.sum().into_scalar() >= 0 else x  # a branch on a value read on the host

    with pytest.warns(UserWarning, match=r"runs eagerly for this signature.*reads a value on the host"):
        results = [step(Tensor.from_data(np.full(3, i, dtype=np.float32), device)) for i in range(5)]
    assert (step.stats["refused"], step.stats["replayed"]) == (1, 0), step.stats
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result.to_data().to_numpy(), np.full(3, 2.0 * i))


def test_arguments_aliased_otherwise_than_at_capture_run_eagerly() -> None:
    device = Fusion(RecordingNdArray()).device()

    @replay
    def combine(x: Tensor, y: Tensor) -> Tensor:
        return x + y * 2.0

    def full(value: float) -> Tensor:
        return Tensor.from_data(np.full(2, value, dtype=np.float32), device)

    for i in range(4):  # one tensor for both: the recording has one argument copy for them
        x = full(i)
        np.testing.assert_array_equal(combine(x, x).to_data().to_numpy(), [3.0 * i] * 2)
    np.testing.assert_array_equal(combine(full(5.0), full(1.0)).to_data().to_numpy(), [7.0, 7.0])
    assert combine.stats == {"eager": 3, "captured": 1, "replayed": 1, "refused": 0, "detached": 0}


def test_running_statistics_advance_in_replays_as_in_eager_calls() -> None:
    nn = pytest.importorskip("burn_nn")

    def run(replayed: bool) -> tuple[list[float], np.ndarray, np.ndarray, Any]:
        device = Autodiff(Fusion(RecordingNdArray(), compile_after=1)).device()
        norm = nn.BatchNormConfig(3).init(device)

        def forward(norm: Any, x: Tensor) -> Tensor:
            return norm(x).sum()  # stores new running statistics into the module's RunningState

        step = replay(forward) if replayed else forward
        rng = np.random.default_rng(0)
        sums = [
            step(norm, Tensor.from_data(rng.normal(size=(4, 3, 2)).astype(np.float32) * (i + 1), device))
            for i in range(6)
        ]
        mean, var = (state.value().to_data().to_numpy() for state in (norm.running_mean, norm.running_var))
        return [s.into_scalar() for s in sums], mean, var, step

    eager_sums, eager_mean, eager_var, _ = run(False)
    sums, mean, var, step = run(True)
    # the first call is a signature of its own (the module's parameters are made at their first use)
    assert step.stats["replayed"] == 2, step.stats
    assert sums == eager_sums
    np.testing.assert_array_equal(mean, eager_mean)
    np.testing.assert_array_equal(var, eager_var)
    assert not np.allclose(mean, 0.0)
