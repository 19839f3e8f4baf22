"""Plans whose outputs are ``Deferred`` (``burn_backend.kit``): Fusion keeps them in their nodes, hands them
back to the backend's plans as they are, and resolves them wherever anything else reads the value: a
user's read, an op that is not deferred, a block run op by op, a single-op group. burn-cuda's fused
kernels return such outputs on the GPU; here an NdArray subclass does, so CI runs every path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from burn_backend import Device, Tensor
from burn_backend.kit import (
    BackendDecorator,
    Deferred,
    ElementwiseBlock,
    ElementwisePlan,
    FusedBlock,
    resolved,
)
from burn_fusion import Fusion
from burn_ndarray import NdArray


class Held(Deferred):
    """A plan output standing for an array; counts the reads that made it a primitive."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def resolve(self) -> Any:
        Deferring.resolves += 1
        return self.value


class Deferring(NdArray):
    """NdArray whose compiled plans return ``Held`` outputs and take them back without resolving."""

    resolves = 0
    held_inputs = 0

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        return _deferring(super().compile_elementwise(block, device))

    def compile_fused(self, block: FusedBlock, device: Device) -> ElementwisePlan | None:
        return _deferring(super().compile_fused(block, device))


def _deferring(plan: ElementwisePlan | None) -> ElementwisePlan | None:
    if plan is None:
        return None

    def deferring(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
        arrays = []
        for value in inputs:
            if isinstance(value, Held):
                Deferring.held_inputs += 1
                value = value.value  # the plan's own value: read as it is, not resolved
            arrays.append(value)
        return [Held(output) for output in plan(arrays, scalars)]

    return deferring


@pytest.fixture
def device() -> Device:
    Deferring.resolves = Deferring.held_inputs = 0
    return Fusion(Deferring(), compile_after=1).device()


def _value(tensor: Tensor) -> Any:
    return tensor.primitive.node.value


def test_outputs_nobody_reads_are_never_resolved(device: Device) -> None:
    x = Tensor.from_data([0.5, -1.0, 2.0], device)
    kept = [(x * 2.0 + 1.0).exp() for _ in range(3)]
    device.backend.flush(device)
    assert all(isinstance(_value(t), Held) for t in kept)
    del kept
    assert Deferring.resolves == 0


def test_a_read_resolves_once_and_keeps_the_primitive(device: Device) -> None:
    data = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    y = (Tensor.from_numpy(data, device) * 2.0 + 1.0).exp()
    y.to_data()  # runs the stream, then resolves
    assert isinstance(_value(y), np.ndarray)
    np.testing.assert_allclose(y.to_numpy(), np.exp(data * 2 + 1), rtol=1e-6)
    assert Deferring.resolves == 1


def test_the_next_block_gets_the_deferred_value_as_it_is(device: Device) -> None:
    data = np.array([[0.5, -1.0], [2.0, 3.0]], dtype=np.float32)
    y = (Tensor.from_numpy(data, device) * 2.0).exp()
    device.backend.flush(device)
    assert isinstance(_value(y), Held)
    z = (y - 1.0) * 3.0
    device.backend.flush(device)
    assert Deferring.held_inputs == 1
    assert Deferring.resolves == 0
    np.testing.assert_allclose(z.to_numpy(), (np.exp(data * 2) - 1) * 3, rtol=1e-6)


def test_ops_that_are_not_deferred_get_the_primitive(device: Device) -> None:
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = Tensor.from_numpy(data, device) * 2.0 + 1.0
    device.backend.flush(device)
    assert isinstance(_value(y), Held)
    np.testing.assert_array_equal(y.swap_dims(0, 1).to_numpy(), (data * 2 + 1).T)
    np.testing.assert_array_equal(y.sum().to_numpy(), (data * 2 + 1).sum())


def test_a_single_op_run_gets_the_primitive(device: Device) -> None:
    data = np.array([1.0, 4.0], dtype=np.float32)
    y = Tensor.from_numpy(data, device) * 3.0 - 1.0
    device.backend.flush(device)
    assert isinstance(_value(y), Held)
    z = y.sqrt()  # alone in its stream: run op by op, on the primitive
    np.testing.assert_allclose(z.to_numpy(), np.sqrt(data * 3 - 1), rtol=1e-6)
    assert Deferring.resolves == 1


def test_single_op_groups_of_a_plan_get_the_primitive(device: Device) -> None:
    a = np.array([1.0, 4.0], dtype=np.float32)
    b = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    y = Tensor.from_numpy(a, device) * 3.0 - 1.0
    w = Tensor.from_numpy(b, device) * 2.0
    device.backend.flush(device)
    # one stream, two ops of different shapes: a plan of two groups of one op each
    first, second = y.sqrt(), w.exp()
    np.testing.assert_allclose(first.to_numpy(), np.sqrt(a * 3 - 1), rtol=1e-6)
    np.testing.assert_allclose(second.to_numpy(), np.exp(b * 2), rtol=1e-6)


def test_a_reduce_block_takes_deferred_inputs(device: Device) -> None:
    data = np.random.default_rng(0).uniform(-1, 1, (4, 5)).astype(np.float32)
    y = Tensor.from_numpy(data, device) * 2.0 - 0.5
    device.backend.flush(device)
    assert isinstance(_value(y), Held)
    z = y.exp().sum_dim(1) + 1.0
    np.testing.assert_allclose(z.to_numpy(), np.exp(data * 2 - 0.5).sum(1, keepdims=True) + 1, rtol=1e-5)
    assert Deferring.held_inputs == 1  # y went in as it is
    assert Deferring.resolves == 1  # z, read


def test_resolved_replaces_only_deferred_values() -> None:
    array = np.zeros(2)
    assert resolved([Held(array), array, 3]) == [array, array, 3]


class Boxed:
    """A primitive of ``Boxing``: an inner primitive in a box."""

    def __init__(self, inner: Any) -> None:
        assert not isinstance(inner, Deferred), "a decorator boxed a Deferred"
        self.inner = inner
        self.shape = inner.shape
        self.dtype = inner.dtype


class Boxing(BackendDecorator):
    """A decorator between Fusion and the compiler whose primitives differ from the inner backend's."""

    name: ClassVar[str] = "boxing"

    def wrap(self, primitive: Any) -> Any:
        return Boxed(primitive)

    def unwrap(self, value: Any) -> Any:
        return value.inner if isinstance(value, Boxed) else value


def test_a_decorator_under_fusion_hands_up_primitives() -> None:
    Deferring.resolves = Deferring.held_inputs = 0
    device = Fusion(Boxing(Deferring()), compile_after=1).device()
    data = np.array([[0.5, -1.0], [2.0, 3.0]], dtype=np.float32)
    y = (Tensor.from_numpy(data, device) * 2.0).exp()
    device.backend.flush(device)
    assert isinstance(_value(y), Boxed)
    z = (y - 1.0) * 3.0
    np.testing.assert_allclose(z.swap_dims(0, 1).to_numpy(), ((np.exp(data * 2) - 1) * 3).T, rtol=1e-6)
