"""``ActivationOps``: activation kernels and their backward kernels; every method has a default."""

from __future__ import annotations

from typing import Any

P = Any


class ActivationOps:
    """The activation op group (all defaults, built from float ops; backends may override)."""
