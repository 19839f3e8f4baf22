"""Remote against a real NdArray server process: values against NumPy, streaming, uploads as raw
bytes, frees, Autodiff and Router over it, op errors, concurrent clients."""

from __future__ import annotations

import threading

import msgpack
import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import ConvOptions, Tensor, TensorData, activation
from burn_ndarray import NdArray
from burn_remote import Remote, RemoteOpError, Server
from burn_remote._connection import Session
from burn_remote.testing import LoopbackServer
from burn_router import Router


def test_ops_match_numpy(remote: Remote) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    device = remote.device(0)
    x, y = Tensor.from_data(a.astype(np.float32), device), Tensor.from_data(b.astype(np.float32), device)
    z = (x @ y + 1.0).exp().sum_dim(1)
    expected = np.exp(a @ b + 1.0).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(z.to_data().to_numpy(), expected, rtol=1e-5)
    assert z.shape == (3, 1)
    # an op the client cannot work the shape of (a convolution) asks the server, and still agrees
    images = rng.standard_normal((2, 3, 6, 6))
    kernels = rng.standard_normal((4, 3, 3, 3))
    conv = remote.conv2d(
        Tensor.from_data(images.astype(np.float32), device).primitive,
        Tensor.from_data(kernels.astype(np.float32), device).primitive,
        None,
        ConvOptions((1, 1), (0, 0), (1, 1), 1),
    )
    assert conv.shape == (2, 4, 4, 4)
    windows = np.lib.stride_tricks.sliding_window_view(images, (3, 3), axis=(2, 3))
    reference = np.einsum("bchwij,ocij->bohw", windows, kernels)
    np.testing.assert_allclose(remote.float_into_data(conv).to_numpy(), reference, rtol=1e-4, atol=1e-4)
    # ints and bools, and a structured result
    values, indices = Tensor.from_data(a.astype(np.float32), device).max_dim_with_indices(1)
    np.testing.assert_array_equal(indices.to_data().to_numpy().ravel(), a.argmax(axis=1))
    np.testing.assert_allclose(values.to_data().to_numpy().ravel(), a.max(axis=1), rtol=1e-6)
    assert (x > 0).to_data().to_numpy().tolist() == (a.astype(np.float32) > 0).tolist()


def test_ops_stream_without_waiting(remote: Remote) -> None:
    device = remote.device(0)
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device)
    session: Session = remote._session
    requests = 0
    original = session.request

    def counted(request: object) -> object:
        nonlocal requests
        requests += 1
        return original(request)

    session.request = counted  # type: ignore[method-assign]
    outputs = [x + x for _ in range(3000)]  # three frames go out; nothing waits
    assert requests == 0
    total = outputs[0]
    for out in outputs[1:]:
        total = total + out
    assert total.tolist() == [[6000.0, 12000.0], [18000.0, 24000.0]]
    assert requests == 1


def test_tensors_travel_as_raw_bytes() -> None:
    from burn_remote._connection import RemoteTensor
    from burn_remote._wire import CHUNK_BYTES, make_default, pack, send_bodies

    bodies: list[object] = []
    default = make_default(RemoteTensor, bodies)
    values = np.arange(1000, dtype=np.float32).reshape(10, 100)
    frame = pack(["f", [["float_from_data", 1, [TensorData(values), None], False]], [], None], default)
    assert values.tobytes() in frame
    assert len(frame) < values.nbytes + 100
    assert not bodies
    # a large tensor: its bytes leave the frame and follow it in chunks
    large = np.arange(3 * CHUNK_BYTES // 4 + 5, dtype=np.float32)
    frame = pack(["f", [["float_from_data", 1, [TensorData(large), None], False]], [], None], default)
    assert len(frame) < 200
    sent: list[bytes] = []
    send_bodies(lambda chunk: sent.append(bytes(chunk)), bodies)
    assert [len(chunk) for chunk in sent] == [CHUNK_BYTES, CHUNK_BYTES, CHUNK_BYTES, 20]
    assert b"".join(sent) == large.tobytes()


def test_large_tensors_round_trip(remote: Remote) -> None:
    values = np.random.default_rng(5).standard_normal((3, 700_001)).astype(np.float32)  # 8.4 MB
    device = remote.device(0)
    tensor = Tensor.from_data(values, device)
    np.testing.assert_array_equal((tensor * 2.0).to_data().to_numpy(), values * 2.0)
    np.testing.assert_array_equal(tensor.to_data().to_numpy(), values)


def test_freed_tensors_are_freed_on_the_server() -> None:
    with Server(NdArray(), port=0) as server:
        remote = Remote(server.url, timeout=20.0)
        device = remote.device(0)
        tensors = [Tensor.zeros([256, 256], device=device) for _ in range(8)]
        remote.sync(device)
        assert server.held_bytes == 8 * 256 * 256 * 4
        del tensors
        remote.sync(device)  # the frees travel with the next frame
        assert server.held_bytes == 0
        remote.close()


def test_disconnect_frees_the_session() -> None:
    with Server(NdArray(), port=0) as server:
        remote = Remote(server.url, timeout=20.0)
        kept = Tensor.ones([128, 128], device=remote.device(0))
        remote.sync(remote.device(0))
        assert server.held_bytes == 128 * 128 * 4
        assert server.sessions == 1
        remote.close()
        for _ in range(200):
            if server.sessions == 0:
                break
            threading.Event().wait(0.01)
        assert server.sessions == 0
        assert server.held_bytes == 0
        del kept


def _train_step_grads(device: object) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    x = Tensor.from_data(rng.standard_normal((8, 5)).astype(np.float32), device)
    w = Tensor.from_data(rng.standard_normal((5, 3)).astype(np.float32), device).require_grad()
    b = Tensor.from_data(rng.standard_normal((3,)).astype(np.float32), device).require_grad()
    loss = activation.log_softmax((x @ w + b).tanh(), 1).mean()
    grads = loss.backward()
    return [w.grad(grads).to_data().to_numpy(), b.grad(grads).to_data().to_numpy()]


def test_autodiff_over_remote_matches_local(remote: Remote) -> None:
    local = _train_step_grads(Autodiff(NdArray()).device())
    remote_grads = _train_step_grads(Autodiff(remote).device(0))
    for ours, theirs in zip(remote_grads, local):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)
        assert np.abs(ours).sum() > 0


def test_router_mixes_local_and_remote(remote: Remote) -> None:
    router = Router(NdArray(), remote)
    local, far = router.device(0), router.device(1)
    values = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    x = Tensor.from_data(values, local)
    moved = (x * 2.0).to_device(far)
    result = (moved @ moved).to_device(local) + x
    np.testing.assert_allclose(result.to_data().to_numpy(), (2 * values) @ (2 * values) + values, rtol=1e-5)
    assert str(moved.device) == str(far)


def test_fusion_over_remote(remote: Remote) -> None:
    from burn_fusion import Fusion

    device = Fusion(remote).device(0)
    x = Tensor.from_data([[1.0, -2.0], [3.0, -4.0]], device)
    assert ((x * 2.0 + 1.0).abs()).tolist() == [[3.0, 3.0], [7.0, 7.0]]


def test_an_op_error_surfaces_at_the_read_and_the_session_goes_on(remote: Remote) -> None:
    device = remote.device(0)
    ints = Tensor.from_data([1, 2, 3], device)
    bad = ints.powi(-1)  # the server's backend refuses it; nothing waits here
    with pytest.raises(ValueError, match=r"int_powi_scalar.*negative exponent") as caught:
        bad.tolist()
    assert isinstance(caught.value, RemoteOpError)
    with pytest.raises(ValueError, match="negative exponent"):
        (bad + 1).tolist()  # what depends on the failed op fails alike
    assert (ints + 1).tolist() == [2, 3, 4]  # the rest of the session is intact


def test_a_result_over_the_session_limit_is_refused_before_allocating() -> None:
    from burn_remote import Limits

    with Server(NdArray(), port=0, limits=Limits(tensor_bytes=1 << 20, session_bytes=1 << 21)) as server:
        remote = Remote(server.url, timeout=20.0)
        device = remote.device(0)
        huge = Tensor.zeros([1 << 40], device=device)  # 4 TiB: refused from its shape
        with pytest.raises(MemoryError, match=r"float_zeros.*over the tensor limit"):
            huge.tolist()
        parts = [Tensor.zeros([200_000], device=device) for _ in range(3)]  # 2.4 MB > 2 MiB
        with pytest.raises(MemoryError, match="over its limit"):
            parts[-1].tolist()
        assert server.held_bytes <= 1 << 21
        assert parts[0].sum().tolist() == [0.0]
        remote.close()


def test_eight_concurrent_clients(server: LoopbackServer) -> None:
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            remote = Remote(server.url, timeout=30.0)
            device = remote.device(0)
            x = Tensor.from_data(np.full((16, 16), float(k), np.float32), device)
            for _ in range(50):
                x = x * 1.0 + 1.0
            results[k] = x.to_data().to_numpy()
            remote.close()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert sorted(results) == list(range(8))
    for k, values in results.items():
        assert np.all(values == k + 50)


def test_msgpack_is_the_frame_format(remote: Remote) -> None:
    # the answer to a read is a msgpack frame whose tensor values are one bin of raw bytes
    from burn_remote._wire import unpack

    device = remote.device(0)
    x = Tensor.from_data(np.arange(6, dtype=np.int32).reshape(2, 3), device)
    session = remote._session
    sent: list[bytes] = []
    ws = session._ws
    original = ws.recv

    def recv(timeout: float | None = None) -> bytes:
        data = original(timeout=timeout)
        sent.append(data)  # type: ignore[arg-type]
        return data  # type: ignore[return-value]

    ws.recv = recv  # type: ignore[method-assign]
    x.to_data()
    ws.recv = original  # type: ignore[method-assign]
    reply = unpack(sent[0])
    assert reply[0] == "ok"
    assert reply[2][0][1] == np.arange(6, dtype=remote.int_dtype.numpy).tobytes()
    assert isinstance(msgpack.unpackb(sent[0], strict_map_key=False, ext_hook=lambda c, d: c), list)


def test_devices_are_the_servers(remote: Remote) -> None:
    assert remote.device_count() == NdArray().device_count()
    assert remote.server_stack == "ndarray"
    with pytest.raises(ValueError, match="no device 5"):
        remote.device(5)
    other = NdArray().device()
    with pytest.raises(ValueError, match="not a device of this backend"):
        remote.float_zeros((2,), other, remote.float_dtype)
