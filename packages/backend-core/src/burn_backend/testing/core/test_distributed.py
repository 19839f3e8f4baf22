"""Collectives: ``all_reduce`` (sum, mean) over every device the backend has (one device: the result is
the input), the thread rendezvous of ``CollectiveGroup``, and the errors; on autodiff backends, the
gradients through an all-reduce."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, distributed
from burn_backend.distributed import CollectiveGroup, ReduceOperation


def devices_of(device: Device, most: int = 3) -> list[Device]:
    """Up to ``most`` devices of the backend under test, ``device`` first."""
    backend = device.backend
    others = [backend.device(i) for i in range(backend.device_count()) if i != device.index]
    return [device, *others[: most - 1]]


def arrays(count: int, shape: tuple[int, ...] = (3, 4)) -> list[np.ndarray]:
    rng = np.random.default_rng(count)
    return [rng.normal(size=shape).astype(np.float32) for _ in range(count)]


@pytest.mark.parametrize("op", [ReduceOperation.SUM, ReduceOperation.MEAN])
def test_all_reduce_gives_every_device_the_combined_values(device: Device, op: ReduceOperation) -> None:
    devices = devices_of(device)
    values = arrays(len(devices))
    tensors = [Tensor.from_data(v, d) for v, d in zip(values, devices)]
    results = distributed.all_reduce(tensors, op)
    total = np.sum(np.stack(values).astype(np.float64), axis=0)
    want = total / len(values) if op is ReduceOperation.MEAN else total
    assert len(results) == len(devices)
    first = results[0].to_data().to_numpy()
    for result, d in zip(results, devices):
        assert result.device == d
        assert result.dtype is DType.F32
        got = result.to_data().to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, first)  # bit-identical on every device
    for v, t in zip(values, tensors):  # inputs are left as they were
        np.testing.assert_array_equal(t.to_data().to_numpy(), v)


def test_all_reduce_refuses_what_it_cannot_combine(device: Device) -> None:
    x = Tensor.from_data(arrays(1)[0], device)
    with pytest.raises(ValueError, match="expected at least one tensor"):
        distributed.all_reduce([])
    with pytest.raises(ValueError, match="one tensor per device"):
        distributed.all_reduce([x, x * 2])
    with pytest.raises(TypeError, match="expected Float tensors"):
        distributed.all_reduce([x.int()])
    with pytest.raises(TypeError, match="expected a ReduceOperation"):
        distributed.all_reduce([x], "sum")  # type: ignore[arg-type]
    devices = devices_of(device)
    if len(devices) > 1:
        other = Tensor.from_data(np.zeros((4, 3), np.float32), devices[1])
        with pytest.raises(ValueError, match=r"one shape and dtype; got \[3, 4\] f32 and \[4, 3\] f32"):
            distributed.all_reduce([x, other])


def test_a_collective_group_meets_one_thread_per_device(device: Device) -> None:
    devices = devices_of(device)
    group = CollectiveGroup(devices, timeout=60)
    values = arrays(len(devices), (5,))
    results: dict[int, list[list[float]]] = {}
    errors: list[BaseException] = []

    def work(rank: int) -> None:
        try:
            out = []
            for round_ in range(3):  # the group is reused round after round
                tensor = Tensor.from_data(values[rank] * (round_ + 1), devices[rank])
                reduced = group.all_reduce(tensor, ReduceOperation.MEAN)
                assert reduced.device == devices[rank]
                out.append(reduced.tolist())
            results[rank] = out
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(rank,)) for rank in range(len(devices))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    mean = np.mean(np.stack(values).astype(np.float64), axis=0)
    for rank in range(len(devices)):
        for round_, got in enumerate(results[rank]):
            np.testing.assert_allclose(got, mean * (round_ + 1), rtol=1e-5, atol=1e-6)


def test_a_collective_group_refuses_a_device_outside_it_and_times_out(device: Device) -> None:
    devices = devices_of(device)
    group = CollectiveGroup(devices[:1], timeout=5)
    x = Tensor.from_data([1.0, 2.0], device)
    assert group.all_reduce(x, ReduceOperation.SUM).tolist() == [1.0, 2.0]  # a group of one
    if len(devices) > 1:
        with pytest.raises(ValueError, match="is not in the group"):
            group.all_reduce(Tensor.from_data([1.0], devices[1]))
        waiting = CollectiveGroup(devices[:2], timeout=0.2)
        with pytest.raises(TimeoutError, match=r"waited 0\.2 s for 1 other device"):
            waiting.all_reduce(x)


@pytest.mark.parametrize("op", [ReduceOperation.SUM, ReduceOperation.MEAN])
def test_a_process_group_of_one_gives_the_values_back(device: Device, op: ReduceOperation) -> None:
    """The op across processes, through every decorator, in a run of one process (the collectives of
    several processes are tested where processes can be started: burn-train's tests)."""
    group = distributed.ProcessGroup(0, 1)
    (values,) = arrays(1)
    tensor = Tensor.from_data(values, device)
    reduced = group.all_reduce(tensor, op)
    assert reduced.device == device
    assert reduced.dtype == tensor.dtype
    np.testing.assert_array_equal(reduced.to_data().to_numpy(), values)
    with pytest.raises(TypeError, match="ReduceOperation"):
        group.all_reduce(tensor, "sum")  # type: ignore[arg-type]
