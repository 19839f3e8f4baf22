"""Convolutions (``module.conv1d/2d/3d``), their backward kernels and ``unfold4d``: values against NumPy
float64 references computed window by window, backward kernels also as adjoints of the forward, and the
errors of the public functions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from burn_backend import ConvOptions, Device, DType, Tensor, UnfoldOptions, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref
from burn_backend.testing.module._reference import Array, check_adjoint, kernel


@dataclass(frozen=True)
class Conv:
    x: tuple[int, ...]
    weight: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    bias: bool = True

    @property
    def n(self) -> int:
        return len(self.x) - 2

    @property
    def options(self) -> ConvOptions:
        return ConvOptions(self.stride, self.padding, self.dilation, self.groups)

    def __str__(self) -> str:
        return (
            f"{self.n}d-x{list(self.x)}-w{list(self.weight)}-s{list(self.stride)}-p{list(self.padding)}"
            f"-d{list(self.dilation)}-g{self.groups}{'-bias' if self.bias else ''}"
        )


CASES = [
    Conv((2, 3, 9), (4, 3, 3), (1,), (0,), (1,)),
    Conv((1, 4, 11), (6, 2, 3), (2,), (2,), (3,), groups=2, bias=False),
    Conv((2, 2, 5), (3, 2, 5), (1,), (0,), (1,)),  # the kernel covers the input: one output
    Conv((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1)),
    Conv((1, 4, 8, 7), (6, 2, 3, 2), (2, 1), (1, 2), (1, 2), groups=2),
    Conv((2, 6, 5, 5), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), groups=6, bias=False),  # depthwise
    Conv((3, 2, 9, 5), (3, 2, 1, 1), (3, 2), (0, 0), (1, 1)),  # 1x1, strided, samples left over
    Conv((1, 2, 3, 3), (2, 2, 5, 5), (1, 1), (1, 1), (1, 1)),  # kernel == padded input
    Conv((2, 2, 6, 7), (4, 2, 2, 3), (2, 3), (1, 1), (2, 1), bias=False),
    Conv((1, 2, 5, 4, 6), (4, 1, 2, 3, 2), (1, 2, 1), (1, 0, 1), (2, 1, 1), groups=2),
    Conv((2, 3, 4, 4, 4), (2, 3, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), bias=False),
]


def inputs(rng: np.random.Generator, case: Conv, dtype: DType) -> tuple[Array, Array, Array | None]:
    x = random_array(rng, case.x, dtype, -1.0, 1.0)
    w = random_array(rng, case.weight, dtype, -1.0, 1.0)
    b = random_array(rng, (case.weight[0],), dtype, -1.0, 1.0) if case.bias else None
    return x, w, b


def forward(case: Conv, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    return getattr(module, f"conv{case.n}d")(x, w, b, case.options)  # type: ignore[no-any-return]


def f64(array: Array) -> Array:
    return array.astype(np.float64)


def f64_or_none(array: Array | None) -> Array | None:
    return None if array is None else f64(array)


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv_matches_reference(device: Device, rng: np.random.Generator, case: Conv, dtype: DType) -> None:
    x, w, b = inputs(rng, case, dtype)
    bias = None if b is None else make(b, device)
    result = forward(case, make(x, device), make(w, device), bias)
    expected = ref.conv(f64(x), f64(w), f64_or_none(b), case.stride, case.padding, case.dilation, case.groups)
    check(result, expected, dtype, scale=10)


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16], ids=str)
@pytest.mark.parametrize("case", [CASES[0], CASES[4], CASES[9]], ids=str)
def test_conv_low_precision(device: Device, rng: np.random.Generator, case: Conv, dtype: DType) -> None:
    require_dtype(device, dtype)
    x, w, b = inputs(rng, case, dtype)
    bias = None if b is None else make(b, device)
    result = forward(case, make(x, device), make(w, device), bias)
    expected = ref.conv(f64(x), f64(w), f64_or_none(b), case.stride, case.padding, case.dilation, case.groups)
    check(result, expected, dtype, scale=4)


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv_backward_kernels(device: Device, rng: np.random.Generator, case: Conv, dtype: DType) -> None:
    x, w, b = inputs(rng, case, dtype)
    tx, tw = make(x, device), make(w, device)
    y = ref.conv(f64(x), f64(w), None, case.stride, case.padding, case.dilation, case.groups)
    g = random_array(rng, y.shape, dtype, -1.0, 1.0)
    tg = make(g, device)
    n = case.n
    scale = 10 if dtype is DType.F32 else 1

    x_grad = kernel(device, f"conv{n}d_x_backward", tx, tw, tg, case.options)
    left_over = [
        size + 2 * p - (d * (k - 1) + 1) - (o - 1) * s
        for size, p, d, k, o, s in zip(
            case.x[2:], case.padding, case.dilation, case.weight[2:], y.shape[2:], case.stride
        )
    ]
    expected_x = ref.conv_transpose(
        f64(g), f64(w), None, case.stride, case.padding, left_over, case.dilation, case.groups
    )
    check(x_grad, expected_x, dtype, scale=scale)
    check_adjoint(y, f64(g), f64(x), x_grad, 1e-12 if dtype is DType.F64 else 1e-5)

    w_grad = kernel(device, f"conv{n}d_weight_backward", tx, tw, tg, case.options)
    expected_w = ref.conv_weight_grad(
        f64(x), f64(g), case.weight[2:], case.stride, case.padding, case.dilation, case.groups
    )
    check(w_grad, expected_w, dtype, scale=10 * scale)

    bias = make(b if b is not None else np.zeros(case.weight[0], dtype.numpy), device)
    b_grad = kernel(device, f"conv{n}d_bias_backward", tx, bias, tg)
    check(b_grad, f64(g).sum(axis=(0, *range(2, 2 + n))), dtype, scale=scale)


def test_conv_backward_kernels_match_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    case = CASES[4]
    x, w, b = inputs(rng, case, DType.F64)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    y = torch.nn.functional.conv2d(tx, tw, tb, case.stride, case.padding, case.dilation, case.groups)
    g = random_array(rng, tuple(y.shape), DType.F64)
    y.backward(torch.tensor(g))
    ours_y = module.conv2d(make(x, device), make(w, device), make(b, device), case.options)
    check(ours_y, y.detach().numpy(), DType.F64)
    args = (make(x, device), make(w, device), make(g, device), case.options)
    check(kernel(device, "conv2d_x_backward", *args), tx.grad.numpy(), DType.F64)
    check(kernel(device, "conv2d_weight_backward", *args), tw.grad.numpy(), DType.F64)
    check(
        kernel(device, "conv2d_bias_backward", args[0], make(b, device), args[2]), tb.grad.numpy(), DType.F64
    )


def test_conv_large_batch(device: Device, rng: np.random.Generator) -> None:
    # enough work that a backend may split the batch (NdArray runs it on several threads)
    case = Conv((16, 4, 40, 40), (6, 4, 3, 3), (1, 1), (1, 1), (1, 1))
    x, w, b = inputs(rng, case, DType.F64)
    assert b is not None
    tx, tw = make(x, device), make(w, device)
    result = module.conv2d(tx, tw, make(b, device), case.options)
    check(result, ref.conv(f64(x), f64(w), f64(b), case.stride, case.padding, case.dilation, 1), DType.F64)
    g = random_array(rng, result.dims(), DType.F64)
    w_grad = kernel(device, "conv2d_weight_backward", tx, tw, make(g, device), case.options)
    check(
        w_grad,
        ref.conv_weight_grad(f64(x), g, (3, 3), case.stride, case.padding, case.dilation, 1),
        DType.F64,
    )


def test_conv_default_options(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (1, 2, 5, 4), DType.F32)
    w = random_array(rng, (3, 2, 2, 2), DType.F32)
    result = module.conv2d(make(x, device), make(w, device))
    check(result, ref.conv(f64(x), f64(w), None, (1, 1), (0, 0), (1, 1), 1), DType.F32, scale=10)


def test_conv_does_not_modify_inputs(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (1, 2, 4, 4), DType.F32)
    w = random_array(rng, (2, 2, 3, 3), DType.F32)
    b = random_array(rng, (2,), DType.F32)
    tx, tw, tb = make(x, device), make(w, device), make(b, device)
    module.conv2d(tx, tw, tb, ConvOptions((1, 1), (1, 1), (1, 1)))
    check(tx, x)
    check(tw, w)
    check(tb, b)


# -- unfold4d ------------------------------------------------------------------------------------------
UNFOLDS = [
    ((2, 3, 5, 6), (2, 2), UnfoldOptions()),
    ((1, 2, 7, 6), (3, 2), UnfoldOptions((2, 1), (1, 1), (1, 2))),
    ((2, 1, 4, 4), (4, 4), UnfoldOptions((1, 1), (0, 0), (1, 1))),
    ((1, 2, 6, 5), (1, 3), UnfoldOptions((3, 2), (0, 1), (1, 1))),
]


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize(("shape", "size", "options"), UNFOLDS, ids=lambda v: str(v))
def test_unfold4d(
    device: Device,
    rng: np.random.Generator,
    shape: tuple[int, ...],
    size: tuple[int, int],
    options: UnfoldOptions,
    dtype: DType,
) -> None:
    x = random_array(rng, shape, dtype)
    result = module.unfold4d(make(x, device), size, options)
    check(result, ref.unfold(f64(x), size, options.stride, options.padding, options.dilation), dtype)


def test_unfold4d_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    x = random_array(rng, (2, 3, 6, 5), DType.F64)
    expected = torch.nn.functional.unfold(
        torch.tensor(x), (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1)
    )
    result = module.unfold4d(make(x, device), (3, 2), UnfoldOptions((2, 1), (1, 0), (1, 2)))
    check(result, expected.numpy(), DType.F64)


# -- errors --------------------------------------------------------------------------------------------
def test_conv_errors(device: Device) -> None:
    own = device.backend.float_dtype  # the tensors below have the backend's default float dtype
    other = DType.F32 if own is DType.F64 else DType.F64
    x = Tensor.zeros([2, 4, 6, 6], device=device)
    w = Tensor.zeros([6, 2, 3, 3], device=device)
    with pytest.raises(ValueError, match=r"conv2d: x must have rank 4 .*got shape \[2, 4, 6\]"):
        module.conv2d(Tensor.zeros([2, 4, 6], device=device), w)
    with pytest.raises(ValueError, match=r"conv2d: weight must have rank 4"):
        module.conv2d(x, Tensor.zeros([6, 4, 3], device=device))
    with pytest.raises(TypeError, match=r"conv2d: x must be a Float tensor"):
        module.conv2d(Tensor.zeros([2, 4, 6, 6], device=device, dtype=DType.I64), w)
    with pytest.raises(TypeError, match=rf"conv2d: weight has dtype {other}, x has {own}"):
        module.conv2d(x, Tensor.zeros([6, 2, 3, 3], device=device, dtype=other))
    with pytest.raises(
        ValueError, match=r"conv2d: weight of shape \[6, 2, 3, 3\] takes 2 channels per group"
    ):
        module.conv2d(x, w)
    with pytest.raises(ValueError, match=r"conv2d: groups \(3\) must divide the input channels \(4"):
        module.conv2d(x, w, options=ConvOptions((1, 1), (0, 0), (1, 1), 3))
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \[6\]"):
        module.conv2d(x, w, Tensor.zeros([4], device=device), ConvOptions((1, 1), (0, 0), (1, 1), 2))
    with pytest.raises(ValueError, match=r"conv2d: the kernel \[3, 3\] .* is larger than the padded input"):
        module.conv2d(
            Tensor.zeros([1, 4, 2, 6], device=device), w, options=ConvOptions((1, 1), (0, 0), (1, 1), 2)
        )
    with pytest.raises(ValueError, match=r"conv2d: the kernel \[3, 3\] \(dilation \[1, 3\]"):
        module.conv2d(x, w, options=ConvOptions((1, 1), (0, 0), (1, 3), 2))
    with pytest.raises(ValueError, match=r"conv2d: stride must be >= 1"):
        module.conv2d(x, w, options=ConvOptions((0, 1), (0, 0), (1, 1), 2))
    with pytest.raises(ValueError, match=r"conv2d: padding must be an int or 2 ints"):
        module.conv2d(x, w, options=ConvOptions((1, 1), (0,), (1, 1), 2))
    with pytest.raises(ValueError, match=r"conv1d: x must have rank 3"):
        module.conv1d(x, w)
    with pytest.raises(ValueError, match=r"conv3d: x must have rank 5"):
        module.conv3d(x, w)
    with pytest.raises(TypeError, match=r"conv2d: x must be a Tensor, got ndarray"):
        module.conv2d(np.zeros((2, 4, 6, 6)), w)  # type: ignore[arg-type]


def test_unfold4d_errors(device: Device) -> None:
    x = Tensor.zeros([1, 2, 4, 4], device=device)
    with pytest.raises(ValueError, match=r"unfold4d: x must have rank 4"):
        module.unfold4d(Tensor.zeros([2, 4, 4], device=device), 2)
    with pytest.raises(ValueError, match=r"unfold4d: the kernel \[5, 2\]"):
        module.unfold4d(x, (5, 2))
    with pytest.raises(ValueError, match=r"unfold4d: kernel_size must be >= 1"):
        module.unfold4d(x, (0, 2))
