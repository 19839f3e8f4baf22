"""Real models exported by ``torch.onnx.export`` (the default dynamo exporter and the TorchScript one)
run through both routes, ``load`` and ``generate``, and compared with onnxruntime (f32, 1e-4)."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor, default_device

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
burn_onnx = pytest.importorskip("burn_import.onnx")

TOLERANCE = 1e-4


class _Block(torch.nn.Module):  # type: ignore[misc]
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)

    def forward(self, x: Any) -> Any:
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class ResNetLike(torch.nn.Module):  # type: ignore[misc]
    """A small ResNet: 7x7 stem with batch norm and max pooling, residual blocks, a strided stage."""

    def __init__(self, width: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(width)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.block1 = _Block(width)
        self.down = torch.nn.Conv2d(width, 2 * width, 3, 2, 1)
        self.block2 = _Block(2 * width)
        self.fc = torch.nn.Linear(2 * width, classes)

    def forward(self, x: Any) -> Any:
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        x = self.block2(torch.relu(self.down(self.block1(x))))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def _randomize_batch_norms(net: Any) -> None:
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.copy_(torch.randn(module.num_features, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(module.num_features, generator=generator) + 0.5)
                module.weight.copy_(torch.rand(module.num_features, generator=generator) + 0.5)


def _export(net: Any, args: tuple[Any, ...], path: Path, dynamo: bool, names: list[str]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            pytest.importorskip("onnxscript")
            torch.onnx.export(net, args, str(path), dynamo=True, input_names=names)
        else:
            torch.onnx.export(net, args, str(path), dynamo=False, input_names=names, opset_version=17)
    return path


def _reference(path: Path, feeds: dict[str, np.ndarray[Any, Any]]) -> list[np.ndarray[Any, Any]]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    return list(session.run(None, {k: v for k, v in feeds.items() if k in wanted}))


def _check_both_routes(path: Path, feeds: dict[str, np.ndarray[Any, Any]], tmp_path: Path) -> None:
    expected = _reference(path, feeds)
    device = default_device()
    model = burn_onnx.load(path, device)
    outputs = model.run(**{k: v for k, v in feeds.items() if k in model.input_names})
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got.to_numpy(), want, rtol=TOLERANCE, atol=TOLERANCE)
    source, weights = burn_onnx.generate(path, tmp_path / "generated", name="gen_model")
    spec = importlib.util.spec_from_file_location("gen_model", source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_model"] = module
    try:
        spec.loader.exec_module(module)
        generated = module.Model.load(weights, device)
        args = [Tensor.from_numpy(feeds[name], device) for name in model.input_names]
        result = generated(*args)
    finally:
        sys.modules.pop("gen_model", None)
    results = result if isinstance(result, tuple) else (result,)
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got.to_numpy(), want, rtol=TOLERANCE, atol=TOLERANCE)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_resnet_like_cnn_matches_onnxruntime(tmp_path: Path, dynamo: bool) -> None:
    torch.manual_seed(0)
    net = ResNetLike().eval()
    _randomize_batch_norms(net)
    x = torch.randn(2, 3, 32, 32)
    path = _export(net, (x,), tmp_path / "resnet.onnx", dynamo, ["x"])
    _check_both_routes(path, {"x": x.numpy()}, tmp_path)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_small_bert_matches_onnxruntime(tmp_path: Path, dynamo: bool) -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    bert = transformers.BertModel(config).eval()
    ids = torch.randint(0, 99, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 5:] = 0

    class Wrapper(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    path = _export(
        Wrapper().eval(), (ids, mask), tmp_path / "bert.onnx", dynamo, ["input_ids", "attention_mask"]
    )
    _check_both_routes(path, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}, tmp_path)


def test_unsupported_operator_is_rejected_up_front_with_node_op_and_opset() -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("StringNormalizer", ["x"], ["y"], name="normalize")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        burn_onnx.UnsupportedModelError, match=r"node 'normalize' \(StringNormalizer, opset 17\)"
    ):
        burn_onnx.load(model)


def test_unknown_attribute_is_rejected() -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"], name="act", bogus=3)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        burn_onnx.UnsupportedModelError, match=r"node 'act' \(Relu, opset 17\): unsupported attribute"
    ):
        burn_onnx.read_model(model)


def test_folding_and_dead_code_elimination() -> None:
    from onnx import TensorProto, helper, numpy_helper

    shape = numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "shape")
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Neg", ["x"], ["dead"]),
        helper.make_node("Add", ["shape", "shape"], ["twice"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("twice", TensorProto.INT64, [2])],
        initializer=[shape],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    ir = burn_onnx.read_model(model)
    assert [n.op_type for n in ir.nodes] == ["Reshape", "Relu"]
    np.testing.assert_array_equal(ir.constants["twice"], [4, 6])
    assert ir.type_of("y").shape == (2, 3)
    y, twice = burn_onnx.load(ir).run(np.arange(6, dtype=np.float32) - 3)
    np.testing.assert_array_equal(y.to_numpy(), np.maximum(np.arange(6) - 3, 0).reshape(2, 3))
    np.testing.assert_array_equal(twice.to_numpy(), [4, 6])


def test_loaded_model_params_are_trainable_and_recordable(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).eval()
    path = _export(net, (torch.randn(1, 4),), tmp_path / "mlp.onnx", False, ["x"])
    model = burn_onnx.load(path)
    assert model.num_params() == 4 * 3 + 3 + 3 * 2 + 2
    record = model.into_record()
    assert set(record["weights"]) == set(model.weights)
    reloaded = burn_onnx.load(path).load_record(record)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(reloaded(x).to_numpy(), model(x).to_numpy())


def test_subgraph_initializers_are_params() -> None:
    """The weights of an ``If``'s branches are trainable ``Param``s of the module (scalars stay
    constants), loaded and recorded with the rest; the branch taken reads them."""
    from onnx import TensorProto, helper, numpy_helper

    w_then = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    w_else = np.array([-1.0, 0.5, 4.0], dtype=np.float32)

    def branch(name: str, op: str, weight: np.ndarray[Any, Any]) -> Any:
        return helper.make_graph(
            [
                helper.make_node(op, ["x", "w"], ["y_" + name]),
                helper.make_node("Mul", ["y_" + name, "k"], ["z"]),
            ],
            name,
            [],
            [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])],
            [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.array(2.0, np.float32), "k")],
        )

    node = helper.make_node(
        "If",
        ["cond"],
        ["out"],
        then_branch=branch("then", "Add", w_then),
        else_branch=branch("else", "Mul", w_else),
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    device = default_device()
    model = burn_onnx.load(proto, device)
    assert sorted(model.weights) == ["else_w", "then_w"]
    x = np.array([1.0, 1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(model(np.array(True), x).to_numpy(), (x + w_then) * 2)
    np.testing.assert_allclose(model(np.array(False), x).to_numpy(), x * w_else * 2)
    record = model.into_record()
    changed = dict(
        record, weights=dict(record["weights"], then_w=Tensor.from_numpy(w_else, device).to_data())
    )
    np.testing.assert_allclose(model.load_record(changed)(np.array(True), x).to_numpy(), (x + w_else) * 2)
