"""How a run is shown: the ``MetricsRenderer`` protocol, ``TrainingProgress``, and ``CliRenderer`` (one line
per epoch: the renderer without a terminal, in CI or a log file)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO, runtime_checkable

from ._metrics._base import MetricEntry

__all__ = ["CliRenderer", "MetricsRenderer", "TrainingProgress"]


@dataclass(frozen=True)
class TrainingProgress:
    """Where a run is (Burn's ``TrainingProgress``).

    Attributes:
        split: ``"train"``, ``"valid"`` or a test split's name.
        epoch: the epoch, from 1.
        epoch_total: the epochs of the run.
        iteration: batches done in this epoch.
        iterations: batches in this epoch.
        items_processed: items done in this epoch.
        items_total: items in this epoch.
    """

    split: str
    epoch: int
    epoch_total: int
    iteration: int
    iterations: int
    items_processed: int
    items_total: int


@runtime_checkable
class MetricsRenderer(Protocol):
    """Shows a run as it goes (Burn's ``MetricsRenderer``): the learner calls ``start`` once, ``update``
    after each step, ``end_epoch`` after each epoch's validation, ``status`` for messages and ``close``
    at the end (also after an error)."""

    def start(self, title: str, epoch_total: int, start_epoch: int) -> None:
        """The run begins (at ``start_epoch`` when it resumes)."""
        ...

    def update(self, progress: TrainingProgress, entries: Sequence[MetricEntry]) -> None:
        """A step is done; ``entries`` are its metrics'."""
        ...

    def end_epoch(
        self, epoch: int, values: Mapping[str, Sequence[tuple[MetricEntry, float]]], seconds: float
    ) -> None:
        """An epoch is done: ``values`` maps each split to its metrics' last entries and epoch values."""
        ...

    def status(self, message: str) -> None:
        """A message for the user (a checkpoint saved, a stop requested)."""
        ...

    def close(self) -> None:
        """The run is over."""
        ...


class CliRenderer:
    """One line per epoch with each metric's epoch value, and status messages; nothing per step.

    Example:
        >>> renderer = CliRenderer()
        >>> renderer.start("demo", 10, 1)
        >>> renderer.end_epoch(1, {"train": []}, 1.25)
        [Epoch  1/10] train - | 1.2 s
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._epoch_total = 0

    def _out(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def start(self, title: str, epoch_total: int, start_epoch: int) -> None:
        """Remember the number of epochs (printed with each line)."""
        self._epoch_total = epoch_total
        if start_epoch > 1:
            print(f"Resuming at epoch {start_epoch}/{epoch_total}", file=self._out(), flush=True)

    def update(self, progress: TrainingProgress, entries: Sequence[MetricEntry]) -> None:
        """Nothing per step."""

    def end_epoch(
        self, epoch: int, values: Mapping[str, Sequence[tuple[MetricEntry, float]]], seconds: float
    ) -> None:
        """Print ``[Epoch  n/N] train Loss 0.412, Accuracy 87.50 % | valid ... | 1.2 s``."""
        width = len(str(self._epoch_total))
        parts = [f"[Epoch {epoch:{width}d}/{self._epoch_total}]"]
        for split, pairs in values.items():
            shown = ", ".join(f"{entry.name} {entry.format(value)}" for entry, value in pairs)
            parts.append(f"{split} {shown or '-'}")
        head = parts[0] + (" " + parts[1] if len(parts) > 1 else "")
        print(" | ".join([head, *parts[2:], f"{seconds:.1f} s"]), file=self._out(), flush=True)

    def status(self, message: str) -> None:
        """Print the message."""
        print(message, file=self._out(), flush=True)

    def close(self) -> None:
        """Nothing to release."""
