"""The value types of the API: TensorData, Tolerance, DType, Kind, Shape, Slice and Distribution."""

from __future__ import annotations

import dataclasses
import itertools
import math

import ml_dtypes
import numpy as np
import pytest

from burn_backend import (
    Bool,
    Device,
    Distribution,
    DType,
    Float,
    Int,
    Kind,
    Shape,
    Slice,
    Tensor,
    TensorData,
    Tolerance,
)
from burn_backend.kit import canonical_slices
from burn_backend.testing import FLOAT_DTYPES, INT_DTYPES, check, random_array, require_dtype
from burn_backend.testing.core._common import ALL_DTYPES

# -- TensorData ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "dtype", "shape"),
    [
        ([[1.0, 2.0], [3.0, 4.0]], DType.F32, [2, 2]),
        ([1, -2, 3], DType.I64, [3]),
        ([True, False], DType.BOOL, [2]),
        ([1, 2.5], DType.F32, [2]),
        (2.5, DType.F32, []),
        (7, DType.I64, []),
        ([[]], DType.F32, [1, 0]),
    ],
    ids=["floats", "ints", "bools", "mixed", "float-scalar", "int-scalar", "empty"],
)
def test_tensor_data_infers_burn_defaults(values: object, dtype: DType, shape: list[int]) -> None:
    data = TensorData(values)
    assert data.dtype is dtype
    assert data.shape == Shape(shape)
    assert data.kind is dtype.kind
    assert data.num_elements() == math.prod(shape)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_data_keeps_a_numpy_dtype(rng: np.random.Generator, dtype: DType) -> None:
    array = random_array(rng, (2, 3), dtype, -50, 50)
    data = TensorData(array)
    assert data.dtype is dtype
    assert np.array_equal(data.to_numpy(), array)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_data_converts_to_a_given_dtype(dtype: DType) -> None:
    data = TensorData([[0, 1, 2]], dtype)
    assert data.dtype is dtype
    expected = [[False, True, True]] if dtype is DType.BOOL else [[0, 1, 2]]
    assert data.to_numpy().tolist() == expected


def test_tensor_data_takes_a_dtype_name() -> None:
    assert TensorData([1, 2], "f16").dtype is DType.F16
    assert TensorData([1, 2], "u8").dtype is DType.U8


def test_tensor_data_reshapes_to_a_given_shape() -> None:
    data = TensorData([1, 2, 3, 4, 5, 6], shape=[2, 3])
    assert data.shape == Shape(2, 3)
    assert data.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_tensor_data_rejects_a_shape_of_another_size() -> None:
    with pytest.raises(ValueError, match="cannot take shape"):
        TensorData([1, 2, 3], shape=[2, 2])


@pytest.mark.parametrize("values", [["a", "b"], [1 + 2j], [None]], ids=["str", "complex", "none"])
def test_tensor_data_rejects_values_that_are_not_numbers(values: list[object]) -> None:
    with pytest.raises(TypeError):
        TensorData(values)


def test_tensor_data_of_tensor_data_copies_the_values() -> None:
    first = TensorData([1.0, 2.0])
    second = TensorData(first, DType.F64)
    assert second.dtype is DType.F64
    assert first.dtype is DType.F32
    assert second.tolist() == [1.0, 2.0]


def test_tensor_data_copies_its_source() -> None:
    array = np.array([1, 2, 3], dtype=np.int32)
    data = TensorData(array)
    array[0] = 99
    assert data.tolist() == [1, 2, 3]


def test_tensor_data_is_read_only() -> None:
    data = TensorData([1.0, 2.0])
    assert not data.to_numpy().flags.writeable
    with pytest.raises(ValueError):
        data.to_numpy()[0] = 5.0


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (0, 2)], ids=str)
def test_bytes_round_trip(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]) -> None:
    data = TensorData(random_array(rng, shape, dtype, -100, 100))
    assert len(data.bytes) == data.num_elements() * dtype.size
    again = TensorData.from_bytes(data.bytes, shape, dtype)
    assert again.dtype is dtype
    assert again.shape == Shape(shape)
    assert again == data


def test_bytes_are_little_endian_in_c_order() -> None:
    data = TensorData(np.array([[1, 2], [3, 258]], dtype=np.uint16))
    assert data.bytes == bytes([1, 0, 2, 0, 3, 0, 2, 1])
    transposed = TensorData(np.array([[1, 2], [3, 4]], dtype=np.uint8).T)
    assert transposed.bytes == bytes([1, 3, 2, 4])


def test_from_bytes_rejects_a_wrong_length() -> None:
    with pytest.raises(ValueError, match="needs 8"):
        TensorData.from_bytes(b"\x00" * 6, [2], DType.F32)


def test_from_bytes_takes_a_dtype_name() -> None:
    data = TensorData.from_bytes(np.array([1.5, -2.0], dtype="<f4").tobytes(), [2], "f32")
    assert data.tolist() == [1.5, -2.0]


@pytest.mark.parametrize(
    ("source", "dtype", "expected"),
    [
        ([1.7, -1.7, 0.5], DType.I32, [1, -1, 0]),
        ([0.0, 2.5, -1.0], DType.BOOL, [False, True, True]),
        ([1, 2], DType.F16, [1.0, 2.0]),
        ([True, False], DType.U8, [1, 0]),
        ([300, -1], DType.I16, [300, -1]),
    ],
    ids=["float-int", "float-bool", "int-float", "bool-int", "int-int"],
)
def test_convert(source: list[object], dtype: DType, expected: list[object]) -> None:
    converted = TensorData(source).convert(dtype)
    assert converted.dtype is dtype
    assert converted.tolist() == expected


def test_convert_to_the_same_dtype_is_the_same_data() -> None:
    data = TensorData([1.0])
    assert data.convert(DType.F32) is data
    assert data.convert("f32") is data


def test_equality_needs_equal_values_and_dtype() -> None:
    assert TensorData([1.0, 2.0]) == TensorData([1.0, 2.0])
    assert TensorData([1.0, 2.0]) != TensorData([1.0, 3.0])
    assert TensorData([1.0, 2.0]) != TensorData([1.0, 2.0], DType.F64)
    assert TensorData([1, 2]) != TensorData([[1, 2]])
    assert TensorData([1.0]) != [1.0]


def test_equality_of_floats_matches_nan_with_nan() -> None:
    assert TensorData([math.nan, 1.0]) == TensorData([math.nan, 1.0])
    assert TensorData([math.nan, 1.0]) != TensorData([0.0, 1.0])


def test_tensor_data_is_not_hashable() -> None:
    with pytest.raises(TypeError):
        hash(TensorData([1.0]))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_repr_names_dtype_and_shape(dtype: DType) -> None:
    text = repr(TensorData([[1, 0, 1]], dtype))
    assert text.startswith("TensorData(")
    assert f"dtype={dtype}" in text
    assert "shape=[1, 3]" in text


def test_tolist_of_bf16_gives_python_floats() -> None:
    values = TensorData([[1.5, -2.0]], DType.BF16).tolist()
    assert values == [[1.5, -2.0]]
    assert all(type(v) is float for v in values[0])


def test_tolist_of_rank_0_gives_a_scalar() -> None:
    assert TensorData(3).tolist() == 3
    assert TensorData(2.5).tolist() == 2.5


def test_assert_eq_passes_on_equal_data() -> None:
    TensorData([[1, 2], [3, 4]]).assert_eq(TensorData([[1, 2], [3, 4]]))
    TensorData([1.0, math.nan]).assert_eq(TensorData([1.0, math.nan]))


def test_assert_eq_names_the_first_difference() -> None:
    with pytest.raises(AssertionError, match=r"1 of 4 values differ[\s\S]*at \[1, 0\]: 3 != 5"):
        TensorData([[1, 2], [3, 4]]).assert_eq(TensorData([[1, 2], [5, 4]]))


def test_assert_eq_checks_the_dtype_when_strict() -> None:
    with pytest.raises(AssertionError, match="dtypes differ: i32 and i64"):
        TensorData([1, 2], DType.I32).assert_eq(TensorData([1, 2]))
    TensorData([1, 2], DType.I32).assert_eq(TensorData([1, 2]), strict=False)


def test_assert_eq_checks_the_shape() -> None:
    with pytest.raises(AssertionError, match=r"shapes differ: \[2\] and \[1, 2\]"):
        TensorData([1, 2]).assert_eq(TensorData([[1, 2]]), strict=False)


def test_assert_eq_takes_plain_values() -> None:
    TensorData([1, 2]).assert_eq([1, 2])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_assert_approx_eq_uses_the_tolerance_of_the_dtype(dtype: DType) -> None:
    tolerance = Tolerance.for_dtype(dtype)
    inside = 1.0 + 0.5 * tolerance.relative
    outside = 1.0 + 3.0 * (tolerance.relative + tolerance.absolute)
    TensorData([1.0], DType.F64).assert_approx_eq(TensorData([inside], DType.F64), tolerance)
    with pytest.raises(AssertionError, match="largest finite absolute error"):
        TensorData([1.0], DType.F64).assert_approx_eq(TensorData([outside], DType.F64), tolerance)


def test_assert_approx_eq_defaults_to_the_tolerance_of_its_dtype() -> None:
    TensorData([1.0], DType.F16).assert_approx_eq(TensorData([1.001], DType.F64))
    with pytest.raises(AssertionError):
        TensorData([1.0], DType.F64).assert_approx_eq(TensorData([1.001], DType.F64))


def test_assert_approx_eq_with_an_absolute_tolerance() -> None:
    TensorData([0.0, 10.0]).assert_approx_eq(TensorData([0.05, 10.05]), Tolerance(0.0, 0.1))
    with pytest.raises(AssertionError, match="1 of 2 values differ"):
        TensorData([0.0, 10.0]).assert_approx_eq(TensorData([0.05, 10.5]), Tolerance(0.0, 0.1))


@pytest.mark.parametrize(
    ("actual", "expected", "ok"),
    [
        (math.nan, math.nan, True),
        (math.nan, 1.0, False),
        (1.0, math.nan, False),
        (math.inf, math.inf, True),
        (-math.inf, -math.inf, True),
        (math.inf, -math.inf, False),
        (-math.inf, math.inf, False),
        (1e30, math.inf, False),
        (math.inf, 1e30, False),
        (1.0, math.inf, False),
    ],
)
def test_assert_approx_eq_with_special_values(actual: float, expected: float, ok: bool) -> None:
    data, reference = TensorData([actual]), TensorData([expected])
    if ok:
        data.assert_approx_eq(reference, Tolerance(0.1, 0.1))
    else:
        with pytest.raises(AssertionError):
            data.assert_approx_eq(reference, Tolerance(0.1, 0.1))


def test_assert_approx_eq_checks_the_shape() -> None:
    with pytest.raises(AssertionError, match="shapes differ"):
        TensorData([1.0, 2.0]).assert_approx_eq(TensorData([1.0]))


# -- Tolerance ----------------------------------------------------------------------------------------
def test_tolerances_grow_as_precision_drops() -> None:
    tolerances = [Tolerance.for_dtype(d) for d in (DType.F64, DType.F32, DType.F16, DType.BF16)]
    for finer, coarser in itertools.pairwise(tolerances):
        assert 0 < finer.relative < coarser.relative
        assert 0 < finer.absolute < coarser.absolute


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_tolerance_covers_half_an_ulp_of_its_dtype(dtype: DType) -> None:
    eps = float(ml_dtypes.finfo(dtype.numpy).eps)  # type: ignore[no-untyped-call]
    assert Tolerance.for_dtype(dtype).relative >= eps / 2


@pytest.mark.parametrize("dtype", [*INT_DTYPES, DType.BOOL])
def test_tolerance_of_exact_dtypes_is_zero(dtype: DType) -> None:
    assert Tolerance.for_dtype(dtype) == Tolerance(0.0, 0.0)


def test_tolerance_scaling() -> None:
    base = Tolerance.for_dtype(DType.F32)
    assert base.scaled(4.0) == Tolerance(base.relative * 4.0, base.absolute * 4.0)
    assert Tolerance.strict(DType.F32) == base.scaled(0.1)
    assert Tolerance.permissive(DType.F32) == base.scaled(10.0)


def test_tolerance_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Tolerance(1.0, 1.0).relative = 2.0  # type: ignore[misc]


# -- DType, Kind ----------------------------------------------------------------------------------------
DTYPE_FACTS = [
    (DType.F64, "f64", Kind.FLOAT, True, 8),
    (DType.F32, "f32", Kind.FLOAT, True, 4),
    (DType.F16, "f16", Kind.FLOAT, True, 2),
    (DType.BF16, "bf16", Kind.FLOAT, True, 2),
    (DType.I64, "i64", Kind.INT, True, 8),
    (DType.I32, "i32", Kind.INT, True, 4),
    (DType.I16, "i16", Kind.INT, True, 2),
    (DType.I8, "i8", Kind.INT, True, 1),
    (DType.U64, "u64", Kind.INT, False, 8),
    (DType.U32, "u32", Kind.INT, False, 4),
    (DType.U16, "u16", Kind.INT, False, 2),
    (DType.U8, "u8", Kind.INT, False, 1),
    (DType.BOOL, "bool", Kind.BOOL, False, 1),
]


@pytest.mark.parametrize(
    ("dtype", "name", "kind", "signed", "size"), DTYPE_FACTS, ids=[f[1] for f in DTYPE_FACTS]
)
def test_dtype_facts(dtype: DType, name: str, kind: Kind, signed: bool, size: int) -> None:
    assert str(dtype) == name
    assert repr(dtype) == f"DType.{dtype.name}"
    assert dtype.kind is kind
    assert dtype.is_float == (kind is Kind.FLOAT)
    assert dtype.is_int == (kind is Kind.INT)
    assert dtype.is_signed == signed
    assert dtype.size == size
    assert dtype.numpy.itemsize == size
    assert DType.of(name) is dtype
    assert DType.of(dtype) is dtype
    assert DType.of(dtype.numpy) is dtype
    assert DType.of(dtype.numpy.type) is dtype


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (float, DType.F64),
        (int, DType.I64),
        (bool, DType.BOOL),
        (np.float32, DType.F32),
        (ml_dtypes.bfloat16, DType.BF16),
        (np.dtype("uint16"), DType.U16),
        ("float64", DType.F64),
        ("int8", DType.I8),
    ],
    ids=["float", "int", "bool", "np.float32", "bfloat16", "np.dtype", "float64", "int8"],
)
def test_dtype_of_other_names(value: object, dtype: DType) -> None:
    assert DType.of(value) is dtype


@pytest.mark.parametrize("value", ["f12", "complex64", np.complex64, object, [1], "str"])
def test_dtype_of_an_unsupported_type(value: object) -> None:
    with pytest.raises(TypeError, match="not a supported dtype"):
        DType.of(value)


def test_kinds() -> None:
    assert Float is Kind.FLOAT
    assert Int is Kind.INT
    assert Bool is Kind.BOOL
    assert [repr(k) for k in Kind] == ["Float", "Int", "Bool"]


# -- Shape ----------------------------------------------------------------------------------------------
def test_shape_constructors_agree() -> None:
    assert Shape(2, 3) == Shape([2, 3]) == Shape((2, 3)) == (2, 3)
    assert Shape(4) == (4,)
    assert Shape(d for d in (1, 2)) == (1, 2)
    assert Shape(np.array([2, 5])) == (2, 5)
    assert Shape() == ()


@pytest.mark.parametrize(
    ("dims", "rank", "count"), [((), 0, 1), ((5,), 1, 5), ((2, 3, 4), 3, 24), ((2, 0, 3), 3, 0)], ids=str
)
def test_shape_rank_and_elements(dims: tuple[int, ...], rank: int, count: int) -> None:
    shape = Shape(dims)
    assert shape.rank == rank
    assert shape.num_elements() == count
    assert list(shape) == list(dims)


def test_shape_repr() -> None:
    assert repr(Shape(2, 3)) == "Shape([2, 3])"
    assert repr(Shape()) == "Shape([])"


def test_shape_rejects_negative_dims() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        Shape(2, -1)


def test_shape_rejects_non_integers() -> None:
    with pytest.raises(TypeError, match="holds ints"):
        Shape([2.0, 3])  # type: ignore[list-item]


def test_shape_is_a_tuple() -> None:
    shape = Shape(2, 3)
    assert isinstance(shape, tuple)
    assert shape[1] == 3
    assert hash(shape) == hash((2, 3))


def test_tensor_shape_is_a_shape(device: Device) -> None:
    tensor = Tensor.zeros([2, 3, 4], device)
    assert tensor.shape == Shape(2, 3, 4)
    assert isinstance(tensor.shape, Shape)
    assert tensor.dims() == [2, 3, 4]
    assert tensor.rank == tensor.ndim == 3
    assert tensor.num_elements() == 24


# -- Slice ----------------------------------------------------------------------------------------------
def burn_range(start: int, end: int | None, step: int, size: int) -> list[int]:
    """Burn's slice, written out: clamp the bounds, take the range, walk it by ``step`` (backwards
    from its end when the step is negative)."""

    def bound(index: int) -> int:
        return min(max(index + size if index < 0 else index, 0), size)

    first, last = bound(start), size if end is None else bound(end)
    return list(range(first, last))[::step]


SLICES = [
    (Slice(), 5),
    (Slice(1, None), 5),
    (Slice(-2, None), 5),
    (Slice(0, -1), 5),
    (Slice(0, 5, 2), 5),
    (Slice(1, 6, 3), 7),
    (Slice(0, 5, -1), 5),
    (Slice(0, 6, -2), 6),
    (Slice(1, None, -2), 6),
    (Slice(0, 4, -2), 4),
    (Slice(1, 4, -1), 6),
    (Slice(0, None, -3), 7),
    (Slice(-3, -1, -1), 6),
    (Slice(2, 2), 5),
    (Slice(3, 1), 5),
    (Slice(3, 1, -1), 5),
    (Slice(-10, 10), 5),
    (Slice(0, 3), 0),
]


@pytest.mark.parametrize(
    ("piece", "size"), SLICES, ids=[f"{s.start}:{s.end}:{s.step}@{n}" for s, n in SLICES]
)
def test_slice_indices_follow_burn(piece: Slice, size: int) -> None:
    selected = list(range(size))[piece.indices(size)]
    assert selected == burn_range(piece.start, piece.end, piece.step, size)


def test_slice_negative_step_examples() -> None:
    assert list(range(5))[Slice(0, 5, -1).indices(5)] == [4, 3, 2, 1, 0]
    assert list(range(4))[Slice(0, 4, -2).indices(4)] == [3, 1]


def test_slice_defaults() -> None:
    piece = Slice()
    assert (piece.start, piece.end, piece.step) == (0, None, 1)


def test_slice_rejects_step_zero() -> None:
    with pytest.raises(ValueError, match="step"):
        Slice(0, 3, 0).indices(3)


def test_slice_is_frozen_and_hashable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Slice().start = 2  # type: ignore[misc]
    assert Slice(1, 2) == Slice(1, 2, 1)
    assert len({Slice(1, 2), Slice(1, 2)}) == 1


def test_canonical_slices_fill_missing_dims_and_normalize() -> None:
    slices = canonical_slices("op", [4, 5, 6], [1, slice(-2, None)])
    assert slices == (slice(1, 2, 1), slice(3, 5, 1), slice(0, 6, 1))


def test_canonical_slices_of_negative_steps_are_in_range() -> None:
    (piece,) = canonical_slices("op", [5], [slice(None, None, -1)])
    assert piece.start == 4
    assert piece.step == -1
    assert list(range(5))[piece] == [4, 3, 2, 1, 0]


def test_canonical_slices_errors() -> None:
    with pytest.raises(IndexError, match="op: 3 ranges given for a tensor of rank 2"):
        canonical_slices("op", [2, 2], [0, 0, 0])
    with pytest.raises(IndexError, match="op: index 2 is out of range for dim 0 of size 2"):
        canonical_slices("op", [2], [2])
    with pytest.raises(ValueError, match="step must not be zero"):
        canonical_slices("op", [2], [slice(None, None, 0)])


# -- Distribution ---------------------------------------------------------------------------------------
def test_distributions() -> None:
    assert Distribution.default().kind == "default"
    bernoulli = Distribution.bernoulli(0.25)
    assert (bernoulli.kind, bernoulli.probability) == ("bernoulli", 0.25)
    uniform = Distribution.uniform(-1, 3)
    assert (uniform.kind, uniform.low, uniform.high) == ("uniform", -1.0, 3.0)
    normal = Distribution.normal(2, 0.5)
    assert (normal.kind, normal.mean, normal.std) == ("normal", 2.0, 0.5)


def test_distribution_reprs() -> None:
    assert repr(Distribution.default()) == "Distribution.default()"
    assert repr(Distribution.bernoulli(0.5)) == "Distribution.bernoulli(0.5)"
    assert repr(Distribution.uniform(0, 2)) == "Distribution.uniform(0.0, 2.0)"
    assert repr(Distribution.normal(0.0, 2.0)) == "Distribution.normal(mean=0.0, std=2.0)"


def test_distributions_are_values() -> None:
    assert Distribution.uniform(0, 1) == Distribution.uniform(0.0, 1.0)
    assert Distribution.normal(0, 1) != Distribution.uniform(0, 1)


@pytest.mark.parametrize(
    ("make_distribution", "message"),
    [
        (lambda: Distribution.bernoulli(1.5), "probability"),
        (lambda: Distribution.bernoulli(-0.1), "probability"),
        (lambda: Distribution.uniform(2, 1), "below high"),
        (lambda: Distribution.uniform(1, 1), "below high"),
        (lambda: Distribution.normal(0, -1), "non-negative"),
    ],
    ids=["bernoulli-high", "bernoulli-low", "uniform-reversed", "uniform-empty", "normal-negative-std"],
)
def test_distribution_validation(make_distribution: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_distribution()  # type: ignore[operator]


# -- data through tensors ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (3, 0), (2, 3, 2)], ids=str)
def test_to_data_round_trip(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    array = random_array(rng, shape, dtype, -100, 100)
    tensor = Tensor.from_data(TensorData(array), device, dtype)
    data = tensor.to_data()
    assert data.dtype is dtype
    assert data.shape == Shape(shape)
    assert data == TensorData(array)
    assert tensor.into_data() == data
    check(tensor, array, dtype)


def test_to_data_is_read_only_and_stable(device: Device) -> None:
    tensor = Tensor.from_data([1.0, 2.0], device)
    data = tensor.to_data()
    with pytest.raises(ValueError):
        data.to_numpy()[0] = 9.0
    assert tensor.to_data() == data
