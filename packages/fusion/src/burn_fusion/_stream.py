"""Streams: the lazy op queues of ``Fusion``, one per device and per thread."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from burn_backend import Device

    from ._executor import Executor
    from ._tensor import Node

MAX_PENDING = 256
"""A stream holding this many ops runs them without waiting for a read: it bounds the memory that
pending ops keep alive (their inputs) and the size of a signature."""


class PendingOp:
    """One recorded op: an op (element-wise, cast, reduction, matmul) on values of the stream
    (``args``), with its scalars (the interface's arguments after the tensors), making ``out``.

    ``key`` is what the relative signature keeps of the scalars: their number, or for ops whose scalars
    shape the plan (a reduction's dim, a cast's dtype) a value naming them."""

    __slots__ = ("args", "key", "name", "out", "scalars")

    def __init__(
        self, name: str, args: tuple[Node, ...], scalars: tuple[Any, ...], out: Node, key: Any = None
    ) -> None:
        self.name = name
        self.args = args
        self.scalars = scalars
        self.out = out
        self.key = len(scalars) if key is None else key


class Stream:
    """The ops recorded on one device by one thread, not yet run.

    ``execute`` hands them to the executor (which fuses, caches and runs them) and empties the queue.
    Another thread may execute a stream (to read a value it made): a lock keeps recording and
    executing apart.

    Args:
        executor: what runs the ops (shared by every stream of one ``Fusion`` backend).
        device: the Fusion device the stream computes on.
        inner_device: the inner backend's device behind it.
    """

    def __init__(self, executor: Executor, device: Device, inner_device: Device) -> None:
        self.executor = executor
        self.device = device
        self.inner_device = inner_device
        self.ops: list[PendingOp] = []
        self.lock = threading.Lock()
        self.thread = threading.get_ident()
        """The thread that records into it."""

    def record(self, op: PendingOp) -> None:
        """Queue ``op``; run the queue when it is full."""
        with self.lock:
            ops = self.ops
            ops.append(op)
            full = len(ops) >= MAX_PENDING
        if full:
            self.execute()

    def execute(self) -> None:
        """Run every pending op, so that every live value of the stream is computed."""
        with self.lock:
            ops = self.ops
            if not ops:
                return
            self.ops = []
            try:
                self.executor.run(ops, self.inner_device)
            except BaseException as error:
                failed = FailedStream(error)
                for op in ops:
                    if op.out.value is None:
                        op.out.stream = failed  # type: ignore[assignment]
                raise

    def __len__(self) -> int:
        return len(self.ops)


class FailedStream:
    """Where the values of a stream whose execution raised now point: reading one raises that error."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def execute(self) -> None:
        """Raise the error the execution raised."""
        raise RuntimeError(f"fusion: the ops computing this value failed: {self.error!r}") from self.error
