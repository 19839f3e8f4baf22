"""The router example (examples/split_devices): a model split across two backends trains end to end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "split_devices" / "main.py"
pytest.importorskip("burn_router")
pytest.importorskip("burn_nn")


def test_the_split_model_learns() -> None:
    command = [sys.executable, str(EXAMPLE), "--steps", "150"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    assert re.search(r"embedding on .*router\[.*\]:\d, classifier on .*router\[.*\]:0", done.stdout)
    losses = [float(value) for value in re.findall(r"loss (\d+\.\d+)", done.stdout)]
    assert len(losses) == 3  # steps 50, 100 and 150
    assert losses[-1] < 0.15, done.stdout  # chance level is log(5) = 1.61
