"""Schedulers made of schedulers: ``SequentialLrScheduler`` (one after another) and ``ComposedLrScheduler``
(combined at every step)."""

from __future__ import annotations

import bisect
import copy
import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from .._config import Config
from ._lr_scheduler import ConstantLr, LrScheduler, LrSchedulerRecord
from ._lr_schedules import (
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
)

__all__ = [
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "LrSchedulerConfig",
    "SchedulerReduction",
    "SequentialLrScheduler",
    "SequentialLrSchedulerConfig",
]


def _build(owner: str, configs: Sequence[LrSchedulerConfig]) -> list[LrScheduler]:
    """The schedulers of ``configs``; a number stands for a constant learning rate."""
    schedulers: list[LrScheduler] = []
    for index, config in enumerate(configs):
        if isinstance(config, (int, float)) and not isinstance(config, bool):
            schedulers.append(ConstantLr(config))
        elif isinstance(config, _CONFIG_TYPES):
            schedulers.append(config.init())
        else:
            raise TypeError(
                f"{owner}: scheduler {index} must be a scheduler config or a constant learning rate, "
                f"got {type(config).__name__}"
            )
    return schedulers


def _child_records(record: LrSchedulerRecord, schedulers: Sequence[LrScheduler]) -> LrSchedulerRecord:
    """``record`` with each child's record merged in under its index: ``{"0.key": value, ...}``."""
    for index, scheduler in enumerate(schedulers):
        record.update({f"{index}.{key}": value for key, value in scheduler.into_record().items()})
    return record


def _loaded_children(
    record: Mapping[str, int | float], schedulers: Sequence[LrScheduler]
) -> list[LrScheduler]:
    """Copies of ``schedulers`` with their records loaded, so that a failure leaves the originals as
    they were."""
    loaded = []
    for index, scheduler in enumerate(schedulers):
        prefix = f"{index}."
        child = copy.deepcopy(scheduler)
        child.load_record({key[len(prefix) :]: v for key, v in record.items() if key.startswith(prefix)})
        loaded.append(child)
    return loaded


# -- sequential --------------------------------------------------------------------------------------
class SequentialLrSchedulerConfig(Config):
    """Settings of a ``SequentialLrScheduler``.

    Args:
        schedulers: the schedulers, in order (configs, or numbers for constant learning rates).
        milestones: the step counts at which the next scheduler takes over: one fewer than the
            schedulers, each greater than zero and than the one before.

    Example:
        >>> warmup_then_cosine = SequentialLrSchedulerConfig(
        ...     (LinearLrSchedulerConfig(1e-5, 1e-2, 100), CosineAnnealingLrSchedulerConfig(1e-2, 900)),
        ...     (100,),
        ... )
    """

    schedulers: tuple[LrSchedulerConfig, ...]
    milestones: tuple[int, ...]

    def init(self) -> SequentialLrScheduler:
        """The scheduler.

        Raises:
            ValueError: there is no scheduler, the number of milestones is not one fewer, the milestones
                are not positive and increasing, or a child config is invalid.
        """
        return SequentialLrScheduler(self)


class SequentialLrScheduler(LrScheduler):
    """Runs schedulers one after another: the first until ``milestones[0]`` steps have been taken, the
    next (from its own first step) until ``milestones[1]``, and so on (PyTorch's ``SequentialLR``).
    """

    def __init__(self, config: SequentialLrSchedulerConfig) -> None:
        name = type(config).__name__
        if not config.schedulers:
            raise ValueError(f"{name}: at least one scheduler is required")
        milestones = list(config.milestones)
        if len(milestones) + 1 != len(config.schedulers):
            raise ValueError(
                f"{name}: the number of milestones must be one less than the number of schedulers, got "
                f"{len(milestones)} milestones for {len(config.schedulers)} schedulers"
            )
        for index, milestone in enumerate(milestones):
            if (
                isinstance(milestone, bool)
                or not isinstance(milestone, int)
                or milestone <= 0
                or (index > 0 and milestone <= milestones[index - 1])
            ):
                raise ValueError(
                    f"{name}: milestones must be ints greater than zero and strictly increasing, "
                    f"got {milestones}"
                )
        self.schedulers = _build(name, config.schedulers)
        self.milestones = milestones
        self.step_count = 0

    def step(self) -> float:
        """The learning rate of this iteration, from the scheduler whose turn it is."""
        active = bisect.bisect_right(self.milestones, self.step_count)
        lr = self.schedulers[active].step()
        self.step_count += 1
        return lr

    def into_record(self) -> LrSchedulerRecord:
        """``{"step": n}`` and each scheduler's record under ``"<index>."``."""
        return _child_records({"step": self.step_count}, self.schedulers)

    def _load(self, record: Mapping[str, int | float]) -> None:
        step = int(record["step"])
        if step < 0:
            raise ValueError(f"SequentialLrScheduler.load_record: step must be >= 0, got {step}")
        self.schedulers = _loaded_children(record, self.schedulers)
        self.step_count = step


# -- composed ----------------------------------------------------------------------------------------
class SchedulerReduction(enum.Enum):
    """How a ``ComposedLrScheduler`` combines the rates of its schedulers: ``AVG`` (their mean),
    ``SUM``, or ``PROD`` (their product: a schedule scaled by other schedules)."""

    AVG = "avg"
    SUM = "sum"
    PROD = "prod"


class ComposedLrSchedulerConfig(Config):
    """Settings of a ``ComposedLrScheduler``: the schedulers (configs, or numbers for constant rates)
    and how their rates are combined (``PROD`` by default).

    Example:
        >>> config = (
        ...     ComposedLrSchedulerConfig()
        ...     .linear(LinearLrSchedulerConfig(0.1, 1.0, 100))  # warm-up factor
        ...     .exponential(ExponentialLrSchedulerConfig(1e-3, 0.999))
        ... )
    """

    schedulers: tuple[LrSchedulerConfig, ...] = ()
    reduction: SchedulerReduction = SchedulerReduction.PROD

    def init(self) -> ComposedLrScheduler:
        """The scheduler.

        Raises:
            ValueError: there is no scheduler, or a child config is invalid.
        """
        return ComposedLrScheduler(self)

    def _appended(self, config: LrSchedulerConfig) -> ComposedLrSchedulerConfig:
        return dataclasses.replace(self, schedulers=(*self.schedulers, config))

    def linear(self, config: LinearLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a linear scheduler appended."""
        return self._appended(config)

    def cosine(self, config: CosineAnnealingLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a cosine annealing scheduler appended."""
        return self._appended(config)

    def exponential(self, config: ExponentialLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with an exponential scheduler appended."""
        return self._appended(config)

    def noam(self, config: NoamLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a Noam scheduler appended."""
        return self._appended(config)


class ComposedLrScheduler(LrScheduler):
    """Steps every scheduler at each step and combines their rates as ``reduction`` says: the product
    of a warm-up factor and a decay, say (with ``PROD``, what PyTorch's ``ChainedScheduler`` gives for
    multiplicative schedules).
    """

    def __init__(self, config: ComposedLrSchedulerConfig) -> None:
        name = type(config).__name__
        if not config.schedulers:
            raise ValueError(f"{name}: at least one scheduler is required")
        if not isinstance(config.reduction, SchedulerReduction):
            raise ValueError(f"{name}: reduction must be a SchedulerReduction, got {config.reduction!r}")
        self.schedulers = _build(name, config.schedulers)
        self.reduction = config.reduction

    def step(self) -> float:
        """The combined learning rate of this iteration."""
        rates = [scheduler.step() for scheduler in self.schedulers]
        if self.reduction is SchedulerReduction.PROD:
            return math.prod(rates)
        if self.reduction is SchedulerReduction.SUM:
            return math.fsum(rates)
        return math.fsum(rates) / len(rates)

    def into_record(self) -> LrSchedulerRecord:
        """Each scheduler's record under ``"<index>."``."""
        return _child_records({}, self.schedulers)

    def _load(self, record: Mapping[str, int | float]) -> None:
        self.schedulers = _loaded_children(record, self.schedulers)


LrSchedulerConfig: TypeAlias = (
    LinearLrSchedulerConfig
    | CosineAnnealingLrSchedulerConfig
    | ExponentialLrSchedulerConfig
    | StepLrSchedulerConfig
    | NoamLrSchedulerConfig
    | SequentialLrSchedulerConfig
    | ComposedLrSchedulerConfig
    | float
)
"""A scheduler inside a sequential or composed one: one of the scheduler configs, or a number (a constant
learning rate). In JSON each is written by its fields and recognised by them on loading."""

_CONFIG_TYPES = (
    LinearLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    StepLrSchedulerConfig,
    NoamLrSchedulerConfig,
    SequentialLrSchedulerConfig,
    ComposedLrSchedulerConfig,
)
