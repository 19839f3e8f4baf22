"""The normalization ops against PyTorch: ``layer_norm``, ``rms_norm`` (composed in torch float64),
``group_norm``, ``batch_norm`` (inference, running statistics) and ``batch_norm_training`` (batch
statistics and the running statistics' update), their values, their gradients through autodiff, and
their backward ops called directly, on f32, f16 and bf16 inputs; then the errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module._reference import kernel

LOW = [DType.F32, DType.F16, DType.BF16]
EPS = 1e-3
MOMENTUM = 0.2


def torch_module() -> Any:
    return pytest.importorskip("torch")


@dataclass(frozen=True)
class Case:
    """One op on ``x`` of ``shape`` with ``params`` of ``gamma``, ``beta`` (per feature, ``features``
    of them), running statistics where the op reads them."""

    name: str
    shape: tuple[int, ...]
    features: int
    params: tuple[str, ...] = ("gamma", "beta")
    groups: int = 0

    def __str__(self) -> str:
        return f"{self.name}-{'x'.join(map(str, self.shape))}-{'+'.join(self.params) or 'plain'}"


CASES = [
    Case("layer_norm", (3, 5, 7), 7),
    Case("layer_norm", (4, 9), 9, ()),
    Case("rms_norm", (3, 2, 11), 11, ("gamma",)),
    Case("rms_norm", (5,), 5, ()),
    Case("group_norm", (2, 6, 5), 6, groups=3),
    Case("group_norm", (3, 4, 3, 2), 4, ("gamma",), groups=1),
    Case("group_norm", (2, 4), 4, groups=4),
    Case("batch_norm", (4, 3, 5), 3),
    Case("batch_norm", (6, 2), 2, ()),
    Case("batch_norm_training", (4, 3, 5), 3),
    Case("batch_norm_training", (3, 2, 2, 3), 2, ("gamma",)),
]


def build(rng: np.random.Generator, case: Case, dtype: DType) -> dict[str, Any]:
    features = (case.features,)
    arrays: dict[str, Any] = {
        "x": random_array(rng, case.shape, dtype, -3.0, 3.0),
        "grad": random_array(rng, case.shape, dtype),
        "gamma": random_array(rng, features, dtype, 0.5, 1.5) if "gamma" in case.params else None,
        "beta": random_array(rng, features, dtype) if "beta" in case.params else None,
        "mean": random_array(rng, features, dtype, -1.0, 1.0),
        "var": random_array(rng, features, dtype, 0.5, 2.0),
    }
    return arrays


def torch_op(case: Case) -> Callable[..., Any]:
    """The op on torch float64 tensors ``(x, gamma, beta, mean, var)`` (mean and var are the running
    statistics, updated in place by the training form)."""
    torch = torch_module()
    functional = torch.nn.functional

    def rms_norm(x: Any, gamma: Any, beta: Any, mean: Any, var: Any) -> Any:
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)
        return y if gamma is None else y * gamma

    ops: dict[str, Callable[..., Any]] = {
        "layer_norm": lambda x, g, b, m, v: functional.layer_norm(x, x.shape[-1:], g, b, EPS),
        "rms_norm": rms_norm,
        "group_norm": lambda x, g, b, m, v: functional.group_norm(x, case.groups, g, b, EPS),
        "batch_norm": lambda x, g, b, m, v: functional.batch_norm(x, m, v, g, b, False, MOMENTUM, EPS),
        "batch_norm_training": lambda x, g, b, m, v: functional.batch_norm(
            x, m, v, g, b, True, MOMENTUM, EPS
        ),
    }
    return ops[case.name]


def torch_reference(case: Case, arrays: dict[str, Any]) -> dict[str, Any]:
    """The output, the gradients of ``sum(output * grad)`` and the running statistics after the op, by
    torch in float64 from the same (rounded) inputs."""
    torch = torch_module()
    tensors = {
        n: None
        if arrays[n] is None
        else torch.tensor(arrays[n].astype(np.float64), requires_grad=n in ("x", "gamma", "beta"))
        for n in ("x", "gamma", "beta")
    }
    mean = torch.tensor(arrays["mean"].astype(np.float64))
    var = torch.tensor(arrays["var"].astype(np.float64))
    output = torch_op(case)(tensors["x"], tensors["gamma"], tensors["beta"], mean, var)
    (output * torch.tensor(arrays["grad"].astype(np.float64))).sum().backward()
    result = {"output": output.detach().numpy(), "mean": mean.numpy(), "var": var.numpy()}
    result.update({n: t.grad.numpy() for n, t in tensors.items() if t is not None})
    return result


def ours(case: Case, tensors: dict[str, Tensor | None]) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """The public function on our tensors: ``(output, new running mean, new running var)``."""
    x, gamma, beta = tensors["x"], tensors["gamma"], tensors["beta"]
    assert x is not None
    if case.name == "layer_norm":
        return module.layer_norm(x, gamma, beta, EPS), None, None
    if case.name == "rms_norm":
        return module.rms_norm(x, gamma, EPS), None, None
    if case.name == "group_norm":
        return module.group_norm(x, case.groups, gamma, beta, EPS), None, None
    mean, var = tensors["mean"], tensors["var"]
    assert mean is not None
    assert var is not None
    if case.name == "batch_norm":
        return module.batch_norm(x, mean, var, gamma, beta, EPS), None, None
    return module.batch_norm_training(x, gamma, beta, mean, var, MOMENTUM, EPS)


def tensors_of(arrays: dict[str, Any], device: Device, track: bool = False) -> dict[str, Tensor | None]:
    tensors = {n: None if a is None else make(a, device) for n, a in arrays.items()}
    if track:
        tensors.update(
            {n: t.require_grad() for n, t in tensors.items() if t is not None and n in ("x", "gamma", "beta")}
        )
    return tensors


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_norm_values(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    require_dtype(device, dtype)
    arrays = build(rng, case, dtype)
    expected = torch_reference(case, arrays)
    output, mean, var = ours(case, tensors_of(arrays, device))
    check(output, expected["output"], dtype, scale=10)
    if case.name == "batch_norm_training":
        assert mean is not None
        assert var is not None
        check(mean, expected["mean"], dtype, scale=10)
        check(var, expected["var"], dtype, scale=10)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_norm_gradients(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    if not device.backend.ad_enabled():
        pytest.skip(f"{device.backend.stack_name} computes no gradients")
    require_dtype(device, dtype)
    arrays = build(rng, case, dtype)
    expected = torch_reference(case, arrays)
    tensors = tensors_of(arrays, device, track=True)
    output, mean, var = ours(case, tensors)
    grads = (output * make(arrays["grad"], device)).sum().backward()
    for name in ("x", "gamma", "beta"):
        tensor = tensors[name]
        if tensor is not None:
            check(tensor.grad(grads), expected[name], dtype, scale=20)
    for stat in (mean, var, tensors["mean"], tensors["var"]):
        assert stat is None or stat.grad(grads) is None  # the running statistics are constants


def backward_op(case: Case, device: Device, arrays: dict[str, Any]) -> tuple[Any, ...]:
    """The case's backward op called directly, the saved statistics computed here in float64."""
    t = tensors_of(arrays, device)
    x, gamma, beta, grad = t["x"], t["gamma"], t["beta"], t["grad"]
    if case.name == "layer_norm":
        return kernel(device, "layer_norm_backward", x, gamma, beta, EPS, grad)  # type: ignore[no-any-return]
    if case.name == "rms_norm":
        return kernel(device, "rms_norm_backward", x, gamma, EPS, grad)  # type: ignore[no-any-return]
    if case.name == "group_norm":
        return kernel(device, "group_norm_backward", x, gamma, beta, case.groups, EPS, grad)  # type: ignore[no-any-return]
    training = case.name == "batch_norm_training"
    x64 = arrays["x"].astype(np.float64)
    axes = tuple(d for d in range(x64.ndim) if d != 1)
    mean = x64.mean(axis=axes) if training else arrays["mean"].astype(np.float64)
    var = x64.var(axis=axes) if training else arrays["var"].astype(np.float64)
    statistics = [make(s.astype(arrays["x"].dtype), device) for s in (mean, 1.0 / np.sqrt(var + EPS))]
    return kernel(device, "batch_norm_backward", x, gamma, beta, *statistics, training, grad)  # type: ignore[no-any-return]


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_norm_backward_op(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    require_dtype(device, dtype)
    arrays = build(rng, case, dtype)
    expected = torch_reference(case, arrays)
    grads = backward_op(case, device, arrays)
    assert len(grads) == 3
    for name, grad in zip(("x", "gamma", "beta"), grads):
        if arrays[name] is None:
            assert grad is None
            continue
        check(grad, expected[name], dtype, scale=20)


def test_batch_norm_training_saves_its_statistics(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (5, 3, 4), DType.F32, -2.0, 2.0)
    output, new_mean, new_var, mean, invstd = kernel(
        device, "batch_norm_training", make(x, device), None, None, None, None, MOMENTUM, EPS
    )
    assert new_mean is None
    assert new_var is None
    x64 = x.astype(np.float64)
    check(mean, x64.mean(axis=(0, 2)), DType.F32)
    check(invstd, 1.0 / np.sqrt(x64.var(axis=(0, 2)) + EPS), DType.F32, scale=10)
    check(
        output,
        (x64 - x64.mean(axis=(0, 2), keepdims=True)) / np.sqrt(x64.var(axis=(0, 2), keepdims=True) + EPS),
        DType.F32,
        scale=10,
    )


def test_norm_errors(device: Device) -> None:
    x = Tensor.zeros([2, 6, 4], device=device)
    other = DType.F32 if x.dtype is DType.F64 else DType.F64
    with pytest.raises(
        ValueError,
        match=r"rms_norm: gamma must have shape \[4\] \(the last dim of x \[2, 6, 4\]\), got \[6\]",
    ):
        module.rms_norm(x, Tensor.ones([6], device=device))
    with pytest.raises(TypeError, match=rf"rms_norm: gamma has dtype {other}, x has {x.dtype}"):
        module.rms_norm(x, Tensor.ones([4], device=device, dtype=other))
    with pytest.raises(
        ValueError, match=r"rms_norm: x must have shape \[\.\.\., d\] \(rank >= 1\), got \[\]"
    ):
        module.rms_norm(Tensor.zeros([], device=device))
    with pytest.raises(
        ValueError, match=r"group_norm: the 6 channels of x \[2, 6, 4\] do not split into 4 groups"
    ):
        module.group_norm(x, 4)
    with pytest.raises(ValueError, match=r"group_norm: beta must have shape \[6\] \(one per channel of x"):
        module.group_norm(x, 3, None, Tensor.zeros([4], device=device))
    with pytest.raises(
        ValueError,
        match=r"group_norm: x must have shape \[batch, channels, \.\.\.\] \(rank >= 2\), got \[6\]",
    ):
        module.group_norm(Tensor.zeros([6], device=device), 3)
    with pytest.raises(ValueError, match=r"group_norm: num_groups must be a positive int, got 0"):
        module.group_norm(x, 0)
    with pytest.raises(ValueError, match=r"batch_norm: running_var must have shape \[6\]"):
        module.batch_norm(x, Tensor.zeros([6], device=device), Tensor.ones([4], device=device))
    with pytest.raises(ValueError, match=r"batch_norm_training: expected more than 1 value per channel"):
        module.batch_norm_training(Tensor.zeros([1, 6], device=device))
    with pytest.raises(ValueError, match=r"batch_norm_training: momentum must be in \[0, 1\], got 2.0"):
        module.batch_norm_training(x, momentum=2.0)
    with pytest.raises(ValueError, match=r"rms_norm: epsilon must be >= 0, got -1.0"):
        module.rms_norm(x, epsilon=-1.0)
    with pytest.raises(TypeError, match=r"group_norm: x must be a Float tensor, got shape \[2, 6\] of"):
        module.group_norm(Tensor.zeros([2, 6], device=device).int(), 2)
