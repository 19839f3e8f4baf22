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

from burn_backend import Device, Tensor, default_device
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
    in_memory = read_safetensors(path, mmap=False)  # each array its own, writable
    for key, value in arrays.items():
        np.testing.assert_array_equal(in_memory[key], value)
        assert in_memory[key].flags.writeable
        assert in_memory[key].flags.owndata
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
    assert result.unused == []
    assert result.ignored == ["norm.num_batches_tracked"]


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


class _Recurrent(Module):
    """PyTorch's ``LSTM(num_layers=2, bidirectional=True)``, ``GRU(num_layers=2)``, ``RNN`` and
    ``MultiheadAttention`` as ours: a list of one-layer modules per multi-layer one."""

    def __init__(self, device: Any) -> None:
        from burn_nn import BiLstmConfig, GruConfig, MultiHeadAttentionConfig, RnnConfig

        self.lstm = [BiLstmConfig(3, 4, True).init(device), BiLstmConfig(8, 4, True).init(device)]
        self.gru = [GruConfig(3, 5, True).init(device), GruConfig(5, 5, True).init(device)]
        self.rnn = RnnConfig(3, 2, True).init(device)
        self.attention = MultiHeadAttentionConfig(6, 2).init(device)


class _TorchRecurrent(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = torch.nn.GRU(3, 5, num_layers=2, batch_first=True)
        self.rnn = torch.nn.RNN(3, 2, batch_first=True)
        self.attention = torch.nn.MultiheadAttention(6, 2, batch_first=True)


def _run_recurrent(
    ours: _Recurrent, x: np.ndarray[Any, Any], q: np.ndarray[Any, Any], device: Device
) -> list[Any]:
    from burn_nn import MhaInput

    h = Tensor.from_numpy(x, device)
    for layer in ours.lstm:
        h = layer(h)[0]
    g = Tensor.from_numpy(x, device)
    for layer in ours.gru:
        g = layer(g)
    r = ours.rnn(Tensor.from_numpy(x, device))[0]
    t = Tensor.from_numpy(q, device)
    a = ours.attention(MhaInput.self_attn(t)).context
    return [h.to_numpy(), g.to_numpy(), r.to_numpy(), a.to_numpy()]


def _run_torch_recurrent(net: Any, x: np.ndarray[Any, Any], q: np.ndarray[Any, Any]) -> list[Any]:
    with torch.no_grad():
        tx, tq = torch.from_numpy(x), torch.from_numpy(q)
        return [
            net.lstm(tx)[0].numpy(),
            net.gru(tx)[0].numpy(),
            net.rnn(tx)[0].numpy(),
            net.attention(tq, tq, tq, need_weights=False)[0].numpy(),
        ]


def test_multi_layer_rnns_and_attention_both_ways(tmp_path: Path, eval_device: Device) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    q = rng.standard_normal((2, 4, 6)).astype(np.float32)
    device = eval_device
    torch.manual_seed(0)
    net = _TorchRecurrent().eval()
    path = tmp_path / "rnn.pt"
    torch.save(net.state_dict(), path)
    from burn_import.pytorch import load_pytorch

    result = load_pytorch(path, _Recurrent(device), strict=True)
    assert result.unused == []
    assert result.missing == []
    for ours, theirs in zip(_run_recurrent(result.module, x, q, device), _run_torch_recurrent(net, x, q)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    # back: a module saved here loads into the PyTorch module with load_state_dict (strict)
    mine = _Recurrent(device)
    saved = save_safetensors(tmp_path / "rnn.safetensors", mine)
    from safetensors.torch import load_file

    fresh = _TorchRecurrent().eval()
    fresh.load_state_dict(load_file(str(saved)), strict=True)
    for ours, theirs in zip(_run_recurrent(mine, x, q, device), _run_torch_recurrent(fresh, x, q)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    # a third layer PyTorch has and we do not is reported unused, not dropped silently
    torch.save(torch.nn.GRU(3, 5, num_layers=3).state_dict(), path)
    partial = load_pytorch(path, _Recurrent(device), key_remap=[(r"^", "gru.")])
    assert "gru.weight_ih_l2" in partial.unused
    assert "gru.weight_ih_l1" not in partial.unused
