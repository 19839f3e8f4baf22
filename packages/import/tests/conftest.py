"""Fixtures shared by burn-import's tests."""

from __future__ import annotations

import pytest

from burn_backend import AutodiffBackend, Device, default_device


@pytest.fixture
def eval_device() -> Device:
    """The device the tests compare a module's inference on: the default device, or the inner one of an
    autodiff default (``BURN_DEVICE=autodiff-...``), where a module trains (dropout on, batch norm on
    the batch's statistics) and so differs from a PyTorch module in ``eval()`` mode."""
    device = default_device()
    backend = device.backend
    if isinstance(backend, AutodiffBackend):
        return backend.inner.device(device.index)
    return device
