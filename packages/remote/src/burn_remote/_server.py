"""The server: a WebSocket endpoint that runs the ops of each client session on one backend."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import ssl as ssl_module
import threading
from types import TracebackType

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server as WsServer
from websockets.sync.server import ServerConnection
from websockets.sync.server import serve as ws_serve

from burn_backend import Backend
from burn_backend._registry import backend_from_name

from ._errors import ProtocolError
from ._protocol import PROTOCOL_VERSION
from ._session import Limits, ServerSession
from ._wire import TensorHead, make_default, pack, receive_bodies, send_bodies, unpack

logger = logging.getLogger("burn_remote")

_HELLO_TIMEOUT = 30.0
_BODY_TIMEOUT = 120.0  # between the chunks of one tensor's bytes


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``127.0.0.1``, ``::1``, ``localhost``).

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("0.0.0.0")
        (True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Server:
    """A remote-backend server: runs the ops of its clients' sessions on ``backend``.

    Each client gets a session with its own tensors (a client cannot name another's); a session ends
    when its client disconnects, and its tensors are freed. A frame that breaks the wire format or
    the limits closes that session with a logged reason; the server goes on serving the others.

    Args:
        backend: the backend that computes, or its stack name as ``BURN_DEVICE`` spells it
            (``"ndarray"``, ``"autodiff-cuda"``).
        host: the address to bind; loopback (``127.0.0.1``) by default. Any other address needs a
            ``token``.
        port: the port; 0 picks a free one (``server.port`` says which).
        token: the shared secret a client must present (compared in constant time).
        ssl: a TLS context (``ssl.SSLContext`` with the server's certificate) to serve ``wss://``.
        limits: the size limits (frame, tensor, session).

    Raises:
        ValueError: a non-loopback ``host`` without a token, or an empty token.
        OSError: the address cannot be bound.

    Example:
        >>> from burn_ndarray import NdArray
        >>> with Server(NdArray(), port=0) as server:
        ...     server.url.startswith("ws://127.0.0.1:")
        True
    """

    def __init__(
        self,
        backend: Backend | str,
        host: str = "127.0.0.1",
        port: int = 3000,
        *,
        token: str | None = None,
        ssl: ssl_module.SSLContext | None = None,
        limits: Limits | None = None,
    ) -> None:
        if token is not None and not token:
            raise ValueError("burn_remote.Server: the token is empty")
        if not is_loopback(host) and token is None:
            raise ValueError(
                f"burn_remote.Server: binding {host!r}, which other machines can reach, needs a token "
                "(token=..., or --token-file); only a loopback address may go without one"
            )
        self.backend = backend_from_name(backend) if isinstance(backend, str) else backend
        self.limits = limits or Limits()
        self._token = None if token is None else token.encode()
        self._tls = ssl is not None
        self._active = 0
        self._sessions: set[ServerSession] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._ws: WsServer = ws_serve(
            self._handle,
            host,
            port,
            ssl=ssl,
            compression=None,
            max_size=self.limits.frame_bytes,
            max_queue=4,
        )
        address = self._ws.socket.getsockname()
        self.host, self.port = host, int(address[1])

    @property
    def url(self) -> str:
        """The address clients connect to: ``ws://host:port`` (``wss://`` with TLS)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'wss' if self._tls else 'ws'}://{host}:{self.port}"

    @property
    def sessions(self) -> int:
        """How many client sessions are open."""
        return self._active

    @property
    def held_bytes(self) -> int:
        """The bytes of tensors the open sessions hold, all together."""
        with self._lock:
            return sum(session.held for session in self._sessions)

    def serve_forever(self) -> None:
        """Serve until ``shutdown`` (from another thread) or an interrupt."""
        self._ws.serve_forever()

    def start(self) -> Server:
        """Serve on a background thread; returns this server."""
        self._thread = threading.Thread(target=self.serve_forever, name="burn-remote-server", daemon=True)
        self._thread.start()
        return self

    def shutdown(self) -> None:
        """Stop serving and close every session."""
        self._ws.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.shutdown()

    # -- one client -------------------------------------------------------------------------------
    def _handle(self, ws: ServerConnection) -> None:
        peer = ws.remote_address
        with self._lock:
            full = self._active >= self.limits.sessions
            if not full:
                self._active += 1
        if full:
            logger.warning("burn_remote: refused %s: %d sessions already open", peer, self.limits.sessions)
            ws.close(1013, "too many sessions")
            return
        session = ServerSession(self.backend, self.limits)
        default = make_default(type(None), session.bodies)
        with self._lock:
            self._sessions.add(session)
        try:
            self._hello(ws)
            while True:
                heads: list[TensorHead] = []
                frame = unpack(ws.recv(), heads)
                room = min(self.limits.tensor_bytes, self.limits.session_bytes - session.held)
                receive_bodies(lambda: ws.recv(timeout=_BODY_TIMEOUT), heads, room)
                answer = session.run(frame)
                if answer is not None:
                    ws.send(pack(answer, default))
                    send_bodies(ws.send, session.bodies)
        except ProtocolError as error:
            logger.warning("burn_remote: closed the session of %s: %s", peer, error)
            ws.close(1008, str(error)[:120])
        except ConnectionClosed:
            pass
        except TimeoutError:
            logger.warning("burn_remote: closed the session of %s: no hello in time", peer)
            ws.close(1008, "no hello in time")
        except Exception as error:
            logger.exception("burn_remote: the session of %s failed", peer)
            ws.close(1011, f"server error: {type(error).__name__}"[:120])
        finally:
            session.close()
            with self._lock:
                self._sessions.discard(session)
                self._active -= 1

    def _hello(self, ws: ServerConnection) -> None:
        hello = unpack(ws.recv(timeout=_HELLO_TIMEOUT))
        if not (isinstance(hello, list) and len(hello) == 3 and hello[0] == "hello"):
            raise ProtocolError("the first frame must be ['hello', version, token]")
        if hello[1] != PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {hello[1]!r:.20}; this server speaks {PROTOCOL_VERSION}")
        if self._token is not None:
            given = hello[2]
            if not isinstance(given, str) or not hmac.compare_digest(given.encode(), self._token):
                raise ProtocolError("token mismatch")
        backend = self.backend
        info = {
            "devices": backend.device_count(),
            "float_dtype": backend.float_dtype.value,
            "int_dtype": backend.int_dtype.value,
            "stack": backend.stack_name,
            "validates": bool(backend.validates_index_values),
            "exclusions": dict(backend.conformance_exclusions),
            "frame_bytes": self.limits.frame_bytes,
            "tensor_bytes": self.limits.tensor_bytes,
        }
        ws.send(pack(["ok", [], info, None], make_default(type(None))))


def serve(
    backend: Backend | str,
    host: str = "127.0.0.1",
    port: int = 3000,
    *,
    token: str | None = None,
    ssl: ssl_module.SSLContext | None = None,
    limits: Limits | None = None,
) -> None:
    """Serve ``backend`` to remote clients until interrupted: Burn's ``server::start``.

    The arguments are ``Server``'s; see there for what is checked and refused.

    Example:
        In the server's process::

            import burn_remote
            burn_remote.serve("cuda", port=3000)

        and in the client's: ``Remote("ws://gpu-box:3000", token=...)`` (a non-loopback ``host``
        needs ``token=``).
    """
    server = Server(backend, host, port, token=token, ssl=ssl, limits=limits)
    logger.info("burn_remote: serving %s on %s", server.backend.stack_name, server.url)
    try:
        server.serve_forever()
    finally:
        server.shutdown()
