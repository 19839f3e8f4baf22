"""Evaluation and summaries: the epoch loop shared by validation and testing, ``LearnerSummary`` (the table
printed at the end of a run), ``EvaluatorBuilder`` and ``Evaluator`` (a test set through the model's
``valid_step``)."""

from __future__ import annotations

import copy
import functools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from burn_backend import PendingRead
from burn_nn import Module

from ._logger import FileMetricLogger
from ._metrics._base import MetricEntry, MetricMetadata, adapt, to_host_async
from ._renderer import CliRenderer, MetricsRenderer, TrainingProgress
from ._state import MetricsStore, Split

__all__ = ["EvaluationSummary", "Evaluator", "EvaluatorBuilder", "LearnerSummary", "run_epoch"]


def run_epoch(
    model: Any,
    method: str,
    loader: Any,
    metrics: Sequence[tuple[Any, bool]],
    split: str,
    epoch: int,
    epoch_total: int,
    logger: FileMetricLogger,
    renderer: MetricsRenderer,
    lr: Callable[[], float | None],
    call: Callable[[Any, Any], Any] | None = None,
) -> dict[str, MetricEntry]:
    """Run ``model.<method>(batch)`` (or ``call(model, batch)``, a replayed step) over one epoch of
    ``loader``, updating, logging and rendering the metrics (cleared first); returns the last entry of
    each metric."""
    for metric, _ in metrics:
        metric.clear()
    step = getattr(model, method) if call is None else functools.partial(call, model)
    iterator: Iterator[Any] = loader.iter() if callable(getattr(loader, "iter", None)) else iter(loader)
    iterations = len(loader) if hasattr(loader, "__len__") else 0
    iteration = getattr(iterator, "position", 0)
    last: dict[str, MetricEntry] = {}

    def update(read: PendingRead[list[Any]], metadata: MetricMetadata) -> None:
        entries = [metric.update(value, metadata) for (metric, _), value in zip(metrics, read.wait())]
        logger.log(split, epoch, entries)
        renderer.update(
            TrainingProgress(split, epoch, epoch_total, metadata.iteration, iterations, *metadata.progress),
            entries,
        )
        last.update((entry.name, entry) for entry in entries)

    pending: tuple[PendingRead[list[Any]], MetricMetadata] | None = None
    for batch in iterator:
        iteration += 1
        item = step(batch)
        progress = iterator.progress() if hasattr(iterator, "progress") else (iteration, iterations)
        metadata = MetricMetadata(progress, epoch, epoch_total, iteration, lr())
        read = to_host_async([adapt(item, metric) for metric, _ in metrics])
        del item  # released before the next step: a replay copies out the outputs still held
        if pending is not None:  # the last step's values, read while this one runs
            update(*pending)
        pending = (read, metadata)
    if pending is not None:
        update(*pending)
    logger.end_epoch(split, epoch)
    return last


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class LearnerSummary:
    """The end-of-run table (Burn's ``LearnerSummary``): for each split and numeric metric, its best and
    worst epoch values.

    Example:
        >>> print(LearnerSummary.from_store(learner.store))  # doctest: +SKIP
    """

    epochs: int
    rows: list[tuple[str, str, float, int, float, int]] = field(default_factory=list)
    model: str = ""

    @classmethod
    def from_store(cls, store: MetricsStore, model: Module | None = None) -> LearnerSummary:
        """The summary of the values in ``store``."""
        rows, epochs = [], 0
        for split in Split:
            for name in store.names(split):
                history = {e: v for e, v in store.history(name, split).items() if not math.isnan(v)}
                if not history:
                    continue
                epochs = max(epochs, *history)
                low = min(history, key=lambda e: (history[e], e))
                high = max(history, key=lambda e: (history[e], -e))
                rows.append((split.value.capitalize(), name, history[low], low, history[high], high))
        return cls(epochs, rows, "" if model is None else repr(model))

    def __str__(self) -> str:
        header = "=" * 24 + " Learner Summary " + "=" * 24
        parts = [header]
        if self.model:
            parts += ["Model:", self.model]
        parts.append(f"Total Epochs: {self.epochs}\n")
        table_rows = [
            (s, n, f"{lo:.3f}", str(el), f"{hi:.3f}", str(eh)) for s, n, lo, el, hi, eh in self.rows
        ]
        parts.append(_table(["Split", "Metric", "Min.", "Epoch", "Max.", "Epoch"], table_rows))
        return "\n".join(parts)


@dataclass
class EvaluationSummary:
    """What ``Evaluator.eval`` measured: each metric's value over the test set."""

    name: str
    values: dict[str, float]
    formatted: dict[str, str]

    def __str__(self) -> str:
        header = "=" * 20 + f" Evaluation: {self.name} " + "=" * 20
        rows = [(self.name, metric, text) for metric, text in self.formatted.items()]
        return header + "\n" + _table(["Split", "Metric", "Value"], rows)


class EvaluatorBuilder:
    """Configures an ``Evaluator`` (Burn's ``EvaluatorBuilder``).

    Example:
        >>> evaluator = EvaluatorBuilder("artifacts").metrics(AccuracyMetric()).build(model)  # doctest: +SKIP
        >>> summary = evaluator.eval("test", test_loader)  # doctest: +SKIP
    """

    def __init__(self, artifact_dir: str | os.PathLike[str]) -> None:
        self._artifact_dir = Path(artifact_dir)
        self._metrics: list[tuple[Any, bool]] = []
        self._renderer: MetricsRenderer | None = None
        self._print = True

    def metrics(self, *metrics: Any) -> EvaluatorBuilder:
        """Register metrics (numeric ones give the summary's values)."""
        for metric in metrics:
            if not all(callable(getattr(metric, n, None)) for n in ("name", "update", "clear")):
                raise TypeError(f"EvaluatorBuilder.metrics: expected a Metric, got {metric!r}")
            self._metrics.append((metric, callable(getattr(metric, "running_value", None))))
        return self

    def renderer(self, renderer: MetricsRenderer) -> EvaluatorBuilder:
        """How progress is shown (default: nothing per step, the table at the end)."""
        self._renderer = renderer
        return self

    def quiet(self) -> EvaluatorBuilder:
        """Do not print the summary table."""
        self._print = False
        return self

    def build(self, model: Module) -> Evaluator:
        """The evaluator of ``model`` (which needs ``valid_step``; on an autodiff backend, its
        ``valid()`` form is used).

        Raises:
            TypeError: the model has no ``valid_step``.
        """
        if not callable(getattr(model, "valid_step", None)):
            raise TypeError(
                f"EvaluatorBuilder.build: {type(model).__name__} needs a valid_step(batch) method"
            )
        return Evaluator(self, model)


class Evaluator:
    """Runs test sets through a model's ``valid_step`` with metrics (Burn's ``Evaluator``): logs under
    ``<artifact_dir>/<name>/epoch-1/`` and prints the summary table."""

    def __init__(self, builder: EvaluatorBuilder, model: Module) -> None:
        devices = model.devices()
        self.model = model.valid() if devices and devices[0].backend.is_autodiff else model
        self._b = builder

    def eval(self, name: str, loader: Any) -> EvaluationSummary:
        """Evaluate on ``loader`` (moved to the model's device when it is a ``DataLoader``).

        Returns:
            The value of each metric over the whole set.
        """
        devices = self.model.devices()
        if (
            devices
            and callable(getattr(loader, "to_device", None))
            and getattr(loader, "device", None) != devices[0]
        ):
            loader = loader.to_device(devices[0])
        metrics = [(copy.deepcopy(m), numeric) for m, numeric in self._b._metrics]
        renderer = self._b._renderer or _Silent()
        logger = FileMetricLogger(self._b._artifact_dir)
        renderer.start(name, 1, 1)
        try:
            last = run_epoch(
                self.model, "valid_step", loader, metrics, name, 1, 1, logger, renderer, lambda: None
            )
        finally:
            renderer.close()
            logger.close()
        values, formatted = {}, {}
        for metric, numeric in metrics:
            entry = last.get(metric.name())
            if numeric:
                values[metric.name()] = float(metric.running_value())
                formatted[metric.name()] = entry.format(values[metric.name()]) if entry else "nan"
            elif entry is not None:
                formatted[metric.name()] = entry.formatted
        summary = EvaluationSummary(name, values, formatted)
        if self._b._print:
            print(summary)
        return summary


class _Silent(CliRenderer):
    def end_epoch(self, epoch: int, values: Any, seconds: float) -> None:
        pass
