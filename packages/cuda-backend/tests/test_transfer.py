"""Copies between the host and a GPU that the host does not wait for. ``Tensor.from_data`` on Cuda goes
through each GPU's pinned staging ring: every value arrives, whatever its size, dtype and layout, from
several threads at once and with more copies in flight than the ring holds; while a step is captured, a
copy from the host is refused (the step runs eagerly). ``Transaction.execute_async`` queues copies to
pinned memory: waiting for them does not wait for the work queued after them."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from burn_backend import Tensor
from burn_cuda import Cuda
from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


def arrays(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.random((64, 28, 28), dtype=np.float32),  # a batch
        rng.integers(0, 10, 64),
        np.float64(2.5) * np.ones(()),  # 0-d
        rng.random((3, 5)).T,  # not contiguous
        rng.random(7) < 0.5,
        rng.random(9).astype(np.float16),
        rng.integers(-100, 100, 3 << 20, dtype=np.int8),  # 3 MiB: 5 of them fill the ring
        rng.random(1 << 20),  # 8 MiB: past the staging limit, copied as CuPy copies it
        np.zeros((0, 4), dtype=np.float32),
        np.arange(5, dtype=np.uint16),
    ]


def busy_products(count: int, size: int) -> cp.ndarray:
    """Products of ``size`` x ``size`` matrices queued on the current stream (not waited for)."""
    busy = cp.ones((size, size), dtype=cp.float32)
    for _ in range(count):
        busy = busy @ busy / float(size)
    return busy


def test_every_value_arrives_with_more_copies_than_the_ring_holds() -> None:
    from burn_cuda._transfer import upload

    kept = []
    for seed in range(8):  # 80 copies (24 MiB through the 16 MiB ring), queued behind slow products
        busy = busy_products(2, 4096)
        host = arrays(seed)
        kept.append((host, [upload(array) for array in host]))
    for host, uploaded in kept:
        for array, device_array in zip(host, uploaded, strict=True):
            got = cp.asnumpy(device_array)
            assert got.dtype == array.dtype
            assert got.shape == array.shape
            np.testing.assert_array_equal(got, array)
    assert float(busy[0, 0]) == 1.0


def test_a_copy_does_not_wait_for_the_queued_work() -> None:
    device = Cuda().device(0)
    busy = busy_products(8, 8192)  # about a tenth of a second
    array = np.arange(64 * 28 * 28, dtype=np.float32).reshape(64, 28, 28)
    tensor = Tensor.from_data(array, device)
    assert not cp.cuda.get_current_stream().done  # the host went on with the products still queued
    np.testing.assert_array_equal(tensor.to_data().to_numpy(), array)
    assert float(busy[0, 0]) == 1.0


def test_copies_from_several_threads() -> None:
    from burn_cuda._transfer import upload

    results: dict[int, list[tuple[np.ndarray, cp.ndarray]]] = {}

    def copy(seed: int) -> None:
        host = [array for array in arrays(seed)[:6] for _ in range(20)]
        results[seed] = [(array, upload(array)) for array in host]

    busy = busy_products(2, 4096)
    threads = [threading.Thread(target=copy, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [0, 1, 2, 3]
    for pairs in results.values():
        for array, device_array in pairs:
            np.testing.assert_array_equal(cp.asnumpy(device_array), array)
    assert float(busy[0, 0]) == 1.0


def test_a_step_copying_from_the_host_runs_eagerly() -> None:
    pytest.importorskip("burn_fusion")
    from burn_fusion import Fusion, replay

    device = Fusion(Cuda()).device(0)

    @replay
    def shifted(x: Tensor) -> Tensor:
        return x + Tensor.from_data(np.arange(3, dtype=np.float32), device)

    with pytest.warns(UserWarning, match="runs eagerly for this signature"):
        results = [shifted(Tensor.from_data(np.full(3, i, dtype=np.float32), device)) for i in range(5)]
    assert shifted.stats["refused"] == 1, shifted.stats
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result.to_data().to_numpy(), i + np.arange(3))


def test_an_async_read_waits_only_for_the_work_queued_before_it() -> None:
    from burn_backend import Transaction

    device = Cuda().device(0)
    values = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0
    tensor = Tensor.from_data(values, device) * 2.0
    read = Transaction().register(tensor).register(tensor.int()).register(tensor > 0).execute_async()
    busy = busy_products(8, 8192)  # about a tenth of a second, queued after the read
    floats, ints, bools = read.wait()
    assert not cp.cuda.get_current_stream().done  # the products still run
    np.testing.assert_array_equal(floats.to_numpy(), values * 2)
    np.testing.assert_array_equal(ints.to_numpy(), (values * 2).astype(np.int64))
    np.testing.assert_array_equal(bools.to_numpy(), values > 0)
    assert float(busy[0, 0]) == 1.0
