"""Shared fixtures of burn_nn's tests: devices, and the ``ref`` helper for comparisons with PyTorch.

Layers and optimizers are compared with their PyTorch counterparts on the same weights and random inputs;
without PyTorch installed, those tests skip.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import Device, Gradients, Tensor, TensorData, Tolerance
from burn_backend.activation import tanh
from burn_ndarray import NdArray
from burn_nn import LinearConfig, Module


@pytest.fixture
def device() -> Device:
    """An ``Autodiff(NdArray())`` device, seeded."""
    device = Autodiff(NdArray()).device()
    device.seed(0)
    return device


@pytest.fixture
def inner_device() -> Device:
    """A plain ``NdArray()`` device (no autodiff: layers evaluate), seeded."""
    device = NdArray().device()
    device.seed(0)
    return device


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


class Mlp(Module):
    """Linear(4, 5), tanh, Linear(5, 3): the model the optimizer tests train."""

    def __init__(self, device: Device) -> None:
        self.hidden = LinearConfig(4, 5).init(device)
        self.out = LinearConfig(5, 3).init(device)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(tanh(self.hidden(x)))


@pytest.fixture
def mlp() -> type[Mlp]:
    """The ``Mlp`` class: ``mlp(device)`` makes a fresh one on ``device``."""
    return Mlp


class Reference:
    """Moves values between our tensors and PyTorch's and compares them."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def tensor(self, value: Tensor | np.ndarray[Any, Any], requires_grad: bool = False) -> Any:
        """A float64-free copy in PyTorch (same dtype as ``value``)."""
        array = value.to_data().to_numpy() if isinstance(value, Tensor) else np.asarray(value)
        result = self.torch.tensor(np.array(array))
        return result.requires_grad_(requires_grad) if requires_grad else result

    def inputs(self, values: np.ndarray[Any, Any], device: Device) -> tuple[Tensor, Any]:
        """``values`` as our graph leaf on ``device`` and as a PyTorch leaf, both requiring gradients."""
        return Tensor.from_data(values, device).require_grad(), self.tensor(values, requires_grad=True)

    def backward(self, ours: Tensor, theirs: Any, rng: np.random.Generator) -> Gradients:
        """Back-propagate one random float32 upstream gradient through ``ours`` and through ``theirs`` (a
        torch tensor of the same shape); returns our gradients (torch's are in its leaves)."""
        upstream = rng.standard_normal(ours.dims()).astype(np.float32)
        grads = (ours * Tensor.from_data(upstream, ours.device)).sum().backward()
        theirs.backward(self.torch.tensor(upstream))
        return grads

    def close(self, ours: Tensor | TensorData | Any, theirs: Any, scale: float = 1.0) -> None:
        """Assert ``ours`` equals ``theirs`` (a torch tensor or array) within the dtype's tolerance times
        ``scale``."""
        if isinstance(ours, Tensor):
            ours = ours.to_data()
        if not isinstance(ours, TensorData):
            ours = TensorData(np.asarray(ours))
        if hasattr(theirs, "detach"):
            theirs = theirs.detach().numpy()
        expected = TensorData(np.asarray(theirs).astype(ours.to_numpy().dtype))
        ours.assert_approx_eq(expected, Tolerance.for_dtype(ours.dtype).scaled(scale))


@pytest.fixture
def ref() -> Reference:
    """PyTorch comparisons (the test skips where PyTorch is not installed)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return Reference(torch)
