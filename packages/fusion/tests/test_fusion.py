"""Fusion over NdArray subclasses: dead intermediates are never computed, and an error in a pending op is
raised by the read. Fusion's behaviour on any inner backend (fused equals unfused, liveness, the cache,
threads, the reduce/matmul/cast blocks) is the conformance suite's fusion section
(``burn_backend/testing/fusion/``), run on every fusion stack."""

from __future__ import annotations

from typing import Any

import pytest

from burn_backend import Device, Tensor
from burn_backend.kit import ElementwiseBlock, ElementwisePlan
from burn_fusion import Fusion
from burn_ndarray import NdArray


def test_dead_intermediates_are_not_computed() -> None:
    calls: list[str] = []

    class Counting(NdArray):
        def float_exp(self, tensor: Any) -> Any:
            calls.append("exp")
            return super().float_exp(tensor)

    device = Fusion(Counting(), compile_after=100).device()
    x = Tensor.from_data([1.0, 2.0], device)
    unused = x.exp()
    del unused
    y = x + 1
    assert y.tolist() == [2.0, 3.0]
    assert calls == []


def test_an_error_in_a_pending_op_is_raised_by_the_read() -> None:
    class Failing(NdArray):
        def float_exp(self, tensor: Any) -> Any:
            raise RuntimeError("boom")

        def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
            return None

    device = Fusion(Failing()).device()
    y = Tensor.from_data([1.0], device).exp() + 1
    with pytest.raises(RuntimeError, match="boom"):
        y.tolist()
