"""Gradients through ``all_reduce``: the gradient of a sum (mean) all-reduce is the sum (mean) of the
outputs' gradients, on each input's device."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, Tensor, distributed
from burn_backend.distributed import ReduceOperation


@pytest.mark.parametrize("op", [ReduceOperation.SUM, ReduceOperation.MEAN])
def test_gradients_through_an_all_reduce(ad_device: Device, op: ReduceOperation) -> None:
    backend = ad_device.backend
    others = [backend.device(i) for i in range(backend.device_count()) if i != ad_device.index]
    devices = [ad_device, *others[:1]]
    rng = np.random.default_rng(3)
    values = [rng.normal(size=(2, 3)).astype(np.float32) for _ in devices]
    weights = [rng.normal(size=(2, 3)).astype(np.float32) for _ in devices]
    inputs = [Tensor.from_data(v, d).require_grad() for v, d in zip(values, devices)]
    outputs = distributed.all_reduce(inputs, op)
    # loss = sum_i <w_i, out_i> + <out_0, out_0>: every output's gradient reaches every input
    loss = (outputs[0] * outputs[0]).sum()
    for out, w, d in zip(outputs, weights, devices):
        loss = loss + (out * Tensor.from_data(w, d)).sum().to_device(ad_device)
    grads = loss.backward()
    scale = 1.0 / len(devices) if op is ReduceOperation.MEAN else 1.0
    combined = np.sum(np.stack(values).astype(np.float64), axis=0) * scale
    want = (np.sum(np.stack(weights).astype(np.float64), axis=0) + 2 * combined) * scale
    for tensor in inputs:
        gradient = tensor.grad(grads)
        assert gradient is not None
        np.testing.assert_allclose(gradient.to_data().to_numpy(), want, rtol=1e-5, atol=1e-5)


def test_gradients_through_an_all_reduce_across_a_process_group_of_one(ad_device: Device) -> None:
    group = distributed.ProcessGroup(0, 1)
    x = Tensor.from_data([1.0, -2.0, 3.0], ad_device).require_grad()
    y = group.all_reduce(x * 2.0, ReduceOperation.MEAN)
    grads = (y * y).sum().backward()
    grad = x.grad(grads)
    assert grad is not None
    np.testing.assert_allclose(grad.to_data().to_numpy(), [8.0, -16.0, 24.0], rtol=1e-6)
