"""Fixtures of backend-core's own tests: ``run_kit`` runs the conformance suite in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


@dataclass(frozen=True)
class KitRun:
    """What one run of the conformance suite printed, and its exit status."""

    returncode: int
    output: str

    def failures(self) -> dict[str, str]:
        """The tests that failed or errored, by name (``test_x[params]``), with the message of each."""
        found = re.findall(r"^(?:FAILED|ERROR) (.+?)(?: - (.*))?$", self.output, flags=re.MULTILINE)
        return {test.split("::", 1)[-1]: message for test, message in found}

    def count(self, outcome: str) -> int:
        """How many tests had ``outcome`` (``"passed"``, ``"failed"``, ``"xfailed"``...) by the summary."""
        found = re.search(rf"(\d+) {outcome}\b", self.output.strip().splitlines()[-1])
        return int(found.group(1)) if found else 0


@pytest.fixture
def run_kit(tmp_path: Path) -> Callable[..., KitRun]:
    """Run ``python -m pytest ARGS`` in a new process, in an empty folder, with this folder importable (so
    ``--backend test_module:Backend()`` names a backend defined in a test file) and ``BURN_DEVICE=ndarray``.
    """

    def run(*args: str) -> KitRun:
        path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
        # a wide terminal: the short summary keeps each failure's whole message
        environment = {**os.environ, "PYTHONPATH": path, "BURN_DEVICE": "ndarray", "COLUMNS": "1000"}
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", *args]
        done = subprocess.run(
            command, cwd=tmp_path, env=environment, capture_output=True, text=True, check=False
        )
        return KitRun(done.returncode, done.stdout + done.stderr)

    return run
