"""The step-capture hook: how a backend records a step's device work once and replays it.

A backend that can record the work it launches and run it again without the host (CUDA graphs on
burn-cuda) defines ``step_capture(device)`` (the name in ``CAPTURE_HOOK``), returning a ``StepCapture``
or ``None`` where it cannot capture on that device. ``burn_fusion.replay`` drives it: the step's inputs
are copied into buffers of the capture (``static_copy``), the step runs once under ``record`` (nothing
executes; every buffer it allocates comes from memory private to the capture, so nothing else is ever
placed where a replay writes), and each later call copies its inputs into those buffers
(``copy_into``) and calls ``replay``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

CAPTURE_HOOK = "step_capture"
"""The optional backend method ``step_capture(device) -> StepCapture | None``."""


class CaptureError(RuntimeError):
    """The work of a step could not be recorded (it read a value on the host, or called something the
    backend cannot record); nothing was recorded, and the step is to run eagerly."""


class StepCapture(Protocol):
    """One step's recorded device work on one device, and the memory it owns (primitives are the
    backend's own)."""

    def static_copy(self, primitive: Any) -> Any:
        """A copy of ``primitive`` in the capture's private memory (an input buffer of the step)."""
        ...

    def record(self, body: Callable[[], T]) -> T:
        """Run ``body`` with the device work it launches recorded, not executed, its allocations from
        the capture's private memory; return what ``body`` returned. Raises ``CaptureError`` (nothing
        recorded) where the work cannot be recorded; any other error of ``body`` propagates."""
        ...

    def output(self, primitive: Any) -> Any:
        """Called in ``record``'s body for each output of the step: ``primitive``, or a copy recorded in
        the step where it shares memory with an argument copy (which the next call refills)."""
        ...

    def copy_into(self, targets: Sequence[Any], sources: Sequence[Any]) -> None:
        """Copy each source's values into its target (same shape and dtype), ordered before a replay
        (one call for every argument of a step: a backend can batch the copies)."""
        ...

    def replay(self) -> None:
        """Run the recorded work again, after the work launched before it."""
        ...

    def detach(self, primitive: Any) -> Any:
        """A copy of ``primitive`` outside the capture's memory (for an output still in use when the
        next replay overwrites it)."""
        ...

    def close(self) -> None:
        """Release the recording and the private memory (every primitive in it must be dead)."""
        ...
