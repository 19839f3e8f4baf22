"""``replay`` where the inner backend cannot capture (NdArray): every call runs the function; the call
signature and the rebuilding of results (what a replay relies on; replays themselves are tested on the
CPU in ``test_replay_recorded.py`` and with CUDA graphs in burn-cuda's tests)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

from burn_backend import DType, Tensor
from burn_fusion import Fusion, can_replay, replay
from burn_fusion._replay import _leaves, _plan, _rebuild, _run_plan, _Signature, _stack, _walk
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
    rebuilt = _rebuild(structure, {id(a): c, id(b): a})
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


def test_a_plan_rebuilds_only_what_holds_an_output_at_each_run() -> None:
    """``fresh`` runs one plan per call: new copies along the paths to the outputs (a shared object
    copied once), everything else the template's own objects, and the template unchanged."""
    a, b, c, d = tensor([1.0]), tensor([2.0]), tensor([3.0]), tensor([4.0])
    shared = Holder(a, 2.0)
    untouched = [c, "x", Holder(c, 1.0)]
    template = {"pair": Pair(shared, (b, 7)), "again": shared, "untouched": untouched, "n": 3}
    plan = _plan(template, {id(a), id(b)}, {})
    first = _run_plan(plan, {id(a): d, id(b): c}, {})
    second = _run_plan(plan, {id(a): c, id(b): d}, {})
    # a shared object is walked once: the pair's two tensors, then the untouched list's two c
    assert [id(t) for t in _leaves(first)] == [id(d), id(c), id(c), id(c)]
    assert [id(t) for t in _leaves(second)] == [id(c), id(d), id(c), id(c)]
    assert first["pair"].first is first["again"]  # shared before, shared after
    assert first["pair"].first is not second["pair"].first is not shared
    assert first["pair"].second == (c, 7)
    assert first["pair"].first.scale == 2.0
    assert shared.weight is a  # the template is unchanged
    assert template["pair"].second[0] is b
    assert first["untouched"] is untouched
    assert isinstance(first["pair"], Pair)
    assert first["n"] == 3
    assert _plan({"n": 1, "t": c}, {id(a)}, {}) is None  # holds no output: kept as it is


def test_signatures_as_keys_hash_once_and_compare_by_value() -> None:
    a, b = tensor([[1.0, 2.0]]), tensor([[3.0, 4.0]])
    first, second = _Signature(signature((a, 1.0))), _Signature(signature((b, 1.0)))
    assert first == second
    assert hash(first) == hash(second)
    assert {first: 1}[second] == 1
    assert first != _Signature(signature((b, 2.0)))


class Recording(NdArray):
    """NdArray with a step-capture hook (never called here): what ``can_replay`` looks for."""

    def step_capture(self, device: Any) -> None:
        return None


def test_can_replay_needs_a_fusion_layer_over_a_backend_that_records() -> None:
    Autodiff = pytest.importorskip("burn_autodiff").Autodiff

    assert not can_replay(NdArray().device())
    assert not can_replay(Autodiff(Fusion(NdArray())).device())
    assert can_replay(Fusion(Recording()).device())
    assert can_replay(Autodiff(Fusion(Recording())).device())
    assert not can_replay(Autodiff(Recording()).device())  # no Fusion layer to record through


def test_equal_backends_keep_their_own_fusion_layers() -> None:
    """Devices of equal backends are equal, but each backend object has its own streams."""
    first, second = Fusion(NdArray()), Fusion(NdArray())
    assert first.device() == second.device()
    assert _stack(first.device())[1] is first
    assert _stack(second.device())[1] is second
