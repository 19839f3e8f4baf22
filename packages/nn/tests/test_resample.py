"""Interpolate1d/2d, PixelShuffle/Unshuffle and Unfold4d against torch: forward and input gradients;
output sizes from scale factors; errors; Config JSON."""

from __future__ import annotations

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import (
    Interpolate1dConfig,
    Interpolate2dConfig,
    InterpolateMode,
    PixelShuffleConfig,
    PixelUnshuffleConfig,
    Unfold4dConfig,
)


def _check_against(layer, reference, input_shape, device, ref, rng, scale=1.0) -> None:
    """``layer``'s output and input gradient equal ``reference``'s (a function of a torch tensor)."""
    x_np = rng.standard_normal(input_shape).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    tx = ref.tensor(x_np, requires_grad=True)
    out, expected = layer(x), reference(tx)
    assert out.dims() == list(expected.shape)
    ref.close(out, expected, scale)
    grads = ref.backward(out, expected, rng)
    ref.close(x.grad(grads), tx.grad, scale)


def _torch_interpolate(ref, x, size, mode, **kwargs):
    """PyTorch's interpolation for our mode on a 3-d or 4-d ``x`` (corners aligned where the mode has
    corners; cubic in 1-d through a plane of height 1, as we do)."""
    functional = ref.torch.nn.functional
    if mode is InterpolateMode.NEAREST:
        return functional.interpolate(x, size, mode="nearest", **kwargs)
    if x.dim() == 3 and mode is InterpolateMode.CUBIC:
        size = None if size is None else (1, size)
        if "scale_factor" in kwargs:
            kwargs["scale_factor"] = (1.0, kwargs["scale_factor"])
        plane = functional.interpolate(x.unsqueeze(2), size, mode="bicubic", align_corners=True, **kwargs)
        return plane.squeeze(2)
    torch_mode = {3: "linear", 4: "bilinear"}[x.dim()] if mode is InterpolateMode.LINEAR else "bicubic"
    return functional.interpolate(x, size, mode=torch_mode, align_corners=True, **kwargs)


@pytest.mark.parametrize("mode", list(InterpolateMode))
@pytest.mark.parametrize("size", [11, 4])
def test_interpolate1d_matches_torch(mode, size, device, ref, rng) -> None:
    layer = Interpolate1dConfig(output_size=size, mode=mode).init()
    _check_against(layer, lambda x: _torch_interpolate(ref, x, size, mode), [2, 3, 6], device, ref, rng)


@pytest.mark.parametrize("mode", list(InterpolateMode))
@pytest.mark.parametrize("size", [(7, 9), (3, 2)])
def test_interpolate2d_matches_torch(mode, size, device, ref, rng) -> None:
    layer = Interpolate2dConfig(output_size=size, mode=mode).init()
    _check_against(layer, lambda x: _torch_interpolate(ref, x, size, mode), [2, 2, 4, 5], device, ref, rng)


def test_interpolate_scale_factor_rounds_down(device, ref, rng) -> None:
    # 5 * 2.5 = 12.5 -> 12 samples; PyTorch with recompute_scale_factor samples as for that size
    layer = Interpolate1dConfig(scale_factor=2.5, mode=InterpolateMode.LINEAR).init()
    reference = lambda x: _torch_interpolate(  # noqa: E731
        ref, x, None, InterpolateMode.LINEAR, scale_factor=2.5, recompute_scale_factor=True
    )
    _check_against(layer, reference, [1, 2, 5], device, ref, rng)
    layer2 = Interpolate2dConfig(scale_factor=(0.5, 1.5), mode=InterpolateMode.NEAREST).init()
    reference2 = lambda x: _torch_interpolate(  # noqa: E731
        ref, x, None, InterpolateMode.NEAREST, scale_factor=(0.5, 1.5), recompute_scale_factor=True
    )
    _check_against(layer2, reference2, [1, 2, 7, 4], device, ref, rng)
    assert layer2(Tensor.zeros([1, 1, 7, 4], device)).dims() == [1, 1, 3, 6]


def test_interpolate2d_in_float64(ref, rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    x_np = rng.standard_normal([1, 2, 3, 4])
    layer = Interpolate2dConfig(output_size=(5, 6), mode=InterpolateMode.CUBIC).init()
    out = layer(Tensor.from_data(x_np, device))
    assert out.dtype == DType.F64
    ref.close(out, _torch_interpolate(ref, ref.tensor(x_np), (5, 6), InterpolateMode.CUBIC))


def test_interpolate_errors(device) -> None:
    with pytest.raises(
        ValueError, match=r"Interpolate1d: Either output_size or scale_factor must be provided"
    ):
        Interpolate1dConfig().init()
    with pytest.raises(
        ValueError, match=r"Interpolate2d: Either output_size or scale_factor .* \(exactly one\)"
    ):
        Interpolate2dConfig(output_size=(2, 2), scale_factor=(2.0, 2.0)).init()
    with pytest.raises(ValueError, match=r"Interpolate1d: scale_factor must be a number > 0, got -1.0"):
        Interpolate1dConfig(scale_factor=-1.0).init()
    with pytest.raises(ValueError, match=r"Interpolate2d: output_size must be >= 1"):
        Interpolate2dConfig(output_size=(0, 3)).init()
    message = r"Interpolate1dConfig: mode must be an InterpolateMode, got 'linear'"
    with pytest.raises(TypeError, match=message):
        Interpolate1dConfig(output_size=3, mode="linear").init()
    shrinking = Interpolate1dConfig(scale_factor=0.1).init()
    with pytest.raises(ValueError, match=r"Interpolate1d: scale_factor \[0.1\] makes an empty output"):
        shrinking(Tensor.zeros([1, 1, 5], device))
    with pytest.raises(ValueError, match=r"Interpolate2d: input must have rank 4"):
        Interpolate2dConfig(output_size=(2, 2)).init()(Tensor.zeros([1, 4, 4], device))


def test_interpolate_configs_json_round_trip() -> None:
    config = Interpolate2dConfig(scale_factor=[2, 1.5], mode=InterpolateMode.CUBIC)
    assert config.scale_factor == (2, 1.5)
    text = config.to_json()
    assert '"mode": "CUBIC"' in text
    loaded = Interpolate2dConfig.from_json(text)
    assert loaded == config
    assert loaded.output_size is None
    config1 = Interpolate1dConfig(output_size=8, mode=InterpolateMode.LINEAR)
    assert Interpolate1dConfig.from_json(config1.to_json()) == config1


def test_pixel_shuffle_matches_torch(device, ref, rng) -> None:
    shuffle = PixelShuffleConfig(2).init()
    _check_against(shuffle, ref.torch.nn.PixelShuffle(2), [2, 12, 3, 4], device, ref, rng)
    unshuffle = PixelUnshuffleConfig(3).init()
    _check_against(unshuffle, ref.torch.nn.PixelUnshuffle(3), [2, 2, 6, 9], device, ref, rng)


def test_pixel_shuffle_known_values_and_inverse(inner_device) -> None:
    x = Tensor.from_data(np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2), inner_device)
    shuffled = PixelShuffleConfig(2).init()(x)
    expected = [[0, 4, 1, 5], [8, 12, 9, 13], [2, 6, 3, 7], [10, 14, 11, 15]]
    np.testing.assert_array_equal(shuffled.to_data().to_numpy()[0, 0], expected)
    restored = PixelUnshuffleConfig(2).init()(shuffled)
    np.testing.assert_array_equal(restored.to_data().to_numpy(), x.to_data().to_numpy())


def test_pixel_shuffle_errors(device) -> None:
    with pytest.raises(
        ValueError, match=r"PixelShuffle: input channels \(6, shape \[1, 6, 2, 2\]\) must be divisible"
    ):
        PixelShuffleConfig(2).init()(Tensor.zeros([1, 6, 2, 2], device))
    with pytest.raises(ValueError, match=r"PixelUnshuffle: input height and width \(4, 5; .* divisible by"):
        PixelUnshuffleConfig(2).init()(Tensor.zeros([1, 1, 4, 5], device))
    with pytest.raises(ValueError, match=r"PixelShuffle: upscale_factor must be >= 1, got 0"):
        PixelShuffleConfig(0).init()


@pytest.mark.parametrize(
    "config",
    [
        Unfold4dConfig((2, 3)),
        Unfold4dConfig((3, 2), stride=(2, 1), dilation=(1, 2), padding=(1, 0)),
    ],
)
def test_unfold4d_matches_torch(config, device, ref, rng) -> None:
    theirs = ref.torch.nn.Unfold(
        config.kernel_size, dilation=config.dilation, padding=config.padding, stride=config.stride
    )
    _check_against(config.init(), theirs, [2, 3, 6, 7], device, ref, rng)


def test_unfold4d_config_and_errors(device) -> None:
    config = Unfold4dConfig([3, 3], padding=[1, 1])
    assert Unfold4dConfig.from_json(config.to_json()) == config
    layer = config.init()
    assert (layer.kernel_size, layer.stride, layer.dilation, layer.padding) == (
        (3, 3),
        (1, 1),
        (1, 1),
        (1, 1),
    )
    with pytest.raises(ValueError, match=r"Unfold4d: padding must be >= 0"):
        Unfold4dConfig((3, 3), padding=(-1, 0)).init()
    with pytest.raises(ValueError, match=r"unfold4d: the kernel \[3, 3\] .* is larger than the padded input"):
        Unfold4dConfig((3, 3)).init()(Tensor.zeros([1, 1, 2, 5], device))
