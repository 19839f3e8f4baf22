"""Global-norm gradient clipping (PyTorch's ``clip_grad_norm_``): ``clip_grad_norm`` and
``GradientClipping.GlobalNorm`` on an optimizer, against PyTorch on random gradients, where clipping
applies and where it does not; no host read; its config round-trip and its errors."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_nn import Module
from burn_nn.optim import (
    GradientClipping,
    GradientClippingConfig,
    GradientsParams,
    SgdConfig,
    clip_grad_norm,
)

TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def random_grads(model: Module, rng: np.random.Generator, scale: float) -> dict[str, np.ndarray[Any, Any]]:
    return {
        name: (scale * rng.standard_normal(param.val().dims())).astype(np.float32)
        for name, param in model.named_params()
    }


def as_params(model: Module, arrays: dict[str, np.ndarray[Any, Any]], device: Device) -> GradientsParams:
    grads = GradientsParams()
    for name, param in model.named_params():
        grads.register(param.id, Tensor.from_data(arrays[name], device))
    return grads


def torch_clip(arrays: dict[str, np.ndarray[Any, Any]], max_norm: float) -> tuple[dict[str, Any], float]:
    """PyTorch's ``clip_grad_norm_`` on parameters holding ``arrays`` as gradients: the clipped gradients
    and the total norm."""
    torch = pytest.importorskip("torch")
    params = {}
    for name, array in arrays.items():
        param = torch.zeros(array.shape, requires_grad=True)
        param.grad = torch.tensor(array)
        params[name] = param
    total = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm)
    return {name: p.grad.numpy() for name, p in params.items()}, float(total)


# scale 3: a global norm near 20, clipped to 1.5; scale 0.05: a norm near 0.3, left as it is
@pytest.mark.parametrize(("scale", "clips"), [(3.0, True), (0.05, False)])
def test_clip_grad_norm_matches_torch(
    inner_device: Device, rng: np.random.Generator, mlp: Any, scale: float, clips: bool
) -> None:
    model = mlp(inner_device)
    arrays = random_grads(model, rng, scale)
    expected, expected_total = torch_clip(arrays, 1.5)
    grads = as_params(model, arrays, inner_device)
    stray = Tensor.from_data(np.ones([2], np.float32), inner_device)
    stray_id = mlp(inner_device).hidden.weight.id  # a gradient of another module's parameter
    grads.register(stray_id, stray)

    clipped, total = clip_grad_norm(grads, model, 1.5)

    assert (expected_total > 1.5) is clips
    assert total.dims() == [1]
    np.testing.assert_allclose(total.to_numpy(), [expected_total], **TOLERANCE)
    for name, param in model.named_params():
        np.testing.assert_allclose(clipped.get(param.id).to_numpy(), expected[name], **TOLERANCE)
        # the input container is left as it was
        np.testing.assert_array_equal(grads.get(param.id).to_numpy(), arrays[name])
    norm = np.sqrt(sum(float(np.sum(clipped.get(p.id).to_numpy() ** 2)) for p in model.params()))
    assert norm == pytest.approx(1.5 if clips else expected_total, rel=1e-5)
    np.testing.assert_array_equal(clipped.get(stray_id).to_numpy(), [1.0, 1.0])


@pytest.mark.parametrize(("scale", "clips"), [(3.0, True), (0.05, False)])
def test_an_optimizer_with_global_norm_clipping_matches_torch(
    inner_device: Device, rng: np.random.Generator, mlp: Any, scale: float, clips: bool
) -> None:
    model = mlp(inner_device)
    arrays = random_grads(model, rng, scale)
    expected, expected_total = torch_clip(arrays, 2.0)
    assert (expected_total > 2.0) is clips
    config = SgdConfig(gradient_clipping=GradientClippingConfig.GlobalNorm(2.0))
    stepped = config.init().step(0.5, model, as_params(model, arrays, inner_device))
    before, after = dict(model.named_params()), dict(stepped.named_params())
    for name in arrays:
        step = (before[name].val().to_numpy() - after[name].val().to_numpy()) / 0.5
        np.testing.assert_allclose(step, expected[name], rtol=1e-4, atol=1e-6)


def test_global_norm_clipping_reads_nothing_back(
    inner_device: Device, rng: np.random.Generator, mlp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = mlp(inner_device)
    grads = as_params(model, random_grads(model, rng, 3.0), inner_device)

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("a tensor was read back to the host")

    for name in ("to_data", "to_numpy", "into_scalar", "item", "tolist", "__float__", "__bool__"):
        monkeypatch.setattr(Tensor, name, refuse, raising=False)
    clipped, total = clip_grad_norm(grads, model, 1.0)
    GradientClipping.GlobalNorm(1.0).clip_gradients([clipped.get(p.id) for p in model.params()])
    monkeypatch.undo()
    assert total.to_numpy()[0] > 1.0


def test_global_norm_config_round_trips_and_makes_its_clipping() -> None:
    config = SgdConfig(gradient_clipping=GradientClippingConfig.GlobalNorm(0.5))
    assert json.loads(config.to_json())["gradient_clipping"] == {"GlobalNorm": {"max_norm": 0.5}}
    assert SgdConfig.from_json(config.to_json()) == config
    assert config.init().grad_clipping == GradientClipping.GlobalNorm(0.5)


def test_clip_grad_norm_errors(inner_device: Device, mlp: Any) -> None:
    model = mlp(inner_device)
    grads = GradientsParams()
    with pytest.raises(ValueError, match=r"clip_grad_norm: grads \(0 gradients\) holds no gradient of a "):
        clip_grad_norm(grads, model, 1.0)
    with pytest.raises(ValueError, match=r"clip_grad_norm: max_norm must be a number >= 0, got -1"):
        clip_grad_norm(grads, model, -1.0)
    with pytest.raises(TypeError, match="clip_grad_norm: expected GradientsParams, got dict"):
        clip_grad_norm({}, model, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"GradientClipping.GlobalNorm: max_norm must be a number >= 0"):
        GradientClipping.GlobalNorm(float("nan"))


def test_global_norm_over_mixed_dtypes(inner_device: Device) -> None:
    # an f16 gradient of 300 squares past f16's range (65504): its sum of squares is taken in f32
    values = {DType.F32: [3.0, 0.0], DType.F64: [4.0], DType.F16: [300.0]}
    grads = [Tensor.from_data(np.array(v, np.float32), inner_device).cast(d) for d, v in values.items()]
    clipped = GradientClipping.GlobalNorm(2.0).clip_gradients(grads)
    total = np.sqrt(9.0 + 16.0 + 300.0**2)
    factor = min(1.0, 2.0 / (total + 1e-6))
    for (dtype, value), grad in zip(values.items(), clipped, strict=True):
        assert grad.dtype == dtype
        np.testing.assert_allclose(grad.to_numpy().astype(np.float64), np.array(value) * factor, rtol=2e-3)
