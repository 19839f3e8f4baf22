"""Safe by default: tokens, loopback, hostile and oversized frames, isolation of sessions, and a server
that dies under a client."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import msgpack
import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_ndarray import NdArray
from burn_remote import Remote, RemoteConnectionError, Server
from burn_remote._protocol import PROTOCOL_VERSION
from burn_remote.testing import LoopbackServer


def _raw(url: str, token: str | None = None) -> ClientConnection:
    ws = connect(url, compression=None, proxy=None, open_timeout=10, max_size=None)
    ws.__enter__()
    ws.send(msgpack.packb(["hello", PROTOCOL_VERSION, token]))
    assert msgpack.unpackb(ws.recv(timeout=10), strict_map_key=False)[0] == "ok"
    return ws


def _closed_with(ws: ClientConnection, frame: bytes | str) -> tuple[int, str]:
    ws.send(frame)
    ws.send(msgpack.packb(["f", [], [], ["meta"]]))  # buffered: the close is read by recv
    with pytest.raises(ConnectionClosed) as caught:
        ws.recv(timeout=10)
    received = caught.value.rcvd
    assert received is not None
    return received.code, received.reason


def _handle(id: int) -> msgpack.ExtType:
    return msgpack.ExtType(1, id.to_bytes(8, "little"))


def _nested(depth: int) -> bytes:
    # ["f", [[[...]]], [], None] written byte by byte: msgpack's packer refuses to nest this deep
    return b"\x94" + msgpack.packb("f") + b"\x91" * depth + b"\x90" + b"\x90\xc0"


HOSTILE = {
    "not msgpack": b"\xc1\xc1\xc1",
    "text, not binary": "hello",
    "truncated": msgpack.packb(["f", [["float_add", 1, [], False]], [], None])[:-3],
    "not a frame": msgpack.packb({"f": 1}),
    "an op off the allow-list": msgpack.packb(["f", [["__import__", 1, ["os"], False]], [], None]),
    "an op by a dunder name": msgpack.packb(["f", [["__class__", 1, [], False]], [], None]),
    "too few arguments": msgpack.packb(["f", [["float_add", 1, [_handle(1)], False]], [], None]),
    "a string for a tensor": msgpack.packb(["f", [["float_exp", 1, ["x"], False]], [], None]),
    "an id never made": msgpack.packb(["f", [["float_exp", 2, [_handle(99)], False]], [], None]),
    "an unknown ext type": msgpack.packb(
        ["f", [["float_exp", 1, [msgpack.ExtType(42, b"")], False]], [], None]
    ),
    "an unknown dtype": msgpack.packb(
        [
            "f",
            [["float_zeros", 1, [[2], msgpack.ExtType(3, b"\x00"), msgpack.ExtType(2, b"f1024")], False]],
            [],
            None,
        ]
    ),
    "a tensor whose bytes disagree with its shape": msgpack.packb(
        [
            "f",
            [
                [
                    "float_from_data",
                    1,
                    [
                        [msgpack.ExtType(7, msgpack.packb(["f32", [1000]])), b"1234"],
                        msgpack.ExtType(3, b"\x00"),
                    ],
                    False,
                ]
            ],
            [],
            None,
        ]
    ),
    "a device the server lacks": msgpack.packb(
        [
            "f",
            [["float_zeros", 1, [[2], msgpack.ExtType(3, b"\x07"), msgpack.ExtType(2, b"f32")], False]],
            [],
            None,
        ]
    ),
    "an options class off the list": msgpack.packb(
        ["f", [["float_exp", 1, [msgpack.ExtType(5, msgpack.packb(["Popen", [["sh"]]]))], False]], [], None]
    ),
    "nesting 100,000 deep": _nested(100_000),
    "an id not above the last": msgpack.packb(
        [
            "f",
            [["float_zeros", 0, [[2], msgpack.ExtType(3, b"\x00"), msgpack.ExtType(2, b"f32")], False]],
            [],
            None,
        ]
    ),
}


@pytest.mark.parametrize("frame", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_frame_closes_its_session_and_the_server_goes_on(
    server: LoopbackServer, frame: bytes | str
) -> None:
    bystander = Remote(server.url, timeout=20.0)
    kept = Tensor.from_data([1.0, 2.0], bystander.device(0))
    code, reason = _closed_with(_raw(server.url), frame)
    assert code == 1008, reason
    assert reason
    assert (kept * 2.0).tolist() == [2.0, 4.0]  # another session, untouched
    fresh = Remote(server.url, timeout=20.0)
    assert Tensor.from_data([3.0], fresh.device(0)).tolist() == [3.0]
    assert "closed the session" in server.log()


def test_a_session_cannot_name_another_sessions_tensors(server: LoopbackServer) -> None:
    owner = Remote(server.url, timeout=20.0)
    secret = Tensor.from_data([42.0], owner.device(0))
    secret_id = secret.primitive.id
    owner.sync(owner.device(0))
    ws = _raw(server.url)
    code, reason = _closed_with(
        ws, msgpack.packb(["f", [], [], ["read", [_handle(secret_id)]]])
    )  # the owner's id means nothing in another session
    assert code == 1008
    assert f"no tensor {secret_id}" in reason
    assert secret.tolist() == [42.0]


def test_an_oversized_frame_closes_its_session_and_the_server_goes_on() -> None:
    small = LoopbackServer("ndarray", ["--max-frame-bytes", "65536", "--max-tensor-bytes", "32768"])
    try:
        remote = Remote(small.url, timeout=20.0)
        device = remote.device(0)
        with pytest.raises(RemoteConnectionError, match=r"code 1009") as caught:
            Tensor.from_data(np.zeros(100_000, np.float32), device).tolist()
        assert small.url in str(caught.value)
        assert "float_from_data" in str(caught.value)
        # a frame within the frame limit whose tensor is over the tensor limit: refused from its header
        ws = _raw(small.url)
        head = msgpack.ExtType(7, msgpack.packb(["f32", [1 << 30]]))
        frame = msgpack.packb(
            ["f", [["float_from_data", 1, [[head, b""], msgpack.ExtType(3, b"\x00")], False]], [], None]
        )
        code, reason = _closed_with(ws, frame)
        assert code == 1008
        assert "over the limit" in reason
        # a tensor whose bytes follow out of band: its size is checked before anything is allocated
        ws = _raw(small.url)
        head = msgpack.ExtType(7, msgpack.packb(["f32", [1 << 28], 1 << 30]))
        frame = msgpack.packb(
            ["f", [["float_from_data", 1, [[head, None], msgpack.ExtType(3, b"\x00")], False]], [], None]
        )
        code, reason = _closed_with(ws, frame)
        assert code == 1008
        assert "over the limit" in reason
        # and its messages may not carry more than it announced
        ws = _raw(small.url)
        head = msgpack.ExtType(7, msgpack.packb(["f32", [16], 64]))
        ws.send(
            msgpack.packb(
                ["f", [["float_from_data", 1, [[head, None], msgpack.ExtType(3, b"\x00")], False]], [], None]
            )
        )
        code, reason = _closed_with(ws, b"\x00" * 65)
        assert code == 1008
        assert "at most 64 more bytes" in reason
        other = Remote(small.url, timeout=20.0)
        assert Tensor.from_data([1.0], other.device(0)).tolist() == [1.0]
    finally:
        small.stop()


def test_a_wrong_token_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("correct horse battery staple\n")
    guarded = LoopbackServer("ndarray", ["--token-file", str(secret)])
    try:
        for token in ("wrong", None):
            with pytest.raises(RemoteConnectionError, match="token mismatch"):
                Remote(guarded.url, token=token, timeout=20.0)
        remote = Remote(guarded.url, token="correct horse battery staple", timeout=20.0)
        assert Tensor.from_data([1.0, 2.0], remote.device(0)).sum().tolist() == [3.0]
    finally:
        guarded.stop()


def test_a_non_loopback_address_needs_a_token() -> None:
    with pytest.raises(ValueError, match="needs a token"):
        Server(NdArray(), host="0.0.0.0", port=0)
    result = subprocess.run(
        [sys.executable, "-m", "burn_remote", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "needs a token" in result.stderr


def test_a_server_killed_mid_training_gives_a_clear_error_within_the_timeout() -> None:
    doomed = LoopbackServer("ndarray")
    remote = Remote(doomed.url, timeout=5.0)
    device = Autodiff(remote).device(0)
    rng = np.random.default_rng(3)
    w = Tensor.from_data(rng.standard_normal((8, 4)).astype(np.float32), device).require_grad()
    x = Tensor.from_data(rng.standard_normal((16, 8)).astype(np.float32), device)

    def step() -> None:
        grads = (x @ w).tanh().mean().backward()
        w.grad(grads).sum().tolist()

    for _ in range(3):
        step()
    doomed.process.kill()
    doomed.process.wait(timeout=10)
    start = time.monotonic()
    with pytest.raises(RemoteConnectionError) as caught:
        step()
    assert time.monotonic() - start < 5.0
    message = str(caught.value)
    assert doomed.url in message
    assert "last op" in message
    with pytest.raises(RemoteConnectionError):  # and at every later op, at once
        (x @ w).tolist()
    doomed.stop()
