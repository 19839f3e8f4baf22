"""Fusion's reduce, matmul and cast blocks: softmax, log-softmax, layer norm and reductions with an
element-wise prologue and epilogue; matmuls with a bias and an activation; casts inside blocks. Fused
equals unfused, and values read in the middle stay right."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import DType, Tensor, activation

from .conftest import FusionUnderTest, agree, normal


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_and_log_softmax_fuse_into_one_block(fusion: FusionUnderTest, dim: int) -> None:
    device = agree(
        fusion,
        lambda t: [activation.softmax(t[0], dim), activation.log_softmax(t[0] * 2, dim)],
        [normal(3, 5, 4)],
    )
    fusion.assert_fused(device, "fused_reduce", 2, kind="reduce")


@pytest.mark.parametrize("reduce", ["sum_dim", "mean_dim", "max_dim"])
def test_reductions_with_a_prologue_and_an_epilogue(fusion: FusionUnderTest, reduce: str) -> None:
    def chain(t: list[Tensor]) -> list[Tensor]:
        x, bias = t
        reduced = getattr((x * 1.5 + bias).exp(), reduce)(1)
        return [(reduced.log() - 1) * 0.5]

    device = agree(fusion, chain, [normal(6, 7, 3), normal(1, 7, 1, seed=1)])
    fusion.assert_fused(device, "fused_reduce", kind="reduce")


def test_layer_norm_fuses(fusion: FusionUnderTest) -> None:
    def chain(t: list[Tensor]) -> list[Tensor]:
        x, gamma, beta = t
        var, mean = x.var_mean_bias(1)
        return [(x - mean) / (var + 1e-5).sqrt() * gamma + beta]

    device = agree(fusion, chain, [normal(8, 32), normal(1, 32, seed=1), normal(1, 32, seed=2)])
    fusion.assert_fused(device, "fused_reduce", kind="reduce")


def test_max_propagates_nan_and_handles_infinities(fusion: FusionUnderTest) -> None:
    data = normal(4, 6)
    data[1, 2] = np.nan
    data[2, :] = -np.inf
    data[3, 0] = np.inf
    device = agree(fusion, lambda t: [(t[0] * 1.0).max_dim(1) + 0.0], [data])
    fusion.assert_fused(device, "fused_reduce", kind="reduce")


def test_a_reduced_value_read_in_the_middle_stays_right(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    for _ in range(2):
        x = Tensor.from_data(normal(4, 5), device)
        total = x.exp().sum_dim(1)
        share = x.exp() / total
        np.testing.assert_allclose(
            total.to_data().to_numpy(), np.exp(normal(4, 5)).sum(1, keepdims=True), rtol=1e-5
        )
        np.testing.assert_allclose(share.sum_dim(1).to_data().to_numpy(), np.ones((4, 1)), rtol=1e-5)


@pytest.mark.parametrize("batched", [False, True])
def test_matmul_with_bias_and_activation_fuses(fusion: FusionUnderTest, batched: bool) -> None:
    lead = (2,) if batched else ()

    def chain(t: list[Tensor]) -> list[Tensor]:
        x, w, b = t
        return [activation.relu(x.matmul(w) + b), activation.gelu(x.matmul(w) * 0.5)]

    arrays = [normal(*lead, 5, 8), normal(*lead, 8, 3, seed=1), normal(*lead, 1, 3, seed=2)]
    device = agree(fusion, chain, arrays)
    fusion.assert_fused(device, "fused_matmul", 2, kind="matmul")


def test_a_live_product_is_not_overwritten_by_its_epilogue(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    a, b = normal(4, 6), normal(6, 3, seed=1)
    for _ in range(3):
        product = Tensor.from_data(a, device).matmul(Tensor.from_data(b, device))
        after = (product + 1).exp()
        np.testing.assert_allclose(product.to_data().to_numpy(), a @ b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(after.to_data().to_numpy(), np.exp(a @ b + 1), rtol=1e-5)


def test_casts_fuse_inside_blocks(fusion: FusionUnderTest) -> None:
    if not fusion.layer.inner.supports_dtype(fusion.eager, DType.F64):
        pytest.skip(f"{fusion.layer.inner.name} has no f64")

    def chain(t: list[Tensor]) -> list[Tensor]:
        x, n = t
        wide = (x * 2).cast(DType.F64) + 1
        mask = (x > 0).float() * 3
        return [wide.cast(DType.F32) - mask, n.float() * 0.5 + x, (n * 2).cast(DType.I64) + 1]

    ints = np.arange(24, dtype=np.int32).reshape(4, 6)
    device = agree(fusion, chain, [normal(4, 6), ints])
    fusion.assert_fused(device, "fused_blocks", 2, kind="cast")
    assert fusion.stats(device)["op_by_op"] > 0  # the first run
