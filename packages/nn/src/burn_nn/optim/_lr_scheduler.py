"""``LrScheduler``, the learning-rate scheduler interface, its records, and ``ConstantLr``."""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import TypeVar

__all__ = ["ConstantLr", "LrScheduler", "LrSchedulerRecord"]

S = TypeVar("S", bound="LrScheduler")

LrSchedulerRecord = dict[str, int | float]
"""A scheduler's state: named numbers (step counters, a current learning rate), JSON-ready. Schedulers
that hold others (sequential, composed) nest their records under ``"<index>."`` key prefixes."""


class LrScheduler(abc.ABC):
    """A learning-rate schedule (Burn's ``LrScheduler`` trait): ``step()`` gives the learning rate of
    each training iteration in turn.

    The convention is Burn's: call ``step()`` once per iteration, *before* the optimizer step, and use
    the value it returns. The first call returns the initial learning rate. PyTorch counts the other way
    round: the optimizer starts at the initial rate and ``scheduler.step()`` after each iteration moves it
    on, so the ``k``-th call of ``step()`` here (from 0) returns what PyTorch's ``get_last_lr()`` gives
    after ``k`` calls of its ``step()``, that is, the rate of iteration ``k``.

    ``into_record()`` exports the state and ``load_record(record)`` restores it (the names modules and
    optimizers use), so a resumed run continues the same sequence. The settings are not in the record:
    they come from the config the scheduler is rebuilt from.

    A custom scheduler implements ``step``, ``into_record`` and ``_load``: ``load_record`` checks a
    record's keys and number types against ``into_record()`` before handing it to ``_load``.
    """

    @abc.abstractmethod
    def step(self) -> float:
        """Advance the schedule by one iteration and return that iteration's learning rate."""

    @abc.abstractmethod
    def into_record(self) -> LrSchedulerRecord:
        """The state of the scheduler (not its settings) as named numbers."""

    @abc.abstractmethod
    def _load(self, record: Mapping[str, int | float]) -> None:
        """Set the state from a record whose keys were checked against ``into_record()``'s."""

    def load_record(self: S, record: Mapping[str, int | float]) -> S:
        """Restore the state saved by ``into_record`` (of a scheduler built from the same config), so that
        the following ``step()`` calls continue that scheduler's sequence.

        The scheduler is changed in place and returned, so both ``scheduler.load_record(r)`` and
        ``scheduler = scheduler.load_record(r)`` work.

        Raises:
            ValueError: the record lacks a key of this scheduler's state, has other keys (it was made by
                another kind of scheduler), or holds a value of the wrong type.
        """
        expected = self.into_record()
        missing = sorted(set(expected) - set(record))
        unexpected = sorted(set(record) - set(expected))
        if missing or unexpected:
            parts = [f"missing {', '.join(missing)}"] if missing else []
            parts += [f"unexpected {', '.join(unexpected)}"] if unexpected else []
            raise ValueError(
                f"{type(self).__name__}.load_record: the record does not fit this scheduler: "
                + "; ".join(parts)
            )
        for key, current in expected.items():
            value = record[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{type(self).__name__}.load_record: {key} must be a number, got {value!r}")
            if isinstance(current, int) and not isinstance(value, int):
                raise ValueError(f"{type(self).__name__}.load_record: {key} must be an int, got {value!r}")
        self._load(record)
        return self


class ConstantLr(LrScheduler):
    """The same learning rate at every step (Burn's ``ConstantLr``; a float works the same way wherever a
    scheduler config is expected).

    Example:
        >>> ConstantLr(1e-3).step()
        0.001
    """

    def __init__(self, lr: float) -> None:
        """A scheduler returning ``lr`` forever.

        Raises:
            ValueError: ``lr`` is not a finite number.
        """
        value = float(lr)
        if not math.isfinite(value):
            raise ValueError(f"ConstantLr: the learning rate must be finite, got {lr!r}")
        self.lr = value

    def step(self) -> float:
        """The constant learning rate."""
        return self.lr

    def into_record(self) -> LrSchedulerRecord:
        """An empty record: there is no state."""
        return {}

    def _load(self, record: Mapping[str, int | float]) -> None:
        pass

    def __repr__(self) -> str:
        return f"ConstantLr({self.lr})"
