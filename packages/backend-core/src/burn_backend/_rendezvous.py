"""The rendezvous of a ``ProcessGroup``: rank 0 listens, every other rank connects and both prove they
hold the run's key.

The handshake is an HMAC-SHA256 challenge-response in fixed-size messages (nothing is allocated from a
length a peer sent, nothing is unpickled):

1. rank 0 sends ``MAGIC + its nonce`` (40 bytes);
2. the joining rank sends ``MAGIC + rank + world size + its nonce + HMAC(key, "client" + rank 0's nonce
   + the rest of the message)`` (80 bytes);
3. rank 0 checks the HMAC (``hmac.compare_digest``) and answers ``HMAC(key, "server" + the joining
   rank's nonce + its own nonce + rank)`` (32 bytes), which the joining rank checks in turn.

Both nonces are fresh for each connection, so a recorded handshake cannot be replayed, and the two
directions are labelled differently, so one side's proof cannot be reflected back as the other's.

Rank 0 serves every connection at once from one ``selectors`` loop of non-blocking sockets: a peer that
stays silent, sends garbage or proves nothing is dropped (with a logged warning) when its own handshake
deadline passes or its message is checked, and never delays the others. A process that authenticated
but disagrees on the run (a rank taken twice, another world size) is a misconfigured run, not a
stranger, and stops the rendezvous with a ``ValueError``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import secrets
import selectors
import socket
import struct
import time

__all__ = ["host", "join"]

logger = logging.getLogger("burn_backend.distributed")

MAGIC = b"BURNRDV1"
_NONCE = 32
_HELLO = struct.Struct(f">8s{_NONCE}s")  # magic, rank 0's nonce
_CLAIM = struct.Struct(f">8sII{_NONCE}s32s")  # magic, rank, world size, nonce, HMAC
_PROOF = 32  # rank 0's HMAC
HANDSHAKE_TIMEOUT_S = 10.0  # one connection's time to complete its part; a real rank needs milliseconds
MAX_PENDING = 64  # connections in handshake at once; more are closed (a real rank then connects again)


def _mac(key: bytes, label: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, label + b"".join(parts), hashlib.sha256).digest()


def _claim_mac(key: bytes, server_nonce: bytes, rank: int, world_size: int, nonce: bytes) -> bytes:
    return _mac(key, b"burn-rendezvous client", server_nonce, struct.pack(">II", rank, world_size), nonce)


def _proof(key: bytes, server_nonce: bytes, nonce: bytes, rank: int) -> bytes:
    return _mac(key, b"burn-rendezvous server", nonce, server_nonce, struct.pack(">I", rank))


class _Pending:
    """One connection in its handshake at rank 0: what is left to send, what has come, its deadline."""

    def __init__(self, sock: socket.socket, peer: str, deadline: float) -> None:
        self.sock, self.peer, self.deadline = sock, peer, deadline
        self.nonce = secrets.token_bytes(_NONCE)
        self.outgoing = _HELLO.pack(MAGIC, self.nonce)
        self.incoming = b""
        self.rank: int | None = None  # set once the claim is proved; the proof is then in ``outgoing``


def host(address: str, port: int, world_size: int, key: bytes, timeout: float) -> list[socket.socket]:
    """Rank 0's side: listen on ``address:port`` until ranks ``1 .. world_size - 1`` have proved they
    hold ``key``, or ``timeout`` seconds have passed.

    Returns:
        The connected, blocking sockets of ranks ``1 .. world_size - 1``, in rank order.

    Raises:
        TimeoutError: some ranks did not complete the handshake in time (they are named).
        ValueError: an authenticated process claimed a rank taken already, outside the run, or another
            world size.
        OSError: the address cannot be listened on (the port is in use).
    """
    deadline = time.monotonic() + timeout
    listener = socket.create_server((address, port), backlog=max(world_size, 16))
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    pending: dict[socket.socket, _Pending] = {}
    found: dict[int, socket.socket] = {}
    try:
        while len(found) < world_size - 1:
            now = time.monotonic()
            if now >= deadline:
                missing = [rank for rank in range(1, world_size) if rank not in found]
                raise TimeoutError(
                    f"ProcessGroup: rank 0 waited {timeout} s at {address}:{port} for {world_size - 1} "
                    f"other process(es); rank(s) {', '.join(map(str, missing))} did not join"
                )
            for state in [s for s in pending.values() if s.deadline <= now]:
                _drop(selector, pending, state, f"completed no handshake within {HANDSHAKE_TIMEOUT_S} s")
            wake = min([deadline, *(state.deadline for state in pending.values())])
            for selected, events in selector.select(max(0.0, wake - now)):
                if selected.data is None:
                    _accept(listener, selector, pending, min(deadline, now + HANDSHAKE_TIMEOUT_S))
                    continue
                state = selected.data
                if state.sock not in pending:  # dropped earlier in this round
                    continue
                _serve(selector, pending, found, state, events, key, world_size)
    except BaseException:
        for sock in found.values():
            sock.close()
        raise
    finally:
        for state in list(pending.values()):
            _drop(selector, pending, state, None)
        selector.close()
        listener.close()
    ranks = [found[rank] for rank in range(1, world_size)]
    for sock in ranks:
        sock.setblocking(True)
    return ranks


def _accept(
    listener: socket.socket,
    selector: selectors.BaseSelector,
    pending: dict[socket.socket, _Pending],
    deadline: float,
) -> None:
    while True:
        try:
            sock, address = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:  # the peer reset its connection before it was accepted
            logger.warning("ProcessGroup rendezvous: a connection failed while accepted (%s)", error)
            continue
        peer = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
        if len(pending) >= MAX_PENDING:
            logger.warning(
                "ProcessGroup rendezvous: closed the connection from %s, %d others being in their handshake",
                peer, len(pending),
            )  # fmt: skip
            sock.close()
            continue
        sock.setblocking(False)
        state = _Pending(sock, peer, deadline)
        pending[sock] = state
        selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, state)


def _serve(
    selector: selectors.BaseSelector,
    pending: dict[socket.socket, _Pending],
    found: dict[int, socket.socket],
    state: _Pending,
    events: int,
    key: bytes,
    world_size: int,
) -> None:
    """Move one connection's handshake on by what its socket is ready for."""
    try:
        if events & selectors.EVENT_WRITE and state.outgoing:
            state.outgoing = state.outgoing[state.sock.send(state.outgoing) :]
        if events & selectors.EVENT_READ and state.rank is None and len(state.incoming) < _CLAIM.size:
            chunk = state.sock.recv(_CLAIM.size - len(state.incoming))
            if not chunk:
                _drop(selector, pending, state, "closed the connection during the handshake")
                return
            state.incoming += chunk
            if not MAGIC.startswith(state.incoming[: len(MAGIC)]):
                _drop(selector, pending, state, "sent bytes that are not a rendezvous message")
                return
    except (BlockingIOError, InterruptedError):
        return
    except OSError as error:
        _drop(selector, pending, state, f"failed during the handshake ({error})")
        return
    if state.rank is None and len(state.incoming) == _CLAIM.size and not state.outgoing:
        _check_claim(selector, pending, found, state, key, world_size)
        return
    if state.rank is not None and not state.outgoing:  # the proof is sent: the rank has joined
        selector.unregister(state.sock)
        del pending[state.sock]
        found[state.rank] = state.sock
        return
    reading = state.rank is None and len(state.incoming) < _CLAIM.size
    wanted = (selectors.EVENT_WRITE if state.outgoing else 0) | (selectors.EVENT_READ if reading else 0)
    selector.modify(state.sock, wanted, state)


def _check_claim(
    selector: selectors.BaseSelector,
    pending: dict[socket.socket, _Pending],
    found: dict[int, socket.socket],
    state: _Pending,
    key: bytes,
    world_size: int,
) -> None:
    _, rank, theirs, nonce, mac = _CLAIM.unpack(state.incoming)  # the magic is checked as it comes
    if not hmac.compare_digest(mac, _claim_mac(key, state.nonce, rank, theirs, nonce)):
        _drop(selector, pending, state, "failed authentication (it does not hold the run's key)")
        return
    if theirs != world_size or not 0 < rank < world_size or rank in found:
        what = (
            f"a world size of {theirs}, this run's being {world_size}"
            if theirs != world_size
            else f"rank {rank}, {'taken already' if rank in found else f'outside [1, {world_size})'}"
        )
        raise ValueError(f"ProcessGroup: a process of the run at {state.peer} claimed {what}")
    state.rank = rank
    state.outgoing = _proof(key, state.nonce, nonce, rank)
    selector.modify(state.sock, selectors.EVENT_WRITE, state)


def _drop(
    selector: selectors.BaseSelector, pending: dict[socket.socket, _Pending], state: _Pending, why: str | None
) -> None:
    """Close a connection in its handshake (with a warning, unless the rendezvous is over)."""
    if why is not None:
        logger.warning("ProcessGroup rendezvous: dropped the connection from %s: it %s", state.peer, why)
    with contextlib.suppress(KeyError, ValueError):
        selector.unregister(state.sock)
    pending.pop(state.sock, None)
    state.sock.close()


def join(address: str, port: int, rank: int, world_size: int, key: bytes, timeout: float) -> socket.socket:
    """A joining rank's side: connect to rank 0 (retrying until it listens) and prove ``key`` both ways.

    Returns:
        The connected, blocking socket to rank 0.

    Raises:
        TimeoutError: no rank 0 completed the handshake within ``timeout`` seconds.
        ConnectionError: rank 0 dropped this process (its key or world size is not the run's), or what
            listens at ``address:port`` is not a rank 0 holding the key.
    """
    deadline = time.monotonic() + timeout
    where = f"{address}:{port}"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"ProcessGroup: rank {rank} found no rank 0 at {where} within {timeout} s")
        try:
            sock = socket.create_connection((address, port), timeout=remaining)
        except OSError:  # not listening yet
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
            continue
        try:
            hello = _receive(sock, _HELLO.size, deadline)
            if hello is None:  # closed before its greeting: rank 0 was busy; connect again
                sock.close()
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
                continue
            magic, server_nonce = _HELLO.unpack(hello)
            if magic != MAGIC:
                raise ConnectionError(f"ProcessGroup: rank {rank}: what listens at {where} is no rank 0")
            nonce = secrets.token_bytes(_NONCE)
            mac = _claim_mac(key, server_nonce, rank, world_size, nonce)
            sock.settimeout(max(1e-3, deadline - time.monotonic()))
            sock.sendall(_CLAIM.pack(MAGIC, rank, world_size, nonce, mac))
            proof = _receive(sock, _PROOF, deadline)
            if proof is None:
                raise ConnectionError(
                    f"ProcessGroup: rank 0 at {where} dropped rank {rank} in the handshake: this "
                    "process's authkey or world size is not the run's, or rank 0 stopped (its log says why)"
                )
            if not hmac.compare_digest(proof, _proof(key, server_nonce, nonce, rank)):
                raise ConnectionError(
                    f"ProcessGroup: what listens at {where} did not prove it holds the run's key"
                )
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as error:
            sock.close()
            raise ConnectionError(
                f"ProcessGroup: rank 0 at {where} closed rank {rank}'s connection in the handshake ({error})"
            ) from None
        except TimeoutError:
            sock.close()
            raise TimeoutError(
                f"ProcessGroup: rank {rank} did not complete its handshake with rank 0 at {where} "
                f"within {timeout} s"
            ) from None
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)
        return sock


def _receive(sock: socket.socket, size: int, deadline: float) -> bytes | None:
    """Exactly ``size`` bytes, or ``None`` when the peer closes first; ``TimeoutError`` past ``deadline``."""
    data = b""
    while len(data) < size:
        sock.settimeout(max(1e-3, deadline - time.monotonic()))
        try:
            chunk = sock.recv(size - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return data
