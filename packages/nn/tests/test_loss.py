"""Losses against PyTorch's ``torch.nn.functional``: values for every reduction, and gradients through
``Autodiff(NdArray())``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Tensor
from burn_nn import ConfigError
from burn_nn.loss import (
    BinaryCrossEntropyLoss,
    BinaryCrossEntropyLossConfig,
    CosineEmbeddingLossConfig,
    CrossEntropyLoss,
    CrossEntropyLossConfig,
    HuberLossConfig,
    KLDivLossConfig,
    MseLoss,
    Reduction,
    SmoothL1LossConfig,
)

REDUCTIONS = [Reduction.MEAN, Reduction.SUM, Reduction.NONE]


def leaf(array: np.ndarray[Any, Any], device: Device) -> Tensor:
    """A tensor requiring a gradient."""
    return Tensor.from_data(array, device, array.dtype).require_grad()


def backward_sum(loss: Tensor) -> Any:
    """Gradients of the sum of ``loss`` (so unreduced losses have a scalar to differentiate)."""
    return (loss.sum() if loss.dims() != [1] else loss).backward()


def torch_backward(loss: Any) -> None:
    (loss.sum() if loss.dim() > 0 else loss).backward()


def as_ours(theirs: Any, ours: Tensor) -> Any:
    """Torch's reduced scalar as shape [1], like ours."""
    return theirs.reshape(1) if theirs.dim() == 0 and ours.dims() == [1] else theirs


TORCH_NAME = {
    Reduction.MEAN: "mean",
    Reduction.SUM: "sum",
    Reduction.NONE: "none",
    Reduction.BATCH_MEAN: "batchmean",
}


def assert_matches_torch(
    ref: Any,
    device: Device,
    ours: Any,
    theirs: Any,
    arrays: list[np.ndarray[Any, Any]],
    reductions: list[Reduction] = REDUCTIONS,
    scale: float = 1.0,
    auto: str = "mean",
) -> None:
    """For each reduction, ``ours(*inputs, reduction)`` equals ``theirs(*torch_inputs, torch_reduction)``,
    and so do the gradients of every input (the sum of unreduced losses is differentiated); ``auto`` is
    PyTorch's name of the loss's ``Reduction.AUTO``."""
    for reduction in reductions:
        leaves = [leaf(array, device) for array in arrays]
        loss = ours(*leaves, reduction)
        grads = backward_sum(loss)
        torch_leaves = [ref.tensor(array, requires_grad=True) for array in arrays]
        expected = theirs(*torch_leaves, auto if reduction is Reduction.AUTO else TORCH_NAME[reduction])
        torch_backward(expected)
        ref.close(loss, as_ours(expected, loss), scale)
        for ours_leaf, torch_leaf in zip(leaves, torch_leaves):
            ref.close(ours_leaf.grad(grads), torch_leaf.grad, scale)


# -- cross-entropy -----------------------------------------------------------------------------------
CE_VARIANTS = {
    "plain": {},
    "weights": {"weights": (0.5, 2.0, 1.0, 3.0, 1.5)},
    "smoothing": {"smoothing": 0.2},
    "weights+smoothing": {"weights": (0.5, 2.0, 1.0, 3.0, 1.5), "smoothing": 0.1},
    "pad-class": {"pad_tokens": (2,)},
    "pad-outside": {"pad_tokens": (-100,)},
    "pad+weights+smoothing": {"pad_tokens": (2,), "weights": (0.5, 2.0, 1.0, 3.0, 1.5), "smoothing": 0.3},
}
CE_TARGETS = np.array([1, 2, 4, 0, 2, 3], dtype=np.int64)


def _torch_ce_kwargs(ref: Any, settings: dict[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if "weights" in settings:
        kwargs["weight"] = ref.torch.tensor(settings["weights"], dtype=ref.torch.float32)
    if "smoothing" in settings:
        kwargs["label_smoothing"] = settings["smoothing"]
    if "pad_tokens" in settings:
        kwargs["ignore_index"] = settings["pad_tokens"][0]
    return kwargs


@pytest.mark.parametrize("variant", list(CE_VARIANTS))
def test_cross_entropy_matches_torch(device: Device, rng: Any, ref: Any, variant: str) -> None:
    settings = CE_VARIANTS[variant]
    targets = CE_TARGETS.copy()
    if variant == "pad-outside":
        targets[[1, 4]] = -100
    loss_fn = CrossEntropyLossConfig(**settings).init(device)
    assert_matches_torch(
        ref,
        device,
        lambda logits, reduction: loss_fn(logits, Tensor.from_data(targets, device), reduction),
        lambda logits, reduction: ref.torch.nn.functional.cross_entropy(
            logits, ref.torch.tensor(targets), reduction=reduction, **_torch_ce_kwargs(ref, settings)
        ),
        [rng.normal(size=(6, 5)).astype(np.float32) * 2],
    )


def test_cross_entropy_pad_rows_neither_cost_nor_learn(device: Device, rng: Any) -> None:
    logits = leaf(rng.normal(size=(6, 5)).astype(np.float32), device)
    loss_fn = CrossEntropyLossConfig(pad_tokens=(2,), weights=(1.0, 2.0, 1.0, 1.0, 1.0)).init(device)
    losses = loss_fn(logits, Tensor.from_data(CE_TARGETS, device), Reduction.NONE)
    gradient = logits.grad(losses.sum().backward()).to_numpy()
    padded = CE_TARGETS == 2
    assert np.all(losses.to_numpy()[padded] == 0.0)
    assert np.all(losses.to_numpy()[~padded] > 0.0)
    assert np.all(gradient[padded] == 0.0)
    assert np.all(np.abs(gradient[~padded]).sum(axis=1) > 0.0)


def test_cross_entropy_auto_is_mean_and_the_default(device: Device, rng: Any) -> None:
    logits = Tensor.from_data(rng.normal(size=(6, 5)).astype(np.float32), device)
    targets = Tensor.from_data(CE_TARGETS, device)
    loss_fn = CrossEntropyLossConfig(weights=(1.0, 2.0, 3.0, 4.0, 5.0)).init(device)
    default = loss_fn(logits, targets).into_scalar()
    assert default == loss_fn(logits, targets, Reduction.MEAN).into_scalar()
    assert default == loss_fn(logits, targets, Reduction.AUTO).into_scalar()
    # the weighted mean divides by the weights of the targets, not by the batch size
    total = loss_fn(logits, targets, Reduction.SUM).into_scalar()
    assert default == pytest.approx(total / (2 + 3 + 5 + 1 + 3 + 4), rel=1e-6)


def test_cross_entropy_several_pad_tokens_drop_their_samples(device: Device, rng: Any, ref: Any) -> None:
    logits_np = rng.normal(size=(6, 5)).astype(np.float32)
    logits = leaf(logits_np, device)
    loss_fn = CrossEntropyLossConfig(pad_tokens=(2, 0), smoothing=0.1).init(device)
    loss = loss_fn(logits, Tensor.from_data(CE_TARGETS, device))
    grads = loss.backward()

    keep = np.isin(CE_TARGETS, (2, 0), invert=True)
    torch_logits = ref.tensor(logits_np, requires_grad=True)
    expected = ref.torch.nn.functional.cross_entropy(
        torch_logits[ref.torch.tensor(keep)], ref.torch.tensor(CE_TARGETS[keep]), label_smoothing=0.1
    )
    expected.backward()
    ref.close(loss, expected.reshape(1))
    ref.close(logits.grad(grads), torch_logits.grad)


@pytest.mark.parametrize("smoothing", [None, 0.2])
def test_cross_entropy_of_probabilities(device: Device, rng: Any, ref: Any, smoothing: float | None) -> None:
    # with logits=False the inputs are probabilities, logged as they are: PyTorch's nll_loss of log(p),
    # plus its label-smoothing term (the formula of torch's cross_entropy, on log(p) for log_softmax)
    raw = rng.uniform(0.05, 1.0, size=(6, 5))
    probs_np = (raw / raw.sum(axis=1, keepdims=True)).astype(np.float32)
    probs = leaf(probs_np, device)
    weights = (1.0, 0.5, 2.0, 1.0, 3.0)
    loss_fn = CrossEntropyLossConfig(weights=weights, smoothing=smoothing, logits=False).init(device)
    loss = loss_fn(probs, Tensor.from_data(CE_TARGETS, device))
    grads = loss.backward()

    torch_probs = ref.tensor(probs_np, requires_grad=True)
    torch_weights, torch_targets = ref.torch.tensor(weights), ref.torch.tensor(CE_TARGETS)
    log_probs = torch_probs.log()
    expected = ref.torch.nn.functional.nll_loss(log_probs, torch_targets, weight=torch_weights)
    if smoothing is not None:
        smooth = -(log_probs * torch_weights).sum() / torch_weights[torch_targets].sum()
        expected = (1 - smoothing) * expected + smoothing / 5 * smooth
        # the same value as cross_entropy on log(p), whose log_softmax changes nothing
        same = ref.torch.nn.functional.cross_entropy(
            log_probs, torch_targets, weight=torch_weights, label_smoothing=smoothing
        )
        assert same.item() == pytest.approx(expected.item(), rel=1e-5)
    expected.backward()
    ref.close(loss, expected.reshape(1))
    ref.close(probs.grad(grads), torch_probs.grad)


def test_cross_entropy_of_zero_probability_is_finite(device: Device) -> None:
    probs = Tensor.from_data([[0.0, 1.0], [1.0, 0.0]], device)
    loss = CrossEntropyLossConfig(logits=False).init(device)(probs, Tensor.from_data([0, 0], device))
    value = loss.into_scalar()
    # log is taken of max(p, sqrt(min_positive)): -log(sqrt(2^-126)) / 2 for the one certain mistake
    assert value == pytest.approx(-math.log(math.sqrt(np.finfo(np.float32).tiny)) / 2, rel=1e-5)


def test_cross_entropy_is_stable_for_large_logits(device: Device, ref: Any) -> None:
    logits_np = np.array([[1e4, -1e4, 0.0], [-3e4, 3e4, 1.0]], dtype=np.float32)
    targets = np.array([1, 0])
    logits = leaf(logits_np, device)
    loss = CrossEntropyLossConfig().init(device)(logits, Tensor.from_data(targets, device))
    grads = loss.backward()
    torch_logits = ref.tensor(logits_np, requires_grad=True)
    expected = ref.torch.nn.functional.cross_entropy(torch_logits, ref.torch.tensor(targets))
    expected.backward()
    assert loss.into_scalar() == pytest.approx(4e4, rel=1e-6)
    ref.close(loss, expected.reshape(1))
    ref.close(logits.grad(grads), torch_logits.grad)


def test_cross_entropy_float64(device: Device, rng: Any, ref: Any) -> None:
    logits_np = rng.normal(size=(4, 3))
    targets = np.array([0, 2, 1, 2])
    logits = leaf(logits_np, device)
    loss_fn = CrossEntropyLossConfig(weights=(1.0, 2.0, 0.5), smoothing=0.05).init(device)
    loss = loss_fn(logits, Tensor.from_data(targets, device))
    assert loss.dtype.value == "f64"
    grads = loss.backward()
    torch_logits = ref.tensor(logits_np, requires_grad=True)
    expected = ref.torch.nn.functional.cross_entropy(
        torch_logits,
        ref.torch.tensor(targets),
        weight=ref.torch.tensor([1.0, 2.0, 0.5], dtype=ref.torch.float64),
        label_smoothing=0.05,
    )
    expected.backward()
    ref.close(loss, expected.reshape(1))
    ref.close(logits.grad(grads), torch_logits.grad)


def test_cross_entropy_all_padded_is_nan(device: Device) -> None:
    logits = Tensor.from_data(np.zeros((2, 3), dtype=np.float32), device)
    loss = CrossEntropyLossConfig(pad_tokens=(1,)).init(device)(logits, Tensor.from_data([1, 1], device))
    assert math.isnan(loss.into_scalar())


def test_cross_entropy_runs_on_the_evaluation_device(device: Device, inner_device: Device) -> None:
    # the weights were made on the autodiff device; an evaluation model's logits are on the inner one
    loss_fn = CrossEntropyLossConfig(weights=(1.0, 3.0)).init(device)
    logits = Tensor.from_data([[0.0, 0.0], [0.0, 0.0]], inner_device)
    loss = loss_fn(logits, Tensor.from_data([0, 1], inner_device))
    assert loss.device == inner_device
    assert loss.into_scalar() == pytest.approx(math.log(2.0), rel=1e-6)


def test_cross_entropy_config_round_trips_through_json() -> None:
    config = CrossEntropyLossConfig(pad_tokens=(0, 3), weights=(1.0, 2.0), smoothing=0.1, logits=False)
    assert CrossEntropyLossConfig.from_json(config.to_json()) == config
    with pytest.raises(ConfigError, match="smoothing"):
        CrossEntropyLossConfig.from_json('{"smoothing": "high"}')


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"smoothing": 1.5}, ValueError, r"smoothing \(alpha\) must be in \[0, 1\], got 1.5"),
        ({"smoothing": -0.1}, ValueError, r"smoothing \(alpha\) must be in \[0, 1\]"),
        ({"weights": (1.0, 0.0)}, ValueError, "class weights must be positive"),
        ({"weights": (1.0, float("nan"))}, ValueError, "class weights must be positive"),
        ({"pad_tokens": (1.5,)}, TypeError, r"pad_tokens\[0\] must be an int, got 1.5"),
    ],
)
def test_cross_entropy_rejects_bad_configs(device: Device, settings: Any, error: Any, match: str) -> None:
    with pytest.raises(error, match=match):
        CrossEntropyLossConfig(**settings).init(device)


def test_cross_entropy_rejects_bad_inputs(device: Device) -> None:
    loss_fn = CrossEntropyLossConfig().init(device)
    logits = Tensor.from_data(np.zeros((3, 4), dtype=np.float32), device)
    targets = Tensor.from_data([0, 1, 3], device)
    with pytest.raises(
        ValueError, match=r"targets must have shape \[3\] for logits of shape \[3, 4\], got \[2\]"
    ):
        loss_fn(logits, Tensor.from_data([0, 1], device))
    with pytest.raises(TypeError, match="targets must be an Int tensor of class indices, got shape"):
        loss_fn(logits, targets.float())
    with pytest.raises(ValueError, match="logits must have rank 2, got shape \\[12\\]"):
        loss_fn(logits.reshape([12]), targets)
    with pytest.raises(ValueError, match=r"class indices in \[0, 4\), got values in \[0, 4\]"):
        loss_fn(logits, Tensor.from_data([0, 4, 1], device))
    with pytest.raises(ValueError, match=r"class indices in \[0, 4\), got values in \[-1, 3\]"):
        loss_fn(logits, Tensor.from_data([-1, 3, 1], device))
    with pytest.raises(ValueError, match="BATCH_MEAN is not supported"):
        loss_fn(logits, targets, Reduction.BATCH_MEAN)
    with pytest.raises(TypeError, match="reduction must be a Reduction, got 'mean'"):
        loss_fn(logits, targets, "mean")
    with pytest.raises(ValueError, match="3 class weights given for logits of 4 classes"):
        CrossEntropyLossConfig(weights=(1.0, 1.0, 1.0)).init(device)(logits, targets)


# -- binary cross-entropy ----------------------------------------------------------------------------
def weighted_binary_cross_entropy(ref: Any) -> Any:
    """PyTorch's ``binary_cross_entropy`` with its ``weight`` applied outside: the same values, but
    without the several seconds its first weighted call spends importing."""

    def loss(inputs: Any, targets: Any, weight: Any = None, reduction: str = "mean") -> Any:
        values = ref.torch.nn.functional.binary_cross_entropy(inputs, targets, reduction="none")
        if weight is not None:
            values = values * weight
        return {"mean": values.mean, "sum": values.sum, "none": lambda: values}[reduction]()

    return loss


@pytest.mark.parametrize("logits", [True, False], ids=["logits", "probabilities"])
@pytest.mark.parametrize("variant", ["plain", "weights", "smoothing", "weights+smoothing"])
def test_binary_cross_entropy_multilabel_matches_torch(
    device: Device, rng: Any, ref: Any, variant: str, logits: bool
) -> None:
    F = ref.torch.nn.functional
    weights = (3.0, 0.5, 1.5) if "weights" in variant else None
    smoothing = 0.1 if "smoothing" in variant else None
    scores = rng.normal(size=(4, 3)).astype(np.float32) * 3
    inputs = scores if logits else (1 / (1 + np.exp(-scores))).astype(np.float32)
    labels = rng.integers(0, 2, size=(4, 3))
    loss_fn = BinaryCrossEntropyLossConfig(weights=weights, smoothing=smoothing, logits=logits).init(device)
    targets = ref.torch.tensor(labels, dtype=ref.torch.float32)
    if smoothing is not None:  # Burn's rule: alpha / num_classes (the size of the last dim)
        targets = targets * (1 - smoothing) + smoothing / 3
    torch_fn = F.binary_cross_entropy_with_logits if logits else weighted_binary_cross_entropy(ref)
    assert_matches_torch(
        ref,
        device,
        lambda x, reduction: loss_fn(x, Tensor.from_data(labels, device), reduction),
        lambda x, reduction: torch_fn(
            x, targets, weight=None if weights is None else ref.torch.tensor(weights), reduction=reduction
        ),
        [inputs],
        scale=2.0,
    )


@pytest.mark.parametrize("logits", [True, False], ids=["logits", "probabilities"])
def test_binary_cross_entropy_binary_weights_pick_the_label_weight(
    device: Device, rng: Any, ref: Any, logits: bool
) -> None:
    scores = rng.normal(size=(6,)).astype(np.float32)
    inputs_np = scores if logits else (1 / (1 + np.exp(-scores))).astype(np.float32)
    labels = np.array([0, 1, 1, 0, 1, 0])
    inputs = leaf(inputs_np, device)
    loss_fn = BinaryCrossEntropyLossConfig(weights=(3.0, 7.0), smoothing=0.2, logits=logits).init(device)
    loss = loss_fn(inputs, Tensor.from_data(labels, device))
    grads = loss.backward()

    torch_inputs = ref.tensor(inputs_np, requires_grad=True)
    targets = ref.torch.tensor(labels, dtype=ref.torch.float32) * 0.8 + 0.1  # alpha / 2 for binary inputs
    F = ref.torch.nn.functional
    torch_fn = F.binary_cross_entropy_with_logits if logits else weighted_binary_cross_entropy(ref)
    expected = torch_fn(torch_inputs, targets, weight=ref.torch.tensor([3.0, 7.0])[ref.torch.tensor(labels)])
    expected.backward()
    ref.close(loss, expected.reshape(1))
    ref.close(inputs.grad(grads), torch_inputs.grad)


def test_binary_cross_entropy_with_burn_reference_values(device: Device) -> None:
    # the values of Burn's own tests (computed there with PyTorch)
    logits = Tensor.from_data([0.8271, 0.9626, 0.3796, 0.2355], device)
    targets = Tensor.from_data([0, 1, 0, 1], device)
    loss = BinaryCrossEntropyLossConfig(logits=True).init(device)(logits, targets)
    assert loss.into_scalar() == pytest.approx(0.7491, abs=1e-4)
    weighted = BinaryCrossEntropyLossConfig(weights=(3.0, 7.0), logits=True).init(device)(logits, targets)
    assert weighted.into_scalar() == pytest.approx(3.1531, abs=1e-4)
    certain_mistakes = Tensor.from_data([1.0, 0.0, 1.0, 0.0], device)
    clamped = BinaryCrossEntropyLossConfig().init(device)(certain_mistakes, targets)
    assert clamped.into_scalar() == pytest.approx(100.0)


def test_binary_cross_entropy_with_logits_is_stable(device: Device, ref: Any) -> None:
    scores = np.array([[200.0, -200.0, 30.0], [-90.0, 90.0, 0.0]], dtype=np.float32)
    labels = np.array([[0, 1, 1], [0, 1, 0]])
    inputs = leaf(scores, device)
    loss = BinaryCrossEntropyLossConfig(logits=True).init(device)(
        inputs, Tensor.from_data(labels, device), Reduction.NONE
    )
    grads = loss.sum().backward()
    torch_inputs = ref.tensor(scores, requires_grad=True)
    expected = ref.torch.nn.functional.binary_cross_entropy_with_logits(
        torch_inputs, ref.torch.tensor(labels, dtype=ref.torch.float32), reduction="none"
    )
    expected.sum().backward()
    assert np.isfinite(loss.to_numpy()).all()
    assert loss.to_numpy()[0, 0] == pytest.approx(200.0)
    ref.close(loss, expected)
    ref.close(inputs.grad(grads), torch_inputs.grad)


def test_binary_cross_entropy_float_targets_and_float64(device: Device, rng: Any, ref: Any) -> None:
    scores = rng.normal(size=(3, 4))
    soft = rng.uniform(size=(3, 4))
    inputs = leaf(scores, device)
    targets = Tensor.from_data(soft, device, soft.dtype)
    loss = BinaryCrossEntropyLossConfig(logits=True).init(device)(inputs, targets)
    assert loss.dtype.value == "f64"
    grads = loss.backward()
    torch_inputs = ref.tensor(scores, requires_grad=True)
    expected = ref.torch.nn.functional.binary_cross_entropy_with_logits(torch_inputs, ref.tensor(soft))
    expected.backward()
    ref.close(loss, expected.reshape(1))
    ref.close(inputs.grad(grads), torch_inputs.grad)


def test_binary_cross_entropy_rejects_bad_inputs(device: Device) -> None:
    logits = Tensor.from_data(np.zeros((2, 3), dtype=np.float32), device)
    labels = Tensor.from_data(np.zeros((2, 3), dtype=np.int64), device)
    with pytest.raises(ValueError, match=r"logits and targets need one shape, got \[2, 3\] and \[3, 2\]"):
        BinaryCrossEntropyLossConfig().init(device)(logits, labels.reshape([3, 2]))
    with pytest.raises(ValueError, match="2 class weights given for targets of 3 classes"):
        BinaryCrossEntropyLossConfig(weights=(1.0, 2.0)).init(device)(logits, labels)
    binary = BinaryCrossEntropyLossConfig(weights=(1.0, 2.0)).init(device)
    with pytest.raises(TypeError, match="binary targets with class weights must be Int labels"):
        binary(logits.reshape([6]), labels.reshape([6]).float())
    with pytest.raises(ValueError, match=r"class indices in \[0, 2\), got values in \[0, 2\]"):
        binary(logits.reshape([6]), Tensor.from_data([0, 1, 2, 0, 1, 0], device))
    with pytest.raises(TypeError, match="targets must be Int labels or Float targets"):
        BinaryCrossEntropyLossConfig().init(device)(logits, labels.bool())
    with pytest.raises(ValueError, match=r"smoothing \(alpha\) must be in \[0, 1\]"):
        BinaryCrossEntropyLossConfig(smoothing=2.0).init(device)
    with pytest.raises(ValueError, match="class weights must be positive"):
        BinaryCrossEntropyLossConfig(weights=(-1.0, 1.0)).init(device)


def test_binary_cross_entropy_defaults_follow_burn(device: Device) -> None:
    loss_fn = BinaryCrossEntropyLossConfig().init(device)
    assert isinstance(loss_fn, BinaryCrossEntropyLoss)
    assert loss_fn.logits is False  # Burn's default: probabilities
    assert CrossEntropyLossConfig().logits is True
    assert isinstance(CrossEntropyLossConfig().init(device), CrossEntropyLoss)


# -- regression losses -------------------------------------------------------------------------------
def _regression_case(
    device: Device, rng: Any, ref: Any, dtype: Any = np.float32
) -> tuple[Tensor, Tensor, Any, Any]:
    predictions_np = (rng.normal(size=(3, 5)) * 2).astype(dtype)
    targets_np = rng.normal(size=(3, 5)).astype(dtype)
    predictions, targets = leaf(predictions_np, device), leaf(targets_np, device)
    return predictions, targets, ref.tensor(predictions_np, True), ref.tensor(targets_np, True)


def test_mse_matches_torch(device: Device, rng: Any, ref: Any) -> None:
    assert_matches_torch(
        ref,
        device,
        MseLoss(),
        lambda x, y, reduction: ref.torch.nn.functional.mse_loss(x, y, reduction=reduction),
        [rng.normal(size=(3, 5)).astype(np.float32) * 2, rng.normal(size=(3, 5)).astype(np.float32)],
        [*REDUCTIONS, Reduction.AUTO],
    )


def test_mse_burn_values_and_errors(device: Device) -> None:
    logits = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device)
    targets = Tensor.from_data([[2.0, 1.0], [3.0, 2.0]], device)
    mse = MseLoss()
    assert mse.forward_no_reduction(logits, targets).tolist() == [[1.0, 1.0], [0.0, 4.0]]
    assert mse(logits, targets).tolist() == [1.5]
    assert mse(logits, targets, Reduction.SUM).tolist() == [6.0]
    with pytest.raises(ValueError, match=r"logits and targets need one shape, got \[2, 2\] and \[1, 2\]"):
        mse(logits, targets[0:1])
    with pytest.raises(TypeError, match="logits and targets need one dtype, got f32 and f64"):
        mse(logits, targets.float("f64"))
    with pytest.raises(TypeError, match="targets must be a Float tensor"):
        mse(logits, targets.int())
    with pytest.raises(ValueError, match="BATCH_MEAN is not supported"):
        mse(logits, targets, Reduction.BATCH_MEAN)


@pytest.mark.parametrize("delta", [0.5, 1.0, 2.5])
def test_huber_matches_torch(device: Device, rng: Any, ref: Any, delta: float) -> None:
    assert_matches_torch(
        ref,
        device,
        HuberLossConfig(delta).init(),
        lambda x, y, reduction: ref.torch.nn.functional.huber_loss(x, y, reduction=reduction, delta=delta),
        [rng.normal(size=(3, 5)).astype(np.float32) * 2, rng.normal(size=(3, 5)).astype(np.float32)],
    )


def test_huber_burn_values_and_errors(device: Device) -> None:
    predictions = leaf(np.array([-2.0, -0.5, 0.0, 0.3, 1.0], dtype=np.float32), device)
    targets = Tensor.from_data(np.zeros(5, dtype=np.float32), device)
    huber = HuberLossConfig(0.5).init(device)
    assert huber.lin_bias == 0.125
    unreduced = huber.forward_no_reduction(predictions, targets)
    np.testing.assert_allclose(unreduced.to_numpy(), [0.875, 0.125, 0.0, 0.045, 0.375], rtol=1e-6)
    assert huber(predictions, targets).into_scalar() == pytest.approx(0.284, rel=1e-6)
    grads = unreduced.sum().backward()
    np.testing.assert_allclose(predictions.grad(grads).to_numpy(), [-0.5, -0.5, 0.0, 0.3, 0.5], rtol=1e-6)
    with pytest.raises(ValueError, match=r"delta must be a non-negative number, got -1\.0"):
        HuberLossConfig(-1.0).init()
    with pytest.raises(ValueError, match="delta must be a non-negative number, got nan"):
        HuberLossConfig(float("nan")).init()


@pytest.mark.parametrize("beta", [0.25, 1.0, 3.0])
def test_smooth_l1_matches_torch(device: Device, rng: Any, ref: Any, beta: float) -> None:
    assert_matches_torch(
        ref,
        device,
        SmoothL1LossConfig(beta).init().forward_with_reduction,
        lambda x, y, reduction: ref.torch.nn.functional.smooth_l1_loss(x, y, reduction=reduction, beta=beta),
        [rng.normal(size=(3, 5)).astype(np.float32) * 2, rng.normal(size=(3, 5)).astype(np.float32)],
    )


def test_smooth_l1_forward_is_unreduced_and_reduce_dims_averages(device: Device, rng: Any, ref: Any) -> None:
    predictions_np = rng.normal(size=(2, 3, 4)).astype(np.float32)
    targets_np = rng.normal(size=(2, 3, 4)).astype(np.float32)
    predictions = Tensor.from_data(predictions_np, device)
    targets = Tensor.from_data(targets_np, device)
    smooth_l1 = SmoothL1LossConfig().init()
    expected = ref.torch.nn.functional.smooth_l1_loss(
        ref.tensor(predictions_np), ref.tensor(targets_np), reduction="none"
    )
    ref.close(smooth_l1(predictions, targets), expected)
    per_sample = smooth_l1.forward_reduce_dims(predictions, targets, [-1, 1])
    assert per_sample.dims() == [2, 1, 1]
    ref.close(per_sample, expected.mean(dim=(1, 2), keepdim=True))
    with pytest.raises(IndexError, match="dim 3 is out of range for rank 3"):
        smooth_l1.forward_reduce_dims(predictions, targets, [3])
    with pytest.raises(ValueError, match=r"dims repeat: \[1, -2\]"):
        smooth_l1.forward_reduce_dims(predictions, targets, [1, -2])
    with pytest.raises(ValueError, match=r"the parameter beta must be positive, got 0\.0"):
        SmoothL1LossConfig(0.0).init()


def test_regression_losses_float64(device: Device, rng: Any, ref: Any) -> None:
    predictions, targets, torch_predictions, torch_targets = _regression_case(device, rng, ref, np.float64)
    loss = HuberLossConfig(0.7).init()(predictions, targets) + MseLoss()(predictions, targets)
    assert loss.dtype.value == "f64"
    grads = loss.backward()
    F = ref.torch.nn.functional
    expected = F.huber_loss(torch_predictions, torch_targets, delta=0.7) + F.mse_loss(
        torch_predictions, torch_targets
    )
    expected.backward()
    ref.close(loss, expected.reshape(1))
    ref.close(predictions.grad(grads), torch_predictions.grad)


# -- KL divergence -----------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning")
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(device: Device, rng: Any, ref: Any, log_target: bool) -> None:
    def log_softmax(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        shifted = x - x.max(axis=1, keepdims=True)
        return (shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))).astype(np.float32)

    predictions = log_softmax(rng.normal(size=(3, 4)))
    log_targets = log_softmax(rng.normal(size=(3, 4)))
    loss_fn = KLDivLossConfig(log_target=log_target).init()
    reductions = [*REDUCTIONS, Reduction.BATCH_MEAN, Reduction.AUTO]
    if log_target:  # targets are differentiable too
        assert_matches_torch(
            ref,
            device,
            loss_fn,
            lambda x, y, reduction: ref.torch.nn.functional.kl_div(
                x, y, reduction=reduction, log_target=True
            ),
            [predictions, log_targets],
            reductions,
            auto="batchmean",
        )
        return
    targets = np.exp(log_targets)
    targets[0, 1] = 0.0  # a zero target contributes 0, as PyTorch's xlogy
    assert_matches_torch(
        ref,
        device,
        lambda x, reduction: loss_fn(x, Tensor.from_data(targets, device), reduction),
        lambda x, reduction: ref.torch.nn.functional.kl_div(x, ref.tensor(targets), reduction=reduction),
        [predictions],
        reductions,
        auto="batchmean",
    )


def test_kl_div_burn_values(device: Device) -> None:
    predictions = Tensor.from_data([[-1.0, -0.5], [-2.0, -0.2]], device)
    targets = Tensor.from_data([[0.4, 0.6], [0.1, 0.9]], device)
    kl = KLDivLossConfig().init()
    assert kl(predictions, targets, Reduction.SUM).into_scalar() == pytest.approx(0.08191, abs=1e-5)
    assert kl(predictions, targets).into_scalar() == pytest.approx(0.04095, abs=1e-5)
    with pytest.raises(ValueError, match=r"predictions and targets need one shape"):
        kl(predictions, targets.reshape([4]))


# -- cosine embedding --------------------------------------------------------------------------------
@pytest.mark.parametrize("margin", [0.0, 0.3, -0.2])
def test_cosine_embedding_matches_torch(device: Device, rng: Any, ref: Any, margin: float) -> None:
    target = np.array([1, -1, 1, -1, -1, 1])
    assert_matches_torch(
        ref,
        device,
        lambda x, y, reduction: CosineEmbeddingLossConfig(margin, reduction).init()(
            x, y, Tensor.from_data(target, device)
        ),
        lambda x, y, reduction: ref.torch.nn.functional.cosine_embedding_loss(
            x, y, ref.torch.tensor(target), margin=margin, reduction=reduction
        ),
        [rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32)],
    )


def test_cosine_embedding_burn_values_and_zero_vectors(device: Device) -> None:
    eye = Tensor.from_data([[1.0, 0.0], [0.0, 1.0]], device)
    default = CosineEmbeddingLossConfig().init()
    assert default.forward_no_reduction(eye, eye, Tensor.from_data([1, -1], device)).tolist() == [0.0, 1.0]
    margin = CosineEmbeddingLossConfig(margin=0.5, reduction=Reduction.SUM).init()
    assert margin(eye, eye, Tensor.from_data([-1, -1], device)).tolist() == [1.0]
    # a zero vector has similarity 0 and a finite gradient, as in PyTorch
    zeros = leaf(np.zeros((1, 3), dtype=np.float32), device)
    other = Tensor.from_data([[1.0, 2.0, 3.0]], device)
    loss = default(zeros, other, Tensor.from_data([1], device))
    assert loss.into_scalar() == 1.0
    assert np.isfinite(zeros.grad(loss.backward()).to_numpy()).all()


def test_cosine_embedding_rejects_bad_inputs(device: Device) -> None:
    loss_fn = CosineEmbeddingLossConfig().init()
    first = Tensor.from_data(np.ones((2, 3), dtype=np.float32), device)
    with pytest.raises(ValueError, match=r"input1 and input2 need one shape, got \[2, 3\] and \[1, 3\]"):
        loss_fn(first, first[0:1], Tensor.from_data([1, 1], device))
    with pytest.raises(
        ValueError, match=r"target must have shape \[2\] for inputs of shape \[2, 3\], got \[3\]"
    ):
        loss_fn(first, first, Tensor.from_data([1, 1, -1], device))
    with pytest.raises(ValueError, match="BATCH_MEAN is not supported"):
        CosineEmbeddingLossConfig(reduction=Reduction.BATCH_MEAN).init()
    config = CosineEmbeddingLossConfig(margin=0.25, reduction=Reduction.SUM)
    assert CosineEmbeddingLossConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(
    ("inputs", "found"),
    [
        ([0.2, 1.5], r"values in \[0.2, 1.5\]"),
        ([-0.1, 0.5], r"values in \[-0.1, 0.5\]"),
        ([0.5, math.nan], "NaN"),
    ],
    ids=["above-one", "negative", "nan"],
)
def test_binary_cross_entropy_of_probabilities_outside_0_1_is_an_error(device: Device, inputs, found) -> None:
    """As PyTorch's ``binary_cross_entropy`` ("all elements of input should be between 0 and 1"), not NaN."""
    loss = BinaryCrossEntropyLossConfig().init(device)
    probabilities = Tensor.from_data(np.array(inputs, dtype=np.float32), device)
    with pytest.raises(
        ValueError,
        match=rf"^BinaryCrossEntropyLoss: the inputs \(logits=False\) must be probabilities in \[0, 1\], "
        rf"got {found}; for unnormalized scores, use BinaryCrossEntropyLossConfig\(logits=True\)",
    ):
        loss(probabilities, Tensor.from_data(np.array([1.0, 0.0], dtype=np.float32), device))


def test_binary_cross_entropy_targets_must_be_probabilities_or_labels(device: Device) -> None:
    loss = BinaryCrossEntropyLossConfig().init(device)
    probabilities = Tensor.from_data(np.array([0.2, 0.7], dtype=np.float32), device)
    with pytest.raises(
        ValueError, match=r"targets must be probabilities in \[0, 1\], got values in \[0, 1.5\]"
    ):
        loss(probabilities, Tensor.from_data(np.array([1.5, 0.0], dtype=np.float32), device))
    with pytest.raises(
        ValueError, match=r"targets must be class indices in \[0, 2\), got values in \[-1, 1\]"
    ):
        loss(probabilities, Tensor.from_data([1, -1], device))


def test_binary_cross_entropy_with_logits_takes_any_real(device: Device, ref: Any) -> None:
    logits = np.array([-3.0, 0.0, 2.5], dtype=np.float32)
    targets = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    ours = BinaryCrossEntropyLossConfig(logits=True).init(device)(
        Tensor.from_data(logits, device), Tensor.from_data(targets, device)
    )
    theirs = ref.torch.nn.functional.binary_cross_entropy_with_logits(ref.tensor(logits), ref.tensor(targets))
    ref.close(ours, theirs.reshape(1))
