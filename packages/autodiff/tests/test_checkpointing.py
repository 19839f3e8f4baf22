"""BalancedCheckpointing: the same gradients as the default, with memory-bound outputs recomputed."""

from __future__ import annotations

import numpy as np
import pytest

from burn_autodiff import Autodiff, AutodiffTensor, BalancedCheckpointing, NoCheckpointing
from burn_backend import DType, Tensor
from burn_backend.activation import gelu, softmax
from burn_ndarray import NdArray


def model(device: object, rng: np.random.Generator) -> tuple[Tensor, list[Tensor]]:
    params = [
        Tensor.from_data(rng.standard_normal((6, 8)), device, DType.F64).require_grad(),
        Tensor.from_data(rng.standard_normal((8, 4)), device, DType.F64).require_grad(),
        Tensor.from_data(rng.standard_normal((1, 8)), device, DType.F64).require_grad(),
    ]
    x = Tensor.from_data(rng.standard_normal((5, 6)), device, DType.F64)
    hidden = gelu(x.matmul(params[0]) + params[2]).exp().sqrt() * 0.5
    out = softmax(hidden.tanh().matmul(params[1]), 1).log().sum()
    return out, params


def kept_values(tensor: Tensor) -> int:
    """How many tensors the graph's op nodes hold for backward (what checkpointing trades for
    recomputation): kept inputs and outputs."""
    seen, stack, count = set(), [tensor.primitive.node], 0
    while stack:
        node = stack.pop()
        if node is None or node.id in seen:
            continue
        seen.add(node.id)
        if node.spec is not None:
            count += sum(value is not None for value in node.inputs) + (node.output is not None)
        stack.extend(node.parents)
    return count


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_balanced_gives_the_same_gradients(seed: int) -> None:
    results = []
    for strategy in (NoCheckpointing(), BalancedCheckpointing()):
        out, params = model(Autodiff(NdArray(), strategy).device(), np.random.default_rng(seed))
        grads = out.backward()
        results.append([p.grad(grads).to_numpy() for p in params])
    for default, balanced in zip(*results):
        np.testing.assert_array_equal(default, balanced)


def test_balanced_keeps_fewer_values() -> None:
    default_out, _ = model(Autodiff(NdArray()).device(), np.random.default_rng(0))
    balanced_out, _ = model(Autodiff(NdArray(), BalancedCheckpointing()).device(), np.random.default_rng(0))
    assert isinstance(balanced_out.primitive, AutodiffTensor)
    assert kept_values(balanced_out) < kept_values(default_out)


def test_strategies_are_part_of_the_backend_value() -> None:
    assert Autodiff(NdArray()) == Autodiff(NdArray(), NoCheckpointing())
    assert Autodiff(NdArray()) != Autodiff(NdArray(), BalancedCheckpointing())
