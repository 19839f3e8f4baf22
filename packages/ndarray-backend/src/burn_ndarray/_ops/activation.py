"""NdArray's activation ops."""

from __future__ import annotations


class ActivationOps:
    """Overrides of ``burn_backend.ActivationOps`` defaults where NumPy does better."""
