"""The pytest plugin of the conformance suite (registered as ``burn``; disable with ``-p no:burn``).

It adds ``--backend SPEC`` (repeatable) and the ``device`` fixture, parametrized over the backends;
lets a backend class that still lacks abstract methods run (each missing method is a stub that raises
``NotImplementedError``); installs the spy on each backend under test; and turns the backend's declared
exclusions into strict expected failures, rejecting a pattern that matches no test of a complete run;
skips the tests of the implementation-defined groups a backend declares.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ._implementation_defined import EXCLUSION_PREFIX, IMPLEMENTATION_DEFINED

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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "implementation_defined(group): the test checks NumPy's values where the interface leaves them "
        "to the backend; a backend declaring 'implementation-defined:<group>' in its "
        "conformance_exclusions skips it",
    )


def resolve_backend(spec: str) -> Any:
    """The device a ``--backend`` value names: a device spec, or ``module:expression``."""
    from burn_backend import Backend, Device, parse_device

    from ._partial import completed_namespace

    module_name, colon, expression = spec.partition(":")
    if not colon or expression.isdigit():
        return parse_device(spec)
    # the user's own expression; the backend classes it names may still lack methods (see _partial)
    value = eval(expression, completed_namespace(vars(importlib.import_module(module_name))))
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
        from ._partial import allowing_partial_backends

        cached = []
        for spec in _specs(config):
            with allowing_partial_backends():
                device = default_device() if spec == "default" else resolve_backend(spec)
            _spy.install(device.backend)
            cached.append((spec, device))
        config._burn_devices = cached  # type: ignore[attr-defined]
    return cached


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # the backend options are for the suite: other test folders keep their own ``device`` fixtures.
    # First among the parametrizations, so that the backend's id leads each test's id (``seed_key``)
    if "device" in metafunc.fixturenames and Path(str(metafunc.definition.path)).is_relative_to(SUITE_DIR):
        devices = _devices(metafunc.config)
        metafunc.parametrize("device", [d for _, d in devices], ids=[s for s, _ in devices], scope="session")


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's name and parameters other than the backend: inputs are random,
    and the same on every run, wherever the suite is installed and however ``--backend`` is spelled."""
    digest = hashlib.sha256(seed_key(request.node).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def seed_key(item: pytest.Item) -> str:
    """What ``rng`` is seeded from: the test's path in the suite (else its node id) and its name, with
    the backend's id taken out of the parameters' ids (``test_exp[ndarray-f32]`` -> ``test_exp[f32]``)."""
    name = _suite_id(item) or item.nodeid
    callspec = getattr(item, "callspec", None)
    device = callspec.params.get("device") if callspec is not None else None
    if callspec is None or device is None:
        return name
    params: str = callspec.id
    specs = [spec for spec, known in getattr(item.config, "_burn_devices", ()) if known is device]
    for spec in sorted(specs, key=len, reverse=True):  # "ndarray:0" before "ndarray"
        if params == spec or params.startswith(f"{spec}-"):
            return f"{name.split('[')[0]}[{params[len(spec) + 1 :]}]"
    return name


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
    config._burn_complete = collected == every_file and _unfiltered(config)  # type: ignore[attr-defined]
    # the coverage check counts the calls of every test before it: run it last whatever the ordering
    # plugins did (under pytest-xdist each worker counts its own share, so it cannot pass there)
    coverage = [item for item in suite_items if Path(str(item.path)).name == "test_zz_coverage.py"]
    if coverage:
        items[:] = [item for item in items if item not in coverage] + coverage
    unmatched: dict[str, set[str]] = {}  # backend stack -> its patterns that no collected test matched
    for item in suite_items:
        callspec = getattr(item, "callspec", None)
        device = callspec.params.get("device") if callspec else None
        if device is None:
            continue
        exclusions = getattr(device.backend, "conformance_exclusions", {})
        groups = declared_groups(device.backend.name, exclusions)
        marked = [mark.args[0] for mark in item.iter_markers("implementation_defined")]
        declared = [group for group in marked if group in groups]
        if declared:
            reason = groups[declared[0]]
            item.add_marker(
                pytest.mark.skip(
                    reason=f"implementation-defined ({declared[0]}) on {device.backend.name}: {reason}"
                )
            )
        test_id = _suite_id(item)
        assert test_id is not None
        patterns = [pattern for pattern in exclusions if not pattern.startswith(EXCLUSION_PREFIX)]
        matching = [pattern for pattern in patterns if exclusion_matches(pattern, test_id)]
        unmatched.setdefault(device.backend.stack_name, set(patterns)).difference_update(matching)
        if matching:
            reason = exclusions[matching[0]]
            item.add_marker(
                pytest.mark.xfail(reason=f"excluded by {device.backend.name}: {reason}", strict=True)
            )
    # a pattern can only be judged when its file's tests were all collected: by an unfiltered run of
    # that file, or (for a pattern naming no collected file) of the whole suite
    if not _unfiltered(config):
        return
    files = {Path(str(item.path)).relative_to(SUITE_DIR).as_posix() for item in suite_items}
    stale = {
        stack: sorted(
            pattern
            for pattern in patterns
            if config._burn_complete  # type: ignore[attr-defined]
            or any(exclusion_matches(pattern.split("::")[0], file) for file in files)
        )
        for stack, patterns in unmatched.items()
    }
    listed = "; ".join(f"{stack}: {patterns}" for stack, patterns in sorted(stale.items()) if patterns)
    if listed:
        raise pytest.UsageError(
            f"conformance_exclusions: these patterns match no test of the conformance suite ({listed}). "
            "A pattern matches a test id such as 'float/test_math.py::test_erf[ndarray-f32]', or the id "
            "without its [parameters], character for character; '*' is the only wildcard."
        )


def declared_groups(backend: str, exclusions: Mapping[str, str]) -> dict[str, str]:
    """The implementation-defined groups that ``exclusions`` declare (``"implementation-defined:<group>"``
    keys), with their reasons; a group the suite does not know is an error (a typo would leave its tests
    running and failing)."""
    groups = {
        key.removeprefix(EXCLUSION_PREFIX): reason
        for key, reason in exclusions.items()
        if key.startswith(EXCLUSION_PREFIX)
    }
    unknown = sorted(group for group in groups if group not in IMPLEMENTATION_DEFINED)
    if unknown:
        known = ", ".join(f"{EXCLUSION_PREFIX}{group}" for group in IMPLEMENTATION_DEFINED)
        raise pytest.UsageError(
            f"conformance_exclusions of {backend}: no implementation-defined group {unknown}; the groups "
            f"are {known} (burn_backend.testing.IMPLEMENTATION_DEFINED)"
        )
    return groups


def _unfiltered(config: pytest.Config) -> bool:
    """Whether the run collects every test of the files it names: no test named by ``::``, no ``-k``,
    ``-m``, ``--deselect``, ``--lf`` or ``--sw``."""
    options = ("keyword", "markexpr", "deselect", "lf", "stepwise")
    return not any(config.getoption(name, None) for name in options) and not any(
        "::" in str(arg) for arg in config.args
    )


@functools.cache
def _exclusion_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(piece) for piece in pattern.split("*")), re.DOTALL)


def exclusion_matches(pattern: str, test_id: str) -> bool:
    """Whether the exclusion ``pattern`` names the test ``test_id``
    (``"float/test_math.py::test_erf[ndarray-f32]"``).

    Characters match literally and ``*`` matches any run of characters (``[`` and ``?`` are plain
    characters, unlike in ``fnmatch``); a pattern names a test if it matches its whole id, or its id
    without the ``[parameters]``, so ``"float/test_math.py::test_erf"`` names every parametrization.
    """
    regex = _exclusion_regex(pattern)
    return bool(regex.fullmatch(test_id.split("[")[0]) or regex.fullmatch(test_id))


@pytest.fixture
def suite_complete(request: pytest.FixtureRequest) -> bool:
    """Whether this run collected the whole conformance suite, unfiltered."""
    return bool(getattr(request.config, "_burn_complete", False))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    from ._partial import stubbed_methods

    for spec, device in getattr(config, "_burn_devices", ()):
        missing = sorted(stubbed_methods(device.backend))
        if missing:
            terminalreporter.write_sep("=", f"{spec}: not implemented ({len(missing)})", yellow=True)
            terminalreporter.write_line(
                f"{type(device.backend).__name__} lacks these abstract methods; the suite ran it with stubs "
                f"that raise NotImplementedError: {', '.join(missing)}"
            )
