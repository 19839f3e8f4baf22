"""``DistributedOps``: collective operations over tensors on several devices of one backend; every method
has a default.

Burn's ``DistributedBackend`` has each device's thread call ``all_reduce`` with its own tensor. Here the
backend op takes the devices' tensors together (one call, one list), which is what a backend's fast path
needs (NCCL's grouped calls over the communicators of one process); the rendezvous of the devices'
threads is written once, in ``burn_backend.distributed.CollectiveGroup``, over this op.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from .._data import TensorData

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype


class ReduceOperation(enum.Enum):
    """How a collective combines the devices' tensors (Burn's ``ReduceOperation``)."""

    SUM = "sum"
    """The element-wise sum over the devices."""
    MEAN = "mean"
    """The element-wise mean over the devices (the sum divided by their number)."""


class DistributedOps:
    """The collective op group; every method has a default built from the float ops and
    ``float_to_device``, so any backend with several devices (or a router over several backends) runs
    it. Backends with a faster path (NCCL on Cuda) override it.
    """

    def float_all_reduce(self, tensors: Sequence[P], op: ReduceOperation) -> list[P]:
        """All-reduce: every device's tensor combined by ``op``, the result given back on each device.

        Args:
            tensors: Float primitives of one shape and dtype, one per device, on distinct devices.
            op: how to combine them.

        Returns:
            One primitive per input, on that input's device, each holding the combined values.

        Default: the tensors moved to the first one's device and added in order (so every device gets
        bit-identical values), divided by their number for ``MEAN``, and the result moved back to each
        device.
        """
        backend: Any = self
        if len(tensors) == 1:
            return [tensors[0]]  # primitives are never mutated: the input is the result
        home = backend.float_device(tensors[0])
        total = tensors[0]
        for tensor in tensors[1:]:
            total = backend.float_add(total, backend.float_to_device(tensor, home))
        if op is ReduceOperation.MEAN:
            total = backend.float_div_scalar(total, float(len(tensors)))
        return [total] + [backend.float_to_device(total, backend.float_device(t)) for t in tensors[1:]]

    def float_all_reduce_processes(self, tensor: P, op: ReduceOperation, group: Any) -> P:
        """This process's part of an all-reduce over the processes of a ``ProcessGroup``: every process
        calls it with a tensor of one shape and dtype, and each gets the combined values.

        Args:
            tensor: a Float primitive on this process's device.
            op: how to combine the processes' tensors.
            group: the ``burn_backend.distributed.ProcessGroup`` of the run.

        Returns:
            A primitive on ``tensor``'s device holding the combined values.

        Default: through the host (``float_into_data``, the group's transport, ``float_from_data``).
        """
        backend: Any = self
        if group.world_size == 1:
            return tensor
        data = backend.float_into_data(tensor)
        combined = group.all_reduce_array(data.to_numpy(), op)
        return backend.float_from_data(TensorData(combined), backend.float_device(tensor))
