"""Fusion's streams: laziness, fused results equal unfused ones, values read mid-chain, live tensors never
overwritten, the relative-signature cache, and streams on two threads."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, activation

from .conftest import FusionUnderTest, agree


def gelu(x: Tensor) -> Tensor:
    return x * 0.5 * ((x / math.sqrt(2.0)).erf() + 1)


def test_ops_are_recorded_with_their_shape_and_dtype_and_run_on_read(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    x = Tensor.from_data(np.arange(6, dtype=np.float32).reshape(2, 3), device)
    y = (x * 2 + 1) > 4
    assert not getattr(y.primitive, "is_ready", True), "an element-wise result should be pending"
    assert y.dims() == [2, 3]
    assert y.dtype is DType.BOOL
    assert not fusion.stats(device)["op_by_op"]
    assert y.tolist() == [[False, False, True], [True, True, True]]


@pytest.mark.parametrize("compile_after", [1, 3])
def test_fused_results_equal_unfused_ones(fusion: FusionUnderTest, compile_after: int) -> None:
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(4, 1, 5)), rng.normal(size=(1, 3, 5)), rng.normal(size=(4, 3, 1))

    def chain(device: Device) -> list[Any]:
        x, y, z = (Tensor.from_data(v.astype(np.float32), device) for v in (a, b, c))
        w = ((x + y) * z - 1.5).exp().clamp(0.1, 3.0) / (y.abs() + 1)
        return [
            gelu(w).to_data().to_numpy(),
            (w > 0.5).to_data().to_numpy(),
            (activation.sigmoid(w) + x).to_data().to_numpy(),
        ]

    device = fusion.fresh(compile_after)
    for _ in range(3):  # op by op first, then compiled
        for got, want in zip(chain(device), chain(fusion.eager)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    fusion.assert_fused(device, "fused_blocks")


def test_int_and_bool_chains_fuse(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    values = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)

    def chain(d: Device) -> list[Any]:
        x = Tensor.from_data(values, d)
        y = (x * 3 + 7) % 5 - (x // 2)
        return [y.tolist(), ((y > 0) & (x < 2)).tolist()]

    for _ in range(2):
        assert chain(device) == chain(fusion.eager)
    fusion.assert_fused(device, "fused_blocks", kind="int")


def test_reading_a_value_in_the_middle_of_a_chain(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    for _ in range(2):
        x = Tensor.from_data([1.0, 2.0, 3.0], device)
        y = x * 2
        assert y.tolist() == [2.0, 4.0, 6.0]
        z = (y + 1) * y
        assert z.tolist() == [6.0, 20.0, 42.0]
        assert y.tolist() == [2.0, 4.0, 6.0]


def test_inputs_and_live_tensors_are_never_overwritten(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    data = np.linspace(-1, 1, 64, dtype=np.float32)
    for _ in range(3):
        x = Tensor.from_data(data.copy(), device)
        y = x * 2
        z = (y + 1).exp() - y
        assert np.array_equal(x.to_data().to_numpy(), data)
        np.testing.assert_allclose(y.to_data().to_numpy(), data * 2, rtol=1e-6)
        np.testing.assert_allclose(z.to_data().to_numpy(), np.exp(data * 2 + 1) - data * 2, rtol=1e-5)


def test_an_input_given_up_by_the_user_may_be_reused_but_views_and_arrays_stay(
    fusion: FusionUnderTest,
) -> None:
    device = fusion.fresh()
    rng = np.random.default_rng(1)
    for _ in range(3):
        data = rng.normal(size=(16, 8)).astype(np.float32)
        mine = data.copy()
        x = Tensor.from_data(mine, device)  # may share ``mine``'s memory on a CPU backend
        y = (x * 2).exp()
        del x
        np.testing.assert_allclose(y.to_data().to_numpy(), np.exp(data * 2), rtol=1e-6)
        assert np.array_equal(mine, data)
        kept = Tensor.from_data(data, device) * 1.0
        view = kept.reshape([8, 16])  # may be a view of kept's memory
        z = (kept + 1).exp()
        del kept
        np.testing.assert_allclose(view.reshape([16, 8]).to_data().to_numpy(), data, rtol=1e-6)
        np.testing.assert_allclose(z.to_data().to_numpy(), np.exp(data + 1), rtol=1e-5)


def test_the_cache_serves_new_data_scalars_and_batch_sizes(fusion: FusionUnderTest) -> None:
    device = fusion.fresh(compile_after=2)
    for batch, scale in [(4, 1.0), (4, 2.0), (8, 3.0), (16, 0.5)]:
        data = np.full((batch, 3), 2.0, dtype=np.float32)
        y = (Tensor.from_data(data, device) * scale + 1).sqrt()
        np.testing.assert_allclose(y.to_data().to_numpy(), np.sqrt(data * scale + 1), rtol=1e-6)
    counters = fusion.stats(device)
    assert counters["plans"] == 1  # one plan for every batch size and scalar
    assert counters["op_by_op"] == 3  # the first chain, op by op
    fusion.assert_fused(device, "fused_blocks", 3)


def test_one_off_chains_never_compile(fusion: FusionUnderTest) -> None:
    device = fusion.fresh(compile_after=2)
    x = Tensor.from_data([1.0, 2.0], device)
    assert ((x * 3) - 1).tolist() == [2.0, 5.0]
    assert fusion.stats(device)["compiled"] == 0


def test_streams_on_two_threads(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    results: dict[int, Any] = {}
    errors: list[BaseException] = []
    shared = Tensor.from_data([1.0, 2.0, 3.0], device) * 2  # pending on the main thread's stream

    def work(index: int) -> None:
        try:
            for _ in range(20):
                x = Tensor.from_data(np.full(3, float(index), np.float32), device)
                y = (x + shared) * 0.5
            results[index] = y.tolist()
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert results == {i: [(i + 2.0) / 2, (i + 4.0) / 2, (i + 6.0) / 2] for i in range(2)}


def test_broadcast_outputs_of_different_shapes_in_one_stream(fusion: FusionUnderTest) -> None:
    device = fusion.fresh()
    for _ in range(2):
        row = Tensor.from_data(np.array([[1.0, 2.0, 3.0]], np.float32), device)
        column = Tensor.from_data(np.array([[1.0], [2.0]], np.float32), device)
        scaled = row * 2  # [1, 3], live
        grid = scaled + column  # [2, 3]
        assert scaled.tolist() == [[2.0, 4.0, 6.0]]
        assert grid.tolist() == [[3.0, 5.0, 7.0], [4.0, 6.0, 8.0]]


def test_the_stack_under_test_fuses_forward_and_backward(fusion: FusionUnderTest) -> None:
    top = fusion.top
    if not top.ad_enabled() or getattr(top, "inner", None) is not fusion.layer:
        pytest.skip(f"{top.stack_name}: needs Autodiff directly over Fusion")
    device = top.device(fusion.index)
    eager = type(top)(fusion.layer.inner).device(fusion.index)  # the same autodiff, no fusion
    data = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def grad(d: Device) -> Any:
        x = Tensor.from_data(data, d).require_grad()
        loss = (gelu(x * 1.5 + 0.25).exp() * x).sum()
        gradient = x.grad(loss.backward())
        assert gradient is not None
        return gradient.to_data().to_numpy()

    before = fusion.stats(device)["fused_blocks"]
    for _ in range(getattr(fusion.layer, "compile_after", 1) + 1):
        np.testing.assert_allclose(grad(device), grad(eager), rtol=1e-5, atol=1e-6)
    if "elementwise" in fusion.compiled_kinds:
        assert fusion.stats(device)["fused_blocks"] > before


def test_agree_helper_fails_on_a_wrong_chain(fusion: FusionUnderTest) -> None:
    calls = {"n": 0}

    def wrong(t: list[Tensor]) -> list[Tensor]:  # differs between the two sides
        calls["n"] += 1
        return [t[0] * (1.0 if calls["n"] % 2 else 2.0)]

    with pytest.raises(AssertionError):
        agree(fusion, wrong, [np.ones((2, 2), np.float32)], repeat=1)
