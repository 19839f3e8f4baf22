"""Gradients of reductions: sums, means, products (with zeros), extremes (with and without indices),
running sums, products and extremes, variances, sorting and top-k."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Gradients, Tensor
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]


def grad_of(tensor: Tensor, grads: Gradients) -> Tensor:
    """``tensor``'s gradient, which must exist."""
    result = tensor.grad(grads)
    assert result is not None, "no gradient"
    return result


SHAPES = [(6,), (1,), (3, 4), (2, 3, 4), (3, 1, 2)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]
DIM_CASES = [
    ((6,), 0),
    ((6,), -1),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), -2),
    ((2, 3, 4), 1),
    ((2, 3, 4), -1),
    ((2, 3, 4), 0),
    ((3, 1, 2), 1),
]
DIM_IDS = ["x".join(map(str, shape)) + f"-dim{dim}" for shape, dim in DIM_CASES]
LONG_DIM_CASES = [case for case in DIM_CASES if case[0][case[1]] > 1]
LONG_DIM_IDS = [i for case, i in zip(DIM_CASES, DIM_IDS) if case[0][case[1]] > 1]


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values at least 0.3 apart (no ties, also after a finite-difference step), of both signs."""
    count = int(np.prod(shape))
    spaced = rng.permutation(count) * 0.5 + rng.uniform(-0.1, 0.1, count) - count / 4
    return spaced.reshape(shape)


def distinct_magnitudes(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values whose absolute values are distinct and away from zero, of both signs."""
    count = int(np.prod(shape))
    magnitudes = (rng.permutation(count) + 1) * 0.3 + rng.uniform(-0.05, 0.05, count)
    values: Array = (magnitudes * rng.choice([-1.0, 1.0], count)).reshape(shape)
    return values


def factors(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values in ±[0.5, 1.5]: products of a few stay moderate."""
    values: Array = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    return values


def torch_module() -> Any:
    return pytest.importorskip("torch")


# -- whole-tensor reductions ----------------------------------------------------------------------
WHOLE: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Array]]] = {
    "sum": (lambda a: a.sum(), lambda a: a.sum().reshape(1), distinct),
    "mean": (lambda a: a.mean(), lambda a: a.mean().reshape(1), distinct),
    "prod": (lambda a: a.prod(), lambda a: a.prod().reshape(1), factors),
    "max": (lambda a: a.max(), lambda a: a.max().reshape(1), distinct),
    "min": (lambda a: a.min(), lambda a: a.min().reshape(1), distinct),
    "max_abs": (lambda a: a.max_abs(), lambda a: a.abs().max().reshape(1), distinct_magnitudes),
}


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("name", WHOLE)
def test_whole_reduction(
    ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...]
) -> None:
    function, torch_function, sampler = WHOLE[name]
    gradcheck(ad_device, function, [sampler(rng, shape)], rng, torch_function=torch_function)


@pytest.mark.parametrize("name", ["max", "min", "max_abs"])
def test_extreme_gradient_goes_to_the_extreme(ad_device: Device, name: str) -> None:
    x = Tensor.from_data(np.array([[1.0, -5.0], [4.0, 2.0]]), ad_device, DType.F64).require_grad()
    grads = (getattr(x, name)() * 3.0).sum().backward()
    position = {"max": (1, 0), "min": (0, 1), "max_abs": (0, 1)}[name]
    expected = np.zeros((2, 2))
    expected[position] = 3.0 if name != "max_abs" else -3.0
    assert grad_of(x, grads).tolist() == expected.tolist()


# -- reductions along a dim -----------------------------------------------------------------------
ALONG: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Array]]] = {
    "sum_dim": (lambda a, d: a.sum_dim(d), lambda a, d: a.sum(d, keepdim=True), distinct),
    "mean_dim": (lambda a, d: a.mean_dim(d), lambda a, d: a.mean(d, keepdim=True), distinct),
    "prod_dim": (lambda a, d: a.prod_dim(d), lambda a, d: a.prod(d, keepdim=True), factors),
    "max_dim": (lambda a, d: a.max_dim(d), lambda a, d: a.amax(d, keepdim=True), distinct),
    "min_dim": (lambda a, d: a.min_dim(d), lambda a, d: a.amin(d, keepdim=True), distinct),
    "max_abs_dim": (
        lambda a, d: a.max_abs_dim(d),
        lambda a, d: a.abs().amax(d, keepdim=True),
        distinct_magnitudes,
    ),
    "var_bias": (lambda a, d: a.var_bias(d), lambda a, d: a.var(d, keepdim=True, correction=0), distinct),
    "cumsum": (lambda a, d: a.cumsum(d), lambda a, d: a.cumsum(d), distinct),
    "cumprod": (lambda a, d: a.cumprod(d), lambda a, d: a.cumprod(d), factors),
    "cummax": (lambda a, d: a.cummax(d), lambda a, d: a.cummax(d).values, distinct),
    "cummin": (lambda a, d: a.cummin(d), lambda a, d: a.cummin(d).values, distinct),
    "sort": (lambda a, d: a.sort(d), lambda a, d: a.sort(d).values, distinct),
    "sort_descending": (
        lambda a, d: a.sort_descending(d),
        lambda a, d: a.sort(d, descending=True).values,
        distinct,
    ),
    "sort_with_indices": (
        lambda a, d: a.sort_with_indices(d)[0],
        lambda a, d: a.sort(d).values,
        distinct,
    ),
    "max_dim_with_indices": (
        lambda a, d: a.max_dim_with_indices(d)[0],
        lambda a, d: a.max(d, keepdim=True).values,
        distinct,
    ),
    "min_dim_with_indices": (
        lambda a, d: a.min_dim_with_indices(d)[0],
        lambda a, d: a.min(d, keepdim=True).values,
        distinct,
    ),
}


@pytest.mark.parametrize(("shape", "dim"), DIM_CASES, ids=DIM_IDS)
@pytest.mark.parametrize("name", ALONG)
def test_reduction_along_a_dim(
    ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...], dim: int
) -> None:
    function, torch_function, sampler = ALONG[name]
    gradcheck(ad_device, function, [sampler(rng, shape)], rng, torch_function=torch_function, constants=[dim])


@pytest.mark.parametrize(("shape", "dim"), LONG_DIM_CASES, ids=LONG_DIM_IDS)
def test_var(ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int) -> None:
    gradcheck(
        ad_device,
        lambda a: a.var(dim),
        [distinct(rng, shape)],
        rng,
        torch_function=lambda a: a.var(dim, keepdim=True),
    )


@pytest.mark.parametrize("biased", [False, True])
@pytest.mark.parametrize(
    ("shape", "dim"), [((5,), 0), ((3, 4), 1), ((2, 3, 2), -2)], ids=["5-0", "3x4-1", "2x3x2--2"]
)
def test_var_mean(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, biased: bool
) -> None:
    def function(a: Tensor) -> Tensor:
        variance, mean = a.var_mean_bias(dim) if biased else a.var_mean(dim)
        return variance * mean + mean

    def torch_function(a: Any) -> Any:
        variance, mean = torch_module().var_mean(a, dim, keepdim=True, correction=0 if biased else 1)
        return variance * mean + mean

    gradcheck(ad_device, function, [distinct(rng, shape)], rng, torch_function=torch_function)


@pytest.mark.parametrize(("shape", "dim"), DIM_CASES[:6], ids=DIM_IDS[:6])
@pytest.mark.parametrize("name", ["max", "min"])
def test_extreme_indices(
    ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...], dim: int
) -> None:
    values = distinct(rng, shape)
    x = Tensor.from_data(values, ad_device, DType.F64).require_grad()
    extremes, indices = getattr(x, f"{name}_dim_with_indices")(dim)
    expected = getattr(np, f"arg{name}")(values, axis=dim)
    assert indices.to_numpy().tolist() == np.expand_dims(expected, dim).tolist()
    grads = extremes.sum().backward()
    one_hot = np.zeros(shape)
    np.put_along_axis(one_hot, np.expand_dims(expected, dim), 1.0, axis=dim)
    assert grad_of(x, grads).tolist() == one_hot.tolist()


# -- products with zeros --------------------------------------------------------------------------
ZERO_PATTERNS = {
    "one-zero": [(0, 1)],
    "two-zeros-in-a-row": [(1, 0), (1, 3)],
    "zeros-in-two-rows": [(0, 0), (2, 3)],
    "first-and-last": [(0, 0), (0, 3), (2, 1)],
}


def with_zeros(rng: np.random.Generator, pattern: list[tuple[int, int]]) -> Array:
    values = factors(rng, (3, 4))
    for position in pattern:
        values[position] = 0.0
    return values


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("pattern", ZERO_PATTERNS)
def test_prod_dim_with_zeros(ad_device: Device, rng: np.random.Generator, pattern: str, dim: int) -> None:
    gradcheck(
        ad_device,
        lambda a: a.prod_dim(dim),
        [with_zeros(rng, ZERO_PATTERNS[pattern])],
        rng,
        torch_function=lambda a: a.prod(dim, keepdim=True),
    )


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("pattern", ZERO_PATTERNS)
def test_cumprod_with_zeros(ad_device: Device, rng: np.random.Generator, pattern: str, dim: int) -> None:
    gradcheck(
        ad_device,
        lambda a: a.cumprod(dim),
        [with_zeros(rng, ZERO_PATTERNS[pattern])],
        rng,
        torch_function=lambda a: a.cumprod(dim),
    )


@pytest.mark.parametrize(
    "zeros", [[0], [5], [2], [1, 3], [0, 5]], ids=["first", "last", "middle", "two", "ends"]
)
@pytest.mark.parametrize("name", ["prod", "cumprod"])
def test_products_of_a_vector_with_zeros(
    ad_device: Device, rng: np.random.Generator, name: str, zeros: list[int]
) -> None:
    values = factors(rng, (6,))
    values[zeros] = 0.0
    function = (lambda a: a.prod()) if name == "prod" else (lambda a: a.cumprod(0))
    torch_function = (lambda a: a.prod().reshape(1)) if name == "prod" else (lambda a: a.cumprod(0))
    gradcheck(ad_device, function, [values], rng, torch_function=torch_function)


def test_prod_gradient_values_with_a_zero(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([2.0, 0.0, 3.0, 4.0]), ad_device, DType.F64).require_grad()
    grads = x.prod().sum().backward()
    assert grad_of(x, grads).tolist() == [0.0, 24.0, 0.0, 0.0]


def test_cumprod_gradient_values_with_a_zero(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([2.0, 0.0, 3.0]), ad_device, DType.F64).require_grad()
    # out = [x0, x0 x1, x0 x1 x2]; d/dx1 of the sum is x0 + x0 x2
    grads = x.cumprod(0).sum().backward()
    assert grad_of(x, grads).tolist() == [1.0, 8.0, 0.0]


# -- running extremes -----------------------------------------------------------------------------
def test_cummax_gradient_goes_to_the_running_maximum(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([1.0, 3.0, 2.0, 5.0, 4.0]), ad_device, DType.F64).require_grad()
    grads = x.cummax(0).sum().backward()
    assert grad_of(x, grads).tolist() == [1.0, 2.0, 0.0, 2.0, 0.0]


def test_cummin_gradient_goes_to_the_running_minimum(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([[3.0, 1.0], [4.0, 0.5], [2.0, 2.0]]), ad_device, DType.F64).require_grad()
    grads = x.cummin(0).sum().backward()
    assert grad_of(x, grads).tolist() == [[2.0, 1.0], [0.0, 2.0], [1.0, 0.0]]


# -- sorting and top-k ----------------------------------------------------------------------------
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(("shape", "dim"), DIM_CASES[:6], ids=DIM_IDS[:6])
def test_sort_indices_match_the_gradient(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, descending: bool
) -> None:
    values = distinct(rng, shape)
    x = Tensor.from_data(values, ad_device, DType.F64).require_grad()
    ordered, indices = x.sort_with_indices(dim, descending)
    order = np.argsort(-values if descending else values, axis=dim)
    assert indices.to_numpy().tolist() == order.tolist()
    weights = rng.uniform(0.5, 1.5, shape)
    grads = (ordered * Tensor.from_data(weights, ad_device, DType.F64)).sum().backward()
    expected = np.zeros(shape)
    np.put_along_axis(expected, order, weights, axis=dim)
    np.testing.assert_array_equal(grad_of(x, grads).to_numpy(), expected)


TOPK_CASES = [
    ((6,), 1, -1),
    ((6,), 3, 0),
    ((6,), 6, 0),
    ((3, 4), 2, 1),
    ((3, 4), 2, 0),
    ((2, 3, 4), 3, -1),
    ((2, 3, 4), 1, 1),
]


@pytest.mark.parametrize(
    ("shape", "k", "dim"), TOPK_CASES, ids=["x".join(map(str, s)) + f"-k{k}-dim{d}" for s, k, d in TOPK_CASES]
)
def test_topk(ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], k: int, dim: int) -> None:
    gradcheck(
        ad_device,
        lambda a: a.topk(k, dim),
        [distinct(rng, shape)],
        rng,
        torch_function=lambda a: a.topk(k, dim).values,
    )


@pytest.mark.parametrize(("shape", "k", "dim"), TOPK_CASES[:4], ids=[f"case{i}" for i in range(4)])
def test_topk_with_indices(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], k: int, dim: int
) -> None:
    values = distinct(rng, shape)
    gradcheck(
        ad_device,
        lambda a: a.topk_with_indices(k, dim)[0],
        [values],
        rng,
        torch_function=lambda a: a.topk(k, dim).values,
    )
    x = Tensor.from_data(values, ad_device, DType.F64).require_grad()
    _, indices = x.topk_with_indices(k, dim)
    expected = np.take(np.argsort(-values, axis=dim), range(k), axis=dim)
    assert indices.to_numpy().tolist() == expected.tolist()


def test_reductions_compose(ad_device: Device, rng: np.random.Generator) -> None:
    def function(a: Tensor) -> Tensor:
        return a.sum_dim(1) * a.max_dim(1) + a.cumsum(1).mean_dim(1) - a.prod_dim(1) * a.var(1)

    def torch_function(a: Any) -> Any:
        return (
            a.sum(1, keepdim=True) * a.amax(1, keepdim=True)
            + a.cumsum(1).mean(1, keepdim=True)
            - a.prod(1, keepdim=True) * a.var(1, keepdim=True)
        )

    gradcheck(ad_device, function, [distinct(rng, (3, 4)) / 3.0], rng, torch_function=torch_function)
