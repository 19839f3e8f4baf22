"""Creation ops for every dtype: from_data, from_numpy, empty, zeros, ones, full, the *_like family,
random, linspace, eye, cat, stack and the triangle masks (Int arange and random: int/test_creation.py)."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Bool, Device, Distribution, DType, Float, Int, Kind, Shape, Tensor, TensorData
from burn_backend.testing import FLOAT_DTYPES, INT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import ALL_DTYPES, LAYOUTS, f64, laid_out, values

SHAPES = [(), (3,), (2, 3), (2, 0, 4), (1, 2, 1, 3)]
FILL = {Kind.FLOAT: 1.5, Kind.INT: 7, Kind.BOOL: True}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_and_ones(device: Device, dtype: DType, shape: tuple[int, ...]) -> None:
    require_dtype(device, dtype)
    check(Tensor.zeros(shape, device, dtype), np.zeros(shape), dtype)
    check(Tensor.ones(shape, device, dtype), np.ones(shape), dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_empty_has_the_shape_and_dtype(device: Device, dtype: DType, shape: tuple[int, ...]) -> None:
    require_dtype(device, dtype)
    tensor = Tensor.empty(shape, device, dtype)
    assert tensor.dims() == list(shape)
    assert tensor.dtype is dtype
    data = tensor.to_data()
    assert data.shape == Shape(shape)
    assert data.dtype is dtype


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_full(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    value = FILL[dtype.kind]
    check(Tensor.full([2, 3], value, device, dtype), np.full((2, 3), value), dtype)


@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, *INT_DTYPES])
def test_full_with_zero_and_negative_values(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    check(Tensor.full([4], 0, device, dtype), np.zeros(4), dtype)
    if dtype.is_signed:
        check(Tensor.full([2, 2], -3, device, dtype), np.full((2, 2), -3), dtype)


@pytest.mark.parametrize(
    ("value", "kind"), [(2.5, Kind.FLOAT), (3, Kind.INT), (True, Kind.BOOL), (False, Kind.BOOL)]
)
def test_full_takes_its_kind_from_the_value(device: Device, value: object, kind: Kind) -> None:
    tensor = Tensor.full([3], value, device)  # type: ignore[arg-type]
    check(tensor, np.full(3, value), device.backend.default_dtype(kind))


def test_full_of_a_float_dtype_takes_an_int_value(device: Device) -> None:
    check(Tensor.full([2], 4, device, Float), np.full(2, 4.0), device.backend.float_dtype)


def test_full_of_an_int_dtype_takes_an_integral_float(device: Device) -> None:
    check(Tensor.full([2], 4.0, device, Int), np.full(2, 4), device.backend.int_dtype)


def test_shape_may_be_an_int(device: Device) -> None:
    assert Tensor.zeros(4, device).dims() == [4]
    assert Tensor.ones(3, device, Int).dims() == [3]
    assert Tensor.full(2, 1.0, device).dims() == [2]
    assert Tensor.empty(5, device).dims() == [5]


def test_shape_may_be_a_shape(device: Device) -> None:
    assert Tensor.zeros(Shape(2, 3), device).dims() == [2, 3]


@pytest.mark.parametrize(
    ("dtype", "kind"),
    [(None, Kind.FLOAT), (Float, Kind.FLOAT), (Int, Kind.INT), (Bool, Kind.BOOL)],
    ids=["none", "Float", "Int", "Bool"],
)
def test_default_dtypes_come_from_the_backend(device: Device, dtype: Kind | None, kind: Kind) -> None:
    tensor = Tensor.zeros([2], device, dtype)
    assert tensor.kind is kind
    assert tensor.dtype is device.backend.default_dtype(kind)


@pytest.mark.parametrize("name", ["f64", "f16", "i32", "u8", "bool"])
def test_dtype_may_be_named(device: Device, name: str) -> None:
    require_dtype(device, DType.of(name))
    assert Tensor.ones([2], device, name).dtype is DType.of(name)


def test_the_backend_defaults(device: Device) -> None:
    backend = device.backend
    assert backend.default_dtype(Kind.FLOAT) is backend.float_dtype
    assert backend.default_dtype(Kind.INT) is backend.int_dtype
    assert backend.default_dtype(Kind.BOOL) is DType.BOOL
    assert backend.float_dtype.is_float
    assert backend.int_dtype.is_int


# -- from_data, from_numpy ---------------------------------------------------------------------------
def test_from_data_nested_float_lists(device: Device) -> None:
    tensor = Tensor.from_data([[1.0, 2.5], [-3.0, 4.25]], device)
    assert tensor.kind is Kind.FLOAT
    check(tensor, [[1.0, 2.5], [-3.0, 4.25]], device.backend.float_dtype)


def test_from_data_nested_int_lists(device: Device) -> None:
    tensor = Tensor.from_data([[1, -2], [3, 4]], device)
    assert tensor.kind is Kind.INT
    check(tensor, [[1, -2], [3, 4]], device.backend.int_dtype)


def test_from_data_bool_lists(device: Device) -> None:
    tensor = Tensor.from_data([[True, False, True]], device)
    check(tensor, [[True, False, True]], DType.BOOL)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_from_data_with_a_dtype(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, (3, 4), dtype, -50, 50)
    check(Tensor.from_data(array, device, dtype), array, dtype)
    check(Tensor.from_data(TensorData(array), device, dtype), array, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_from_numpy_keeps_the_dtype(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, (2, 5), dtype, -50, 50)
    check(Tensor.from_numpy(array, device), array, dtype)


def test_from_data_of_a_numpy_array_takes_the_backend_dtype_of_its_kind(device: Device) -> None:
    array = np.array([1.5, 2.5], dtype=np.float64)
    check(Tensor.from_data(array, device), array, device.backend.float_dtype)
    check(Tensor.from_data(np.array([1, 2], dtype=np.int16), device), [1, 2], device.backend.int_dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_from_data_of_floats_into_ints_truncates(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    if dtype.is_signed:
        check(Tensor.from_data([1.7, -1.7, 2.5, -0.5], device, dtype), [1, -1, 2, 0], dtype)
    else:
        check(Tensor.from_data([1.7, 0.2, 2.5, 9.99], device, dtype), [1, 0, 2, 9], dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_from_data_of_ints_into_floats(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    check(Tensor.from_data([[1, -2], [30, 4]], device, dtype), [[1.0, -2.0], [30.0, 4.0]], dtype)


def test_from_data_into_bool_is_non_zero(device: Device) -> None:
    check(Tensor.from_data([0, 2, -1, 0], device, DType.BOOL), [False, True, True, False], DType.BOOL)
    check(Tensor.from_data([0.0, 0.5], device, DType.BOOL), [False, True], DType.BOOL)


def test_from_data_does_not_alias_the_array(device: Device) -> None:
    array = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    tensor = Tensor.from_numpy(array, device)
    array[0] = 100.0
    check(tensor, [1.0, 2.0, 3.0], DType.F32)


@pytest.mark.parametrize("value", [2.5, 7, True])
def test_from_data_of_a_scalar_has_rank_0(device: Device, value: object) -> None:
    tensor = Tensor.from_data(value, device)
    assert tensor.dims() == []
    assert tensor.rank == 0
    assert tensor.num_elements() == 1


def test_from_data_of_a_scalar_reads_back_with_rank_0(device: Device) -> None:
    check(Tensor.from_data(2.5, device), np.float64(2.5), device.backend.float_dtype)


def test_from_data_of_an_empty_list(device: Device) -> None:
    tensor = Tensor.from_data(TensorData(np.zeros((0, 3), dtype=np.float32)), device)
    check(tensor, np.zeros((0, 3)), device.backend.float_dtype)


def test_from_primitive_wraps_a_primitive(device: Device) -> None:
    tensor = Tensor.from_data([1.0, 2.0], device)
    again = Tensor.from_primitive(tensor.primitive, device)
    check(again, [1.0, 2.0], tensor.dtype)


# -- the *_like family --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_like_ops_keep_shape_dtype_and_device(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    source = make(random_array(rng, (2, 3), dtype), device)
    check(source.zeros_like(), np.zeros((2, 3)), dtype)
    check(source.ones_like(), np.ones((2, 3)), dtype)
    value = FILL[dtype.kind]
    check(source.full_like(value), np.full((2, 3), value), dtype)
    assert source.zeros_like().device == device


@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, *INT_DTYPES])
def test_random_like_keeps_shape_and_dtype(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    source = make(random_array(rng, (4, 5), dtype), device)
    result = source.random_like(Distribution.uniform(0, 3))
    assert result.dims() == [4, 5]
    assert result.dtype is dtype
    drawn = f64(values(result))
    assert drawn.min() >= 0
    assert drawn.max() <= 3


# -- random (float) -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_random_default_is_uniform_on_0_1(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = Tensor.random([50, 40], None, device, dtype)
    assert tensor.dtype is dtype
    assert tensor.dims() == [50, 40]
    drawn = f64(values(tensor))
    assert drawn.min() >= 0.0
    assert drawn.max() <= 1.0
    assert abs(drawn.mean() - 0.5) < 0.03
    assert len(np.unique(drawn)) > 50


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_random_uniform(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    drawn = f64(values(Tensor.random([2000], Distribution.uniform(-3.0, 5.0), device, dtype)))
    assert drawn.min() >= -3.0
    assert drawn.max() <= 5.0
    assert drawn.min() < -2.5
    assert drawn.max() > 4.5
    assert abs(drawn.mean() - 1.0) < 0.25


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_random_normal(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    drawn = f64(values(Tensor.random([4000], Distribution.normal(2.0, 0.5), device, dtype)))
    assert abs(drawn.mean() - 2.0) < 0.05
    assert abs(drawn.std() - 0.5) < 0.05


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("probability", [0.3, 0.5, 0.25, 0.875])
def test_random_bernoulli(device: Device, dtype: DType, probability: float) -> None:
    require_dtype(device, dtype)
    distribution = Distribution.bernoulli(probability)
    drawn = f64(values(Tensor.random([3, 4001], distribution, device, dtype)))
    assert set(np.unique(drawn)) <= {0.0, 1.0}
    assert abs(drawn.mean() - probability) < 0.02  # 12,003 draws: 4 standard deviations or more
    # no pattern along the values: neighbours (which share a random word) and rows are independent
    pairs = drawn[:, :-1] * drawn[:, 1:]
    assert abs(pairs.mean() - probability**2) < 0.025
    assert not np.array_equal(drawn[0], drawn[1])


def test_random_of_an_empty_shape(device: Device) -> None:
    check(Tensor.random([0, 3], None, device), np.zeros((0, 3)), device.backend.float_dtype)


def test_random_defaults_to_the_float_dtype(device: Device) -> None:
    assert Tensor.random([3], device=device).dtype is device.backend.float_dtype


# -- linspace, eye --------------------------------------------------------------------------------------
@pytest.mark.parametrize("steps", [0, 1, 2, 7])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_linspace(device: Device, dtype: DType, steps: int) -> None:
    require_dtype(device, dtype)
    check(Tensor.linspace(-1.0, 3.0, steps, device, dtype), np.linspace(-1.0, 3.0, steps), dtype, scale=2)


def test_linspace_downwards(device: Device) -> None:
    check(Tensor.linspace(2.0, -2.0, 5, device, DType.F32), [2.0, 1.0, 0.0, -1.0, -2.0], DType.F32)


@pytest.mark.parametrize("size", [0, 1, 4])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_eye(device: Device, dtype: DType, size: int) -> None:
    require_dtype(device, dtype)
    check(Tensor.eye(size, device, dtype), np.eye(size), dtype)


# -- cat, stack -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cat(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    sizes = [1, 3, 2]
    arrays = []
    for shape, size in zip(shapes, sizes):
        piece = list(shape)
        piece[dim] = size
        arrays.append(random_array(rng, piece, dtype, -9, 9))
    result = Tensor.cat([make(a, device) for a in arrays], dim)
    check(result, np.concatenate(arrays, axis=dim), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("dtype", [DType.F32, DType.I64, DType.BOOL])
def test_cat_of_laid_out_inputs(device: Device, rng: np.random.Generator, dtype: DType, layout: str) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, (3, 2), dtype, -9, 9), random_array(rng, (3, 4), dtype, -9, 9)
    result = Tensor.cat([laid_out(a, device, layout), laid_out(b, device, layout)], 1)
    check(result, np.concatenate([a, b], axis=1), dtype)


@pytest.mark.parametrize("dtype", [DType.F32, DType.I32, DType.BOOL])
def test_cat_with_empty_pieces(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, (2, 3), dtype), random_array(rng, (0, 3), dtype)
    check(Tensor.cat([make(b, device), make(a, device), make(b, device)], 0), a, dtype)


def test_cat_of_one_tensor(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (2, 3), DType.F32)
    check(Tensor.cat([make(a, device)], 1), a, DType.F32)


def test_cat_leaves_its_inputs_alone(device: Device, rng: np.random.Generator) -> None:
    a, b = random_array(rng, (2, 3), DType.F32), random_array(rng, (1, 3), DType.F32)
    ta, tb = make(a, device), make(b, device)
    Tensor.cat([ta, tb], 0)
    check(ta, a, DType.F32)
    check(tb, b, DType.F32)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_stack(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    arrays = [random_array(rng, (2, 3), dtype, -9, 9) for _ in range(3)]
    check(Tensor.stack([make(a, device) for a in arrays], dim), np.stack(arrays, axis=dim), dtype)


# -- triangle masks -------------------------------------------------------------------------------------
@pytest.mark.parametrize("diagonal", [-1, 0, 1, 3])
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3)], ids=str)
def test_triangle_masks(device: Device, shape: tuple[int, ...], diagonal: int) -> None:
    rows, cols = shape[-2:]
    # Burn's masks mark what the matching tril / triu / diagonal selection removes
    lower = np.broadcast_to(np.tri(rows, cols, diagonal, dtype=bool), shape)
    upper = np.broadcast_to(~np.tri(rows, cols, diagonal - 1, dtype=bool), shape)
    check(Tensor.tril_mask(shape, diagonal, device), ~lower, DType.BOOL)
    check(Tensor.triu_mask(shape, diagonal, device), ~upper, DType.BOOL)
    check(Tensor.diag_mask(shape, diagonal, device), ~(lower & upper), DType.BOOL)


def test_triangle_masks_match_burn(device: Device) -> None:
    """Burn's documented values for a 3x3 upper-triangle and diagonal mask."""
    check(Tensor.triu_mask([3, 3], 0, device), np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], bool), DType.BOOL)
    check(Tensor.diag_mask([3, 3], 1, device), np.array([[1, 0, 1], [1, 1, 0], [1, 1, 1]], bool), DType.BOOL)
