"""safetensors both ways (against the ``safetensors`` package and PyTorch) and the code-generation
command line (its output imports, runs, and passes ruff)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor, default_device
from burn_import.safetensors import (
    SafetensorsError,
    load_safetensors,
    read_safetensors,
    save_safetensors,
    write_safetensors,
)
from burn_nn import BatchNormConfig, LinearConfig, Module

torch = pytest.importorskip("torch")


class _Net(Module):
    def __init__(self, device: Any) -> None:
        self.fc = LinearConfig(4, 3).init(device)
        self.norm = BatchNormConfig(3).init(device)


class _TorchNet(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.norm = torch.nn.BatchNorm1d(3)


def test_written_files_read_back_and_in_the_safetensors_package(tmp_path: Path) -> None:
    st_numpy = pytest.importorskip("safetensors.numpy")
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, -2], dtype=np.int64)}
    path = write_safetensors(tmp_path / "x.safetensors", arrays, {"format": "np"})
    theirs = st_numpy.load_file(str(path))
    ours = read_safetensors(path)
    for key, value in arrays.items():
        np.testing.assert_array_equal(theirs[key], value)
        np.testing.assert_array_equal(ours[key], value)
    assert isinstance(ours["a"].base, np.memmap) or isinstance(ours["a"], np.memmap)
    st_numpy.save_file(arrays, str(tmp_path / "theirs.safetensors"))
    np.testing.assert_array_equal(read_safetensors(tmp_path / "theirs.safetensors")["b"], arrays["b"])


def test_damaged_file_is_refused(tmp_path: Path) -> None:
    path = write_safetensors(tmp_path / "x.safetensors", {"a": np.ones(4, dtype=np.float32)})
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(SafetensorsError, match="offsets"):
        read_safetensors(path)


def test_module_saved_here_loads_in_pytorch_and_back(tmp_path: Path) -> None:
    st_torch = pytest.importorskip("safetensors.torch")
    device = default_device()
    net = _Net(device)
    path = save_safetensors(tmp_path / "net.safetensors", net)
    reference = _TorchNet()
    reference.load_state_dict(st_torch.load_file(str(path)), strict=False)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    with torch.no_grad():
        expected = reference.fc(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(
        net.fc(Tensor.from_numpy(x, device)).to_numpy(), expected, rtol=1e-5, atol=1e-6
    )
    torch.manual_seed(3)
    st_torch.save_file(_TorchNet().state_dict(), str(tmp_path / "torch.safetensors"))
    result = load_safetensors(tmp_path / "torch.safetensors", _Net(device))
    assert result.missing == []
    assert result.unused == ["norm.num_batches_tracked"]


def test_command_line_generates_ruff_clean_importable_source(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
        initializer=[weight],
    )
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "burn_import.onnx", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "mlp.py" in done.stdout
    assert (out / "mlp.mpk").exists()
    ruff = shutil.which("ruff")
    if ruff is not None:
        subprocess.run([ruff, "check", "--no-cache", "--isolated", str(out / "mlp.py")], check=True)
        subprocess.run(
            [ruff, "format", "--check", "--isolated", "--line-length", "110", str(out / "mlp.py")], check=True
        )
    import importlib.util

    spec = importlib.util.spec_from_file_location("mlp_generated", out / "mlp.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    device = default_device()
    model = module.Model.load(out / "mlp.mpk", device)
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    expected = np.maximum(x @ numpy_helper.to_array(weight), 0)
    np.testing.assert_allclose(model(Tensor.from_numpy(x, device)).to_numpy(), expected, rtol=1e-5, atol=1e-6)
