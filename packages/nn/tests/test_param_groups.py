"""Parameter groups: which parameters a ``ParamGroup`` selects, ``freeze_group``/``unfreeze_group`` with
optimizer steps (frozen parameters stay bit-identical and get no optimizer state), and records of a
group alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, ParamId, ParamRecord, Tensor, TensorData
from burn_nn import LinearConfig, Module, ParamGroup, ParamGroupError, RecordError
from burn_nn.optim import AdamConfig, GradientsParams


class Stack(Module):
    """An embedding-free stack: a list of two Linear layers and a head."""

    def __init__(self, device: Device) -> None:
        self.layers = [LinearConfig(4, 4).init(device), LinearConfig(4, 4).init(device)]
        self.head = LinearConfig(4, 2).init(device)

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x).tanh()
        return self.head(x)


def values(model: Module) -> dict[str, np.ndarray[Any, Any]]:
    return {path: param.val().to_data().to_numpy().copy() for path, param in model.named_params()}


def selected(group: ParamGroup, model: Module) -> list[str]:
    return [path for path, param in model.named_params() if group.matches(param.id, path)]


def test_group_kinds_select_as_burns(device: Device) -> None:
    model = Stack(device)
    assert selected(ParamGroup.from_path("head.bias"), model) == ["head.bias"]
    assert selected(ParamGroup.from_paths(["layers.0.weight", "head.weight"]), model) == [
        "layers.0.weight",
        "head.weight",
    ]
    assert selected(ParamGroup.from_predicate("layers"), model) == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
    ]
    assert selected(ParamGroup.from_predicates(["layers", "bias"]), model) == [
        "layers.0.bias",
        "layers.1.bias",
    ]
    assert selected(ParamGroup.from_any_predicates(["head", "1.b"]), model) == [
        "layers.1.bias",
        "head.weight",
        "head.bias",
    ]
    assert selected(ParamGroup.from_regex(r"^layers\.\d+\.weight$"), model) == [
        "layers.0.weight",
        "layers.1.weight",
    ]
    assert selected(ParamGroup.from_regexes([r"^layers", r"1"]), model) == [
        "layers.1.weight",
        "layers.1.bias",
    ]
    assert selected(ParamGroup.from_any_regexes([r"^head\.w", r"0\.bias$"]), model) == [
        "layers.0.bias",
        "head.weight",
    ]
    assert len(selected(ParamGroup.all(), model)) == 6
    assert selected(ParamGroup.ids_from_module(model.head), model) == ["head.weight", "head.bias"]
    assert selected(ParamGroup.from_ids([model.layers[1].weight.id]), model) == ["layers.1.weight"]
    union = ParamGroup.from_path("head.bias").fuse(ParamGroup.from_ids([model.layers[0].weight.id]))
    assert selected(union, model) == ["layers.0.weight", "head.bias"]
    minus = ParamGroup.all().exclude(ParamGroup.from_predicate("weight"))
    assert selected(minus, model) == ["layers.0.bias", "layers.1.bias", "head.bias"]
    # a union keeps each side's exclusions for what that side brings
    mixed = minus.fuse(ParamGroup.from_path("head.weight"))
    assert selected(mixed, model) == ["layers.0.bias", "layers.1.bias", "head.weight", "head.bias"]
    assert not ParamGroup.from_path("head.bias").matches(ParamId(), "head.bias.x")


def test_group_construction_errors() -> None:
    with pytest.raises(ParamGroupError, match=r"from_regexes: invalid regex '\(unclosed'"):
        ParamGroup.from_regex("(unclosed")
    with pytest.raises(ParamGroupError, match="from_paths: expected strings, got int"):
        ParamGroup.from_paths([3])  # type: ignore[list-item]
    with pytest.raises(ParamGroupError, match="from_ids: expected ParamIds, got str"):
        ParamGroup.from_ids(["1"])  # type: ignore[list-item]
    with pytest.raises(ParamGroupError, match="fuse: expected a ParamGroup, got str"):
        ParamGroup.all().fuse("head")  # type: ignore[arg-type]


def test_frozen_group_stays_bit_identical_and_has_no_optimizer_state(
    device: Device, rng: np.random.Generator
) -> None:
    model = Stack(device).freeze_group(
        ParamGroup.from_predicate("layers.0").fuse(ParamGroup.from_path("head.bias"))
    )
    frozen = ["layers.0.weight", "layers.0.bias", "head.bias"]
    assert [path for path, param in model.named_params() if not param.require_grad] == frozen
    before = values(model)
    optim = AdamConfig().init()
    for _ in range(3):
        x = Tensor.from_data(rng.standard_normal((5, 4)).astype(np.float32), device)
        grads = GradientsParams.from_grads(model(x).square().sum().backward(), model)
        assert {str(id) for id in grads} == {
            str(p.id) for path, p in model.named_params() if path not in frozen
        }
        model = optim.step(0.1, model, grads)
    after = values(model)
    for path in before:
        if path in frozen:
            np.testing.assert_array_equal(after[path], before[path], err_msg=path, strict=True)
        else:
            assert not np.array_equal(after[path], before[path]), path
    trained = {str(p.id) for path, p in model.named_params() if path not in frozen}
    assert set(optim.into_record()) == trained  # no moments were allocated for the frozen ones

    model = model.unfreeze_group(ParamGroup.from_path("head.bias"))
    x = Tensor.from_data(rng.standard_normal((5, 4)).astype(np.float32), device)
    model = optim.step(0.1, model, GradientsParams.from_grads(model(x).sum().backward(), model))
    assert not np.array_equal(values(model)["head.bias"], before["head.bias"])
    np.testing.assert_array_equal(values(model)["layers.0.weight"], before["layers.0.weight"], strict=True)


def test_freezing_keeps_lazy_parameters_lazy(device: Device) -> None:
    model = Stack(device).freeze_group(ParamGroup.all())
    assert all(not param.is_initialized and not param.require_grad for param in model.params())


def test_group_selecting_nothing_names_the_parameters(device: Device) -> None:
    with pytest.raises(ParamGroupError) as error:
        Stack(device).freeze_group(ParamGroup.from_predicate("encoder"))
    message = str(error.value)
    assert (
        "freeze_group: ParamGroup(include('encoder',)) selects none of the Stack's 6 float parameters"
        in message
    )
    assert "layers.0.weight, layers.0.bias, layers.1.weight" in message
    with pytest.raises(ParamGroupError, match="unfreeze_group: expected a ParamGroup, got str"):
        Stack(device).unfreeze_group("layers")  # type: ignore[arg-type]


def test_record_of_a_group_round_trips(device: Device) -> None:
    source, target = Stack(device), Stack(device)
    group = ParamGroup.from_predicate("layers.1")
    record = source.into_record_group(group)
    assert record == {
        "layers": {"1": {"weight": record["layers"]["1"]["weight"], "bias": record["layers"]["1"]["bias"]}}
    }
    loaded = target.load_record_group(record, group)
    expected = values(target) | {k: v for k, v in values(source).items() if k.startswith("layers.1")}
    for path, array in values(loaded).items():
        np.testing.assert_array_equal(array, expected[path], err_msg=path, strict=True)
    assert loaded.layers[1].weight.id == source.layers[1].weight.id  # ids come with the record
    assert loaded.layers[0].weight.id == target.layers[0].weight.id


def test_group_record_that_does_not_fit_changes_nothing(device: Device) -> None:
    model = Stack(device)
    before = values(model)
    group = ParamGroup.from_predicate("layers.1")
    record = model.into_record_group(group)
    wrong = {
        "layers": {"1": {"weight": TensorData(np.zeros((3, 4), np.float32)), "bias": "hello"}},
        "x": {"y": record["layers"]["1"]["bias"]},
    }
    with pytest.raises(RecordError) as error:
        model.load_record_group(wrong, group)
    assert error.value.unexpected == ["x.y"]
    assert error.value.mismatched == [
        "layers.1.weight: record shape [3, 4], module shape [4, 4]",
        "layers.1.bias: expected a ParamRecord or TensorData, got str",
    ]
    with pytest.raises(RecordError) as error:
        model.load_record_group({"layers": {"1": {"weight": record["layers"]["1"]["weight"]}}}, group)
    assert error.value.missing == ["layers.1.bias"]
    full = model.into_record()
    with pytest.raises(RecordError) as error:
        model.load_record_group(full, group)  # the whole model's record is not the group's
    assert error.value.unexpected == ["layers.0.weight", "layers.0.bias", "head.weight", "head.bias"]
    big = ParamRecord(ParamId(), TensorData(np.full((4,), 1e6, np.float64)))
    with pytest.raises(RecordError, match="expected a dict record, got list"):
        model.load_record_group([big], group)  # type: ignore[arg-type]
    cyclic: dict[str, Any] = {"layers": {"1": {}}}
    cyclic["layers"]["1"]["weight"] = cyclic
    with pytest.raises(RecordError) as error:
        model.load_record_group(cyclic, group)
    assert error.value.mismatched == ["layers.1.weight: the record holds itself here"]
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):  # deeper than Python's recursion limit
        node["x"] = {}
        node = node["x"]
    with pytest.raises(RecordError) as error:
        model.load_record_group({"layers": {"1": record["layers"]["1"]}, "deep": deep}, group)
    assert error.value.mismatched == ["deep.x.x.x.x.x.x.x...: the record nests deeper than 256"]
    for path, array in values(model).items():
        np.testing.assert_array_equal(array, before[path], strict=True)
