"""Optimizer trajectories compared with PyTorch's optimizers (Adan and cautious AdamW with NumPy float64
references of their published rules): the same model, initial weights, data and settings, 20 steps,
parameters compared after steps 1, 5 and 20."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import Device, DType, Tensor
from burn_backend.activation import tanh
from burn_ndarray import NdArray
from burn_nn import Module, Param
from burn_nn.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    GradientClipping,
    GradientClippingConfig,
    GradientsParams,
    ModuleOptimizer,
    MomentumConfig,
    MuonConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

STEPS = 20
SNAPSHOTS = (1, 5, STEPS)
Snapshots = dict[int, dict[str, np.ndarray[Any, Any]]]


class Matrices(Module):
    """Two bias-free matrices, stored as PyTorch stores the same model (for Muon's shape rule)."""

    def __init__(self, device: Device, rng: np.random.Generator) -> None:
        dtype = device.backend.float_dtype.numpy
        self.first = Param.initialized(Tensor.from_data(rng.normal(0, 0.5, (4, 6)).astype(dtype), device))
        self.second = Param.initialized(Tensor.from_data(rng.normal(0, 0.5, (6, 3)).astype(dtype), device))

    def forward(self, x: Tensor) -> Tensor:
        return tanh(x.matmul(self.first.val())).matmul(self.second.val())


def torch_layout(model: Module) -> dict[str, np.ndarray[Any, Any]]:
    """The model's parameters as NumPy arrays in PyTorch's layout (Linear weights transposed)."""
    layout = {}
    for name, param in model.named_params():
        array = param.val().to_data().to_numpy()
        layout[name] = array.T if name.endswith(".weight") else array
    return layout


def train_ours(model: Module, optim: ModuleOptimizer, lr: float, data: tuple[Tensor, Tensor]) -> Snapshots:
    x, y = data
    snapshots = {}
    for step in range(1, STEPS + 1):
        loss = model(x).sub(y).square().mean()
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(lr, model, grads)
        if step in SNAPSHOTS:
            snapshots[step] = torch_layout(model)
    return snapshots


def train_torch(
    torch: Any,
    model: Module,
    make_optim: Callable[[list[Any]], Any],
    data: tuple[Tensor, Tensor],
    before_step: Callable[[list[Any]], None] | None = None,
) -> Snapshots:
    """The same training with PyTorch, from ``model``'s initial weights."""
    params = {name: torch.tensor(array, requires_grad=True) for name, array in torch_layout(model).items()}
    x, y = (torch.tensor(t.to_data().to_numpy()) for t in data)
    if isinstance(model, Matrices):

        def forward(x: Any) -> Any:
            return torch.tanh(x @ params["first"]) @ params["second"]
    else:

        def forward(x: Any) -> Any:
            hidden = torch.tanh(x @ params["hidden.weight"].T + params["hidden.bias"])
            return hidden @ params["out.weight"].T + params["out.bias"]

    optim = make_optim(list(params.values()))
    snapshots = {}
    for step in range(1, STEPS + 1):
        optim.zero_grad()
        ((forward(x) - y) ** 2).mean().backward()
        if before_step is not None:
            before_step(list(params.values()))
        optim.step()
        if step in SNAPSHOTS:
            snapshots[step] = {name: p.detach().numpy().copy() for name, p in params.items()}
    return snapshots


def assert_same_trajectory(ref: Any, ours: Snapshots, theirs: Snapshots, scale: float = 1.0) -> None:
    for step in SNAPSHOTS:
        for name, expected in theirs[step].items():
            try:
                ref.close(ours[step][name], expected, scale=scale)
            except AssertionError as error:
                raise AssertionError(f"step {step}, {name}: {error}") from None


def data(device: Device, rng: np.random.Generator) -> tuple[Tensor, Tensor]:
    dtype = device.backend.float_dtype.numpy
    x = Tensor.from_data(rng.normal(size=(8, 4)).astype(dtype), device)
    y = Tensor.from_data(rng.normal(size=(8, 3)).astype(dtype), device)
    return x, y


def _wd(penalty: float) -> WeightDecayConfig:
    return WeightDecayConfig(penalty)


# (our config, learning rate, torch optimizer name and keyword arguments)
TORCH_CASES: dict[str, tuple[Any, float, str, dict[str, Any]]] = {
    "sgd": (SgdConfig(), 0.1, "SGD", {}),
    "sgd_weight_decay": (SgdConfig(weight_decay=_wd(0.05)), 0.1, "SGD", {"weight_decay": 0.05}),
    "sgd_momentum_dampening": (
        SgdConfig(momentum=MomentumConfig(0.9, 0.2, False)),
        0.05,
        "SGD",
        {"momentum": 0.9, "dampening": 0.2},
    ),
    "sgd_nesterov_weight_decay": (
        SgdConfig(weight_decay=_wd(0.01), momentum=MomentumConfig(0.8, 0.0, True)),
        0.05,
        "SGD",
        {"momentum": 0.8, "nesterov": True, "weight_decay": 0.01},
    ),
    "adam": (AdamConfig(epsilon=1e-8), 0.01, "Adam", {"eps": 1e-8}),
    "adam_amsgrad_weight_decay": (
        AdamConfig(beta_1=0.8, beta_2=0.99, epsilon=1e-6, amsgrad=True, weight_decay=_wd(0.1)),
        0.01,
        "Adam",
        {"betas": (0.8, 0.99), "eps": 1e-6, "amsgrad": True, "weight_decay": 0.1},
    ),
    "adamw": (AdamWConfig(epsilon=1e-8, weight_decay=0.1), 0.01, "AdamW", {"eps": 1e-8, "weight_decay": 0.1}),
    "adamw_amsgrad": (
        AdamWConfig(beta_2=0.95, epsilon=1e-7, weight_decay=0.5, amsgrad=True),
        0.02,
        "AdamW",
        {"betas": (0.9, 0.95), "eps": 1e-7, "weight_decay": 0.5, "amsgrad": True},
    ),
    # the step count on the device: the same trajectories
    "adam_capturable": (AdamConfig(epsilon=1e-8, capturable=True), 0.01, "Adam", {"eps": 1e-8}),
    "adam_amsgrad_weight_decay_capturable": (
        AdamConfig(
            beta_1=0.8, beta_2=0.99, epsilon=1e-6, amsgrad=True, weight_decay=_wd(0.1), capturable=True
        ),
        0.01,
        "Adam",
        {"betas": (0.8, 0.99), "eps": 1e-6, "amsgrad": True, "weight_decay": 0.1},
    ),
    "adamw_capturable": (
        AdamWConfig(beta_1=0.0, epsilon=1e-8, weight_decay=0.1, capturable=True),
        0.01,
        "AdamW",
        {"betas": (0.0, 0.999), "eps": 1e-8, "weight_decay": 0.1},
    ),
    "adagrad": (
        AdaGradConfig(lr_decay=0.1, epsilon=1e-10, weight_decay=_wd(0.05)),
        0.1,
        "Adagrad",
        {"lr_decay": 0.1, "eps": 1e-10, "weight_decay": 0.05},
    ),
    "rmsprop": (RmsPropConfig(momentum=0.0, epsilon=1e-8), 0.01, "RMSprop", {"eps": 1e-8}),
    "rmsprop_centered_momentum_weight_decay": (
        RmsPropConfig(alpha=0.9, momentum=0.5, epsilon=1e-8, centered=True, weight_decay=_wd(0.01)),
        0.005,
        "RMSprop",
        {"alpha": 0.9, "momentum": 0.5, "eps": 1e-8, "centered": True, "weight_decay": 0.01},
    ),
}


@pytest.mark.parametrize("case", list(TORCH_CASES))
def test_trajectory_matches_torch(
    case: str, ref: Any, device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    config, lr, torch_name, kwargs = TORCH_CASES[case]
    model, batch = mlp(device), data(device, rng)
    torch_optim = getattr(ref.torch.optim, torch_name)
    theirs = train_torch(ref.torch, model, lambda params: torch_optim(params, lr=lr, **kwargs), batch)
    ours = train_ours(model, config.init(), lr, batch)
    assert not np.allclose(ours[STEPS]["hidden.weight"], torch_layout(model)["hidden.weight"], atol=1e-3)
    assert_same_trajectory(ref, ours, theirs, scale=2.0)


def test_adam_float64_matches_torch(ref: Any, rng: np.random.Generator, mlp: Any) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    device.seed(0)
    model, batch = mlp(device), data(device, rng)
    assert model.hidden.weight.dtype is DType.F64
    config = AdamConfig(epsilon=1e-8, amsgrad=True, weight_decay=_wd(0.01))
    theirs = train_torch(
        ref.torch,
        model,
        lambda params: ref.torch.optim.Adam(params, lr=0.01, eps=1e-8, amsgrad=True, weight_decay=0.01),
        batch,
    )
    ours = train_ours(model, config.init(), 0.01, batch)
    assert ours[STEPS]["hidden.weight"].dtype == np.float64
    assert_same_trajectory(ref, ours, theirs, scale=2.0)


@pytest.mark.parametrize(
    ("clipping", "clip_torch"),
    [
        (GradientClippingConfig.Value(0.05), "value"),
        (GradientClippingConfig.Norm(0.1), "norm"),
    ],
)
def test_clipping_trajectory_matches_torch_per_parameter(
    clipping: GradientClippingConfig,
    clip_torch: str,
    ref: Any,
    device: Device,
    rng: np.random.Generator,
    mlp: Any,
) -> None:
    torch = ref.torch

    def clip(params: list[Any]) -> None:
        for param in params:  # Burn clips each parameter's gradient on its own
            if clip_torch == "value":
                torch.nn.utils.clip_grad_value_([param], 0.05)
            else:
                torch.nn.utils.clip_grad_norm_([param], 0.1)

    model, batch = mlp(device), data(device, rng)
    theirs = train_torch(torch, model, lambda params: torch.optim.SGD(params, lr=0.5), batch, clip)
    unclipped = train_torch(torch, model, lambda params: torch.optim.SGD(params, lr=0.5), batch)
    ours = train_ours(model, SgdConfig(gradient_clipping=clipping).init(), 0.5, batch)
    assert not np.allclose(theirs[1]["out.weight"], unclipped[1]["out.weight"], atol=1e-3)  # it clips
    # PyTorch divides by ``norm + 1e-6``, Burn by ``norm + tiny``: a relative difference of 1e-6 / norm
    assert_same_trajectory(ref, ours, theirs, scale=4.0)


def test_adam_clipping_by_norm_matches_torch(
    ref: Any, device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    torch = ref.torch
    model, batch = mlp(device), data(device, rng)

    def clip(params: list[Any]) -> None:
        for param in params:
            torch.nn.utils.clip_grad_norm_([param], 0.2)

    theirs = train_torch(
        torch, model, lambda params: torch.optim.Adam(params, lr=0.01, eps=1e-8), batch, clip
    )
    config = AdamConfig(epsilon=1e-8, grad_clipping=GradientClippingConfig.Norm(0.2))
    assert_same_trajectory(ref, train_ours(model, config.init(), 0.01, batch), theirs, scale=2.0)


def test_clip_gradient_matches_torch(ref: Any, inner_device: Device, rng: np.random.Generator) -> None:
    torch = ref.torch
    array = rng.normal(size=(3, 5)).astype(np.float32)
    grad = Tensor.from_data(array, inner_device)

    param = torch.zeros(3, 5, requires_grad=True)
    param.grad = torch.tensor(array)
    torch.nn.utils.clip_grad_value_([param], 0.3)
    clipped = GradientClipping.Value(0.3).clip_gradient(grad)
    ref.close(clipped, param.grad)
    assert np.abs(clipped.to_data().to_numpy()).max() == pytest.approx(0.3)

    param.grad = torch.tensor(array)
    torch.nn.utils.clip_grad_norm_([param], 0.5)
    clipped = GradientClipping.Norm(0.5).clip_gradient(grad)
    ref.close(clipped, param.grad)
    assert np.linalg.norm(clipped.to_data().to_numpy()) == pytest.approx(0.5, rel=1e-5)

    # below the limit nothing changes, and a zero gradient stays zero (no division by zero)
    assert GradientClipping.Norm(100.0).clip_gradient(grad).to_data() == grad.to_data()
    zero = GradientClipping.Norm(1.0).clip_gradient(grad.zeros_like()).to_data().to_numpy()
    np.testing.assert_array_equal(zero, np.zeros((3, 5), np.float32))


# -- Muon ----------------------------------------------------------------------------------------------
def _zeropower_float32(torch: Any) -> Callable[..., Any]:
    """PyTorch's Newton-Schulz iteration without its cast to bfloat16 (ours runs in the param's dtype)."""

    def zeropower(grad: Any, ns_coefficients: Any, ns_steps: int, eps: float) -> Any:
        a, b, c = ns_coefficients
        x = grad.T if grad.size(0) > grad.size(1) else grad
        x = x / x.norm().clamp(min=eps)
        for _ in range(ns_steps):
            gram = x @ x.T
            x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
        return x.T if grad.size(0) > grad.size(1) else x

    return zeropower


MUON_CASES: dict[str, tuple[MuonConfig, dict[str, Any]]] = {
    "default": (MuonConfig(), {"weight_decay": 0.0}),
    "weight_decay_match_rms_adamw": (
        MuonConfig(weight_decay=_wd(0.1), adjust_lr_fn=AdjustLrFn.MatchRmsAdamW, ns_steps=4),
        {"weight_decay": 0.1, "adjust_lr_fn": "match_rms_adamw", "ns_steps": 4},
    ),
    "plain_momentum": (
        MuonConfig(momentum=MomentumConfig(0.9, 0.0, False)),
        {"weight_decay": 0.0, "momentum": 0.9, "nesterov": False},
    ),
}


@pytest.mark.parametrize("case", list(MUON_CASES))
def test_muon_matches_torch_in_float32(
    case: str, ref: Any, device: Device, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch.optim._muon as torch_muon

    config, kwargs = MUON_CASES[case]
    monkeypatch.setattr(torch_muon, "_zeropower_via_newtonschulz", _zeropower_float32(ref.torch))
    model, batch = Matrices(device, rng), data(device, rng)
    theirs = train_torch(
        ref.torch, model, lambda params: ref.torch.optim.Muon(params, lr=0.02, **kwargs), batch
    )
    ours = train_ours(model, config.init(), 0.02, batch)
    assert_same_trajectory(ref, ours, theirs, scale=2.0)


def test_muon_is_close_to_torch_bfloat16_iteration(
    ref: Any, device: Device, rng: np.random.Generator
) -> None:
    model, batch = Matrices(device, rng), data(device, rng)
    theirs = train_torch(ref.torch, model, lambda params: ref.torch.optim.Muon(params, lr=0.02), batch)
    ours = train_ours(model, MuonConfig(weight_decay=_wd(0.1)).init(), 0.02, batch)
    start = torch_layout(model)
    for name in start:
        moved = np.abs(theirs[STEPS][name] - start[name]).max()
        assert moved > 0.05
        # bfloat16 keeps ~3 significant digits of each update
        np.testing.assert_allclose(ours[STEPS][name], theirs[STEPS][name], atol=0.02 * moved)


# -- rules PyTorch does not have: NumPy float64 references ---------------------------------------------
def adan_reference(config: AdanConfig) -> Callable[[float, Any, Any, dict[str, Any]], Any]:
    """Adan as in the paper's reference implementation (sail-sg/Adan), in NumPy float64."""
    b1, b2, b3 = config.beta_1, config.beta_2, config.beta_3

    def step(lr: float, param: Any, grad: Any, state: dict[str, Any]) -> Any:
        if not state:
            state.update(t=0, m=np.zeros_like(grad), v=np.zeros_like(grad), n=np.zeros_like(grad), prev=grad)
        state["t"] += 1
        t = state["t"]
        diff = grad - state["prev"]
        state["m"] = b1 * state["m"] + (1 - b1) * grad
        state["v"] = b2 * state["v"] + (1 - b2) * diff
        state["n"] = b3 * state["n"] + (1 - b3) * (grad + b2 * diff) ** 2
        state["prev"] = grad
        denom = np.sqrt(state["n"] / (1 - b3**t)) + config.epsilon
        update = (state["m"] / (1 - b1**t) + b2 * state["v"] / (1 - b2**t)) / denom
        if config.no_prox:
            return param * (1 - lr * config.weight_decay) - lr * update
        return (param - lr * update) / (1 + lr * config.weight_decay)

    return step


def cautious_adamw_reference(config: AdamWConfig) -> Callable[[float, Any, Any, dict[str, Any]], Any]:
    """AdamW with cautious weight decay (arXiv:2510.12402): decay only where sign(param) = sign(m)."""
    b1, b2 = config.beta_1, config.beta_2

    def step(lr: float, param: Any, grad: Any, state: dict[str, Any]) -> Any:
        if not state:
            state.update(t=0, m=np.zeros_like(grad), v=np.zeros_like(grad))
        state["t"] += 1
        t = state["t"]
        state["m"] = b1 * state["m"] + (1 - b1) * grad
        state["v"] = b2 * state["v"] + (1 - b2) * grad**2
        update = (state["m"] / (1 - b1**t)) / (np.sqrt(state["v"] / (1 - b2**t)) + config.epsilon)
        agree = (param >= 0) == (state["m"] >= 0)
        return param - lr * config.weight_decay * param * agree - lr * update

    return step


def train_reference(
    torch: Any, model: Module, rule: Callable[..., Any], lr: float, data: tuple[Tensor, Tensor]
) -> Snapshots:
    """Gradients by PyTorch autograd in float64, updates by ``rule`` in NumPy float64."""
    params = {name: array.astype(np.float64) for name, array in torch_layout(model).items()}
    states: dict[str, dict[str, Any]] = {name: {} for name in params}
    x, y = (torch.tensor(t.to_data().to_numpy().astype(np.float64)) for t in data)
    snapshots = {}
    for step in range(1, STEPS + 1):
        leaves = {name: torch.tensor(array, requires_grad=True) for name, array in params.items()}
        hidden = torch.tanh(x @ leaves["hidden.weight"].T + leaves["hidden.bias"])
        ((hidden @ leaves["out.weight"].T + leaves["out.bias"] - y) ** 2).mean().backward()
        for name, leaf in leaves.items():
            params[name] = rule(lr, params[name], leaf.grad.numpy(), states[name])
        if step in SNAPSHOTS:
            snapshots[step] = {name: array.copy() for name, array in params.items()}
    return snapshots


REFERENCE_CASES: dict[str, tuple[Any, Callable[[Any], Callable[..., Any]], float]] = {
    "adan": (AdanConfig(weight_decay=0.02), adan_reference, 0.01),
    "adan_no_prox_betas": (
        AdanConfig(beta_1=0.9, beta_2=0.8, beta_3=0.95, epsilon=1e-6, weight_decay=0.1, no_prox=True),
        adan_reference,
        0.02,
    ),
    "adamw_cautious": (
        AdamWConfig(epsilon=1e-8, weight_decay=0.5, cautious_weight_decay=True),
        cautious_adamw_reference,
        0.01,
    ),
    "adamw_cautious_capturable": (
        AdamWConfig(epsilon=1e-8, weight_decay=0.5, cautious_weight_decay=True, capturable=True),
        cautious_adamw_reference,
        0.01,
    ),
}


@pytest.mark.parametrize("case", list(REFERENCE_CASES))
def test_trajectory_matches_numpy_float64_reference(
    case: str, ref: Any, device: Device, rng: np.random.Generator, mlp: Any
) -> None:
    config, rule, lr = REFERENCE_CASES[case]
    model, batch = mlp(device), data(device, rng)
    expected = train_reference(ref.torch, model, rule(config), lr, batch)
    assert_same_trajectory(ref, train_ours(model, config.init(), lr, batch), expected, scale=2.0)


def test_adan_float64_matches_numpy_reference(ref: Any, rng: np.random.Generator, mlp: Any) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    device.seed(0)
    config = AdanConfig(weight_decay=0.02)
    model, batch = mlp(device), data(device, rng)
    expected = train_reference(ref.torch, model, adan_reference(config), 0.01, batch)
    assert_same_trajectory(ref, train_ours(model, config.init(), 0.01, batch), expected, scale=2.0)


def test_cautious_weight_decay_differs_from_plain(device: Device, rng: np.random.Generator, mlp: Any) -> None:
    model, batch = mlp(device), data(device, rng)
    plain = train_ours(model, AdamWConfig(weight_decay=0.5).init(), 0.01, batch)
    cautious = train_ours(
        model, AdamWConfig(weight_decay=0.5, cautious_weight_decay=True).init(), 0.01, batch
    )
    assert not np.allclose(plain[STEPS]["hidden.weight"], cautious[STEPS]["hidden.weight"], atol=1e-5)
