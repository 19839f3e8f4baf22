"""The rendezvous of ``ProcessGroup`` against hostile or broken peers on loopback: silent connections,
garbage, a wrong key, a missing rank, a fake rank 0. Ranks run as threads; every wait is bounded."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import numpy as np
import pytest

from burn_backend import _rendezvous
from burn_backend.distributed import ProcessGroup, ReduceOperation

KEY = "5eed" * 8


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Rank(threading.Thread):
    """One rank's ``ProcessGroup`` made in a thread; ``body(group)``'s result (or the error) kept."""

    def __init__(self, rank: int, world: int, port: int, key: str = KEY, timeout: float = 10.0,
                 body: Callable[[ProcessGroup], Any] | None = None) -> None:  # fmt: skip
        super().__init__(daemon=True)
        self.args_ = (rank, world, "127.0.0.1", port, key, timeout)
        self.body = body
        self.result: Any = None
        self.error: BaseException | None = None
        self.met_after: float | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            group = ProcessGroup(*self.args_)
        except BaseException as error:
            self.error = error
            return
        self.met_after = time.monotonic() - started
        try:
            self.result = self.body(group) if self.body is not None else None
        except BaseException as error:
            self.error = error
        finally:
            group.close()

    def finish(self) -> None:
        self.join(30)
        assert not self.is_alive(), "the rank did not finish"


def _sum(group: ProcessGroup) -> Any:
    mine = np.random.default_rng(group.rank).standard_normal(5)
    return mine, group.all_reduce_array(mine, ReduceOperation.SUM)


def _listening(port: int, caplog: pytest.LogCaptureFixture | None = None) -> None:
    """Wait until rank 0 listens (a refused connection is no test of the rendezvous); with ``caplog``,
    until rank 0 has logged the dropped probe, and forget it."""
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "rank 0 never listened"
            time.sleep(0.02)
    if caplog is not None:
        _wait_for(caplog, "dropped the connection from")
        caplog.clear()


@contextmanager
def _silent(port: int) -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        yield sock
    finally:
        sock.close()


def _assert_closed(sock: socket.socket) -> None:
    """Rank 0 has closed ``sock`` (a reset when it left bytes unread)."""
    with suppress(ConnectionResetError):
        assert sock.recv(64) == b""


def _wait_for(caplog: pytest.LogCaptureFixture, text: str) -> None:
    deadline = time.monotonic() + 10
    while text not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert text in caplog.text


def _check_sums(ranks: list[_Rank]) -> None:
    for rank in ranks:
        assert rank.error is None, rank.error
    expected = np.sum([rank.result[0] for rank in ranks], axis=0, dtype=np.float64)
    for rank in ranks:
        np.testing.assert_allclose(rank.result[1], expected, rtol=1e-12)


def test_a_silent_connection_does_not_hold_the_ranks_up() -> None:
    port = _port()
    ranks = [_Rank(r, 3, port, body=_sum) for r in range(3)]
    ranks[0].start()
    _listening(port)
    with _silent(port), _silent(port):  # connected before the real ranks, never a byte sent
        for rank in ranks[1:]:
            rank.start()
        for rank in ranks:
            rank.finish()
    _check_sums(ranks)
    # the default handshake deadline is 10 s: the ranks met while the silent ones still had theirs
    assert ranks[0].met_after is not None
    assert ranks[0].met_after < _rendezvous.HANDSHAKE_TIMEOUT_S / 2


def test_a_silent_connection_is_dropped_at_its_own_deadline(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_rendezvous, "HANDSHAKE_TIMEOUT_S", 0.2)
    caplog.set_level(logging.WARNING, "burn_backend.distributed")
    port = _port()
    ranks = [_Rank(r, 2, port, body=_sum) for r in range(2)]
    ranks[0].start()
    _listening(port, caplog)
    with _silent(port) as silent:
        hello = silent.recv(64)
        assert hello.startswith(_rendezvous.MAGIC)
        _assert_closed(silent)  # by rank 0, after 0.2 s
        _wait_for(caplog, "completed no handshake within 0.2 s")
    ranks[1].start()
    for rank in ranks:
        rank.finish()
    _check_sums(ranks)


def test_wrong_key_and_garbage_peers_are_dropped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "burn_backend.distributed")
    port = _port()
    ranks = [_Rank(r, 3, port, body=_sum) for r in range(3)]
    ranks[0].start()
    _listening(port, caplog)
    intruder = _Rank(1, 3, port, key="0bad", timeout=5)
    intruder.start()
    intruder.finish()
    assert isinstance(intruder.error, ConnectionError)
    assert "authkey or world size is not the run's" in str(intruder.error)
    _wait_for(caplog, "failed authentication")
    with _silent(port) as garbage:
        garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 4)
        assert garbage.recv(64).startswith(_rendezvous.MAGIC)
        _assert_closed(garbage)
    _wait_for(caplog, "sent bytes that are not a rendezvous message")
    with _silent(port) as short:  # the right start, then gone (the greeting read: no reset)
        assert short.recv(64).startswith(_rendezvous.MAGIC)
        short.sendall(_rendezvous.MAGIC + b"\x00\x00")
    _wait_for(caplog, "closed the connection during the handshake")
    for rank in ranks[1:]:
        rank.start()
    for rank in ranks:
        rank.finish()
    _check_sums(ranks)


def test_a_missing_rank_times_out_at_the_deadline_despite_silent_peers() -> None:
    port = _port()
    ranks = [_Rank(r, 3, port, timeout=1.0) for r in range(2)]
    started = time.monotonic()
    ranks[0].start()
    _listening(port)
    with _silent(port):  # its own handshake deadline (10 s) is cut to the rendezvous's
        ranks[1].start()
        for rank in ranks:
            rank.finish()
    elapsed = time.monotonic() - started
    assert isinstance(ranks[0].error, TimeoutError)
    assert "rank 0 waited 1.0 s" in str(ranks[0].error)
    assert "rank(s) 2 did not join" in str(ranks[0].error)
    assert 0.9 < elapsed < 2.5  # the deadline, not the silent peer's 10 s


def test_a_crowd_of_silent_connections_delays_a_rank_only_until_their_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_rendezvous, "HANDSHAKE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(_rendezvous, "MAX_PENDING", 2)
    port = _port()
    ranks = [_Rank(r, 2, port, body=_sum) for r in range(2)]
    ranks[0].start()
    _listening(port)
    with _silent(port), _silent(port):  # every handshake slot taken: rank 1 is closed, and retries
        ranks[1].start()
        for rank in ranks:
            rank.finish()
    _check_sums(ranks)


def test_a_run_member_that_disagrees_stops_rank_0_with_a_clear_error() -> None:
    port = _port()
    host = _Rank(0, 3, port, timeout=5)
    host.start()
    _listening(port)
    other = _Rank(1, 2, port, timeout=5)  # the key, but another world size
    other.start()
    host.finish()
    other.finish()
    assert isinstance(host.error, ValueError)
    assert "claimed a world size of 2, this run's being 3" in str(host.error)
    assert isinstance(other.error, ConnectionError)

    port = _port()
    ranks = [_Rank(r, 3, port, timeout=5) for r in (0, 1, 1)]
    ranks[0].start()
    _listening(port)
    ranks[1].start()
    ranks[1].finish()
    ranks[2].start()
    for rank in ranks:
        rank.finish()
    assert isinstance(ranks[0].error, ValueError)
    assert "claimed rank 1, taken already" in str(ranks[0].error)


def _fake_rank_0(port: int, greeting: bytes, answer: Callable[[bytes], bytes] | None) -> threading.Thread:
    server = socket.create_server(("127.0.0.1", port))

    def serve() -> None:
        with server, server.accept()[0] as sock:
            sock.sendall(greeting)
            if answer is not None:
                claim = _rendezvous._receive(sock, _rendezvous._CLAIM.size, time.monotonic() + 5)
                assert claim is not None
                sock.sendall(answer(claim))
            _rendezvous._receive(sock, 1 << 20, time.monotonic() + 5)  # until the rank hangs up

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("greeting", "answer", "error", "message"),
    [
        (_rendezvous.MAGIC + bytes(32), lambda claim: bytes(32), ConnectionError, "did not prove it holds"),
        (b"SSH-2.0-OpenSSH_9.6\r\n" + bytes(19), None, ConnectionError, "is no rank 0"),
        (b"", None, TimeoutError, "did not complete its handshake with rank 0"),
    ],
)
def test_a_joining_rank_checks_rank_0_within_its_timeout(
    greeting: bytes, answer: Callable[[bytes], bytes] | None, error: type[Exception], message: str
) -> None:
    port = _port()
    server = _fake_rank_0(port, greeting, answer)
    started = time.monotonic()
    with pytest.raises(error, match=message):
        ProcessGroup(1, 2, "127.0.0.1", port, KEY, timeout=1.0)
    assert time.monotonic() - started < 2.5
    server.join(5)


def test_a_key_that_is_not_hex_is_refused_without_being_repeated() -> None:
    with pytest.raises(ValueError, match=r"authkey string \(9 characters\) is not hexadecimal") as caught:
        ProcessGroup(0, 2, authkey="s3cr3t-pw")
    assert "s3cr3t" not in str(caught.value)
