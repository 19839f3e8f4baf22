"""The README (the docs page of burn-import, with the Burn Book's "Import ONNX Model" and "PyTorch
Model" chapters in Python) runs as written: its python blocks execute in order, in one namespace, in a
temporary folder holding the ONNX model the ONNX chapter starts from."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")


def _mnist_onnx(path: Path) -> None:
    """A small MNIST classifier: conv, relu, max pool, flatten, gemm, softmax."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    fc_weight = rng.standard_normal((10, 4 * 13 * 13)).astype(np.float32) * 0.05
    initializers = [
        numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32) * 0.3, "conv.weight"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32) * 0.1, "conv.bias"),
        numpy_helper.from_array(fc_weight, "fc.weight"),
        numpy_helper.from_array(rng.standard_normal(10).astype(np.float32) * 0.1, "fc.bias"),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["c"], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["output"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "mnist",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def test_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) >= 10
    _mnist_onnx(tmp_path / "src" / "model" / "mnist.onnx")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "model" or n.startswith("model.")]:
        monkeypatch.delitem(sys.modules, name)  # another test's ``model`` (the guide's): put back after
    namespace: dict[str, object] = {"__name__": "readme"}
    try:
        for block in blocks:
            exec(compile(block, "README.md", "exec"), namespace)  # our own documentation
    finally:
        for name in [n for n in sys.modules if n == "model" or n.startswith("model.")]:
            del sys.modules[name]
    assert (tmp_path / "model" / "mnist.py").exists()
    assert (tmp_path / "MY_FILE_OUTPUT_PATH.mpk").exists()
    assert namespace["result"].missing == []  # type: ignore[attr-defined]
