"""Pooling (``module.avg_pool1d/2d``, ``max_pool1d/2d`` with indices, ``adaptive_avg_pool1d/2d``) and the
backward kernels: values against NumPy float64 references built window by window with PyTorch's rules
(padding, ``ceil_mode``, ``count_include_pad``, first maximum on ties), backward kernels against explicit
scatters and as adjoints, PyTorch cross-checks where installed, and the errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref
from burn_backend.testing.module._reference import Array, check_adjoint, kernel

WIDE = [DType.F64, DType.F32]

# (x shape, kernel, stride, padding, count_include_pad, ceil_mode)
AVG = [
    ((2, 3, 7, 6), (2, 2), (2, 2), (0, 0), True, False),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), True, True),
    ((1, 2, 7, 6), (3, 2), (2, 1), (1, 1), False, True),
    ((2, 2, 5, 5), (3, 3), (3, 3), (1, 0), False, False),
    ((1, 1, 6, 6), (3, 3), (2, 2), (0, 0), True, True),  # the last window overhangs: divisor 2, not 3
    ((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), True, True),  # overhang past the right padding
    ((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), False, True),
    ((2, 2, 4, 9), (4, 4), (3, 4), (2, 2), False, True),
]

# (x shape, kernel, stride, padding, dilation, ceil_mode)
MAX = [
    ((2, 3, 7, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((1, 2, 8, 8), (3, 2), (2, 1), (1, 1), (2, 1), True),
    ((2, 2, 5, 6), (2, 3), (1, 2), (1, 1), (2, 2), False),
    ((1, 1, 6, 6), (3, 3), (2, 2), (0, 0), (1, 1), True),
    ((1, 3, 5, 4), (1, 1), (2, 1), (0, 0), (1, 1), False),
]

ADAPTIVE = [
    ((2, 3, 8, 6), (4, 3)),  # windows divide the input
    ((2, 3, 7, 6), (3, 4)),  # overlapping windows
    ((1, 2, 5, 6), (5, 6)),  # identity
    ((1, 2, 5, 7), (1, 1)),  # global average
    ((2, 1, 3, 4), (7, 5)),  # more outputs than inputs
]


def f64(array: Array) -> Array:
    return array.astype(np.float64)


def avg_id(case: tuple[Any, ...]) -> str:
    shape, k, s, p, include, ceil = case
    flags = ("-incl" if include else "") + ("-ceil" if ceil else "")
    return f"x{list(shape)}-k{list(k)}-s{list(s)}-p{list(p)}{flags}"


def max_id(case: tuple[Any, ...]) -> str:
    shape, k, s, p, d, ceil = case
    return f"x{list(shape)}-k{list(k)}-s{list(s)}-p{list(p)}-d{list(d)}{'-ceil' if ceil else ''}"


# -- average pooling -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", AVG, ids=avg_id)
def test_avg_pool2d(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, k, s, p, include, ceil = case
    x = random_array(rng, shape, dtype)
    result = module.avg_pool2d(make(x, device), k, s, p, include, ceil)
    check(result, ref.avg_pool(f64(x), k, s, p, include, ceil), dtype)

    g = random_array(rng, result.dims(), dtype)
    grad = kernel(device, "avg_pool2d_backward", make(x, device), make(g, device), k, s, p, include, ceil)
    check(grad, ref.avg_pool_backward(f64(x), f64(g), k, s, p, include, ceil), dtype)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", AVG, ids=avg_id)
def test_avg_pool1d(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, k, s, p, include, ceil = case
    x = random_array(rng, shape[:2] + shape[3:], dtype)
    result = module.avg_pool1d(make(x, device), k[0], s[0], p[0], include, ceil)
    check(result, ref.avg_pool(f64(x), k[:1], s[:1], p[:1], include, ceil), dtype)

    g = random_array(rng, result.dims(), dtype)
    grad = kernel(
        device, "avg_pool1d_backward", make(x, device), make(g, device), k[0], s[0], p[0], include, ceil
    )
    check(grad, ref.avg_pool_backward(f64(x), f64(g), k[:1], s[:1], p[:1], include, ceil), dtype)


def test_avg_pool_defaults_and_low_precision(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (2, 2, 6, 4), DType.F32)
    check(
        module.avg_pool2d(make(x, device), 2),
        ref.avg_pool(f64(x), (2, 2), (2, 2), (0, 0), True, False),
        DType.F32,
    )
    for dtype in (DType.F16, DType.BF16):
        require_dtype(device, dtype)
        low = random_array(rng, (2, 2, 6, 5), dtype)
        result = module.avg_pool2d(make(low, device), (3, 2), (2, 2), (1, 1), False, True)
        check(result, ref.avg_pool(f64(low), (3, 2), (2, 2), (1, 1), False, True), dtype)


def test_avg_pool_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    for shape, k, s, p, include, ceil in AVG:
        x = random_array(rng, shape, DType.F64)
        tx = torch.tensor(x, requires_grad=True)
        y = torch.nn.functional.avg_pool2d(tx, k, s, p, ceil, include)
        g = random_array(rng, tuple(y.shape), DType.F64)
        y.backward(torch.tensor(g))
        check(module.avg_pool2d(make(x, device), k, s, p, include, ceil), y.detach().numpy(), DType.F64)
        grad = kernel(device, "avg_pool2d_backward", make(x, device), make(g, device), k, s, p, include, ceil)
        check(grad, tx.grad.numpy(), DType.F64)


# -- max pooling ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", MAX, ids=max_id)
def test_max_pool2d(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, k, s, p, d, ceil = case
    x = random_array(rng, shape, dtype)
    values, indices = ref.max_pool(f64(x), k, s, p, d, ceil)
    check(module.max_pool2d(make(x, device), k, s, p, d, ceil), values, dtype)
    result, result_indices = module.max_pool2d_with_indices(make(x, device), k, s, p, d, ceil)
    check(result, values, dtype)
    check(result_indices, indices, device.backend.int_dtype)

    g = random_array(rng, values.shape, dtype)
    grad = kernel(
        device,
        "max_pool2d_with_indices_backward",
        make(x, device),
        k,
        s,
        p,
        d,
        ceil,
        make(g, device),
        result_indices,
    )
    expected = np.zeros(x.shape).reshape(shape[0] * shape[1], -1)
    np.add.at(
        expected,
        (np.arange(expected.shape[0])[:, None], indices.reshape(expected.shape[0], -1)),
        f64(g).reshape(expected.shape[0], -1),
    )
    check(grad, expected.reshape(shape), dtype)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", MAX, ids=max_id)
def test_max_pool1d(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, k, s, p, d, ceil = case
    x = random_array(rng, shape[:2] + shape[3:], dtype)
    values, indices = ref.max_pool(f64(x), k[1:], s[1:], p[1:], d[1:], ceil)
    check(module.max_pool1d(make(x, device), k[1], s[1], p[1], d[1], ceil), values, dtype)
    result, result_indices = module.max_pool1d_with_indices(make(x, device), k[1], s[1], p[1], d[1], ceil)
    check(result, values, dtype)
    check(result_indices, indices, device.backend.int_dtype)

    g = random_array(rng, values.shape, dtype)
    grad = kernel(
        device,
        "max_pool1d_with_indices_backward",
        make(x, device),
        k[1],
        s[1],
        p[1],
        d[1],
        ceil,
        make(g, device),
        result_indices,
    )
    expected = np.zeros(x.shape)
    for b, c in np.ndindex(*x.shape[:2]):
        np.add.at(expected[b, c], indices[b, c], f64(g)[b, c])
    check(grad, expected, dtype)


def test_max_pool_ties_pick_the_first_maximum(device: Device, rng: np.random.Generator) -> None:
    x = rng.integers(0, 3, (2, 2, 7, 7)).astype(np.float32)
    for k, s, p, d in (((3, 3), (1, 1), (1, 1), (1, 1)), ((2, 3), (2, 1), (1, 0), (2, 1))):
        values, indices = ref.max_pool(f64(x), k, s, p, d, True)
        result, result_indices = module.max_pool2d_with_indices(make(x, device), k, s, p, d, True)
        check(result, values, DType.F32)
        check(result_indices, indices, device.backend.int_dtype)


def test_max_pool_propagates_nan(device: Device) -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 1, 2] = np.nan
    result = module.max_pool2d(make(x, device), 2).to_numpy()
    expected = np.array([[[[5.0, np.nan], [13.0, 15.0]]]])
    np.testing.assert_array_equal(result, expected)
    values, _ = module.max_pool2d_with_indices(make(x, device), 2)
    np.testing.assert_array_equal(values.to_numpy(), expected)


def test_max_pool_low_precision(device: Device, rng: np.random.Generator) -> None:
    for dtype in (DType.F16, DType.BF16):
        require_dtype(device, dtype)
        x = random_array(rng, (1, 2, 6, 5), dtype)
        values, indices = ref.max_pool(f64(x), (3, 2), (2, 1), (1, 1), (1, 2), True)
        result, result_indices = module.max_pool2d_with_indices(
            make(x, device), (3, 2), (2, 1), (1, 1), (1, 2), True
        )
        check(result, values, dtype)
        check(result_indices, indices, device.backend.int_dtype)


def test_max_pool_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    for shape, k, s, p, d, ceil in MAX:
        x = random_array(rng, shape, DType.F64)
        tx = torch.tensor(x, requires_grad=True)
        y, indices = torch.nn.functional.max_pool2d(tx, k, s, p, d, ceil, return_indices=True)
        g = random_array(rng, tuple(y.shape), DType.F64)
        y.backward(torch.tensor(g))
        values, ours = module.max_pool2d_with_indices(make(x, device), k, s, p, d, ceil)
        check(values, y.detach().numpy(), DType.F64)
        check(ours, indices.numpy(), device.backend.int_dtype)
        grad = kernel(
            device,
            "max_pool2d_with_indices_backward",
            make(x, device),
            k,
            s,
            p,
            d,
            ceil,
            make(g, device),
            ours,
        )
        check(grad, tx.grad.numpy(), DType.F64)


# -- adaptive average pooling --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize(("shape", "out"), ADAPTIVE, ids=lambda v: str(list(v)))
def test_adaptive_avg_pool2d(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], out: tuple[int, ...], dtype: DType
) -> None:
    x = random_array(rng, shape, dtype)
    result = module.adaptive_avg_pool2d(make(x, device), out)
    check(result, ref.adaptive_avg_pool(f64(x), out), dtype)

    g = random_array(rng, result.dims(), dtype)
    grad = kernel(device, "adaptive_avg_pool2d_backward", make(x, device), make(g, device))
    check_adjoint(
        ref.adaptive_avg_pool(f64(x), out), f64(g), f64(x), grad, 1e-12 if dtype is DType.F64 else 1e-5
    )


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize(("shape", "out"), ADAPTIVE, ids=lambda v: str(list(v)))
def test_adaptive_avg_pool1d(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], out: tuple[int, ...], dtype: DType
) -> None:
    x = random_array(rng, shape[:2] + shape[3:], dtype)
    result = module.adaptive_avg_pool1d(make(x, device), out[1])
    check(result, ref.adaptive_avg_pool(f64(x), out[1:]), dtype)

    g = random_array(rng, result.dims(), dtype)
    grad = kernel(device, "adaptive_avg_pool1d_backward", make(x, device), make(g, device))
    check_adjoint(
        ref.adaptive_avg_pool(f64(x), out[1:]), f64(g), f64(x), grad, 1e-12 if dtype is DType.F64 else 1e-5
    )


def test_adaptive_avg_pool_keeps_infinities_local(device: Device) -> None:
    x = np.zeros((1, 1, 5, 5), dtype=np.float32)
    x[0, 0, 0, 0] = np.inf
    result = module.adaptive_avg_pool2d(make(x, device), (3, 3)).to_numpy()
    expected = np.zeros((1, 1, 3, 3), dtype=np.float32)
    expected[0, 0, 0, 0] = np.inf
    np.testing.assert_array_equal(result, expected)


def test_adaptive_avg_pool_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    for shape, out in ADAPTIVE:
        x = random_array(rng, shape, DType.F64)
        tx = torch.tensor(x, requires_grad=True)
        y = torch.nn.functional.adaptive_avg_pool2d(tx, out)
        g = random_array(rng, tuple(y.shape), DType.F64)
        y.backward(torch.tensor(g))
        check(module.adaptive_avg_pool2d(make(x, device), out), y.detach().numpy(), DType.F64)
        grad = kernel(device, "adaptive_avg_pool2d_backward", make(x, device), make(g, device))
        check(grad, tx.grad.numpy(), DType.F64)
        x1 = random_array(rng, shape[:2] + shape[3:], DType.F64)
        t1 = torch.tensor(x1, requires_grad=True)
        y1 = torch.nn.functional.adaptive_avg_pool1d(t1, out[1])
        g1 = random_array(rng, tuple(y1.shape), DType.F64)
        y1.backward(torch.tensor(g1))
        grad1 = kernel(device, "adaptive_avg_pool1d_backward", make(x1, device), make(g1, device))
        check(grad1, t1.grad.numpy(), DType.F64)


def test_adaptive_avg_pool_low_precision(device: Device, rng: np.random.Generator) -> None:
    for dtype in (DType.F16, DType.BF16):
        require_dtype(device, dtype)
        x = random_array(rng, (1, 2, 7, 6), dtype)
        check(module.adaptive_avg_pool2d(make(x, device), 3), ref.adaptive_avg_pool(f64(x), (3, 3)), dtype)


# -- errors --------------------------------------------------------------------------------------------
def test_pool_errors(device: Device) -> None:
    x = Tensor.zeros([1, 2, 5, 5], device=device)
    with pytest.raises(ValueError, match=r"avg_pool2d: x must have rank 4"):
        module.avg_pool2d(Tensor.zeros([2, 5, 5], device=device), 2)
    with pytest.raises(
        ValueError, match=r"max_pool2d: padding \[2, 2\] must be at most half the kernel size \[3, 3\]"
    ):
        module.max_pool2d(x, 3, 1, 2)
    with pytest.raises(ValueError, match=r"max_pool2d: kernel_size must be >= 1"):
        module.max_pool2d(x, (0, 2))
    with pytest.raises(ValueError, match=r"max_pool2d: stride must be >= 1"):
        module.max_pool2d(x, 2, 0)
    with pytest.raises(
        ValueError, match=r"avg_pool2d: the kernel \[6, 2\] .* is larger than the padded input"
    ):
        module.avg_pool2d(x, (6, 2))
    with pytest.raises(ValueError, match=r"max_pool1d: the kernel \[3\] \(dilation \[3\]"):
        module.max_pool1d(Tensor.zeros([1, 2, 5], device=device), 3, dilation=3)
    with pytest.raises(TypeError, match=r"avg_pool1d: x must be a Float tensor"):
        module.avg_pool1d(Tensor.zeros([1, 2, 5], device=device, dtype=DType.I64), 2)
    with pytest.raises(ValueError, match=r"max_pool2d_with_indices: kernel_size must be an int or 2 ints"):
        module.max_pool2d_with_indices(x, (2, 2, 2))
    with pytest.raises(ValueError, match=r"adaptive_avg_pool2d: output_size must be >= 1"):
        module.adaptive_avg_pool2d(x, (0, 2))
    with pytest.raises(ValueError, match=r"adaptive_avg_pool1d: x must have rank 3"):
        module.adaptive_avg_pool1d(x, 2)
    with pytest.raises(ValueError, match=r"adaptive_avg_pool2d: x must not be empty"):
        module.adaptive_avg_pool2d(Tensor.zeros([1, 2, 0, 5], device=device), 2)
