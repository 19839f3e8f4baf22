"""Runs last: every interface method of the backend was called by the suite (through the spy)."""

from __future__ import annotations

import pytest

from burn_backend import Device
from burn_backend.testing import _spy, interface_methods


def test_every_interface_method_was_called(device: Device, suite_complete: bool) -> None:
    if not suite_complete:
        pytest.skip("the coverage check needs the whole conformance suite, unfiltered")
    counts = _spy.calls(device.backend)
    missing = sorted(name for name in interface_methods() if counts[name] == 0)
    assert not missing, f"{len(missing)} interface methods were never called by the suite: {missing}"


def test_the_spy_counts_calls(device: Device) -> None:
    counts = _spy.calls(device.backend)
    before = counts["float_add"]
    device.backend.float_add(*[device.backend.float_zeros((2,), device, device.backend.float_dtype)] * 2)
    assert counts["float_add"] == before + 1
