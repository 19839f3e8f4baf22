"""Learning-rate schedules: linear, cosine annealing with warm restarts, exponential, step and Noam."""

from __future__ import annotations

import logging
import math
import operator
from collections.abc import Mapping

from .._config import Config
from ._lr_scheduler import LrScheduler, LrSchedulerRecord

__all__ = [
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
]

_log = logging.getLogger(__name__)


def _number(config: str, name: str, value: object) -> float:
    """``value`` as a finite float, or a ``ValueError`` naming the config field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{config}: {name} must be a finite number, got {value!r}")
    return float(value)


def _count(config: str, name: str, value: object, minimum: int) -> int:
    """``value`` as an int of at least ``minimum``."""
    try:
        if isinstance(value, bool):
            raise TypeError
        count = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{config}: {name} must be an int, got {value!r}") from None
    if count < minimum:
        raise ValueError(f"{config}: {name} must be at least {minimum}, got {count}")
    return int(count)


def _state(scheduler: LrScheduler, record: Mapping[str, int | float], key: str, low: int, high: float) -> int:
    """The int ``record[key]``, checked to lie in ``[low, high]``."""
    value = int(record[key])
    if not low <= value <= high:
        raise ValueError(
            f"{type(scheduler).__name__}.load_record: {key} must be in [{low}, {high}] for this "
            f"scheduler's settings, got {value}"
        )
    return value


def _initial_lr(config: str, value: object) -> float:
    """Burn's check of ``initial_lr``: in ``(0, 1]``."""
    lr = _number(config, "initial_lr", value)
    if not 0.0 < lr <= 1.0:
        raise ValueError(f"{config}: initial_lr must be greater than 0 and at most 1, got {value!r}")
    return lr


# -- linear ------------------------------------------------------------------------------------------
class LinearLrSchedulerConfig(Config):
    """Settings of a ``LinearLrScheduler``: from ``initial_lr`` (in ``(0, 1]``) to ``final_lr`` (in
    ``[0, 1]``) by equal changes over ``num_iters`` (>= 1) iterations, then ``final_lr`` forever.

    PyTorch's ``LinearLR(start_factor=initial_lr, end_factor=final_lr, total_iters=num_iters)`` on a base
    rate of 1 gives the same sequence.
    """

    initial_lr: float
    final_lr: float
    num_iters: int

    def init(self) -> LinearLrScheduler:
        """The scheduler (``ValueError`` for a setting out of its range)."""
        return LinearLrScheduler(self)


class LinearLrScheduler(LrScheduler):
    """Returns ``initial_lr`` at the first step, then changes it by a constant amount each step until it
    reaches ``final_lr`` at step ``num_iters`` (counting from 0), where it stays.

    Example:
        >>> scheduler = LinearLrSchedulerConfig(0.9, 0.5, 4).init()
        >>> [round(scheduler.step(), 3) for _ in range(6)]
        [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]
    """

    def __init__(self, config: LinearLrSchedulerConfig) -> None:
        name = type(config).__name__
        initial_lr = _initial_lr(name, config.initial_lr)
        self.final_lr = _number(name, "final_lr", config.final_lr)
        if not 0.0 <= self.final_lr <= 1.0:
            raise ValueError(f"{name}: final_lr must be at least 0 and at most 1, got {config.final_lr!r}")
        self.num_iters = num_iters = _count(name, "num_iters", config.num_iters, 1)
        self.step_size = (self.final_lr - initial_lr) / num_iters
        # the first step decrements this to num_iters, where final_lr - step_size * num_iters is initial_lr
        self.remaining_iters = num_iters + 1

    def step(self) -> float:
        """The learning rate of this iteration."""
        if self.remaining_iters > 0:
            self.remaining_iters -= 1
        return self.final_lr - self.step_size * self.remaining_iters

    def into_record(self) -> LrSchedulerRecord:
        """``{"remaining_iters": n}``."""
        return {"remaining_iters": self.remaining_iters}

    def _load(self, record: Mapping[str, int | float]) -> None:
        self.remaining_iters = _state(self, record, "remaining_iters", 0, self.num_iters + 1)


# -- cosine annealing --------------------------------------------------------------------------------
class CosineAnnealingLrSchedulerConfig(Config):
    """Settings of a ``CosineAnnealingLrScheduler``.

    Args:
        initial_lr: the learning rate at the start of each cycle, in ``(0, 1]``.
        num_iters: the number of iterations from ``initial_lr`` down to ``min_lr`` (>= 1); a cycle is
            ``num_iters + 1`` steps, the two ends included.
        min_lr: the learning rate at the end of each cycle, in ``[0, initial_lr]``.
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def init(self) -> CosineAnnealingLrScheduler:
        """The scheduler (``ValueError`` for a setting out of its range)."""
        return CosineAnnealingLrScheduler(self)


class CosineAnnealingLrScheduler(LrScheduler):
    """Cosine annealing with warm restarts (SGDR, https://arxiv.org/abs/1608.03983), as Burn's:
    step ``k`` of a cycle (``k = 0 .. num_iters``) returns
    ``min_lr + (initial_lr - min_lr) * (1 + cos(pi * k / num_iters)) / 2``, then the next cycle restarts at
    ``initial_lr``.

    Each cycle is PyTorch's ``CosineAnnealingLR(T_max=num_iters, eta_min=min_lr)`` over its first
    ``num_iters + 1`` rates. PyTorch's ``CosineAnnealingWarmRestarts(T_0)`` differs: its cycles of
    ``T_0`` steps stop one step short of ``eta_min``.

    Example:
        >>> scheduler = CosineAnnealingLrSchedulerConfig(0.5, 2, min_lr=0.1).init()
        >>> [round(scheduler.step(), 3) for _ in range(4)]
        [0.5, 0.3, 0.1, 0.5]
    """

    def __init__(self, config: CosineAnnealingLrSchedulerConfig) -> None:
        name = type(config).__name__
        self.max_lr = _initial_lr(name, config.initial_lr)
        self.min_lr = _number(name, "min_lr", config.min_lr)
        if not 0.0 <= self.min_lr <= self.max_lr:
            raise ValueError(
                f"{name}: min_lr must be at least 0 and at most equal to the initial learning rate "
                f"({self.max_lr}), got {config.min_lr!r}"
            )
        self.num_iters = _count(name, "num_iters", config.num_iters, 1)
        self.current_iter = -1  # before the first step

    def step(self) -> float:
        """The learning rate of this iteration."""
        self.current_iter = (self.current_iter + 1) % (self.num_iters + 1)
        cosine = math.cos(math.pi * self.current_iter / self.num_iters)
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + cosine)

    def into_record(self) -> LrSchedulerRecord:
        """``{"current_iter": k}``: the position in the current cycle (-1 before the first step)."""
        return {"current_iter": self.current_iter}

    def _load(self, record: Mapping[str, int | float]) -> None:
        self.current_iter = _state(self, record, "current_iter", -1, self.num_iters)


# -- exponential -------------------------------------------------------------------------------------
class ExponentialLrSchedulerConfig(Config):
    """Settings of an ``ExponentialLrScheduler``: ``initial_lr`` in ``(0, 1]`` and ``gamma`` in
    ``(0, 1]``, the factor applied at every step."""

    initial_lr: float
    gamma: float

    def init(self) -> ExponentialLrScheduler:
        """The scheduler (``ValueError`` for a setting out of its range)."""
        return ExponentialLrScheduler(self)


class ExponentialLrScheduler(LrScheduler):
    """Step ``k`` (from 0) returns ``initial_lr * gamma**k`` (PyTorch's ``ExponentialLR``).

    Example:
        >>> scheduler = ExponentialLrSchedulerConfig(0.8, 0.5).init()
        >>> [scheduler.step() for _ in range(3)]
        [0.8, 0.4, 0.2]
    """

    def __init__(self, config: ExponentialLrSchedulerConfig) -> None:
        name = type(config).__name__
        initial_lr = _initial_lr(name, config.initial_lr)
        self.gamma = _number(name, "gamma", config.gamma)
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"{name}: gamma must be greater than 0 and at most 1, got {config.gamma!r}")
        # one step before the first: the first step multiplies it back to initial_lr
        self.previous_lr = initial_lr / self.gamma

    def step(self) -> float:
        """The learning rate of this iteration."""
        self.previous_lr *= self.gamma
        return self.previous_lr

    def into_record(self) -> LrSchedulerRecord:
        """``{"previous_lr": lr}``: the rate the last step returned."""
        return {"previous_lr": self.previous_lr}

    def _load(self, record: Mapping[str, int | float]) -> None:
        previous_lr = float(record["previous_lr"])
        if not math.isfinite(previous_lr):
            raise ValueError(
                f"ExponentialLrScheduler.load_record: previous_lr must be finite, got {previous_lr}"
            )
        self.previous_lr = previous_lr


# -- step --------------------------------------------------------------------------------------------
class StepLrSchedulerConfig(Config):
    """Settings of a ``StepLrScheduler``.

    Args:
        initial_lr: the learning rate of the first ``step_size`` iterations.
        step_size: how many iterations each rate lasts (>= 1).
        gamma: the factor applied after every ``step_size`` iterations.

    As in Burn, an ``initial_lr`` that is not positive or a ``gamma`` outside ``(0, 1)`` is allowed
    (useful when debugging) but logged as a warning.
    """

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def init(self) -> StepLrScheduler:
        """The scheduler.

        Raises:
            ValueError: ``step_size`` is below 1, or a number is not finite.
        """
        return StepLrScheduler(self)


class StepLrScheduler(LrScheduler):
    """Step ``k`` (from 0) returns ``initial_lr * gamma**(k // step_size)`` (PyTorch's ``StepLR``).

    Example:
        >>> scheduler = StepLrSchedulerConfig(0.5, 2, gamma=0.1).init()
        >>> [round(scheduler.step(), 3) for _ in range(5)]
        [0.5, 0.5, 0.05, 0.05, 0.005]
    """

    def __init__(self, config: StepLrSchedulerConfig) -> None:
        name = type(config).__name__
        self.init_lr = _number(name, "initial_lr", config.initial_lr)
        self.step_size = _count(name, "step_size", config.step_size, 1)
        self.gamma = _number(name, "gamma", config.gamma)
        if self.init_lr <= 0.0:
            _log.warning(
                "%s: initial learning rate %s is not a positive number; ignore this if it is intended",
                name,
                self.init_lr,
            )
        if not 0.0 < self.gamma < 1.0:
            _log.warning("%s: gamma %s is out of (0, 1); ignore this if it is intended", name, self.gamma)
        self.iter_idx = -1  # before the first step

    def step(self) -> float:
        """The learning rate of this iteration."""
        self.iter_idx += 1
        return float(self.init_lr * self.gamma ** (self.iter_idx // self.step_size))

    def into_record(self) -> LrSchedulerRecord:
        """``{"iter_idx": k}``: the index of the last step (-1 before the first)."""
        return {"iter_idx": self.iter_idx}

    def _load(self, record: Mapping[str, int | float]) -> None:
        self.iter_idx = _state(self, record, "iter_idx", -1, math.inf)


# -- Noam --------------------------------------------------------------------------------------------
class NoamLrSchedulerConfig(Config):
    """Settings of a ``NoamLrScheduler``.

    Args:
        factor: the overall scale of the learning rate.
        warmup_steps: the number of steps of linear increase before the decay (>= 1).
        model_size: the model (embedding) size ``d_model`` (>= 1).
    """

    factor: float
    warmup_steps: int = 4000
    model_size: int = 512

    def init(self) -> NoamLrScheduler:
        """The scheduler.

        Raises:
            ValueError: ``warmup_steps`` or ``model_size`` is below 1, or ``factor`` is not finite.
        """
        return NoamLrScheduler(self)


class NoamLrScheduler(LrScheduler):
    """The schedule of "Attention Is All You Need" (https://arxiv.org/abs/1706.03762): step ``n`` (from 1)
    returns ``factor * model_size**-0.5 * min(n**-0.5, n * warmup_steps**-1.5)``, rising linearly for
    ``warmup_steps`` steps then decaying as ``1 / sqrt(n)``.

    PyTorch has no ``NoamLR``; its ``LambdaLR`` with that function of ``epoch + 1`` gives the same rates.
    """

    def __init__(self, config: NoamLrSchedulerConfig) -> None:
        name = type(config).__name__
        self.factor = _number(name, "factor", config.factor)
        self.warmup_steps = _count(name, "warmup_steps", config.warmup_steps, 1)
        self.model_size = _count(name, "model_size", config.model_size, 1)
        self.step_count = 0

    def step(self) -> float:
        """The learning rate of this iteration."""
        self.step_count += 1
        n = float(self.step_count)
        return float(self.factor * self.model_size**-0.5 * min(n**-0.5, n * self.warmup_steps**-1.5))

    def into_record(self) -> LrSchedulerRecord:
        """``{"step": n}``: the number of steps taken."""
        return {"step": self.step_count}

    def _load(self, record: Mapping[str, int | float]) -> None:
        self.step_count = _state(self, record, "step", 0, math.inf)
