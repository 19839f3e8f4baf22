"""Fusion's reduce and matmul blocks: softmax, log-softmax, layer norm and reductions with an
element-wise prologue and epilogue; matmuls with a bias and an activation. Fused equals unfused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Tensor, activation
from burn_fusion import Fusion
from burn_ndarray import NdArray

Chain = Callable[[list[Tensor]], list[Tensor]]


def run(chain: Chain, arrays: list[np.ndarray], repeat: int = 3) -> tuple[Any, list[list[np.ndarray]]]:
    """The chain on Fusion (op by op, then compiled) and on NdArray; asserts they agree."""
    fusion = Fusion(NdArray(), compile_after=2)
    device, eager = fusion.device(), NdArray().device()
    results = []
    for _ in range(repeat):
        got = [t.to_data().to_numpy() for t in chain([Tensor.from_data(a, device) for a in arrays])]
        want = [t.to_data().to_numpy() for t in chain([Tensor.from_data(a, eager) for a in arrays])]
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
        results.append(got)
    return fusion.executor.stats, results


def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_and_log_softmax_fuse_into_one_block(dim: int) -> None:
    stats, _ = run(
        lambda t: [activation.softmax(t[0], dim), activation.log_softmax(t[0] * 2, dim)], [normal(3, 5, 4)]
    )
    assert stats["fused_reduce"] >= 2


@pytest.mark.parametrize("reduce", ["sum_dim", "mean_dim", "max_dim"])
def test_reductions_with_a_prologue_and_an_epilogue(reduce: str) -> None:
    def chain(t: list[Tensor]) -> list[Tensor]:
        x, bias = t
        reduced = getattr((x * 1.5 + bias).exp(), reduce)(1)
        return [(reduced.log() - 1) * 0.5]

    stats, _ = run(chain, [normal(6, 7, 3), normal(1, 7, 1, seed=1)])
    assert stats["fused_reduce"] >= 1


def test_layer_norm_fuses() -> None:
    def chain(t: list[Tensor]) -> list[Tensor]:
        x, gamma, beta = t
        var, mean = x.var_mean_bias(1)
        return [(x - mean) / (var + 1e-5).sqrt() * gamma + beta]

    stats, _ = run(chain, [normal(8, 32), normal(1, 32, seed=1), normal(1, 32, seed=2)])
    assert stats["fused_reduce"] >= 1
    assert stats["fused_blocks"] == stats["fused_reduce"]  # one kernel per step


def test_max_propagates_nan_and_handles_infinities() -> None:
    data = normal(4, 6)
    data[1, 2] = np.nan
    data[2, :] = -np.inf
    data[3, 0] = np.inf
    stats, _ = run(lambda t: [(t[0] * 1.0).max_dim(1) + 0.0], [data])
    assert stats["fused_reduce"] >= 1


def test_a_reduced_value_read_in_the_middle_stays_right() -> None:
    device = Fusion(NdArray(), compile_after=1).device()
    for _ in range(2):
        x = Tensor.from_data(normal(4, 5), device)
        total = x.exp().sum_dim(1)
        share = x.exp() / total
        np.testing.assert_allclose(
            total.to_data().to_numpy(), np.exp(normal(4, 5)).sum(1, keepdims=True), rtol=1e-5
        )
        np.testing.assert_allclose(share.sum_dim(1).to_data().to_numpy(), np.ones((4, 1)), rtol=1e-5)


@pytest.mark.parametrize("batched", [False, True])
def test_matmul_with_bias_and_activation_fuses(batched: bool) -> None:
    lead = (2,) if batched else ()

    def chain(t: list[Tensor]) -> list[Tensor]:
        x, w, b = t
        return [activation.relu(x.matmul(w) + b), activation.gelu(x.matmul(w) * 0.5)]

    arrays = [normal(*lead, 5, 8), normal(*lead, 8, 3, seed=1), normal(*lead, 1, 3, seed=2)]
    stats, _ = run(chain, arrays)
    assert stats["fused_matmul"] >= 2


def test_a_live_product_is_not_overwritten_by_its_epilogue() -> None:
    def chain(t: list[Tensor]) -> list[Tensor]:
        product = t[0].matmul(t[1])
        return [product, (product + 1).exp()]

    stats, results = run(chain, [normal(4, 6), normal(6, 3, seed=1)])
    assert stats["fused_matmul"] >= 1
    np.testing.assert_allclose(results[-1][1], np.exp(results[-1][0] + 1), rtol=1e-5)


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


def test_casts_fuse_inside_blocks() -> None:
    from burn_backend import DType

    def chain(t: list[Tensor]) -> list[Tensor]:
        x, n = t
        wide = (x * 2).cast(DType.F64) + 1
        mask = (x > 0).float() * 3
        return [wide.cast(DType.F32) - mask, n.float() * 0.5 + x, (n * 2).cast(DType.I64) + 1]

    ints = np.arange(24, dtype=np.int32).reshape(4, 6)
    stats, _ = run(chain, [normal(4, 6), ints])
    assert stats["fused_blocks"] >= 2
    assert stats["op_by_op"] > 0  # the first run


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


def test_in_place_reuse_never_clobbers_a_live_tensor_or_a_users_array() -> None:
    device = Fusion(NdArray(), compile_after=1).device()
    for _ in range(3):
        data = normal(16, 8)
        mine = data.copy()
        x = Tensor.from_data(mine, device)  # may share ``mine``'s memory
        y = (x * 2).exp()
        del x
        np.testing.assert_allclose(y.to_data().to_numpy(), np.exp(data * 2), rtol=1e-6)
        assert np.array_equal(mine, data)
        kept = Tensor.from_data(normal(16, 8), device) * 1.0
        view = kept.reshape([8, 16])  # a view of kept's memory
        z = (kept + 1).exp()
        del kept
        np.testing.assert_allclose(view.reshape([16, 8]).to_data().to_numpy(), normal(16, 8), rtol=1e-6)
        np.testing.assert_allclose(z.to_data().to_numpy(), np.exp(normal(16, 8) + 1), rtol=1e-5)


# -- the optimizer's update ---------------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["Adam", "AdamW"])
def test_the_adam_update_is_one_fused_block_per_parameter(rule: str) -> None:
    nn = pytest.importorskip("burn_nn")
    optim = pytest.importorskip("burn_nn.optim")
    Autodiff = pytest.importorskip("burn_autodiff").Autodiff

    fusion = Fusion(NdArray(), compile_after=2)
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
            before = dict(fusion.executor.stats)
            models[i] = optimizers[i].step(1e-2, models[i], grads)
            got = {name: p.val().to_data().to_numpy() for name, p in models[i].named_params()}
            if i == 0:
                fused, new = fusion.executor.stats, got
                if step >= 2:  # compiled from the second sighting on
                    assert fused["fused_blocks"] - before.get("fused_blocks", 0) == 2
                    assert fused["op_by_op"] == before.get("op_by_op", 0)
            else:
                for name, value in got.items():
                    np.testing.assert_allclose(new[name], value, rtol=1e-5, atol=1e-7)
