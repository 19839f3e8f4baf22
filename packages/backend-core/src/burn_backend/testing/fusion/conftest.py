"""Fixtures of the fusion section: the stack's ``Fusion`` layer, found by name (backend-core does not
import burn-fusion), fresh copies of it that compile early, and its inner backend as the reference."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from burn_backend import Backend, Device, Tensor
from burn_backend.kit import FUSED_BLOCK_KINDS, FUSED_HOOK, BackendDecorator
from burn_backend.testing._helpers import fusion_layer


class FusionUnderTest:
    """The ``Fusion`` layer of the stack under test.

    Args:
        layer: the Fusion backend (a ``BackendDecorator`` named ``fusion`` with an ``executor``).
        index: the device index under test.
        top: the whole stack's backend.
    """

    def __init__(self, layer: BackendDecorator, index: int, top: Backend) -> None:
        self.layer = layer
        self.index = index
        self.top = top

    def fresh(self, compile_after: int = 1) -> Device:
        """A device of a new Fusion over the same inner backend that compiles a signature once seen
        ``compile_after`` times (its counters start at zero)."""
        backend = type(self.layer)(self.layer.inner, compile_after=compile_after)  # type: ignore[call-arg]
        return backend.device(self.index)

    @property
    def eager(self) -> Device:
        """The inner backend's device: the reference that computes op by op."""
        return self.layer.inner.device(self.index)

    @property
    def compiled_kinds(self) -> frozenset[str]:
        """The kinds of block the inner backend compiles (``burn_backend.kit.FUSED_BLOCK_KINDS``): those
        its ``fused_block_kinds`` names, every kind where it has the ``compile_fused`` hook without naming
        them, none without the hook. What a backend does not compile runs op by op."""
        inner = self.layer.inner
        if not hasattr(inner, FUSED_HOOK):
            return frozenset()
        return frozenset(getattr(inner, "fused_block_kinds", FUSED_BLOCK_KINDS))

    @staticmethod
    def stats(device: Device) -> Mapping[str, int]:
        """The counters of the Fusion layer of ``device``'s stack."""
        layer = fusion_layer(device.backend)
        assert layer is not None, f"{device} has no fusion layer"
        return layer.executor.stats  # type: ignore[attr-defined,no-any-return]

    def assert_fused(
        self, device: Device, counter: str, at_least: int = 1, kind: str = "elementwise"
    ) -> None:
        """Fusion claimed blocks and handed them to the inner backend's compiler (on any backend); where
        the inner backend compiles blocks of ``kind``, ``counter`` reached ``at_least``."""
        stats = self.stats(device)
        assert stats["compiled"] >= 1, f"no block was claimed; counters {dict(stats)}"
        if kind in self.compiled_kinds:
            assert stats[counter] >= at_least, (
                f"{counter}: {stats[counter]} < {at_least}; counters {dict(stats)}"
            )


@pytest.fixture
def fusion(device: Device) -> FusionUnderTest:
    """The Fusion layer of the stack under test (the test skips on stacks without one)."""
    layer = fusion_layer(device.backend)
    if layer is None:
        pytest.skip(f"{device.backend.stack_name} has no fusion layer")
    return FusionUnderTest(layer, device.index, device.backend)


def normal(*shape: int, seed: int = 0) -> np.ndarray[Any, Any]:
    """Seeded standard-normal f32 values."""
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


Chain = Callable[[list[Tensor]], list[Tensor]]


def agree(
    fusion: FusionUnderTest, chain: Chain, arrays: list[np.ndarray[Any, Any]], repeat: int = 3
) -> Device:
    """Run ``chain`` ``repeat`` times on a fresh Fusion (compiling from the second run) and on the inner
    backend; assert every result agrees in shape, dtype and value. Returns the Fusion device."""
    device, eager = fusion.fresh(compile_after=2), fusion.eager
    for _ in range(repeat):
        got = [t.to_data().to_numpy() for t in chain([Tensor.from_data(a, device) for a in arrays])]
        want = [t.to_data().to_numpy() for t in chain([Tensor.from_data(a, eager) for a in arrays])]
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    return device
