"""Autodiff's module ops: the interface's defaults compose differentiable float ops; the overrides here
run the inner backend's kernels forward and its backward kernels backward."""

from __future__ import annotations

from ._common import Recorder


class ModuleOps(Recorder):
    """Module ops with gradients."""
