"""Devices: device handles, to_device, ops across devices, seeding, sync, dtype support and the
autodiff hooks as a backend without autodiff answers them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from burn_backend import Device, Distribution, DType, Kind, Tensor
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.core._common import ALL_DTYPES, index_tensor, values


def other_device(device: Device) -> Device:
    """A device of the same backend that is not ``device``: ops must refuse to mix the two before
    reaching the backend, so it need not exist."""
    return Device(device.backend, device.index + 1)


def moved(tensor: Tensor, device: Device) -> Tensor:
    """``tensor`` as if it lived on ``device`` (the same primitive, another handle)."""
    return Tensor.from_primitive(tensor.primitive, device)


# -- device handles -----------------------------------------------------------------------------------
def test_device_count(device: Device) -> None:
    count = device.backend.device_count()
    assert isinstance(count, int)
    assert count >= 1
    assert 0 <= device.index < count


def test_device_beyond_the_count_is_an_error(device: Device) -> None:
    backend = device.backend
    with pytest.raises(ValueError, match="no device"):
        backend.device(backend.device_count())
    with pytest.raises(ValueError, match="no device"):
        backend.device(-1)


def test_devices_are_values(device: Device) -> None:
    same = device.backend.device(device.index)
    assert same == device
    assert hash(same) == hash(device)
    assert Device(device.backend, device.index) == device
    assert other_device(device) != device
    assert device != "not a device"
    assert str(device) == f"{device.backend.stack_name}:{device.index}"
    assert repr(device).startswith("Device(")


def test_devices_are_immutable(device: Device) -> None:
    with pytest.raises(AttributeError, match="immutable"):
        device.index = 3


def test_tensors_know_their_device(device: Device) -> None:
    tensor = Tensor.ones([2], device)
    assert tensor.device == device
    assert tensor.backend is device.backend


@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT, Kind.BOOL])
def test_primitives_know_their_device(device: Device, kind: Kind) -> None:
    """Not reachable through Tensor (tensors carry their device): the backend's own answer."""
    tensor = Tensor.ones([2, 3], device, kind)
    prefix = {Kind.FLOAT: "float", Kind.INT: "int", Kind.BOOL: "bool"}[kind]
    assert getattr(device.backend, f"{prefix}_device")(tensor.primitive) == device


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_to_device_keeps_values_and_dtype(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, (3, 4), dtype, -20, 20)
    tensor = make(array, device).to_device(device)
    assert tensor.device == device
    check(tensor, array, dtype)


def test_to_device_of_a_result_of_layout_ops(device: Device, rng: np.random.Generator) -> None:
    array = random_array(rng, (3, 4), DType.F32)
    tensor = make(array, device).swap_dims(0, 1).flip([0]).to_device(device)
    check(tensor, np.flip(array.T, 0), DType.F32)


def test_to_device_takes_the_spec_of_a_registered_device(device: Device) -> None:
    from burn_backend import parse_device

    try:
        named = parse_device(str(device))
    except ValueError:
        pytest.skip(f"{device} is not a registered device spec")
    if named != device:
        pytest.skip(f"{device} names another backend object when parsed")
    check(Tensor.ones([2], device).to_device(str(device)), np.ones(2), device.backend.float_dtype)


# -- ops across devices -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b,
        lambda a, b: a.matmul(b),
        lambda a, b: a.equal(b),
        lambda a, b: Tensor.cat([a, b], 0),
        lambda a, b: a.mask_where(a.greater_elem(0), b),
        lambda a, b: a.slice_assign([slice(0, 2)], b),
        lambda a, b: a.atan2(b),
    ],
    ids=["add", "matmul", "equal", "cat", "mask_where", "slice_assign", "atan2"],
)
def test_ops_refuse_tensors_of_two_devices(device: Device, op: object) -> None:
    a = Tensor.ones([2, 2], device)
    b = moved(Tensor.ones([2, 2], device), other_device(device))
    with pytest.raises(ValueError, match="different devices"):
        op(a, b)  # type: ignore[operator]


def test_indices_and_masks_must_share_the_device(device: Device) -> None:
    a = Tensor.ones([2, 2], device)
    elsewhere = other_device(device)
    indices = moved(index_tensor([[0, 1], [1, 0]], device), elsewhere)
    mask = moved(Tensor.ones([2, 2], device, Kind.BOOL), elsewhere)
    with pytest.raises(ValueError, match="different devices"):
        a.gather(1, indices)
    with pytest.raises(ValueError, match="different devices"):
        a.mask_fill(mask, 0.0)


def test_the_device_error_names_both_devices(device: Device) -> None:
    elsewhere = other_device(device)
    a, b = Tensor.ones([1], device), moved(Tensor.ones([1], device), elsewhere)
    with pytest.raises(ValueError, match=f"{re.escape(str(device))}.*{re.escape(str(elsewhere))}"):
        a.add(b)


# -- seed, sync, dtype support ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dtype", "distribution"),
    [
        (DType.F32, None),
        (DType.F32, Distribution.normal(0.0, 1.0)),
        (DType.F64, Distribution.uniform(-1.0, 1.0)),
        (DType.F32, Distribution.bernoulli(0.5)),
        (DType.I64, Distribution.uniform(0, 100)),
        (DType.I32, None),
    ],
    ids=["f32-default", "f32-normal", "f64-uniform", "f32-bernoulli", "i64-uniform", "i32-default"],
)
def test_seed_makes_random_tensors_repeat(
    device: Device, dtype: DType, distribution: Distribution | None
) -> None:
    require_dtype(device, dtype)
    device.seed(1234)
    first = values(Tensor.random([64], distribution, device, dtype))
    second = values(Tensor.random([64], distribution, device, dtype))
    device.seed(1234)
    again = values(Tensor.random([64], distribution, device, dtype))
    device.seed(4321)
    other = values(Tensor.random([64], distribution, device, dtype))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, other)


def test_seed_through_the_backend(device: Device) -> None:
    assert device.backend.seed(device, 7) is None
    first = values(Tensor.random([16], None, device))
    device.backend.seed(device, 7)
    assert np.array_equal(first, values(Tensor.random([16], None, device)))


def test_sync_leaves_values_alone(device: Device, rng: np.random.Generator) -> None:
    array = random_array(rng, (5,), DType.F32)
    tensor = make(array, device) * 2.0
    device.sync()
    device.backend.sync(device)
    check(tensor, array.astype(np.float64) * 2.0, DType.F32)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_supports_dtype_answers_a_bool(device: Device, dtype: DType) -> None:
    assert isinstance(device.backend.supports_dtype(device, dtype), bool)


def test_the_default_dtypes_are_supported(device: Device) -> None:
    backend = device.backend
    assert backend.supports_dtype(device, backend.float_dtype)
    assert backend.supports_dtype(device, backend.int_dtype)
    assert backend.supports_dtype(device, DType.BOOL)


def test_indices_have_the_int_dtype_of_the_backend(device: Device, rng: np.random.Generator) -> None:
    tensor = make(random_array(rng, (3, 4), DType.F32), device)
    int_dtype = device.backend.int_dtype
    assert tensor.argmax(1).dtype is int_dtype
    assert tensor.argsort(1).dtype is int_dtype
    assert tensor.max_dim_with_indices(0)[1].dtype is int_dtype
    assert tensor.greater_elem(0).argwhere().dtype is int_dtype
    assert Tensor.arange(3, device=device).dtype is int_dtype


# -- autodiff hooks -----------------------------------------------------------------------------------
def test_require_grad_flags(device: Device) -> None:
    tensor = Tensor.ones([2], device)
    assert not tensor.is_require_grad()
    tracked = tensor.require_grad()
    assert tracked.is_require_grad() is device.backend.is_autodiff
    assert not tracked.set_require_grad(False).is_require_grad()
    assert not tracked.detach().is_require_grad()
    check(tracked.detach(), np.ones(2), device.backend.float_dtype)


def test_non_float_tensors_never_require_grad(device: Device) -> None:
    ints = Tensor.ones([2], device, Kind.INT)
    assert not ints.is_require_grad()
    assert ints.detach() is ints
    with pytest.raises(TypeError, match="expected a Float tensor"):
        ints.require_grad()


def test_autodiff_ops_need_an_autodiff_backend(device: Device) -> None:
    if device.backend.is_autodiff:
        pytest.skip("the backend has autodiff")
    tensor = Tensor.ones([2], device)
    for op in (tensor.backward, tensor.inner):
        with pytest.raises(TypeError, match="has no autodiff"):
            op()
    for name in ("grad", "grad_remove"):
        with pytest.raises(TypeError, match=rf"{name}: the tensor's backend .* has no autodiff"):
            getattr(tensor, name)(None)
    with pytest.raises(TypeError, match=r"grad_replace: the tensor's backend .* has no autodiff"):
        tensor.grad_replace(None, tensor)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a device of an autodiff backend"):
        Tensor.from_inner(tensor, device)
