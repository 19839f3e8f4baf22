"""LoRA: adapted outputs and gradients against PEFT's formula in float64 (NumPy) and PyTorch's autograd,
only the adapters train (no gradient, no optimizer state and no change for the base), merging, saving and
loading adapters alone, target patterns and their errors, training through the Learner."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Distribution, Tensor
from burn_nn import (
    Linear,
    LinearConfig,
    LoraConfig,
    LoraLinear,
    Module,
    Param,
    ParamGroup,
    RecordError,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    lora_adapters,
)
from burn_nn.optim import AdamConfig, GradientsParams

F64 = np.float64


class Mlp(Module):
    def __init__(self, device: Device) -> None:
        self.hidden = LinearConfig(6, 8).init(device)
        self.out = LinearConfig(8, 3, bias=False).init(device)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.hidden(x).tanh())


def array(param: Param | Tensor) -> np.ndarray[Any, Any]:
    tensor = param.val() if isinstance(param, Param) else param
    return tensor.to_data().to_numpy()


def randomize_b(layer: LoraLinear, rng: np.random.Generator) -> LoraLinear:
    """B is zero at first (the adapter changes nothing); give it values, as training would."""
    layer.lora_b = layer.lora_b.with_value(
        Tensor.from_data(
            rng.standard_normal(list(layer.lora_b.shape)).astype(np.float32), layer.lora_b.device
        )
    )
    return layer


def peft(
    x: np.ndarray[Any, Any], layer: LoraLinear, mask: np.ndarray[Any, Any] | None = None
) -> np.ndarray[Any, Any]:
    """PEFT's ``base(x) + lora_B(lora_A(dropout(x))) * alpha / r`` in float64, with PyTorch's layouts:
    ``lora_A.weight`` is ``[r, d_in]`` and ``lora_B.weight`` ``[d_out, r]`` (the transposes of ours)."""
    w, a_t, b_t = (
        array(layer.weight).astype(F64).T,
        array(layer.lora_a).astype(F64).T,
        array(layer.lora_b).astype(F64).T,
    )
    x = x.astype(F64)
    base = x @ w.T + (0.0 if layer.bias is None else array(layer.bias).astype(F64))
    dropped = x if mask is None else x * mask / (1.0 - layer.dropout)
    return base + (dropped @ a_t.T @ b_t.T) * layer.scaling  # type: ignore[no-any-return]


def test_adapted_output_is_pefts_formula(device: Device, rng: np.random.Generator) -> None:
    layer = LinearConfig(6, 5).init(device).apply_lora(LoraConfig(3, 6.0))
    assert isinstance(layer, LoraLinear)
    assert layer.scaling == 2.0
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    inputs = Tensor.from_data(x, device)
    # B = 0: the adapted layer computes exactly what the base does
    base = Linear.__new__(Linear)
    base.weight, base.bias = layer.weight, layer.bias
    np.testing.assert_array_equal(array(layer(inputs)), array(base(inputs)))
    # A is drawn as PyTorch draws a Linear(6, 3) weight: uniform on +-1/sqrt(6)
    a = array(layer.lora_a)
    assert a.shape == (6, 3)
    assert np.abs(a).max() <= 1 / math.sqrt(6)
    assert np.unique(a).size == a.size
    assert array(layer.lora_b).shape == (3, 5)
    assert not array(layer.lora_b).any()
    layer = randomize_b(layer, rng)
    np.testing.assert_allclose(array(layer(inputs)), peft(x, layer), rtol=1e-5, atol=1e-5)


def test_dropout_drops_the_adapters_input_only(device: Device, rng: np.random.Generator) -> None:
    layer = randomize_b(LoraLinear(LinearConfig(6, 5).init(device), LoraConfig(2, 4.0, dropout=0.5)), rng)
    x = rng.standard_normal((7, 6)).astype(np.float32)
    for param in layer.params():
        param.val()  # lazy parameters draw their values first, not between the seed and the mask
    device.seed(11)
    output = array(layer(Tensor.from_data(x, device)))
    device.seed(11)  # the same draw dropout makes from the device's generator
    mask = array(Tensor.random([7, 6], Distribution.bernoulli(0.5), device))
    assert 0 < mask.sum() < mask.size
    np.testing.assert_allclose(output, peft(x, layer, mask), rtol=1e-5, atol=1e-5)
    evaluation = layer.valid()  # no dropout in evaluation
    np.testing.assert_allclose(
        array(evaluation(Tensor.from_data(x, evaluation.devices()[0]))), peft(x, layer), rtol=1e-5, atol=1e-5
    )


def test_gradients_reach_only_the_adapters(device: Device, rng: np.random.Generator, ref: Any) -> None:
    torch = ref.torch
    model = Mlp(device).apply_lora(LoraConfig(2, 3.0))
    model.hidden = randomize_b(model.hidden, rng)
    model.out = randomize_b(model.out, rng)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    up = rng.standard_normal((5, 3)).astype(np.float32)
    loss = (model(Tensor.from_data(x, device)) * Tensor.from_data(up, device)).sum()
    grads = GradientsParams.from_grads(loss.backward(), model)
    adapters = {"hidden.lora_a", "hidden.lora_b", "out.lora_a", "out.lora_b"}
    by_id = {param.id: path for path, param in model.named_params()}
    assert {by_id[id] for id in grads} == adapters  # the base weights and bias got none

    def leaf(param: Param, grad: bool) -> Any:
        return torch.tensor(array(param).astype(F64), requires_grad=grad)

    h, o = model.hidden, model.out
    hw, hb, ha, hbb = leaf(h.weight, False), leaf(h.bias, False), leaf(h.lora_a, True), leaf(h.lora_b, True)
    ow, oa, ob = leaf(o.weight, False), leaf(o.lora_a, True), leaf(o.lora_b, True)
    tx = torch.tensor(x.astype(F64))
    hidden = torch.tanh(tx @ hw + hb + tx @ ha @ hbb * h.scaling)
    out = hidden @ ow + hidden @ oa @ ob * o.scaling
    (out * torch.tensor(up.astype(F64))).sum().backward()
    params = dict(model.named_params())
    for path, theirs in [
        ("hidden.lora_a", ha),
        ("hidden.lora_b", hbb),
        ("out.lora_a", oa),
        ("out.lora_b", ob),
    ]:
        gradient = grads.get(params[path].id)
        assert gradient is not None
        np.testing.assert_allclose(array(gradient), theirs.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=path)


def test_adam_steps_change_and_keep_state_for_adapters_only(device: Device, rng: np.random.Generator) -> None:
    model = Mlp(device).apply_lora(LoraConfig(2, 4.0))
    before = {path: array(param).copy() for path, param in model.named_params()}
    optim = AdamConfig().init()
    for _ in range(3):
        x = Tensor.from_data(rng.standard_normal((5, 6)).astype(np.float32), device)
        model = optim.step(0.05, model, GradientsParams.from_grads(model(x).square().sum().backward(), model))
    adapters = {path: param for path, param in model.named_params() if "lora" in path}
    assert set(optim.into_record()) == {str(param.id) for param in adapters.values()}
    for path, param in model.named_params():
        if path in adapters:
            assert not np.array_equal(array(param), before[path]), path
        else:
            np.testing.assert_array_equal(array(param), before[path], err_msg=path, strict=True)


def test_merge_gives_the_same_outputs_as_a_plain_model(device: Device, rng: np.random.Generator) -> None:
    base = Mlp(device)
    model = base.apply_lora(LoraConfig(3, 5.0, targets=("hidden",)))
    assert isinstance(model.hidden, LoraLinear)
    assert isinstance(model.out, Linear)
    model.hidden = randomize_b(model.hidden, rng)
    merged = model.merge_lora()
    assert type(merged.hidden) is Linear
    assert [p for p, _ in merged.named_params()] == [p for p, _ in base.named_params()]
    assert [q.id for _, q in merged.named_params()] == [q.id for _, q in base.named_params()]
    lora = model.hidden
    expected = (
        array(lora.weight).astype(F64)
        + array(lora.lora_a).astype(F64) @ array(lora.lora_b).astype(F64) * lora.scaling
    )
    np.testing.assert_allclose(array(merged.hidden.weight), expected, rtol=1e-6, atol=1e-6)
    x = Tensor.from_data(rng.standard_normal((4, 6)).astype(np.float32), device)
    np.testing.assert_allclose(array(merged(x)), array(model(x)), rtol=1e-5, atol=1e-6)
    # the merged model loads into the base architecture
    reloaded = Mlp(device).load_record(merged.into_record())
    np.testing.assert_allclose(array(reloaded(x)), array(model(x)), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="merge_lora: Mlp has no LoRA adapters"):
        merged.merge_lora()


def test_adapters_save_and_load_alone(device: Device, rng: np.random.Generator, tmp_path: Path) -> None:
    from burn_record import NamedMpkFileRecorder

    encoder = TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=2, n_layers=2).init(device)
    config = LoraConfig(4, 8.0, targets=("*.query", "*.value"))
    model = encoder.apply_lora(config)
    for layer in model.layers:
        layer.mha.query = randomize_b(layer.mha.query, rng)
        layer.mha.value = randomize_b(layer.mha.value, rng)
    record = model.into_record_group(lora_adapters(model))
    path = NamedMpkFileRecorder().save(record, tmp_path / "adapters")
    loaded_record = NamedMpkFileRecorder().load(path)
    full = NamedMpkFileRecorder().save(model.into_record(), tmp_path / "full")
    assert sorted(loaded_record["layers"]["1"]["mha"]) == ["query", "value"]
    assert sorted(loaded_record["layers"]["1"]["mha"]["value"]) == ["lora_a", "lora_b"]
    assert path.stat().st_size * 5 < full.stat().st_size  # 512 adapter values of the model's 5,000

    fresh = encoder.apply_lora(config)  # the same base, new adapters
    restored = fresh.load_record_group(loaded_record, lora_adapters(fresh))
    x = Tensor.from_data(rng.standard_normal((2, 5, 16)).astype(np.float32), device)
    ours, theirs = restored.valid(), model.valid()
    inputs = TransformerEncoderInput(x.inner())
    np.testing.assert_array_equal(array(ours(inputs)), array(theirs(inputs)))
    assert restored.layers[0].mha.query.lora_a.require_grad  # the adapters still train

    other = encoder.apply_lora(config.with_rank(2))
    with pytest.raises(RecordError) as error:
        other.load_record_group(loaded_record, lora_adapters(other))
    assert "layers.0.mha.query.lora_a: record shape [16, 4], module shape [16, 2]" in error.value.mismatched
    elsewhere = encoder.apply_lora(LoraConfig(4, 8.0, targets=("*.key",)))
    with pytest.raises(RecordError) as error:
        elsewhere.load_record_group(loaded_record, lora_adapters(elsewhere))
    assert error.value.missing[0] == "layers.0.mha.key.lora_a"
    assert error.value.unexpected[0] == "layers.0.mha.query.lora_a"


def test_targets_by_glob_name_and_regex(device: Device) -> None:
    encoder = TransformerEncoderConfig(d_model=8, d_ff=16, n_heads=2, n_layers=2).init(device)

    def adapted(config: LoraConfig) -> list[str]:
        model = encoder.apply_lora(config)
        return sorted(p.rsplit(".", 1)[0] for p, _ in model.named_params() if p.endswith("lora_a"))

    assert adapted(LoraConfig(2, 2.0, targets=("value",))) == ["layers.0.mha.value", "layers.1.mha.value"]
    assert adapted(LoraConfig(2, 2.0, targets=("layers.1.*",))) == [
        "layers.1.mha.key",
        "layers.1.mha.output",
        "layers.1.mha.query",
        "layers.1.mha.value",
        "layers.1.pwff.linear_inner",
        "layers.1.pwff.linear_outer",
    ]
    assert adapted(LoraConfig(2, 2.0, target_regex=r".*\.0\.mha\.(query|key)")) == [
        "layers.0.mha.key",
        "layers.0.mha.query",
    ]
    assert len(adapted(LoraConfig(2, 2.0))) == 12  # every Linear layer
    every = encoder.apply_lora(LoraConfig(2, 2.0))
    assert all(not p.require_grad for path, p in every.named_params() if "lora" not in path)  # norms too
    assert every.unfreeze_group(ParamGroup.from_predicate("norm")).layers[0].norm_1.gamma.require_grad


def test_targets_matching_nothing_name_the_linear_layers(device: Device) -> None:
    encoder = TransformerEncoderConfig(d_model=8, d_ff=16, n_heads=2, n_layers=2).init(device)
    with pytest.raises(ValueError) as error:
        encoder.apply_lora(LoraConfig(2, 2.0, targets=("*.q_proj", "v_proj")))
    message = str(error.value)
    assert message.startswith("apply_lora: '*.q_proj', 'v_proj' match no Linear layer of TransformerEncoder")
    assert "its Linear layers are layers.0.mha.query, layers.0.mha.key, layers.0.mha.value" in message
    with pytest.raises(ValueError, match="has no Linear layer"):
        Module().apply_lora(LoraConfig(2, 2.0, target_regex="x"))
    with pytest.raises(ValueError, match=r"LoRA adapters already \(hidden, out\); merge_lora\(\) them first"):
        Mlp(device).apply_lora(LoraConfig(2, 2.0)).apply_lora(LoraConfig(2, 2.0))
    with pytest.raises(TypeError, match="apply_lora: expected a LoraConfig, got dict"):
        Mlp(device).apply_lora({"rank": 2})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rank": 0, "alpha": 1.0}, "rank must be >= 1, got 0"),
        ({"rank": 2, "alpha": 0.0}, "alpha must be a finite number > 0, got 0.0"),
        ({"rank": 2, "alpha": math.inf}, "alpha must be a finite number > 0, got inf"),
        ({"rank": 2, "alpha": 1.0, "dropout": 1.0}, r"dropout must be in \[0, 1\), got 1.0"),
        ({"rank": 2, "alpha": 1.0, "targets": ()}, r"targets must be non-empty patterns, got \(\)"),
        ({"rank": 2, "alpha": 1.0, "target_regex": "(q"}, r"invalid target_regex '\(q'"),
    ],
)
def test_config_is_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"LoraConfig: {message}"):
        LoraConfig(**kwargs)


def test_trains_through_the_learner(tmp_path: Path, rng: np.random.Generator) -> None:
    pytest.importorskip("burn_train")
    from burn_autodiff import Autodiff
    from burn_ndarray import NdArray
    from burn_nn.loss import MseLoss
    from burn_train import CliRenderer, LearnerBuilder, RegressionOutput, TrainOutput
    from burn_train.data import DataLoaderBuilder, InMemDataset

    class Regressor(Mlp):
        def step(self, batch: tuple[Tensor, Tensor]) -> RegressionOutput:
            output = self.forward(batch[0])
            return RegressionOutput(MseLoss()(output, batch[1]), output, batch[1])

        def train_step(self, batch: tuple[Tensor, Tensor]) -> TrainOutput[RegressionOutput]:
            item = self.step(batch)
            return TrainOutput(self, item.loss.backward(), item)

        def valid_step(self, batch: tuple[Tensor, Tensor]) -> RegressionOutput:
            return self.step(batch)

    class Batcher:
        def batch(self, items: list[np.ndarray[Any, Any]], device: Device) -> tuple[Tensor, Tensor]:
            data = np.stack(items).astype(np.float32)
            return Tensor.from_data(data[:, :6], device), Tensor.from_data(data[:, 6:], device)

    samples = list(rng.standard_normal((64, 9)))
    device = Autodiff(NdArray()).device()
    model = Regressor(device).apply_lora(LoraConfig(2, 4.0))
    before = {path: array(param).copy() for path, param in model.named_params()}
    loader = DataLoaderBuilder(Batcher()).batch_size(16)
    learner = (
        LearnerBuilder(tmp_path)
        .renderer(CliRenderer())
        .with_application_logger(False)
        .num_epochs(2)
        .build(model, AdamConfig().init(), 1e-2)
    )
    trained = learner.fit(loader.build(InMemDataset(samples[:48])), loader.build(InMemDataset(samples[48:])))
    for path, param in trained.named_params():
        if "lora" in path:
            assert not np.array_equal(array(param), before[path]), path
        else:
            np.testing.assert_array_equal(array(param), before[path], err_msg=path, strict=True)
