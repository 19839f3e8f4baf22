"""The pytest plugin of the conformance suite (registered as ``burn``; disable with ``-p no:burn``).

It adds ``--backend SPEC`` (repeatable) and the ``device`` fixture, parametrized over the backends;
installs the spy on each backend under test; and turns the backend's declared exclusions into strict
expected failures.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SUITE_DIR = Path(__file__).parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("burn").addoption(
        "--backend",
        action="append",
        default=[],
        metavar="SPEC",
        help="backend for the Burn conformance suite: a device spec (ndarray, autodiff-ndarray:0) or "
        "module:expression (burn_ndarray:NdArray()); repeatable. "
        "Default: $BURN_DEVICE or the default device.",
    )


def resolve_backend(spec: str) -> Any:
    """The device a ``--backend`` value names: a device spec, or ``module:expression``."""
    from burn_backend import Backend, Device, parse_device

    module_name, colon, expression = spec.partition(":")
    if not colon or expression.isdigit():
        return parse_device(spec)
    value = eval(expression, vars(importlib.import_module(module_name)))  # the user's own expression
    if isinstance(value, Backend):
        return value.device(0)
    if isinstance(value, Device):
        return value
    raise pytest.UsageError(f"--backend {spec}: {expression} is neither a Backend nor a Device")


def _specs(config: pytest.Config) -> list[str]:
    specs = config.getoption("--backend") or []
    if not specs:
        env = os.environ.get("BURN_DEVICE")
        specs = [env] if env else ["default"]
    return specs


def _devices(config: pytest.Config) -> list[tuple[str, Any]]:
    cached = getattr(config, "_burn_devices", None)
    if cached is None:
        from burn_backend import default_device

        from . import _spy

        cached = []
        for spec in _specs(config):
            device = default_device() if spec == "default" else resolve_backend(spec)
            _spy.install(device.backend)
            cached.append((spec, device))
        config._burn_devices = cached  # type: ignore[attr-defined]
    return cached


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # the backend options are for the suite: other test folders keep their own ``device`` fixtures
    if "device" in metafunc.fixturenames and Path(str(metafunc.definition.path)).is_relative_to(SUITE_DIR):
        devices = _devices(metafunc.config)
        metafunc.parametrize("device", [d for _, d in devices], ids=[s for s, _ in devices], scope="session")


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's id: inputs are random, and the same on every run."""
    digest = hashlib.sha256(request.node.nodeid.encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _suite_id(item: pytest.Item) -> str | None:
    path = Path(str(item.path))
    try:
        relative = path.relative_to(SUITE_DIR)
    except ValueError:
        return None
    return f"{relative.as_posix()}::{item.name}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suite_items = [item for item in items if _suite_id(item) is not None]
    if not suite_items:
        return
    collected = {Path(str(item.path)) for item in suite_items}
    every_file = set(SUITE_DIR.rglob("test_*.py"))
    config._burn_complete = collected == every_file and not (  # type: ignore[attr-defined]
        config.getoption("keyword") or config.getoption("markexpr")
    )
    # the coverage check counts the calls of every test before it: run it last whatever the ordering
    # plugins did (under pytest-xdist each worker counts its own share, so it cannot pass there)
    coverage = [item for item in suite_items if Path(str(item.path)).name == "test_zz_coverage.py"]
    if coverage:
        items[:] = [item for item in items if item not in coverage] + coverage
    for item in suite_items:
        callspec = getattr(item, "callspec", None)
        device = callspec.params.get("device") if callspec else None
        if device is None:
            continue
        exclusions = getattr(device.backend, "conformance_exclusions", {})
        test_id = _suite_id(item)
        for pattern, reason in exclusions.items():
            if fnmatch.fnmatchcase(test_id.split("[")[0], pattern) or fnmatch.fnmatchcase(test_id, pattern):  # type: ignore[union-attr]
                item.add_marker(
                    pytest.mark.xfail(reason=f"excluded by {device.backend.name}: {reason}", strict=True)
                )
                break


@pytest.fixture
def suite_complete(request: pytest.FixtureRequest) -> bool:
    """Whether this run collected the whole conformance suite, unfiltered."""
    return bool(getattr(request.config, "_burn_complete", False))
