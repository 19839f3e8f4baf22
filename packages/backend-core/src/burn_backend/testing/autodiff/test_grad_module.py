"""Gradients of the module ops through the public ``burn_backend.module`` and ``signal`` functions:
convolutions (plain, transposed, deformable), pooling, interpolation, embedding, linear, CTC loss,
attention, layer normalization, unfold/fold, FFT and grid sampling; each against finite differences in
float64 and, where PyTorch has the op, ``torch.autograd``. Then the values and gradients of tracked f16
inputs against float64."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from burn_backend import (
    AttentionOptions,
    ConvOptions,
    ConvTransposeOptions,
    DeformConvOptions,
    Device,
    DType,
    GridSampleOptions,
    InterpolateMode,
    InterpolateOptions,
    Tensor,
    UnfoldOptions,
    activation,
    module,
    signal,
)
from burn_backend.testing import check, make, require_dtype
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]


def gradient(tensor: Tensor, grads: Any) -> Tensor:
    """``tensor``'s gradient in ``grads``, which must hold one."""
    grad = tensor.grad(grads)
    assert grad is not None, "no gradient"
    return grad


def functional() -> Any:
    """``torch.nn.functional`` (the test skips without PyTorch)."""
    return pytest.importorskip("torch").nn.functional


def ints(values: Array, like: Tensor) -> Tensor:
    """``values`` as an Int tensor on ``like``'s device (the autodiff one, or its inner one)."""
    return make(np.asarray(values), like.device, like.device.backend.int_dtype)


def case_id(case: tuple[Any, ...]) -> str:
    return "-".join(str(part).replace(" ", "") for part in case)


# -- convolution -----------------------------------------------------------------------------------------
# (x shape, weight shape, stride, padding, dilation, groups, bias)
CONV1D = [
    ((2, 2, 7), (3, 2, 3), (1,), (0,), (1,), 1, True),
    ((1, 2, 8), (2, 2, 3), (2,), (1,), (1,), 1, False),
    ((1, 2, 9), (2, 2, 2), (1,), (2,), (2,), 1, True),
    ((1, 4, 6), (4, 2, 3), (1,), (1,), (1,), 2, True),
    ((2, 3, 5), (3, 1, 1), (3,), (0,), (1,), 3, False),
]
CONV2D = [
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True),
    ((2, 1, 6, 5), (2, 1, 3, 2), (2, 1), (1, 0), (1, 1), 1, True),
    ((1, 2, 6, 6), (2, 2, 2, 3), (1, 2), (1, 1), (2, 1), 1, False),
    ((1, 4, 5, 4), (4, 2, 3, 3), (1, 1), (1, 1), (1, 1), 2, True),
    ((1, 3, 5, 5), (3, 1, 3, 3), (2, 2), (1, 1), (1, 1), 3, False),
    ((2, 2, 4, 4), (3, 2, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),
    ((1, 1, 6, 6), (1, 1, 2, 2), (3, 3), (0, 0), (2, 2), 1, True),
]
CONV3D = [
    ((1, 2, 3, 4, 4), (2, 2, 2, 2, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1, True),
    ((1, 2, 4, 4, 3), (2, 1, 3, 2, 2), (2, 1, 1), (1, 1, 0), (1, 2, 1), 2, False),
]


def conv_inputs(rng: np.random.Generator, case: tuple[Any, ...]) -> list[Array]:
    x_shape, w_shape, *_, bias = case
    inputs = [rng.uniform(-1.0, 1.0, x_shape), rng.uniform(-1.0, 1.0, w_shape)]
    if bias:
        inputs.append(rng.uniform(-1.0, 1.0, w_shape[0]))
    return inputs


def check_conv(ad_device: Device, rng: np.random.Generator, n: int, case: tuple[Any, ...]) -> None:
    _, _, stride, padding, dilation, groups, _ = case
    options = ConvOptions(stride, padding, dilation, groups)
    ours = getattr(module, f"conv{n}d")

    def torch_conv(x: Any, w: Any, b: Any = None) -> Any:
        return getattr(functional(), f"conv{n}d")(x, w, b, stride, padding, dilation, groups)

    gradcheck(
        ad_device,
        lambda x, w, b=None: ours(x, w, b, options),
        conv_inputs(rng, case),
        rng,
        torch_function=torch_conv,
    )


@pytest.mark.parametrize("case", CONV1D, ids=case_id)
def test_conv1d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    check_conv(ad_device, rng, 1, case)


@pytest.mark.parametrize("case", CONV2D, ids=case_id)
def test_conv2d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    check_conv(ad_device, rng, 2, case)


@pytest.mark.parametrize("case", CONV3D, ids=case_id)
def test_conv3d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    check_conv(ad_device, rng, 3, case)


@pytest.mark.parametrize("wrt", [(0,), (1,), (2,), (1, 2)], ids=str)
def test_conv2d_gradients_of_some_inputs(
    ad_device: Device, rng: np.random.Generator, wrt: tuple[int]
) -> None:
    case = CONV2D[3]
    options = ConvOptions(*case[2:6])
    gradcheck(
        ad_device, lambda x, w, b: module.conv2d(x, w, b, options), conv_inputs(rng, case), rng, wrt=wrt
    )


def test_conv2d_in_a_network(ad_device: Device, rng: np.random.Generator) -> None:
    """Two convolutions with an activation and pooling between: the gradients chain."""
    first, second = ConvOptions((1, 1), (1, 1), (1, 1), 1), ConvOptions((1, 1), (0, 0), (1, 1), 2)
    inputs = [rng.uniform(-1, 1, s) for s in [(1, 2, 6, 6), (4, 2, 3, 3), (4,), (2, 2, 2, 2)]]

    def network(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor) -> Tensor:
        hidden = module.avg_pool2d(activation.gelu(module.conv2d(x, w1, b1, first)), 2)
        return module.conv2d(hidden, w2, None, second)

    def torch_network(x: Any, w1: Any, b1: Any, w2: Any) -> Any:
        f = functional()
        hidden = f.avg_pool2d(f.gelu(f.conv2d(x, w1, b1, 1, 1)), 2)
        return f.conv2d(hidden, w2, None, 1, 0, 1, 2)

    gradcheck(ad_device, network, inputs, rng, torch_function=torch_network)


# -- transposed convolution ------------------------------------------------------------------------------
# (x shape, weight shape, stride, padding, padding_out, dilation, groups, bias)
CONV_TRANSPOSE1D = [
    ((1, 2, 4), (2, 3, 3), (1,), (0,), (0,), (1,), 1, True),
    ((2, 2, 4), (2, 2, 3), (2,), (1,), (1,), (1,), 1, False),
    ((1, 4, 3), (4, 1, 2), (2,), (0,), (0,), (2,), 2, True),
    ((1, 2, 5), (2, 2, 3), (3,), (1,), (2,), (1,), 1, True),
]
CONV_TRANSPOSE2D = [
    ((1, 2, 3, 3), (2, 3, 3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1, True),
    ((1, 2, 3, 4), (2, 2, 2, 3), (2, 2), (1, 0), (1, 1), (1, 1), 1, False),
    ((2, 4, 3, 3), (4, 1, 3, 2), (1, 2), (1, 1), (0, 1), (2, 1), 2, True),
    ((1, 1, 2, 3), (1, 2, 3, 3), (3, 2), (0, 1), (2, 0), (1, 2), 1, True),
    ((1, 3, 3, 3), (3, 1, 2, 2), (2, 2), (0, 0), (0, 0), (1, 1), 3, False),
]
CONV_TRANSPOSE3D = [
    ((1, 2, 2, 3, 2), (2, 2, 2, 2, 2), (1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1), 1, True),
    ((1, 2, 2, 2, 3), (2, 1, 2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 0, 1), (1, 1, 1), 2, False),
]


def check_conv_transpose(ad_device: Device, rng: np.random.Generator, n: int, case: tuple[Any, ...]) -> None:
    x_shape, w_shape, stride, padding, padding_out, dilation, groups, bias = case
    options = ConvTransposeOptions(stride, padding, padding_out, dilation, groups)
    ours = getattr(module, f"conv_transpose{n}d")
    inputs = [rng.uniform(-1.0, 1.0, x_shape), rng.uniform(-1.0, 1.0, w_shape)]
    if bias:
        inputs.append(rng.uniform(-1.0, 1.0, w_shape[1] * groups))

    def torch_conv_transpose(x: Any, w: Any, b: Any = None) -> Any:
        function = getattr(functional(), f"conv_transpose{n}d")
        return function(x, w, b, stride, padding, padding_out, groups, dilation)

    gradcheck(
        ad_device,
        lambda x, w, b=None: ours(x, w, b, options),
        inputs,
        rng,
        torch_function=torch_conv_transpose,
    )


@pytest.mark.parametrize("case", CONV_TRANSPOSE1D, ids=case_id)
def test_conv_transpose1d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    check_conv_transpose(ad_device, rng, 1, case)


@pytest.mark.parametrize("case", CONV_TRANSPOSE2D, ids=case_id)
def test_conv_transpose2d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    check_conv_transpose(ad_device, rng, 2, case)


@pytest.mark.parametrize("case", CONV_TRANSPOSE3D, ids=case_id)
def test_conv_transpose3d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    check_conv_transpose(ad_device, rng, 3, case)


def test_conv_transpose2d_weight_only(ad_device: Device, rng: np.random.Generator) -> None:
    x_shape, w_shape, stride, padding, padding_out, dilation, groups, _ = CONV_TRANSPOSE2D[2]
    options = ConvTransposeOptions(stride, padding, padding_out, dilation, groups)
    inputs = [rng.uniform(-1.0, 1.0, x_shape), rng.uniform(-1.0, 1.0, w_shape)]
    gradcheck(ad_device, lambda x, w: module.conv_transpose2d(x, w, None, options), inputs, rng, wrt=[1])


# -- deformable convolution ------------------------------------------------------------------------------
# (x shape, weight shape, stride, padding, dilation, weight groups, offset groups, mask, bias)
DEFORM = [
    ((1, 2, 4, 4), (2, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, 1, False, False),
    ((1, 2, 3, 3), (3, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1, 1, True, True),
    ((1, 4, 5, 4), (2, 2, 2, 2), (2, 1), (1, 0), (1, 1), 2, 2, True, False),
    ((2, 2, 5, 5), (2, 2, 2, 2), (1, 1), (0, 0), (2, 2), 1, 2, False, True),
    ((1, 2, 4, 5), (2, 1, 3, 2), (1, 2), (1, 1), (1, 1), 2, 1, True, True),
]


def deform_inputs(rng: np.random.Generator, case: tuple[Any, ...]) -> tuple[list[Array], DeformConvOptions]:
    x_shape, w_shape, stride, padding, dilation, weight_groups, offset_groups, mask, bias = case
    kh, kw = w_shape[2:]
    out = [
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(x_shape[2:], (kh, kw), stride, padding, dilation)
    ]
    taps = offset_groups * kh * kw
    # whole steps plus a fraction well inside (0, 1): no read lands near a sample, where the bilinear
    # read has a kink and finite differences would straddle it
    whole = rng.integers(-1, 2, (x_shape[0], 2 * taps, *out))
    offset = whole + rng.uniform(0.2, 0.8, whole.shape)
    inputs = [rng.uniform(-1.0, 1.0, x_shape), offset, rng.uniform(-1.0, 1.0, w_shape)]
    if mask:
        inputs.append(rng.uniform(0.5, 1.5, (x_shape[0], taps, *out)))
    if bias:
        inputs.append(rng.uniform(-1.0, 1.0, w_shape[0]))
    return inputs, DeformConvOptions(stride, padding, dilation, weight_groups, offset_groups)


@pytest.mark.parametrize("case", DEFORM, ids=case_id)
def test_deform_conv2d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    inputs, options = deform_inputs(rng, case)
    has_mask, has_bias = case[7], case[8]

    def function(x: Tensor, offset: Tensor, w: Tensor, *rest: Tensor) -> Tensor:
        extra = list(rest)
        mask = extra.pop(0) if has_mask else None
        bias = extra.pop(0) if has_bias else None
        return module.deform_conv2d(x, offset, w, mask, bias, options)

    gradcheck(ad_device, function, inputs, rng, rtol=1e-5, atol=1e-6)


def test_deform_conv2d_offset_only(ad_device: Device, rng: np.random.Generator) -> None:
    inputs, options = deform_inputs(rng, DEFORM[4])
    gradcheck(
        ad_device,
        lambda x, offset, w, mask, b: module.deform_conv2d(x, offset, w, mask, b, options),
        inputs,
        rng,
        wrt=[1, 3],
        atol=1e-6,
    )


def test_deform_conv2d_with_zero_offsets_is_conv2d(ad_device: Device, rng: np.random.Generator) -> None:
    """With zero offsets and no mask, the gradients of x, the weight and the bias are conv2d's."""
    x = rng.uniform(-1.0, 1.0, (1, 2, 5, 5))
    w = rng.uniform(-1.0, 1.0, (3, 2, 3, 3))
    b = rng.uniform(-1.0, 1.0, 3)
    options = DeformConvOptions((1, 1), (1, 1), (1, 1))
    zeros = Tensor.zeros([1, 18, 5, 5], ad_device, DType.F64)
    results = []
    for deform in (True, False):
        tensors = [make(a, ad_device).require_grad() for a in (x, w, b)]
        if deform:
            y = module.deform_conv2d(tensors[0], zeros, tensors[1], None, tensors[2], options)
        else:
            y = module.conv2d(tensors[0], tensors[1], tensors[2], ConvOptions((1, 1), (1, 1), (1, 1)))
        grads = (y * y).sum().backward()
        results.append([gradient(t, grads).to_numpy() for t in tensors])
    for deformed, plain in zip(*results):
        np.testing.assert_allclose(deformed, plain, rtol=1e-12, atol=1e-12)


# -- pooling ---------------------------------------------------------------------------------------------
# (x shape, kernel, stride, padding, count_include_pad, ceil_mode)
AVG1D = [
    ((2, 2, 7), 3, 2, 1, True, False),
    ((1, 2, 7), 3, 2, 1, False, True),
    ((1, 1, 6), 2, 2, 0, True, False),
    ((1, 1, 8), 4, 3, 2, False, True),
]
AVG2D = [
    ((1, 2, 5, 5), (2, 2), (2, 2), (0, 0), True, False),
    ((1, 1, 5, 6), (3, 3), (2, 2), (1, 1), True, False),
    ((1, 1, 5, 6), (3, 3), (2, 2), (1, 1), False, False),
    ((2, 1, 5, 5), (2, 2), (2, 2), (1, 1), False, True),
    ((1, 2, 6, 5), (3, 2), (2, 1), (1, 0), True, True),
    ((1, 1, 4, 4), (2, 2), (1, 1), (0, 0), True, False),
]


@pytest.mark.parametrize("case", AVG1D, ids=case_id)
def test_avg_pool1d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, k, s, p, include, ceil = case
    gradcheck(
        ad_device,
        lambda x: module.avg_pool1d(x, k, s, p, include, ceil),
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=lambda x: functional().avg_pool1d(x, k, s, p, ceil, include),
    )


@pytest.mark.parametrize("case", AVG2D, ids=case_id)
def test_avg_pool2d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, k, s, p, include, ceil = case
    gradcheck(
        ad_device,
        lambda x: module.avg_pool2d(x, k, s, p, include, ceil),
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=lambda x: functional().avg_pool2d(x, k, s, p, ceil, include),
    )


# (x shape, kernel, stride, padding, dilation, ceil_mode)
MAX1D = [
    ((2, 2, 7), 3, 2, 1, 1, False),
    ((1, 1, 8), 2, 2, 1, 2, True),
    ((1, 2, 6), 3, 1, 0, 1, False),
]
MAX2D = [
    ((1, 2, 5, 5), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 1, 6, 5), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 1, 6, 6), (2, 3), (1, 2), (1, 1), (2, 1), True),
    ((2, 1, 5, 5), (3, 2), (2, 2), (1, 0), (1, 1), True),
    ((1, 2, 4, 4), (2, 2), (1, 1), (0, 0), (1, 1), False),
]


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values at least 0.01 apart: no ties in a window, and none appear under finite differences."""
    count = math.prod(shape)
    return rng.permutation(count).reshape(shape) * 0.01 - count * 0.005 + rng.uniform(-1e-3, 1e-3, shape)


@pytest.mark.parametrize("case", MAX1D, ids=case_id)
def test_max_pool1d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, k, s, p, d, ceil = case
    gradcheck(
        ad_device,
        lambda x: module.max_pool1d(x, k, s, p, d, ceil),
        [distinct(rng, shape)],
        rng,
        torch_function=lambda x: functional().max_pool1d(x, k, s, p, d, ceil),
    )


@pytest.mark.parametrize("case", MAX2D, ids=case_id)
def test_max_pool2d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, k, s, p, d, ceil = case
    gradcheck(
        ad_device,
        lambda x: module.max_pool2d(x, k, s, p, d, ceil),
        [distinct(rng, shape)],
        rng,
        torch_function=lambda x: functional().max_pool2d(x, k, s, p, d, ceil),
    )


@pytest.mark.parametrize("n", [1, 2])
def test_max_pool_with_indices(ad_device: Device, rng: np.random.Generator, n: int) -> None:
    shape, *options = (MAX1D if n == 1 else MAX2D)[2]
    ours = getattr(module, f"max_pool{n}d_with_indices")
    x = distinct(rng, shape)
    values = gradcheck(
        ad_device,
        lambda t: ours(t, *options)[0],
        [x],
        rng,
        torch_function=lambda t: getattr(functional(), f"max_pool{n}d")(t, *options),
    )
    assert values[0].shape == x.shape
    tracked = make(x, ad_device).require_grad()
    pooled, indices = ours(tracked, *options)
    torch = pytest.importorskip("torch")
    _, expected = getattr(functional(), f"max_pool{n}d")(torch.tensor(x), *options, return_indices=True)
    np.testing.assert_array_equal(indices.to_numpy(), expected.numpy())
    # the values' gradient lands at the indices
    grads = pooled.sum().backward()
    counts = np.zeros(x.size // (shape[0] * shape[1]))
    flat = gradient(tracked, grads).to_numpy().reshape(shape[0] * shape[1], -1)
    for row, picked in zip(flat, expected.numpy().reshape(shape[0] * shape[1], -1)):
        counts[:] = 0
        np.add.at(counts, picked, 1.0)
        np.testing.assert_array_equal(row, counts)


ADAPTIVE1D = [((1, 2, 7), 3), ((2, 1, 5), 5), ((1, 1, 4), 6)]
ADAPTIVE2D = [((1, 2, 7, 6), (3, 3)), ((1, 1, 5, 4), (2, 3)), ((1, 1, 3, 3), (5, 4))]


@pytest.mark.parametrize("case", ADAPTIVE1D, ids=case_id)
def test_adaptive_avg_pool1d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, out = case
    gradcheck(
        ad_device,
        lambda x: module.adaptive_avg_pool1d(x, out),
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=lambda x: functional().adaptive_avg_pool1d(x, out),
    )


@pytest.mark.parametrize("case", ADAPTIVE2D, ids=case_id)
def test_adaptive_avg_pool2d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, out = case
    gradcheck(
        ad_device,
        lambda x: module.adaptive_avg_pool2d(x, out),
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=lambda x: functional().adaptive_avg_pool2d(x, out),
    )


# -- interpolation ---------------------------------------------------------------------------------------
INTERPOLATE_SIZES = [((1, 2, 4, 5), (7, 6)), ((1, 1, 6, 6), (3, 4)), ((2, 1, 3, 3), (1, 5))]


@pytest.mark.parametrize("sizes", INTERPOLATE_SIZES, ids=case_id)
@pytest.mark.parametrize("mode", list(InterpolateMode), ids=lambda m: m.value)
def test_interpolate(
    ad_device: Device, rng: np.random.Generator, mode: InterpolateMode, sizes: tuple[Any, ...]
) -> None:
    shape, out = sizes

    def torch_interpolate(x: Any) -> Any:
        if mode is InterpolateMode.NEAREST:
            return functional().interpolate(x, out, mode="nearest")
        return functional().interpolate(x, out, mode=mode.value, align_corners=True)

    gradcheck(
        ad_device,
        lambda x: module.interpolate(x, out, InterpolateOptions(mode)),
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=torch_interpolate,
    )


# -- embedding and linear --------------------------------------------------------------------------------
@pytest.mark.parametrize("index_shape", [(2, 4), (5,), (2, 2, 3)], ids=str)
def test_embedding(ad_device: Device, rng: np.random.Generator, index_shape: tuple[int, ...]) -> None:
    indices = rng.integers(0, 6, index_shape)
    indices.reshape(-1)[:2] = 3  # a row picked more than once: its gradients add
    grads = gradcheck(
        ad_device,
        lambda w, i: module.embedding(w, ints(i, w)),
        [rng.uniform(-1.0, 1.0, (6, 3))],
        rng,
        torch_function=lambda w, i: functional().embedding(pytest.importorskip("torch").tensor(i), w),
        constants=[indices],
    )
    unused = sorted(set(range(6)) - set(indices.reshape(-1).tolist()))
    assert not grads[0][unused].any()


@pytest.mark.parametrize("x_shape", [(4,), (3, 4), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_linear(ad_device: Device, rng: np.random.Generator, x_shape: tuple[int, ...], bias: bool) -> None:
    inputs = [rng.uniform(-1.0, 1.0, x_shape), rng.uniform(-1.0, 1.0, (4, 5))]
    if bias:
        inputs.append(rng.uniform(-1.0, 1.0, 5))
    gradcheck(
        ad_device,
        lambda x, w, b=None: module.linear(x, w, b),
        inputs,
        rng,
        torch_function=lambda x, w, b=None: x @ w if b is None else x @ w + b,
    )


def test_linear_weight_only(ad_device: Device, rng: np.random.Generator) -> None:
    inputs = [rng.uniform(-1.0, 1.0, (2, 3, 4)), rng.uniform(-1.0, 1.0, (4, 2)), rng.uniform(-1.0, 1.0, 2)]
    gradcheck(ad_device, lambda x, w, b: module.linear(x, w, b), inputs, rng, wrt=[1, 2])


# -- CTC loss --------------------------------------------------------------------------------------------
CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 0]])
CTC_INPUT_LENGTHS = np.array([6, 5])
CTC_TARGET_LENGTHS = np.array([3, 2])


def ctc_of_logits(reduction: str) -> Any:
    def function(logits: Tensor) -> Tensor:
        log_probs = activation.log_softmax(logits, 2)
        return module.ctc_loss(
            log_probs,
            ints(CTC_TARGETS, logits),
            ints(CTC_INPUT_LENGTHS, logits),
            ints(CTC_TARGET_LENGTHS, logits),
            reduction=reduction,
        )

    return function


def torch_ctc_of_logits(reduction: str) -> Any:
    def function(logits: Any) -> Any:
        torch = pytest.importorskip("torch")
        return functional().ctc_loss(
            functional().log_softmax(logits, 2),
            torch.tensor(CTC_TARGETS),
            torch.tensor(CTC_INPUT_LENGTHS),
            torch.tensor(CTC_TARGET_LENGTHS),
            reduction=reduction,
        )

    return function


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctc_loss_of_logits(ad_device: Device, rng: np.random.Generator, reduction: str) -> None:
    logits = rng.normal(0.0, 1.0, (6, 2, 4))
    gradcheck(
        ad_device,
        ctc_of_logits(reduction),
        [logits],
        rng,
        torch_function=torch_ctc_of_logits(reduction),
        rtol=1e-5,
        atol=1e-6,
    )


def test_ctc_loss_of_log_probs_is_torchs(ad_device: Device, rng: np.random.Generator) -> None:
    """Differentiated directly in the log-probabilities, the gradient is what the backend's
    ``ctc_loss_backward`` gives when it has one (PyTorch's, which assumes a log-softmax before), else
    the exact derivative; either way it agrees with finite differences after a log-softmax (above)."""
    torch = pytest.importorskip("torch")
    logits = rng.normal(0.0, 1.0, (6, 2, 4))
    log_probs = logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))
    tracked = make(log_probs, ad_device).require_grad()
    loss = module.ctc_loss(
        tracked,
        ints(CTC_TARGETS, tracked),
        ints(CTC_INPUT_LENGTHS, tracked),
        ints(CTC_TARGET_LENGTHS, tracked),
        reduction="sum",
    )
    grad = gradient(tracked, loss.backward()).to_numpy()
    leaf = torch.tensor(log_probs, requires_grad=True)
    expected = functional().ctc_loss(
        leaf,
        torch.tensor(CTC_TARGETS),
        torch.tensor(CTC_INPUT_LENGTHS),
        torch.tensor(CTC_TARGET_LENGTHS),
        reduction="sum",
    )
    expected.backward()
    assert leaf.grad is not None
    torch_grad = leaf.grad.numpy()
    # PyTorch's gradient and the exact one differ by exp(log_probs) times the output gradient within
    # each input's frames, a direction the log-softmax projects out
    within = (np.arange(6)[:, None] < CTC_INPUT_LENGTHS[None, :])[:, :, None]
    exact = torch_grad - np.where(within, np.exp(log_probs), 0.0)
    assert np.allclose(grad, torch_grad, rtol=1e-9, atol=1e-12) or np.allclose(
        grad, exact, rtol=1e-9, atol=1e-12
    )


# -- attention and layer norm ----------------------------------------------------------------------------
def torch_attention(
    q: Any,
    k: Any,
    v: Any,
    bias: Any = None,
    mask: Array | None = None,
    options: AttentionOptions | None = None,
) -> Any:
    torch = pytest.importorskip("torch")
    options = options or AttentionOptions()
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads != heads:
        k = k.repeat_interleave(heads // kv_heads, 1)
        v = v.repeat_interleave(heads // kv_heads, 1)
    scale = options.scale if options.scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-1, -2) * scale
    if options.softcap is not None:
        scores = torch.tanh(scores / options.softcap) * options.softcap
    if mask is not None:
        scores = scores.masked_fill(torch.tensor(mask), -math.inf)
    if options.is_causal:
        future = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, -math.inf)
    if bias is not None:
        scores = scores + bias
    return torch.softmax(scores, -1) @ v


ATTENTION = {
    "plain": ((1, 2, 3, 4), 2, 4, AttentionOptions()),
    "scale-softcap": ((2, 1, 3, 2), 1, 3, AttentionOptions(scale=0.7, softcap=2.0)),
    "causal": ((1, 2, 4, 3), 2, 4, AttentionOptions(is_causal=True)),
    "grouped-query": ((1, 4, 2, 3), 2, 3, AttentionOptions()),
}


@pytest.mark.parametrize("name", ATTENTION)
def test_attention(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    (batch, heads, seq_q, dim), kv_heads, seq_k, options = ATTENTION[name]
    inputs = [
        rng.uniform(-1.0, 1.0, (batch, heads, seq_q, dim)),
        rng.uniform(-1.0, 1.0, (batch, kv_heads, seq_k, dim)),
        rng.uniform(-1.0, 1.0, (batch, kv_heads, seq_k, 2)),
    ]
    gradcheck(
        ad_device,
        lambda q, k, v: module.attention(q, k, v, options=options),
        inputs,
        rng,
        torch_function=lambda q, k, v: torch_attention(q, k, v, options=options),
    )


def test_attention_with_mask_and_bias(ad_device: Device, rng: np.random.Generator) -> None:
    mask = rng.random((1, 1, 3, 4)) < 0.4
    mask[..., 0] = False  # every query keeps a key
    inputs = [
        rng.uniform(-1.0, 1.0, (1, 2, 3, 4)),
        rng.uniform(-1.0, 1.0, (1, 2, 4, 4)),
        rng.uniform(-1.0, 1.0, (1, 2, 4, 3)),
        rng.uniform(-1.0, 1.0, (1, 2, 3, 4)),
    ]
    grads = gradcheck(
        ad_device,
        lambda q, k, v, b, m: module.attention(q, k, v, make(m, q.device), b),
        inputs,
        rng,
        torch_function=lambda q, k, v, b, m: torch_attention(q, k, v, b, m),
        constants=[mask],
    )
    # masked scores get no gradient through the bias
    assert not grads[3][np.broadcast_to(mask, grads[3].shape)].any()


@pytest.mark.parametrize(
    "case",
    [
        ((3, 5), True, True),
        ((2, 3, 4), True, False),
        ((4, 3), False, False),
        ((2, 5), False, True),
        ((6,), True, True),
    ],
    ids=case_id,
)
def test_layer_norm(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, gamma, beta = case
    d = shape[-1]
    inputs = [rng.uniform(-1.0, 1.0, shape)]
    inputs += [rng.uniform(0.5, 1.5, d)] if gamma else []
    inputs += [rng.uniform(-1.0, 1.0, d)] if beta else []

    def split(params: tuple[Any, ...]) -> tuple[Any, Any]:
        rest = list(params)
        return (rest.pop(0) if gamma else None), (rest.pop(0) if beta else None)

    def function(x: Tensor, *params: Tensor) -> Tensor:
        return module.layer_norm(x, *split(params), 1e-5)

    def torch_function(x: Any, *params: Any) -> Any:
        return functional().layer_norm(x, (d,), *split(params), eps=1e-5)

    gradcheck(ad_device, function, inputs, rng, torch_function=torch_function)


@pytest.mark.parametrize("wrt", [(0,), (1, 2), (2,)], ids=str)
def test_layer_norm_gradients_of_some_inputs(
    ad_device: Device, rng: np.random.Generator, wrt: tuple[int]
) -> None:
    inputs = [rng.uniform(-1.0, 1.0, (2, 3, 4)), rng.uniform(0.5, 1.5, 4), rng.uniform(-1.0, 1.0, 4)]
    gradcheck(ad_device, lambda x, g, b: module.layer_norm(x, g, b), inputs, rng, wrt=wrt)


def test_layer_norm_of_a_constant_row_with_epsilon(ad_device: Device, rng: np.random.Generator) -> None:
    x = np.vstack([np.full(4, 0.3), rng.uniform(-1.0, 1.0, 4)])
    gradcheck(
        ad_device,
        lambda t: module.layer_norm(t, epsilon=0.1),
        [x],
        rng,
        torch_function=lambda t: functional().layer_norm(t, (4,), eps=0.1),
    )


# -- unfold and fold -------------------------------------------------------------------------------------
# (x shape, kernel, stride, padding, dilation)
UNFOLD = [
    ((1, 2, 5, 5), (2, 2), (1, 1), (0, 0), (1, 1)),
    ((2, 1, 5, 4), (3, 2), (2, 1), (1, 0), (1, 2)),
    ((1, 2, 4, 6), (2, 3), (2, 3), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("case", UNFOLD, ids=case_id)
def test_unfold4d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, k, s, p, d = case
    gradcheck(
        ad_device,
        lambda x: module.unfold4d(x, k, UnfoldOptions(s, p, d)),
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=lambda x: functional().unfold(x, k, d, p, s),
    )


@pytest.mark.parametrize("case", UNFOLD, ids=case_id)
def test_fold4d(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    (batch, channels, *size), k, s, p, d = case
    windows = math.prod(
        (n + 2 * pad - dil * (kk - 1) - 1) // st + 1 for n, kk, st, pad, dil in zip(size, k, s, p, d)
    )
    gradcheck(
        ad_device,
        lambda x: module.fold4d(x, size, k, UnfoldOptions(s, p, d)),
        [rng.uniform(-1.0, 1.0, (batch, channels * k[0] * k[1], windows))],
        rng,
        torch_function=lambda x: functional().fold(x, size, k, d, p, s),
    )


# -- FFT -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [((2, 8), -1), ((7,), 0), ((5, 3), 0), ((1,), 0)], ids=case_id)
@pytest.mark.parametrize("part", [0, 1], ids=["re", "im"])
def test_rfft(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...], part: int) -> None:
    shape, dim = case

    def torch_rfft(x: Any) -> Any:
        spectrum = pytest.importorskip("torch").fft.rfft(x, dim=dim)
        return spectrum.imag if part else spectrum.real

    gradcheck(
        ad_device,
        lambda x: signal.rfft(x, dim)[part],
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=torch_rfft,
    )


def test_rfft_both_parts(ad_device: Device, rng: np.random.Generator) -> None:
    def function(x: Tensor) -> Tensor:
        re, im = signal.rfft(x, 1)
        return re * re + im * 2.0

    gradcheck(ad_device, function, [rng.uniform(-1.0, 1.0, (2, 6, 2))], rng)


# (bins, n): exact length, odd length, bins trimmed, bins zero-padded, a single output sample
IRFFT = [(5, 8), (4, 7), (6, 6), (3, 9), (2, 1)]


@pytest.mark.parametrize("case", IRFFT, ids=case_id)
def test_irfft(ad_device: Device, rng: np.random.Generator, case: tuple[int, int]) -> None:
    bins, n = case
    inputs = [rng.uniform(-1.0, 1.0, (2, bins)), rng.uniform(-1.0, 1.0, (2, bins))]
    grads = gradcheck(ad_device, lambda re, im: signal.irfft(re, im, 1, n), inputs, rng)
    # the imaginary parts of the lone bins (0 and, for even n, n / 2) and trimmed bins are ignored
    lone = [0] + ([n // 2] if n % 2 == 0 and n // 2 < bins else [])
    assert not grads[1][:, lone].any()
    assert not grads[0][:, n // 2 + 1 :].any()


def test_irfft_of_rfft_along_dim_0(ad_device: Device, rng: np.random.Generator) -> None:
    def function(x: Tensor) -> Tensor:
        re, im = signal.rfft(x, 0)
        return signal.irfft(re * 0.5, im, 0, 5)

    gradcheck(ad_device, function, [rng.uniform(-1.0, 1.0, (5, 3))], rng)


# -- grid sampling ---------------------------------------------------------------------------------------
GRID_OPTIONS = [
    GridSampleOptions("bilinear", "zeros", False),
    GridSampleOptions("bilinear", "zeros", True),
    GridSampleOptions("bilinear", "border", False),
    GridSampleOptions("bilinear", "reflection", True),
    GridSampleOptions("bilinear", "reflection", False),
    GridSampleOptions("nearest", "zeros", False),
]


@pytest.mark.parametrize(
    "options",
    GRID_OPTIONS,
    ids=lambda o: f"{o.mode}-{o.padding_mode}-{'aligned' if o.align_corners else 'edges'}",
)
def test_grid_sample_2d(ad_device: Device, rng: np.random.Generator, options: GridSampleOptions) -> None:
    x = rng.uniform(-1.0, 1.0, (1, 2, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (1, 3, 2, 2))

    def torch_grid_sample(a: Any, g: Any) -> Any:
        return functional().grid_sample(a, g, options.mode, options.padding_mode, options.align_corners)

    nearest = options.mode == "nearest"
    gradcheck(
        ad_device,
        lambda a, g: module.grid_sample_2d(a, g, options),
        [x, grid],
        rng,
        torch_function=torch_grid_sample,
        wrt=[0] if nearest else None,
    )
    if nearest:
        # a nearest read is piecewise constant in the grid: no gradient (or a zero one)
        tracked = make(grid, ad_device).require_grad()
        grads = module.grid_sample_2d(make(x, ad_device), tracked, options).sum().backward()
        grad = tracked.grad(grads)
        assert grad is None or not grad.to_numpy().any()


# -- low precision ---------------------------------------------------------------------------------------
def low_precision_case(
    ad_device: Device, rng: np.random.Generator, function: Any, shapes: list[tuple[int, ...]], dtype: DType
) -> None:
    """``function`` of tracked ``dtype`` inputs: values and gradients within ``dtype``'s tolerance of the
    same computation in float64 from the same (rounded) inputs."""
    require_dtype(ad_device, dtype)
    arrays = [rng.uniform(-1.0, 1.0, shape).astype(dtype.numpy).astype(np.float64) for shape in shapes]
    results = []
    for work in (dtype, DType.F64):
        tensors = [make(a, ad_device, work).require_grad() for a in arrays]
        output = function(*tensors)
        # weights exact in the low precision too, so both runs differentiate the same function
        ramp = np.linspace(0.5, 1.5, math.prod(output.dims())).astype(dtype.numpy).astype(np.float64)
        weights = make(ramp.reshape(output.dims()), ad_device, work)
        grads = (output * weights).sum().backward()
        results.append((output, [gradient(t, grads) for t in tensors]))
    (low, low_grads), (exact, exact_grads) = results
    # room for a backend that accumulates in the low precision itself (NdArray, computing in f32 and
    # rounding once, needs a quarter of the default); gradients chain two such ops
    check(low, exact.to_numpy(), dtype, scale=4)
    for grad, expected in zip(low_grads, exact_grads):
        check(grad, expected.to_numpy(), dtype, scale=8)


LOW = [DType.F16, DType.BF16]
LOW_CASES: dict[str, tuple[Any, list[tuple[int, ...]]]] = {
    "conv2d": (
        lambda x, w, b: module.conv2d(x, w, b, ConvOptions((1, 1), (1, 1), (1, 1))),
        [(1, 3, 6, 6), (4, 3, 3, 3), (4,)],
    ),
    "conv_transpose2d": (
        lambda x, w: module.conv_transpose2d(
            x, w, None, ConvTransposeOptions((2, 2), (1, 1), (1, 1), (1, 1))
        ),
        [(1, 2, 4, 4), (2, 3, 3, 3)],
    ),
    "deform_conv2d": (
        lambda x, o, w, m: module.deform_conv2d(x, o * 2.0, w, m, None, DeformConvOptions(padding=(1, 1))),
        [(1, 2, 5, 5), (1, 18, 5, 5), (3, 2, 3, 3), (1, 9, 5, 5)],
    ),
    "adaptive_avg_pool2d": (lambda x: module.adaptive_avg_pool2d(x, 3), [(1, 2, 7, 6)]),
    "avg_pool2d": (lambda x: module.avg_pool2d(x, 3, 2, 1, False, True), [(1, 2, 6, 5)]),
    "interpolate": (lambda x: module.interpolate(x, (7, 9), "bicubic"), [(1, 2, 4, 5)]),
    "grid_sample": (
        lambda x, g: module.grid_sample_2d(x, g, GridSampleOptions(align_corners=True)),
        [(1, 2, 5, 6), (1, 4, 3, 2)],
    ),
    "attention": (lambda q, k, v: module.attention(q, k, v), [(1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 5, 8)]),
    "layer_norm": (lambda x, g, b: module.layer_norm(x, g, b), [(3, 16), (16,), (16,)]),
    "linear": (lambda x, w, b: module.linear(x, w, b), [(2, 3, 16), (16, 4), (4,)]),
}


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", LOW_CASES)
def test_low_precision(ad_device: Device, rng: np.random.Generator, name: str, dtype: DType) -> None:
    function, shapes = LOW_CASES[name]
    low_precision_case(ad_device, rng, function, shapes, dtype)


# -- balanced checkpointing ---------------------------------------------------------------------------------
def test_balanced_checkpointing_gives_the_same_gradients(ad_device: Device, rng: np.random.Generator) -> None:
    """Under balanced checkpointing the memory-bound ops (layer norm, unfold / fold, activations) are
    recomputed from the compute-bound ones' kept outputs; the gradients are the same, bit for bit on
    the CPU."""
    burn_autodiff = pytest.importorskip("burn_autodiff")
    backend = ad_device.backend
    if not isinstance(backend, burn_autodiff.Autodiff):
        pytest.skip("balanced checkpointing is burn_autodiff's")
    shapes = [(2, 2, 6, 6), (3, 2, 3, 3), (3,), (5,), (5,), (27, 4)]
    arrays = [rng.uniform(-1.0, 1.0, shape) for shape in shapes]
    results = []
    for strategy in (burn_autodiff.NoCheckpointing(), burn_autodiff.BalancedCheckpointing()):
        device = burn_autodiff.Autodiff(backend.inner, strategy).device(ad_device.index)
        x, w, b, gamma, beta, w2 = (make(a, device).require_grad() for a in arrays)
        hidden = activation.relu(module.conv2d(x, w, b, ConvOptions((1, 1), (1, 1), (1, 1))))
        hidden = module.layer_norm(module.max_pool2d(hidden, 2, 1) * 2.0, gamma, beta)
        columns = module.unfold4d(activation.gelu(hidden), 2, UnfoldOptions((1, 1), (0, 0), (1, 1)))
        folded = module.fold4d(columns * columns, 6, 2, UnfoldOptions((2, 2), (1, 1), (1, 1)))
        out = module.linear(module.avg_pool2d(folded, 2).reshape([2, 27]), w2)
        grads = (activation.softmax(out, 1) * out).sum().backward()
        results.append([gradient(t, grads).to_numpy() for t in (x, w, b, gamma, beta, w2)])
    for default, balanced in zip(*results):
        if backend.inner.is_cpu:
            np.testing.assert_array_equal(default, balanced)
        else:
            # GPU scatter-adds (fold4d, pooling backward) accumulate with atomics in whatever order the
            # threads arrive, so a recomputed value may differ in its last bits: the bound is a few
            # rounding errors of the largest gradient, not equality
            bound = 8 * np.finfo(default.dtype).eps * float(np.abs(default).max())
            np.testing.assert_allclose(balanced, default, rtol=0, atol=bound)
