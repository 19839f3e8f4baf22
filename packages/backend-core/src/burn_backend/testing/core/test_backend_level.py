"""Backend-level methods: dtype usage, autodiff flag, flush, memory cleanup, and transactions (read
now or started and waited for later)."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, DTypeUsage, Tensor, Transaction
from burn_backend.testing import check


@pytest.mark.parametrize("dtype", list(DType), ids=str)
def test_dtype_usage_agrees_with_supports_dtype(device: Device, dtype: DType) -> None:
    usage = device.backend.dtype_usage(device, dtype)
    assert isinstance(usage, frozenset)
    if device.backend.supports_dtype(device, dtype):
        assert {DTypeUsage.STORAGE, DTypeUsage.ARITHMETIC} <= usage
    else:
        assert DTypeUsage.ARITHMETIC not in usage


def test_ad_enabled_matches_the_kind_of_backend(device: Device) -> None:
    assert device.backend.ad_enabled() is device.backend.is_autodiff


def test_flush_and_memory_cleanup_keep_values(device: Device) -> None:
    tensor = Tensor.from_data([1.0, 2.0], device) * 3
    device.backend.flush(device)
    device.backend.memory_cleanup(device)
    check(tensor, np.array([3.0, 6.0]), device.backend.float_dtype)


def test_transaction_reads_every_kind_in_registration_order(device: Device) -> None:
    floats = Tensor.from_data([[1.5, -2.0]], device)
    ints = Tensor.arange(4, device=device)
    bools = floats > 0
    more = floats * 2
    data = Transaction().register(ints).register(floats).register(bools).register(more).execute()
    assert [d.dtype for d in data] == [
        device.backend.int_dtype,
        device.backend.float_dtype,
        DType.BOOL,
        device.backend.float_dtype,
    ]
    assert data[0].tolist() == [0, 1, 2, 3]
    assert data[1].tolist() == [[1.5, -2.0]]
    assert data[2].tolist() == [[True, False]]
    assert data[3].tolist() == [[3.0, -4.0]]


def test_empty_transaction(device: Device) -> None:
    assert Transaction().execute() == []


def test_tr_execute_groups(device: Device) -> None:
    backend = device.backend
    floats, ints, bools = backend.tr_execute(
        [Tensor.ones([2], device).primitive], [Tensor.arange(2, device=device).primitive], []
    )
    assert [d.tolist() for d in floats] == [[1.0, 1.0]]
    assert [d.tolist() for d in ints] == [[0, 1]]
    assert bools == []


def test_an_async_read_gives_the_values_at_the_call(device: Device) -> None:
    rng = np.random.default_rng(7)
    values = rng.standard_normal((3, 5))
    floats = Tensor.from_data(values, device)
    ints = Tensor.arange(6, device=device).reshape([2, 3])
    read = Transaction().register(floats * 2).register(ints).register(floats > 0).execute_async()
    for _ in range(20):  # work queued after the call, and the read tensors dropped, change nothing
        floats = (floats * 3).exp() - floats
    del ints
    data = read.wait()
    check(Tensor.from_data(data[0], device), values * 2, device.backend.float_dtype)
    assert data[1].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert data[2].tolist() == (values > 0).tolist()
    assert read.wait() is data  # read once


def test_tr_execute_async_groups(device: Device) -> None:
    backend = device.backend
    pending = backend.tr_execute_async(
        [Tensor.from_data([0.5, -1.0], device).primitive], [], [(Tensor.ones([2], device) > 0).primitive]
    )
    floats, ints, bools = pending.wait()
    assert [d.tolist() for d in floats] == [[0.5, -1.0]]
    assert ints == []
    assert [d.tolist() for d in bools] == [[True, True]]
