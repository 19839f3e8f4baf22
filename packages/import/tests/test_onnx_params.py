"""Which initializers become trainable ``Param``s: those some node reads as a weight. Scalars of the
arithmetic (an ``Add``'s or ``Mul``'s one-element operand, ``Pow``'s exponent, ``Clip``'s bounds), shape
inputs and batch norm's running statistics stay constants, so an imported model counts the parameters
of the PyTorch model it came from."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
burn_onnx = pytest.importorskip("burn_import.onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


class _Net(torch.nn.Module):  # type: ignore[misc]
    """Linear layers, layer and batch norm, PReLU, and scalar arithmetic the exporters turn into
    initializers or constants (``* 0.5``, ``+ 1.0``, ``** 2``, a clamp)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.act = torch.nn.PReLU()
        self.bn = torch.nn.BatchNorm1d(16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: Any) -> Any:
        h = self.norm(self.fc1(x)) * 0.5 + 1.0
        h = torch.clamp(self.act(h) ** 2, -1.0, 1.0)
        return self.fc2(self.bn(h))


# the dynamo exporter (5 s more) gives the same count: its scalars become initializers (``Mul``'s 0.5,
# ``Pow``'s 2, the clamp's bounds), which ``test_params_are_decided_by_use`` covers
@pytest.mark.parametrize("dynamo", [False], ids=["torchscript"])
def test_num_params_equals_pytorch(tmp_path: Path, eval_device: Any, dynamo: bool) -> None:
    torch.manual_seed(0)
    net = _Net().eval()
    with torch.no_grad():  # distinct values everywhere, so that no exporter merges equal initializers
        for tensor in [*net.parameters(), net.bn.running_mean, net.bn.running_var]:
            tensor.copy_(torch.rand_like(tensor) + 0.5)
    expected_count = sum(p.numel() for p in net.parameters())
    x = torch.randn(3, 8)
    path = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            pytest.importorskip("onnxscript")
            torch.onnx.export(net, (x,), str(path), dynamo=True, input_names=["x"])
        else:
            torch.onnx.export(net, (x,), str(path), dynamo=False, input_names=["x"], opset_version=17)
    expected = net(x).detach().numpy()

    model = burn_onnx.load(path, eval_device)
    assert model.num_params() == expected_count
    np.testing.assert_allclose(model(x.numpy()).to_numpy(), expected, rtol=1e-4, atol=1e-5)

    source, weights = burn_onnx.generate(path, tmp_path / "gen", name="net_gen")
    spec = importlib.util.spec_from_file_location("net_gen", source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["net_gen"] = module
    try:
        spec.loader.exec_module(module)
        generated = module.Model.load(weights, eval_device)
    finally:
        sys.modules.pop("net_gen", None)
    assert generated.num_params() == expected_count
    out = generated(Tensor.from_numpy(x.numpy(), eval_device)).to_numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_params_are_decided_by_use() -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "half": np.array(0.5, np.float32),  # Mul's scalar operand: constant
        "two": np.array([2.0], np.float32),  # Pow's exponent: constant
        "lo": np.array(-1.0, np.float32),  # Clip's bound (non-differentiable in the schema): constant
        "shared": np.array(3.0, np.float32),  # a scalar operand, and Exp's input: a weight
        "w": rng.standard_normal((4, 4)).astype(np.float32),  # MatMul: a weight
        "one": np.array([1.5], np.float32),  # PRelu's slope of one element: a weight
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["a"]),
        helper.make_node("Mul", ["a", "half"], ["b"]),
        helper.make_node("Pow", ["b", "two"], ["c"]),
        helper.make_node("Clip", ["c", "lo"], ["d"]),
        helper.make_node("Add", ["d", "shared"], ["e"]),
        helper.make_node("Exp", ["shared"], ["s"]),
        helper.make_node("Mul", ["e", "s"], ["f"]),
        helper.make_node("PRelu", ["f", "one"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[numpy_helper.from_array(a, n) for n, a in arrays.items()],
    )
    model = burn_onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert sorted(model.graph.params) == ["one", "shared", "w"]
    assert model.num_params() == 16 + 1 + 1
    x = rng.standard_normal((2, 4)).astype(np.float32)
    e = np.maximum((x.astype(np.float64) @ arrays["w"] * 0.5) ** 2, -1.0) + 3.0
    f = e * np.exp(3.0)
    np.testing.assert_allclose(model(x).to_numpy(), np.where(f < 0, 1.5 * f, f), rtol=1e-5)
