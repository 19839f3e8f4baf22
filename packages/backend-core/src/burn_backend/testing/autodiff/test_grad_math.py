"""Gradients of element-wise math: exponentials, logarithms, roots, trigonometric and hyperbolic
functions and their inverses, erf, the rounding functions (zero gradients) and casts between float
dtypes."""

from __future__ import annotations

import math
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


SHAPES = [(5,), (1,), (2, 3), (2, 1, 3), (1, 4, 1)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]

# name -> (low, high): an interval inside the domain, away from poles and branch points
DOMAINS: dict[str, tuple[float, float]] = {
    "exp": (-2.0, 2.0),
    "log": (0.2, 3.0),
    "log1p": (-0.7, 2.0),
    "sqrt": (0.2, 3.0),
    "sin": (-3.0, 3.0),
    "cos": (-3.0, 3.0),
    "tan": (-1.2, 1.2),
    "sinh": (-2.0, 2.0),
    "cosh": (-2.0, 2.0),
    "tanh": (-2.0, 2.0),
    "asin": (-0.9, 0.9),
    "acos": (-0.9, 0.9),
    "atan": (-3.0, 3.0),
    "asinh": (-3.0, 3.0),
    "acosh": (1.2, 3.0),
    "atanh": (-0.9, 0.9),
    "erf": (-2.0, 2.0),
    "erfinv": (-0.9, 0.9),
}


def torch_unary(name: str) -> Callable[[Any], Any]:
    def apply(tensor: Any) -> Any:
        torch = pytest.importorskip("torch")
        return getattr(torch, name)(tensor)

    return apply


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("name", DOMAINS)
def test_unary(ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> None:
    low, high = DOMAINS[name]
    gradcheck(
        ad_device,
        lambda a: getattr(a, name)(),
        [rng.uniform(low, high, shape)],
        rng,
        torch_function=torch_unary(name),
    )


@pytest.mark.parametrize("name", DOMAINS)
def test_unary_of_a_computed_input(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    low, high = DOMAINS[name]
    middle, half = (low + high) / 2, (high - low) / 2
    x = rng.uniform(-0.9, 0.9, (2, 3))
    function = torch_unary(name)
    gradcheck(
        ad_device,
        lambda a: getattr(a * half + middle, name)() * a,
        [x],
        rng,
        torch_function=lambda a: function(a * half + middle) * a,
    )


EXACT: dict[str, tuple[list[float], Callable[[Array], Array]]] = {
    "exp": ([0.0, 1.0, -1.0], np.exp),
    "log": ([1.0, 2.0, 0.5], lambda x: 1.0 / x),
    "sqrt": ([4.0, 1.0, 0.25], lambda x: 0.5 / np.sqrt(x)),
    "sin": ([0.0, np.pi / 2, np.pi], np.cos),
    "cos": ([0.0, np.pi / 2, np.pi], lambda x: -np.sin(x)),
    "tanh": ([0.0, 1.0, -2.0], lambda x: 1.0 - np.tanh(x) ** 2),
    "atan": ([0.0, 1.0, -2.0], lambda x: 1.0 / (1.0 + x * x)),
    "erf": ([0.0, 1.0, -0.5], lambda x: 2.0 / np.sqrt(np.pi) * np.exp(-x * x)),
    # at erf(1) and erf(-0.5): the derivative is sqrt(pi)/2 exp(x^2) at the x whose erf it is
    "erfinv": (
        [0.0, math.erf(1.0), math.erf(-0.5)],
        lambda y: np.sqrt(np.pi) / 2 * np.exp(np.array([0.0, 1.0, 0.25])),
    ),
}


@pytest.mark.parametrize("name", EXACT)
def test_unary_gradient_values(ad_device: Device, name: str) -> None:
    values, derivative = EXACT[name]
    x = Tensor.from_data(np.array(values), ad_device, DType.F64).require_grad()
    grads = getattr(x, name)().sum().backward()
    np.testing.assert_allclose(
        grad_of(x, grads).to_numpy(), derivative(np.array(values)), rtol=1e-14, atol=1e-15
    )


def rounding_inputs(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values whose fractional parts stay away from 0 and 1/2, where the rounding functions jump."""
    whole = rng.integers(-3, 4, shape).astype(np.float64)
    fraction = rng.choice([0.15, 0.35, 0.65, 0.85], shape) + rng.uniform(-0.05, 0.05, shape)
    return whole + fraction


@pytest.mark.parametrize("shape", SHAPES[:4], ids=SHAPE_IDS[:4])
@pytest.mark.parametrize("name", ["round", "floor", "ceil", "trunc"])
def test_rounding_has_a_zero_gradient(
    ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...]
) -> None:
    grads = gradcheck(
        ad_device,
        lambda a: getattr(a, name)(),
        [rounding_inputs(rng, shape)],
        rng,
        torch_function=torch_unary(name),
    )
    assert not grads[0].any()


@pytest.mark.parametrize("name", ["round", "floor", "ceil", "trunc"])
def test_rounding_in_a_product(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    x = rounding_inputs(rng, (3, 4))
    function = torch_unary(name)
    grads = gradcheck(
        ad_device, lambda a: getattr(a, name)() * a, [x], rng, torch_function=lambda a: function(a) * a
    )
    assert grads[0].shape == x.shape


def test_composition_of_math_functions(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device,
        lambda a: (a.sin().exp() + a.cos().square()).log() * a.tanh() + a.atan().sqrt(),
        [rng.uniform(0.2, 2.0, (3, 4))],
        rng,
        torch_function=lambda a: (a.sin().exp() + a.cos().square()).log() * a.tanh() + a.atan().sqrt(),
    )


def test_inverse_functions_compose_to_the_identity(ad_device: Device, rng: np.random.Generator) -> None:
    grads = gradcheck(
        ad_device,
        lambda a: a.tanh().atanh() + a.sinh().asinh() + a.exp().log() - a * 2.0,
        [rng.uniform(-1.0, 1.0, (6,))],
        rng,
        torch_function=lambda a: a.tanh().atanh() + a.sinh().asinh() + a.exp().log() - a * 2.0,
    )
    assert grads[0].shape == (6,)


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 1, 2)], ids=["5", "2x3", "2x1x2"])
def test_cast_to_f32_and_back(ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    x = rng.uniform(-1.0, 1.0, shape)
    # the round trip through f32 only keeps about seven digits: finite differences need a wider step;
    # only correctly rounded f32 ops, so that torch agrees to the last bit
    gradcheck(
        ad_device,
        lambda a: ((a * 3.0).cast(DType.F32).square() + 1.0).cast(DType.F64) * a,
        [x],
        rng,
        torch_function=lambda a: ((a * 3.0).float().square() + 1.0).double() * a,
        eps=1e-3,
        rtol=1e-3,
        atol=1e-3,
    )


def test_cast_gradient_has_the_dtype_of_the_input(ad_device: Device) -> None:
    x = Tensor.from_data([0.5, 1.5, -2.0], ad_device, DType.F32).require_grad()
    y = x.cast(DType.F64)
    assert y.dtype is DType.F64
    grads = (y * y).sum().backward()
    gradient = grad_of(x, grads)
    assert gradient.dtype is DType.F32
    assert gradient.tolist() == [1.0, 3.0, -4.0]


def test_cast_from_f64_gives_an_f64_gradient(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([0.1, 0.2]), ad_device, DType.F64).require_grad()
    grads = (x.cast(DType.F32) * 2.0).sum().backward()
    gradient = grad_of(x, grads)
    assert gradient.dtype is DType.F64
    assert gradient.tolist() == [2.0, 2.0]


def test_f32_gradients(ad_device: Device, rng: np.random.Generator) -> None:
    values = rng.uniform(0.5, 2.0, (4,)).astype(np.float32)
    x = Tensor.from_data(values, ad_device, DType.F32).require_grad()
    grads = (x.log() * x.sqrt()).sum().backward()
    gradient = grad_of(x, grads)
    assert gradient.dtype is DType.F32
    expected = (1.0 / np.sqrt(values.astype(np.float64))) * (1.0 + np.log(values.astype(np.float64)) / 2.0)
    np.testing.assert_allclose(gradient.to_numpy(), expected, rtol=1e-5)
