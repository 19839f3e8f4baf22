"""Training metrics: loss, perplexity, learning rate and iteration speed."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import ClassVar

import numpy as np

from burn_backend import Tensor

from ._base import MetricEntry, MetricMetadata, NumericMetricState, as_numpy, format_value

__all__ = [
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossInput",
    "LossMetric",
    "PerplexityInput",
    "PerplexityMetric",
]

Array = Tensor | np.ndarray


@dataclasses.dataclass(frozen=True)
class LossInput:
    """Input of ``LossMetric``: the ``loss`` tensor of the step (its mean is the value) and the number
    of items it covers (``batch_size``, the weight of the step in the epoch's mean)."""

    loss: Array
    batch_size: int = 1


@dataclasses.dataclass(frozen=True)
class PerplexityInput:
    """Input of ``PerplexityMetric``: ``outputs`` ``[tokens, vocabulary]`` (logits) and ``targets``
    ``[tokens]``."""

    outputs: Array
    targets: Array


class LossMetric:
    """The loss of each step, and the epoch's mean weighted by the items of each step (Burn's
    ``LossMetric``).

    Example:
        >>> LossMetric().update(LossInput(np.array([0.5]), 4), MetricMetadata.fake()).formatted
        '0.500'
    """

    input_type: ClassVar[type | None] = LossInput

    def __init__(self) -> None:
        self._state = NumericMetricState()

    def name(self) -> str:
        """The metric's name."""
        return "Loss"

    def update(self, item: LossInput, metadata: MetricMetadata) -> MetricEntry:
        """Record the step's loss (the mean of the loss tensor)."""
        value = float(np.mean(as_numpy(item.loss), dtype=np.float64))
        return self._state.update(value, item.batch_size, self.name(), precision=3)

    def value(self) -> float:
        """The last step's loss."""
        return self._state.value()

    def running_value(self) -> float:
        """The epoch's mean loss so far."""
        return self._state.running_value()

    def clear(self) -> None:
        """Forget the epoch."""
        self._state.reset()


class PerplexityMetric:
    """Perplexity, ``exp`` of the mean cross-entropy of the targets (Burn's ``PerplexityMetric``); pad
    tokens are not counted. The epoch's value is ``exp`` of the mean over every token of the epoch.

    Example:
        >>> uniform = PerplexityInput(np.zeros((3, 4)), np.array([0, 1, 2]))
        >>> round(PerplexityMetric().update(uniform, MetricMetadata.fake()).value, 6)
        4.0
    """

    input_type: ClassVar[type | None] = PerplexityInput

    def __init__(self, pad_token: int | None = None) -> None:
        self.pad_token = pad_token
        self._value = math.nan
        self._nll = 0.0
        self._tokens = 0

    def with_pad_token(self, pad_token: int) -> PerplexityMetric:
        """This metric, ignoring targets equal to ``pad_token``."""
        self.pad_token = pad_token
        return self

    def name(self) -> str:
        """The metric's name."""
        return "Perplexity"

    def update(self, item: PerplexityInput, metadata: MetricMetadata) -> MetricEntry:
        """Add the batch's token log-likelihoods."""
        outputs = np.asarray(as_numpy(item.outputs), dtype=np.float64)
        targets = np.asarray(as_numpy(item.targets)).astype(np.int64).reshape(-1)
        outputs = outputs.reshape(-1, outputs.shape[-1])
        if outputs.shape[0] != targets.shape[0]:
            raise ValueError(
                f"PerplexityMetric: {outputs.shape[0]} rows of outputs for {targets.shape[0]} targets"
            )
        keep = np.ones_like(targets, dtype=bool) if self.pad_token is None else targets != self.pad_token
        peak = outputs.max(axis=1, keepdims=True)
        log_normalizer = np.log(np.exp(outputs - peak).sum(axis=1)) + peak[:, 0]
        picked = np.take_along_axis(outputs, np.clip(targets, 0, outputs.shape[1] - 1)[:, None], axis=1)[:, 0]
        nll = float((log_normalizer - picked)[keep].sum())
        tokens = int(keep.sum())
        self._value = math.exp(nll / tokens) if tokens else math.nan
        self._nll += nll
        self._tokens += tokens
        return MetricEntry(
            self.name(), format_value(self._value, "", 3), f"{self._value!r},{tokens}", self._value,
            self.running_value(), "", 3,
        )  # fmt: skip

    def value(self) -> float:
        """The last batch's perplexity."""
        return self._value

    def running_value(self) -> float:
        """The epoch's perplexity so far."""
        return math.exp(self._nll / self._tokens) if self._tokens else math.nan

    def clear(self) -> None:
        """Forget the epoch."""
        self._value, self._nll, self._tokens = math.nan, 0.0, 0


class LearningRateMetric:
    """The learning rate of each optimizer step (Burn's ``LearningRateMetric``), from the step's
    metadata.

    Example:
        >>> LearningRateMetric().update(None, MetricMetadata(lr=1e-3)).formatted
        '1.000e-03'
    """

    input_type: ClassVar[type | None] = None

    def __init__(self) -> None:
        self._state = NumericMetricState()

    def name(self) -> str:
        """The metric's name."""
        return "Learning Rate"

    def update(self, item: object, metadata: MetricMetadata) -> MetricEntry:
        """Record ``metadata.lr`` (NaN when none)."""
        value = math.nan if metadata.lr is None else float(metadata.lr)
        return self._state.update(value, 1, self.name(), precision=-3)

    def value(self) -> float:
        """The last learning rate."""
        return self._state.value()

    def running_value(self) -> float:
        """The epoch's mean learning rate."""
        return self._state.running_value()

    def clear(self) -> None:
        """Forget the epoch."""
        self._state.reset()


class IterationSpeedMetric:
    """Steps per second since the epoch began (Burn's ``IterationSpeedMetric``).

    Example:
        >>> IterationSpeedMetric().name()
        'Iteration Speed'
    """

    input_type: ClassVar[type | None] = None

    def __init__(self) -> None:
        self._clock = time.perf_counter
        self._start: float | None = None
        self._iterations = 0
        self._value = math.nan

    def name(self) -> str:
        """The metric's name."""
        return "Iteration Speed"

    def update(self, item: object, metadata: MetricMetadata) -> MetricEntry:
        """Count one step."""
        now = self._clock()
        if self._start is None:
            self._start = now
            self._value = math.nan
        else:
            self._iterations += 1
            elapsed = now - self._start
            self._value = self._iterations / elapsed if elapsed > 0 else math.nan
        return MetricEntry(
            self.name(), format_value(self._value, "iter/sec"), f"{self._value!r},1", self._value,
            self._value, "iter/sec",
        )  # fmt: skip

    def value(self) -> float:
        """Steps per second so far."""
        return self._value

    def running_value(self) -> float:
        """Steps per second so far (the same as ``value``)."""
        return self._value

    def clear(self) -> None:
        """Start a new epoch."""
        self._start, self._iterations, self._value = None, 0, math.nan
