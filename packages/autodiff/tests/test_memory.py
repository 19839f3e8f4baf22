"""Graph memory: released by backward, freed with the outputs, flat over a long training loop."""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import numpy as np

from burn_autodiff import Autodiff
from burn_backend import Distribution, Tensor
from burn_backend.activation import relu
from burn_ndarray import NdArray


def test_dropping_outputs_without_backward_frees_the_graph() -> None:
    device = Autodiff(NdArray()).device()
    x = Tensor.from_data([[1.0, 2.0]], device).require_grad()
    y = (x * 2.0).exp().sum()
    node = weakref.ref(y.primitive.node)
    parent = weakref.ref(y.primitive.node.parents[0])
    del y
    assert node() is None
    assert parent() is None


def test_backward_releases_what_it_traversed() -> None:
    device = Autodiff(NdArray()).device()
    x = Tensor.from_data([[1.0, 2.0]], device).require_grad()
    hidden = (x * 2.0).exp()
    loss = hidden.sum()
    loss.backward()
    assert hidden.primitive.node.parents == ()
    assert hidden.primitive.node.inputs == ()
    assert hidden.primitive.node.output is None


def train(steps: int, device: object) -> float:
    rng = np.random.default_rng(0)
    x = Tensor.from_numpy(rng.standard_normal((32, 16)).astype(np.float32), device)
    y = Tensor.from_numpy(rng.standard_normal((32, 1)).astype(np.float32), device)
    w1 = Tensor.random([16, 32], Distribution.normal(0.0, 0.25), device).require_grad()
    w2 = Tensor.random([32, 1], Distribution.normal(0.0, 0.25), device).require_grad()
    loss_value = 0.0
    for _ in range(steps):
        loss = (relu(x.matmul(w1)).matmul(w2) - y).square().mean()
        grads = loss.backward()
        w1 = (w1.inner() - w1.grad(grads) * 0.01).to_device(device)  # type: ignore[operator]
        w2 = (w2.inner() - w2.grad(grads) * 0.01).to_device(device)  # type: ignore[operator]
        w1 = Tensor.from_inner(w1.inner(), device).require_grad()
        w2 = Tensor.from_inner(w2.inner(), device).require_grad()
        loss_value = loss.into_scalar()
    return loss_value


def test_memory_is_flat_over_1000_training_steps() -> None:
    device = Autodiff(NdArray()).device()
    device.seed(0)
    train(50, device)  # warm caches and lazy imports
    gc.collect()
    tracemalloc.start()
    train(100, device)
    gc.collect()
    after_100 = tracemalloc.get_traced_memory()[0]
    first_loss = train(1000, device)
    gc.collect()
    after_1100 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert np.isfinite(first_loss)
    assert after_1100 - after_100 < 256 * 1024, (
        f"memory grew by {after_1100 - after_100} bytes over 1000 steps"
    )
