"""Fusion's own behaviour: laziness, fused results equal to unfused ones, liveness, the relative
signature cache, and streams on several threads."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, activation
from burn_backend.kit import ElementwiseBlock, ElementwisePlan
from burn_fusion import Fusion, FusionTensor
from burn_ndarray import NdArray


def fused(compile_after: int = 1) -> Device:
    return Fusion(NdArray(), compile_after=compile_after).device()


def stats(device: Device) -> Any:
    backend = device.backend
    assert isinstance(backend, Fusion)
    return backend.executor.stats


def gelu(x: Tensor) -> Tensor:
    return x * 0.5 * ((x / math.sqrt(2.0)).erf() + 1)


def test_ops_are_recorded_with_their_shape_and_dtype_and_run_on_read() -> None:
    device = fused()
    x = Tensor.from_data(np.arange(6, dtype=np.float32).reshape(2, 3), device)
    y = (x * 2 + 1) > 4
    assert isinstance(y.primitive, FusionTensor)
    assert not y.primitive.is_ready
    assert y.dims() == [2, 3]
    assert y.dtype is DType.BOOL
    assert not stats(device)
    assert y.tolist() == [[False, False, True], [True, True, True]]


@pytest.mark.parametrize("compile_after", [1, 3])
def test_fused_results_equal_unfused_ones(compile_after: int) -> None:
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(4, 1, 5)), rng.normal(size=(1, 3, 5)), rng.normal(size=(4, 3, 1))
    eager = NdArray().device()

    def chain(device: Device) -> list[Any]:
        x, y, z = (Tensor.from_data(v.astype(np.float32), device) for v in (a, b, c))
        w = ((x + y) * z - 1.5).exp().clamp(0.1, 3.0) / (y.abs() + 1)
        mask = w > 0.5
        return [
            gelu(w).to_data().to_numpy(),
            mask.to_data().to_numpy(),
            (activation.sigmoid(w) + x).to_data().to_numpy(),
        ]

    device = fused(compile_after)
    for _ in range(3):  # op by op first, then compiled
        for got, want in zip(chain(device), chain(eager)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert stats(device)["fused_blocks"] > 0


def test_int_and_bool_chains_fuse() -> None:
    device, eager = fused(), NdArray().device()
    values = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)

    def chain(d: Device) -> list[Any]:
        x = Tensor.from_data(values, d)
        y = (x * 3 + 7) % 5 - (x // 2)
        return [y.tolist(), ((y > 0) & (x < 2)).tolist()]

    for _ in range(2):
        assert chain(device) == chain(eager)
    assert stats(device)["fused_blocks"] > 0


def test_reading_a_value_in_the_middle_of_a_chain() -> None:
    device = fused()
    x = Tensor.from_data([1.0, 2.0, 3.0], device)
    y = x * 2
    assert y.tolist() == [2.0, 4.0, 6.0]
    z = (y + 1) * y
    assert z.tolist() == [6.0, 20.0, 42.0]
    assert y.tolist() == [2.0, 4.0, 6.0]


def test_dead_intermediates_are_not_computed() -> None:
    calls: list[str] = []

    class Counting(NdArray):
        def float_exp(self, tensor: Any) -> Any:
            calls.append("exp")
            return super().float_exp(tensor)

    device = Fusion(Counting(), compile_after=100).device()
    x = Tensor.from_data([1.0, 2.0], device)
    unused = x.exp()
    del unused
    y = x + 1
    assert y.tolist() == [2.0, 3.0]
    assert calls == []


def test_inputs_and_live_tensors_are_never_overwritten() -> None:
    device = fused()
    data = np.linspace(-1, 1, 64, dtype=np.float32)
    for _ in range(3):
        x = Tensor.from_data(data.copy(), device)
        y = x * 2
        z = (y + 1).exp() - y
        assert np.array_equal(x.to_data().to_numpy(), data)
        np.testing.assert_allclose(y.to_data().to_numpy(), data * 2, rtol=1e-6)
        np.testing.assert_allclose(z.to_data().to_numpy(), np.exp(data * 2 + 1) - data * 2, rtol=1e-5)


def test_the_cache_serves_new_data_scalars_and_batch_sizes() -> None:
    device = fused(compile_after=2)
    for batch, scale in [(4, 1.0), (4, 2.0), (8, 3.0), (16, 0.5)]:
        data = np.full((batch, 3), 2.0, dtype=np.float32)
        y = (Tensor.from_data(data, device) * scale + 1).sqrt()
        np.testing.assert_allclose(y.to_data().to_numpy(), np.sqrt(data * scale + 1), rtol=1e-6)
    counters = stats(device)
    assert counters["plans"] == 1
    assert counters["fused_blocks"] == 3
    assert counters["op_by_op"] == 3  # the first chain, op by op


def test_one_off_chains_never_compile() -> None:
    device = fused(compile_after=2)
    x = Tensor.from_data([1.0, 2.0], device)
    assert ((x * 3) - 1).tolist() == [2.0, 5.0]
    assert stats(device)["compiled"] == 0


def test_streams_on_two_threads() -> None:
    device = fused()
    results: dict[int, Any] = {}
    shared = Tensor.from_data([1.0, 2.0, 3.0], device) * 2  # pending on the main thread's stream

    def work(index: int) -> None:
        for _ in range(20):
            x = Tensor.from_data(np.full(3, float(index), np.float32), device)
            y = (x + shared) * 0.5
        results[index] = y.tolist()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: [(i + 2.0) / 2, (i + 4.0) / 2, (i + 6.0) / 2] for i in range(2)}


def test_broadcast_outputs_of_different_shapes_in_one_stream() -> None:
    device = fused()
    for _ in range(2):
        row = Tensor.from_data(np.array([[1.0, 2.0, 3.0]], np.float32), device)
        column = Tensor.from_data(np.array([[1.0], [2.0]], np.float32), device)
        scaled = row * 2  # [1, 3], live
        grid = scaled + column  # [2, 3]
        assert scaled.tolist() == [[2.0, 4.0, 6.0]]
        assert grid.tolist() == [[3.0, 5.0, 7.0], [4.0, 6.0, 8.0]]


def test_an_error_in_a_pending_op_is_raised_by_the_read() -> None:
    class Failing(NdArray):
        def float_exp(self, tensor: Any) -> Any:
            raise RuntimeError("boom")

        def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
            return None

    device = Fusion(Failing()).device()
    y = Tensor.from_data([1.0], device).exp() + 1
    with pytest.raises(RuntimeError, match="boom"):
        y.tolist()


def test_autodiff_over_fusion_fuses_forward_and_backward() -> None:
    from burn_autodiff import Autodiff

    fusion = Fusion(NdArray(), compile_after=1)
    device = Autodiff(fusion).device()
    eager = Autodiff(NdArray()).device()
    data = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def grad(d: Device) -> Any:
        x = Tensor.from_data(data, d).require_grad()
        loss = (gelu(x * 1.5 + 0.25).exp() * x).sum()
        return x.grad(loss.backward()).to_data().to_numpy()

    for _ in range(2):
        np.testing.assert_allclose(grad(device), grad(eager), rtol=1e-5, atol=1e-6)
    assert fusion.executor.stats["fused_blocks"] > 0
