"""Collectives over tensors on several devices, as Burn's distributed API: ``all_reduce`` with a sum or
a mean.

Two forms, over one backend op (``Backend.float_all_reduce``, which a backend with a fast path such as
NCCL overrides):

- ``all_reduce(tensors, op)``: one thread holds every device's tensor and gets every result back.
  Differentiable on an autodiff backend: the gradient of a sum (mean) all-reduce is the sum (mean)
  all-reduce of the outputs' gradients.
- ``ProcessGroup``: one process per device (started by ``python -m burn_train.launch``), possibly on
  several machines; each calls ``group.all_reduce(tensor, op)`` (``Backend.float_all_reduce_processes``:
  NCCL on Cuda, the group's host transport elsewhere).
- ``CollectiveGroup(devices)``: one thread per device, as in data-parallel training; each calls
  ``group.all_reduce(tensor, op)`` with its own tensor and blocks until every device of the group has
  called, then gets its device's result. Groups are reusable: the calls of each round meet in order.

Example:
    >>> from burn_backend import Tensor, distributed
    >>> from burn_backend.distributed import ReduceOperation
    >>> from burn_ndarray import NdArray
    >>> from burn_router import Router
    >>> backend = Router(NdArray(), NdArray())  # two CPU devices
    >>> a = Tensor.from_data([1.0, 2.0], backend.device(0))
    >>> b = Tensor.from_data([3.0, 6.0], backend.device(1))
    >>> [t.tolist() for t in distributed.all_reduce([a, b], ReduceOperation.MEAN)]
    [[2.0, 4.0], [2.0, 4.0]]
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ._device import Device
from ._dtype import Kind
from ._ops.distributed import ReduceOperation
from ._process_group import ProcessGroup
from ._tensor import Tensor

__all__ = ["CollectiveGroup", "ProcessGroup", "ReduceOperation", "all_reduce"]


def all_reduce(tensors: Sequence[Tensor], op: ReduceOperation = ReduceOperation.SUM) -> list[Tensor]:
    """Combine one tensor per device by ``op`` and give the result back on each device.

    Args:
        tensors: Float tensors of one shape and dtype, on distinct devices of one backend.
        op: ``ReduceOperation.SUM`` or ``ReduceOperation.MEAN``.

    Returns:
        One tensor per input, on its device, all holding the combined values.

    Raises:
        ValueError: no tensor, or two on one device, or shapes or dtypes that differ.
        TypeError: a tensor that is not Float, devices of different backends, or ``op`` not a
            ``ReduceOperation``.

    Example:
        >>> total, = all_reduce([Tensor.from_data([1.0, 2.0])])
    """
    tensors = list(tensors)
    _check("all_reduce", tensors, op)
    backend = tensors[0].device.backend
    outputs = backend.float_all_reduce([t.primitive for t in tensors], op)
    return [tensor._new(output) for tensor, output in zip(tensors, outputs)]


def _check(name: str, tensors: list[Tensor], op: object) -> None:
    if not isinstance(op, ReduceOperation):
        raise TypeError(f"{name}: expected a ReduceOperation (SUM or MEAN), got {op!r}")
    if not tensors:
        raise ValueError(f"{name}: expected at least one tensor")
    first = tensors[0]
    for tensor in tensors:
        if not isinstance(tensor, Tensor) or tensor.kind is not Kind.FLOAT:
            what = tensor.dtype if isinstance(tensor, Tensor) else type(tensor).__name__
            raise TypeError(f"{name}: expected Float tensors, got {what}")
        if tensor.device.backend != first.device.backend:
            raise TypeError(
                f"{name}: the tensors are on devices of different backends ({first.device}, {tensor.device})"
            )
        if tensor.shape != first.shape or tensor.dtype is not first.dtype:
            raise ValueError(
                f"{name}: every tensor must have one shape and dtype; got {list(first.shape)} {first.dtype} "
                f"and {list(tensor.shape)} {tensor.dtype}"
            )
    devices = [t.device for t in tensors]
    if len(set(devices)) != len(devices):
        raise ValueError(f"{name}: expected one tensor per device, got devices {[str(d) for d in devices]}")


class CollectiveGroup:
    """The devices of a collective, one thread each: ``all_reduce`` meets every device's call.

    Args:
        devices: the devices taking part (distinct, of one backend); each round, every one of them calls
            ``all_reduce`` once, from its own thread, with a tensor on it.
        timeout: seconds a call waits for the other devices before raising (``None``: forever).

    Example:
        >>> group = CollectiveGroup([device0, device1])  # doctest: +SKIP
        >>> # in device i's thread:
        >>> mean = group.all_reduce(grads_i, ReduceOperation.MEAN)  # doctest: +SKIP
    """

    def __init__(self, devices: Sequence[Device], timeout: float | None = 300.0) -> None:
        devices = list(devices)
        if not devices or len(set(devices)) != len(devices):
            raise ValueError(f"CollectiveGroup: expected distinct devices, got {[str(d) for d in devices]}")
        self.devices = devices
        self.timeout = timeout
        self._condition = threading.Condition()
        self._round = 0
        self._pending: dict[Device, Tensor] = {}
        self._op: ReduceOperation | None = None
        self._results: dict[int, dict[Device, Tensor] | BaseException] = {}

    def all_reduce(self, tensor: Tensor, op: ReduceOperation = ReduceOperation.SUM) -> Tensor:
        """This device's part of an all-reduce: blocks until every device of the group has called with
        the same ``op``, then returns the combined tensor on ``tensor``'s device.

        Raises:
            ValueError: ``tensor`` is not on a device of the group, or its device already called this
                round, or the devices disagree on ``op`` or on shapes.
            TimeoutError: the other devices did not call within ``timeout`` seconds.
        """
        device = tensor.device
        if device not in self.devices:
            raise ValueError(
                f"CollectiveGroup.all_reduce: {device} is not in the group {[str(d) for d in self.devices]}"
            )
        with self._condition:
            if device in self._pending:
                raise ValueError(f"CollectiveGroup.all_reduce: {device} called twice in one round")
            if self._pending and op is not self._op:
                raise ValueError(f"CollectiveGroup.all_reduce: {op} called while the round runs {self._op}")
            self._op = op
            self._pending[device] = tensor
            my_round = self._round
            if len(self._pending) == len(self.devices):
                ordered = [self._pending[d] for d in self.devices]
                self._pending = {}
                self._round += 1
                try:
                    outputs = all_reduce(ordered, op)
                    self._results[my_round] = dict(zip(self.devices, outputs))
                except BaseException as error:  # every waiting device sees the failure
                    self._results[my_round] = error
                self._condition.notify_all()
            elif not self._condition.wait_for(lambda: my_round in self._results, self.timeout):
                raise TimeoutError(
                    f"CollectiveGroup.all_reduce: {device} waited {self.timeout} s for "
                    f"{len(self.devices) - len(self._pending)} other device(s)"
                )
            result = self._results[my_round]
            if isinstance(result, BaseException):
                raise result
            value = result.pop(device)
            if not result:
                del self._results[my_round]
            return value
