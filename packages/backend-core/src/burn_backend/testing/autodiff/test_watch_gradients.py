"""``watch_gradients``: each watched leaf reported once per backward pass, as soon as no op left in the
pass adds to its gradient, with the value the pass returns (checked against PyTorch)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Tensor, activation, watch_gradients
from burn_backend.testing import make


def test_every_watched_gradient_is_reported_once_with_its_final_value(ad_device: Device) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    values = {
        "w1": rng.normal(size=(4, 8)), "b1": rng.normal(size=(8,)),
        "w2": rng.normal(size=(8, 3)), "b2": rng.normal(size=(3,)),
    }  # fmt: skip
    x = rng.normal(size=(5, 4))
    params = {name: make(value, ad_device).require_grad() for name, value in values.items()}
    names = list(params)
    seen: list[tuple[str, Tensor]] = []
    with watch_gradients(list(params.values()), lambda i, g: seen.append((names[i], g))):
        hidden = activation.relu(make(x, ad_device).matmul(params["w1"]) + params["b1"])
        out = hidden.matmul(params["w2"]) + params["b2"]
        grads = (out * out + out).sum().backward()  # out used twice: its gradient adds both uses
    # the second layer's gradients are complete before the first layer's
    assert [name for name, _ in seen] == ["b2", "w2", "b1", "w1"]
    theirs = {name: torch.tensor(value, requires_grad=True) for name, value in values.items()}
    t_out = torch.relu(torch.tensor(x) @ theirs["w1"] + theirs["b1"]) @ theirs["w2"] + theirs["b2"]
    (t_out * t_out + t_out).sum().backward()
    for name, reported in seen:
        returned = params[name].grad(grads)
        assert returned is not None
        np.testing.assert_array_equal(reported.to_numpy(), returned.to_numpy(), err_msg=name)
        expected = theirs[name].grad.numpy()
        np.testing.assert_allclose(reported.to_numpy(), expected, rtol=1e-4, atol=1e-4, err_msg=name)


def test_a_leaf_used_early_and_late_is_reported_after_its_last_use(ad_device: Device) -> None:
    w = Tensor.from_data([2.0], ad_device).require_grad()
    order: list[str] = []
    b = Tensor.from_data([1.0], ad_device).require_grad()
    with watch_gradients([w, b], lambda i, g: order.append(f"{'wb'[i]}={g.tolist()[0]:g}")):
        first = w * 3.0  # w's first use: the last op backward reaches
        ((first + b) * w).sum().backward()  # d/dw = (3w + b) + 3w = 13, d/db = w = 2
    assert order == ["b=2", "w=13"]


def test_unwatched_unreached_and_outside_the_block_are_not_reported(ad_device: Device) -> None:
    x = Tensor.from_data([1.0, 2.0], ad_device).require_grad()
    unused = Tensor.from_data([5.0], ad_device).require_grad()
    constant = Tensor.from_data([3.0, 4.0], ad_device)
    seen: list[int] = []
    with watch_gradients([unused, constant, x], lambda i, g: seen.append(i)):
        (x * constant).sum().backward()
    assert seen == [2]
    (x * constant).sum().backward()  # the block has ended
    assert seen == [2]


def test_blocks_nest_and_stay_in_their_thread(ad_device: Device) -> None:
    x = Tensor.from_data([1.0, 2.0], ad_device).require_grad()
    outer: list[list[float]] = []
    inner: list[list[float]] = []

    def elsewhere() -> None:  # another thread's backward, even over x, is not this block's
        (x * 5.0).sum().backward()

    with watch_gradients([x], lambda i, g: outer.append(g.tolist())):
        with watch_gradients([x], lambda i, g: inner.append(g.tolist())):
            thread = threading.Thread(target=elsewhere)
            thread.start()
            thread.join()
            (x * x).sum().backward()
        (x * 2.0).sum().backward()
    assert inner == [[2.0, 4.0]]
    assert outer == [[2.0, 4.0], [2.0, 2.0]]


def test_the_root_itself_can_be_watched(ad_device: Device) -> None:
    x = Tensor.from_data([3.0], ad_device).require_grad()
    seen: list[Any] = []
    with watch_gradients([x], lambda i, g: seen.append(g.tolist())):
        x.backward()
    assert seen == [[1.0]]


def test_tensors_without_autodiff_are_refused(device: Device) -> None:
    if device.backend.ad_enabled():
        pytest.skip("the refusal is for backends without autodiff")
    refused = r"watch_gradients: tensors\[0\] must be on an autodiff backend"
    with pytest.raises(TypeError, match=refused), watch_gradients([Tensor.from_data([1.0], device)], print):
        pass
