"""Gradients of the activations through the public ``burn_backend.activation`` functions: against finite
differences in float64 and ``torch.autograd``; exact values at the kinks and for extreme inputs; tracked
f16 and bf16 inputs against float64; and balanced checkpointing, which recomputes activations."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import ConvOptions, Device, DType, Tensor, activation, module
from burn_backend.testing import check, make, require_dtype
from burn_backend.testing._helpers import fusion_layer
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]


def gradient(tensor: Tensor, grads: Any) -> Tensor:
    """``tensor``'s gradient in ``grads``, which must hold one."""
    grad = tensor.grad(grads)
    assert grad is not None, "no gradient"
    return grad


SHAPES = [(6,), (2, 3), (2, 3, 4), (1, 2, 3, 3)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]


def torch_module() -> Any:
    return pytest.importorskip("torch")


def functional() -> Any:
    return torch_module().nn.functional


def away_from_zero(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 2.0) -> Array:
    """Uniform values in ``[-scale, scale]`` at least 0.05 from 0, where rectifiers have a kink."""
    magnitude = rng.uniform(0.05, scale, shape)
    return np.where(rng.random(shape) < 0.5, -magnitude, magnitude)


# name -> (ours, PyTorch's, inputs)
ELEMENTWISE: dict[str, tuple[Callable[[Tensor], Tensor], Callable[[Any], Any]]] = {
    "relu": (activation.relu, lambda x: functional().relu(x)),
    "leaky_relu": (activation.leaky_relu, lambda x: functional().leaky_relu(x, 0.01)),
    "leaky_relu-0.3": (
        lambda x: activation.leaky_relu(x, 0.3),
        lambda x: functional().leaky_relu(x, 0.3),
    ),
    "leaky_relu-negative": (
        lambda x: activation.leaky_relu(x, -0.5),
        lambda x: functional().leaky_relu(x, -0.5),
    ),
    "gelu": (activation.gelu, lambda x: functional().gelu(x)),
    "sigmoid": (activation.sigmoid, lambda x: torch_module().sigmoid(x)),
    "log_sigmoid": (activation.log_sigmoid, lambda x: functional().logsigmoid(x)),
    "hard_sigmoid": (activation.hard_sigmoid, lambda x: (x * 0.2 + 0.5).clamp(0.0, 1.0)),
    "hard_sigmoid-steep": (
        lambda x: activation.hard_sigmoid(x, 0.7, 0.1),
        lambda x: (x * 0.7 + 0.1).clamp(0.0, 1.0),
    ),
}


def elementwise_inputs(name: str, rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    if name.startswith("hard_sigmoid"):
        # the clamp bounds are kinks too: keep alpha * x + beta away from 0 and 1
        alpha, beta = (0.7, 0.1) if name.endswith("steep") else (0.2, 0.5)
        z = away_from_zero(rng, shape, 1.0) * 0.9 + 0.5
        return (z - beta) / alpha
    return away_from_zero(rng, shape, 3.0)


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise(ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> None:
    ours, theirs = ELEMENTWISE[name]
    gradcheck(ad_device, ours, [elementwise_inputs(name, rng, shape)], rng, torch_function=theirs)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_of_a_computed_input(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    ours, theirs = ELEMENTWISE[name]
    gradcheck(
        ad_device,
        lambda x: ours(x * 1.5 - 0.2) * x,
        [away_from_zero(rng, (3, 4), 1.5)],
        rng,
        torch_function=lambda x: theirs(x * 1.5 - 0.2) * x,
    )


# -- values at the kinks and for extreme inputs ----------------------------------------------------------
def grad_of(ad_device: Device, function: Callable[[Tensor], Tensor], values: list[float]) -> Array:
    x = Tensor.from_data(np.array(values), ad_device, DType.F64).require_grad()
    return np.asarray(gradient(x, function(x).sum().backward()).to_numpy())


def test_rectifier_gradients_at_zero(ad_device: Device) -> None:
    # as PyTorch: relu's gradient at 0 is 0; the leaky slopes apply at 0
    assert grad_of(ad_device, activation.relu, [-1.0, 0.0, 2.0]).tolist() == [0.0, 0.0, 1.0]
    leaky = grad_of(ad_device, lambda x: activation.leaky_relu(x, 0.25), [-1.0, 0.0, 2.0])
    assert leaky.tolist() == [0.25, 0.25, 1.0]
    alpha = Tensor.from_data([0.5], ad_device, DType.F64).require_grad()
    x = Tensor.from_data([-2.0, 0.0, 3.0], ad_device, DType.F64).require_grad()
    grads = activation.prelu(x, alpha).sum().backward()
    assert gradient(x, grads).tolist() == [0.5, 0.5, 1.0]
    assert gradient(alpha, grads).tolist() == [-2.0]


def test_hard_sigmoid_is_flat_outside(ad_device: Device) -> None:
    grads = grad_of(ad_device, activation.hard_sigmoid, [-10.0, -2.5, 0.0, 2.4, 10.0])
    assert grads.tolist() == [0.0, 0.0, 0.2, 0.2, 0.0]


def test_sigmoid_family_at_extremes(ad_device: Device) -> None:
    values = np.array([-100.0, -40.0, -5.0, 0.0, 5.0, 40.0, 100.0])
    sigmoid = 1.0 / (1.0 + np.exp(-values))
    sigmoid_of_minus = 1.0 / (1.0 + np.exp(values))
    # sigmoid's gradient comes from its output, y * (1 - y) (as PyTorch's): where y rounds to 1 it is 0
    np.testing.assert_allclose(
        grad_of(ad_device, activation.sigmoid, values.tolist()),
        sigmoid * sigmoid_of_minus,
        rtol=1e-12,
        atol=1e-16,
    )
    np.testing.assert_allclose(
        grad_of(ad_device, activation.log_sigmoid, values.tolist()), sigmoid_of_minus, rtol=1e-12
    )


def test_gelu_gradient_values(ad_device: Device) -> None:
    values = np.array([-6.0, -1.0, 0.0, 0.5, 3.0])
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in values]))
    pdf = np.exp(-0.5 * values * values) / math.sqrt(2.0 * math.pi)
    np.testing.assert_allclose(
        grad_of(ad_device, activation.gelu, values.tolist()), cdf + values * pdf, rtol=1e-12
    )


# -- prelu -----------------------------------------------------------------------------------------------
# (x shape, alpha shape)
PRELU = [((2, 3), (1,)), ((2, 3), (3,)), ((2, 4, 3), (4,)), ((1, 2, 3, 3), (2,)), ((5,), (1,))]


@pytest.mark.parametrize("case", PRELU, ids=lambda c: f"{'x'.join(map(str, c[0]))}-alpha{c[1][0]}")
def test_prelu(ad_device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    shape, alpha_shape = case
    gradcheck(
        ad_device,
        activation.prelu,
        [away_from_zero(rng, shape), rng.uniform(-0.5, 0.5, alpha_shape)],
        rng,
        torch_function=lambda x, a: functional().prelu(x, a),
    )


def test_prelu_with_a_number_and_of_the_slopes_only(ad_device: Device, rng: np.random.Generator) -> None:
    x = away_from_zero(rng, (2, 3, 2))
    gradcheck(
        ad_device,
        lambda t: activation.prelu(t, 0.2),
        [x],
        rng,
        torch_function=lambda t: functional().leaky_relu(t, 0.2),
    )
    gradcheck(ad_device, activation.prelu, [x, rng.uniform(0.0, 0.5, 3)], rng, wrt=[1])


# -- softmax family --------------------------------------------------------------------------------------
SOFTMAX_CASES = [((5,), 0), ((2, 4), 1), ((2, 4), 0), ((2, 3, 4), -1), ((2, 3, 4), 1), ((3, 1), 1)]
SOFTMAX: dict[str, tuple[Callable[[Tensor, int], Tensor], Callable[[Any, int], Any]]] = {
    "softmax": (activation.softmax, lambda x, d: torch_module().softmax(x, d)),
    "log_softmax": (activation.log_softmax, lambda x, d: torch_module().log_softmax(x, d)),
    "softmin": (activation.softmin, lambda x, d: functional().softmin(x, d)),
}


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-dim{c[1]}")
@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_family(
    ad_device: Device, rng: np.random.Generator, name: str, case: tuple[Any, ...]
) -> None:
    shape, dim = case
    ours, theirs = SOFTMAX[name]
    gradcheck(
        ad_device,
        lambda x: ours(x, dim),
        [rng.uniform(-3.0, 3.0, shape)],
        rng,
        torch_function=lambda x: theirs(x, dim),
    )


@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_family_of_large_values(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    ours, theirs = SOFTMAX[name]
    x = rng.uniform(-3.0, 3.0, (2, 5)) + np.array([[1000.0], [-1000.0]])
    grads = gradcheck(
        ad_device, lambda t: ours(t, 1), [x], rng, torch_function=lambda t: theirs(t, 1), eps=1e-4, rtol=1e-4
    )
    assert np.isfinite(grads[0]).all()


def test_softmax_gradient_sums_to_zero(ad_device: Device, rng: np.random.Generator) -> None:
    """A softmax is invariant to shifting its inputs, so its input gradient sums to 0 along the dim."""
    x = Tensor.from_data(rng.uniform(-2.0, 2.0, (3, 6)), ad_device, DType.F64).require_grad()
    weights = Tensor.from_data(rng.uniform(-1.0, 1.0, (3, 6)), ad_device, DType.F64)
    for function in (activation.softmax, activation.log_softmax):
        grads = (function(x, 1) * weights).sum().backward()
        np.testing.assert_allclose(gradient(x, grads).to_numpy().sum(axis=1), 0.0, atol=1e-14)


def test_softmax_of_an_empty_tensor(ad_device: Device) -> None:
    x = Tensor.zeros([0, 3], ad_device, DType.F64).require_grad()
    for function in (activation.softmax, activation.log_softmax):
        grads = (function(x, 1) * 2.0).backward()
        grad = x.grad(grads)
        assert grad is None or grad.dims() == [0, 3]


# -- activations composed of these -----------------------------------------------------------------------
COMPOSED: dict[str, tuple[Callable[[Tensor], Tensor], Callable[[Any], Any]]] = {
    "silu": (activation.silu, lambda x: functional().silu(x)),
    "gelu_tanh": (activation.gelu_tanh, lambda x: functional().gelu(x, approximate="tanh")),
    "hard_swish": (activation.hard_swish, lambda x: functional().hardswish(x)),
    "glu": (lambda x: activation.glu(x, -1), lambda x: functional().glu(x, -1)),
    "mish": (activation.mish, lambda x: functional().mish(x)),
}


@pytest.mark.parametrize("name", COMPOSED)
def test_composed_activations(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    ours, theirs = COMPOSED[name]
    x = away_from_zero(rng, (3, 4), 2.5)
    # hard_swish has kinks at -3 and 3 as well
    x = np.where(np.abs(np.abs(x) - 3.0) < 0.05, x * 0.9, x)
    gradcheck(ad_device, ours, [x], rng, torch_function=theirs)


def test_untracked_inputs_stay_untracked(ad_device: Device, rng: np.random.Generator) -> None:
    x = Tensor.from_data(rng.uniform(-1.0, 1.0, (2, 3)), ad_device, DType.F64)
    alpha = Tensor.from_data([0.1, 0.2, 0.3], ad_device, DType.F64)
    for result in (
        activation.relu(x),
        activation.gelu(x),
        activation.sigmoid(x),
        activation.prelu(x, alpha),
        activation.softmax(x, 1),
        activation.log_softmax(x, 0),
    ):
        assert not result.is_require_grad()


# -- low precision ---------------------------------------------------------------------------------------
LOW_PRECISION: dict[str, Callable[..., Tensor]] = {
    "relu": activation.relu,
    "leaky_relu": lambda x: activation.leaky_relu(x, 0.1),
    "prelu": lambda x, a: activation.prelu(x, a),
    "gelu": activation.gelu,
    "sigmoid": activation.sigmoid,
    "log_sigmoid": activation.log_sigmoid,
    "hard_sigmoid": activation.hard_sigmoid,
    "softmax": lambda x: activation.softmax(x, 1),
    "log_softmax": lambda x: activation.log_softmax(x, 1),
}


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16], ids=str)
@pytest.mark.parametrize("name", LOW_PRECISION)
def test_low_precision(ad_device: Device, rng: np.random.Generator, name: str, dtype: DType) -> None:
    """Tracked f16 / bf16 inputs: values and gradients within the dtype's tolerance of float64."""
    require_dtype(ad_device, dtype)
    function = LOW_PRECISION[name]
    arrays = [away_from_zero(rng, (4, 16), 4.0)]
    if name == "prelu":
        arrays.append(rng.uniform(0.0, 0.5, 16))
    arrays = [a.astype(dtype.numpy).astype(np.float64) for a in arrays]
    weights = np.linspace(-1.0, 1.0, 64).reshape(4, 16)
    results = []
    for work in (dtype, DType.F64):
        tensors = [make(a, ad_device, work).require_grad() for a in arrays]
        output = function(*tensors)
        grads = (output * make(weights, ad_device, work)).sum().backward()
        results.append((output, [gradient(t, grads) for t in tensors]))
    (low, low_grads), (exact, exact_grads) = results
    check(low, exact.to_numpy(), dtype, scale=2)
    for grad, expected in zip(low_grads, exact_grads):
        check(grad, expected.to_numpy(), dtype, scale=8)


# -- balanced checkpointing ------------------------------------------------------------------------------
def test_balanced_checkpointing_recomputes_the_same_gradients(
    ad_device: Device, rng: np.random.Generator
) -> None:
    """Activations are memory-bound: balanced checkpointing drops their outputs and recomputes them
    from the convolutions' (kept) outputs; the gradients are the same, bit for bit. (Under a fusing
    layer the two strategies' op streams differ, so a chain one of them runs as a fused kernel the
    other may run op by op: there the gradients agree to rounding.)"""
    burn_autodiff = pytest.importorskip("burn_autodiff")
    backend = ad_device.backend
    if not isinstance(backend, burn_autodiff.Autodiff):
        pytest.skip("balanced checkpointing is burn_autodiff's")
    arrays = [rng.uniform(-1.0, 1.0, s) for s in [(2, 2, 6, 6), (4, 2, 3, 3), (4,), (4,), (4, 4, 1, 1)]]
    results = []
    for strategy in (burn_autodiff.NoCheckpointing(), burn_autodiff.BalancedCheckpointing()):
        device = burn_autodiff.Autodiff(backend.inner, strategy).device(ad_device.index)
        x, w1, b1, alpha, w2 = (make(a, device).require_grad() for a in arrays)
        hidden = module.conv2d(x, w1, b1, ConvOptions((1, 1), (1, 1), (1, 1)))
        hidden = activation.prelu(activation.gelu(activation.relu(hidden) + hidden), alpha)
        hidden = activation.hard_sigmoid(activation.sigmoid(activation.leaky_relu(hidden, 0.2)) * 3.0 - 1.5)
        hidden = module.conv2d(activation.log_sigmoid(hidden), w2, None, ConvOptions((1, 1), (0, 0), (1, 1)))
        scores = activation.log_softmax(activation.softmax(hidden, 1) * 4.0, 3)
        grads = (scores * scores).sum().backward()
        results.append([gradient(t, grads).to_numpy() for t in (x, w1, b1, alpha, w2)])
    fused = fusion_layer(backend) is not None
    for default, balanced in zip(*results):
        if fused:
            np.testing.assert_allclose(balanced, default, rtol=1e-12, atol=1e-13)
        else:
            np.testing.assert_array_equal(default, balanced)
