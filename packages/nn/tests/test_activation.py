"""Activation modules against PyTorch (forward and gradients, f32 and f64), their settings and errors,
and the ActivationConfig family."""

from __future__ import annotations

import math

import numpy as np
import pytest

import burn_nn
from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_ndarray import NdArray
from burn_nn import (
    GLU,
    Activation,
    ActivationConfig,
    Celu,
    CeluConfig,
    Config,
    Elu,
    EluConfig,
    Gelu,
    GeluApproximate,
    HardShrink,
    HardShrinkConfig,
    HardSigmoid,
    HardSigmoidConfig,
    HardSwish,
    Hardtanh,
    HardtanhConfig,
    LeakyRelu,
    LeakyReluConfig,
    LogSigmoid,
    LogSoftmax,
    Mish,
    Param,
    PRelu,
    PReluConfig,
    QuietSoftmax,
    Relu,
    Relu6,
    RRelu,
    RReluConfig,
    Selu,
    Shrink,
    ShrinkConfig,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    SoftplusConfig,
    SoftShrink,
    SoftShrinkConfig,
    Softsign,
    SwiGlu,
    SwiGluConfig,
    Tanh,
    Tanhshrink,
    Threshold,
    ThresholdConfig,
    ThresholdedRelu,
    ThresholdedReluConfig,
)

_SHAPE = (3, 4, 6)

# (id, our module, PyTorch's function of (torch, functional, x))
_CASES = [
    ("relu", Relu(), lambda t, F, x: F.relu(x)),
    ("relu6", Relu6(), lambda t, F, x: F.relu6(x)),
    ("leaky_relu", LeakyReluConfig().init(), lambda t, F, x: F.leaky_relu(x, 0.01)),
    ("leaky_relu_0.2", LeakyReluConfig(0.2).init(), lambda t, F, x: F.leaky_relu(x, 0.2)),
    ("gelu", Gelu(), lambda t, F, x: F.gelu(x)),
    ("gelu_tanh", GeluApproximate(), lambda t, F, x: F.gelu(x, approximate="tanh")),
    ("sigmoid", Sigmoid(), lambda t, F, x: t.sigmoid(x)),
    ("hard_sigmoid", HardSigmoidConfig().init(), lambda t, F, x: t.clamp(0.2 * x + 0.5, 0, 1)),
    # nn.Hardsigmoid's function, written out: F.hardsigmoid's backward scales by a float32 1/6, even in f64
    ("hard_sigmoid_torch", HardSigmoidConfig(1 / 6, 0.5).init(), lambda t, F, x: F.relu6(x + 3) / 6),
    ("log_sigmoid", LogSigmoid(), lambda t, F, x: F.logsigmoid(x)),
    ("silu", SiLU(), lambda t, F, x: F.silu(x)),
    ("hard_swish", HardSwish(), lambda t, F, x: F.hardswish(x)),
    ("mish", Mish(), lambda t, F, x: F.mish(x)),
    ("elu", EluConfig(0.7).init(), lambda t, F, x: F.elu(x, 0.7)),
    ("celu", CeluConfig(1.5).init(), lambda t, F, x: F.celu(x, 1.5)),
    ("selu", Selu(), lambda t, F, x: F.selu(x)),
    ("softplus", SoftplusConfig().init(), lambda t, F, x: F.softplus(x)),
    ("softplus_beta", SoftplusConfig(2.0, 5.0).init(), lambda t, F, x: F.softplus(x, 2.0, 5.0)),
    ("softsign", Softsign(), lambda t, F, x: F.softsign(x)),
    ("softmax", Softmax(1), lambda t, F, x: F.softmax(x, 1)),
    ("log_softmax", LogSoftmax(-1), lambda t, F, x: F.log_softmax(x, -1)),
    ("softmin", Softmin(0), lambda t, F, x: F.softmin(x, 0)),
    (
        "quiet_softmax",
        QuietSoftmax(-1),
        lambda t, F, x: t.exp(x) / (1 + t.exp(x).sum(-1, keepdim=True)),
    ),
    ("tanh", Tanh(), lambda t, F, x: t.tanh(x)),
    ("tanhshrink", Tanhshrink(), lambda t, F, x: F.tanhshrink(x)),
    ("hardtanh", HardtanhConfig(-2.0, 3.0).init(), lambda t, F, x: F.hardtanh(x, -2.0, 3.0)),
    ("threshold", ThresholdConfig(0.5, -1.0).init(), lambda t, F, x: F.threshold(x, 0.5, -1.0)),
    ("thresholded_relu", ThresholdedReluConfig().init(), lambda t, F, x: t.where(x > 1.0, x, 0.0)),
    (
        "shrink",
        ShrinkConfig(1.0, 0.3).init(),
        lambda t, F, x: t.where(x > 1.0, x - 0.3, t.where(x < -1.0, x + 0.3, 0.0)),
    ),
    ("hard_shrink", HardShrinkConfig(1.0).init(), lambda t, F, x: F.hardshrink(x, 1.0)),
    ("soft_shrink", SoftShrinkConfig(1.0).init(), lambda t, F, x: F.softshrink(x, 1.0)),
    ("glu_last", GLU(), lambda t, F, x: F.glu(x, -1)),
    ("glu_dim1", GLU(1), lambda t, F, x: F.glu(x, 1)),
]


def _autodiff_device(dtype: str):
    device = Autodiff(NdArray(float_dtype=dtype)).device()
    device.seed(0)
    return device


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize(("module", "theirs"), [case[1:] for case in _CASES], ids=[c[0] for c in _CASES])
def test_activation_matches_torch(rng, ref, module, theirs, dtype) -> None:
    device = _autodiff_device(dtype)
    np_dtype = np.float32 if dtype == "f32" else np.float64
    x_np = (rng.normal(size=_SHAPE) * 3).astype(np_dtype)
    x = Tensor.from_data(x_np, device).require_grad()
    out = module(x)
    their_x = ref.tensor(x_np, requires_grad=True)
    their_out = theirs(ref.torch, ref.torch.nn.functional, their_x)
    assert out.dims() == list(their_out.shape)
    ref.close(out, their_out, scale=2)

    upstream = rng.normal(size=tuple(their_out.shape)).astype(np_dtype)
    grads = (out * Tensor.from_data(upstream, device)).sum().backward()
    (their_out * ref.tensor(upstream)).sum().backward()
    ref.close(x.grad(grads), their_x.grad, scale=2)


def test_activation_modules_are_activations_without_params() -> None:
    for name, module, _ in _CASES:
        assert isinstance(module, Activation), name
        assert module.num_params() == 0, name
    assert repr(LeakyReluConfig(0.2).init()) == "LeakyRelu {negative_slope: 0.2, params: 0}"


# -- PRelu ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_parameters", [1, 4])
def test_prelu_matches_torch(device, rng, ref, num_parameters) -> None:
    prelu = PReluConfig(num_parameters).init(device)
    theirs = ref.torch.nn.PReLU(num_parameters)
    ref.close(prelu.alpha.val(), theirs.weight)  # both start at 0.25
    alpha = rng.uniform(0.05, 0.5, num_parameters).astype(np.float32)
    prelu.alpha = Param.initialized(Tensor.from_data(alpha, device))
    with ref.torch.no_grad():
        theirs.weight.copy_(ref.tensor(alpha))
    x_np = (rng.normal(size=(2, 4, 5)) * 2).astype(np.float32)
    upstream = rng.normal(size=(2, 4, 5)).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    out = prelu(x)
    grads = (out * Tensor.from_data(upstream, device)).sum().backward()
    their_x = ref.tensor(x_np, requires_grad=True)
    their_out = theirs(their_x)
    (their_out * ref.tensor(upstream)).sum().backward()
    ref.close(out, their_out)
    ref.close(x.grad(grads), their_x.grad)
    ref.close(prelu.alpha.val().grad(grads), theirs.weight.grad)


def test_prelu_defaults_and_errors(device) -> None:
    prelu = PReluConfig().init(device)
    assert list(prelu.alpha.shape) == [1]
    assert prelu.alpha_value == 0.25
    assert prelu.num_params() == 1
    with pytest.raises(ValueError, match="prelu: alpha of 3 slopes for a tensor of shape \\[2, 4\\]"):
        PReluConfig(3).init(device)(Tensor.zeros([2, 4], device))
    with pytest.raises(ValueError, match="PRelu: num_parameters must be a positive int, got 0"):
        PReluConfig(0).init(device)


# -- RRelu ---------------------------------------------------------------------------------------------
def test_rrelu_evaluation_matches_torch(inner_device, rng, ref) -> None:
    rrelu = RReluConfig(0.1, 0.3).init()
    x_np = rng.normal(size=(4, 5)).astype(np.float32)
    out = rrelu(Tensor.from_data(x_np, inner_device))
    ref.close(out, ref.torch.nn.functional.rrelu(ref.tensor(x_np), 0.1, 0.3, training=False))
    assert (RReluConfig().lower, RReluConfig().upper) == (1 / 8, 1 / 3)  # PyTorch's defaults


def test_rrelu_training_draws_a_slope_per_negative_value(device, rng) -> None:
    rrelu = RReluConfig(0.1, 0.3).init()
    x_np = rng.normal(size=(50, 40)).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    out = rrelu(x)
    gradient = x.grad(out.sum().backward()).to_data().to_numpy()
    values = out.to_data().to_numpy()
    negative = x_np < 0
    slopes = values[negative] / x_np[negative]
    assert slopes.min() >= 0.1 - 1e-6
    assert slopes.max() <= 0.3 + 1e-6
    assert abs(slopes.mean() - 0.2) < 0.01
    assert slopes.std() > 0.04  # uniform on [0.1, 0.3): std 0.058
    np.testing.assert_array_equal(values[~negative], x_np[~negative])
    np.testing.assert_allclose(gradient[negative], slopes, rtol=1e-5)
    np.testing.assert_array_equal(gradient[~negative], 1.0)

    device.seed(3)
    first = rrelu(Tensor.from_data(x_np, device)).to_data().to_numpy()
    device.seed(3)
    np.testing.assert_array_equal(rrelu(Tensor.from_data(x_np, device)).to_data().to_numpy(), first)


# -- SwiGlu --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [False, True])
def test_swiglu_matches_torch(device, rng, ref, bias) -> None:
    swiglu = SwiGluConfig(4, 5, bias=bias).init(device)
    F = ref.torch.nn.functional
    names = [name for name, _ in swiglu.named_params()]
    expected = ["linear_inner.weight", "linear_outer.weight"]
    if bias:
        expected = ["linear_inner.weight", "linear_inner.bias", "linear_outer.weight", "linear_outer.bias"]
    assert names == expected
    theirs = {name: ref.tensor(param.val(), requires_grad=True) for name, param in swiglu.named_params()}
    x_np = rng.normal(size=(2, 3, 4)).astype(np.float32)
    upstream = rng.normal(size=(2, 3, 5)).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    out = swiglu(x)
    grads = (out * Tensor.from_data(upstream, device)).sum().backward()

    their_x = ref.tensor(x_np, requires_grad=True)
    inner = their_x @ theirs["linear_inner.weight"] + (theirs["linear_inner.bias"] if bias else 0)
    outer = their_x @ theirs["linear_outer.weight"] + (theirs["linear_outer.bias"] if bias else 0)
    their_out = F.silu(inner) * outer
    (their_out * ref.tensor(upstream)).sum().backward()
    ref.close(out, their_out, scale=2)
    ref.close(x.grad(grads), their_x.grad, scale=2)
    for name, param in swiglu.named_params():
        ref.close(param.val().grad(grads), theirs[name].grad, scale=2)


def test_swiglu_default_initialization_is_torch_linear_rule(device) -> None:
    swiglu = SwiGluConfig(16, 200).init(device)
    assert swiglu.num_params() == 2 * 16 * 200
    for layer in (swiglu.linear_inner, swiglu.linear_outer):
        weight = layer.weight.val().to_data().to_numpy()
        assert weight.shape == (16, 200)
        bound = 1 / math.sqrt(16)
        assert np.abs(weight).max() <= bound
        assert np.abs(weight).max() > 0.95 * bound
        assert abs(weight.std() - bound / math.sqrt(3)) < 0.05 * bound
    inner = swiglu.linear_inner.weight.val().to_data().to_numpy()
    assert not np.array_equal(inner, swiglu.linear_outer.weight.val().to_data().to_numpy())


# -- settings and errors ---------------------------------------------------------------------------------
def test_configs_have_burns_defaults() -> None:
    assert LeakyReluConfig().negative_slope == 0.01
    assert (HardSigmoidConfig().alpha, HardSigmoidConfig().beta) == (0.2, 0.5)
    assert (SoftplusConfig().beta, SoftplusConfig().threshold) == (1.0, 20.0)
    assert (HardtanhConfig().min_val, HardtanhConfig().max_val) == (-1.0, 1.0)
    assert (ShrinkConfig().lambd, ShrinkConfig().bias) == (0.5, 0.5)
    assert HardShrinkConfig().lambd == SoftShrinkConfig().lambd == 0.5
    assert EluConfig().alpha == CeluConfig().alpha == ThresholdedReluConfig().alpha == 1.0
    assert (PReluConfig().num_parameters, PReluConfig().alpha) == (1, 0.25)
    assert (SwiGluConfig(2, 3).bias, GLU().dim) == (False, -1)


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: HardtanhConfig(1.0, -1.0).init(), ValueError, "Hardtanh: min_val 1.0 is above max_val -1.0"),
        (lambda: HardtanhConfig(max_val=math.inf).init(), ValueError, "Hardtanh: max_val must be finite"),
        (lambda: RReluConfig(0.5, 0.2).init(), ValueError, "RRelu: lower 0.5 is above upper 0.2"),
        (lambda: CeluConfig(0.0).init(), ValueError, "Celu: alpha must be > 0.0, got 0.0"),
        (lambda: SoftplusConfig(beta=-1.0).init(), ValueError, "Softplus: beta must be > 0.0"),
        (lambda: ShrinkConfig(-0.1).init(), ValueError, "Shrink: lambd must be >= 0.0"),
        (lambda: SoftShrinkConfig(-0.1).init(), ValueError, "SoftShrink: lambd must be >= 0.0"),
        (lambda: LeakyReluConfig(math.nan).init(), ValueError, "LeakyRelu: negative_slope must be finite"),
        (lambda: EluConfig("1").init(), TypeError, "EluConfig: alpha must be a float, got '1'"),
        (lambda: Softmax(1.5), TypeError, "Softmax: dim must be an int, got 1.5"),
    ],
    ids=[
        "hardtanh-order",
        "hardtanh-inf",
        "rrelu-order",
        "celu-alpha",
        "softplus-beta",
        "shrink-lambd",
        "soft_shrink-lambd",
        "leaky_relu-nan",
        "elu-type",
        "softmax-dim",
    ],
)
def test_bad_settings_fail_when_built(build, error, match) -> None:
    with pytest.raises(error, match=match):
        build()


def test_shape_errors_name_the_op(device) -> None:
    with pytest.raises(ValueError, match=r"glu: dim -1 of a tensor of shape \[2, 3\] has odd size 3"):
        GLU()(Tensor.zeros([2, 3], device))
    with pytest.raises(IndexError, match="softmax"):
        Softmax(2)(Tensor.zeros([2, 3], device))
    with pytest.raises(ValueError, match=r"matmul|linear"):
        SwiGluConfig(4, 2).init(device)(Tensor.zeros([2, 3], device))


# -- the family ----------------------------------------------------------------------------------------
class _Holder(Config):
    activation: ActivationConfig


_FAMILY = [
    (ActivationConfig.Relu(), Relu),
    (ActivationConfig.Relu6(), Relu6),
    (ActivationConfig.Gelu(), Gelu),
    (ActivationConfig.GeluApproximate(), GeluApproximate),
    (ActivationConfig.Sigmoid(), Sigmoid),
    (ActivationConfig.LogSigmoid(), LogSigmoid),
    (ActivationConfig.SiLU(), SiLU),
    (ActivationConfig.HardSwish(), HardSwish),
    (ActivationConfig.Mish(), Mish),
    (ActivationConfig.Selu(), Selu),
    (ActivationConfig.Softsign(), Softsign),
    (ActivationConfig.Tanh(), Tanh),
    (ActivationConfig.Tanhshrink(), Tanhshrink),
    (ActivationConfig.LeakyRelu(LeakyReluConfig(0.2)), LeakyRelu),
    (ActivationConfig.PRelu(PReluConfig(alpha=0.1)), PRelu),
    (ActivationConfig.RRelu(), RRelu),
    (ActivationConfig.HardSigmoid(HardSigmoidConfig(0.3)), HardSigmoid),
    (ActivationConfig.Elu(EluConfig(0.5)), Elu),
    (ActivationConfig.Celu(), Celu),
    (ActivationConfig.Softplus(SoftplusConfig(beta=2.0)), Softplus),
    (ActivationConfig.Hardtanh(HardtanhConfig(-0.5, 0.5)), Hardtanh),
    (ActivationConfig.Threshold(ThresholdConfig(0.1, 2.0)), Threshold),
    (ActivationConfig.ThresholdedRelu(ThresholdedReluConfig(0.5)), ThresholdedRelu),
    (ActivationConfig.Shrink(ShrinkConfig(0.2, 0.1)), Shrink),
    (ActivationConfig.HardShrink(), HardShrink),
    (ActivationConfig.SoftShrink(SoftShrinkConfig(0.3)), SoftShrink),
    (ActivationConfig.SwiGlu(SwiGluConfig(6, 3, bias=True)), SwiGlu),
    (ActivationConfig.Softmax(-1), Softmax),
    (ActivationConfig.LogSoftmax(1), LogSoftmax),
    (ActivationConfig.Softmin(0), Softmin),
    (ActivationConfig.QuietSoftmax(-1), QuietSoftmax),
    (ActivationConfig.GLU(1), GLU),
]


def test_family_has_a_kind_per_activation_module() -> None:
    kinds = {type(config).__name__ for config, _ in _FAMILY}
    assert kinds == {module.__name__ for _, module in _FAMILY}
    assert len(kinds) == len(_FAMILY) == 32
    assert {name for name in dir(ActivationConfig) if name[0].isupper()} == kinds


@pytest.mark.parametrize(("config", "module_type"), _FAMILY, ids=[m.__name__ for _, m in _FAMILY])
def test_activation_config_round_trips_and_builds(inner_device, rng, config, module_type) -> None:
    holder = _Holder(config)
    text = holder.to_json()
    assert f'"{module_type.__name__}"' in text
    loaded = _Holder.from_json(text)
    assert loaded == holder
    layer = loaded.activation.init(inner_device)
    assert type(layer) is module_type
    assert isinstance(layer, Activation)

    x = Tensor.from_data(rng.normal(size=(2, 4, 6)).astype(np.float32), inner_device)
    if hasattr(config, "config"):
        direct = config.config.init(inner_device)
        if direct.num_params():
            direct = direct.load_record(layer.into_record())
    elif hasattr(config, "dim"):
        direct = module_type(config.dim)
    else:
        direct = module_type()
    np.testing.assert_array_equal(layer(x).to_data().to_numpy(), direct(x).to_data().to_numpy())


def test_activation_config_json_and_device_requirements(device) -> None:
    holder = _Holder(ActivationConfig.LeakyRelu(LeakyReluConfig(0.2)))
    assert holder.to_json(indent=None) == '{"activation": {"LeakyRelu": {"config": {"negative_slope": 0.2}}}}'
    assert _Holder.from_json('{"activation": {"Relu": {}}}').activation == ActivationConfig.Relu()
    assert ActivationConfig.LeakyRelu().config == LeakyReluConfig()
    assert type(ActivationConfig.Relu().init()) is Relu  # no device needed without parameters
    with pytest.raises(ValueError, match=r"ActivationConfig\.PRelu: init needs a device"):
        ActivationConfig.PRelu().init()
    prelu = ActivationConfig.PRelu(PReluConfig(2, 0.1)).init(device)
    np.testing.assert_allclose(prelu.alpha.val().to_data().to_numpy(), [0.1, 0.1])
    with pytest.raises(Exception, match="'Swish' is not a ActivationConfig"):
        _Holder.from_json('{"activation": {"Swish": {}}}')


# -- the declarations ----------------------------------------------------------------------------------
def test_every_declared_activation_has_its_kind_and_a_typed_annotation() -> None:
    from burn_nn import _activation

    declared = {module.__name__ for module in _activation._DECLARED}
    assert declared == {module.__name__ for _, module in _FAMILY}
    kinds = {name for name in vars(ActivationConfig) if name[0].isupper()}
    assert kinds == declared
    # the ClassVar annotations give type checkers the kinds: they must name the same ones
    assert set(ActivationConfig.__annotations__) == declared
    for name in declared:
        kind = getattr(ActivationConfig, name)
        assert kind.__qualname__ == f"ActivationConfig.{name}"
        assert kind.__doc__
        assert getattr(burn_nn, name).__doc__


def test_forward_is_made_from_the_declared_function() -> None:
    assert Relu.forward.__doc__ == "``relu(input)``."
    assert Hardtanh.forward.__doc__ == "``hardtanh(input, min_val, max_val)``."
    assert Softmax.forward.__doc__ == "``softmax(input, dim)``."
    assert vars(HardtanhConfig().init()) == {"min_val": -1.0, "max_val": 1.0}


def test_a_declaration_without_function_or_forward_is_refused() -> None:
    from burn_nn import _activation

    with pytest.raises(TypeError, match="activation Nothing needs function= or its own forward"):
        type("Nothing", (Activation,), {"__module__": _activation.__name__})
    # subclasses declared elsewhere are ordinary modules and no kinds
    before = len(_activation._DECLARED)

    class Doubled(Relu):
        def forward(self, input: Tensor) -> Tensor:
            return super().forward(input) * 2

    assert len(_activation._DECLARED) == before
    assert not hasattr(ActivationConfig, "Doubled")


@pytest.mark.parametrize(
    ("beta", "threshold"),
    [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0)],
    ids=["default", "beta2-threshold5", "beta0.5"],
)
def test_softplus_gradient_at_zero_and_elsewhere_is_torchs(rng, ref, beta, threshold) -> None:
    """The gradient is sigmoid(beta x): 0.5 at 0, where a sum of one-sided pieces would give 1."""
    device = _autodiff_device("f64")
    x_np = np.concatenate(
        [[0.0, -0.0], rng.normal(size=8) * 3, [threshold / beta - 0.1, threshold / beta + 0.1]]
    )
    x = Tensor.from_data(x_np, device).require_grad()
    gradient = x.grad(SoftplusConfig(beta, threshold).init()(x).sum().backward())
    their_x = ref.tensor(x_np, requires_grad=True)
    ref.torch.nn.functional.softplus(their_x, beta, threshold).sum().backward()
    assert gradient is not None
    assert gradient.tolist()[:2] == [0.5, 0.5]
    np.testing.assert_allclose(gradient.to_numpy(), their_x.grad.numpy(), rtol=1e-12, atol=1e-15)
