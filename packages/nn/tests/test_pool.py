"""Pooling layers against torch.nn.functional pools: forward and input gradients; Burn's config defaults
(stride = kernel size); padding configs; errors; Config JSON."""

from __future__ import annotations

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import (
    AdaptiveAvgPool1dConfig,
    AdaptiveAvgPool2dConfig,
    AvgPool1dConfig,
    AvgPool2dConfig,
    MaxPool1dConfig,
    MaxPool2dConfig,
    PaddingConfig1d,
    PaddingConfig2d,
)


def _check_against(layer, reference, input_shape, device, ref, rng) -> None:
    """``layer``'s output and input gradient equal ``reference``'s (a function of a torch tensor)."""
    x, tx = ref.inputs(rng.standard_normal(input_shape).astype(np.float32), device)
    out, expected = layer(x), reference(tx)
    assert out.dims() == list(expected.shape)
    ref.close(out, expected)
    ref.close(x.grad(ref.backward(out, expected, rng)), tx.grad)


@pytest.mark.parametrize(
    ("config", "torch_args", "input_shape"),
    [
        (MaxPool1dConfig(3), {"kernel_size": 3}, [2, 3, 10]),
        (
            MaxPool1dConfig(3, stride=2, padding=PaddingConfig1d.Explicit(1), dilation=2, ceil_mode=True),
            {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
            [2, 2, 10],
        ),
        (
            MaxPool1dConfig(3, stride=1, padding=PaddingConfig1d.Same()),
            {"kernel_size": 3, "stride": 1, "padding": 1},
            [1, 2, 6],
        ),
    ],
)
def test_max_pool1d_matches_torch(config, torch_args, input_shape, device, ref, rng) -> None:
    functional = ref.torch.nn.functional
    _check_against(
        config.init(), lambda x: functional.max_pool1d(x, **torch_args), input_shape, device, ref, rng
    )


@pytest.mark.parametrize(
    ("config", "torch_args", "input_shape"),
    [
        (MaxPool2dConfig((2, 2)), {"kernel_size": 2}, [2, 3, 6, 5]),
        (
            MaxPool2dConfig((3, 2), strides=(2, 1), padding=PaddingConfig2d.Explicit(1, 1), dilation=(1, 2)),
            {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (1, 2)},
            [1, 2, 7, 6],
        ),
        (
            MaxPool2dConfig((3, 3), strides=(1, 1), padding=PaddingConfig2d.Same(), ceil_mode=True),
            {"kernel_size": 3, "stride": 1, "padding": 1, "ceil_mode": True},
            [1, 2, 5, 4],
        ),
    ],
)
def test_max_pool2d_matches_torch(config, torch_args, input_shape, device, ref, rng) -> None:
    functional = ref.torch.nn.functional
    _check_against(
        config.init(), lambda x: functional.max_pool2d(x, **torch_args), input_shape, device, ref, rng
    )


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("ceil_mode", [True, False])
def test_avg_pool1d_matches_torch(count_include_pad, ceil_mode, device, ref, rng) -> None:
    config = AvgPool1dConfig(
        3,
        stride=2,
        padding=PaddingConfig1d.Explicit(1),
        count_include_pad=count_include_pad,
        ceil_mode=ceil_mode,
    )

    def reference(x):
        return ref.torch.nn.functional.avg_pool1d(
            x, 3, 2, 1, count_include_pad=count_include_pad, ceil_mode=ceil_mode
        )

    _check_against(config.init(), reference, [2, 3, 8], device, ref, rng)


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_matches_torch(count_include_pad, device, ref, rng) -> None:
    config = AvgPool2dConfig(
        (3, 2), strides=(2, 1), padding=PaddingConfig2d.Explicit(1, 1), count_include_pad=count_include_pad
    )

    def reference(x):
        return ref.torch.nn.functional.avg_pool2d(
            x, (3, 2), (2, 1), (1, 1), count_include_pad=count_include_pad
        )

    _check_against(config.init(), reference, [2, 2, 7, 5], device, ref, rng)
    # Burn's default stride is the kernel size, as PyTorch's
    default = AvgPool2dConfig((2, 3)).init()
    _check_against(
        default, lambda x: ref.torch.nn.functional.avg_pool2d(x, (2, 3)), [1, 2, 6, 7], device, ref, rng
    )


def test_adaptive_avg_pools_match_torch(device, ref, rng) -> None:
    functional = ref.torch.nn.functional
    pool1 = AdaptiveAvgPool1dConfig(3).init()
    _check_against(pool1, lambda x: functional.adaptive_avg_pool1d(x, 3), [2, 3, 7], device, ref, rng)
    pool2 = AdaptiveAvgPool2dConfig([3, 2]).init()
    _check_against(pool2, lambda x: functional.adaptive_avg_pool2d(x, (3, 2)), [2, 2, 7, 5], device, ref, rng)
    upsampling = AdaptiveAvgPool2dConfig((4, 6)).init()
    _check_against(
        upsampling, lambda x: functional.adaptive_avg_pool2d(x, (4, 6)), [1, 1, 3, 4], device, ref, rng
    )


def test_max_pool2d_in_float64(ref, rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    x_np = rng.standard_normal([1, 2, 5, 5])
    out = MaxPool2dConfig((2, 2), strides=(1, 1)).init()(Tensor.from_data(x_np, device))
    assert out.dtype == DType.F64
    ref.close(out, ref.torch.nn.functional.max_pool2d(ref.tensor(x_np), 2, 1))


def test_pool_strides_default_to_kernel_size() -> None:
    assert MaxPool2dConfig((2, 3)).strides == (2, 3)
    assert AvgPool2dConfig([1, 2]).strides == (1, 2)
    assert MaxPool1dConfig(4).stride == 4
    assert AvgPool1dConfig(3, stride=1).stride == 1
    pool = MaxPool2dConfig((3, 3)).init()
    assert (pool.kernel_size, pool.stride, pool.dilation, pool.ceil_mode) == ((3, 3), (3, 3), (1, 1), False)
    assert pool.num_params() == 0


def test_pool_configs_json_round_trip(tmp_path) -> None:
    configs = [
        MaxPool2dConfig((3, 3), strides=(1, 1), padding=PaddingConfig2d.Same()),
        AvgPool2dConfig((2, 2), padding=PaddingConfig2d.Explicit(1, 0), count_include_pad=False),
        MaxPool1dConfig(2, padding=PaddingConfig1d.Explicit(1), ceil_mode=True),
        AvgPool1dConfig(3),
        AdaptiveAvgPool2dConfig((7, 7)),
        AdaptiveAvgPool1dConfig(5),
    ]
    for config in configs:
        assert type(config).from_json(config.to_json()) == config
    configs[0].save(tmp_path / "pool.json")
    assert MaxPool2dConfig.load(tmp_path / "pool.json").padding == PaddingConfig2d.Same()


def test_pool_errors(device) -> None:
    # the stride defaults to the kernel size, with which Same padding cannot keep the size
    with pytest.raises(ValueError, match=r"MaxPool2d: Same padding keeps the input size only with stride 1"):
        MaxPool2dConfig((3, 3), padding=PaddingConfig2d.Same()).init()
    with pytest.raises(
        ValueError, match=r"AvgPool1d: Same padding with an even kernel size is not supported"
    ):
        AvgPool1dConfig(2, stride=1, padding=PaddingConfig1d.Same()).init()
    with pytest.raises(ValueError, match=r"MaxPool1d: kernel_size must be >= 1, got 0"):
        MaxPool1dConfig(0, stride=1).init()
    with pytest.raises(TypeError, match=r"AvgPool2dConfig: padding must be a PaddingConfig2d"):
        AvgPool2dConfig((2, 2), padding=PaddingConfig1d.Valid()).init()
    with pytest.raises(ValueError, match=r"AdaptiveAvgPool2d: output_size must be >= 1"):
        AdaptiveAvgPool2dConfig((0, 2)).init()
    with pytest.raises(
        ValueError, match=r"MaxPool2d: input must have rank 4 \(\[batch, channels, height, width\]\)"
    ):
        MaxPool2dConfig((2, 2)).init()(Tensor.zeros([2, 4, 4], device))
    with pytest.raises(
        ValueError, match=r"avg_pool2d: padding \[2, 0\] must be at most half the kernel size"
    ):
        AvgPool2dConfig((2, 2), padding=PaddingConfig2d.Explicit(2, 0)).init()(
            Tensor.zeros([1, 1, 4, 4], device)
        )
