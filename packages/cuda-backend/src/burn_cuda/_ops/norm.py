"""Cuda's normalization ops (layer, RMS, group and batch norm, forward and backward) as CUDA C kernels."""

from __future__ import annotations


class NormOps:
    """Cuda's overrides of the normalization ops of ``ModuleOps``."""
