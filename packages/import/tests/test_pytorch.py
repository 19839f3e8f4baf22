"""PyTorch ``.pt`` weights: the restricted unpickler, both file formats, remapping, partial loading and
the layout adapters, checked against PyTorch itself."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Tensor, default_device
from burn_import import LoadError
from burn_import.pytorch import PyTorchReadError, load_pytorch, read_pytorch
from burn_nn import (
    BatchNormConfig,
    Conv2dConfig,
    GruConfig,
    LinearConfig,
    LstmConfig,
    Module,
    MultiHeadAttentionConfig,
)

torch = pytest.importorskip("torch")


class _System:
    """Pickles as a call of ``os.system`` (what a malicious file holds)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return (os.system, (self.command,))


def _malicious_zip(path: Path, marker: Path) -> None:
    payload = pickle.dumps({"weight": _System(f"touch {marker}")}, protocol=2)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", payload)
        archive.writestr("archive/version", "3\n")


def test_a_pickle_calling_os_system_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    _malicious_zip(path, marker)
    with pytest.raises(PyTorchReadError, match=r"refused to load global '(posix|os|nt)\.system'"):
        read_pytorch(path)
    assert not marker.exists()


def test_a_legacy_pickle_calling_os_system_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil_legacy.pt"
    path.write_bytes(pickle.dumps(_System(f"touch {marker}"), protocol=2))
    with pytest.raises(PyTorchReadError, match="system"):
        read_pytorch(path)
    assert not marker.exists()


def test_not_a_pytorch_file(tmp_path: Path) -> None:
    path = tmp_path / "plain.pt"
    path.write_bytes(b"hello")
    with pytest.raises(PyTorchReadError):
        read_pytorch(path)


@pytest.mark.parametrize("legacy", [False, True])
def test_both_file_formats_read_every_dtype_and_views(tmp_path: Path, legacy: bool) -> None:
    state = {
        "f32": torch.randn(3, 4),
        "f64": torch.randn(2, dtype=torch.float64),
        "f16": torch.randn(5, dtype=torch.float16),
        "bf16": torch.randn(2, 2, dtype=torch.bfloat16),
        "i64": torch.arange(6),
        "i8": torch.tensor([-1, 2], dtype=torch.int8),
        "u8": torch.tensor([3, 250], dtype=torch.uint8),
        "bool": torch.tensor([True, False]),
        "view": torch.arange(12.0).reshape(3, 4).t(),  # a non-contiguous view of a shared storage
        "scalar": torch.tensor(7),
        "nested": {"inner": torch.ones(2)},
    }
    path = tmp_path / "state.pt"
    torch.save(state, path, _use_new_zipfile_serialization=not legacy)
    loaded = read_pytorch(path)
    for key, value in state.items():
        if key == "nested":
            np.testing.assert_array_equal(loaded[key]["inner"].numpy(), value["inner"].numpy())
            continue
        array = loaded[key].numpy()
        expected = value.float().numpy() if key == "bf16" else value.numpy()
        assert array.shape == tuple(value.shape)
        np.testing.assert_array_equal(array.astype(expected.dtype), expected)


class _Net(Module):
    def __init__(self, device: Any) -> None:
        self.fc = LinearConfig(4, 3).init(device)
        self.norm = BatchNormConfig(3).init(device)
        self.lstm = LstmConfig(3, 5, True).init(device)
        self.gru = GruConfig(3, 2, True).init(device)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y = self.norm(self.fc(x).swap_dims(1, 2)).swap_dims(1, 2)
        return self.lstm(y)[0], self.gru(y)


class _TorchNet(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.norm = torch.nn.BatchNorm1d(3)
        self.lstm = torch.nn.LSTM(3, 5, batch_first=True)
        self.gru = torch.nn.GRU(3, 2, batch_first=True)

    def forward(self, x: Any) -> tuple[Any, Any]:
        y = self.norm(self.fc(x).transpose(1, 2)).transpose(1, 2)
        return self.lstm(y)[0], self.gru(y)[0]


def _trained_torch_net() -> Any:
    torch.manual_seed(0)
    net = _TorchNet()
    with torch.no_grad():
        net.norm.running_mean.copy_(torch.randn(3))
        net.norm.running_var.copy_(torch.rand(3) + 0.5)
    return net.eval()


def test_adapters_reproduce_pytorch_outputs(tmp_path: Path, eval_device: Device) -> None:
    net = _trained_torch_net()
    path = tmp_path / "net.pt"
    torch.save({"state_dict": net.state_dict(), "epoch": 3}, path)
    device = eval_device
    result = load_pytorch(path, _Net(device), top_level_key="state_dict")
    assert result.missing == []
    assert result.unused == []
    assert result.ignored == ["norm.num_batches_tracked"]
    x = np.random.default_rng(0).standard_normal((2, 6, 4)).astype(np.float32)
    ours = result.module(Tensor.from_numpy(x, device))
    with torch.no_grad():
        theirs = net(torch.from_numpy(x))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.to_numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_key_remap_partial_loading_and_mismatches(tmp_path: Path) -> None:
    torch.manual_seed(1)
    state = {
        "encoder.dense.weight": torch.randn(3, 4),
        "encoder.dense.bias": torch.randn(3),
        "extra": torch.ones(1),
    }
    path = tmp_path / "partial.pt"
    torch.save(state, path)
    device = default_device()
    net = _Net(device)
    result = load_pytorch(path, net, key_remap=[(r"^encoder\.dense", "fc")])
    np.testing.assert_allclose(
        result.module.fc.weight.val().to_numpy(), state["encoder.dense.weight"].numpy().T
    )
    assert "fc.weight" in result.loaded
    assert "extra" in result.unused
    assert "norm.gamma" in result.missing
    with pytest.raises(LoadError, match="missing"):
        load_pytorch(path, net, key_remap=[(r"^encoder\.dense", "fc")], strict=True)
    torch.save({"fc.weight": torch.randn(5, 4)}, path)
    with pytest.raises(LoadError, match=r"fc.weight: weights of shape \[4, 5\], module expects \[4, 3\]"):
        load_pytorch(path, net)


def test_fused_attention_in_proj_is_split(tmp_path: Path) -> None:
    torch.manual_seed(2)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    class Holder(Module):
        def __init__(self, device: Any) -> None:
            self.attn = MultiHeadAttentionConfig(8, 2, dropout=0.0).init(device)

    path = tmp_path / "mha.pt"
    torch.save({"attn." + k: v for k, v in mha.state_dict().items()}, path)
    result = load_pytorch(path, Holder(default_device()))
    assert result.missing == []
    assert result.unused == []
    _q, k, _v = mha.in_proj_weight.detach().numpy().reshape(3, 8, 8)
    np.testing.assert_allclose(result.module.attn.key.weight.val().to_numpy(), k.T)
    np.testing.assert_allclose(
        result.module.attn.output.weight.val().to_numpy(), mha.out_proj.weight.detach().numpy().T
    )


def test_state_is_memory_mapped(tmp_path: Path) -> None:
    path = tmp_path / "big.pt"
    torch.save({"w": torch.ones(256, 256)}, path)
    array = read_pytorch(path)["w"].numpy()
    assert isinstance(array.base, np.memmap) or isinstance(array, np.memmap)
    assert not array.flags.writeable


def test_unused_buffer_bytes_io() -> None:
    buffer = io.BytesIO()
    torch.save({"a": torch.zeros(1)}, buffer)
    assert buffer.getvalue()[:2] == b"PK"


def test_recorders_and_load_args(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from burn_import import LoadArgs, PyTorchFileRecorder, SafetensorsFileRecorder
    from burn_import.safetensors import save_safetensors
    from burn_nn import Conv2dConfig
    from burn_record import FullPrecisionSettings

    class Convs(Module):
        def __init__(self, device: Any) -> None:
            self.convs = [
                Conv2dConfig([2, 3], [2, 2]).init(device),
                Conv2dConfig([3, 1], [1, 1]).init(device),
            ]

    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 2), torch.nn.Conv2d(3, 1, 1))
    path = tmp_path / "seq.pt"
    torch.save({"model": {f"body.{k}": v.double() for k, v in theirs.state_dict().items()}}, path)
    device = default_device()
    args = LoadArgs(path).with_top_level_key("model").with_key_remap(r"^body\.(\d+)", "convs.${1}")
    record = PyTorchFileRecorder(FullPrecisionSettings()).load(args.with_debug_print(), device)
    assert "convs.0.weight: float64 [3, 2, 2, 2]" in capsys.readouterr().out
    assert isinstance(record["convs"], list)
    assert str(record["convs"][1]["weight"].dtype) in ("f32", "DType.F32")
    model = Convs(device).load_record(record)
    np.testing.assert_allclose(
        model.convs[0].weight.val().to_numpy(), theirs[0].weight.detach().numpy(), rtol=1e-6
    )
    # Module.load_file goes through the recorder too (a path: no remapping)
    torch.save({f"convs.{k}": v for k, v in theirs.state_dict().items()}, path)
    again = Convs(device).load_file(path, PyTorchFileRecorder())
    np.testing.assert_array_equal(again.convs[1].bias.val().to_numpy(), theirs[1].bias.detach().numpy())
    # safetensors, with a module: PyTorch's Linear layout adapted, foreign entries left out
    saved = save_safetensors(tmp_path / "net.safetensors", _Net(device))
    net = _Net(device)
    record = SafetensorsFileRecorder().load(saved, device, module=net)
    assert sorted(record) == ["fc", "gru", "lstm", "norm"]
    net.load_record(record)
    # a file in our own layout: no adapter
    source = _Net(device)
    ours = save_safetensors(tmp_path / "ours.safetensors", source, pytorch_layout=False)
    args = LoadArgs(ours).with_adapter_type("none")
    loaded = _Net(device).load_record(SafetensorsFileRecorder().load(args, device, module=net))
    np.testing.assert_array_equal(loaded.fc.weight.val().to_numpy(), source.fc.weight.val().to_numpy())
    with pytest.raises(NotImplementedError):
        PyTorchFileRecorder().save({}, tmp_path / "x")


class _ConvBn(Module):
    def __init__(self, device: Any) -> None:
        self.conv = Conv2dConfig([2, 3], [3, 3]).init(device)
        self.bn = BatchNormConfig(3).init(device)
        self.fc = LinearConfig(3, 2).init(device)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.bn(self.conv(x)).mean_dim(3).mean_dim(2).flatten(1, 3))


class _TorchConvBn(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)
        self.bn = torch.nn.BatchNorm2d(3)
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x: Any) -> Any:
        return self.fc(self.bn(self.conv(x)).mean(dim=(2, 3)))


@pytest.mark.parametrize("saved_by", ["torch.save", "safetensors"])
def test_strict_loading_of_a_model_with_batch_norm(
    tmp_path: Path, eval_device: Device, saved_by: str
) -> None:
    from burn_import.safetensors import load_safetensors

    torch.manual_seed(4)
    theirs = _TorchConvBn()
    theirs(torch.randn(8, 2, 6, 6))  # training mode: running statistics and num_batches_tracked move
    theirs.eval()
    state = theirs.state_dict()
    assert int(state["bn.num_batches_tracked"]) == 1
    if saved_by == "torch.save":
        path = tmp_path / "convbn.pt"
        torch.save(state, path)
        load: Any = load_pytorch
    else:
        st_torch = pytest.importorskip("safetensors.torch")
        path = tmp_path / "convbn.safetensors"
        st_torch.save_file(state, str(path))
        load = load_safetensors
    result = load(path, _ConvBn(eval_device), strict=True)
    assert result.unused == []
    assert result.missing == []
    assert result.ignored == ["bn.num_batches_tracked"]
    x = np.random.default_rng(5).standard_normal((3, 2, 6, 6)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(
        result.module(Tensor.from_numpy(x, eval_device)).to_numpy(), expected, rtol=1e-4, atol=1e-5
    )
    # any other unused entry still fails strict loading, a counter outside a BatchNorm included
    for extra in ("extra", "fc.num_batches_tracked"):
        state_with_extra = {**state, extra: torch.zeros((), dtype=torch.int64)}
        if saved_by == "torch.save":
            torch.save(state_with_extra, path)
        else:
            st_torch.save_file(state_with_extra, str(path))
        with pytest.raises(LoadError, match=f"unused {extra}"):
            load(path, _ConvBn(eval_device), strict=True)
        assert load(path, _ConvBn(eval_device)).unused == [extra]


def test_a_file_without_a_state_dict_where_asked_is_a_load_error(tmp_path: Path) -> None:
    path = tmp_path / "list.pt"
    torch.save([torch.ones(2)], path)
    module = _Net(default_device())
    with pytest.raises(LoadError, match="expected a dict of tensors, got a list"):
        load_pytorch(path, module)
    torch.save({"model": {"fc.weight": torch.ones(3, 4)}, "epoch": 1}, path)
    with pytest.raises(
        LoadError, match=r"top_level_key 'state_dict': no 'state_dict' in the keys \['model', 'epoch'\]"
    ):
        load_pytorch(path, module, top_level_key="state_dict")
    with pytest.raises(LoadError, match=r"top_level_key 'epoch\.x': no 'x' in int \(not a dict\)"):
        load_pytorch(path, module, top_level_key="epoch.x")


@pytest.mark.parametrize("legacy", [False, True])
def test_many_storages_share_one_mapping_of_the_file(tmp_path: Path, legacy: bool) -> None:
    resource = pytest.importorskip("resource")
    state = {f"layer{i}.weight": torch.full((2,), float(i)) for i in range(300)}
    path = tmp_path / "many.pt"
    torch.save(state, path, _use_new_zipfile_serialization=not legacy)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(200, hard), hard))  # fewer descriptors than storages
    try:
        loaded = read_pytorch(path)
        arrays = {key: value.numpy() for key, value in loaded.items()}
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    for key, value in state.items():
        np.testing.assert_array_equal(arrays[key], value.numpy())
