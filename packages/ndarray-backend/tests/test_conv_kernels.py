"""NdArray's convolution kernels beyond the blocked im2col: the direct numba kernels of grouped
convolutions with few channels per group (depthwise) and the strided transposed convolution by stride
phases, forward and both gradients against PyTorch CPU in float64 on random inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from burn_backend import ConvOptions, ConvTransposeOptions
from burn_ndarray import NdArray, _numba
from burn_ndarray._ops import _conv

needs_numba = pytest.mark.skipif(_numba.kernels() is None, reason="numba unavailable")
BACKEND: Any = NdArray().device().backend


def _functional(name: str, rank: int) -> Any:
    return getattr(torch.nn.functional, f"{name}{rank}d")


def _check_conv(
    sizes: tuple[int, ...], channels: int, out_channels: int, kernel: int, stride: int, padding: int,
    dilation: int, groups: int, dtype: Any = np.float64, batch: int = 2, seed: int = 0,
) -> None:  # fmt: skip
    """Forward (with bias), input and weight gradients of one convolution against PyTorch."""
    rng = np.random.default_rng(seed)
    rank = len(sizes)
    x = rng.standard_normal((batch, channels, *sizes)).astype(dtype)
    w = rng.standard_normal((out_channels, channels // groups, *(kernel,) * rank)).astype(dtype)
    b = rng.standard_normal(out_channels).astype(dtype)
    options = ConvOptions((stride,) * rank, (padding,) * rank, (dilation,) * rank, groups)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    ty = _functional("conv", rank)(
        tx, tw, torch.tensor(b, dtype=torch.float64), stride, padding, dilation, groups
    )
    g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(g, dtype=torch.float64))
    tol = 1e-10 if dtype == np.float64 else 2e-4
    y = getattr(BACKEND, f"conv{rank}d")(x, w, b, options)
    dx = getattr(BACKEND, f"conv{rank}d_x_backward")(x, w, g, options)
    dw = getattr(BACKEND, f"conv{rank}d_weight_backward")(x, w, g, options)
    assert y.dtype == dx.dtype == dw.dtype == dtype
    for ours, theirs in ((y, ty), (dx, tx.grad), (dw, tw.grad)):
        reference = theirs.detach().numpy()
        assert ours.shape == reference.shape
        scale = max(1.0, float(np.abs(reference).max()))
        np.testing.assert_allclose(ours, reference, rtol=tol, atol=tol * scale)


GROUPED = [
    # sizes, channels, out channels, kernel, stride, padding, dilation, groups
    ((9, 7), 6, 6, 3, 1, 1, 1, 6),  # depthwise 3x3, same padding, odd sizes
    ((11, 10), 5, 5, 3, 2, 1, 1, 5),  # depthwise, stride 2
    ((13, 9), 4, 8, 3, 3, 2, 2, 4),  # channel multiplier 2, stride 3, dilation 2
    ((8, 8), 3, 9, 2, 2, 0, 1, 3),  # multiplier 3, even kernel, no padding
    ((10, 9), 6, 6, 5, 1, 3, 2, 3),  # two channels per group, padding past the dilated kernel's reach
    ((17,), 4, 4, 3, 1, 1, 3, 4),  # 1-d, dilation 3
    ((19,), 6, 12, 4, 3, 2, 1, 6),  # 1-d, stride 3
    ((5, 6, 7), 3, 3, 3, 2, 1, 1, 3),  # 3-d depthwise, stride 2
    ((4, 5, 6), 2, 4, 2, 1, 0, 2, 2),  # 3-d, multiplier 2, dilation 2
]


@needs_numba
@pytest.mark.parametrize("case", GROUPED)
def test_grouped_convolutions_match_pytorch(case: tuple[Any, ...]) -> None:
    _check_conv(*case)


@needs_numba
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_in_float32_within_its_tolerance(stride: int) -> None:
    _check_conv((15, 13), 8, 16, 3, stride, 1, 1, 8, dtype=np.float32, batch=3, seed=stride)


@needs_numba
def test_depthwise_in_float16_computes_in_float32() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 9, 7)).astype(np.float16)
    w = rng.standard_normal((8, 1, 3, 3)).astype(np.float16)
    options = ConvOptions((2, 2), (1, 1), (1, 1), 4)
    y = BACKEND.conv2d(x, w, None, options)
    assert y.dtype == np.float16
    reference = torch.nn.functional.conv2d(
        torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64), None, 2, 1, 1, 4
    ).numpy()
    np.testing.assert_allclose(y.astype(np.float64), reference, rtol=2e-3, atol=1e-2)


@needs_numba
def test_depthwise_takes_the_direct_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a depthwise convolution went through im2col")

    monkeypatch.setattr(_conv, "_Columns", refuse)
    monkeypatch.setattr(_conv, "_col2im", refuse)
    _check_conv((9, 8), 6, 12, 3, 2, 1, 1, 6)
    _check_conv((9, 8), 6, 6, 3, 1, 1, 2, 6)


@needs_numba
def test_direct_kernels_keep_ieee_values_where_windows_reach_them() -> None:
    """inf in the input reaches only the outputs and weight gradients whose windows hold it, like
    PyTorch's; the unit-stride weight gradient's padded width must not spread it."""
    x = np.ones((1, 2, 6, 6))
    x[0, 0, 2, 0] = np.inf  # reached by the taps of kernel column 0 only
    w = np.ones((2, 1, 3, 3))
    g = np.ones((1, 2, 4, 4))
    options = ConvOptions((1, 1), (0, 0), (1, 1), 2)
    dw = BACKEND.conv2d_weight_backward(x, w, g, options)
    reference = torch.ops.aten.convolution_backward(
        torch.tensor(g), torch.tensor(x), torch.tensor(w), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2,
        [False, True, False],
    )[1].numpy()  # fmt: skip
    np.testing.assert_array_equal(dw, reference)
    assert np.isinf(dw[0, 0, :, 0]).all()
    assert np.isfinite(dw[0, 0, :, 1:]).all()
    w[1, 0, 0, 0] = np.inf
    dx = BACKEND.conv2d_x_backward(x, w, g, options)
    np.testing.assert_array_equal(np.isfinite(dx), np.isfinite(torch.ops.aten.convolution_backward(
        torch.tensor(g), torch.tensor(x), torch.tensor(w), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2,
        [True, False, False],
    )[0].numpy()))  # fmt: skip


@needs_numba
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_direct_kernels_with_inf_and_nan_match_pytorch(stride: int) -> None:
    rng = np.random.default_rng(stride)
    x = rng.standard_normal((2, 4, 11, 10))
    x[0, 1, 4, 0] = np.inf
    x[1, 2, 7, 9] = np.nan
    w = rng.standard_normal((8, 1, 3, 3))
    options = ConvOptions((stride, stride), (1, 1), (1, 1), 4)
    y = BACKEND.conv2d(x, w, None, options)
    g = rng.standard_normal(y.shape)
    geometry = ([stride] * 2, [1, 1], [1, 1], False, [0, 0], 4)
    tg, tx, tw = torch.tensor(g), torch.tensor(x), torch.tensor(w)
    np.testing.assert_allclose(
        y, torch.nn.functional.conv2d(tx, tw, None, stride, 1, 1, 4).numpy(), rtol=1e-10
    )
    dw = BACKEND.conv2d_weight_backward(x, w, g, options)
    reference = torch.ops.aten.convolution_backward(tg, tx, tw, None, *geometry, [False, True, False])[1]
    np.testing.assert_allclose(dw, reference.numpy(), rtol=1e-10)
    w[3, 0, 1, 2] = np.inf  # only the gradient's samples meet it: no NaN from the padding's zeros
    dx = BACKEND.conv2d_x_backward(x, w, g, options)
    tw = torch.tensor(w)
    reference = torch.ops.aten.convolution_backward(tg, tx, tw, None, *geometry, [True, False, False])
    np.testing.assert_allclose(dx, reference[0].numpy(), rtol=1e-10)


STRIDED = [
    # sizes, channels, out channels, kernel, stride, padding, dilation, groups
    ((11, 9), 5, 7, 3, 2, 1, 1, 1),  # a ResNet downsampling 3x3, odd sizes
    ((12, 13), 4, 6, 3, 3, 0, 1, 1),  # stride 3 against a kernel of 3
    ((14, 11), 3, 4, 3, 2, 2, 2, 1),  # dilation 2 with stride 2: phases no tap reaches
    ((13, 12), 4, 6, 4, 3, 1, 2, 1),  # stride 3, dilation 2, even kernel
    ((10, 10), 8, 8, 3, 2, 1, 1, 2),  # grouped, many channels per group (the GEMM path)
    ((15,), 3, 5, 5, 2, 2, 1, 1),  # 1-d
    ((6, 7, 5), 2, 3, 3, 2, 1, 1, 1),  # 3-d
    ((9, 9), 4, 5, 1, 2, 0, 1, 1),  # 1x1 stride 2: outputs no window reaches
]


@pytest.mark.parametrize("case", STRIDED)
def test_strided_input_gradients_match_pytorch(case: tuple[Any, ...]) -> None:
    _check_conv(*case)


@pytest.mark.parametrize(
    ("stride", "padding", "padding_out", "dilation", "groups"),
    [(2, 1, 1, 1, 1), (3, 2, 2, 1, 1), (2, 0, 0, 2, 1), (3, 1, 0, 2, 2), (2, 1, 1, 1, 4)],
)
def test_strided_transposed_convolutions_match_pytorch(
    stride: int, padding: int, padding_out: int, dilation: int, groups: int
) -> None:
    rng = np.random.default_rng(stride * 10 + padding)
    x = rng.standard_normal((2, 4, 5, 6))
    w = rng.standard_normal((4, 8 // groups, 3, 3))
    b = rng.standard_normal(8)
    options = ConvTransposeOptions((stride,) * 2, (padding,) * 2, (padding_out,) * 2, (dilation,) * 2, groups)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv_transpose2d(
        tx, tw, torch.tensor(b), stride, padding, padding_out, groups, dilation
    )
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    y = BACKEND.conv_transpose2d(x, w, b, options)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    dx = BACKEND.conv_transpose2d_x_backward(w, g, options)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    dw = BACKEND.conv_transpose2d_weight_backward(x, w, g, options)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_strided_input_gradient_runs_by_phases_not_col2im(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a strided input gradient with a finite weight went through col2im")

    monkeypatch.setattr(_conv, "_col2im", refuse)
    _check_conv((11, 9), 5, 7, 3, 2, 1, 1, 1)


def test_strided_input_gradient_with_an_inf_weight_multiplies_only_real_samples() -> None:
    x = np.ones((1, 1, 5, 5))
    w = np.ones((2, 1, 3, 3))
    w[0, 0, 1, 1] = np.inf
    g = np.ones((1, 2, 3, 3))
    options = ConvOptions((2, 2), (1, 1), (1, 1), 1)
    dx = BACKEND.conv2d_x_backward(x, w, g, options)
    reference = torch.ops.aten.convolution_backward(
        torch.tensor(g), torch.tensor(x), torch.tensor(w), None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1,
        [True, False, False],
    )[0].numpy()  # fmt: skip
    np.testing.assert_array_equal(dx, reference)


@pytest.mark.parametrize(
    "case",
    [
        ((8, 8), 4, 6, 1, 2, 0, 1, 1),  # a ResNet shortcut: 1x1, stride 2, the last row and column unread
        ((9, 7), 3, 5, 3, 2, 0, 2, 1),  # 3x3 dilated, stride 2, windows short of both edges
        ((10,), 3, 4, 2, 3, 0, 1, 1),  # 1-d
    ],
)
def test_unpadded_strided_convolutions_read_the_input_in_place(case: tuple[Any, ...]) -> None:
    # no padding and windows that stop short of the edge: the columns come from a view of the input
    # (a copy of the whole input, cropped, used to be taken first), values as PyTorch's
    _check_conv(*case)
    sizes, channels, _, kernel, stride, _, dilation, _ = case
    x = np.random.default_rng(1).standard_normal((3, channels, *sizes))
    rank = len(sizes)
    out = tuple((s - (kernel - 1) * dilation - 1) // stride + 1 for s in sizes)
    columns = _conv._Columns(x, (kernel,) * rank, (stride,) * rank, (0,) * rank, (dilation,) * rank, out)
    assert not columns.wide
    assert np.shares_memory(columns.source, x)
