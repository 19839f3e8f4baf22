"""``ProcessGroup``: the processes of one data-parallel run (one per device, possibly on several
machines), found through a rendezvous at rank 0's address, and the host transport they share.

Rank 0 listens on ``address:port``; every other rank connects to it, and each side proves it holds the
shared ``authkey`` by an HMAC challenge-response (``_rendezvous``). Rank 0 serves the connections at once,
each within its own deadline: a silent, garbled or unauthenticated connection is dropped with a warning
on the ``burn_backend.distributed`` logger, and the rendezvous goes on. Messages are raw bytes with a
small JSON header (``multiprocessing.connection``'s framing, never its pickling): a peer cannot make
another run code. The host all-reduce is a
star: rank 0 adds the ranks' arrays in rank order (every run adds in the same order, so results are
reproducible) and sends the result back. It carries what every backend can hand to the host (NdArray's
tensors, metric sums, NCCL's unique id); a backend with its own transport (NCCL on Cuda) overrides
``float_all_reduce_processes`` and uses the group only to meet.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from . import _rendezvous
from ._ops.distributed import ReduceOperation

__all__ = ["ProcessGroup"]

_ENVIRONMENT = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "AUTHKEY")
"""The variables a process's place in a run is read from, each ``BURN_<name>`` first, else ``<name>`` (the
names ``torchrun`` sets; ``BURN_AUTHKEY`` has no such fallback: no other launcher sets a key)."""


def _environment(name: str) -> str | None:
    """``BURN_<name>`` from the environment, else ``<name>`` (not for the key), else ``None``."""
    value = os.environ.get(f"BURN_{name}")
    if value is None and name != "AUTHKEY":
        value = os.environ.get(name)
    return value


class ProcessGroup:
    """The processes of a data-parallel run; each calls the same collectives in the same order.

    Args:
        rank: this process's rank, in ``[0, world_size)``; rank 0 hosts the rendezvous.
        world_size: the number of processes.
        address: rank 0's host name or IP address.
        port: the TCP port rank 0 listens on (the next one is left to a backend's own rendezvous,
            such as CuPy's for NCCL).
        authkey: the secret every process of the run shares (bytes or a hex string).
        timeout: seconds to wait for the other processes, at the rendezvous and in each collective.
        local_rank: this process's rank on its machine (which GPU it uses); ``rank`` by default.

    Raises:
        ValueError: a rank outside ``[0, world_size)`` or an empty ``authkey``; at rank 0, a process
            holding the key that claims a rank taken already or another world size.
        TimeoutError: the other processes did not meet within ``timeout`` seconds (rank 0 names the
            missing ranks).
        ConnectionError: rank 0 dropped this process (its key or world size is not the run's), or what
            listens at ``address:port`` does not hold the key.
        OSError: rank 0 cannot listen at ``address:port`` (the port is in use).

    Example:
        >>> group = ProcessGroup.from_environment()  # started by burn_train.launch  # doctest: +SKIP
        >>> mean = group.all_reduce(grads, ReduceOperation.MEAN)  # doctest: +SKIP
    """

    def __init__(
        self,
        rank: int,
        world_size: int,
        address: str = "127.0.0.1",
        port: int = 29500,
        authkey: bytes | str = b"",
        timeout: float = 300.0,
        local_rank: int | None = None,
    ) -> None:
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(
                f"ProcessGroup: rank {rank} is outside [0, {world_size}) (world size {world_size})"
            )
        try:
            key = bytes.fromhex(authkey) if isinstance(authkey, str) else bytes(authkey)
        except ValueError:  # the key itself is not repeated: messages end up in logs
            raise ValueError(
                f"ProcessGroup: the authkey string ({len(authkey)} characters) is not hexadecimal"
            ) from None
        if world_size > 1 and not key:
            raise ValueError("ProcessGroup: processes of a run must share a non-empty authkey")
        self.rank, self.world_size = int(rank), int(world_size)
        self.local_rank = self.rank if local_rank is None else int(local_rank)
        self.address, self.port, self.timeout = address, int(port), float(timeout)
        self._lock = threading.Lock()
        self._peers: list[Connection] = []  # rank 0: ranks 1..n-1, in order; others: rank 0
        self._extensions: dict[str, Any] = {}
        self._sender: ThreadPoolExecutor | None = None  # runs the collectives started by *_async
        self._sender_thread: int | None = None
        self._last: Future[Any] | None = None
        if world_size > 1:
            try:
                self._meet(key)
            except BaseException:
                self.close()
                raise

    @classmethod
    def from_environment(cls, timeout: float = 300.0) -> ProcessGroup:
        """The group described by the variables ``burn_train.launch`` sets: ``BURN_RANK``,
        ``BURN_LOCAL_RANK``, ``BURN_WORLD_SIZE``, ``BURN_MASTER_ADDR``, ``BURN_MASTER_PORT`` and
        ``BURN_AUTHKEY``; where a ``BURN_`` name is not set, the name without the prefix, as
        ``torchrun`` and cluster schedulers set them (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
        ``MASTER_ADDR``, ``MASTER_PORT``). The key has no such fallback.

        Raises:
            RuntimeError: a variable is missing (the process was not started by the launcher), or one
                is not a number where a number is expected.
        """
        values = {name: _environment(name) for name in (*_ENVIRONMENT, "LOCAL_RANK")}
        missing = [f"BURN_{name}" for name in _ENVIRONMENT if values[name] is None]
        if missing:
            raise RuntimeError(
                f"ProcessGroup.from_environment: {', '.join(missing)} not set; start the run with "
                "`python -m burn_train.launch --nproc-per-node N script.py`"
            )
        try:
            rank, world_size, port = (
                int(values[name] or "") for name in ("RANK", "WORLD_SIZE", "MASTER_PORT")
            )
            local_rank = int(values["LOCAL_RANK"] or rank)
        except ValueError:
            shown = {name: values[name] for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")}
            raise RuntimeError(f"ProcessGroup.from_environment: expected integers, got {shown}") from None
        return cls(
            rank, world_size, str(values["MASTER_ADDR"]), port, str(values["AUTHKEY"]), timeout, local_rank
        )

    @staticmethod
    def new_authkey() -> str:
        """A fresh random key (hex) for a run's processes to share."""
        return secrets.token_hex(16)

    def _meet(self, key: bytes) -> None:
        if self.rank == 0:
            sockets = _rendezvous.host(self.address, self.port, self.world_size, key, self.timeout)
        else:
            sockets = [
                _rendezvous.join(self.address, self.port, self.rank, self.world_size, key, self.timeout)
            ]
        self._peers = [self._connection(sock) for sock in sockets]

    @staticmethod
    def _connection(sock: socket.socket) -> Connection:
        """The collectives' framing over a met peer's socket. Small messages go at once: with Nagle's
        algorithm, a header followed by a small payload waits for the peer's delayed acknowledgement
        (40 ms on Linux) in every collective."""
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return Connection(sock.detach())

    # -- collectives ---------------------------------------------------------------------------------
    def all_reduce(self, tensor: Any, op: ReduceOperation = ReduceOperation.SUM) -> Any:
        """This process's part of an all-reduce: every process of the group calls it with a Float
        tensor of one shape and dtype, and gets the combined values on its tensor's device.

        Args:
            tensor: a Float ``Tensor`` on this process's device.
            op: ``ReduceOperation.SUM`` or ``ReduceOperation.MEAN``.

        Returns:
            A ``Tensor`` on ``tensor``'s device. Differentiable on an autodiff backend (the gradient is
            the same all-reduce of the result's gradient, which every process computes in its backward).

        Raises:
            TypeError: ``tensor`` is not a Float tensor or ``op`` not a ``ReduceOperation``.
            ValueError: the processes disagree on the shape, dtype or ``op``.

        Example:
            >>> mean = group.all_reduce(grads, ReduceOperation.MEAN)  # doctest: +SKIP
        """
        self._check("all_reduce", tensor, op)
        self._drain()
        return self._all_reduce_now(tensor, op)

    def all_reduce_async(self, tensor: Any, op: ReduceOperation = ReduceOperation.SUM) -> Future[Any]:
        """Start this process's part of an all-reduce and return at once; the future gives the result
        (as ``all_reduce`` would) or raises what it raised.

        The group's collectives run in the order they are called, whether started here or called
        directly (a direct call first waits for the started ones), so every process must start and
        call them in one order. Not differentiable: it is meant for gradients after ``backward``.

        Raises:
            TypeError: as ``all_reduce``.

        Example:
            >>> started = [group.all_reduce_async(g, ReduceOperation.MEAN) for g in buckets]  # doctest: +SKIP
            >>> means = [future.result() for future in started]  # doctest: +SKIP
        """
        self._check("all_reduce_async", tensor, op)
        tensor.device.backend.flush(tensor.device)  # a lazy backend's pending work is this thread's
        with self._lock:
            if self._sender is None:
                self._sender = ThreadPoolExecutor(
                    1, thread_name_prefix="burn-collective", initializer=self._name_sender
                )
            future = self._sender.submit(self._all_reduce_now, tensor, op)
            self._last = future
        return future

    def _name_sender(self) -> None:
        self._sender_thread = threading.get_ident()

    def _drain(self) -> None:
        """Wait for the collectives started by ``*_async`` (in the caller's thread; the sender's own
        calls are next in line already)."""
        last = self._last
        if last is not None and threading.get_ident() != self._sender_thread:
            wait_for([last])

    @staticmethod
    def _check(name: str, tensor: Any, op: Any) -> None:
        from ._dtype import Kind
        from ._tensor import Tensor

        if not isinstance(op, ReduceOperation):
            raise TypeError(f"ProcessGroup.{name}: expected a ReduceOperation (SUM or MEAN), got {op!r}")
        if not isinstance(tensor, Tensor) or tensor.kind is not Kind.FLOAT:
            what = tensor.dtype if isinstance(tensor, Tensor) else type(tensor).__name__
            raise TypeError(f"ProcessGroup.{name}: expected a Float tensor, got {what}")

    def _all_reduce_now(self, tensor: Any, op: ReduceOperation) -> Any:
        return tensor._new(tensor.device.backend.float_all_reduce_processes(tensor.primitive, op, self))

    def all_reduce_array(self, array: np.ndarray[Any, Any], op: ReduceOperation) -> np.ndarray[Any, Any]:
        """Combine every process's ``array`` (one shape and dtype everywhere) by ``op``; each process
        gets the result. Rank 0 adds in rank order, so the result is the same in every run.

        Raises:
            ValueError: the processes disagree on the shape, dtype or ``op`` (raised in every process).
            TimeoutError, ConnectionError: a process did not call, or died.
        """
        array = np.ascontiguousarray(array)
        if op is ReduceOperation.MEAN and array.dtype.kind != "f":
            raise ValueError(f"all_reduce across processes: a MEAN needs floats, got {array.dtype}")
        if self.world_size == 1:
            alone: np.ndarray[Any, Any] = array.copy()
            return alone
        header = {"shape": list(array.shape), "dtype": array.dtype.str, "op": op.value}
        self._drain()
        with self._lock:
            if self.rank != 0:
                peer = self._peers[0]
                self._send(peer, header, array)
                reply, payload = self._receive(peer)
                if "error" in reply:
                    raise ValueError(reply["error"])
                result: np.ndarray[Any, Any] = np.frombuffer(payload, array.dtype).reshape(array.shape).copy()
                return result
            total: np.ndarray[Any, Any] = array.copy()
            error = None
            for rank, peer in enumerate(self._peers, start=1):
                theirs, payload = self._receive(peer)
                if theirs != header:
                    error = error or (
                        f"all_reduce across processes: rank {rank} sent {theirs['shape']} {theirs['dtype']} "
                        f"({theirs['op']}), rank 0 {header['shape']} {header['dtype']} ({header['op']})"
                    )
                    continue
                total += np.frombuffer(payload, array.dtype).reshape(array.shape)
            if error is None and op is ReduceOperation.MEAN:
                total /= self.world_size
            for peer in self._peers:
                self._send(peer, {"error": error} if error else header, total)
            if error:
                raise ValueError(error)
            return total

    def broadcast_bytes(self, data: bytes) -> bytes:
        """Rank 0's ``data``, given to every process (the others pass anything, such as ``b""``)."""
        if self.world_size == 1:
            return data
        self._drain()
        with self._lock:
            if self.rank == 0:
                for peer in self._peers:
                    self._send(peer, {"bytes": len(data)}, data)
                return data
            _, payload = self._receive(self._peers[0])
            return payload

    def barrier(self) -> None:
        """Wait until every process has called ``barrier``."""
        self.all_reduce_array(np.zeros(1, np.int64), ReduceOperation.SUM)

    def extension(self, name: str, make: Any) -> Any:
        """A backend's per-group object (a NCCL communicator), made once by ``make()``."""
        with self._lock:
            if name not in self._extensions:
                self._extensions[name] = make()
            return self._extensions[name]

    def _send(self, peer: Connection, header: dict[str, Any], payload: Any) -> None:
        peer.send_bytes(json.dumps(header).encode())
        peer.send_bytes(
            payload.reshape(-1).view(np.uint8).data if isinstance(payload, np.ndarray) else payload
        )

    def _peer_rank(self, peer: Connection) -> int:
        """The rank at the other end of ``peer``: rank 0 holds one connection to each other rank, in rank
        order; every other rank holds one, to rank 0."""
        return self._peers.index(peer) + 1 if self.rank == 0 else 0

    def _receive(self, peer: Connection) -> tuple[dict[str, Any], bytes]:
        if not peer.poll(self.timeout):
            raise TimeoutError(
                f"ProcessGroup: rank {self.rank} waited {self.timeout} s for rank {self._peer_rank(peer)}"
            )
        try:
            header = json.loads(peer.recv_bytes(1 << 16))
            payload = peer.recv_bytes()
        except EOFError:
            raise ConnectionError(
                f"ProcessGroup: rank {self.rank} lost rank {self._peer_rank(peer)} of the run (its "
                "connection closed: the process ended or its machine cannot be reached); the run cannot "
                "go on"
            ) from None
        return header, payload

    def close(self) -> None:
        """Close the connections (the group cannot be used afterwards)."""
        if self._sender is not None:
            self._sender.shutdown(wait=True, cancel_futures=True)
            self._sender = None
        for peer in self._peers:
            peer.close()
        self._peers = []

    def __repr__(self) -> str:
        return f"ProcessGroup(rank={self.rank}, world_size={self.world_size}, {self.address}:{self.port})"
