"""Normalization layers against PyTorch: BatchNorm (training statistics, running state, evaluation),
LayerNorm, GroupNorm, InstanceNorm, RmsNorm, and the NormalizationConfig family."""

from __future__ import annotations

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_ndarray import NdArray
from burn_nn import (
    BatchNorm,
    BatchNormConfig,
    Config,
    GroupNorm,
    GroupNormConfig,
    Identity,
    InstanceNorm,
    InstanceNormConfig,
    LayerNorm,
    LayerNormConfig,
    NormalizationConfig,
    Param,
    RmsNorm,
    RmsNormConfig,
)


def _set(module, name, values, device):
    setattr(module, name, Param.initialized(Tensor.from_data(values, device)))


def _forward_backward(module, x_np, upstream, device):
    """Our output, input gradient and the gradients of ``module``'s named params."""
    x = Tensor.from_data(x_np, device).require_grad()
    out = module(x)
    grads = (out * Tensor.from_data(upstream, device)).sum().backward()
    params = {name: param.val().grad(grads) for name, param in module.named_params()}
    return out, x.grad(grads), params


def _torch_forward_backward(ref, layer, x_np, upstream):
    x = ref.tensor(x_np, requires_grad=True)
    out = layer(x)
    (out * ref.tensor(upstream)).sum().backward()
    return out, x.grad


def _compare_step(norm, theirs, x_np, device, ref, rng):
    """One forward and backward (a random upstream gradient) through ``norm`` and torch's ``theirs``,
    outputs and input gradients compared; our output and parameter gradients."""
    upstream = rng.normal(size=x_np.shape).astype(x_np.dtype)
    out, x_grad, grads = _forward_backward(norm, x_np, upstream, device)
    their_out, their_x_grad = _torch_forward_backward(ref, theirs, x_np, upstream)
    ref.close(out, their_out, scale=2)
    ref.close(x_grad, their_x_grad, scale=2)
    return out, grads


def _random_affine(norm, theirs, channels, device, ref, rng):
    """The same random per-channel ``gamma`` (torch's weight) and ``beta`` (bias) in both norms."""
    gamma = rng.uniform(0.5, 1.5, channels).astype(np.float32)
    beta = rng.normal(size=channels).astype(np.float32)
    _set(norm, "gamma", gamma, device)
    _set(norm, "beta", beta, device)
    with ref.torch.no_grad():
        theirs.weight.copy_(ref.tensor(gamma))
        theirs.bias.copy_(ref.tensor(beta))


# -- batch norm --------------------------------------------------------------------------------------
_BATCH_SHAPES = [(6, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 2)]


def _torch_batch_norm(ref, shape, config):
    nn = ref.torch.nn
    kind = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}[len(shape)]
    return kind(config.num_features, eps=config.epsilon, momentum=config.momentum)


@pytest.mark.parametrize("shape", _BATCH_SHAPES, ids=lambda s: f"rank{len(s)}")
def test_batch_norm_training_matches_torch(device, inner_device, rng, ref, shape) -> None:
    config = BatchNormConfig(3, momentum=0.3) if len(shape) == 3 else BatchNormConfig(3)
    norm = config.init(device)
    theirs = _torch_batch_norm(ref, shape, config)
    _random_affine(norm, theirs, 3, device, ref, rng)
    theirs.train()

    for step in range(3):
        x_np = (rng.normal(size=shape) * (step + 1) + step).astype(np.float32)
        theirs.zero_grad()
        _, grads = _compare_step(norm, theirs, x_np, device, ref, rng)
        ref.close(grads["gamma"], theirs.weight.grad, scale=2)
        ref.close(grads["beta"], theirs.bias.grad, scale=2)
        ref.close(norm.running_mean.value(), theirs.running_mean, scale=2)
        ref.close(norm.running_var.value(), theirs.running_var, scale=2)

    # evaluation: the running statistics normalize, and they stay as they are
    evaluated = norm.valid()
    theirs.eval()
    x_np = rng.normal(size=shape).astype(np.float32)
    ref.close(evaluated(Tensor.from_data(x_np, inner_device)), theirs(ref.tensor(x_np)), scale=2)
    ref.close(evaluated.running_mean.value(), theirs.running_mean, scale=2)
    ref.close(evaluated.running_var.value(), theirs.running_var, scale=2)


def test_batch_norm_float64_training_and_evaluation(rng, ref) -> None:
    device = Autodiff(NdArray(float_dtype="f64")).device()
    norm = BatchNormConfig(4, epsilon=1e-3, momentum=0.2).init(device)
    theirs = ref.torch.nn.BatchNorm2d(4, eps=1e-3, momentum=0.2).double()
    for _ in range(2):
        theirs.zero_grad()
        out, grads = _compare_step(norm, theirs, rng.normal(size=(3, 4, 2, 3)), device, ref, rng)
        assert out.dtype.name == "F64"
        ref.close(grads["gamma"], theirs.weight.grad, scale=2)
        ref.close(norm.running_var.value(), theirs.running_var, scale=2)
    theirs.eval()
    x_np = rng.normal(size=(2, 4, 3, 3))
    inner = NdArray(float_dtype="f64").device()
    ref.close(norm.valid()(Tensor.from_data(x_np, inner)), theirs(ref.tensor(x_np)), scale=2)


def test_batch_norm_initial_state_matches_torch(device, ref) -> None:
    norm = BatchNormConfig(5).init(device)
    theirs = ref.torch.nn.BatchNorm1d(5)
    ref.close(norm.gamma.val(), theirs.weight)
    ref.close(norm.beta.val(), theirs.bias)
    ref.close(norm.running_mean.value(), theirs.running_mean)
    ref.close(norm.running_var.value(), theirs.running_var)
    # running statistics are recorded state, not trained parameters
    assert [name for name, _ in norm.named_params()] == ["gamma", "beta"]
    assert norm.num_params() == 10
    assert set(norm.into_record()) == {"gamma", "beta", "running_mean", "running_var"}


def test_batch_norm_evaluation_on_fresh_module_is_identity_and_leaves_state(inner_device, rng) -> None:
    norm = BatchNormConfig(3).init(inner_device)
    x_np = rng.normal(size=(1, 3, 1)).astype(np.float32)  # one value per channel is fine in evaluation
    out = norm(Tensor.from_data(x_np, inner_device)).to_data().to_numpy()
    np.testing.assert_allclose(out, x_np / np.sqrt(1 + 1e-5), rtol=1e-6)
    np.testing.assert_array_equal(norm.running_mean.value().to_data().to_numpy(), np.zeros(3))


def test_batch_norm_errors(device) -> None:
    norm = BatchNormConfig(3).init(device)
    with pytest.raises(ValueError, match=r"BatchNorm: expected an input of shape \[batch, 3, \.\.\.\]"):
        norm(Tensor.zeros([3], device))
    with pytest.raises(ValueError, match=r"BatchNorm: expected 3 channels in dim 1, got shape \[2, 4, 5\]"):
        norm(Tensor.zeros([2, 4, 5], device))
    with pytest.raises(ValueError, match="more than 1 value per channel when training"):
        norm(Tensor.zeros([1, 3, 1], device))
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\]"):
        BatchNormConfig(3, momentum=1.5).init(device)
    with pytest.raises(ValueError, match="num_features must be a positive int"):
        BatchNormConfig(0).init(device)
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        BatchNormConfig(3, epsilon=-1.0).init(device)


# -- layer norm --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("affine", "bias"), [(True, True), (True, False), (False, False)], ids=["affine", "no-bias", "plain"]
)
def test_layer_norm_matches_torch(device, rng, ref, affine, bias) -> None:
    norm = LayerNormConfig(6, epsilon=1e-4, elementwise_affine=affine, bias=bias).init(device)
    theirs = ref.torch.nn.LayerNorm(6, eps=1e-4, elementwise_affine=affine, bias=bias)
    if affine:
        gamma = rng.uniform(0.5, 1.5, 6).astype(np.float32)
        _set(norm, "gamma", gamma, device)
        with ref.torch.no_grad():
            theirs.weight.copy_(ref.tensor(gamma))
    if bias:
        beta = rng.normal(size=6).astype(np.float32)
        _set(norm, "beta", beta, device)
        with ref.torch.no_grad():
            theirs.bias.copy_(ref.tensor(beta))
    _, grads = _compare_step(norm, theirs, rng.normal(size=(2, 3, 6)).astype(np.float32), device, ref, rng)
    assert set(grads) == ({"gamma"} if affine else set()) | ({"beta"} if bias else set())
    if affine:
        ref.close(grads["gamma"], theirs.weight.grad, scale=2)
    if bias:
        ref.close(grads["beta"], theirs.bias.grad, scale=2)
    assert norm.num_params() == sum(p.numel() for p in theirs.parameters())


# -- group and instance norm -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape", "groups", "affine"),
    [((2, 6, 5), 3, True), ((2, 6, 3, 4), 2, False), ((3, 4, 2, 2), 1, True), ((2, 4), 4, True)],
    ids=["rank3-affine", "rank4-plain", "one-group", "rank2-per-channel"],
)
def test_group_norm_matches_torch(device, rng, ref, shape, groups, affine) -> None:
    channels = shape[1]
    norm = GroupNormConfig(groups, channels, epsilon=1e-3, affine=affine).init(device)
    theirs = ref.torch.nn.GroupNorm(groups, channels, eps=1e-3, affine=affine)
    if affine:
        _random_affine(norm, theirs, channels, device, ref, rng)
    x_np = (rng.normal(size=shape) * 2 + 1).astype(np.float32)
    _, grads = _compare_step(norm, theirs, x_np, device, ref, rng)
    if affine:
        # a group of one value normalizes to exactly 0, so gamma's exact gradient is 0 where torch's
        # carries f32 rounding noise of a few 1e-6 (the per-channel case needs more than 2x)
        ref.close(grads["gamma"], theirs.weight.grad, scale=10)
        ref.close(grads["beta"], theirs.bias.grad, scale=2)
    else:
        assert grads == {}


def test_group_norm_is_the_same_in_evaluation(device, inner_device, rng) -> None:
    norm = GroupNormConfig(2, 4).init(device)
    x_np = rng.normal(size=(2, 4, 3)).astype(np.float32)
    training = norm(Tensor.from_data(x_np, device)).to_data().to_numpy()
    evaluation = norm.valid()(Tensor.from_data(x_np, inner_device)).to_data().to_numpy()
    np.testing.assert_allclose(training, evaluation, rtol=1e-6)


def test_group_norm_errors(device) -> None:
    with pytest.raises(ValueError, match="num_channels 6 is not divisible by num_groups 4"):
        GroupNormConfig(4, 6).init(device)
    with pytest.raises(ValueError, match="num_groups must be a positive int"):
        GroupNormConfig(0, 6).init(device)
    norm = GroupNormConfig(2, 6).init(device)
    with pytest.raises(ValueError, match=r"GroupNorm: expected 6 channels in dim 1, got shape \[2, 4, 3\]"):
        norm(Tensor.zeros([2, 4, 3], device))


@pytest.mark.parametrize(
    ("shape", "affine"), [((2, 3, 7), True), ((2, 3, 4, 5), False)], ids=["1d-affine", "2d-plain"]
)
def test_instance_norm_matches_torch(device, rng, ref, shape, affine) -> None:
    nn = ref.torch.nn
    norm = InstanceNormConfig(3, affine=affine).init(device)
    theirs = (nn.InstanceNorm1d if len(shape) == 3 else nn.InstanceNorm2d)(3, affine=affine)
    if affine:
        _random_affine(norm, theirs, 3, device, ref, rng)
    x_np = (rng.normal(size=shape) * 3 - 1).astype(np.float32)
    _, grads = _compare_step(norm, theirs, x_np, device, ref, rng)
    if affine:
        ref.close(grads["gamma"], theirs.weight.grad, scale=2)
        ref.close(grads["beta"], theirs.bias.grad, scale=2)
    assert norm.num_params() == (6 if affine else 0)


def test_instance_norm_errors(device) -> None:
    norm = InstanceNormConfig(3).init(device)
    with pytest.raises(ValueError, match=r"InstanceNorm: expected an input .* rank >= 3, got shape \[2, 3\]"):
        norm(Tensor.zeros([2, 3], device))
    with pytest.raises(ValueError, match="expected 3 channels in dim 1"):
        norm(Tensor.zeros([2, 5, 4], device))


# -- rms norm ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_rms_norm_matches_torch(rng, ref, dtype) -> None:
    device = Autodiff(NdArray(float_dtype=dtype)).device()
    np_dtype = np.float32 if dtype == "f32" else np.float64
    norm = RmsNormConfig(8, epsilon=1e-6).init(device)
    theirs = ref.torch.nn.RMSNorm(8, eps=1e-6).to(ref.torch.float32 if dtype == "f32" else ref.torch.float64)
    gamma = rng.uniform(0.5, 1.5, 8).astype(np_dtype)
    _set(norm, "gamma", gamma, device)
    with ref.torch.no_grad():
        theirs.weight.copy_(ref.tensor(gamma))
    _, grads = _compare_step(norm, theirs, rng.normal(size=(2, 3, 8)).astype(np_dtype), device, ref, rng)
    ref.close(grads["gamma"], theirs.weight.grad, scale=2)


def test_rms_norm_default_init_and_errors(device) -> None:
    norm = RmsNormConfig(4).init(device)
    np.testing.assert_array_equal(norm.gamma.val().to_data().to_numpy(), np.ones(4))
    assert norm.epsilon == 1e-5
    with pytest.raises(ValueError, match=r"RmsNorm: epsilon must be positive, got 0\.0"):
        RmsNormConfig(4, epsilon=0.0).init(device)
    with pytest.raises(ValueError, match=r"RmsNorm: expected an input of shape \[\.\.\., 4\], got \[2, 3\]"):
        norm(Tensor.zeros([2, 3], device))


# -- the family --------------------------------------------------------------------------------------
class _Holder(Config):
    norm: NormalizationConfig


_FAMILY = [
    (NormalizationConfig.Identity(), Identity, 0, (2, 6, 4)),
    (NormalizationConfig.Batch(BatchNormConfig(6, momentum=0.2)), BatchNorm, 6, (2, 6, 4)),
    (NormalizationConfig.Group(GroupNormConfig(3, 6, affine=False)), GroupNorm, 6, (2, 6, 4)),
    (NormalizationConfig.Instance(InstanceNormConfig(6)), InstanceNorm, 6, (2, 6, 4)),
    (NormalizationConfig.Layer(LayerNormConfig(6, bias=False)), LayerNorm, 6, (2, 4, 6)),
    (NormalizationConfig.Rms(RmsNormConfig(6, epsilon=1e-3)), RmsNorm, 6, (2, 4, 6)),
]


@pytest.mark.parametrize(
    ("config", "layer_type", "features", "shape"), _FAMILY, ids=[type(f[0]).__name__ for f in _FAMILY]
)
def test_normalization_config_round_trips_and_builds(
    device, rng, config, layer_type, features, shape
) -> None:
    holder = _Holder(config)
    loaded = _Holder.from_json(holder.to_json())
    assert loaded == holder
    assert type(loaded.norm).__name__ in holder.to_json()
    layer = loaded.norm.init(device)
    assert type(layer) is layer_type
    assert loaded.norm.num_features == features
    x = Tensor.from_data(rng.normal(size=shape).astype(np.float32), device)
    direct = layer_type() if layer_type is Identity else config.config.init(device)
    np.testing.assert_allclose(layer(x).to_data().to_numpy(), direct(x).to_data().to_numpy(), rtol=1e-6)


def test_normalization_config_with_num_features(device) -> None:
    generic = [
        NormalizationConfig.Batch(BatchNormConfig(0)),
        NormalizationConfig.Group(GroupNormConfig(4, 0)),
        NormalizationConfig.Instance(InstanceNormConfig(0)),
        NormalizationConfig.Layer(LayerNormConfig(0)),
        NormalizationConfig.Rms(RmsNormConfig(0)),
    ]
    for config in generic:
        sized = config.with_num_features(12)
        assert (config.num_features, sized.num_features) == (0, 12)
        assert type(sized) is type(config)
        assert sized.init(device).num_params() in (0, 12, 24)
    identity = NormalizationConfig.Identity()
    assert identity.with_num_features(12) is identity
    assert NormalizationConfig.Group(GroupNormConfig(4, 0)).with_num_features(12).config.num_groups == 4
