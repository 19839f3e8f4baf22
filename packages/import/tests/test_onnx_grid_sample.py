"""``GridSample`` in bicubic mode against ``torch.nn.functional.grid_sample`` and onnxruntime, on random
inputs and grids reaching past the edges, for every padding mode and both ``align_corners``; and through
generated code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
burn_onnx = pytest.importorskip("burn_import.onnx")

from onnx import TensorProto, helper  # noqa: E402


def _model(mode: str, padding: str, align: int, opset: int) -> Any:
    node = helper.make_node(
        "GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding, align_corners=align
    )
    graph = helper.make_graph(
        [node],
        "grid_sample",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 7]),
         helper.make_tensor_value_info("grid", TensorProto.FLOAT, [2, 4, 6, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 6])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize(("mode", "opset"), [("bicubic", 16), ("cubic", 20)])
def test_bicubic_matches_torch_and_onnxruntime(
    eval_device: Any, padding: str, align: int, mode: str, opset: int
) -> None:
    rng = np.random.default_rng(align * 10 + len(padding) + opset)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, (2, 4, 6, 2)).astype(np.float32)  # some points well outside
    grid[0, 0, :3] = [[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0]]  # the corners and the centre exactly
    expected = torch.nn.functional.grid_sample(
        torch.from_numpy(x).double(),
        torch.from_numpy(grid).double(),
        mode="bicubic",
        padding_mode=padding,
        align_corners=bool(align),
    ).numpy()
    model = _model(mode, padding, align, opset)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (reference,) = session.run(None, {"x": x, "grid": grid})
    np.testing.assert_allclose(reference, expected, rtol=1e-4, atol=1e-5)  # the two references agree
    got = burn_onnx.load(model, eval_device)(x, grid).to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    op = burn_onnx.run_op(
        "GridSample",
        Tensor.from_numpy(x, eval_device),
        Tensor.from_numpy(grid, eval_device),
        opset=opset,
        mode=mode,
        padding_mode=padding,
        align_corners=align,
    )  # what generated code calls
    np.testing.assert_allclose(op.to_numpy(), expected, rtol=1e-4, atol=1e-5)


def test_unknown_padding_mode_is_refused_when_read() -> None:
    with pytest.raises(burn_onnx.UnsupportedModelError, match="padding_mode 'mirror' is not supported"):
        burn_onnx.read_model(_model("bicubic", "mirror", 0, 16))
