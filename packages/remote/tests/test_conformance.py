"""The conformance suite through Remote against an NdArray server process: its core and float sections
here (the whole kit takes about two minutes on two cores; run it with
``python -m pytest --pyargs burn_backend.testing --backend "burn_remote.testing:loopback_remote()"``)."""

from __future__ import annotations

import re
import subprocess
import sys


def test_the_core_and_float_sections_pass_through_remote() -> None:
    sections = ["burn_backend.testing.core", "burn_backend.testing.float"]
    backend = "burn_remote.testing:loopback_remote()"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            *sections,
            "--backend",
            backend,
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-2000:]
    assert result.returncode == 0, result.stdout[-4000:]
    assert " passed" in summary
    assert not re.search(r"\d+ (failed|error)", summary), summary
