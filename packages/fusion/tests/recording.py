"""``RecordingNdArray``: NdArray with a step-capture hook, so that ``replay``'s capture, replay, copies,
lending and stores run on the CPU (CUDA graphs need a GPU, which CI does not have).

The capture works as a CUDA graph does, with the backend's calls in place of kernel launches:
``record`` logs every call the step makes on the backend (and on the plans it compiled), ``replay``
makes those calls again on the argument copies, with each recorded intermediate standing for the value
the call computes this time, and writes the results into the recorded output buffers. A read of a
value on the host while recording raises ``CaptureError``, as CuPy refuses device-to-host copies while
capturing. The generator is wound back after recording, since a CUDA graph draws nothing until its
first launch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from burn_backend import Device, TensorData
from burn_backend.kit import CaptureError
from burn_ndarray import NdArray

T = TypeVar("T")

_HOST_READS = ("float_into_data", "int_into_data", "bool_into_data")
_COMPILERS = ("compile_elementwise", "compile_fused")


class _Log:
    """The calls of one recording: ``(function, arguments, result)``, outermost calls only."""

    def __init__(self) -> None:
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...], Any]] = []
        self.depth = 0

    def call(self, function: Callable[..., Any], name: str, args: tuple[Any, ...]) -> Any:
        if self.depth:  # a call made by a logged call is made again by it
            return function(*args)
        if name in _HOST_READS:
            raise CaptureError(f"recording: {name} reads a value on the host")
        arguments = _copied(args)  # a plan may empty a list it was given
        self.depth += 1
        try:
            result = function(*args)
        finally:
            self.depth -= 1
        self.calls.append((function, arguments, result))
        return result


_active: list[_Log] = []


def _logged(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(*args: Any) -> Any:
        return _active[-1].call(function, name, args) if _active else function(*args)

    return call


def _copied(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)([_copied(item) for item in value])
    return value


class RecordingNdArray(NdArray):
    """NdArray whose ``step_capture`` records the backend calls of a step and replays them (for tests)."""

    # as a GPU backend: losses do not read class indices back to check them (a recorded step cannot)
    validates_index_values: ClassVar[bool] = False

    def __getattribute__(self, name: str) -> Any:
        attribute = super().__getattribute__(name)
        if name.startswith("_") or not callable(attribute) or isinstance(attribute, type):
            return attribute
        if name in _COMPILERS:
            return _compiling(attribute)
        return _logged(attribute, name)

    def step_capture(self, device: Device) -> RecordedStep:
        return RecordedStep(self, device)

    # a read copies, as a read from a GPU does: a replay later writes into the recorded output buffers,
    # which NdArray's reads would otherwise return as they are
    def float_into_data(self, tensor: Any) -> TensorData:
        return TensorData._wrap(super().float_into_data(tensor).to_numpy().copy())

    def int_into_data(self, tensor: Any) -> TensorData:
        return TensorData._wrap(super().int_into_data(tensor).to_numpy().copy())

    def bool_into_data(self, tensor: Any) -> TensorData:
        return TensorData._wrap(super().bool_into_data(tensor).to_numpy().copy())


def _compiling(compile_block: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(compile_block)
    def compile_logged(*args: Any) -> Any:
        plan = compile_block(*args)
        return None if plan is None else _logged(plan, "plan")

    return compile_logged


class RecordedStep:
    """A ``StepCapture`` over the calls of a step on ``RecordingNdArray``."""

    def __init__(self, backend: RecordingNdArray, device: Device) -> None:
        self.generator = backend.generator(device)
        self.log: _Log | None = None
        self.statics: list[np.ndarray] = []
        self.outputs: list[np.ndarray] = []
        self.replays = 0

    def static_copy(self, primitive: np.ndarray) -> np.ndarray:
        copy = np.array(primitive, copy=True)
        self.statics.append(copy)
        return copy

    def output(self, primitive: np.ndarray) -> np.ndarray:
        assert _active, "output is called while recording"
        # an argument returned as it is, a view of one, or a read-only view: a buffer of its own
        if not primitive.flags.writeable or any(np.shares_memory(primitive, s) for s in self.statics):
            primitive = _active[-1].call(np.copy, "copy", (primitive,))
        self.outputs.append(primitive)
        return primitive

    def record(self, body: Callable[[], T]) -> T:
        if self.log is not None:
            raise RuntimeError("recording: this step capture has already recorded its step")
        log = _Log()
        state = self.generator.bit_generator.state
        _active.append(log)
        try:
            result = body()
        finally:
            _active.pop()
            self.generator.bit_generator.state = state  # recording draws nothing: the replay does
        self.log = log
        return result

    def copy_into(self, targets: Sequence[np.ndarray], sources: Sequence[np.ndarray]) -> None:
        for target, source in zip(targets, sources, strict=True):
            np.copyto(target, source)

    def replay(self) -> None:
        if self.log is None:
            raise RuntimeError("recording: this step capture has not recorded a step")
        now: dict[int, Any] = {}
        for function, arguments, result in self.log.calls:
            _bind(now, result, function(*_current(now, arguments)))
        for output in self.outputs:
            value = now.get(id(output))
            if value is not None and value is not output:
                np.copyto(output, value)
        self.replays += 1

    def detach(self, primitive: np.ndarray) -> np.ndarray:
        return np.array(primitive, copy=True)

    def close(self) -> None:
        self.log = None
        self.statics = []
        self.outputs = []


def _current(now: dict[int, Any], value: Any) -> Any:
    """``value`` with each recorded array replaced by this replay's value of it."""
    if isinstance(value, np.ndarray):
        return now.get(id(value), value)
    if type(value) is tuple:
        return tuple(_current(now, item) for item in value)
    if isinstance(value, list):
        return type(value)([_current(now, item) for item in value])
    return value


def _bind(now: dict[int, Any], recorded: Any, value: Any) -> None:
    if isinstance(recorded, np.ndarray):
        now[id(recorded)] = value
    elif isinstance(recorded, (list, tuple)):
        for recorded_item, item in zip(recorded, value, strict=True):
            _bind(now, recorded_item, item)
