"""The metric vocabulary (Burn's ``burn_train::metric``): ``Metric`` and ``Numeric`` protocols,
``MetricMetadata``, ``MetricEntry``, ``NumericMetricState``, and reading metric inputs to the host with one
``Transaction`` per step."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from burn_backend import PendingRead, Tensor, Transaction

__all__ = [
    "Adaptor",
    "Metric",
    "MetricEntry",
    "MetricMetadata",
    "Numeric",
    "NumericMetricState",
    "adapt",
    "as_numpy",
    "to_host",
    "to_host_async",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


@dataclasses.dataclass(frozen=True)
class MetricMetadata:
    """What a metric may want to know about the step besides its input (Burn's ``MetricMetadata``).

    Attributes:
        progress: ``(items processed, items in the epoch)``.
        epoch: the epoch, from 1.
        epoch_total: the number of epochs of the run.
        iteration: the step in the epoch, from 1.
        lr: the learning rate of the last optimizer step, if any.
    """

    progress: tuple[int, int] = (0, 0)
    epoch: int = 1
    epoch_total: int = 1
    iteration: int = 1
    lr: float | None = None

    @classmethod
    def fake(cls) -> MetricMetadata:
        """Metadata for calling a metric outside a learner (tests, notebooks)."""
        return cls()


@dataclasses.dataclass(frozen=True)
class MetricEntry:
    """A metric's state after an update (Burn's ``MetricEntry``).

    Attributes:
        name: the metric's name (also its log file's name).
        formatted: the current value for display, e.g. ``"97.50 %"``.
        serialized: the line written to the metric's log file for this step.
        value: the value of this update (numeric metrics), else ``None``.
        running: the value over every update since the last ``clear`` (the epoch value so far).
        unit: the unit values are shown with (``"%"``, ``"GB"``, or empty).
        precision: the decimals values are shown with (negative: scientific notation).
    """

    name: str
    formatted: str
    serialized: str
    value: float | None = None
    running: float | None = None
    unit: str = ""
    precision: int = 2

    def format(self, value: float) -> str:
        """``value`` (another value of this metric, an epoch's say) shown as this entry's is."""
        return format_value(value, self.unit, self.precision)


@runtime_checkable
class Metric(Protocol[T_contra]):
    """A metric (Burn's ``Metric`` trait): updated with each step's input, cleared at each epoch's end.

    ``input_type`` (a class attribute) names the input the metric reads; the learner gets it from the
    step's output through the output's ``adapt`` (see ``Adaptor``). A metric that reads nothing (the
    learning rate, the CPU use) sets ``input_type = None`` and is given ``None``. Numeric metrics also
    implement ``Numeric``, which lets them be plotted, compared for checkpoints and early stopping.

    Example:
        A metric of the largest logit of each batch::

            class MaxLogit:
                input_type = AccuracyInput

                def __init__(self):
                    self.state = NumericMetricState()

                def name(self) -> str:
                    return "Max logit"

                def update(self, item, metadata):
                    value = float(as_numpy(item.outputs).max())
                    return self.state.update(value, 1, self.name(), precision=3)

                def clear(self) -> None:
                    self.state.reset()

                def value(self) -> float:
                    return self.state.value()

                def running_value(self) -> float:
                    return self.state.running_value()
    """

    def name(self) -> str:
        """The metric's name, unique among a learner's metrics."""
        ...

    def update(self, item: T_contra, metadata: MetricMetadata) -> MetricEntry:
        """Add one step's input; returns the entry to display and log."""
        ...

    def clear(self) -> None:
        """Forget the accumulated state (at the end of each epoch)."""
        ...


@runtime_checkable
class Numeric(Protocol):
    """A metric with a number for a value (Burn's ``Numeric``): plotted, and usable for best-checkpoint
    selection and early stopping."""

    def value(self) -> float:
        """The value of the last update."""
        ...

    def running_value(self) -> float:
        """The value over every update since the last ``clear`` (the epoch's value)."""
        ...


class Adaptor(Protocol):
    """A step output that metrics can read (Burn's ``Adaptor`` trait): ``adapt(input_type)`` returns
    the input of that type (``AccuracyInput``, ``LossInput``, ...) or raises ``TypeError``."""

    def adapt(self, input_type: type[T]) -> T:
        """The metric input of ``input_type`` built from this output."""
        ...


def adapt(output: Any, metric: Any) -> Any:
    """The input ``metric`` reads from a step ``output``.

    Raises:
        TypeError: the output cannot make the metric's input (naming both).
    """
    if not hasattr(metric, "input_type"):
        return output
    input_type = metric.input_type
    if input_type is None:
        return None
    if isinstance(output, input_type):
        return output
    adapter = getattr(output, "adapt", None)
    if adapter is None:
        raise TypeError(
            f"metric {metric.name()}: the step output {type(output).__name__} has no adapt() to make a "
            f"{input_type.__name__}"
        )
    return adapter(input_type)


def as_numpy(value: Any) -> np.ndarray:
    """``value`` (a tensor, an array or numbers) as a NumPy array on the host: what a metric calls on
    its input's fields (arrays already when the learner read them, tensors when called directly).

    Example:
        >>> as_numpy([1.0, 2.0]).tolist()
        [1.0, 2.0]
    """
    if isinstance(value, Tensor):
        return value.to_data().to_numpy()
    return np.asarray(value)


def to_host(inputs: Sequence[Any]) -> list[Any]:
    """The metric inputs with every tensor field (of dataclass inputs) replaced by its NumPy array, all
    read with one ``Transaction``: one wait on an asynchronous device per step, not one per metric.

    Inputs that are not dataclasses are passed through unchanged; the same tensor object is read once.
    """
    return to_host_async(inputs).wait()


def _without(item: Any, names: Iterable[str]) -> Any:
    """A shallow copy of the dataclass ``item`` with the fields ``names`` set to ``None``."""
    copied = copy.copy(item)
    for name in names:
        object.__setattr__(copied, name, None)  # frozen dataclasses too
    return copied


def to_host_async(inputs: Sequence[Any]) -> PendingRead[list[Any]]:
    """``to_host``'s reads started (``Transaction.execute_async``): ``wait()`` gives the inputs with
    their arrays. A device that runs behind the host copies them after the work queued so far, and
    the host waits only when it asks for them, so the next step can be queued first."""
    transaction = Transaction()
    slots: dict[int, int] = {}
    for item in inputs:
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            for field in dataclasses.fields(item):
                value = getattr(item, field.name)
                if isinstance(value, Tensor) and id(value) not in slots:
                    slots[id(value)] = len(slots)
                    transaction.register(value)
    if not slots:
        return PendingRead.ready(list(inputs))
    read = transaction.execute_async()
    fields = [
        {
            field.name: slots[id(getattr(item, field.name))]
            for field in dataclasses.fields(item)
            if isinstance(getattr(item, field.name), Tensor)
        }
        if dataclasses.is_dataclass(item) and not isinstance(item, type)
        else None
        for item in inputs
    ]
    # what is kept until the wait holds no tensor, so that the step's outputs are released now (a
    # replayed step's outputs live in the recording's buffers, copied out when held into the next)
    kept = [item if slots_of is None else _without(item, slots_of) for item, slots_of in zip(inputs, fields)]

    def finish() -> list[Any]:
        datas = [data.to_numpy() for data in read.wait()]
        converted: list[Any] = []
        for item, slots_of in zip(kept, fields):
            if slots_of:
                changes = {name: datas[slot] for name, slot in slots_of.items()}
                item = dataclasses.replace(item, **changes)
            converted.append(item)
        return converted

    return PendingRead(finish)


class NumericMetricState:
    """The running state of a numeric metric (Burn's ``NumericMetricState``): the last value, and a mean
    of the values since ``reset`` weighted by their batch sizes.

    Example:
        >>> state = NumericMetricState()
        >>> _ = state.update(2.0, 1, "Loss")
        >>> entry = state.update(4.0, 3, "Loss")
        >>> entry.value, entry.running
        (4.0, 3.5)
    """

    def __init__(self) -> None:
        self._value = math.nan
        self._sum = 0.0
        self._count = 0

    def update(
        self, value: float, batch_size: int, name: str, *, unit: str = "", precision: int = 2
    ) -> MetricEntry:
        """Record ``value`` (of a batch of ``batch_size`` items); returns the entry to display and log
        (serialized as ``"value,batch_size"``)."""
        value = float(value)
        self._value = value
        if batch_size > 0 and not math.isnan(value):
            self._sum += value * batch_size
            self._count += batch_size
        return MetricEntry(
            name,
            format_value(value, unit, precision),
            f"{value!r},{int(batch_size)}",
            value,
            self.running_value(),
            unit,
            precision,
        )

    def value(self) -> float:
        """The last value."""
        return self._value

    def running_value(self) -> float:
        """The batch-size-weighted mean since ``reset`` (NaN before any update)."""
        return self._sum / self._count if self._count else math.nan

    def reset(self) -> None:
        """Forget every value."""
        self._value, self._sum, self._count = math.nan, 0.0, 0


def format_value(value: float, unit: str = "", precision: int = 2) -> str:
    """``value`` with ``precision`` decimals (negative: scientific notation with ``-precision``) and its
    unit (``"97.50 %"``)."""
    if math.isnan(value):
        text = "nan"
    elif precision < 0:
        text = f"{value:.{-precision}e}"
    else:
        text = f"{value:.{precision}f}"
    return f"{text} {unit}".rstrip()
