"""A real server process on loopback (a free port), shared by the package's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from burn_remote import Remote
from burn_remote.testing import LoopbackServer


@pytest.fixture(scope="session")
def server() -> Iterator[LoopbackServer]:
    """An NdArray server process for the session."""
    process = LoopbackServer("ndarray")
    yield process
    process.stop()


@pytest.fixture
def remote(server: LoopbackServer) -> Iterator[Remote]:
    """A fresh client session (every result's shape checked against the server's)."""
    backend = Remote(server.url, timeout=20.0, check_shapes=True)
    yield backend
    backend.close()
