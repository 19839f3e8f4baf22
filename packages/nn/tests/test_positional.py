"""Positional encodings: PositionalEncoding's sinusoids against a NumPy float64 reference and Burn's values;
RotaryEncoding against a NumPy float64 reference, Burn's values and PyTorch's complex-product formula
(outputs and gradients); window shifts; errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import PositionalEncodingConfig, RotaryEncodingConfig, generate_sinusoids


def _sinusoids_reference(length: int, d_model: int, max_timescale: float) -> np.ndarray:
    """PyTorch's transformer tutorial, in float64: sin at even columns, cos at odd ones."""
    position = np.arange(length, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float64) * (-math.log(max_timescale) / d_model))
    table = np.zeros([length, d_model])
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term)
    return table


def _rope_reference(x: np.ndarray, start: int, theta: float = 10_000.0) -> np.ndarray:
    """Interleaved RoPE in float64: pair (x[2i], x[2i+1]) at position p rotated by p * theta^(-2i/d)."""
    seq, d_model = x.shape[-2:]
    angles = np.arange(start, start + seq)[:, None] * theta ** (-np.arange(0, d_model, 2) / d_model)[None, :]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x, dtype=np.float64)
    out[..., 0::2] = even * np.cos(angles) - odd * np.sin(angles)
    out[..., 1::2] = even * np.sin(angles) + odd * np.cos(angles)
    return out


# -- sinusoids ------------------------------------------------------------------------------------------
def test_generate_sinusoids_matches_reference_and_burn(device) -> None:
    sinusoids = generate_sinusoids(12, 6, 10_000, device)
    assert sinusoids.dims() == [12, 6]
    assert sinusoids.dtype == DType.F32
    values = sinusoids.to_data().to_numpy()
    np.testing.assert_allclose(values, _sinusoids_reference(12, 6, 10_000), rtol=1e-6, atol=1e-7)
    # rows 1 and 11 of Burn's test (its values come from PyTorch's tutorial)
    np.testing.assert_allclose(values[1], [0.84147, 0.54030, 0.04640, 0.99892, 0.00215, 1.00000], atol=1e-5)
    np.testing.assert_allclose(values[11], [-0.99999, 0.00443, 0.48868, 0.87246, 0.02370, 0.99972], atol=1e-5)


def test_positional_encoding_adds_the_sinusoids(device, rng) -> None:
    encoding = PositionalEncodingConfig(8, max_sequence_size=16, max_timescale=100).init(device)
    assert encoding.sinusoids.dims() == [1, 16, 8]
    assert encoding.num_params() == 0
    x_np = rng.standard_normal([3, 5, 8]).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    out = encoding(x)
    np.testing.assert_allclose(
        out.to_data().to_numpy(), x_np + _sinusoids_reference(5, 8, 100)[None], rtol=1e-6, atol=1e-6
    )
    grads = (out * out).sum().backward()
    np.testing.assert_allclose(x.grad(grads).to_data().to_numpy(), 2 * out.to_data().to_numpy(), rtol=1e-6)


def test_positional_encoding_follows_the_input_device_and_dtype(device) -> None:
    encoding = PositionalEncodingConfig(6).init(device)
    evaluated = encoding.valid()(Tensor.zeros([2, 3, 6], NdArray().device()))
    np.testing.assert_allclose(
        evaluated.to_data().to_numpy()[1], _sinusoids_reference(3, 6, 10_000), rtol=1e-6, atol=1e-7
    )
    doubled = encoding(Tensor.zeros([1, 3, 6], device, DType.F64))
    assert doubled.dtype == DType.F64


def test_positional_encoding_in_float64(rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    encoding = PositionalEncodingConfig(10, max_sequence_size=20).init(device)
    x_np = rng.standard_normal([2, 20, 10])
    out = encoding(Tensor.from_data(x_np, device))
    np.testing.assert_allclose(
        out.to_data().to_numpy(), x_np + _sinusoids_reference(20, 10, 10_000), rtol=1e-13
    )


def test_positional_encoding_errors(device) -> None:
    encoding = PositionalEncodingConfig(8, max_sequence_size=5).init(device)
    with pytest.raises(ValueError, match=r"expected an input \[batch, seq, d_model=8\], got \[1, 5, 10\]"):
        encoding(Tensor.zeros([1, 5, 10], device))
    with pytest.raises(ValueError, match=r"expected an input \[batch, seq, d_model=8\], got \[1, 5, 1\]"):
        encoding(Tensor.zeros([1, 5, 1], device))
    with pytest.raises(ValueError, match=r"the sequence length 6 exceeds max_sequence_size \(5\)"):
        encoding(Tensor.zeros([1, 6, 8], device))
    with pytest.raises(
        TypeError, match="PositionalEncoding: expected a Float tensor, got a tensor of dtype i64"
    ):
        encoding(Tensor.zeros([1, 5, 8], device, DType.I64))
    with pytest.raises(ValueError, match="d_model must be even and positive, got 7"):
        PositionalEncodingConfig(7).init(device)
    with pytest.raises(ValueError, match=r"max_timescale \(10\) must be at least the length \(20\)"):
        PositionalEncodingConfig(8, max_sequence_size=20, max_timescale=10).init(device)


# -- rotary ---------------------------------------------------------------------------------------------
def test_rotary_encoding_matches_burn(device) -> None:
    """Burn's tests: the same values for [batch, seq, d] and [batch, heads, seq, d] inputs, and its
    frequency table."""
    rope = RotaryEncodingConfig(10, 4).init(device)
    values = [
        [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
        [[9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]],
    ]
    expected = [
        [[1.0, 2.0, 3.0, 4.0], [-2.3473, 7.4492, 6.9197, 8.0696]],
        [[9.0, 10.0, 11.0, 12.0], [-4.7567, 18.5034, 14.8393, 16.1492]],
    ]
    x = Tensor.from_data(values, device)
    np.testing.assert_allclose(rope(x).to_data().to_numpy(), expected, atol=1e-4)
    np.testing.assert_allclose(rope(x.unsqueeze_dim(0)).to_data().to_numpy()[0], expected, atol=1e-4)
    assert np.all(rope(Tensor.zeros([1, 2, 2, 4], device)).to_data().to_numpy() == 0.0)

    frequencies = RotaryEncodingConfig(2, 8).init(device).freq_complex
    assert frequencies.dims() == [2, 8, 2]
    row = [
        [5.4030e-01, 8.4147e-01],
        [9.9500e-01, 9.9833e-02],
        [9.9995e-01, 9.9998e-03],
        [9.9999e-01, 9.9999e-04],
    ]
    np.testing.assert_allclose(frequencies.to_data().to_numpy()[1], np.repeat(row, 2, axis=0), atol=1e-5)
    np.testing.assert_allclose(frequencies.to_data().to_numpy()[0], [[1.0, 0.0]] * 8)


@pytest.mark.parametrize("shape", [[6, 8], [2, 6, 8], [2, 3, 6, 8]])
def test_rotary_encoding_matches_reference_and_torch_with_gradients(shape, device, ref, rng) -> None:
    rope = RotaryEncodingConfig(16, 8, theta=500.0).init(device)
    x_np = rng.standard_normal(shape).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    out = rope.apply(x, 3)
    assert out.dims() == shape
    np.testing.assert_allclose(
        out.to_data().to_numpy(), _rope_reference(x_np.astype(np.float64), 3, 500.0), atol=2e-6
    )

    torch = ref.torch
    tx = ref.tensor(x_np, requires_grad=True)
    frequencies = 1.0 / 500.0 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    angles = torch.outer(torch.arange(3, 9, dtype=torch.float64), frequencies)
    rotation = torch.polar(torch.ones_like(angles), angles).to(torch.complex64)
    pairs = torch.view_as_complex(tx.reshape(*shape[:-1], 4, 2))
    expected = torch.view_as_real(pairs * rotation).reshape(shape)
    ref.close(out, expected, scale=2)

    upstream = rng.standard_normal(shape).astype(np.float32)
    grads = (out * Tensor.from_data(upstream, device)).sum().backward()
    expected.backward(torch.tensor(upstream))
    ref.close(x.grad(grads), tx.grad, scale=2)


def test_rotary_encoding_in_float64_and_on_the_inner_device(inner_device, rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    rope = RotaryEncodingConfig(12, 6).init(device)
    assert rope.freq_complex.dtype == DType.F64
    x_np = rng.standard_normal([2, 12, 6])
    out = rope(Tensor.from_data(x_np, device))
    np.testing.assert_allclose(out.to_data().to_numpy(), _rope_reference(x_np, 0), rtol=1e-12, atol=1e-13)
    evaluated = rope.valid()(Tensor.from_data(x_np.astype(np.float32), inner_device))
    assert evaluated.dtype == DType.F32
    np.testing.assert_allclose(evaluated.to_data().to_numpy(), _rope_reference(x_np, 0), atol=1e-5)


def test_rotary_encoding_preserves_relative_positions(device, rng) -> None:
    """RoPE's point: the dot product of rotated q and k depends only on their distance."""
    rope = RotaryEncodingConfig(32, 8).init(device)
    q = rng.standard_normal([1, 8]).astype(np.float32)
    k = rng.standard_normal([1, 8]).astype(np.float32)

    def score(position_q: int, position_k: int) -> float:
        rq = rope.apply(Tensor.from_data(q, device), position_q).to_data().to_numpy()
        rk = rope.apply(Tensor.from_data(k, device), position_k).to_data().to_numpy()
        return float((rq * rk).sum())

    assert score(5, 2) == pytest.approx(score(13, 10), rel=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 3), rel=1e-3)


def test_rotary_encoding_shift_and_reset(device, rng) -> None:
    rope = RotaryEncodingConfig(8, 4).init(device)
    x_np = rng.standard_normal([1, 4, 4]).astype(np.float32)
    x = Tensor.from_data(x_np, device)
    rope.shift(6)
    assert rope.start_offset == 6
    np.testing.assert_allclose(rope.apply(x, 0).to_data().to_numpy(), _rope_reference(x_np, 6), atol=1e-5)
    rope.shift(20)
    np.testing.assert_allclose(rope.apply(x, 4).to_data().to_numpy(), _rope_reference(x_np, 24), atol=1e-4)
    with pytest.raises(ValueError, match="start must increase, got 20 after 20"):
        rope.shift(20)
    rope.reset()
    assert rope.start_offset == 0
    np.testing.assert_allclose(rope(x).to_data().to_numpy(), _rope_reference(x_np, 0), atol=1e-5)


def test_rotary_encoding_frequency_scaling(device, rng) -> None:
    rope = RotaryEncodingConfig(10, 4, theta=100.0).init_with_frequency_scaling(lambda f: f * 0.5, device)
    np.testing.assert_allclose(rope.theta.to_data().to_numpy(), [0.5, 0.05], rtol=1e-6)
    x_np = rng.standard_normal([3, 4]).astype(np.float32)
    angles = np.arange(3)[:, None] * np.array([0.5, 0.05])[None, :]
    expected = np.empty([3, 4])
    expected[:, 0::2] = x_np[:, 0::2] * np.cos(angles) - x_np[:, 1::2] * np.sin(angles)
    expected[:, 1::2] = x_np[:, 0::2] * np.sin(angles) + x_np[:, 1::2] * np.cos(angles)
    np.testing.assert_allclose(rope(Tensor.from_data(x_np, device)).to_data().to_numpy(), expected, atol=1e-6)
    with pytest.raises(ValueError, match=r"the frequency scaling must return a \[2\] tensor, got \[1\]"):
        RotaryEncodingConfig(10, 4).init_with_frequency_scaling(lambda f: f.narrow(0, 0, 1), device)


def test_rotary_encoding_errors(device) -> None:
    with pytest.raises(ValueError, match="d_model must be even and positive, got 15"):
        RotaryEncodingConfig(10, 15).init(device)
    with pytest.raises(ValueError, match=r"theta must be positive, got 0\.0"):
        RotaryEncodingConfig(10, 4, theta=0.0).init(device)
    rope = RotaryEncodingConfig(4, 4).init(device)
    with pytest.raises(ValueError, match=r"positions 2\.\.6 run past the precomputed 4"):
        rope.apply(Tensor.zeros([1, 4, 4], device), 2)
    with pytest.raises(ValueError, match=r"the last dim must be d_model=4, got shape \[1, 2, 6\]"):
        rope(Tensor.zeros([1, 2, 6], device))
    with pytest.raises(ValueError, match="expected at least 2 dims"):
        rope(Tensor.zeros([4], device))
    assert RotaryEncodingConfig.from_json(RotaryEncodingConfig(4, 4).to_json()).theta == 10_000.0
