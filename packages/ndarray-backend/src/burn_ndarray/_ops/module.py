"""NdArray's module ops (convolution, pooling, interpolation, attention) on NumPy."""

from __future__ import annotations


class ModuleOps:
    """Overrides of ``burn_backend.ModuleOps`` defaults where NumPy does better."""
