"""The Learner's steps as functions of their model (``LearnerBuilder.with_step_replay``): the model's
``train_step`` and the optimizer step together, and ``valid_step``, for a recorder such as
``burn_fusion.replay`` to record and replay (the model an argument, so that its new values flow in)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn_nn import Module
from burn_nn.optim import ModuleOptimizer

from ._output import run_train_step

StepReplay = Callable[[Callable[..., Any]], Callable[..., Any]]
"""What records a step function and replays it, returning a function called as the step:
``burn_fusion.replay``."""


def train_and_update(model: Module, optimizer: ModuleOptimizer, lr: float, batch: Any) -> tuple[Any, Module]:
    """One training step: ``model.train_step(batch)``, then ``optimizer`` applies its gradients; returns
    the step's item (for the metrics) and the updated model."""
    output = run_train_step(model, batch)
    return output.item, optimizer.step(lr, model, output.grads)


def validate(model: Module, batch: Any) -> Any:
    """``model.valid_step(batch)``: the item the validation metrics read."""
    return model.valid_step(batch)  # type: ignore[attr-defined]
