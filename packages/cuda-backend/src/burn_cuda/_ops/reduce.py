"""Cuda's reductions along a dim and over a whole tensor, at memory speed."""

from __future__ import annotations


class ReduceOps:
    """Cuda's overrides of the float (and int) reductions."""
