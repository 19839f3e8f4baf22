"""The autodiff section runs on autodiff backends only."""

from __future__ import annotations

import pytest

from burn_backend import Device


@pytest.fixture
def ad_device(device: Device) -> Device:
    """The device under test, if its backend computes gradients (the test skips otherwise)."""
    if not device.backend.ad_enabled():
        pytest.skip(f"{device.backend.stack_name} computes no gradients")
    return device
