"""Convolution layers and padding configs against torch.nn.Conv*/ConvTranspose*: forward and gradients of
input, weight and bias on the same weights; PyTorch's default initialization; errors; Config JSON."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import (
    ConfigError,
    Conv1dConfig,
    Conv2dConfig,
    Conv3dConfig,
    ConvTranspose1dConfig,
    ConvTranspose2dConfig,
    ConvTranspose3dConfig,
    Initializer,
    PaddingConfig1d,
    PaddingConfig2d,
    PaddingConfig3d,
)


def _torch_conv(ref, config):
    """The torch layer with ``config``'s settings (its weights are overwritten by the caller)."""
    nn = ref.torch.nn
    cls = {
        Conv1dConfig: nn.Conv1d,
        Conv2dConfig: nn.Conv2d,
        Conv3dConfig: nn.Conv3d,
        ConvTranspose1dConfig: nn.ConvTranspose1d,
        ConvTranspose2dConfig: nn.ConvTranspose2d,
        ConvTranspose3dConfig: nn.ConvTranspose3d,
    }[type(config)]
    channels = (
        (config.channels_in, config.channels_out) if isinstance(config, Conv1dConfig) else config.channels
    )
    if hasattr(config, "padding_out"):
        padding = {"padding": config.padding, "output_padding": config.padding_out}
    else:
        padding = {"padding": _torch_padding(config.padding)}
    return cls(
        *channels,
        config.kernel_size,
        stride=config.stride,
        dilation=config.dilation,
        groups=config.groups,
        bias=config.bias,
        **padding,
    )


def _torch_padding(padding):
    if isinstance(padding, (PaddingConfig1d.Same, PaddingConfig2d.Same, PaddingConfig3d.Same)):
        return "same"
    if isinstance(padding, (PaddingConfig1d.Valid, PaddingConfig2d.Valid, PaddingConfig3d.Valid)):
        return 0
    return tuple(vars(padding).values())


CASES = [
    (Conv1dConfig(4, 6, 3, stride=2, groups=2, padding=PaddingConfig1d.Explicit(1)), [2, 4, 9]),
    (Conv1dConfig(3, 2, 3, dilation=2, padding=PaddingConfig1d.Same()), [2, 3, 8]),
    (Conv1dConfig(3, 2, 4, bias=False), [1, 3, 7]),
    (
        Conv2dConfig(
            (4, 6), (3, 2), stride=(2, 1), dilation=(1, 2), groups=2, padding=PaddingConfig2d.Explicit(1, 2)
        ),
        [2, 4, 7, 6],
    ),
    (Conv2dConfig((3, 4), (3, 5), padding=PaddingConfig2d.Same()), [1, 3, 5, 6]),
    (Conv2dConfig((2, 3), (2, 2), bias=False), [2, 2, 4, 5]),
    (
        Conv3dConfig((2, 4), (3, 3, 2), stride=(1, 2, 1), padding=PaddingConfig3d.Explicit(1, 0, 1)),
        [1, 2, 4, 5, 3],
    ),
    (Conv3dConfig((2, 2), (3, 1, 3), padding=PaddingConfig3d.Same()), [1, 2, 3, 3, 4]),
    (ConvTranspose1dConfig((4, 6), 3, stride=2, padding=1, padding_out=1, groups=2), [2, 4, 5]),
    (
        ConvTranspose2dConfig((4, 6), (3, 2), stride=(2, 3), padding=(1, 0), padding_out=(1, 2), groups=2),
        [2, 4, 3, 4],
    ),
    (ConvTranspose2dConfig((2, 3), (2, 3), dilation=(2, 1), padding_out=(1, 0), bias=False), [1, 2, 3, 3]),
    (
        ConvTranspose3dConfig((2, 3), (2, 3, 2), stride=(2, 1, 2), padding=(0, 1, 0), padding_out=(1, 0, 0)),
        [1, 2, 2, 3, 2],
    ),
]


@pytest.mark.parametrize(("config", "input_shape"), CASES, ids=lambda v: type(v).__name__)
def test_conv_matches_torch(config, input_shape, device, ref, rng) -> None:
    layer = config.init(device)
    theirs = _torch_conv(ref, config)
    assert list(layer.weight.shape) == list(theirs.weight.shape)
    with ref.torch.no_grad():
        theirs.weight.copy_(ref.tensor(layer.weight.val()))
        if config.bias:
            theirs.bias.copy_(ref.tensor(layer.bias.val()))
    x, tx = ref.inputs(rng.standard_normal(input_shape).astype(np.float32), device)
    out, expected = layer(x), theirs(tx)
    assert out.dims() == list(expected.shape)
    ref.close(out, expected)
    grads = ref.backward(out, expected, rng)
    ref.close(x.grad(grads), tx.grad)
    ref.close(layer.weight.val().grad(grads), theirs.weight.grad)
    if config.bias:
        ref.close(layer.bias.val().grad(grads), theirs.bias.grad)
    else:
        assert layer.bias is None


def test_conv2d_in_float64(ref, rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    config = Conv2dConfig((2, 3), (3, 3), stride=(2, 2), padding=PaddingConfig2d.Explicit(1, 1))
    layer = config.init(device)
    assert layer.weight.dtype == DType.F64
    theirs = _torch_conv(ref, config).double()
    with ref.torch.no_grad():
        theirs.weight.copy_(ref.tensor(layer.weight.val()))
        theirs.bias.copy_(ref.tensor(layer.bias.val()))
    x_np = rng.standard_normal([2, 2, 5, 5])
    x = Tensor.from_data(x_np, device).require_grad()
    tx = ref.tensor(x_np, requires_grad=True)
    out, expected = layer(x), theirs(tx)
    ref.close(out, expected)
    grads = out.sum().backward()
    expected.sum().backward()
    ref.close(x.grad(grads), tx.grad)
    ref.close(layer.weight.val().grad(grads), theirs.weight.grad)


@pytest.mark.parametrize(
    "config",
    [
        Conv1dConfig(6, 3, 5, groups=3),
        Conv2dConfig((8, 12), (3, 2), groups=4),
        Conv3dConfig((2, 4), (2, 3, 2)),
        ConvTranspose1dConfig((4, 6), 3, groups=2),
        ConvTranspose2dConfig((8, 12), (3, 3), groups=2),
        ConvTranspose3dConfig((2, 4), (2, 2, 3)),
    ],
    ids=lambda config: type(config).__name__,
)
def test_default_initialization_follows_torch_rule(config, device, ref) -> None:
    layer = config.init(device)
    theirs = _torch_conv(ref, config)
    fan_in, _ = ref.torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)
    bound = 1 / math.sqrt(fan_in)
    for param in (layer.weight, layer.bias):
        values = param.val().to_data().to_numpy()
        assert np.abs(values).max() <= bound
    weight = layer.weight.val().to_data().to_numpy()
    # uniform on ±bound: its extremes come close to the bound and its std is bound / sqrt(3)
    assert np.abs(weight).max() > 0.8 * bound
    assert weight.std() == pytest.approx(bound / math.sqrt(3), rel=0.25)


def test_initializer_gets_torch_fans(device) -> None:
    # fan_out only: KaimingUniform draws within gain * sqrt(3 / fan_out), fan_out = out * prod(kernel)
    init = Initializer.KaimingUniform(gain=1.0, fan_out_only=True)
    weight = Conv2dConfig((4, 50), (2, 2), groups=2, initializer=init).init(device).weight
    values = weight.val().to_data().to_numpy()
    assert np.abs(values).max() <= math.sqrt(3 / (50 * 4))
    assert np.abs(values).max() > 0.8 * math.sqrt(3 / (50 * 4))
    zeros = Conv1dConfig(2, 3, 3, initializer=Initializer.Zeros()).init(device)
    assert not zeros.weight.val().to_data().to_numpy().any()
    assert not zeros.bias.val().to_data().to_numpy().any()


def test_same_padding_keeps_the_size(device) -> None:
    conv = Conv2dConfig((1, 2), (5, 3), dilation=(1, 2), padding=PaddingConfig2d.Same()).init(device)
    assert conv(Tensor.ones([1, 1, 7, 9], device)).dims() == [1, 2, 7, 9]
    # an even kernel dilated by 2 still pads symmetrically: (2 * (2 - 1)) / 2 on each side
    conv1 = Conv1dConfig(1, 1, 2, dilation=2, padding=PaddingConfig1d.Same()).init(device)
    assert conv1(Tensor.ones([1, 1, 6], device)).dims() == [1, 1, 6]


def test_padding_calculation() -> None:
    assert PaddingConfig2d.Valid().calculate_padding((3, 3), (2, 2), (1, 1)) == (0, 0)
    assert PaddingConfig2d.Same().calculate_padding((3, 5), (1, 1), (2, 1)) == (2, 2)
    assert PaddingConfig3d.Explicit(1, 2, 3).calculate_padding((3, 3, 3), (1, 1, 1), (1, 1, 1)) == (1, 2, 3)
    assert PaddingConfig1d.Explicit(4).calculate_padding((3,), (2,), (1,)) == (4,)
    with pytest.raises(ValueError, match=r"Conv2d: Same padding keeps the input size only with stride 1"):
        PaddingConfig2d.Same().calculate_padding((3, 3), (1, 2), (1, 1), layer="Conv2d")
    with pytest.raises(ValueError, match=r"PaddingConfig2d.Same pads 2 spatial dim\(s\)"):
        PaddingConfig2d.Same().calculate_padding((3,), (1,), (1,))
    with pytest.raises(ValueError, match=r"PaddingConfig2d.Explicit: width must be an int >= 0"):
        PaddingConfig2d.Explicit(1, -1)


def test_padding_configs_are_values() -> None:
    assert PaddingConfig2d.Same() == PaddingConfig2d.Same()
    assert PaddingConfig2d.Same() != PaddingConfig1d.Same()
    assert PaddingConfig2d.Explicit(1, 2) != PaddingConfig2d.Explicit(2, 1)
    assert isinstance(PaddingConfig3d.Valid(), PaddingConfig3d)
    assert repr(PaddingConfig2d.Explicit(1, 2)) == "PaddingConfig2d.Explicit(height=1, width=2)"
    for padding in (PaddingConfig1d.Explicit(3), PaddingConfig3d.Same()):
        assert pickle.loads(pickle.dumps(padding)) == padding


def test_conv2d_config_json_round_trip() -> None:
    config = Conv2dConfig(
        [3, 8],
        [3, 5],
        stride=(2, 1),
        padding=PaddingConfig2d.Explicit(1, 2),
        initializer=Initializer.XavierNormal(gain=2.0),
    )
    assert config.channels == (3, 8)
    text = config.to_json()
    assert '"Explicit": {\n      "height": 1,\n      "width": 2\n    }' in text
    loaded = Conv2dConfig.from_json(text)
    assert loaded == config
    assert loaded.padding == PaddingConfig2d.Explicit(1, 2)
    assert loaded.with_padding(PaddingConfig2d.Same()).padding == PaddingConfig2d.Same()


@pytest.mark.parametrize(
    "config",
    [
        Conv1dConfig(2, 4, 3, padding=PaddingConfig1d.Same()),
        Conv3dConfig((1, 2), (3, 3, 3), padding=PaddingConfig3d.Explicit(0, 1, 2)),
        ConvTranspose2dConfig((2, 4), (3, 3), stride=(2, 2), padding_out=(1, 1)),
    ],
    ids=lambda config: type(config).__name__,
)
def test_conv_configs_json_round_trip(config, tmp_path) -> None:
    config.save(tmp_path / "conv.json")
    assert type(config).load(tmp_path / "conv.json") == config


def test_padding_json_errors() -> None:
    with pytest.raises(
        ConfigError, match=r"'Full' is not a PaddingConfig2d; one of \['Explicit', 'Same', 'Valid'\]"
    ):
        Conv2dConfig.from_dict({"channels": [1, 1], "kernel_size": [1, 1], "padding": {"Full": {}}})
    with pytest.raises(ConfigError, match=r"required field 'width' of Explicit is missing"):
        Conv2dConfig.from_dict(
            {"channels": [1, 1], "kernel_size": [1, 1], "padding": {"Explicit": {"height": 1}}}
        )


def test_conv_config_errors(device) -> None:
    with pytest.raises(ValueError, match=r"Conv2d: Both channels must be divisible by the number of groups"):
        Conv2dConfig((1, 4), (1, 1), groups=4).init(device)
    with pytest.raises(ValueError, match=r"Conv1d: Same padding with an even kernel size is not supported"):
        Conv1dConfig(5, 5, 4, padding=PaddingConfig1d.Same()).init(device)
    with pytest.raises(ValueError, match=r"Conv2d: Same padding keeps the input size only with stride 1"):
        Conv2dConfig((2, 2), (3, 3), stride=(2, 2), padding=PaddingConfig2d.Same()).init(device)
    with pytest.raises(TypeError, match=r"Conv2dConfig: padding must be a PaddingConfig2d"):
        Conv2dConfig((2, 2), (3, 3), padding=PaddingConfig1d.Valid()).init(device)
    with pytest.raises(ValueError, match=r"Conv3d: kernel_size must be >= 1"):
        Conv3dConfig((2, 2), (3, 0, 3)).init(device)
    with pytest.raises(ValueError, match=r"Conv1d: channels_in must be a positive int, got 0"):
        Conv1dConfig(0, 2, 3).init(device)
    with pytest.raises(
        ValueError, match=r"ConvTranspose1d: padding_out \[2\] must be smaller than the stride"
    ):
        ConvTranspose1dConfig((2, 2), 3, stride=2, padding_out=2).init(device)
    with pytest.raises(ValueError, match=r"ConvTranspose2d: stride must be 2 ints, got \(1, 1, 1\)"):
        ConvTranspose2dConfig((2, 2), (3, 3), stride=(1, 1, 1)).init(device)


def test_conv_input_errors(device) -> None:
    conv = Conv2dConfig((5, 3), (3, 3)).init(device)
    with pytest.raises(
        ValueError, match=r"Conv2d: input has 4 channels \(shape \[1, 4, 10, 10\]\), expected"
    ):
        conv(Tensor.zeros([1, 4, 10, 10], device))
    with pytest.raises(
        ValueError, match=r"Conv2d: input must have rank 4 \(\[batch, channels_in, height, width"
    ):
        conv(Tensor.zeros([5, 10, 10], device))
    transposed = ConvTranspose1dConfig((5, 3), 3).init(device)
    with pytest.raises(ValueError, match=r"ConvTranspose1d: input has 4 channels"):
        transposed(Tensor.zeros([1, 4, 10], device))


def test_conv_module_fields_and_record(device) -> None:
    conv = Conv2dConfig((4, 6), (3, 3), groups=2, padding=PaddingConfig2d.Same()).init(device)
    assert conv.num_params() == 6 * 2 * 3 * 3 + 6
    assert [name for name, _ in conv.named_params()] == ["weight", "bias"]
    assert (conv.stride, conv.kernel_size, conv.groups) == ((1, 1), (3, 3), 2)
    assert conv.padding == PaddingConfig2d.Same()
    assert set(conv.into_record()) == {"weight", "bias"}
    assert "padding: PaddingConfig2d.Same()" in repr(conv)
    evaluated = conv.valid()
    assert evaluated.padding == PaddingConfig2d.Same()
    assert evaluated(Tensor.ones([1, 4, 5, 5], evaluated.weight.device)).dims() == [1, 6, 5, 5]
