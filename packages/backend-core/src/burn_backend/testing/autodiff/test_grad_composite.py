"""Gradients of whole computations: a small MLP with softmax cross-entropy, layer normalization,
attention, long chains, tensors used many times, detached values, inputs that do not reach the
output."""

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


def torch_module() -> Any:
    return pytest.importorskip("torch")


def f64(values: Any, device: Device) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.float64), device, DType.F64)


# -- a small MLP with softmax cross-entropy ---------------------------------------------------------
ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "tanh": lambda z: z.tanh(),
    "relu": lambda z: z.clamp_min(0.0),
    "sigmoid": lambda z: 1.0 / ((-z).exp() + 1.0),
}


def burn_mlp_loss(
    x: Tensor,
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
    labels: Array,
    activation: str,
    detach_max: bool,
) -> Tensor:
    hidden: Tensor = ACTIVATIONS[activation](x @ w1 + b1)
    logits = hidden @ w2 + b2
    peak = logits.max_dim(1)
    shifted = logits - (peak.detach() if detach_max else peak)
    log_probs = shifted - shifted.exp().sum_dim(1).log()
    targets = Tensor.from_data(labels, w1.device, DType.F64)
    return -(log_probs * targets).sum_dim(1).mean()


def torch_mlp_loss(
    x: Any, w1: Any, b1: Any, w2: Any, b2: Any, labels: Array, activation: str, detach_max: bool
) -> Any:
    hidden = ACTIVATIONS[activation](x @ w1 + b1)
    logits = hidden @ w2 + b2
    peak = logits.amax(1, keepdim=True)
    shifted = logits - (peak.detach() if detach_max else peak)
    log_probs = shifted - shifted.exp().sum(1, keepdim=True).log()
    return -(log_probs * torch_module().as_tensor(labels)).sum(1).mean().reshape(1)


MLP_SIZES = [(4, 3, 5, 3), (1, 2, 3, 2), (6, 4, 2, 5)]


@pytest.mark.parametrize("detach_max", [True, False], ids=["detached-max", "tracked-max"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize(
    ("batch", "features", "hidden", "classes"), MLP_SIZES, ids=["4x3x5x3", "1x2x3x2", "6x4x2x5"]
)
def test_mlp_with_softmax_cross_entropy(
    ad_device: Device,
    rng: np.random.Generator,
    batch: int,
    features: int,
    hidden: int,
    classes: int,
    activation: str,
    detach_max: bool,
) -> None:
    labels = np.eye(classes)[rng.integers(0, classes, batch)]
    inputs = [
        rng.normal(size=(batch, features)),
        rng.normal(size=(features, hidden)),
        rng.normal(size=(1, hidden)) * 0.5,
        rng.normal(size=(hidden, classes)),
        rng.normal(size=(1, classes)) * 0.5,
    ]
    gradcheck(
        ad_device,
        burn_mlp_loss,
        inputs,
        rng,
        torch_function=torch_mlp_loss,
        constants=[labels, activation, detach_max],
        wrt=[1, 2, 3, 4],
    )


def test_mlp_loss_matches_torch_cross_entropy(ad_device: Device, rng: np.random.Generator) -> None:
    torch = torch_module()
    classes = rng.integers(0, 3, 4)
    arrays = [
        rng.normal(size=(4, 3)),
        rng.normal(size=(3, 5)),
        rng.normal(size=(1, 5)),
        rng.normal(size=(5, 3)),
        rng.normal(size=(1, 3)),
    ]
    x, *params = (f64(a, ad_device) for a in arrays)
    w1, b1, w2, b2 = params = [param.require_grad() for param in params]
    loss = burn_mlp_loss(x, w1, b1, w2, b2, np.eye(3)[classes], "tanh", True)
    grads = loss.backward()

    tx, *tparams = (torch.tensor(a, requires_grad=i > 0) for i, a in enumerate(arrays))
    logits = (tx @ tparams[0] + tparams[1]).tanh() @ tparams[2] + tparams[3]
    expected = torch.nn.functional.cross_entropy(logits, torch.as_tensor(classes))
    expected.backward()
    np.testing.assert_allclose(loss.to_numpy(), [expected.item()], rtol=1e-12)
    for param, tparam in zip(params, tparams):
        np.testing.assert_allclose(
            grad_of(param, grads).to_numpy(), tparam.grad.numpy(), rtol=1e-10, atol=1e-12
        )


# -- normalization and attention --------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (1, 6)], ids=["3x4", "2x3x5", "1x6"])
def test_layer_norm(ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    features = shape[-1]
    weight_shape = (1,) * (len(shape) - 1) + (features,)

    def function(x: Any, gamma: Any, beta: Any) -> Any:
        mean, variance = x.mean_dim(-1), x.var_bias(-1)
        return (x - mean) / (variance + 1e-5).sqrt() * gamma + beta

    def torch_function(x: Any, gamma: Any, beta: Any) -> Any:
        return torch_module().nn.functional.layer_norm(
            x, (features,), gamma.reshape(-1), beta.reshape(-1), 1e-5
        )

    gradcheck(
        ad_device,
        function,
        [rng.normal(size=shape), rng.normal(size=weight_shape), rng.normal(size=weight_shape)],
        rng,
        torch_function=torch_function,
    )


@pytest.mark.parametrize(("batch", "queries", "keys", "dim"), [(1, 2, 3, 4), (2, 3, 3, 2), (2, 1, 4, 3)])
def test_attention(
    ad_device: Device, rng: np.random.Generator, batch: int, queries: int, keys: int, dim: int
) -> None:
    scale = 1.0 / math.sqrt(dim)

    def function(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        scores = q.matmul(k.swap_dims(1, 2)) * scale
        weights = (scores - scores.max_dim(2).detach()).exp()
        return (weights / weights.sum_dim(2)).matmul(v)

    def torch_function(q: Any, k: Any, v: Any) -> Any:
        return torch_module().nn.functional.scaled_dot_product_attention(q, k, v)

    gradcheck(
        ad_device,
        function,
        [
            rng.normal(size=(batch, queries, dim)),
            rng.normal(size=(batch, keys, dim)),
            rng.normal(size=(batch, keys, dim)),
        ],
        rng,
        torch_function=torch_function,
    )


# -- graph shapes ---------------------------------------------------------------------------------
CHAIN: list[Callable[[Any], Any]] = [
    lambda a: a.sin(),
    lambda a: a * 1.5,
    lambda a: a + 0.25,
    lambda a: a.tanh(),
    lambda a: (a * a + 1.0).sqrt(),
    lambda a: a.cos() - a,
    lambda a: a.exp() * 0.5,
    lambda a: a / 1.25,
    lambda a: a.atan(),
    lambda a: a.flip([0]) * a,
]


@pytest.mark.parametrize("length", [50, 51])
def test_chain_of_ops(ad_device: Device, rng: np.random.Generator, length: int) -> None:
    def function(a: Any) -> Any:
        for i in range(length):
            a = CHAIN[i % len(CHAIN)](a)
        return a

    gradcheck(ad_device, function, [rng.uniform(-1.0, 1.0, (4,))], rng, torch_function=function)


def test_a_very_long_chain_needs_no_recursion(ad_device: Device) -> None:
    x = f64([1.0, 2.0], ad_device).require_grad()
    y = x
    for _ in range(3000):
        y = y + 0.001
    grads = (y * y).sum().backward()
    np.testing.assert_allclose(grad_of(x, grads).to_numpy(), [8.0, 10.0], rtol=1e-12)


def test_a_tensor_used_many_times(ad_device: Device, rng: np.random.Generator) -> None:
    def function(a: Any) -> Any:
        total = a * a + a.sin() * a - a.exp() / (a * a + 1.0)
        for i in range(8):
            total = total + a * float(i) - a.tanh() * a
        return total * a.sum_dim(1) + a.mean_dim(0) * a

    def torch_function(a: Any) -> Any:
        total = a * a + a.sin() * a - a.exp() / (a * a + 1.0)
        for i in range(8):
            total = total + a * float(i) - a.tanh() * a
        return total * a.sum(1, keepdim=True) + a.mean(0, keepdim=True) * a

    gradcheck(ad_device, function, [rng.uniform(-1.0, 1.0, (3, 4))], rng, torch_function=torch_function)


SAME_OPERAND: dict[str, Callable[[Any], Any]] = {
    "mul": lambda a: a * a,
    "div": lambda a: a / a + a,
    "sub": lambda a: a - a + a * 2.0,
    "matmul": lambda a: a.matmul(a),
    "atan2": lambda a: a.atan2(a) * a,
    "hypot": lambda a: a.hypot(a),
    "pow": lambda a: a.abs() ** a.abs(),
}


@pytest.mark.parametrize("name", SAME_OPERAND)
def test_one_tensor_as_both_operands(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    values = rng.uniform(0.4, 1.5, (3, 3)) * rng.choice([-1.0, 1.0], (3, 3))
    function = SAME_OPERAND[name]
    gradcheck(ad_device, function, [values], rng, torch_function=function)


def test_diamond(ad_device: Device, rng: np.random.Generator) -> None:
    def function(a: Any, b: Any) -> Any:
        shared = a * b + 1.0
        left, right = shared.sin(), shared.exp()
        return left * right + shared - (left + right) * b

    gradcheck(
        ad_device,
        function,
        [rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (1, 3))],
        rng,
        torch_function=function,
    )


def test_broadcast_parameters_in_a_batch(ad_device: Device, rng: np.random.Generator) -> None:
    def function(x: Any, scale: Any, shift: Any) -> Any:
        return ((x * scale + shift).tanh() * scale).sum_dim(2)

    def torch_function(x: Any, scale: Any, shift: Any) -> Any:
        return ((x * scale + shift).tanh() * scale).sum(2, keepdim=True)

    gradcheck(
        ad_device,
        function,
        [rng.normal(size=(2, 3, 4)), rng.normal(size=(1, 1, 4)), rng.normal(size=(1, 3, 1))],
        rng,
        torch_function=torch_function,
    )


# -- detached values and unreachable inputs -------------------------------------------------------
def test_gradient_through_a_detached_value(ad_device: Device, rng: np.random.Generator) -> None:
    torch = torch_module()
    values = rng.uniform(-1.0, 1.0, (2, 3))
    x = f64(values, ad_device).require_grad()
    grads = (x * x.detach().exp() + x.detach() * 3.0).sum().backward()
    # the detached factors are constants: d/dx = exp(x), not exp(x) (1 + x)
    np.testing.assert_allclose(grad_of(x, grads).to_numpy(), np.exp(values), rtol=1e-14)

    tx = torch.tensor(values, requires_grad=True)
    (tx * tx.detach().exp() + tx.detach() * 3.0).sum().backward()
    np.testing.assert_allclose(grad_of(x, grads).to_numpy(), tx.grad.numpy(), rtol=1e-14)


def test_detached_tensor_is_untracked(ad_device: Device) -> None:
    x = f64([1.0, 2.0], ad_device).require_grad()
    y = (x * 2.0).detach()
    assert not y.is_require_grad()
    assert y.tolist() == [2.0, 4.0]
    grads = (y * 3.0 + x).sum().backward()
    assert grad_of(x, grads).tolist() == [1.0, 1.0]


def test_only_a_detached_path_gives_no_gradient(ad_device: Device) -> None:
    x = f64([1.0, 2.0], ad_device).require_grad()
    w = f64([3.0, 4.0], ad_device).require_grad()
    grads = (x.detach().exp() * w).sum().backward()
    assert x.grad(grads) is None
    np.testing.assert_allclose(grad_of(w, grads).to_numpy(), np.exp([1.0, 2.0]), rtol=1e-15)


def test_inputs_that_do_not_reach_the_output_get_no_gradient(ad_device: Device) -> None:
    used = f64([[1.0, 5.0], [3.0, 2.0]], ad_device).require_grad()
    side = f64([[1.0, 1.0]], ad_device).require_grad()
    through_indices = f64([[0.0, 1.0], [1.0, 0.0]], ad_device).require_grad()
    through_comparison = f64([[2.0, 2.0], [2.0, 2.0]], ad_device).require_grad()
    never_used = f64([7.0], ad_device).require_grad()

    side_branch = (side * used).exp()  # computed, but the loss does not use it
    indices = through_indices.argmax(1)
    mask = used.greater(through_comparison)
    loss = (used.gather(1, indices) * 2.0).sum() + used.mask_fill(mask, 0.0).sum()
    grads = loss.backward()

    assert grad_of(used, grads).tolist() == [[1.0, 2.0], [2.0, 1.0]]
    for tensor in (side, through_indices, through_comparison, never_used):
        assert tensor.grad(grads) is None
    assert side_branch.is_require_grad()


def test_constants_made_like_a_tracked_tensor_get_no_gradient(ad_device: Device) -> None:
    x = f64([1.0, -2.0], ad_device).require_grad()
    constants = [x.zeros_like(), x.ones_like(), x.full_like(3.0)]
    assert not any(c.is_require_grad() for c in constants)
    grads = sum((x * c for c in constants), x.zeros_like()).sum().backward()
    assert grad_of(x, grads).tolist() == [4.0, 4.0]


def test_gradient_through_to_device(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device,
        lambda a: a.to_device(a.device).sin() * a,
        [rng.uniform(-1.0, 1.0, (2, 3))],
        rng,
        torch_function=lambda a: a.sin() * a,
    )


def test_two_graphs_from_one_leaf(ad_device: Device, rng: np.random.Generator) -> None:
    values = rng.uniform(-1.0, 1.0, (3,))
    x = f64(values, ad_device).require_grad()
    first = (x.sin() * 2.0).sum().backward()
    second = (x.sin() * x.sin()).sum().backward()
    np.testing.assert_allclose(grad_of(x, first).to_numpy(), 2.0 * np.cos(values), rtol=1e-14)
    np.testing.assert_allclose(grad_of(x, second).to_numpy(), np.sin(2.0 * values), rtol=1e-13)
