"""Fusion over NdArray: an MLP's forward and backward fuse their reductions and matmuls, an input read for
the last time is overwritten in place (its memory address), and Adam's update is one pass per
parameter (NdArray's kernel, or a fused block where the inner backend has none). The blocks on any
inner backend are the conformance suite's fusion section."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from burn_backend import Device, OptimizerOps, Tensor, activation
from burn_fusion import Fusion
from burn_ndarray import NdArray

Chain = Callable[[list[Tensor]], list[Tensor]]


def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def test_mlp_forward_and_backward_fuse_reductions_and_matmuls() -> None:
    Autodiff = pytest.importorskip("burn_autodiff").Autodiff

    fusion = Fusion(NdArray(), compile_after=2)
    devices: list[Device] = [Autodiff(fusion).device(), Autodiff(NdArray()).device()]
    x_data, w_data, b_data = normal(16, 8), normal(8, 4, seed=1) * 0.3, normal(1, 4, seed=2)

    def grads(device: Device) -> list[np.ndarray]:
        x = Tensor.from_data(x_data, device)
        w = Tensor.from_data(w_data, device).require_grad()
        b = Tensor.from_data(b_data, device).require_grad()
        logits = activation.relu(x.matmul(w) + b)
        loss = activation.log_softmax(logits, 1).mean()
        found = loss.backward()
        return [w.grad(found).to_data().to_numpy(), b.grad(found).to_data().to_numpy()]

    for _ in range(3):
        for got, want in zip(*(grads(d) for d in devices)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    stats = fusion.executor.stats
    assert stats["fused_matmul"] >= 1
    assert stats["fused_reduce"] >= 1


# -- casts and in-place reuse ---------------------------------------------------------------------------


def data_address(tensor: Tensor) -> int:
    value = tensor.primitive.materialize()
    address: int = value.__array_interface__["data"][0]
    return address


def test_an_input_read_for_the_last_time_is_overwritten_in_place() -> None:
    device = Fusion(NdArray(), compile_after=1).device()
    for _ in range(2):
        x = Tensor.from_data(normal(64, 32), device) * 1.0  # a value the stream made
        before = data_address(x)
        y = (x * 2 + 1).exp()
        del x
        assert data_address(y) == before
        np.testing.assert_allclose(y.to_data().to_numpy(), np.exp(normal(64, 32) * 2 + 1), rtol=1e-5)


# -- the optimizer's update ---------------------------------------------------------------------------


class NoAdamKernel(NdArray):
    """NdArray without its Adam kernel: the update is the interface's element-wise ops."""

    float_adam_step = OptimizerOps.float_adam_step


@pytest.mark.parametrize("rule", ["Adam", "AdamW"])
@pytest.mark.parametrize("inner", [NdArray, NoAdamKernel], ids=["kernel", "recorded"])
def test_the_adam_update_is_one_pass_per_parameter(rule: str, inner: type[NdArray]) -> None:
    """Where the inner backend has an Adam kernel, Fusion hands it the update (nothing is recorded);
    where it has none, the update's ops are recorded and fuse into one block per parameter. Either way
    the values are Autodiff(NdArray())'s."""
    nn = pytest.importorskip("burn_nn")
    optim = pytest.importorskip("burn_nn.optim")
    Autodiff = pytest.importorskip("burn_autodiff").Autodiff

    fusion = Fusion(inner(), compile_after=2)
    devices = [Autodiff(fusion).device(), Autodiff(NdArray()).device()]
    config = getattr(optim, f"{rule}Config")()
    models = [nn.LinearConfig(6, 4).init(device) for device in devices]  # a weight and a bias
    start = models[0].into_record()
    models[1] = models[1].load_record(start)
    optimizers = [config.init(), config.init()]
    rng = np.random.default_rng(0)
    for step in range(4):
        x = rng.normal(size=(5, 6)).astype(np.float32)
        for i, device in enumerate(devices):
            loss = models[i](Tensor.from_data(x, device)).square().mean()
            grads = optim.GradientsParams.from_grads(loss.backward(), models[i])
            device.sync()
            before = dict(fusion.executor.stats)
            models[i] = optimizers[i].step(1e-2, models[i], grads)
            got = {name: p.val().to_data().to_numpy() for name, p in models[i].named_params()}
            if i == 0:
                fused, new = fusion.executor.stats, got
                ran = fused["fused_blocks"] - before.get("fused_blocks", 0)
                one_by_one = fused["op_by_op"] - before.get("op_by_op", 0)
                if inner is NdArray:
                    assert (ran, one_by_one) == (0, 0)
                elif step >= 2:  # compiled from the second sighting on
                    assert (ran, one_by_one) == (2, 0)
            else:
                for name, value in got.items():
                    np.testing.assert_allclose(new[name], value, rtol=1e-5, atol=1e-7)
