"""Autodiff's activation ops: the interface's defaults compose differentiable float ops; the overrides
here run the inner backend's kernels and their backward kernels."""

from __future__ import annotations

from ._common import Recorder


class ActivationOps(Recorder):
    """Activation ops with gradients."""
