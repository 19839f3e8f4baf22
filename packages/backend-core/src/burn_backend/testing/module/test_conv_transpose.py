"""Transposed convolutions (``module.conv_transpose1d/2d/3d``) and their backward kernels: values against a
NumPy float64 reference that scatters every input sample, backward kernels as adjoints of the forward
(and against PyTorch where installed), and the errors of the public functions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from burn_backend import ConvTransposeOptions, Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref
from burn_backend.testing.module._reference import Array, at, check_adjoint, kernel


@dataclass(frozen=True)
class ConvT:
    x: tuple[int, ...]
    weight: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    bias: bool = True

    @property
    def n(self) -> int:
        return len(self.x) - 2

    @property
    def options(self) -> ConvTransposeOptions:
        return ConvTransposeOptions(self.stride, self.padding, self.padding_out, self.dilation, self.groups)

    def __str__(self) -> str:
        return (
            f"{self.n}d-x{list(self.x)}-w{list(self.weight)}-s{list(self.stride)}-p{list(self.padding)}"
            f"-po{list(self.padding_out)}-d{list(self.dilation)}-g{self.groups}{'-bias' if self.bias else ''}"
        )


CASES = [
    ConvT((2, 4, 5), (4, 3, 3), (2,), (1,), (1,), (1,), groups=2),
    ConvT((1, 2, 6), (2, 3, 2), (1,), (0,), (0,), (2,), bias=False),
    ConvT((2, 4, 4, 5), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), (1, 2), groups=2),
    ConvT((1, 3, 3, 3), (3, 2, 3, 3), (1, 1), (1, 1), (0, 0), (1, 1)),  # "same" size
    ConvT((2, 2, 2, 3), (2, 1, 4, 4), (2, 2), (1, 1), (0, 0), (1, 1), groups=2, bias=False),  # depthwise x2
    ConvT((1, 2, 3, 3, 2), (2, 2, 2, 3, 2), (1, 2, 2), (0, 1, 0), (0, 1, 1), (2, 1, 1)),
]


def f64(array: Array) -> Array:
    return array.astype(np.float64)


def f64_or_none(array: Array | None) -> Array | None:
    return None if array is None else f64(array)


def inputs(rng: np.random.Generator, case: ConvT, dtype: DType) -> tuple[Array, Array, Array | None]:
    x = random_array(rng, case.x, dtype, -1.0, 1.0)
    w = random_array(rng, case.weight, dtype, -1.0, 1.0)
    b = random_array(rng, (case.weight[1] * case.groups,), dtype, -1.0, 1.0) if case.bias else None
    return x, w, b


def expected(case: ConvT, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    return ref.conv_transpose(
        f64(x),
        f64(w),
        f64_or_none(b),
        case.stride,
        case.padding,
        case.padding_out,
        case.dilation,
        case.groups,
    )


def forward(case: ConvT, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    return getattr(module, f"conv_transpose{case.n}d")(x, w, b, case.options)  # type: ignore[no-any-return]


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv_transpose_matches_reference(
    device: Device, rng: np.random.Generator, case: ConvT, dtype: DType
) -> None:
    x, w, b = inputs(rng, case, dtype)
    result = forward(case, make(x, device), make(w, device), None if b is None else make(b, device))
    check(result, expected(case, x, w, b), dtype, scale=10)


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16], ids=str)
def test_conv_transpose_low_precision(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    case = CASES[2]
    x, w, b = inputs(rng, case, dtype)
    result = forward(case, make(x, device), make(w, device), make(b, device))
    check(result, expected(case, x, w, b), dtype, scale=4)


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv_transpose_backward_kernels(
    device: Device, rng: np.random.Generator, case: ConvT, dtype: DType
) -> None:
    x, w, _ = inputs(rng, case, dtype)
    y = expected(case, x, w, None)
    g = random_array(rng, y.shape, dtype, -1.0, 1.0)
    tx, tw, tg = make(x, device), make(w, device), make(g, device)
    n = case.n
    tolerance = 1e-12 if dtype is DType.F64 else 1e-5

    x_grad = kernel(device, f"conv_transpose{n}d_x_backward", tw, tg, case.options)
    # the adjoint of scattering x * w is gathering g * w: a convolution of g
    expected_x = ref.conv(f64(g), f64(w), None, case.stride, case.padding, case.dilation, case.groups)
    expected_x = expected_x[at(slice(None), slice(None), *(slice(0, s) for s in case.x[2:]))]
    check(x_grad, expected_x, dtype, scale=10)
    check_adjoint(y, f64(g), f64(x), x_grad, tolerance)

    w_grad = kernel(device, f"conv_transpose{n}d_weight_backward", tx, tw, tg, case.options)
    assert w_grad.dims() == list(case.weight)
    check_adjoint(y, f64(g), f64(w), w_grad, tolerance)

    channels = case.weight[1] * case.groups
    b_grad = kernel(
        device, f"conv_transpose{n}d_bias_backward", tx, make(np.zeros(channels, dtype.numpy), device), tg
    )
    check(b_grad, f64(g).sum(axis=(0, *range(2, 2 + n))), dtype, scale=10)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[5]], ids=str)
def test_conv_transpose_matches_torch(device: Device, rng: np.random.Generator, case: ConvT) -> None:
    torch = pytest.importorskip("torch")
    x, w, b = inputs(rng, case, DType.F64)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    function = getattr(torch.nn.functional, f"conv_transpose{case.n}d")
    y = function(tx, tw, tb, case.stride, case.padding, case.padding_out, case.groups, case.dilation)
    g = random_array(rng, tuple(y.shape), DType.F64)
    y.backward(torch.tensor(g))
    check(forward(case, make(x, device), make(w, device), make(b, device)), y.detach().numpy(), DType.F64)
    n = case.n
    check(
        kernel(device, f"conv_transpose{n}d_x_backward", make(w, device), make(g, device), case.options),
        tx.grad.numpy(),
        DType.F64,
    )
    args = (make(x, device), make(w, device), make(g, device), case.options)
    check(kernel(device, f"conv_transpose{n}d_weight_backward", *args), tw.grad.numpy(), DType.F64)
    check(
        kernel(device, f"conv_transpose{n}d_bias_backward", args[0], make(b, device), args[2]),
        tb.grad.numpy(),
        DType.F64,
    )


def test_conv_transpose_default_options(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (1, 2, 3, 4), DType.F32)
    w = random_array(rng, (2, 3, 2, 2), DType.F32)
    result = module.conv_transpose2d(make(x, device), make(w, device))
    check(
        result,
        ref.conv_transpose(f64(x), f64(w), None, (1, 1), (0, 0), (0, 0), (1, 1), 1),
        DType.F32,
        scale=10,
    )


def test_conv_transpose_errors(device: Device) -> None:
    x = Tensor.zeros([1, 4, 3, 3], device=device)
    w = Tensor.zeros([4, 2, 3, 3], device=device)
    options = ConvTransposeOptions((2, 2), (0, 0), (0, 0), (1, 1), 2)
    with pytest.raises(
        ValueError, match=r"conv_transpose2d: weight of shape \[2, 2, 3, 3\] takes 2 input channels"
    ):
        module.conv_transpose2d(x, Tensor.zeros([2, 2, 3, 3], device=device))
    with pytest.raises(
        ValueError, match=r"conv_transpose2d: groups \(3\) must divide the input channels \(4"
    ):
        module.conv_transpose2d(x, w, options=ConvTransposeOptions((1, 1), (0, 0), (0, 0), (1, 1), 3))
    with pytest.raises(
        ValueError, match=r"conv_transpose2d: padding_out \[2, 0\] must be smaller than the stride"
    ):
        module.conv_transpose2d(x, w, options=ConvTransposeOptions((2, 2), (0, 0), (2, 0), (1, 1), 2))
    with pytest.raises(ValueError, match=r"conv_transpose2d: bias must have shape \[4\]"):
        module.conv_transpose2d(x, w, Tensor.zeros([2], device=device), options)
    with pytest.raises(ValueError, match=r"conv_transpose2d: the output would be empty"):
        module.conv_transpose2d(
            Tensor.zeros([1, 4, 1, 1], device=device),
            w,
            options=ConvTransposeOptions((1, 1), (2, 2), (0, 0), (1, 1)),
        )
    with pytest.raises(ValueError, match=r"conv_transpose1d: x must have rank 3"):
        module.conv_transpose1d(x, w)
    with pytest.raises(TypeError, match=r"conv_transpose3d: weight must be a Float tensor"):
        module.conv_transpose3d(
            Tensor.zeros([1, 4, 3, 3, 3], device=device),
            Tensor.zeros([4, 2, 3, 3, 3], device=device, dtype=DType.I32),
        )
