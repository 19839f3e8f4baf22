"""Cuda's all-reduce on NCCL: on one GPU (a communicator of one rank) and, where the machine has several,
across them; sum and mean, f32/f16/f64, against NumPy. The tests skip without a GPU or without NCCL."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import ReduceOperation, Tensor, distributed
from burn_cuda import Cuda
from burn_cuda._cupy import unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


def nccl_or_skip() -> None:
    from burn_cuda._ops._collective import _nccl

    if _nccl() is None:
        pytest.skip("CuPy has no NCCL here")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("op", [ReduceOperation.SUM, ReduceOperation.MEAN])
def test_nccl_all_reduce_on_every_gpu(dtype: type, op: ReduceOperation) -> None:
    nccl_or_skip()
    import cupy as cp

    from burn_cuda._ops._collective import nccl_all_reduce

    count = Cuda().device_count()
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(7, 33)).astype(dtype) for _ in range(count)]
    arrays = []
    for index, value in enumerate(values):
        with cp.cuda.Device(index):
            arrays.append(cp.asarray(value))
    results = nccl_all_reduce(arrays, op)
    assert results is not None
    total = np.sum(np.stack(values).astype(np.float64), axis=0)
    want = total / count if op is ReduceOperation.MEAN else total
    tolerance = 2e-3 if dtype is np.float16 else 1e-5
    for index, result in enumerate(results):
        assert result.device.id == index
        assert result.dtype == dtype
        np.testing.assert_allclose(
            cp.asnumpy(result).astype(np.float64), want, rtol=tolerance, atol=tolerance
        )


def test_all_reduce_across_gpus_through_the_tensor_api() -> None:
    backend = Cuda()
    if backend.device_count() < 2:
        pytest.skip("one GPU: the conformance suite covers all_reduce on one device")
    nccl_or_skip()
    devices = [backend.device(i) for i in range(backend.device_count())]
    tensors = [Tensor.from_data(np.full((4,), float(i + 1), np.float32), d) for i, d in enumerate(devices)]
    results = distributed.all_reduce(tensors, ReduceOperation.SUM)
    expected = float(sum(range(1, len(devices) + 1)))
    for result, device in zip(results, devices):
        assert result.device == device
        assert result.tolist() == [expected] * 4


class _OneRankGroup:
    """A ``ProcessGroup`` stand-in of "two" processes whose NCCL communicator has one rank, so that the
    all-reduce across processes runs its NCCL path on one GPU (the sum over one rank is the input)."""

    world_size = 2
    rank = 0
    address = "127.0.0.1"

    def __init__(self) -> None:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._extensions: dict[str, object] = {}

    def extension(self, key: str, make: object) -> object:
        if key not in self._extensions:
            self._extensions[key] = make()  # type: ignore[operator]
        return self._extensions[key]


# CuPy's rendezvous store calls threading's deprecated notifyAll (in its server thread)
@pytest.mark.filterwarnings(r"ignore:notifyAll\(\) is deprecated:DeprecationWarning")
def test_all_reduce_across_processes_is_ordered_with_the_compute_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NCCL runs on a side stream: it must see the kernels queued before the call and not those queued
    after, and a reader queued after must see its result (without the two events, most trials fail)."""
    nccl_or_skip()
    import cupy as cp
    import cupyx.distributed

    from burn_cuda._ops import _collective

    monkeypatch.setattr(
        _collective,
        "_process_communicator",
        lambda group, device_id: cupyx.distributed.init_process_group(
            1, 0, host=group.address, port=group.port + 1
        ),
    )
    ops, group = _collective.CollectiveOps(), _OneRankGroup()
    size = 1 << 22
    try:
        for _ in range(20):
            x = cp.zeros(size, cp.float32)
            for _ in range(30):  # a slow producer on the compute stream
                x += 1.0
            out = ops.float_all_reduce_processes(x, ReduceOperation.SUM, group)
            x += 1000.0  # queued after the call: the all-reduce must not see it
            read = out * 1.0  # queued after the call: must see the all-reduce's result
            assert (float(read[0]), float(read[size - 1]), float(read.mean())) == (30.0, 30.0, 30.0)
        mean = ops.float_all_reduce_processes(cp.full(8, 3.0, cp.float32), ReduceOperation.MEAN, group)
        assert float(mean[0]) == 1.5  # one rank's sum over the group's two processes
    finally:  # the large blocks go back to the driver: later tests measure the pool
        x = out = read = None
        cp.cuda.Device().synchronize()
        cp.get_default_memory_pool().free_all_blocks()
