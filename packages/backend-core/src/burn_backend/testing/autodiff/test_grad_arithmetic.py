"""Gradients of arithmetic: binary ops with tensors (broadcasting size-1 dims) and scalars, unary
arithmetic, powers, atan2, hypot, clamps, matmul (batched, broadcast batch dims) and cross."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Gradients, Kind, Tensor
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]
Sampler = Callable[[np.random.Generator, tuple[int, ...]], Array]


def grad_of(tensor: Tensor, grads: Gradients) -> Tensor:
    """``tensor``'s gradient, which must exist."""
    result = tensor.grad(grads)
    assert result is not None, "no gradient"
    return result


SHAPE_PAIRS = [
    ((5,), (5,)),
    ((1,), (4,)),
    ((4,), (1,)),
    ((2, 3), (2, 3)),
    ((2, 3), (1, 3)),
    ((3, 1), (1, 4)),
    ((2, 1, 3), (1, 4, 1)),
    ((2, 3, 2), (2, 3, 2)),
]
SHAPE_PAIR_IDS = ["-".join("x".join(map(str, s)) for s in pair) for pair in SHAPE_PAIRS]
SHAPES = [(5,), (1,), (2, 3), (2, 1, 3), (3, 2, 2)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]


def uniform(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    return rng.uniform(-2.0, 2.0, shape)


def nonzero(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values with magnitudes in [0.4, 2]: away from the kinks and poles at zero."""
    values: Array = rng.uniform(0.4, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return values


def positive(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    return rng.uniform(0.5, 2.0, shape)


def remainder_inputs(rng: np.random.Generator, lhs: tuple[int, ...], rhs: tuple[int, ...]) -> list[Array]:
    """Operands whose quotients stay away from integers, where the remainder jumps."""
    while True:
        x, y = rng.uniform(-3.0, 3.0, lhs), nonzero(rng, rhs)
        fraction = np.mod(x / y, 1.0)
        if ((fraction > 0.02) & (fraction < 0.98)).all():
            return [x, y]


BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], Sampler, Sampler]] = {
    "add": (lambda a, b: a.add(b), lambda a, b: a + b, uniform, uniform),
    "sub": (lambda a, b: a.sub(b), lambda a, b: a - b, uniform, uniform),
    "mul": (lambda a, b: a.mul(b), lambda a, b: a * b, uniform, uniform),
    "div": (lambda a, b: a.div(b), lambda a, b: a / b, uniform, nonzero),
    "powf": (lambda a, b: a.powf(b), lambda a, b: a.pow(b), positive, uniform),
    "atan2": (lambda a, b: a.atan2(b), lambda a, b: a.atan2(b), nonzero, uniform),
    "hypot": (lambda a, b: a.hypot(b), lambda a, b: a.hypot(b), nonzero, nonzero),
    "operators": (
        lambda a, b: (a + b) * a - b / (a * a + 1.0),
        lambda a, b: (a + b) * a - b / (a * a + 1.0),
        uniform,
        uniform,
    ),
}


@pytest.mark.parametrize(("lhs_shape", "rhs_shape"), SHAPE_PAIRS, ids=SHAPE_PAIR_IDS)
@pytest.mark.parametrize("name", BINARY)
def test_binary(
    ad_device: Device,
    rng: np.random.Generator,
    name: str,
    lhs_shape: tuple[int, ...],
    rhs_shape: tuple[int, ...],
) -> None:
    function, torch_function, lhs_sampler, rhs_sampler = BINARY[name]
    inputs = [lhs_sampler(rng, lhs_shape), rhs_sampler(rng, rhs_shape)]
    gradcheck(ad_device, function, inputs, rng, torch_function=torch_function)


@pytest.mark.parametrize(("lhs_shape", "rhs_shape"), SHAPE_PAIRS, ids=SHAPE_PAIR_IDS)
def test_remainder(
    ad_device: Device, rng: np.random.Generator, lhs_shape: tuple[int, ...], rhs_shape: tuple[int, ...]
) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a.remainder(b),
        remainder_inputs(rng, lhs_shape, rhs_shape),
        rng,
        torch_function=lambda a, b: a.remainder(b),
    )


@pytest.mark.parametrize("wrt", [0, 1])
@pytest.mark.parametrize("name", ["add", "mul", "div", "powf", "atan2"])
def test_binary_with_one_tracked_operand(
    ad_device: Device, rng: np.random.Generator, name: str, wrt: int
) -> None:
    function, torch_function, lhs_sampler, rhs_sampler = BINARY[name]
    inputs = [lhs_sampler(rng, (2, 3)), rhs_sampler(rng, (1, 3))]
    gradcheck(ad_device, function, inputs, rng, torch_function=torch_function, wrt=[wrt])


def test_binary_gradient_values(ad_device: Device) -> None:
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], ad_device, DType.F64).require_grad()
    y = Tensor.from_data([[2.0, 0.5]], ad_device, DType.F64).require_grad()
    grads = (x / y).sum().backward()
    assert grad_of(x, grads).tolist() == [[0.5, 2.0], [0.5, 2.0]]
    assert grad_of(y, grads).tolist() == [[-1.0, -24.0]]


SCALAR: dict[str, tuple[Callable[..., Any], Callable[..., Any], Sampler]] = {
    "add_scalar": (lambda a: a.add_scalar(2.5), lambda a: a + 2.5, uniform),
    "add_int": (lambda a: a + 3, lambda a: a + 3, uniform),
    "radd": (lambda a: 1.5 + a, lambda a: 1.5 + a, uniform),
    "sub_scalar": (lambda a: a.sub_scalar(0.75), lambda a: a - 0.75, uniform),
    "rsub": (lambda a: 2.0 - a, lambda a: 2.0 - a, uniform),
    "mul_scalar": (lambda a: a.mul_scalar(-1.5), lambda a: a * -1.5, uniform),
    "rmul": (lambda a: 3.0 * a, lambda a: 3.0 * a, uniform),
    "div_scalar": (lambda a: a.div_scalar(0.4), lambda a: a / 0.4, uniform),
    "div_negative_scalar": (lambda a: a / -2.5, lambda a: a / -2.5, uniform),
    "rdiv": (lambda a: 3.0 / a, lambda a: 3.0 / a, nonzero),
    "powf_scalar": (lambda a: a.powf_scalar(2.5), lambda a: a**2.5, positive),
    "powf_negative_scalar": (lambda a: a.powf(-1.5), lambda a: a**-1.5, positive),
    "powf_fraction": (lambda a: a**0.5, lambda a: a**0.5, positive),
    "rpow": (lambda a: 2.0**a, lambda a: 2.0**a, uniform),
}


@pytest.mark.parametrize(
    "shape", [SHAPES[0], SHAPES[1], SHAPES[3]], ids=[SHAPE_IDS[0], SHAPE_IDS[1], SHAPE_IDS[3]]
)
@pytest.mark.parametrize("name", SCALAR)
def test_scalar(ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> None:
    function, torch_function, sampler = SCALAR[name]
    gradcheck(ad_device, function, [sampler(rng, shape)], rng, torch_function=torch_function)


@pytest.mark.parametrize("divisor", [1.3, -0.7, 2.0])
@pytest.mark.parametrize("shape", SHAPES[:3], ids=SHAPE_IDS[:3])
def test_remainder_scalar(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], divisor: float
) -> None:
    while True:
        x = rng.uniform(-3.0, 3.0, shape)
        fraction = np.mod(x / divisor, 1.0)
        if ((fraction > 0.02) & (fraction < 0.98)).all():
            break
    grads = gradcheck(
        ad_device, lambda a: a.remainder_scalar(divisor), [x], rng, torch_function=lambda a: a % divisor
    )
    assert grads[0].shape == shape


UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], Sampler]] = {
    "neg": (lambda a: a.neg(), lambda a: -a, uniform),
    "neg_operator": (lambda a: -a, lambda a: -a, uniform),
    "abs": (lambda a: a.abs(), lambda a: a.abs(), nonzero),
    "abs_operator": (lambda a: abs(a), lambda a: abs(a), nonzero),
    "recip": (lambda a: a.recip(), lambda a: a.reciprocal(), nonzero),
    "square": (lambda a: a.square(), lambda a: a.square(), uniform),
    "rsqrt": (lambda a: a.rsqrt(), lambda a: a.rsqrt(), positive),
    "sign_times_square": (lambda a: a.sign() * a * a, lambda a: a.sign() * a * a, nonzero),
}


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("name", UNARY)
def test_unary(ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> None:
    function, torch_function, sampler = UNARY[name]
    gradcheck(ad_device, function, [sampler(rng, shape)], rng, torch_function=torch_function)


@pytest.mark.parametrize("shape", SHAPES[:3], ids=SHAPE_IDS[:3])
def test_sign_has_a_zero_gradient(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...]
) -> None:
    grads = gradcheck(
        ad_device, lambda a: a.sign(), [nonzero(rng, shape)], rng, torch_function=lambda a: a.sign()
    )
    assert not grads[0].any()


def test_abs_gradient_is_the_sign(ad_device: Device) -> None:
    x = Tensor.from_data([-2.0, 0.5, -0.25, 3.0], ad_device, DType.F64).require_grad()
    grads = x.abs().sum().backward()
    assert grad_of(x, grads).tolist() == [-1.0, 1.0, -1.0, 1.0]


@pytest.mark.parametrize("exponent", [-2, -1, 0, 1, 2, 3])
@pytest.mark.parametrize("shape", [(5,), (2, 1, 3)], ids=["5", "2x1x3"])
def test_powi_scalar(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], exponent: int
) -> None:
    gradcheck(
        ad_device,
        lambda a: a.powi(exponent),
        [nonzero(rng, shape)],
        rng,
        torch_function=lambda a: a.pow(exponent),
    )


@pytest.mark.parametrize("exponent", [2, 3])
def test_powi_scalar_operator(ad_device: Device, rng: np.random.Generator, exponent: int) -> None:
    gradcheck(
        ad_device, lambda a: a**exponent, [nonzero(rng, (2, 3))], rng, torch_function=lambda a: a**exponent
    )


@pytest.mark.parametrize(
    ("shape", "exponent_shape"), [((6,), (6,)), ((2, 3), (2, 3)), ((2, 3), (1, 3)), ((2, 1, 2), (2, 1, 2))]
)
def test_powi_tensor(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], exponent_shape: tuple[int, ...]
) -> None:
    exponents = rng.integers(-2, 4, exponent_shape)
    torch = pytest.importorskip("torch")

    def function(a: Tensor, e: Array) -> Tensor:
        return a.powi(Tensor.from_data(e, a.device, Kind.INT))

    grads = gradcheck(
        ad_device,
        function,
        [nonzero(rng, shape)],
        rng,
        torch_function=lambda a, e: a.pow(torch.as_tensor(e)),
        constants=[exponents],
    )
    assert grads[0].shape == shape


CLAMPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "clamp": (lambda a: a.clamp(-0.5, 0.8), lambda a: a.clamp(-0.5, 0.8)),
    "clamp_min": (lambda a: a.clamp_min(0.3), lambda a: a.clamp_min(0.3)),
    "clamp_max": (lambda a: a.clamp_max(-0.2), lambda a: a.clamp_max(-0.2)),
    "clamp_times_input": (lambda a: a.clamp(-1.0, 1.0) * a, lambda a: a.clamp(-1.0, 1.0) * a),
}


@pytest.mark.parametrize("shape", [(12,), (3, 4), (2, 3, 2)], ids=["12", "3x4", "2x3x2"])
@pytest.mark.parametrize("name", CLAMPS)
def test_clamp(ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> None:
    values = rng.uniform(-2.0, 2.0, shape)
    bounds = np.array([-1.0, -0.5, -0.2, 0.3, 0.8, 1.0])
    # keep every value away from each bound, where the gradient jumps
    while (np.abs(values[..., None] - bounds) < 0.02).any():
        values = rng.uniform(-2.0, 2.0, shape)
    function, torch_function = CLAMPS[name]
    gradcheck(ad_device, function, [values], rng, torch_function=torch_function)


def test_clamp_gradient_is_zero_outside_the_bounds(ad_device: Device) -> None:
    x = Tensor.from_data([-3.0, -0.5, 0.25, 0.9, 4.0], ad_device, DType.F64).require_grad()
    grads = (x.clamp(-1.0, 0.5) * 3.0).sum().backward()
    assert grad_of(x, grads).tolist() == [0.0, 3.0, 3.0, 0.0, 0.0]


MATMUL_SHAPES = [
    ((2, 3), (3, 4)),
    ((1, 3), (3, 1)),
    ((4, 1), (1, 2)),
    ((2, 2, 3), (2, 3, 4)),
    ((1, 2, 3), (3, 3, 2)),
    ((3, 2, 3), (1, 3, 2)),
    ((2, 1, 2, 3), (1, 3, 3, 2)),
    ((2, 2, 1, 2), (2, 2, 2, 1)),
]


@pytest.mark.parametrize(
    ("lhs_shape", "rhs_shape"),
    MATMUL_SHAPES,
    ids=["-".join("x".join(map(str, s)) for s in p) for p in MATMUL_SHAPES],
)
def test_matmul(
    ad_device: Device, rng: np.random.Generator, lhs_shape: tuple[int, ...], rhs_shape: tuple[int, ...]
) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a.matmul(b),
        [uniform(rng, lhs_shape), uniform(rng, rhs_shape)],
        rng,
        torch_function=lambda a, b: a.matmul(b),
    )


@pytest.mark.parametrize("wrt", [0, 1])
def test_matmul_one_tracked_operand(ad_device: Device, rng: np.random.Generator, wrt: int) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a @ b,
        [uniform(rng, (2, 2, 3)), uniform(rng, (1, 3, 2))],
        rng,
        torch_function=lambda a, b: a @ b,
        wrt=[wrt],
    )


def test_matmul_of_a_tensor_with_its_transpose(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device, lambda a: a @ a.transpose(), [uniform(rng, (3, 4))], rng, torch_function=lambda a: a @ a.T
    )


def test_matmul_gradient_values(ad_device: Device) -> None:
    a = Tensor.from_data([[1.0, 2.0]], ad_device, DType.F64).require_grad()
    b = Tensor.from_data([[3.0], [4.0]], ad_device, DType.F64).require_grad()
    grads = (a @ b).sum().backward()
    assert grad_of(a, grads).tolist() == [[3.0, 4.0]]
    assert grad_of(b, grads).tolist() == [[1.0], [2.0]]


CROSS_CASES = [
    ((3,), (3,), -1),
    ((4, 3), (4, 3), -1),
    ((3, 4), (3, 4), 0),
    ((2, 3, 2), (2, 3, 2), 1),
    ((1, 3), (4, 3), 1),
    ((2, 3), (1, 3), -1),
]


@pytest.mark.parametrize(
    ("lhs_shape", "rhs_shape", "dim"),
    CROSS_CASES,
    ids=["-".join("x".join(map(str, s)) for s in c[:2]) + f"-dim{c[2]}" for c in CROSS_CASES],
)
def test_cross(
    ad_device: Device,
    rng: np.random.Generator,
    lhs_shape: tuple[int, ...],
    rhs_shape: tuple[int, ...],
    dim: int,
) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a.cross(b, dim),
        [uniform(rng, lhs_shape), uniform(rng, rhs_shape)],
        rng,
        torch_function=lambda a, b: a.cross(b, dim=dim),
    )


@pytest.mark.parametrize("method", ["powi", "powf"])
def test_zeroth_power_has_a_zero_gradient_at_zero(ad_device: Device, method: str) -> None:
    x = Tensor.from_data(np.array([0.0, 2.0]), ad_device, DType.F64).require_grad()
    exponent = 0 if method == "powi" else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        grads = getattr(x, method)(exponent).sum().backward()
        gradient = grad_of(x, grads).tolist()
    assert gradient == [0.0, 0.0]


def test_tensor_zeroth_power_has_a_zero_gradient_at_zero(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([0.0, 2.0, 0.0]), ad_device, DType.F64).require_grad()
    y = Tensor.from_data(np.array([0.0, 0.0, 2.0]), ad_device, DType.F64)
    with np.errstate(invalid="ignore", divide="ignore"):
        grads = x.powf(y).sum().backward()
        gradient = grad_of(x, grads).tolist()
    assert gradient == [0.0, 0.0, 0.0]


def test_exponent_gradient_at_a_zero_base(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([0.0, 2.0]), ad_device, DType.F64)
    y = Tensor.from_data(np.array([2.0, 3.0]), ad_device, DType.F64).require_grad()
    with np.errstate(invalid="ignore", divide="ignore"):
        grads = x.powf(y).sum().backward()
        gradient = grad_of(y, grads).to_numpy()
    np.testing.assert_allclose(gradient, [0.0, 8.0 * np.log(2.0)], rtol=1e-14)
