"""Where the importer hands an operator to one backend op rather than composing it: ``MatMul`` of a stack
of rows by one matrix (a Linear layer on ``[batch, tokens, features]``) as one GEMM over all the rows,
not one per batch entry, and ``LayerNormalization`` over the last axis as the backend's layer norm. Each
checked against NumPy in float64, with the composed forms they stand in for."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor, default_device
from burn_backend import module as F

burn_onnx = pytest.importorskip("burn_import.onnx")


def _spy_matmuls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[int], list[int]]]:
    """The operand shapes of every ``Tensor.matmul`` call from now on."""
    calls: list[tuple[list[int], list[int]]] = []
    original = Tensor.matmul

    def spy(self: Tensor, other: Tensor) -> Any:
        calls.append((self.dims(), other.dims()))
        return original(self, other)

    monkeypatch.setattr(Tensor, "matmul", spy)
    return calls


@pytest.mark.parametrize(
    ("shape_a", "shape_b", "gemm"),
    [
        ((3, 4, 5, 6), (6, 7), ([60, 6], [6, 7])),
        ((8, 5, 6), (1, 6, 7), ([40, 6], [6, 7])),
        ((2, 3, 6), (6,), ([6, 6], [6, 1])),
        ((2, 3, 5, 6), (1, 1, 6, 7), ([30, 6], [6, 7])),
    ],
)
def test_rows_times_one_matrix_are_one_gemm(
    monkeypatch: pytest.MonkeyPatch,
    shape_a: tuple[int, ...],
    shape_b: tuple[int, ...],
    gemm: tuple[list[int], list[int]],
) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    device = default_device()
    calls = _spy_matmuls(monkeypatch)
    out = burn_onnx.run_op("MatMul", Tensor.from_numpy(a, device), Tensor.from_numpy(b, device))
    assert calls == [gemm]
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert out.dims() == list(expected.shape)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("shape_a", "shape_b"),
    [
        ((2, 1, 5, 6), (3, 6, 7)),  # batch dims broadcast both ways: a batched product
        ((6,), (2, 6, 7)),
        ((5, 6), (2, 6, 7)),
        ((4, 5, 6), (4, 6, 7)),
    ],
)
def test_batched_products_follow_numpy(
    monkeypatch: pytest.MonkeyPatch, shape_a: tuple[int, ...], shape_b: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    device = default_device()
    calls = _spy_matmuls(monkeypatch)
    out = burn_onnx.run_op("MatMul", Tensor.from_numpy(a, device), Tensor.from_numpy(b, device))
    assert len(calls) == 1
    assert len(calls[0][0]) == len(calls[0][1]) >= 3
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert out.dims() == list(expected.shape)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-5, atol=1e-5)


def _layer_norm_reference(
    x: np.ndarray[Any, Any],
    axis: int,
    scale: np.ndarray[Any, Any],
    bias: np.ndarray[Any, Any] | None,
    eps: float,
) -> np.ndarray[Any, Any]:
    x64 = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x64.mean(axis=axes, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (x64 - mean) / np.sqrt(var + eps) * scale.astype(np.float64)
    return out if bias is None else out + bias.astype(np.float64)


@pytest.mark.parametrize(
    ("axis", "with_bias", "fused"), [(-1, True, True), (2, False, True), (1, True, False)]
)
def test_layer_norm_over_the_last_axis_is_the_backend_op(
    monkeypatch: pytest.MonkeyPatch, axis: int, with_bias: bool, fused: bool
) -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 5, 16)) * 3 + 1).astype(np.float32)
    scale_shape = (16,) if fused else (5, 16)
    scale = rng.standard_normal(scale_shape).astype(np.float32)
    bias = rng.standard_normal(scale_shape).astype(np.float32) if with_bias else None
    calls: list[list[int]] = []
    original = F.layer_norm

    def spy(t: Tensor, *args: Any) -> Tensor:
        calls.append(t.dims())
        return original(t, *args)

    monkeypatch.setattr(F, "layer_norm", spy)
    device = default_device()
    inputs = [Tensor.from_numpy(a, device) for a in (x, scale) + ((bias,) if bias is not None else ())]
    out = burn_onnx.run_op("LayerNormalization", *inputs, axis=axis, epsilon=1e-3)
    assert calls == ([[2, 5, 16]] if fused else [])
    expected = _layer_norm_reference(x, axis, scale, bias, 1e-3)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-5, atol=1e-5)


def test_layer_norm_with_its_statistics_stays_composed(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    scale = rng.standard_normal(8).astype(np.float32)
    monkeypatch.setattr(F, "layer_norm", None)  # must not be called: it gives no mean or inverse std
    device = default_device()
    out, mean, inv_std = burn_onnx.run_op(
        "LayerNormalization", Tensor.from_numpy(x, device), Tensor.from_numpy(scale, device), outputs=3
    )
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out.to_numpy(), _layer_norm_reference(x, -1, scale, None, 1e-5), atol=1e-5)
    np.testing.assert_allclose(mean.to_numpy()[:, 0], x64.mean(axis=1), atol=1e-6)
    np.testing.assert_allclose(inv_std.to_numpy()[:, 0], 1 / np.sqrt(x64.var(axis=1) + 1e-5), rtol=1e-5)
