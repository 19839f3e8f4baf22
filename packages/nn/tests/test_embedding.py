"""Embedding against torch.nn.Embedding: forward and weight gradients (repeated indices accumulate);
PyTorch's standard-normal initialization; errors; Config JSON."""

from __future__ import annotations

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import EmbeddingConfig, Initializer


@pytest.mark.parametrize("index_shape", [[2, 5], [7], [2, 2, 3]])
def test_embedding_matches_torch(index_shape, device, ref, rng) -> None:
    layer = EmbeddingConfig(6, 4).init(device)
    theirs = ref.torch.nn.Embedding(6, 4)
    with ref.torch.no_grad():
        theirs.weight.copy_(ref.tensor(layer.weight.val()))
    # repeated indices: their gradients add up in the same row
    indices_np = rng.integers(0, 6, size=index_shape)
    indices_np.flat[0] = indices_np.flat[-1]
    out = layer(Tensor.from_data(indices_np, device))
    expected = theirs(ref.torch.tensor(indices_np))
    assert out.dims() == [*index_shape, 4]
    ref.close(out, expected)
    grads = ref.backward(out, expected, rng)
    ref.close(layer.weight.val().grad(grads), theirs.weight.grad)


def test_embedding_in_float64(rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    layer = EmbeddingConfig(5, 3).init(device)
    assert layer.weight.dtype == DType.F64
    indices = np.array([[4, 0, 4]])
    out = layer(Tensor.from_data(indices, device)).to_data().to_numpy()
    np.testing.assert_array_equal(out, layer.weight.val().to_data().to_numpy()[indices])


def test_embedding_default_initialization_is_standard_normal(device) -> None:
    weight = EmbeddingConfig(400, 50).init(device).weight.val().to_data().to_numpy()
    assert weight.shape == (400, 50)
    assert weight.mean() == pytest.approx(0.0, abs=0.02)
    assert weight.std() == pytest.approx(1.0, abs=0.02)
    uniform = EmbeddingConfig(10, 8, initializer=Initializer.Uniform(-0.1, 0.1)).init(device)
    assert np.abs(uniform.weight.val().to_data().to_numpy()).max() <= 0.1


def test_embedding_config_json_and_module(device) -> None:
    config = EmbeddingConfig(100, 10, initializer=Initializer.Normal(mean=0.0, std=0.02))
    assert EmbeddingConfig.from_json(config.to_json()) == config
    layer = config.init(device)
    assert layer.num_params() == 1000
    assert [name for name, _ in layer.named_params()] == ["weight"]


def test_embedding_errors(device) -> None:
    with pytest.raises(ValueError, match=r"Embedding: n_embedding must be a positive int, got 0"):
        EmbeddingConfig(0, 4).init(device)
    with pytest.raises(ValueError, match=r"Embedding: d_model must be a positive int, got -2"):
        EmbeddingConfig(3, -2).init(device)
    layer = EmbeddingConfig(3, 2).init(device)
    with pytest.raises(TypeError, match=r"Embedding: input must be an Int tensor of indices, got f32"):
        layer(Tensor.zeros([2, 2], device))


@pytest.mark.parametrize(("index", "message"), [(-1, "index -1 is negative"), (3, "index 3 is out of range")])
def test_embedding_indices_outside_the_table_are_errors(device, index, message) -> None:
    """Negative indices are refused, not counted from the end (as Burn and PyTorch)."""
    layer = EmbeddingConfig(3, 2).init(device)
    with pytest.raises(IndexError, match=rf"embedding: {message}"):
        layer(Tensor.from_data([[0, index]], device))
