"""``replay`` where the inner backend cannot capture (NdArray): every call runs the function; the call
signature and the rebuilding of results (what a GPU replay relies on, tested with CUDA graphs in
burn-cuda's tests)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

from burn_backend import DType, Tensor
from burn_fusion import Fusion, replay
from burn_fusion._replay import _leaves, _rebuild, _walk
from burn_ndarray import NdArray


def tensor(values: Any, device: Any = None) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.float32), device or Fusion(NdArray()).device())


def signature(value: Any) -> Any:
    return _walk(value, [], {})


class Pair(NamedTuple):
    first: Any
    second: Any


class Holder:
    def __init__(self, weight: Tensor, scale: float) -> None:
        self.weight = weight
        self.scale = scale
        self.callback = lambda: None  # compared by identity: counts by its type only


def test_without_a_capturing_backend_every_call_runs_the_function() -> None:
    calls = []

    @replay
    def step(x: Tensor, scale: float) -> Tensor:
        calls.append(scale)
        return x * scale

    for i in range(5):
        np.testing.assert_array_equal(step(tensor([1.0, 2.0]), float(i)).to_data().to_numpy(), [i, 2 * i])
    assert calls == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert step.stats["eager"] == 5
    assert step.stats["captured"] == 0


def test_the_signature_holds_shapes_dtypes_and_plain_values_not_identities() -> None:
    a, b = tensor([[1.0, 2.0]]), tensor([[3.0, 4.0]])
    assert signature((a, 1.0)) == signature((b, 1.0))
    assert signature((a, 1.0)) != signature((b, 2.0))
    assert signature(a) != signature(tensor([1.0, 2.0]))
    assert signature(a) != signature(Tensor.from_data(np.ones((1, 2)), a.device, DType.F64))
    assert signature(Holder(a, 0.5)) == signature(Holder(b, 0.5))  # new objects, new lambdas
    assert signature(Holder(a, 0.5)) != signature(Holder(b, 0.25))
    assert signature(float("nan")) == signature(float("nan"))
    leaves: list[Tensor] = []
    _walk({"pair": Pair(a, [b, a]), "holder": Holder(b, 1.0)}, leaves, {})
    assert [id(t) for t in leaves] == [id(a), id(b), id(a), id(b)]


def test_rebuild_replaces_tensors_in_containers_and_objects() -> None:
    a, b, c = tensor([1.0]), tensor([2.0]), tensor([3.0])
    holder = Holder(a, 2.0)
    structure = {"pair": Pair(a, (b, 7)), "holder": holder, "untouched": [c, "x"]}
    rebuilt = _rebuild(structure, {id(a): c, id(b): a}, {})
    assert rebuilt["pair"] == Pair(c, (a, 7))
    assert rebuilt["holder"] is not holder
    assert rebuilt["holder"].weight is c
    assert rebuilt["holder"].scale == 2.0
    assert holder.weight is a  # the original is unchanged
    assert rebuilt["untouched"] is structure["untouched"]  # nothing to replace: the same object
    assert [id(t) for t in _leaves(rebuilt)] == [id(c), id(a), id(c), id(c)]


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="warmup must be at least 2"):
        replay(lambda x: x, warmup=1)
    with pytest.raises(ValueError, match="max_signatures must be at least 1"):
        replay(max_signatures=0)(lambda x: x)
