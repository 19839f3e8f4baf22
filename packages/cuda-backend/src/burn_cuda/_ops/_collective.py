"""Collectives through NCCL.

``float_all_reduce`` (one process, several GPUs): one communicator per GPU of the call, created once per
set of devices (``NcclCommunicator.initAll``), and one grouped ``allReduce`` per call on each device's
current stream. ``float_all_reduce_processes`` (one process per GPU): the communicator of CuPy's
process group (``cupyx.distributed.init_process_group``, whose rendezvous listens on the port after the
``ProcessGroup``'s), made once per group, on a side stream of its own: an event makes NCCL wait for the
kernels queued before the call, another makes the compute stream's later kernels wait for NCCL, and
nothing between waits (with ``all_reduce_async``, backward goes on while the gradients travel).

Where CuPy has no NCCL, or a dtype NCCL lacks (bf16 before NCCL 2.10), the interface's default (copies
through ``float_to_device``, or through the host) runs instead.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

from burn_backend import ReduceOperation
from burn_backend.array import ArrayBackend

from .._cupy import cp

Array = Any
_lock = threading.Lock()


@functools.cache
def _nccl() -> Any:
    """CuPy's NCCL module, or ``None`` where CuPy was built without NCCL."""
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    return nccl if getattr(nccl, "available", True) else None


@functools.cache
def _communicators(device_ids: tuple[int, ...]) -> list[Any]:
    """One communicator per device, ranks in the order given (created once: NCCL's set-up is slow)."""
    return list(_nccl().NcclCommunicator.initAll(list(device_ids)))


def _nccl_dtype(nccl: Any, dtype: Any) -> int | None:
    name = cp.dtype(dtype).name
    names = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16"}
    if name == "bfloat16":
        return getattr(nccl, "NCCL_BFLOAT16", None)
    return getattr(nccl, names[name]) if name in names else None


def nccl_all_reduce(tensors: Sequence[Array], op: ReduceOperation) -> list[Array] | None:
    """The all-reduce on NCCL, or ``None`` where NCCL cannot run it (no NCCL, a dtype it lacks, two
    tensors on one GPU). Each result is a new array on its input's GPU."""
    nccl = _nccl()
    if nccl is None:
        return None
    dtype = _nccl_dtype(nccl, tensors[0].dtype)
    device_ids = tuple(int(t.device.id) for t in tensors)
    if dtype is None or len(set(device_ids)) != len(device_ids):
        return None
    mean_in_nccl = op is ReduceOperation.MEAN and hasattr(nccl, "NCCL_AVG")
    reduce = nccl.NCCL_AVG if mean_in_nccl else nccl.NCCL_SUM
    with _lock:  # NCCL's grouped calls from two threads at once would interleave
        communicators = _communicators(device_ids)
        inputs, outputs = [], []
        for tensor, device_id in zip(tensors, device_ids):
            with cp.cuda.Device(device_id):
                source = cp.ascontiguousarray(tensor)
                inputs.append(source)
                outputs.append(cp.empty_like(source))
        nccl.groupStart()
        for communicator, source, out, device_id in zip(communicators, inputs, outputs, device_ids):
            with cp.cuda.Device(device_id):
                stream = cp.cuda.get_current_stream()
                communicator.allReduce(source.data.ptr, out.data.ptr, source.size, dtype, reduce, stream.ptr)
        nccl.groupEnd()
    if op is ReduceOperation.MEAN and not mean_in_nccl:
        for out, device_id in zip(outputs, device_ids):
            with cp.cuda.Device(device_id):
                out /= len(outputs)
    return [out.reshape(t.shape) for out, t in zip(outputs, tensors)]


class CollectiveOps:
    """Cuda's collectives: NCCL where it applies, the interface's default elsewhere."""

    def float_all_reduce(self, tensors: Sequence[Array], op: ReduceOperation) -> list[Array]:
        if len(tensors) > 1:
            reduced = nccl_all_reduce(tensors, op)
            if reduced is not None:
                return reduced
        return ArrayBackend.float_all_reduce(self, tensors, op)  # type: ignore[arg-type]

    def float_all_reduce_processes(self, tensor: Array, op: ReduceOperation, group: Any) -> Array:
        if group.world_size > 1 and cp.dtype(tensor.dtype).name in _PROCESS_DTYPES and _nccl() is not None:
            device_id = int(tensor.device.id)
            communicator = group.extension(
                f"cupyx-nccl:{device_id}", lambda: _process_communicator(group, device_id)
            )
            side = group.extension(f"cupy-side-stream:{device_id}", lambda: _side_stream(device_id))
            with cp.cuda.Device(device_id):
                compute = cp.cuda.get_current_stream()
                # allocated on the compute stream before the event: whatever last used this memory was
                # queued before it, so NCCL on the side stream writes only after that work
                source = cp.ascontiguousarray(tensor)
                out = cp.empty_like(source)
                side.wait_event(compute.record())  # the gradient's kernels, queued before, come first
                communicator.all_reduce(source, out, "sum", stream=side)
                compute.wait_event(side.record())  # what reads the result, queued after, waits for it
                if op is ReduceOperation.MEAN:
                    out /= group.world_size
            return out.reshape(tensor.shape)
        return ArrayBackend.float_all_reduce_processes(self, tensor, op, group)  # type: ignore[arg-type]


_PROCESS_DTYPES = ("float16", "float32", "float64")


def _side_stream(device_id: int) -> Any:
    """The stream this process's all-reduces run on: not the compute stream, so that backward's next
    kernels run while NCCL sends the gradients already done (events order the two streams)."""
    with cp.cuda.Device(device_id):
        return cp.cuda.Stream(non_blocking=True)


def _process_communicator(group: Any, device_id: int) -> Any:
    """CuPy's NCCL communicator for this process's GPU in ``group`` (every process makes its own)."""
    import cupyx.distributed

    with cp.cuda.Device(device_id):
        return cupyx.distributed.init_process_group(
            group.world_size, group.rank, host=group.address, port=group.port + 1
        )
