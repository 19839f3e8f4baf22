"""The learner's bookkeeping: the ``Interrupter``, the per-epoch metric store (``MetricsStore``) with
``Aggregate``/``Direction``/``Split``, early stopping, and the random generator states a checkpoint
records."""

from __future__ import annotations

import enum
import math
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from burn_backend import Device
from burn_nn import load_rng_record, rng_record

__all__ = [
    "Aggregate",
    "Direction",
    "Interrupter",
    "MetricEarlyStoppingStrategy",
    "MetricsStore",
    "Split",
    "StoppingCondition",
    "capture_rng",
    "restore_rng",
]


class Interrupter:
    """Stops a run from another thread, a key press or a signal handler (Burn's ``Interrupter``): the
    learner checks it after each optimizer step, saves a checkpoint and returns.

    Example:
        >>> interrupter = Interrupter()
        >>> interrupter.stop("enough")
        >>> interrupter.should_stop(), interrupter.message
        (True, 'enough')
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self.message: str | None = None

    def stop(self, reason: str | None = None) -> None:
        """Ask the run to stop (``reason`` is shown and logged)."""
        self.message = reason
        self._event.set()

    def reset(self) -> None:
        """Forget a stop request."""
        self.message = None
        self._event.clear()

    def should_stop(self) -> bool:
        """Whether a stop was asked."""
        return self._event.is_set()


class Split(enum.Enum):
    """Which part of the run a metric value belongs to."""

    TRAIN = "train"
    VALID = "valid"
    TEST = "test"


class Direction(enum.Enum):
    """Whether a metric is better low (``LOWEST``: a loss) or high (``HIGHEST``: an accuracy)."""

    LOWEST = "lowest"
    HIGHEST = "highest"


class Aggregate(enum.Enum):
    """How an epoch's updates make the epoch's value: ``MEAN`` (the metric's running value: a
    batch-size-weighted mean, or the value of the epoch's counts)."""

    MEAN = "mean"


def _metric_name(metric: Any) -> str:
    if isinstance(metric, str):
        return metric
    name = getattr(metric, "name", None)
    if not callable(name):
        raise TypeError(f"expected a metric or a metric name, got {type(metric).__name__}")
    return str(name())


class MetricsStore:
    """Every epoch's value of every numeric metric, per split (Burn's event store): what plots,
    best-checkpoint selection, early stopping and the summary read.

    Example:
        >>> store = MetricsStore()
        >>> store.record(Split.VALID, 1, "Loss", 0.5)
        >>> store.record(Split.VALID, 2, "Loss", 0.4)
        >>> store.find_epoch("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID)
        2
    """

    def __init__(self) -> None:
        self._values: dict[Split, dict[str, dict[int, float]]] = {split: {} for split in Split}

    def record(self, split: Split, epoch: int, name: str, value: float) -> None:
        """Store the value of metric ``name`` for ``epoch``."""
        self._values[split].setdefault(name, {})[epoch] = float(value)

    def history(self, name: str, split: Split) -> dict[int, float]:
        """Epoch to value of metric ``name`` (empty when never recorded)."""
        return dict(sorted(self._values[split].get(name, {}).items()))

    def names(self, split: Split) -> list[str]:
        """The metrics with a value in ``split``."""
        return list(self._values[split])

    def find_metric(self, name: str, epoch: int, aggregate: Aggregate, split: Split) -> float | None:
        """The value of ``name`` at ``epoch``, or ``None``."""
        return self._values[split].get(name, {}).get(epoch)

    def find_epoch(self, name: str, aggregate: Aggregate, direction: Direction, split: Split) -> int | None:
        """The epoch with the best value of ``name`` (the earliest among equals), or ``None``."""
        values = {e: v for e, v in self.history(name, split).items() if not math.isnan(v)}
        if not values:
            return None
        pick = min if direction is Direction.LOWEST else max
        best = pick(values.values())
        return min(e for e, v in values.items() if v == best)

    def truncate(self, last_epoch: int) -> None:
        """Forget every value after ``last_epoch`` (when a run resumes from a checkpoint)."""
        for split in self._values.values():
            for history in split.values():
                for epoch in [e for e in history if e > last_epoch]:
                    del history[epoch]


@dataclass(frozen=True)
class StoppingCondition:
    """When early stopping stops: ``no_improvement_since(n_epochs)``, Burn's
    ``StoppingCondition::NoImprovementSince { n_epochs }``."""

    n_epochs: int

    @classmethod
    def no_improvement_since(cls, n_epochs: int) -> StoppingCondition:
        """Stop when the best epoch is ``n_epochs`` or more epochs behind the current one."""
        if n_epochs < 1:
            raise ValueError(f"StoppingCondition.no_improvement_since: n_epochs must be >= 1, got {n_epochs}")
        return cls(n_epochs)


class MetricEarlyStoppingStrategy:
    """Stops training when a metric has not improved for a number of epochs (Burn's
    ``MetricEarlyStoppingStrategy``).

    Args:
        metric: the metric (or its name), registered as numeric for ``split``.
        aggregate: how the epoch's value is made.
        direction: which way is better.
        split: the split whose values count (the validation split, usually).
        condition: when to stop.

    Example:
        >>> strategy = MetricEarlyStoppingStrategy(
        ...     "Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID,
        ...     StoppingCondition.no_improvement_since(n_epochs=2),
        ... )
    """

    def __init__(
        self,
        metric: Any,
        aggregate: Aggregate = Aggregate.MEAN,
        direction: Direction = Direction.LOWEST,
        split: Split = Split.VALID,
        condition: StoppingCondition | None = None,
    ) -> None:
        self.metric = _metric_name(metric)
        self.aggregate, self.direction, self.split = aggregate, direction, split
        self.condition = condition or StoppingCondition.no_improvement_since(1)

    def should_stop(self, epoch: int, store: MetricsStore) -> bool:
        """Whether to stop after ``epoch``."""
        best = store.find_epoch(self.metric, self.aggregate, self.direction, self.split)
        return best is not None and epoch - best >= self.condition.n_epochs


# -- random generator states ----------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """NumPy's generator state as plain data (arrays as lists of ints)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [int(v) for v in value.reshape(-1)]
    if isinstance(value, np.generic):
        return value.item()
    return value


def capture_rng(devices: Sequence[Device]) -> dict[str, Any]:
    """The states of the random generators a run draws from: each device's generator (burn-nn's
    ``rng_record``: NumPy's on NdArray, CuPy's on Cuda), Python's ``random`` and NumPy's global
    generator. Counters may exceed 64 bits; burn-record keeps them whole."""
    version, internal, gauss = random.getstate()
    devices_state: dict[str, Any] = {}
    for device in devices:
        try:
            devices_state[str(device)] = rng_record(device)
        except TypeError:
            continue  # a backend whose generator is neither NumPy's nor CuPy's: not recorded
    return {
        "python": {"version": version, "internal": list(internal), "gauss": gauss},
        "numpy": _plain(np.random.get_state(legacy=False)),  # noqa: NPY002 (what user code may draw from)
        "devices": devices_state,
    }


def restore_rng(states: Mapping[str, Any], devices: Sequence[Device]) -> list[str]:
    """Restore what ``capture_rng`` saved; returns the devices whose state could not be restored (none
    saved, or saved by another kind of generator or another GPU model)."""
    python = states["python"]
    random.setstate((python["version"], tuple(python["internal"]), python["gauss"]))
    numpy_state = dict(states["numpy"])
    numpy_state["state"] = {**numpy_state["state"], "key": np.asarray(numpy_state["state"]["key"], np.uint32)}
    np.random.set_state(numpy_state)  # noqa: NPY002
    missing = []
    saved = states.get("devices", {})
    for device in devices:
        try:
            load_rng_record(device, saved.get(str(device)))  # None (nothing saved) raises too
        except (TypeError, ValueError):
            missing.append(str(device))
    return missing
