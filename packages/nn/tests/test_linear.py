"""Linear against torch.nn.Linear: forward and gradients, with and without bias, any leading dims."""

from __future__ import annotations

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import LinearConfig


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("leading", [[5], [2, 3], []])
def test_linear_matches_torch(bias, leading, device, ref, rng) -> None:
    layer = LinearConfig(4, 3, bias=bias).init(device)
    theirs = ref.torch.nn.Linear(4, 3, bias=bias)
    with ref.torch.no_grad():
        theirs.weight.copy_(ref.tensor(layer.weight.val()).T)
        if bias:
            theirs.bias.copy_(ref.tensor(layer.bias.val()))
    x_np = rng.standard_normal([*leading, 4]).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    tx = ref.tensor(x_np, requires_grad=True)
    out, expected = layer(x), theirs(tx)
    ref.close(out, expected)
    grads = ref.backward(out, expected, rng)
    ref.close(x.grad(grads), tx.grad)
    ref.close(layer.weight.val().grad(grads), theirs.weight.grad.T)
    if bias:
        ref.close(layer.bias.val().grad(grads), theirs.bias.grad)
    else:
        assert layer.bias is None


def test_linear_in_float64(rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    layer = LinearConfig(3, 2).init(device)
    assert layer.weight.dtype == DType.F64
    x_np = rng.standard_normal([4, 3])
    expected = x_np @ layer.weight.val().to_data().to_numpy() + layer.bias.val().to_data().to_numpy()
    np.testing.assert_allclose(
        layer(Tensor.from_data(x_np, device)).to_data().to_numpy(), expected, rtol=1e-12
    )


def test_linear_errors(device) -> None:
    with pytest.raises(ValueError, match=r"Linear: sizes must be positive, got 0 -> 3"):
        LinearConfig(0, 3).init(device)
    layer = LinearConfig(4, 3).init(device)
    with pytest.raises(ValueError, match="linear"):
        layer(Tensor.zeros([2, 5], device))
