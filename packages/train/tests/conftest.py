"""burn_train's tests import their shared toy run (``toy_training``) from this folder, and burn-fusion's
CPU recording backend (``recording``) from that package's tests."""

from __future__ import annotations

import sys
from pathlib import Path

for folder in (Path(__file__).parent, Path(__file__).parents[2] / "fusion" / "tests"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
