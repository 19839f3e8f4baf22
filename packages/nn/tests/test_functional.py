"""``burn_nn.functional``: ``pad``, ``dropout``, ``batch_norm``, ``group_norm``, ``cross_entropy`` and
``cross_entropy_with_logits`` against ``torch.nn.functional`` (values and gradients, float64), their
errors, and the namespace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import burn_backend.activation
import burn_backend.module
from burn_backend import Device, DType, Tensor
from burn_nn import BatchNormConfig, RunningState, functional
from burn_nn.loss import Reduction

torch = pytest.importorskip("torch")
TF = torch.nn.functional

Array = np.ndarray[Any, Any]


def leaf(values: Array, device: Device) -> Tensor:
    return Tensor.from_data(values, device, DType.F64).require_grad()


def gradient(tensor: Tensor, grads: Any) -> Array:
    grad = tensor.grad(grads)
    assert grad is not None
    return np.asarray(grad.to_numpy())


def torch_leaf(values: Array) -> Any:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def close(ours: Tensor | Array, theirs: Any) -> None:
    value = ours.to_numpy() if isinstance(ours, Tensor) else ours
    expected = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)


# -- pad -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch(device: Device, rng: np.random.Generator, mode: str) -> None:
    x = rng.standard_normal((2, 3, 4, 5))
    widths = (1, 2, 3, 0)
    ours, theirs = leaf(x, device), torch_leaf(x)
    upstream = rng.standard_normal((2, 3, 7, 8))
    out = functional.pad(ours, widths, mode)
    expected = TF.pad(theirs, widths, mode)
    close(out, expected)
    grads = (out * Tensor.from_data(upstream, device, DType.F64)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    close(gradient(ours, grads), theirs.grad)


def test_pad_with_a_value(device: Device) -> None:
    out = functional.pad(Tensor.ones([1, 2], device), (1, 0, 0, 1), value=-1.0)
    assert out.tolist() == [[-1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]]


# -- dropout ---------------------------------------------------------------------------------------------
def test_dropout_zeroes_and_scales(device: Device) -> None:
    x = Tensor.ones([200, 50], device, DType.F64)
    out = functional.dropout(x, 0.3).to_numpy()
    kept = out != 0.0
    np.testing.assert_allclose(out[kept], 1.0 / 0.7)
    assert abs(kept.mean() - 0.7) < 0.02
    assert functional.dropout(x, 0.3, training=False) is x
    assert functional.dropout(x, 0.0) is x
    assert not functional.dropout(x, 1.0).to_numpy().any()


def test_dropout_repeats_with_the_seed_and_passes_gradients(device: Device) -> None:
    x = leaf(np.ones((4, 6)), device)
    device.seed(7)
    first = functional.dropout(x, 0.5)
    device.seed(7)
    second = functional.dropout(x, 0.5)
    np.testing.assert_array_equal(first.to_numpy(), second.to_numpy())
    np.testing.assert_array_equal(gradient(x, first.sum().backward()), first.to_numpy())


def test_dropout_errors(device: Device) -> None:
    with pytest.raises(ValueError, match=r"dropout: prob must be a number in \[0, 1\], got 1\.5"):
        functional.dropout(Tensor.ones([2], device), 1.5)
    with pytest.raises(TypeError, match=r"dropout: x must be a Tensor, got list"):
        functional.dropout([1.0], 0.5)  # type: ignore[arg-type]


# -- batch norm ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)], ids=str)
def test_batch_norm_training_matches_torch(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...]
) -> None:
    x, weight, bias = rng.standard_normal(shape), rng.standard_normal(3), rng.standard_normal(3)
    mean0, var0 = rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)
    upstream = rng.standard_normal(shape)
    leaves = [leaf(a, device) for a in (x, weight, bias)]
    mean, var = (RunningState(Tensor.from_data(a, device, DType.F64)) for a in (mean0, var0))
    out = functional.batch_norm(leaves[0], mean, var, leaves[1], leaves[2], True, 0.2, 1e-4)
    grads = (out * Tensor.from_data(upstream, device, DType.F64)).sum().backward()

    theirs = [torch_leaf(a) for a in (x, weight, bias)]
    t_mean, t_var = torch.tensor(mean0), torch.tensor(var0)
    expected = TF.batch_norm(theirs[0], t_mean, t_var, theirs[1], theirs[2], True, 0.2, 1e-4)
    (expected * torch.tensor(upstream)).sum().backward()
    close(out, expected)
    close(mean.value(), t_mean)
    close(var.value(), t_var)
    for ours, their in zip(leaves, theirs):
        close(gradient(ours, grads), their.grad)


def test_batch_norm_evaluation_matches_torch(device: Device, rng: np.random.Generator) -> None:
    x, mean, var = rng.standard_normal((4, 3, 2)), rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)
    ours = [leaf(a, device) for a in (x, mean, var)]
    out = functional.batch_norm(ours[0], ours[1], ours[2], eps=1e-3)
    theirs = [torch_leaf(x), torch.tensor(mean), torch.tensor(var)]  # running stats take no gradient there
    close(out, TF.batch_norm(theirs[0], theirs[1], theirs[2], eps=1e-3))
    grads = out.sum().backward()
    TF.batch_norm(theirs[0], theirs[1], theirs[2], eps=1e-3).sum().backward()
    close(gradient(ours[0], grads), theirs[0].grad)


def test_batch_norm_without_running_statistics_trains(device: Device, rng: np.random.Generator) -> None:
    x = rng.standard_normal((5, 2))
    out = functional.batch_norm(Tensor.from_data(x, device, DType.F64), None, None, training=True)
    close(out, TF.batch_norm(torch.tensor(x), None, None, training=True))


def test_batch_norm_layer_and_function_agree(device: Device, rng: np.random.Generator) -> None:
    x = Tensor.from_data(rng.standard_normal((6, 3, 4)), device)
    layer = BatchNormConfig(3, momentum=0.3).init(device)
    mean, var = RunningState(Tensor.zeros([3], device)), RunningState(Tensor.ones([3], device))
    np.testing.assert_allclose(
        layer(x).to_numpy(), functional.batch_norm(x, mean, var, training=True, momentum=0.3).to_numpy()
    )
    np.testing.assert_allclose(layer.running_mean.value().to_numpy(), mean.value().to_numpy())
    np.testing.assert_allclose(layer.running_var.value().to_numpy(), var.value().to_numpy())


def test_batch_norm_errors(device: Device) -> None:
    x = Tensor.ones([4, 3], device)
    stats = Tensor.zeros([3], device)
    with pytest.raises(
        TypeError, match=r"batch_norm: running_mean is a Tensor, which training cannot update"
    ):
        functional.batch_norm(x, stats, None, training=True)
    with pytest.raises(
        ValueError, match=r"batch_norm: evaluation \(training=False\) normalizes with running_mean"
    ):
        functional.batch_norm(x, None, None)
    with pytest.raises(ValueError, match=r"batch_norm: weight must have shape \[3\] .*got \[4\]"):
        functional.batch_norm(x, stats, stats, Tensor.ones([4], device))
    with pytest.raises(ValueError, match=r"batch_norm: expected more than 1 value per channel when training"):
        functional.batch_norm(Tensor.ones([1, 3], device), None, None, training=True)
    with pytest.raises(ValueError, match=r"batch_norm: x must have shape \[batch, channels, \.\.\.\]"):
        functional.batch_norm(Tensor.ones([3], device), stats, stats)
    with pytest.raises(ValueError, match=r"batch_norm: momentum must be in \[0, 1\]"):
        functional.batch_norm(x, stats, stats, momentum=2.0)


# -- group norm ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "groups"), [((2, 6, 5), 3), ((3, 4, 2, 3), 4), ((2, 4), 1)], ids=str)
def test_group_norm_matches_torch(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], groups: int
) -> None:
    channels = shape[1]
    x, weight, bias = rng.standard_normal(shape), rng.standard_normal(channels), rng.standard_normal(channels)
    upstream = rng.standard_normal(shape)
    ours = [leaf(a, device) for a in (x, weight, bias)]
    out = functional.group_norm(ours[0], groups, ours[1], ours[2], 1e-3)
    grads = (out * Tensor.from_data(upstream, device, DType.F64)).sum().backward()
    theirs = [torch_leaf(a) for a in (x, weight, bias)]
    expected = TF.group_norm(theirs[0], groups, theirs[1], theirs[2], 1e-3)
    (expected * torch.tensor(upstream)).sum().backward()
    close(out, expected)
    for our, their in zip(ours, theirs):
        close(gradient(our, grads), their.grad)
    close(functional.group_norm(ours[0].detach(), groups), TF.group_norm(torch.tensor(x), groups))


def test_group_norm_errors(device: Device) -> None:
    with pytest.raises(
        ValueError, match=r"group_norm: the 6 channels of x \[2, 6\] do not split into 4 groups"
    ):
        functional.group_norm(Tensor.ones([2, 6], device), 4)
    with pytest.raises(ValueError, match=r"group_norm: num_groups must be a positive int"):
        functional.group_norm(Tensor.ones([2, 6], device), 0)
    with pytest.raises(TypeError, match=r"group_norm: bias has dtype f64, x has f32"):
        functional.group_norm(
            Tensor.ones([2, 6], device, DType.F32), 2, None, Tensor.ones([6], device, DType.F64)
        )


# -- cross-entropy ---------------------------------------------------------------------------------------
REDUCTIONS = {Reduction.AUTO: "mean", Reduction.MEAN: "mean", Reduction.SUM: "sum", Reduction.NONE: "none"}


@pytest.mark.parametrize("reduction", list(REDUCTIONS), ids=str)
@pytest.mark.parametrize(
    ("weights", "pad", "smoothing"),
    [(None, None, None), ((0.5, 2.0, 1.0, 1.5), None, None), (None, 2, 0.1), ((0.5, 2.0, 1.0, 1.5), 1, 0.2)],
    ids=str,
)
def test_cross_entropy_matches_torch(
    device: Device,
    rng: np.random.Generator,
    weights: tuple[float, ...] | None,
    pad: int | None,
    smoothing: float | None,
    reduction: Reduction,
) -> None:
    logits, targets = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    targets[0] = 2  # at least one sample of each kind where pad is 1 or 2
    targets[1] = 1
    ours = leaf(logits, device)
    out = functional.cross_entropy(
        ours,
        Tensor.from_data(targets, device),
        weights,
        None if pad is None else [pad],
        smoothing,
        reduction,
    )
    theirs = torch_leaf(logits)
    expected = TF.cross_entropy(
        theirs,
        torch.tensor(targets),
        weight=None if weights is None else torch.tensor(weights, dtype=torch.float64),
        ignore_index=-100 if pad is None else pad,
        reduction=REDUCTIONS[reduction],
        label_smoothing=smoothing or 0.0,
    )
    close(out, expected.reshape(out.dims()))
    grads = out.sum().backward()
    expected.sum().backward()
    close(gradient(ours, grads), theirs.grad)


def test_cross_entropy_takes_weights_as_a_tensor(device: Device, rng: np.random.Generator) -> None:
    logits, targets, weights = rng.standard_normal((5, 3)), rng.integers(0, 3, 5), rng.uniform(0.5, 2, 3)
    out = functional.cross_entropy(
        Tensor.from_data(logits, device, DType.F64),
        Tensor.from_data(targets, device),
        Tensor.from_data(weights, device, DType.F64),
    )
    close(
        out, TF.cross_entropy(torch.tensor(logits), torch.tensor(targets), torch.tensor(weights)).reshape(1)
    )


def test_cross_entropy_with_logits_matches_torch(device: Device, rng: np.random.Generator) -> None:
    logits = rng.standard_normal((2, 3, 5))
    probs = rng.uniform(0.1, 1.0, (2, 3, 5))
    probs /= probs.sum(-1, keepdims=True)
    ours = leaf(logits, device)
    out = functional.cross_entropy_with_logits(ours, Tensor.from_data(probs, device, DType.F64))
    theirs = torch_leaf(logits)
    expected = TF.cross_entropy(theirs.reshape(6, 5), torch.tensor(probs).reshape(6, 5))
    close(out, expected.reshape(1))
    grads = out.backward()
    expected.backward()
    close(gradient(ours, grads), theirs.grad)


def test_cross_entropy_errors(device: Device) -> None:
    logits = Tensor.ones([2, 3], device)
    targets = Tensor.from_data([0, 1], device)
    with pytest.raises(ValueError, match=r"cross_entropy: class weights must be positive"):
        functional.cross_entropy(logits, targets, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"cross_entropy: 2 class weights given for logits of 3 classes"):
        functional.cross_entropy(logits, targets, [1.0, 1.0])
    with pytest.raises(TypeError, match=r"cross_entropy: targets must be an Int tensor"):
        functional.cross_entropy(logits, logits)
    with pytest.raises(ValueError, match=r"cross_entropy: smoothing \(alpha\) must be in \[0, 1\]"):
        functional.cross_entropy(logits, targets, smoothing=1.5)
    with pytest.raises(TypeError, match=r"cross_entropy: pad tokens must be ints"):
        functional.cross_entropy(logits, targets, pad_tokens=[1.5])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"cross_entropy_with_logits: logits and targets need one shape"):
        functional.cross_entropy_with_logits(logits, Tensor.ones([2, 4], device))


# -- the namespace ---------------------------------------------------------------------------------------
def test_functional_holds_the_functions_of_activation_and_module_too() -> None:
    own = {"dropout", "batch_norm", "group_norm", "cross_entropy", "cross_entropy_with_logits"}
    expected = own | set(burn_backend.activation.__all__) | set(burn_backend.module.__all__)
    assert set(functional.__all__) == expected
    assert len(functional.__all__) == len(expected)
    assert functional.relu is burn_backend.activation.relu
    assert functional.pad is burn_backend.module.pad
    assert {name for name in dir(functional) if not name.startswith("_")} == expected
