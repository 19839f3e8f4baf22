"""The graph itself: leaves, untracked inputs, released graphs, gradients as values."""

from __future__ import annotations

import threading
from typing import Any, cast

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor


def must(tensor: Tensor | None) -> Tensor:
    """The gradient, asserted present."""
    assert tensor is not None
    return tensor


def test_only_tensors_that_require_grad_get_one(ad_device: Device) -> None:
    x = Tensor.from_data([1.0, 2.0], ad_device).require_grad()
    constant = Tensor.from_data([3.0, 4.0], ad_device)
    unused = Tensor.from_data([5.0], ad_device).require_grad()
    grads = (x * constant).sum().backward()
    assert must(x.grad(grads)).tolist() == [3.0, 4.0]
    assert constant.grad(grads) is None
    assert unused.grad(grads) is None


def test_broadcast_gradients_reduce_to_the_input_shape(ad_device: Device) -> None:
    x = Tensor.from_data([[1.0, 2.0, 3.0]], ad_device).require_grad()
    y = Tensor.from_data([[1.0], [2.0]], ad_device).require_grad()
    grads = (x * y).sum().backward()
    assert must(x.grad(grads)).dims() == [1, 3]
    assert must(x.grad(grads)).tolist() == [[3.0, 3.0, 3.0]]
    assert must(y.grad(grads)).tolist() == [[6.0], [6.0]]


def test_gradients_accumulate_over_every_use(ad_device: Device) -> None:
    x = Tensor.from_data([2.0], ad_device).require_grad()
    grads = (x * x + x * 3.0 + x).sum().backward()
    assert must(x.grad(grads)).tolist() == [8.0]


def test_detach_stops_the_gradient(ad_device: Device) -> None:
    x = Tensor.from_data([2.0], ad_device).require_grad()
    grads = (x.detach() * x).sum().backward()
    assert must(x.grad(grads)).tolist() == [2.0]


def test_backward_seeds_with_ones_for_non_scalars(ad_device: Device) -> None:
    x = Tensor.from_data([[1.0, 2.0]], ad_device).require_grad()
    grads = (x * 2.0).backward()
    assert must(x.grad(grads)).tolist() == [[2.0, 2.0]]


def test_grad_remove_and_replace(ad_device: Device) -> None:
    x = Tensor.from_data([1.0], ad_device).require_grad()
    grads = (x * 5.0).sum().backward()
    removed = x.grad_remove(grads)
    assert removed is not None
    assert removed.tolist() == [5.0]
    assert x.grad(grads) is None
    x.grad_replace(grads, Tensor.from_data([7.0], removed.device))
    assert must(x.grad(grads)).tolist() == [7.0]


def test_gradients_cross_threads(ad_device: Device) -> None:
    x = Tensor.from_data([1.0, -1.0], ad_device).require_grad()
    grads = (x * x).sum().backward()
    seen: list[list[float]] = []
    thread = threading.Thread(target=lambda: seen.append(must(x.grad(grads)).tolist()))
    thread.start()
    thread.join()
    assert seen == [[2.0, -2.0]]


def test_inner_and_from_inner(ad_device: Device) -> None:
    x = Tensor.from_data([1.0, 2.0], ad_device).require_grad()
    inner = (x * 2.0).inner()
    assert inner.device.backend == cast(Any, ad_device.backend).inner
    assert (inner + 5.0).tolist() == [7.0, 9.0]
    lifted = Tensor.from_inner(inner, ad_device)
    assert lifted.device == ad_device
    assert not lifted.is_require_grad()


def test_is_require_grad(ad_device: Device) -> None:
    x = Tensor.from_data([1.0], ad_device)
    assert not x.is_require_grad()
    assert x.require_grad().is_require_grad()
    assert not x.require_grad().set_require_grad(False).is_require_grad()


def test_int_and_bool_tensors_pass_through(ad_device: Device) -> None:
    x = Tensor.from_data([[1.0, 5.0], [3.0, 2.0]], ad_device).require_grad()
    index = x.argmax(1)
    assert index.tolist() == [[1], [0]]
    picked = x.gather(1, index)
    grads = picked.sum().backward()
    assert must(x.grad(grads)).tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_backward_twice_on_a_consumed_graph_gives_no_second_gradient(ad_device: Device) -> None:
    x = Tensor.from_data([3.0], ad_device).require_grad()
    y = (x * x).sum()
    first = y.backward()
    assert must(x.grad(first)).tolist() == [6.0]
    with pytest.raises(RuntimeError, match="released"):
        y.backward()


def test_backward_needs_a_float_tensor(ad_device: Device) -> None:
    with pytest.raises(TypeError, match="backward: expected a Float tensor"):
        Tensor.arange(3, device=ad_device).backward()


def test_f64_gradients(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([0.1, 0.2]), ad_device, DType.F64).require_grad()
    grads = x.exp().sum().backward()
    np.testing.assert_allclose(must(x.grad(grads)).to_numpy(), np.exp([0.1, 0.2]), rtol=1e-15)
