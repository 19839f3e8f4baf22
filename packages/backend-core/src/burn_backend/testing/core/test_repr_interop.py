"""How tensors meet Python and NumPy: repr, __array__, DLPack, into_scalar, tolist and the scalar,
length, iteration and hashing protocols."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Kind, Tensor
from burn_backend.testing import FLOAT_DTYPES, INT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import ALL_DTYPES, LAYOUTS, f64, laid_out

KIND_NAMES = {Kind.FLOAT: "Float", Kind.INT: "Int", Kind.BOOL: "Bool"}
PYTHON_TYPES = {Kind.FLOAT: float, Kind.INT: int, Kind.BOOL: bool}
DLPACK_DTYPES = [d for d in ALL_DTYPES if d is not DType.BF16]  # NumPy cannot import bf16 through DLPack


# -- repr --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_repr_is_burns_display(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = make(np.array([[1, 0, 3], [0, 2, 1]]), device, dtype)
    text = repr(tensor)
    assert text.startswith("Tensor {\n  data:\n")
    assert text.endswith("}")
    assert "  shape:  [2, 3],\n" in text
    assert f"  device:  {device},\n" in text
    assert f"  backend:  {device.backend.name!r},\n" in text
    assert f"  kind:  '{KIND_NAMES[dtype.kind]}',\n" in text
    assert f"  dtype:  '{dtype}',\n" in text


@pytest.mark.parametrize(
    ("values", "dtype", "shown"),
    [
        ([[1.5, -2.25]], DType.F32, "[[ 1.5 , -2.25]]"),
        ([1.5, -2.25], DType.BF16, "[ 1.5 , -2.25]"),
        ([[3, -4]], DType.I64, "[[ 3, -4]]"),
        ([True, False], DType.BOOL, "[ True, False]"),
    ],
    ids=["f32", "bf16", "i64", "bool"],
)
def test_repr_shows_the_values(device: Device, values: list[object], dtype: DType, shown: str) -> None:
    require_dtype(device, dtype)
    assert shown in repr(make(np.array(values), device, dtype))


def test_repr_of_a_large_tensor_is_summarized(device: Device) -> None:
    text = repr(Tensor.arange(5000, device=device))
    assert "..." in text
    assert len(text) < 1000
    assert "shape:  [5000]" in text


def test_repr_of_rank_0_and_empty_tensors(device: Device) -> None:
    assert "shape:  []" in repr(Tensor.from_data(2.5, device))
    assert "2.5" in repr(Tensor.from_data(2.5, device))
    assert "shape:  [0, 3]" in repr(Tensor.zeros([0, 3], device))


# -- NumPy ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_array_protocol(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, (3, 4), dtype, -50, 50)
    tensor = make(array, device)
    converted = np.asarray(tensor)
    assert converted.dtype == dtype.numpy
    assert np.array_equal(converted, array)
    as_f64 = np.asarray(tensor, dtype=np.float64)
    assert as_f64.dtype == np.float64
    assert np.array_equal(as_f64, f64(array))


def test_array_copy_is_writable_and_independent(device: Device) -> None:
    tensor = Tensor.from_data([1.0, 2.0], device)
    copied = np.array(tensor, copy=True)
    copied[0] = 9.0
    check(tensor, [1.0, 2.0], device.backend.float_dtype)


def test_to_numpy_is_read_only(device: Device) -> None:
    array = Tensor.from_data([1.0, 2.0], device).to_numpy()
    assert not array.flags.writeable


@pytest.mark.parametrize("layout", LAYOUTS)
def test_to_numpy_of_laid_out_tensors(device: Device, rng: np.random.Generator, layout: str) -> None:
    array = random_array(rng, (4, 3), DType.F32)
    assert np.array_equal(laid_out(array, device, layout).to_numpy(), array)


def test_numpy_operators_defer_to_tensors(device: Device) -> None:
    tensor = Tensor.from_data([1.0, 2.0], device)
    result = np.float32(2.0) * tensor
    assert isinstance(result, Tensor)
    check(result, [2.0, 4.0], device.backend.float_dtype)


# -- DLPack ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_dlpack_export(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    if not device.backend.is_cpu:
        pytest.skip("NumPy imports DLPack tensors of CPU memory only")
    array = random_array(rng, (2, 5), dtype, -50, 50)
    exported = np.from_dlpack(make(array, device))
    assert exported.dtype == dtype.numpy
    assert np.array_equal(exported, array)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dlpack_export_of_laid_out_tensors(device: Device, rng: np.random.Generator, layout: str) -> None:
    if not device.backend.is_cpu:
        pytest.skip("NumPy imports DLPack tensors of CPU memory only")
    array = random_array(rng, (4, 3), DType.F32)
    assert np.array_equal(np.from_dlpack(laid_out(array, device, layout)), array)


def test_dlpack_export_of_rank_0(device: Device) -> None:
    if not device.backend.is_cpu:
        pytest.skip("NumPy imports DLPack tensors of CPU memory only")
    exported = np.from_dlpack(Tensor.from_data(2.0, device) + 1.0)
    assert exported.shape == ()
    assert exported == 3.0


def test_dlpack_device_is_a_pair(device: Device) -> None:
    kind, index = Tensor.ones([2], device).__dlpack_device__()
    assert isinstance(kind, int)
    assert isinstance(index, int)
    if device.backend.is_cpu:
        assert kind == 1


@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_from_dlpack_keeps_the_dtype(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, (3, 2), dtype, -50, 50)
    check(Tensor.from_dlpack(array, device), array, dtype)


def test_from_dlpack_of_a_view(device: Device) -> None:
    array = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    check(Tensor.from_dlpack(array, device), array, DType.F32)


@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_backend_from_dlpack_takes_the_values_or_declines(
    device: Device, rng: np.random.Generator, dtype: DType
) -> None:
    require_dtype(device, dtype)
    backend = device.backend
    array = random_array(rng, (3, 4), dtype, -50, 50)
    imported = backend.from_dlpack(array, device)  # None: the caller copies through host memory
    if imported is not None:
        check(Tensor.from_primitive(imported, device), array, dtype)
    own = make(array, device, dtype).primitive
    if hasattr(own, "__dlpack__"):
        # a backend takes its own primitives back, sharing their memory
        again = backend.from_dlpack(own, device)
        assert again is not None, f"{backend.stack_name}: from_dlpack declined its own {dtype} primitive"
        check(Tensor.from_primitive(again, device), array, dtype)


# -- scalars and Python values ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)], ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_into_scalar(device: Device, dtype: DType, shape: tuple[int, ...]) -> None:
    require_dtype(device, dtype)
    value = {Kind.FLOAT: -2.5, Kind.INT: 7, Kind.BOOL: True}[dtype.kind]
    tensor = make(np.full(shape, value), device, dtype)
    scalar = tensor.into_scalar()
    assert type(scalar) is PYTHON_TYPES[dtype.kind]
    assert scalar == value
    assert tensor.item() == value


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tolist(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, (2, 3), dtype, -50, 50)
    values = make(array, device).tolist()
    assert values == f64(array).astype(PYTHON_TYPES[dtype.kind]).tolist()
    assert all(type(v) is PYTHON_TYPES[dtype.kind] for row in values for v in row)


def test_tolist_of_rank_0_is_a_scalar(device: Device) -> None:
    assert Tensor.from_data(4, device).tolist() == 4
    assert (Tensor.from_data(1.5, device) * 2).tolist() == 3.0


def test_python_number_protocols(device: Device) -> None:
    assert float(Tensor.from_data([[2.5]], device)) == 2.5
    assert int(Tensor.from_data([7], device)) == 7
    assert int(Tensor.from_data([2.9], device)) == 2
    assert bool(Tensor.from_data([1.0], device)) is True
    assert bool(Tensor.from_data([0], device)) is False
    assert bool(Tensor.from_data([[True]], device)) is True
    assert [10, 20, 30][Tensor.from_data([2], device)] == 30
    assert list(range(10))[Tensor.from_data(1, device) : Tensor.from_data(4, device)] == [1, 2, 3]


@pytest.mark.parametrize("dtype", [DType.F32, DType.I32, DType.BOOL])
def test_len_and_iteration_go_along_dim_0(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, (3, 2, 4), dtype)
    tensor = make(array, device)
    assert len(tensor) == 3
    rows = list(tensor)
    assert len(rows) == 3
    for row, expected in zip(rows, array):
        check(row, expected, dtype)


def test_iteration_over_an_empty_dim(device: Device) -> None:
    tensor = Tensor.zeros([0, 2], device)
    assert len(tensor) == 0
    assert list(tensor) == []


def test_tensors_hash_by_identity(device: Device) -> None:
    a, b = Tensor.ones([2], device), Tensor.ones([2], device)
    table = {a: "a", b: "b"}
    assert table[a] == "a"
    assert table[b] == "b"
    assert hash(a) == hash(a)


def test_unary_plus_and_abs(device: Device) -> None:
    tensor = Tensor.from_data([-1.5, 2.0], device)
    assert +tensor is tensor
    check(abs(tensor), [1.5, 2.0], device.backend.float_dtype)


@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, *INT_DTYPES])
def test_kind_and_dtype_properties(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = Tensor.zeros([2], device, dtype)
    assert tensor.dtype is dtype
    assert tensor.kind is dtype.kind
    assert tensor.primitive is not None
