"""How a run is shown: the ``MetricsRenderer`` protocol, ``TrainingProgress``, and ``CliRenderer`` (a
progress line every few seconds and one line per epoch: the renderer without a terminal, in CI or a log
file)."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
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


def _duration(seconds: float) -> str:
    """``seconds`` as ``H:MM:SS``."""
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class CliRenderer:
    """Plain text for a run without a terminal (CI, a log file, a notebook's output): every ``interval``
    seconds a progress line with the step, the metrics' values so far in the epoch, the items per second
    and the time left in the epoch (as PyTorch Lightning's plain progress), one line per epoch with
    each metric's epoch value, and status messages.

    Args:
        stream: where lines go (standard output by default, looked up at each line).
        interval: the seconds between progress lines within an epoch (``None``: none, only the epoch
            lines). The first comes ``interval`` seconds into a split's epoch, so short epochs print
            their epoch line only.
        clock: the clock read for the interval and the speed (``time.monotonic`` by default).

    Raises:
        ValueError: ``interval`` is not a positive number or ``None``.

    Example:
        >>> renderer = CliRenderer()
        >>> renderer.start("demo", 10, 1)
        >>> renderer.end_epoch(1, {"train": []}, 1.25)
        [Epoch  1/10] train - | 1.2 s
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval: float | None = 5.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if interval is not None and (isinstance(interval, bool) or not isinstance(interval, (int, float))):
            raise ValueError(f"CliRenderer: interval must be seconds > 0 or None, got {interval!r}")
        if interval is not None and not interval > 0:
            raise ValueError(f"CliRenderer: interval must be seconds > 0 or None, got {interval!r}")
        self._stream = stream
        self._epoch_total = 0
        self._interval = None if interval is None else float(interval)
        self._clock = clock if clock is not None else time.monotonic
        # the split and epoch being shown, when and at which item count their first step was seen, and
        # when the last progress line was printed
        self._current: tuple[str, int] | None = None
        self._first = (0.0, 0)
        self._printed = 0.0

    def _out(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def start(self, title: str, epoch_total: int, start_epoch: int) -> None:
        """Remember the number of epochs (printed with each line)."""
        self._epoch_total = epoch_total
        if start_epoch > 1:
            print(f"Resuming at epoch {start_epoch}/{epoch_total}", file=self._out(), flush=True)

    def update(self, progress: TrainingProgress, entries: Sequence[MetricEntry]) -> None:
        """Print ``[Epoch  2/10] train 120/469 (25.6 %) | Loss 0.412 | 850.3 items/s | ETA 0:00:52``
        once ``interval`` seconds have passed since the split's first step or the last such line. The
        speed counts the items since the split's first step of the epoch (so the first step's warm-up
        is left out); the ETA is the epoch's items left at that speed."""
        if self._interval is None:
            return
        now = self._clock()
        if self._current != (progress.split, progress.epoch):
            self._current = (progress.split, progress.epoch)
            self._first = (now, progress.items_processed)
            self._printed = now
            return
        if now - self._printed < self._interval:
            return
        self._printed = now
        print(self._progress_line(progress, entries, now), file=self._out(), flush=True)

    def _progress_line(self, progress: TrainingProgress, entries: Sequence[MetricEntry], now: float) -> str:
        width = len(str(self._epoch_total))
        step = (
            f"{progress.iteration}/{progress.iterations}" if progress.iterations else str(progress.iteration)
        )
        if progress.items_total:
            step += f" ({100 * progress.items_processed / progress.items_total:.1f} %)"
        parts = [f"[Epoch {progress.epoch:{width}d}/{self._epoch_total}] {progress.split} {step}"]
        shown = [
            f"{entry.name} {entry.format(entry.running) if entry.running is not None else entry.formatted}"
            for entry in entries
            if entry.running is not None or entry.formatted
        ]
        if shown:
            parts.append(", ".join(shown))
        began, items = self._first
        rate = (progress.items_processed - items) / (now - began) if now > began else math.nan
        parts.append(f"{rate:.1f} items/s" if math.isfinite(rate) else "- items/s")
        left = progress.items_total - progress.items_processed
        parts.append(f"ETA {_duration(left / rate)}" if progress.items_total and rate > 0 else "ETA -")
        return " | ".join(parts)

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
