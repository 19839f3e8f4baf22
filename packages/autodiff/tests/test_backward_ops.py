"""Autodiff delegates the gradients of attention and the normalizations to the inner backend's backward
ops (one call per op), so an inner backend with fused kernels runs them in training; the gradients it
returns are the ones that reach the inputs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import AttentionOptions, DType, NormBackward, Tensor, module
from burn_ndarray import NdArray

BACKWARD_OPS = (
    "attention_backward",
    "layer_norm_backward",
    "rms_norm_backward",
    "group_norm_backward",
    "batch_norm_backward",
)


class Counting(NdArray):
    """NdArray counting the backward ops it runs; its layer-norm backward returns marked gradients."""

    name = "counting"

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __getattribute__(self, name: str) -> Any:
        if name in BACKWARD_OPS:
            object.__getattribute__(self, "calls")[name] += 1
        return object.__getattribute__(self, name)

    def layer_norm_backward(
        self, x: Any, gamma: Any, beta: Any, epsilon: float, output_grad: Any
    ) -> NormBackward:
        grads = super().layer_norm_backward(x, gamma, beta, epsilon, output_grad)
        return NormBackward(grads.x_grad * 0.0 + 7.0, grads.gamma_grad, grads.beta_grad)


def tensor(device: Any, rng: np.random.Generator, *shape: int) -> Tensor:
    return Tensor.from_data(rng.standard_normal(shape), device, DType.F64).require_grad()


@pytest.mark.parametrize("op", BACKWARD_OPS)
def test_each_gradient_is_one_call_of_the_backward_op(op: str) -> None:
    inner = Counting()
    device = Autodiff(inner).device()
    rng = np.random.default_rng(0)
    x = tensor(device, rng, 2, 4, 3)
    gamma, beta = tensor(device, rng, 4), tensor(device, rng, 4)
    outputs = {
        "attention_backward": lambda: module.attention(
            tensor(device, rng, 1, 2, 3, 4),
            tensor(device, rng, 1, 1, 5, 4),
            tensor(device, rng, 1, 1, 5, 2),
            options=AttentionOptions(is_causal=True),
        ),
        "layer_norm_backward": lambda: module.layer_norm(tensor(device, rng, 2, 4), gamma, beta),
        "rms_norm_backward": lambda: module.rms_norm(tensor(device, rng, 2, 4), gamma),
        "group_norm_backward": lambda: module.group_norm(x, 2, gamma, beta),
        "batch_norm_backward": lambda: module.batch_norm_training(x, gamma, beta)[0],
    }
    output = outputs[op]()
    before = inner.calls[op]
    grads = output.sum().backward()
    assert inner.calls[op] == before + 1
    assert sum(inner.calls.values()) == before + 1
    assert gamma.grad(grads) is not None or op == "attention_backward"


def test_the_backward_op_gradient_is_the_one_returned() -> None:
    device = Autodiff(Counting()).device()
    x = tensor(device, np.random.default_rng(1), 3, 5)
    grads = module.layer_norm(x).sum().backward()
    np.testing.assert_array_equal(x.grad(grads).to_numpy(), np.full((3, 5), 7.0))
