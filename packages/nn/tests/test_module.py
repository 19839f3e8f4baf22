"""Module, Param and records: traversal, mapping, devices, valid/from_inner, records and display."""

from __future__ import annotations

import io
import itertools
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import burn_backend
from burn_backend import Tensor, TensorData
from burn_backend.activation import relu
from burn_nn import (
    Linear,
    LinearConfig,
    Module,
    ModuleMapper,
    ModuleVisitor,
    Param,
    ParamId,
    ParamRecord,
    Recorder,
    RecordError,
    RunningState,
)


class Mlp(Module):
    def __init__(self, device, sizes=(3, 5, 2)):
        self.layers = [LinearConfig(a, b).init(device) for a, b in itertools.pairwise(sizes)]
        self.scale = 2.0
        self.stats = RunningState(Tensor.zeros([2], device))
        self.named = {"extra": Param.initialized(Tensor.ones([4], device))}

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = relu(layer(x))
        return self.layers[-1](x) * self.scale


def test_named_params_in_field_order_and_counts(device) -> None:
    model = Mlp(device)
    names = [name for name, _ in model.named_params()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "named.extra"]
    assert model.num_params() == 3 * 5 + 5 + 5 * 2 + 2 + 4  # running state is not counted
    assert model.devices() == [device]


def test_visitor_sees_paths_and_module_boundaries(device) -> None:
    events: list[str] = []

    class Recorder(ModuleVisitor):
        def enter_module(self, name, container_type):
            events.append(f"enter {name}:{container_type}")

        def exit_module(self, name, container_type):
            events.append(f"exit {name}")

        def visit_float_with_path(self, path, param):
            events.append(".".join(path) + str(list(param.shape)))

    Mlp(device).visit(Recorder())
    assert events[:4] == ["enter layers:list", "enter 0:Linear", "layers.0.weight[3, 5]", "layers.0.bias[5]"]
    assert events[-3:] == ["enter named:dict", "named.extra[4]", "exit named"]


def test_map_returns_a_new_module_and_keeps_ids(device) -> None:
    model = Mlp(device)

    class Zero(ModuleMapper):
        def map_float(self, param):
            return param.map(lambda t: t.zeros_like())

    zeroed = model.map(Zero())
    assert zeroed is not model
    assert zeroed.layers is not model.layers
    assert [p.id for p in zeroed.params()] == [p.id for p in model.params()]
    assert all(p.val().abs().sum().into_scalar() == 0 for p in zeroed.params())
    assert model.layers[0].weight.val().abs().sum().into_scalar() > 0  # the original is untouched
    assert zeroed.scale == 2.0

    class Wrong(ModuleMapper):
        def map_float(self, param):
            return param.val()

    with pytest.raises(TypeError, match=r"map: Wrong returned Tensor for layers\.0\.weight"):
        model.map(Wrong())


def test_params_are_lazy_until_used_and_initialize_once_across_copies(device) -> None:
    calls = []

    def init():
        calls.append(1)
        return Tensor.ones([2, 2], device)

    param = Param.lazy(init, [2, 2], device)
    copy = param.set_require_grad(True)
    assert not param.is_initialized
    assert param.shape == (2, 2)
    assert param.dtype == device.backend.float_dtype
    threads = [threading.Thread(target=copy.val) for _ in range(4)] + [threading.Thread(target=param.val)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert param.val().is_require_grad()


def test_lazy_initializer_of_wrong_shape_fails_on_use(device) -> None:
    param = Param.lazy(lambda: Tensor.ones([3], device), [2], device)
    with pytest.raises(ValueError, match=r"initializer made \[3\] f32, expected \[2\] f32"):
        param.val()


def test_loading_a_record_skips_the_initializers(device) -> None:
    source = LinearConfig(3, 2).init(device)
    fresh = LinearConfig(3, 2).init(device)
    loaded = fresh.load_record(source.into_record())
    assert not fresh.weight.is_initialized  # the random values were never drawn
    assert loaded.weight.id == source.weight.id
    np.testing.assert_array_equal(
        loaded.weight.val().to_data().to_numpy(), source.weight.val().to_data().to_numpy()
    )


def test_record_round_trip_restores_params_and_running_state_exactly(device) -> None:
    model = Mlp(device)
    model.stats.update(Tensor.from_data([1.5, -2.0], device))
    record = model.into_record()
    assert set(record) == {"layers", "stats", "named"}  # constants are not recorded
    assert isinstance(record["layers"][0]["weight"], ParamRecord)
    restored = Mlp(device).load_record(record)
    for (name, ours), (_, theirs) in zip(restored.named_params(), model.named_params()):
        assert ours.id == theirs.id, name
        np.testing.assert_array_equal(ours.val().to_data().to_numpy(), theirs.val().to_data().to_numpy())
    np.testing.assert_array_equal(restored.stats.value().to_data().to_numpy(), [1.5, -2.0])
    assert restored.stats is not model.stats


def test_records_convert_precision_and_accept_bare_tensor_data(device) -> None:
    layer = LinearConfig(2, 2).init(device)
    record = {
        "weight": TensorData(np.eye(2, dtype=np.float64)),
        "bias": ParamRecord(ParamId(5), TensorData(np.array([1.0, 2.0], dtype=np.float16))),
    }
    loaded = layer.load_record(record)
    assert loaded.weight.dtype == layer.weight.dtype
    assert loaded.weight.id == layer.weight.id
    assert loaded.bias.id == ParamId(5)
    np.testing.assert_array_equal(loaded.bias.val().to_data().to_numpy(), [1.0, 2.0])


def test_load_record_names_missing_unexpected_and_mis_shaped_entries(device) -> None:
    model = Mlp(device)
    record = model.into_record()
    del record["layers"][1]["bias"]
    record["layers"][0]["weight"] = ParamRecord(ParamId(), TensorData(np.zeros((2, 2), np.float32)))
    record["named"]["surplus"] = ParamRecord(ParamId(), TensorData(np.zeros(1, np.float32)))
    with pytest.raises(RecordError) as error:
        model.load_record(record)
    assert error.value.missing == ["layers.1.bias"]
    assert error.value.unexpected == ["named.surplus"]
    assert error.value.mismatched == ["layers.0.weight: record shape [2, 2], module shape [3, 5]"]
    # not strict: missing and unexpected entries are tolerated, mis-shaped ones never
    record["layers"][0]["weight"] = model.into_record()["layers"][0]["weight"]
    loaded = model.load_record(record, strict=False)
    assert loaded.layers[1].bias.id == model.layers[1].bias.id


def test_load_record_rejects_wrong_kind_and_structure(device) -> None:
    layer = LinearConfig(2, 2).init(device)
    record = layer.into_record()
    record["bias"] = TensorData(np.array([1, 2], dtype=np.int64))
    with pytest.raises(RecordError, match=r"bias: record holds i64, module holds f32"):
        layer.load_record(record)
    with pytest.raises(RecordError, match=r"layers: expected a list record, got dict"):
        Mlp(device).load_record({"layers": {}, "stats": {}, "named": {}})


def test_list_records_of_another_length(device) -> None:
    short = Mlp(device, (3, 5, 2)).into_record()
    with pytest.raises(RecordError) as error:
        Mlp(device, (3, 5, 5, 2)).load_record(short)
    assert "layers.2.weight" in error.value.missing


def test_valid_runs_on_the_inner_backend_and_from_inner_restores(device) -> None:
    model = Mlp(device)
    inner = model.valid()
    assert inner.devices() == [device.backend.inner.device(0)]
    assert not inner.layers[0].weight.val().is_require_grad()
    x = Tensor.random([4, 3], device=device)
    np.testing.assert_allclose(
        inner(x.inner()).to_data().to_numpy(), model(x).inner().to_data().to_numpy(), rtol=1e-6
    )
    lifted = Module.from_inner(inner, device)
    assert lifted.devices() == [device]
    assert lifted.layers[0].weight.val().is_require_grad()
    assert [p.id for p in lifted.params()] == [p.id for p in model.params()]
    with pytest.raises(TypeError, match="valid: the module is on ndarray:0, which has no autodiff"):
        inner.valid()


def test_gradients_flow_to_params_and_no_grad_freezes(device) -> None:
    model = Mlp(device)
    x = Tensor.random([4, 3], device=device)
    grads = model(x).sum().backward()
    assert all(p.val().grad(grads) is not None for p in model.params()[:4])
    frozen = model.no_grad()
    assert not any(p.val().is_require_grad() for p in frozen.params())
    assert frozen.layers[0].weight.id == model.layers[0].weight.id


def test_to_device_and_fork_make_fresh_leaves(device) -> None:
    model = Mlp(device)
    moved = model.to_device(device)
    assert moved.layers[0].weight.val() is not model.layers[0].weight.val()
    assert moved.layers[0].weight.val().is_require_grad()
    lazy = LinearConfig(2, 3).init(device).fork(device)
    assert not lazy.weight.is_initialized
    assert lazy.weight.device == device


def test_display_shows_the_tree_with_shapes_and_counts(device) -> None:
    text = repr(Mlp(device))
    assert text.startswith("Mlp {\n  layers: [\n    Linear {weight: [3, 5], bias: [5], params: 20},")
    assert "  scale: 2.0\n" in text
    assert "  stats: running [2]\n" in text
    assert text.endswith("  params: 36\n}")


def test_param_initialized_requires_a_tensor(device) -> None:
    with pytest.raises(TypeError, match=r"Param\.initialized: expected a Tensor, got ndarray"):
        Param.initialized(np.zeros(2))


def test_running_state_update_checks_shape(device) -> None:
    state = RunningState(Tensor.zeros([3], device))
    with pytest.raises(ValueError, match=r"RunningState.update: shape \[2\] differs from the state's \[3\]"):
        state.update(Tensor.zeros([2], device))


def test_param_id_round_trips_through_text() -> None:
    ident = ParamId()
    assert ParamId.parse(str(ident)) == ident
    assert hash(ParamId.parse(str(ident))) == hash(ident)
    assert ParamId(1) != ParamId(2)


def test_linear_module_call_is_forward(device) -> None:
    layer: Linear = LinearConfig(3, 2).init(device)
    x = Tensor.random([2, 3], device=device)
    np.testing.assert_array_equal(layer(x).to_data().to_numpy(), layer.forward(x).to_data().to_numpy())


def test_constant_tensors_follow_the_module_but_are_not_recorded(device) -> None:
    class Scaled(Module):
        def __init__(self, device):
            self.layer = LinearConfig(2, 2).init(device)
            self.table = Tensor.from_data([1.0, 2.0], device)

        def forward(self, x):
            return self.layer(x) * self.table

    model = Scaled(device)
    assert set(model.into_record()) == {"layer"}
    assert model.num_params() == 6
    assert [name for name, _ in model.named_params()] == [
        "layer.weight",
        "layer.bias",
    ]
    inner = model.valid()
    assert inner.table.device == device.backend.inner.device(0)
    assert inner.devices() == [device.backend.inner.device(0)]
    assert "table: tensor [2]" in repr(model)
    loaded = Scaled(device).load_record(model.into_record())
    np.testing.assert_array_equal(loaded.table.to_data().to_numpy(), [1.0, 2.0])


def test_lists_and_dicts_may_hold_constants_beside_modules(device) -> None:
    class Optional(Module):
        def __init__(self, device):
            self.layers = [LinearConfig(2, 2).init(device), None, 3]
            self.heads = {"main": LinearConfig(2, 1).init(device), "skip": None}

        def forward(self, x):
            return self.heads["main"](self.layers[0](x))

    model = Optional(device)
    assert [name for name, _ in model.named_params()] == [
        "layers.0.weight",
        "layers.0.bias",
        "heads.main.weight",
        "heads.main.bias",
    ]
    seen: list[str] = []

    class Names(ModuleVisitor):
        def visit_float_with_path(self, path, param) -> None:
            seen.append(".".join(path))

    model.visit(Names())
    assert seen == ["layers.0.weight", "layers.0.bias", "heads.main.weight", "heads.main.bias"]
    record = model.into_record()
    assert record["layers"][1:] == [None, None]
    assert set(record["heads"]) == {"main"}
    loaded = Optional(device).load_record(record)
    assert loaded.layers[1:] == [None, 3]
    assert loaded.heads["skip"] is None
    np.testing.assert_array_equal(
        loaded.layers[0].weight.val().to_data().to_numpy(), model.layers[0].weight.val().to_data().to_numpy()
    )
    assert "heads" in repr(model)  # the display walks the same structure


# -- files through a recorder ------------------------------------------------------------------------
class NpzRecorder:
    """A recorder written against burn_backend's record vocabulary alone (no burn_nn import needed): the
    record's tree as JSON beside one array per parameter, in an ``.npz`` file; nothing is pickled."""

    def save(self, record: Mapping[str, Any], path: str | Path) -> Path:
        target = Path(path).with_suffix(".npz")
        target.write_bytes(self.to_bytes(record))
        return target

    def load(self, path: str | Path) -> dict[str, Any]:
        return self.from_bytes(Path(path).with_suffix(".npz").read_bytes())

    def to_bytes(self, record: Mapping[str, Any]) -> bytes:
        arrays: dict[str, np.ndarray] = {}

        def encode(value: Any, key: str) -> Any:
            if isinstance(value, burn_backend.ParamRecord):
                arrays[key] = value.value.to_numpy()
                return {"param": key, "id": str(value.id)}
            if isinstance(value, Mapping):
                return {"dict": {name: encode(item, f"{key}.{name}") for name, item in value.items()}}
            if isinstance(value, list):
                return {"list": [encode(item, f"{key}.{index}") for index, item in enumerate(value)]}
            return {"value": value}

        tree = json.dumps(encode(record, "root"))
        buffer = io.BytesIO()
        np.savez(buffer, tree=np.array(tree), **arrays)
        return buffer.getvalue()

    def from_bytes(self, data: bytes) -> dict[str, Any]:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:

            def decode(node: dict[str, Any]) -> Any:
                if "param" in node:
                    value = TensorData(archive[node["param"]])
                    return burn_backend.ParamRecord(burn_backend.ParamId.parse(node["id"]), value)
                if "dict" in node:
                    return {name: decode(item) for name, item in node["dict"].items()}
                if "list" in node:
                    return [decode(item) for item in node["list"]]
                return node["value"]

            return decode(json.loads(str(archive["tree"])))  # type: ignore[no-any-return]


def test_record_vocabulary_is_backend_cores() -> None:
    assert ParamRecord is burn_backend.ParamRecord
    assert ParamId is burn_backend.ParamId
    assert Recorder is burn_backend.Recorder
    assert isinstance(NpzRecorder(), Recorder)
    assert not isinstance(object(), Recorder)


def test_save_file_and_load_file_round_trip_through_a_recorder(device, tmp_path: Path) -> None:
    model = Mlp(device)
    model.stats.update(Tensor.from_data([0.5, -1.0], device))
    written = model.save_file(tmp_path / "model", NpzRecorder())
    assert written == tmp_path / "model.npz"
    assert written.is_file()

    fresh = Mlp(device)
    loaded = fresh.load_file(tmp_path / "model", NpzRecorder())
    assert loaded is not fresh
    for (name, ours), (_, theirs) in zip(loaded.named_params(), model.named_params()):
        assert ours.id == theirs.id, name
        np.testing.assert_array_equal(ours.val().to_data().to_numpy(), theirs.val().to_data().to_numpy())
    np.testing.assert_array_equal(loaded.stats.value().to_data().to_numpy(), [0.5, -1.0])
    assert fresh.layers[0].weight.id != model.layers[0].weight.id  # the module it was called on is unchanged


def test_load_file_onto_another_device(device, inner_device, tmp_path: Path) -> None:
    model = Mlp(device)
    model.save_file(tmp_path / "model", NpzRecorder())
    loaded = Mlp(device).load_file(tmp_path / "model", NpzRecorder(), inner_device)
    assert loaded.devices() == [inner_device]
    np.testing.assert_array_equal(
        loaded.layers[1].weight.val().to_data().to_numpy(), model.layers[1].weight.val().to_data().to_numpy()
    )


def test_load_file_of_another_model_names_what_does_not_fit(device, tmp_path: Path) -> None:
    Mlp(device, (3, 4, 2)).save_file(tmp_path / "other", NpzRecorder())
    with pytest.raises(RecordError, match=r"layers\.0\.weight: record shape \[3, 4\], module shape \[3, 5\]"):
        Mlp(device).load_file(tmp_path / "other", NpzRecorder())

    short = Mlp(device, (3, 5, 5))
    short.save_file(tmp_path / "short", NpzRecorder())
    with pytest.raises(RecordError) as error:
        Mlp(device, (3, 5, 5, 2)).load_file(tmp_path / "short", NpzRecorder())
    assert "layers.2.weight" in error.value.missing
    longer = Mlp(device, (3, 5, 5, 2)).load_file(tmp_path / "short", NpzRecorder(), strict=False)
    assert longer.layers[0].weight.id == short.layers[0].weight.id
