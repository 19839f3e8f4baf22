"""Step outputs and the step protocols: ``TrainOutput``, ``ClassificationOutput``, ``RegressionOutput``,
``MultiLabelClassificationOutput``, ``TrainStep`` and ``ValidStep`` (``InferenceStep``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from burn_backend import Gradients, Tensor
from burn_nn import Module
from burn_nn.optim import GradientsParams

from ._metrics._classification import (
    AccuracyInput,
    AurocInput,
    ConfusionStatsInput,
    HammingScoreInput,
    TopKAccuracyInput,
)
from ._metrics._training import LossInput, PerplexityInput

__all__ = [
    "ClassificationOutput",
    "InferenceStep",
    "MultiLabelClassificationOutput",
    "RegressionOutput",
    "TrainOutput",
    "TrainStep",
    "ValidStep",
]

T = TypeVar("T")
B_contra = TypeVar("B_contra", contravariant=True)
O_co = TypeVar("O_co", covariant=True)
O = TypeVar("O")  # noqa: E741


def _unsupported(output: object, input_type: type) -> TypeError:
    return TypeError(
        f"{type(output).__name__}.adapt: cannot make a {input_type.__name__} (a metric this output does "
        "not feed; adapt it in your own output class)"
    )


@dataclasses.dataclass(frozen=True)
class ClassificationOutput:
    """The output of a classification step (Burn's ``ClassificationOutput``): the ``loss``, the
    ``output`` logits ``[batch, classes]`` and the ``targets`` ``[batch]``. It feeds the loss, accuracy,
    top-k accuracy, precision, recall, F-beta, AUROC and perplexity metrics.

    Example:
        >>> def forward_classification(self, images, targets):
        ...     output = self.forward(images)
        ...     loss = CrossEntropyLossConfig().init(output.device).forward(output, targets)
        ...     return ClassificationOutput(loss, output, targets)
    """

    loss: Tensor
    output: Tensor
    targets: Tensor

    def adapt(self, input_type: type[T]) -> T:
        """The metric input of ``input_type`` (see the class docstring for the ones supported).

        Raises:
            TypeError: no metric of this output reads ``input_type``.
        """
        made: Any
        if input_type is LossInput:
            made = LossInput(self.loss, int(self.targets.shape[0]))
        elif input_type in (AccuracyInput, TopKAccuracyInput, PerplexityInput, AurocInput):
            made = input_type(self.output, self.targets)  # type: ignore[call-arg]
        elif input_type is ConfusionStatsInput:
            made = ConfusionStatsInput(self.output, self.targets)
        else:
            raise _unsupported(self, input_type)
        return made  # type: ignore[no-any-return]


@dataclasses.dataclass(frozen=True)
class RegressionOutput:
    """The output of a regression step (Burn's ``RegressionOutput``): ``loss``, ``output`` and
    ``targets`` ``[batch, ...]``; it feeds the loss metric.

    Example:
        >>> RegressionOutput(loss, prediction, targets)  # doctest: +SKIP
    """

    loss: Tensor
    output: Tensor
    targets: Tensor

    def adapt(self, input_type: type[T]) -> T:
        """A ``LossInput``.

        Raises:
            TypeError: for any other input.
        """
        if input_type is LossInput:
            return LossInput(self.loss, int(self.targets.shape[0]))  # type: ignore[return-value]
        raise _unsupported(self, input_type)


@dataclasses.dataclass(frozen=True)
class MultiLabelClassificationOutput:
    """The output of a multi-label step (Burn's ``MultiLabelClassificationOutput``): ``loss``,
    ``output`` ``[batch, labels]`` (logits, or probabilities where the metrics' thresholds expect them)
    and multi-hot ``targets`` ``[batch, labels]``. It feeds the loss, precision, recall, F-beta and
    Hamming score metrics.

    Example:
        >>> MultiLabelClassificationOutput(loss, logits.sigmoid(), targets)  # doctest: +SKIP
    """

    loss: Tensor
    output: Tensor
    targets: Tensor

    def adapt(self, input_type: type[T]) -> T:
        """The metric input of ``input_type``.

        Raises:
            TypeError: no metric of this output reads ``input_type``.
        """
        made: Any
        if input_type is LossInput:
            made = LossInput(self.loss, int(self.targets.shape[0]))
        elif input_type is ConfusionStatsInput:
            made = ConfusionStatsInput(self.output, self.targets)
        elif input_type is HammingScoreInput:
            made = HammingScoreInput(self.output, self.targets)
        else:
            raise _unsupported(self, input_type)
        return made  # type: ignore[no-any-return]


class TrainOutput(Generic[T]):
    """What a training step returns (Burn's ``TrainOutput``): the gradients of the step, and the
    ``item`` the metrics read.

    Args:
        model: the model the gradients belong to (the one whose ``train_step`` ran).
        grads: ``loss.backward()``'s ``Gradients`` (turned into ``GradientsParams`` of ``model``'s
            parameters here), or ``GradientsParams`` already.
        item: the step's output for the metrics (a ``ClassificationOutput``, say).

    Example:
        >>> def train_step(self, batch):
        ...     item = self.forward_classification(batch.images, batch.targets)
        ...     return TrainOutput(self, item.loss.backward(), item)
    """

    def __init__(self, model: Module, grads: Gradients | GradientsParams, item: T) -> None:
        if isinstance(grads, GradientsParams):
            self.grads = grads
        elif isinstance(grads, Gradients):
            self.grads = GradientsParams.from_grads(grads, model)
        else:
            raise TypeError(
                f"TrainOutput: expected the Gradients of loss.backward() or GradientsParams, got "
                f"{type(grads).__name__}"
            )
        self.item = item

    def __repr__(self) -> str:
        return f"TrainOutput({self.grads!r}, {type(self.item).__name__})"


def run_train_step(model: Module, batch: Any) -> TrainOutput[Any]:
    """``model.train_step(batch)``, checked to be a ``TrainOutput`` (``TypeError`` otherwise)."""
    output = model.train_step(batch)  # type: ignore[attr-defined]
    if not isinstance(output, TrainOutput):
        raise TypeError(f"Learner: train_step must return a TrainOutput, got {type(output).__name__}")
    return output


@runtime_checkable
class TrainStep(Protocol[B_contra, O]):
    """A model the learner can train (Burn's ``TrainStep``): ``train_step(batch)`` runs the forward and
    backward passes of one batch on the autodiff backend and returns a ``TrainOutput``.

    Example:
        >>> class Model(Module):
        ...     def train_step(self, batch):
        ...         item = self.forward_classification(batch.images, batch.targets)
        ...         return TrainOutput(self, item.loss.backward(), item)
    """

    def train_step(self, batch: B_contra) -> TrainOutput[O]:
        """One training step."""
        ...


@runtime_checkable
class ValidStep(Protocol[B_contra, O_co]):
    """A model the learner can validate (Burn's ``ValidStep``, now ``InferenceStep``): ``valid_step``
    runs the forward pass of one batch on the inner backend (the learner calls it on ``model.valid()``,
    so no graph is recorded and dropout is off) and returns the metrics' item.

    Example:
        >>> class Model(Module):
        ...     def valid_step(self, batch):
        ...         return self.forward_classification(batch.images, batch.targets)
    """

    def valid_step(self, batch: B_contra) -> O_co:
        """One validation step."""
        ...


InferenceStep = ValidStep
"""Burn's newer name of ``ValidStep``."""
