"""The client's session with a server: the pending frame of streamed ops, the batch of freed ids, and
the requests that wait for an answer."""

from __future__ import annotations

import contextlib
import ssl as ssl_module
import threading
from collections.abc import Sequence
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection, connect

from ._errors import ProtocolError, RemoteConnectionError, RemoteOpError, remote_op_error
from ._protocol import PROTOCOL_VERSION
from ._wire import TensorHead, make_default, pack, receive_bodies, send_bodies, unpack


class RemoteTensor:
    """A primitive of the remote backend: the id of a tensor in the server session, its device index,
    and its shape and dtype where the client knows them (else it asks the server on first use).

    Freed with the last reference: its id joins the next frame's batch of frees.
    """

    __slots__ = ("__weakref__", "_meta", "_session", "device_index", "id")

    def __init__(self, id: int, device_index: int, meta: Any, session: Session) -> None:
        self.id = id
        self.device_index = device_index
        self._meta = meta
        self._session = session

    @property
    def shape(self) -> tuple[int, ...]:
        """The dimensions (asks the server where the client could not work them out)."""
        meta = self._meta
        if meta is None:
            meta = self._session.resolve(self)
        return meta[0]  # type: ignore[no-any-return]

    @property
    def dtype(self) -> Any:
        """The ``DType`` (asks the server where the client could not work it out)."""
        meta = self._meta
        if meta is None:
            meta = self._session.resolve(self)
        return meta[1]

    def __del__(self) -> None:
        # only an append: it may run inside any op of any thread, with the session's lock held
        self._session.freed.append(self.id)

    def __repr__(self) -> str:
        meta = self._meta
        what = "shape pending" if meta is None else f"shape {list(meta[0])}, {meta[1]}"
        return f"RemoteTensor(id={self.id}, device={self.device_index}, {what})"


_ANSWER_BYTES = 1 << 20  # a pending frame this large (an upload) is sent at once


class Session:
    """One WebSocket connection to a server and the ids of the tensors it holds there."""

    def __init__(
        self,
        url: str,
        token: str | None,
        timeout: float,
        ssl: ssl_module.SSLContext | None,
        frame_ops: int,
        max_read_bytes: int,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.frame_ops = frame_ops
        self.freed: list[int] = []
        self.last_op = "(none)"
        self._ops: list[Any] = []
        self._pending_bytes = 0
        self._next_id = 1
        self._lock = threading.RLock()
        self._waiting: dict[int, tuple[RemoteTensor, str]] = {}  # results whose shape the server will say
        self._dead: RemoteConnectionError | None = None
        self._failures: dict[int, tuple[str, str]] = {}  # ids whose op failed: error kind, message
        self._bodies: list[Any] = []  # the bytes of large uploads, sent after their frame
        self._default = make_default(RemoteTensor, self._bodies)
        try:
            self._ws: ClientConnection = connect(
                url,
                ssl=ssl,
                compression=None,
                proxy=None,
                open_timeout=timeout,
                close_timeout=min(timeout, 2.0),
                max_size=max_read_bytes,
            )
            self._ws.__enter__()  # a connection held open across calls, as websockets 17.1 asks it said
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as error:
            raise RemoteConnectionError(f"{url}: cannot connect: {error}") from None
        self.info: dict[str, Any] = self._exchange(["hello", PROTOCOL_VERSION, token])

    # -- streaming --------------------------------------------------------------------------------
    def new_id(self, count: int = 1) -> int:
        """Reserve ``count`` consecutive ids; returns the first."""
        with self._lock:
            first = self._next_id
            self._next_id = first + count
            return first

    def record(self, name: str, base: int, args: Sequence[Any], want_meta: bool, size: int = 0) -> None:
        """Append the op ``name`` (results from id ``base``) to the pending frame; send the frame when
        it holds ``frame_ops`` ops or ``size`` bytes of uploads make it large."""
        if self._dead is not None:
            raise self._dead
        with self._lock:
            self._ops.append([name, base, args, want_meta])
            self.last_op = name
            self._pending_bytes += size
            if len(self._ops) >= self.frame_ops or self._pending_bytes >= _ANSWER_BYTES:
                self._send(None)

    def _send(self, request: Any) -> None:
        ops, self._ops = self._ops, []
        self._pending_bytes = 0
        count = len(self.freed)
        frees = self.freed[:count]
        del self.freed[:count]
        if self._failures:
            for id in frees:
                self._failures.pop(id, None)
        try:
            frame = pack(["f", ops, frees, request], self._default)
        except (TypeError, ValueError, OverflowError) as error:
            self._bodies.clear()
            names = ", ".join(sorted({op[0] for op in ops})) or "a request"
            raise TypeError(f"remote: an argument of {names} cannot travel: {error}") from None
        try:
            self._ws.send(frame)
            send_bodies(self._ws.send, self._bodies)
        except (ConnectionClosed, OSError) as error:
            raise self._die(f"the connection closed ({_why(error)})") from None

    def _die(self, why: str) -> RemoteConnectionError:
        self._dead = RemoteConnectionError(f"{self.url}: {why}; last op sent: {self.last_op}")
        with contextlib.suppress(Exception):  # the connection is gone already; the error says why
            self._ws.close()
        return self._dead

    # -- requests ---------------------------------------------------------------------------------
    def request(self, request: Any) -> Any:
        """Send the pending frame with ``request`` and wait for the answer (within the timeout).

        Raises:
            RemoteConnectionError: the server closed the session, died or did not answer in time.
            RemoteOpError: an op streamed since the last answer failed on the server.
        """
        if self._dead is not None:
            raise self._dead
        with self._lock:
            self._send(request)
            return self._receive()

    def _exchange(self, frame: Any) -> Any:
        try:
            self._ws.send(pack(frame, self._default))
        except (ConnectionClosed, OSError) as error:
            raise self._die(f"the connection closed ({_why(error)})") from None
        return self._receive()

    def _receive(self) -> Any:
        heads: list[TensorHead] = []
        try:
            reply = unpack(self._ws.recv(timeout=self.timeout), heads)
            receive_bodies(lambda: self._ws.recv(timeout=self.timeout), heads, 1 << 62)
        except TimeoutError:
            raise self._die(f"no answer within the timeout of {self.timeout} s") from None
        except (ConnectionClosed, OSError) as error:
            raise self._die(f"the connection closed ({_why(error)})") from None
        except ProtocolError as error:
            raise self._die(f"the server sent a frame this client does not understand: {error}") from None
        if not isinstance(reply, list) or len(reply) != 4 or reply[0] not in ("ok", "err"):
            raise self._die("the server sent a frame this client does not understand")
        self._take_metas(reply[1])
        if reply[0] == "err":
            raise remote_op_error(str(reply[2]), f"{self.url}: {reply[3]}")
        return reply[2]

    def _take_metas(self, metas: Any) -> None:
        from burn_backend import DType

        for id, shape, dtype, message in metas:
            waiting = self._waiting.pop(id, None)
            if shape is None:  # the op failed: its kind and message
                self._failures[id] = (dtype, message)
            elif waiting is not None:
                tensor, op = waiting
                meta = (tuple(shape), DType.of(dtype))
                if tensor._meta is not None and tensor._meta != meta:
                    raise AssertionError(
                        f"remote: {op}: the client worked out shape {list(tensor._meta[0])} "
                        f"and {tensor._meta[1]} for tensor {id}, the server made {list(shape)} and {meta[1]}"
                    )
                tensor._meta = meta

    def expect_meta(self, tensor: RemoteTensor, op: str) -> None:
        """Take the shape and dtype of ``tensor``, a result of ``op``, from the server's next answer."""
        self._waiting[tensor.id] = (tensor, op)

    def resolve(self, tensor: RemoteTensor) -> Any:
        """The shape and dtype of ``tensor``, asked of the server (sends the pending frame)."""
        if tensor.id not in self._failures:
            self.request(["meta"])
        failure = self._failures.get(tensor.id)
        if failure is not None:
            raise remote_op_error(failure[0], f"{self.url}: {failure[1]}")
        if tensor._meta is None:
            raise RemoteOpError(f"{self.url}: the server sent no shape for tensor {tensor.id}")
        return tensor._meta

    def close(self) -> None:
        """Close the connection; the server frees the session's tensors."""
        if self._dead is None:
            self._dead = RemoteConnectionError(f"{self.url}: this client was closed; last op: {self.last_op}")
            self._ws.close()


def _why(error: BaseException) -> str:
    if isinstance(error, ConnectionClosed):
        frame = error.rcvd or error.sent
        if frame is not None:
            return f"code {frame.code}{': ' + frame.reason if frame.reason else ''}"
        return "no close frame: the server died or the network dropped"
    return f"{type(error).__name__}: {error}"
