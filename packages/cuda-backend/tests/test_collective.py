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
