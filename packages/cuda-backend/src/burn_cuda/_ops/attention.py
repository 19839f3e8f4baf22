"""Cuda's scaled dot-product attention, forward and backward."""

from __future__ import annotations


class AttentionOps:
    """Cuda's overrides of ``ModuleOps.attention`` and ``attention_backward``."""
