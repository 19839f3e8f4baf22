"""Step replay on the GPU (``burn_fusion.replay`` over ``Fusion(Cuda())``, CUDA graphs): replayed steps
equal eager ones bit for bit, new batch contents flow in, another batch size is captured anew, memory
stays flat over 1,000 replays, outputs still in use keep their values, and a step that reads a value on
the host runs eagerly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor
from burn_cuda import Cuda
from burn_cuda._cupy import cp, unavailable_reason

pytest.importorskip("burn_fusion")
pytest.importorskip("burn_autodiff")
pytest.importorskip("burn_nn")

from burn_autodiff import Autodiff
from burn_fusion import Fusion, replay
from burn_nn import Conv2dConfig, DropoutConfig, LinearConfig, Module, Relu, loss
from burn_nn.optim import AdamConfig, GradientsParams

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


class Net(Module):
    def __init__(self, device: Any) -> None:
        self.conv = Conv2dConfig([1, 4], [3, 3]).init(device)
        self.dropout = DropoutConfig(0.5).init()
        self.linear1 = LinearConfig(4 * 6 * 6, 32).init(device)
        self.linear2 = LinearConfig(32, 10).init(device)
        self.activation = Relu()

    def forward(self, images: Tensor) -> Tensor:
        batch = images.dims()[0]
        x = self.activation(self.conv(images.reshape([batch, 1, 8, 8])))
        x = self.dropout(x.reshape([batch, 4 * 6 * 6]))
        return self.linear2(self.activation(self.linear1(x)))


def setup(seed: int = 0) -> tuple[Any, Net, Any]:
    device = Autodiff(Fusion(Cuda())).device(0)
    device.seed(seed)
    return device, Net(device), loss.CrossEntropyLossConfig().init(device)


def batches(count: int, size: int = 16, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.random((size, 8, 8), dtype=np.float32), rng.integers(0, 10, size)) for _ in range(count)]


def train(steps: list[tuple[np.ndarray, np.ndarray]], replayed: bool) -> tuple[list[float], Net, Any]:
    device, model, criterion = setup()
    optim = AdamConfig().init()

    def forward_backward(model: Net, images: Tensor, targets: Tensor) -> tuple[Tensor, GradientsParams]:
        value = criterion(model(images), targets)
        return value, GradientsParams.from_grads(value.backward(), model)

    step = replay(forward_backward) if replayed else forward_backward
    losses = []
    for images, labels in steps:
        x, y = Tensor.from_data(images, device), Tensor.from_data(labels, device)
        value, grads = step(model, x, y)
        model = optim.step(1e-3, model, grads)
        losses.append(value)
    return [v.into_scalar() for v in losses], model, step


def parameters(model: Net) -> list[np.ndarray]:
    return [layer.weight.val().to_data().to_numpy() for layer in (model.conv, model.linear1, model.linear2)]


def test_replayed_steps_equal_eager_ones_bit_for_bit() -> None:
    steps = batches(8)
    eager_losses, eager_model, _ = train(steps, replayed=False)
    losses, model, step = train(steps, replayed=True)
    assert step.stats["captured"] == 1, step.stats
    # the first call is a signature of its own (the new model's parameters are not yet materialized)
    assert step.stats["replayed"] == 4, step.stats
    assert losses == eager_losses  # every loss was read after later steps ran: none was overwritten
    for ours, theirs in zip(parameters(model), parameters(eager_model), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_new_batch_contents_flow_in_and_other_sizes_recapture() -> None:
    steps = batches(5) + batches(4, size=8, seed=2) + batches(3, seed=3)
    eager_losses, eager_model, _ = train(steps, replayed=False)
    losses, model, step = train(steps, replayed=True)
    assert step.stats["captured"] == 2, step.stats
    assert len(set(losses)) == len(losses)
    assert losses == eager_losses
    for ours, theirs in zip(parameters(model), parameters(eager_model), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_memory_stays_flat_over_1000_replays() -> None:
    device, model, criterion = setup()
    images, labels = batches(1)[0]
    x, y = Tensor.from_data(images, device), Tensor.from_data(labels, device)

    @replay
    def forward_backward(model: Net, images: Tensor, targets: Tensor) -> tuple[Tensor, GradientsParams]:
        value = criterion(model(images), targets)
        return value, GradientsParams.from_grads(value.backward(), model)

    pool = cp.get_default_memory_pool()

    def run(count: int) -> None:
        for _ in range(count):
            value = forward_backward(model, x, y)[0]
        value.into_scalar()

    run(20)
    before = pool.used_bytes()
    run(1000)
    assert forward_backward.stats["replayed"] >= 1015
    assert pool.used_bytes() <= before


def test_outputs_in_use_keep_their_values() -> None:
    device = Fusion(Cuda()).device(0)

    @replay
    def double(x: Tensor) -> Tensor:
        return (x * 2.0).exp()

    values = [np.full((4, 4), float(i) / 10, np.float32) for i in range(6)]
    outputs = [double(Tensor.from_data(v, device)) for v in values]
    pending = [o + 1.0 for o in outputs]  # recorded, run later: reads the outputs
    assert double.stats["replayed"] == 3
    for value, output, plus in zip(values, outputs, pending, strict=True):
        np.testing.assert_allclose(output.to_data().to_numpy(), np.exp(value * 2), rtol=1e-6)
        np.testing.assert_allclose(plus.to_data().to_numpy(), np.exp(value * 2) + 1, rtol=1e-6)


def test_arguments_returned_as_they_are_keep_their_values() -> None:
    """An argument returned unchanged, or as a view (a reshape), is given memory of its own in the
    recording: the next call's copy into the argument's buffer leaves it as it was."""
    device = Fusion(Cuda()).device(0)

    @replay
    def passed(x: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return x * 2.0, targets, targets.reshape([2, 3])

    values = [(np.full(4, float(i), np.float32), np.arange(6) + i) for i in range(6)]
    results = [passed(Tensor.from_data(x, device), Tensor.from_data(t, device)) for x, t in values]
    assert passed.stats["replayed"] == 3, passed.stats
    for (x, t), (doubled, same, view) in zip(values, results, strict=True):
        np.testing.assert_array_equal(doubled.to_data().to_numpy(), x * 2)
        np.testing.assert_array_equal(same.to_data().to_numpy(), t)
        np.testing.assert_array_equal(view.to_data().to_numpy(), t.reshape(2, 3))


def test_a_step_reading_the_host_runs_eagerly() -> None:
    device = Fusion(Cuda()).device(0)

    @replay
    def scaled(x: Tensor) -> Tensor:
        x.max().into_scalar()  # a host read: cannot be captured
        return x * 2.0

    for i in range(4):
        value = np.arange(6, dtype=np.float32) + i
        if i == 2:  # the capture: refused, with a warning naming the reason
            with pytest.warns(UserWarning, match="runs eagerly for this signature.*D2H"):
                result = scaled(Tensor.from_data(value, device))
        else:
            result = scaled(Tensor.from_data(value, device))
        np.testing.assert_array_equal(result.to_data().to_numpy(), value * 2)
    assert scaled.stats["refused"] == 1, scaled.stats
    assert scaled.stats["replayed"] == 0, scaled.stats


def train_whole_steps(
    steps: list[tuple[np.ndarray, np.ndarray]], replayed: bool, capturable: bool = True, keep: bool = True
) -> tuple[list[float], Net, Any, Any, list[Net]]:
    """Forward, backward and the optimizer step in one function (the optimizer an argument, its state
    advanced by each replay); with ``keep``, every model is kept, so replays must not change an earlier
    one."""
    device, model, criterion = setup()
    optim = AdamConfig(capturable=capturable).init()

    def train_step(model: Net, optim: Any, images: Tensor, targets: Tensor) -> tuple[Tensor, Net]:
        value = criterion(model(images), targets)
        return value, optim.step(1e-3, model, GradientsParams.from_grads(value.backward(), model))

    step = replay(train_step) if replayed else train_step
    losses, models = [], []
    for images, labels in steps:
        x, y = Tensor.from_data(images, device), Tensor.from_data(labels, device)
        value, model = step(model, optim, x, y)
        losses.append(value)
        if keep:
            models.append(model)
    return [v.into_scalar() for v in losses], model, step, optim, models


def test_whole_steps_with_a_capturable_optimizer_equal_eager_ones() -> None:
    steps = batches(9)
    eager_losses, _, _, eager_optim, eager_models = train_whole_steps(steps, replayed=False)
    losses, model, step, optim, models = train_whole_steps(steps, replayed=True)
    # the first call is a signature of its own (lazy parameters, no optimizer state yet)
    # a model passed back in reads the argument copy; kept after the next call, it is copied out then (6
    # parameters, at each of the last 4 replays); each kept loss is copied out at the next replay (5)
    assert step.stats == {"eager": 3, "captured": 1, "replayed": 5, "refused": 0, "detached": 29}, step.stats
    assert losses == eager_losses
    for ours, theirs in zip(models, eager_models, strict=True):  # earlier models kept their values
        for a, b in zip(parameters(ours), parameters(theirs), strict=True):
            np.testing.assert_array_equal(a, b)
    record, eager_record = optim.into_record(), eager_optim.into_record()
    assert len(record) == len(eager_record) == 6
    # the two runs' models have their own parameter ids; their parameters come in the same order
    for ours_param, eager_param in zip(model.params(), eager_models[-1].params(), strict=True):
        state, eager_state = record[str(ours_param.id)], eager_record[str(eager_param.id)]
        assert state["time"].to_numpy().tolist() == [9]
        for name in ("moment_1", "moment_2"):
            np.testing.assert_array_equal(state[name].to_numpy(), eager_state[name].to_numpy())
    # models dropped as the loop goes: only the kept losses are copied out
    assert train_whole_steps(steps, replayed=True, keep=False)[2].stats["detached"] == 5
    # the capturable update is the default's, up to the bias corrections' last bits
    host_losses, host_model, *_ = train_whole_steps(steps, replayed=False, capturable=False)
    np.testing.assert_allclose(losses, host_losses, rtol=1e-5)
    for ours, theirs in zip(parameters(model), parameters(host_model), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def test_two_batch_sizes_share_the_optimizer_state() -> None:
    # a last, smaller batch in every epoch: two recordings take turns, each reading the moments and the
    # step count the other stored in the optimizer
    steps = [batch for _ in range(6) for batch in batches(4, seed=2) + batches(1, size=5, seed=3)]
    eager_losses, eager_model, _, eager_optim, _ = train_whole_steps(steps, replayed=False, keep=False)
    losses, model, step, optim, _ = train_whole_steps(steps, replayed=True, keep=False)
    assert step.stats["captured"] == 2, step.stats
    assert losses == eager_losses
    for ours, theirs in zip(parameters(model), parameters(eager_model), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    records = (optim.into_record().values(), eager_optim.into_record().values())
    for state, eager_state in zip(*records, strict=True):
        assert state["time"].to_numpy().tolist() == [len(steps)]
        np.testing.assert_array_equal(state["moment_2"].to_numpy(), eager_state["moment_2"].to_numpy())


def test_a_step_count_kept_on_the_host_is_named_when_no_signature_recurs() -> None:
    with pytest.warns(UserWarning, match=r"no call signature recurs.*capturable=True"):
        _, _, step, _, _ = train_whole_steps(batches(10), replayed=True, capturable=False)
    assert step.stats["captured"] == 0, step.stats


def test_argument_copies_go_in_few_launches_for_any_size_and_alignment() -> None:
    from burn_cuda._graph import CudaStepCapture

    rng = np.random.default_rng(4)
    base = cp.asarray(rng.integers(0, 255, 4099, dtype=np.uint8))
    sources = [
        cp.asarray(rng.random(524288, dtype=np.float32)),  # 2 MiB: the grid-stride loop, 16-byte copies
        cp.asarray(rng.random(5, dtype=np.float32)),  # 20 bytes: 4-byte copies
        base[1:8],  # an odd size at an odd address: byte copies
        base[3:],
        cp.asarray(rng.random((6, 4), dtype=np.float32)).T,  # not contiguous: copied on its own
        cp.empty(0, dtype=np.float32),
        cp.asarray(rng.integers(-9, 9, 12)),
        *(cp.asarray(rng.random(k + 1, dtype=np.float32)) for k in range(130)),  # two launches
    ]
    capture = CudaStepCapture(0)
    try:
        targets = [capture.static_copy(cp.zeros_like(source)) for source in sources]
        for round_ in range(3):
            capture.copy_into(targets, sources)
            for target, source in zip(targets, sources, strict=True):
                np.testing.assert_array_equal(cp.asnumpy(target), cp.asnumpy(source))
            # new values in the same buffers, then new buffers
            for source in sources:
                source[...] = source[::-1] if source.ndim == 1 else source + 1
            if round_ == 1:
                sources = [source.copy() for source in sources]
    finally:
        capture.close()
