"""Gradient containers, what an optimizer step does to a module, optimizer records (resuming a run),
and config validation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import AutodiffBackend, Device, DType, Tensor, TensorData
from burn_ndarray import NdArray
from burn_nn import Initializer, LinearConfig, Module, Param, ParamId
from burn_nn.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    GradientClipping,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    ModuleOptimizer,
    MomentumConfig,
    MuonConfig,
    Optimizer,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)


class Tied(Module):
    """One parameter in two fields."""

    def __init__(self, device: Device) -> None:
        self.first = Initializer.Ones().init([2, 2], device)
        self.second = self.first

    def forward(self, x: Tensor) -> Tensor:
        return x.matmul(self.first.val()).matmul(self.second.val())


def batch(device: Device, rng: np.random.Generator, seed_offset: int = 0) -> tuple[Tensor, Tensor]:
    x = rng.normal(size=(6, 4)).astype(np.float32) + seed_offset
    y = rng.normal(size=(6, 3)).astype(np.float32)
    return Tensor.from_data(x, device), Tensor.from_data(y, device)


def loss_of(model: Module, data: tuple[Tensor, Tensor]) -> Tensor:
    x, y = data
    return model(x).sub(y).square().mean()  # type: ignore[no-any-return]


def grads_of(model: Module, data: tuple[Tensor, Tensor]) -> GradientsParams:
    return GradientsParams.from_grads(loss_of(model, data).backward(), model)


def values(model: Module) -> dict[str, np.ndarray[Any, Any]]:
    return {name: param.val().to_data().to_numpy() for name, param in model.named_params()}


# -- GradientsParams and GradientsAccumulator ------------------------------------------------------------
def test_from_grads_keys_gradients_by_param_id(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    grads = loss_of(model, batch(device, rng)).backward()
    expected = {param.id: param.val().grad(grads) for param in model.params()}
    params = GradientsParams.from_grads(grads, model)

    assert len(params) == 4
    assert set(params) == set(expected)
    assert not params.is_empty()
    for id, gradient in expected.items():
        assert gradient is not None
        found = params.get(id)
        assert found is not None
        assert found.to_data() == gradient.to_data()
        assert not isinstance(found.device.backend, AutodiffBackend)  # the inner backend
    # taken out of the backward pass's gradients
    assert model.hidden.weight.val().grad(grads) is None
    assert GradientsParams.from_grads(grads, model).is_empty()


def test_from_params_and_from_module_take_only_their_gradients(
    device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    model = mlp(device)
    grads = loss_of(model, batch(device, rng)).backward()
    only_out = GradientsParams.from_params(grads, model, [model.out.weight.id])
    assert only_out.param_ids() == [model.out.weight.id]

    rest = GradientsParams.from_module(grads, model.hidden)
    assert set(rest) == {model.hidden.weight.id, model.hidden.bias.id}  # type: ignore[union-attr]
    # out.bias is still in ``grads``
    assert model.out.bias is not None
    assert model.out.bias.val().grad(grads) is not None


def test_frozen_and_unused_parameters_have_no_gradient(
    device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    model = mlp(device)
    model.hidden = model.hidden.no_grad()
    unused = Initializer.Zeros().init([7], device)
    model.unused = unused  # type: ignore[attr-defined]
    params = grads_of(model, batch(device, rng))
    assert set(params) == {model.out.weight.id, model.out.bias.id}  # type: ignore[union-attr]
    assert not unused.is_initialized  # collecting gradients does not compute lazy parameters


def test_register_get_remove(device: Device, inner_device: Device) -> None:
    grads = GradientsParams()
    id = ParamId()
    tracked = Tensor.ones([2, 3], device).require_grad()
    grads.register(id, tracked)
    stored = grads.get(id)
    assert stored is not None
    assert stored.device == inner_device
    assert id in grads
    grads.register(id, Tensor.zeros([2, 3], inner_device))
    removed = grads.remove(id)
    assert removed is not None
    assert removed.to_data() == TensorData(np.zeros((2, 3), np.float32))
    assert grads.remove(id) is None
    assert grads.is_empty()

    with pytest.raises(TypeError, match="expected a Float tensor"):
        grads.register(id, Tensor.ones([2], inner_device, dtype=DType.I64))
    with pytest.raises(TypeError, match="expected a ParamId"):
        grads.register("7", Tensor.ones([2], inner_device))  # type: ignore[arg-type]


def test_gradients_need_an_autodiff_module(inner_device: Device, device: Device, mlp: Any) -> None:
    model = mlp(inner_device)
    model.hidden.weight.val()
    grads = Tensor.ones([1], device).require_grad().backward()
    with pytest.raises(TypeError, match=r"hidden.weight is on ndarray:0, which has no autodiff"):
        GradientsParams.from_grads(grads, model)


def test_to_device_moves_the_module_gradients(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    params = grads_of(model, batch(device, rng))
    target = NdArray(float_dtype=DType.F64).device()
    stray = ParamId()
    params.register(stray, Tensor.ones([1], NdArray().device()))
    params.to_device(target, model)
    for param in model.params():
        gradient = params.get(param.id)
        assert gradient is not None
        assert gradient.device == target
    stray_gradient = params.get(stray)
    assert stray_gradient is not None
    assert stray_gradient.device != target


def test_accumulator_sums_gradients(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    first, second = grads_of(model, batch(device, rng)), grads_of(model, batch(device, rng, 1))
    stray = ParamId()
    second.register(stray, Tensor.ones([1], device))
    accumulator = GradientsAccumulator()
    accumulator.accumulate(model, first)
    accumulator.accumulate(model, second)
    total = accumulator.grads()

    assert set(total) == {param.id for param in model.params()}  # the stray gradient is ignored
    for param in model.params():
        a, b, summed = first.get(param.id), second.get(param.id), total.get(param.id)
        assert a is not None
        assert b is not None
        assert summed is not None
        np.testing.assert_allclose(
            summed.to_data().to_numpy(), a.to_data().to_numpy() + b.to_data().to_numpy(), rtol=1e-6
        )
    assert len(first) == 4
    assert len(second) == 5
    assert accumulator.grads().is_empty()  # started over


def test_accumulated_step_equals_step_on_summed_loss(
    device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    model = mlp(device)
    one, two = batch(device, rng), batch(device, rng, 1)
    accumulator = GradientsAccumulator()
    accumulator.accumulate(model, grads_of(model, one))
    accumulator.accumulate(model, grads_of(model, two))
    accumulated = SgdConfig().init().step(0.1, model, accumulator.grads())
    summed = GradientsParams.from_grads(loss_of(model, one).add(loss_of(model, two)).backward(), model)
    direct = SgdConfig().init().step(0.1, model, summed)
    for name, array in values(direct).items():
        np.testing.assert_allclose(values(accumulated)[name], array, rtol=1e-5, atol=1e-7)


# -- ModuleOptimizer.step ------------------------------------------------------------------------------
def test_step_updates_params_with_gradients_only(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    before = values(model)
    grads = grads_of(model, batch(device, rng))
    grads.remove(model.out.weight.id)
    gradient = grads.get(model.hidden.weight.id)
    assert gradient is not None
    expected_hidden = before["hidden.weight"] - 0.5 * gradient.to_data().to_numpy()

    updated = SgdConfig().init().step(0.5, model, grads)

    assert updated.out.weight is model.out.weight  # no gradient: the same parameter
    np.testing.assert_allclose(values(updated)["hidden.weight"], expected_hidden, rtol=1e-6)
    assert [p.id for p in updated.params()] == [p.id for p in model.params()]
    for name, array in values(model).items():  # the original module is unchanged
        np.testing.assert_array_equal(array, before[name])
    assert len(grads) == 3  # and so are the gradients


def test_updated_params_are_fresh_leaves(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    model.out = model.out.no_grad()
    optim = AdamConfig().init()
    data = batch(device, rng)
    for _ in range(2):
        grads = grads_of(model, data)
        grads.register(model.out.bias.id, Tensor.ones([3], device))  # type: ignore[union-attr]
        model = optim.step(0.01, model, grads)
        assert model.hidden.weight.val().is_require_grad()
        assert model.out.bias is not None
        assert not model.out.bias.val().is_require_grad()
        assert isinstance(model.hidden.weight.device.backend, AutodiffBackend)
    assert set(optim.into_record()) == {str(p.id) for p in model.hidden.params()} | {str(model.out.bias.id)}


@pytest.mark.parametrize(
    "config", [AdamConfig(weight_decay=WeightDecayConfig(0.1)), AdamWConfig()], ids=["adam-l2", "adamw"]
)
def test_adam_updates_every_parameter_at_once_as_one_by_one(
    config: Any, device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    """Adam's ``step_many`` (one backend op per device, dtype and step number) against its ``step`` on each
    parameter, with parameters at different step numbers (``out`` has no gradient at the first step)."""
    rule = config.build()

    class OneByOne(type(rule)):  # type: ignore[misc]
        step_many = Optimizer.step_many

    batched, single = ModuleOptimizer(rule), ModuleOptimizer(OneByOne(config))
    model_a = model_b = mlp(device)
    for step in range(3):
        data = batch(device, rng, step)
        grads_a, grads_b = grads_of(model_a, data), grads_of(model_b, data)
        if step == 0:
            for grads in (grads_a, grads_b):
                grads.remove(model_a.out.weight.id)
                grads.remove(model_a.out.bias.id)
        model_a = batched.step(0.05, model_a, grads_a)
        model_b = single.step(0.05, model_b, grads_b)
        for name, array in values(model_a).items():
            np.testing.assert_allclose(array, values(model_b)[name], rtol=1e-6, atol=1e-7)
    times = {key: entry["time"] for key, entry in batched.into_record().items()}
    assert times == {str(model_a.hidden.weight.id): 3, str(model_a.hidden.bias.id): 3,
                     str(model_a.out.weight.id): 2, str(model_a.out.bias.id): 2}  # fmt: skip
    assert times == {key: entry["time"] for key, entry in single.into_record().items()}


def test_shared_parameter_is_updated_once(device: Device) -> None:
    model = Tied(device)
    grads = GradientsParams.from_grads(model(Tensor.ones([1, 2], device)).sum().backward(), model)
    gradient = grads.get(model.first.id)
    assert gradient is not None
    optim = SgdConfig(momentum=MomentumConfig()).init()
    updated = optim.step(0.1, model, grads)
    assert updated.first is updated.second
    expected = np.ones((2, 2), np.float32) - 0.1 * gradient.to_data().to_numpy()
    np.testing.assert_allclose(updated.first.val().to_data().to_numpy(), expected, rtol=1e-6)


def test_sgd_with_momentum_by_hand(device: Device) -> None:
    """Burn's momentum: v1 = g1, v = mu v + (1 - dampening) g, nesterov step g + mu v."""
    model = Tied(device).no_grad()
    model.first = model.second = Param.initialized(Tensor.zeros([1], device))
    optim = SgdConfig(momentum=MomentumConfig(0.5, 0.25, nesterov=True)).init()
    trajectory = []
    for gradient in (1.0, 2.0, -1.0):
        grads = GradientsParams()
        grads.register(model.first.id, Tensor.full([1], gradient, device))
        model = optim.step(1.0, model, grads)
        trajectory.append(model.first.val().into_scalar())
    # v = 1, 0.5 + 1.5 = 2, 1 - 0.75 = 0.25; steps g + 0.5 v = 1.5, 3, -0.875
    assert trajectory == pytest.approx([-1.5, -4.5, -3.625])


def test_step_works_without_autodiff(inner_device: Device) -> None:
    model = LinearConfig(2, 2).init(inner_device)
    grads = GradientsParams()
    grads.register(model.weight.id, Tensor.ones([2, 2], inner_device))
    before = model.weight.val().to_data().to_numpy()
    updated = SgdConfig().init().step(0.25, model, grads)
    np.testing.assert_allclose(updated.weight.val().to_data().to_numpy(), before - 0.25)
    assert updated.weight.device == inner_device
    assert updated.bias is model.bias


@pytest.mark.parametrize("lr", [-0.1, math.nan, True, "0.1"])
def test_step_rejects_bad_learning_rates(lr: Any, device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    with pytest.raises(ValueError, match="learning rate must be a number >= 0"):
        SgdConfig().init().step(lr, model, grads_of(model, batch(device, rng)))


def test_step_rejects_mismatched_gradients(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    optim = AdamConfig().init()
    grads = grads_of(model, batch(device, rng))
    grads.register(model.out.weight.id, Tensor.ones([3, 5], device))
    with pytest.raises(ValueError, match=r"gradient of out.weight is \[3, 5\] f32, the parameter \[5, 3\]"):
        optim.step(0.1, model, grads)
    assert optim.into_record() == {}  # nothing was updated, not even the parameters before it
    with pytest.raises(TypeError, match="expected GradientsParams"):
        optim.step(0.1, model, {})  # type: ignore[arg-type]


def test_muon_refuses_parameters_that_are_not_matrices(
    device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    model = mlp(device)
    optim = MuonConfig().init()
    with pytest.raises(ValueError, match=r"parameter hidden.bias: Muon orthogonalizes 2-d parameters only"):
        optim.step(0.02, model, grads_of(model, batch(device, rng)))
    assert optim.into_record() == {}
    weights_only = GradientsParams.from_params(
        loss_of(model, batch(device, rng)).backward(), model, [model.hidden.weight.id, model.out.weight.id]
    )
    updated = optim.step(0.02, model, weights_only)
    assert len(optim.into_record()) == 2
    assert updated.hidden.bias is model.hidden.bias


def test_muon_shape_adjustment_and_orthogonalization(inner_device: Device) -> None:
    assert AdjustLrFn.Original.ratio([1024, 512]) == pytest.approx(math.sqrt(2.0))
    assert AdjustLrFn.Original.ratio([512, 1024]) == 1.0
    assert AdjustLrFn.MatchRmsAdamW.ratio([1024, 512]) == pytest.approx(6.4)
    assert AdjustLrFn.MatchRmsAdamW.ratio([7]) == 1.0
    matrix = np.random.default_rng(0).normal(size=(12, 5)).astype(np.float32)
    orthogonal = MuonConfig().build().orthogonalize(Tensor.from_data(matrix, inner_device))
    singular = np.linalg.svd(orthogonal.to_data().to_numpy(), compute_uv=False)
    assert orthogonal.dims() == [12, 5]
    assert singular.min() > 0.5
    assert singular.max() < 1.3


def test_with_grad_clipping_keeps_state(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    optim = AdamConfig().init()
    assert not optim.has_gradient_clipping()
    assert optim.grad_clipping is None
    optim.step(0.01, model, grads_of(model, batch(device, rng)))
    clipped = optim.with_grad_clipping(GradientClipping.Value(0.5))
    assert clipped.has_gradient_clipping()
    assert clipped.grad_clipping == GradientClipping.Value(0.5)
    assert not optim.has_gradient_clipping()
    assert clipped.into_record().keys() == optim.into_record().keys()
    assert SgdConfig(gradient_clipping=GradientClippingConfig.Norm(1.0)).init().has_gradient_clipping()


# -- records ---------------------------------------------------------------------------------------------
RESUME_CASES: dict[str, Any] = {
    "sgd": SgdConfig(),
    "sgd_momentum_clipped": SgdConfig(
        weight_decay=WeightDecayConfig(0.01),
        momentum=MomentumConfig(0.9, 0.1, True),
        gradient_clipping=GradientClippingConfig.Value(0.1),
    ),
    "adam_amsgrad": AdamConfig(amsgrad=True, weight_decay=WeightDecayConfig(0.1)),
    "adamw_cautious": AdamWConfig(weight_decay=0.1, cautious_weight_decay=True, amsgrad=True),
    "adam_capturable": AdamConfig(weight_decay=WeightDecayConfig(0.1), capturable=True),
    "adamw_capturable_amsgrad": AdamWConfig(weight_decay=0.1, amsgrad=True, capturable=True),
    "adagrad": AdaGradConfig(lr_decay=0.1, grad_clipping=GradientClippingConfig.Norm(0.5)),
    "rmsprop_centered": RmsPropConfig(centered=True),
    "rmsprop_plain": RmsPropConfig(momentum=0.0),
    "adan": AdanConfig(weight_decay=0.02),
    "muon": MuonConfig(weight_decay=WeightDecayConfig(0.1)),
}


def _train(model: Module, optim: ModuleOptimizer, data: list[tuple[Tensor, Tensor]]) -> Module:
    for item in data:
        model = optim.step(0.01, model, grads_of(model, item))
    return model


@pytest.mark.parametrize("case", list(RESUME_CASES))
def test_resumed_run_continues_exactly(case: str, device: Device, rng: np.random.Generator, mlp: Any) -> None:
    config = RESUME_CASES[case]
    model = LinearConfig(4, 3, bias=False).init(device) if case == "muon" else mlp(device)
    data = [batch(device, rng, index) for index in range(6)]
    uninterrupted = _train(model, config.init(), data)

    optim = config.init()
    halfway = _train(model, optim, data[:3])
    record = optim.into_record()
    resumed = _train(model.load_record(halfway.into_record()), config.init().load_record(record), data[3:])

    for name, array in values(uninterrupted).items():
        np.testing.assert_array_equal(values(resumed)[name], array)
    if case != "sgd":  # plain SGD keeps no state; the others would go astray without theirs
        assert set(record) == {str(param.id) for param in model.params()}
        forgetful = _train(halfway, config.init(), data[3:])
        assert any(
            not np.array_equal(values(forgetful)[name], array) for name, array in values(resumed).items()
        )


@pytest.mark.parametrize(
    "make", [AdamConfig, lambda **kw: AdamWConfig(weight_decay=0.1, **kw)], ids=["adam", "adamw"]
)
def test_capturable_keeps_the_step_count_on_the_device_with_the_same_values(
    make: Any, device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    """The count is one int tensor shared by the parameters of a step; the updates equal the default's
    (the bias corrections are computed in double precision either way)."""
    host, on_device = make().init(), make(capturable=True).init()
    model_a = model_b = mlp(device)
    for step in range(1, 4):
        data = batch(device, rng, step)
        model_a = host.step(0.05, model_a, grads_of(model_a, data))
        model_b = on_device.step(0.05, model_b, grads_of(model_b, data))
        for name, array in values(model_a).items():
            np.testing.assert_allclose(values(model_b)[name], array, rtol=1e-6, atol=1e-7, err_msg=name)
        counts = [state["time"] for state in on_device._states.values()]
        assert all(count is counts[0] for count in counts)
        assert isinstance(counts[0], Tensor)
        assert counts[0].dtype is DType.I64
        assert counts[0].to_data().to_numpy().tolist() == [step]
    record = on_device.into_record()
    assert all(entry["time"].to_numpy().tolist() == [3] for entry in record.values())  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"state 'time' of parameter .*: expected an int, got TensorData"):
        make().init().load_record(record)
    with pytest.raises(ValueError, match=r"state 'time' of parameter .*: expected float or int TensorData"):
        make(capturable=True).init().load_record(host.into_record())
    swapped = make(capturable=True).init()
    swapped._states = dict(host._states)  # as the other setting's optimizer left it
    with pytest.raises(
        ValueError, match="capturable=True keeps the step count as a tensor; the state holds int 3"
    ):
        swapped.step(0.05, model_a, grads_of(model_a, batch(device, rng)))


def test_record_holds_host_data_by_param_id(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    optim = AdamConfig(amsgrad=True).init()
    assert optim.into_record() == {}
    assert not hasattr(optim, "to_record")  # one name for records everywhere: into_record
    data = batch(device, rng)
    for _ in range(3):
        model = optim.step(0.01, model, grads_of(model, data))
    record = optim.into_record()
    entry = record[str(model.hidden.weight.id)]
    assert sorted(entry) == ["max_moment_2", "moment_1", "moment_2", "time"]
    assert entry["time"] == 3
    moment_1 = entry["moment_1"]
    assert isinstance(moment_1, TensorData)
    assert list(moment_1.shape) == [4, 5]
    assert moment_1.dtype is DType.F32
    no_state = SgdConfig().init()
    no_state.step(0.1, model, grads_of(model, data))
    assert no_state.into_record() == {}  # plain SGD keeps no state


def test_record_moves_to_another_precision(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model = mlp(device)
    data = batch(device, rng)
    optim = AdamConfig().init()
    model = optim.step(0.01, model, grads_of(model, data))
    device64 = Autodiff(NdArray(float_dtype=DType.F64)).device()
    model64 = mlp(device64).load_record(model.into_record())
    data64 = tuple(Tensor.from_data(t.to_data().convert(DType.F64), device64) for t in data)
    resumed = AdamConfig().init().load_record(optim.into_record())
    stepped64 = resumed.step(0.01, model64, grads_of(model64, data64))  # type: ignore[arg-type]
    stepped32 = optim.step(0.01, model, grads_of(model, data))
    assert stepped64.hidden.weight.dtype is DType.F64
    assert resumed.into_record()[str(model.hidden.weight.id)]["moment_1"].dtype is DType.F64  # type: ignore[union-attr]
    np.testing.assert_allclose(
        values(stepped64)["hidden.weight"], values(stepped32)["hidden.weight"], atol=1e-5
    )


def test_load_record_rejects_records_that_do_not_fit(
    device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    model = mlp(device)
    adam = AdamConfig().init()
    model = adam.step(0.01, model, grads_of(model, batch(device, rng)))
    record = adam.into_record()
    key = str(model.hidden.weight.id)

    with pytest.raises(
        ValueError, match=r"does not fit Sgd: missing \['velocity'\], unexpected \['moment_1'"
    ):
        SgdConfig(momentum=MomentumConfig()).init().load_record(record)
    with pytest.raises(ValueError, match=r"missing \['max_moment_2'\]"):
        AdamConfig(amsgrad=True).init().load_record(record)
    with pytest.raises(ValueError, match="'hidden' is not a parameter id"):
        adam.load_record({"hidden": record[key]})
    with pytest.raises(ValueError, match=r"state 'time' of parameter .*: expected an int, got float"):
        adam.load_record({key: {**record[key], "time": 1.0}})
    with pytest.raises(
        ValueError, match=r"state 'moment_1' of parameter .*: expected float or int TensorData, got list"
    ):
        adam.load_record({key: {**record[key], "moment_1": [1.0]}})
    with pytest.raises(ValueError, match="expected a dict record"):
        adam.load_record([record])  # type: ignore[arg-type]
    assert adam.into_record().keys() == record.keys()  # unchanged by the failed loads

    mis_shaped = {key: {**record[key], "moment_2": TensorData(np.ones((5, 4), np.float32))}}
    optim = AdamConfig().init().load_record(mis_shaped)
    with pytest.raises(
        ValueError, match=r"hidden.weight: Adam: the state entry 'moment_2' has shape \[5, 4\]"
    ):
        optim.step(0.01, model, grads_of(model, batch(device, rng)))


# -- configs ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: AdamConfig(beta_1=1.0).init(), r"AdamConfig: beta_1 must be in \[0, 1\), got 1.0"),
        (lambda: AdamConfig(beta_2=-0.1).init(), "AdamConfig: beta_2 must be in"),
        (lambda: AdamConfig(epsilon=-1e-8).init(), "AdamConfig: epsilon must be in"),
        (lambda: AdamConfig(weight_decay=WeightDecayConfig(-0.1)).init(), "WeightDecayConfig: penalty"),
        (lambda: AdamWConfig(weight_decay=-1.0).init(), "AdamWConfig: weight_decay"),
        (lambda: AdamWConfig(beta_1=math.nan).init(), "AdamWConfig: beta_1"),
        (lambda: SgdConfig(momentum=MomentumConfig(momentum=-0.5)).init(), "MomentumConfig: momentum"),
        (lambda: SgdConfig(momentum=MomentumConfig(dampening=1.5)).init(), "MomentumConfig: dampening"),
        (lambda: AdaGradConfig(lr_decay=-1.0).init(), "AdaGradConfig: lr_decay"),
        (lambda: RmsPropConfig(alpha=1.0).init(), "RmsPropConfig: alpha"),
        (lambda: RmsPropConfig(momentum=-0.9).init(), "RmsPropConfig: momentum"),
        (lambda: AdanConfig(beta_3=1.0).init(), "AdanConfig: beta_3"),
        (lambda: MuonConfig(ns_steps=100).init(), r"MuonConfig: ns_steps must be in \[0, 99\]"),
        (lambda: MuonConfig(weight_decay=WeightDecayConfig(-1.0)).init(), "MuonConfig: weight_decay"),
        (lambda: MuonConfig(ns_coefficients=(1.0, 2.0)).init(), "ns_coefficients must be 3 numbers"),
        (lambda: AdamConfig(grad_clipping=GradientClippingConfig.Value(-1.0)).init(), "threshold must be"),
        (lambda: GradientClippingConfig.Norm(math.nan).init(), "GradientClipping.Norm: max_norm"),
    ],
)
def test_bad_configs_are_refused(make: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make()


def test_defaults_are_burns() -> None:
    assert (AdamConfig().beta_1, AdamConfig().beta_2, AdamConfig().epsilon) == (0.9, 0.999, 1e-5)
    assert (AdamWConfig().weight_decay, AdamWConfig().epsilon) == (1e-4, 1e-5)
    assert MomentumConfig() == MomentumConfig(0.9, 0.1, False)
    assert MuonConfig().momentum == MomentumConfig(0.95, 0.0, True)
    assert (RmsPropConfig().alpha, RmsPropConfig().momentum, RmsPropConfig().epsilon) == (0.99, 0.9, 1e-5)
    assert (AdanConfig().beta_1, AdanConfig().beta_2, AdanConfig().beta_3) == (0.98, 0.92, 0.99)
    assert (AdaGradConfig().lr_decay, AdaGradConfig().epsilon) == (0.0, 1e-5)


@pytest.mark.parametrize(
    "config",
    [
        SgdConfig(
            weight_decay=WeightDecayConfig(0.1),
            momentum=MomentumConfig(0.8, 0.0, True),
            gradient_clipping=GradientClippingConfig.Value(0.5),
        ),
        AdamConfig(amsgrad=True, grad_clipping=GradientClippingConfig.Norm(1.0)),
        AdamWConfig(cautious_weight_decay=True),
        AdaGradConfig(weight_decay=WeightDecayConfig(0.01)),
        RmsPropConfig(centered=True),
        AdanConfig(no_prox=True),
        MuonConfig(adjust_lr_fn=AdjustLrFn.MatchRmsAdamW, ns_coefficients=(3.0, -4.0, 2.0)),
    ],
)
def test_configs_round_trip_through_json(config: Any) -> None:
    assert type(config).from_json(config.to_json()) == config


def test_clipping_config_is_saved_as_burn_writes_it() -> None:
    text = SgdConfig(gradient_clipping=GradientClippingConfig.Value(0.5)).to_json(indent=None)
    assert '"gradient_clipping": {"Value": {"threshold": 0.5}}' in text
    assert GradientClippingConfig.Norm(2.0).init() == GradientClipping.Norm(2.0)
    assert '"adjust_lr_fn": "MatchRmsAdamW"' in MuonConfig(adjust_lr_fn=AdjustLrFn.MatchRmsAdamW).to_json()
