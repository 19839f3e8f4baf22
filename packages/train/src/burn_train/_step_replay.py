"""The Learner's training step recorded and replayed (``LearnerBuilder.with_step_replay``): the model's
``train_step`` and the optimizer step as one function for ``burn_fusion.replay``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn_backend import Device
from burn_nn import Module
from burn_nn.optim import ModuleOptimizer

from ._output import TrainOutput

ReplayedStep = Callable[[Module, ModuleOptimizer, float, Any], tuple[Any, Module]]
"""``(model, optimizer, lr, batch) -> (item, updated model)``."""


def train_and_update(model: Module, optimizer: ModuleOptimizer, lr: float, batch: Any) -> tuple[Any, Module]:
    """One training step: ``model.train_step(batch)``, then ``optimizer`` applies its gradients; returns
    the step's item (for the metrics) and the updated model."""
    output = model.train_step(batch)  # type: ignore[attr-defined]
    if not isinstance(output, TrainOutput):
        raise TypeError(f"Learner: train_step must return a TrainOutput, got {type(output).__name__}")
    return output.item, optimizer.step(lr, model, output.grads)


def replayed_step(device: Device) -> ReplayedStep | None:
    """``train_and_update`` through ``burn_fusion.replay`` where ``device``'s stack can record it (a
    Fusion layer over ``Cuda``); ``None`` elsewhere, where the Learner runs its step as usual.

    Raises:
        ImportError: burn-fusion is not installed.
    """
    try:
        from burn_fusion import can_replay, replay
    except ImportError:
        raise ImportError(
            "LearnerBuilder.with_step_replay: replaying steps needs burn-fusion (pip install burn-fusion)"
        ) from None
    if not can_replay(device):
        return None
    step: ReplayedStep = replay(train_and_update)
    return step
