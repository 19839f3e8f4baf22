"""Errors of the Tensor API: each names the op, and the dtypes, kinds, shapes or dims at fault."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Kind, Slice, Tensor
from burn_backend.testing import make, require_dtype
from burn_backend.testing.core._common import index_tensor

Op = Callable[..., Any]


def floats(device: Device, shape: tuple[int, ...] = (2, 3), dtype: DType = DType.F32) -> Tensor:
    return make(np.arange(1, np.prod(shape) + 1, dtype=np.float64).reshape(shape), device, dtype)


def ints(device: Device, shape: tuple[int, ...] = (2, 3), dtype: DType | None = None) -> Tensor:
    return make(np.arange(np.prod(shape)).reshape(shape), device, dtype or device.backend.int_dtype)


def bools(device: Device, shape: tuple[int, ...] = (2, 3)) -> Tensor:
    return make(np.arange(np.prod(shape)).reshape(shape) % 2 == 0, device, DType.BOOL)


# -- dtypes and kinds of operands -------------------------------------------------------------------
BINARY: dict[str, Op] = {
    "add": lambda a, b: a.add(b),
    "sub": lambda a, b: a.sub(b),
    "mul": lambda a, b: a.mul(b),
    "div": lambda a, b: a.div(b),
    "remainder": lambda a, b: a.remainder(b),
    "equal": lambda a, b: a.equal(b),
    "not_equal": lambda a, b: a.not_equal(b),
    "greater": lambda a, b: a.greater(b),
    "greater_equal": lambda a, b: a.greater_equal(b),
    "lower": lambda a, b: a.lower(b),
    "lower_equal": lambda a, b: a.lower_equal(b),
    "mask_where": lambda a, b: a.mask_where(a.greater_elem(1), b),
    "slice_assign": lambda a, b: a.slice_assign([slice(0, 2)], b),
}
FLOAT_BINARY: dict[str, Op] = {
    "atan2": lambda a, b: a.atan2(b),
    "hypot": lambda a, b: a.hypot(b),
    "powf": lambda a, b: a.powf(b),
    "is_close": lambda a, b: a.is_close(b),
}
INT_BINARY: dict[str, Op] = {
    "bitwise_and": lambda a, b: a.bitwise_and(b),
    "bitwise_or": lambda a, b: a.bitwise_or(b),
    "bitwise_xor": lambda a, b: a.bitwise_xor(b),
    "bitwise_left_shift": lambda a, b: a.bitwise_left_shift(b),
    "bitwise_right_shift": lambda a, b: a.bitwise_right_shift(b),
}
DTYPE_PAIRS = [
    (DType.F32, DType.F64),
    (DType.F16, DType.BF16),
    (DType.F32, DType.I64),
    (DType.I32, DType.F32),
]


def dtype_message(op: str, a: Tensor, b: Tensor) -> str:
    return rf"{op}: dtypes differ: .*{a.dtype}.*{b.dtype}"


@pytest.mark.parametrize(
    ("op", "lhs", "rhs"),
    [
        pytest.param(op, lhs, rhs, id=f"{op}-{lhs}-{rhs}")
        for op in [*BINARY, *FLOAT_BINARY]
        for lhs, rhs in DTYPE_PAIRS
        if lhs.is_float or op in BINARY
    ],
)
def test_dtype_mismatch_names_both_dtypes(device: Device, op: str, lhs: DType, rhs: DType) -> None:
    require_dtype(device, lhs)
    require_dtype(device, rhs)
    a, b = floats(device, dtype=lhs), floats(device, dtype=rhs)
    with pytest.raises(TypeError, match=dtype_message(op, a, b)):
        {**BINARY, **FLOAT_BINARY}[op](a, b)


@pytest.mark.parametrize("op", [*BINARY, *INT_BINARY])
def test_int_dtype_mismatch_names_both_dtypes(device: Device, op: str) -> None:
    require_dtype(device, DType.I32)
    require_dtype(device, DType.I16)
    a, b = ints(device, dtype=DType.I32), ints(device, dtype=DType.I16)
    with pytest.raises(TypeError, match=dtype_message(op, a, b)):
        {**BINARY, **INT_BINARY}[op](a, b)


def test_dtype_mismatch_message_suggests_a_cast(device: Device) -> None:
    with pytest.raises(TypeError, match=r"no implicit promotion, cast one side with \.cast"):
        floats(device) + ints(device)


@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a.matmul(b),
        lambda a, b: Tensor.cat([a, b], 0),
        lambda a, b: Tensor.stack([a, b], 0),
        lambda a, b: a.cross(b),
    ],
    ids=["matmul", "cat", "stack", "cross"],
)
def test_other_ops_refuse_mixed_dtypes(device: Device, op: Op) -> None:
    require_dtype(device, DType.F64)
    a, b = floats(device, (3, 3)), floats(device, (3, 3), DType.F64)
    with pytest.raises(TypeError, match="dtypes differ"):
        op(a, b)


def test_cat_refuses_mixed_kinds(device: Device) -> None:
    with pytest.raises(TypeError, match="cat: dtypes differ"):
        Tensor.cat([floats(device), bools(device)], 0)


def test_binary_ops_need_a_tensor_or_a_number(device: Device) -> None:
    a = floats(device)
    with pytest.raises(TypeError, match="add: expected a number"):
        a + "one"  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="matmul: expected a Tensor"):
        a.matmul(np.ones((3, 2)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="equal: expected a number"):
        a == None  # noqa: E711, B015


def method(name: str) -> Op:
    """``tensor.name(*args)`` as a function of the tensor and the args."""

    def call(tensor: Tensor, *args: Any) -> Any:
        return getattr(tensor, name)(*args)

    return call


FLOAT_UNARY = (
    "exp", "log", "log1p", "sqrt", "cos", "sin", "tan", "cosh", "sinh", "tanh", "acos", "acosh", "asin",
    "asinh", "atan", "atanh", "round", "floor", "ceil", "trunc", "erf", "recip", "rsqrt", "is_nan",
    "is_inf",
)  # fmt: skip
FLOAT_ONLY: dict[str, Op] = {
    **{name: method(name) for name in FLOAT_UNARY},
    "powf": lambda t: t.powf(2.0),
    "atan2": lambda t: t.atan2(t),
    "hypot": lambda t: t.hypot(t),
    "cross": lambda t: t.cross(t, 0),
    "var": lambda t: t.var(0),
    "var_bias": lambda t: t.var_bias(0),
    "is_close": lambda t: t.is_close(t),
    "set_require_grad": lambda t: t.set_require_grad(True),
}


@pytest.mark.parametrize("kind", [Kind.INT, Kind.BOOL], ids=["Int", "Bool"])
@pytest.mark.parametrize("op", list(FLOAT_ONLY))
def test_float_ops_refuse_other_kinds(device: Device, op: str, kind: Kind) -> None:
    tensor = ints(device, (3, 3)) if kind is Kind.INT else bools(device, (3, 3))
    with pytest.raises(TypeError, match=rf"{op}: expected a Float tensor, got an? (Int|Bool) .*\.float\(\)"):
        FLOAT_ONLY[op](tensor)


NUMERIC_ONLY: dict[str, Op] = {
    "add": lambda t: t + t,
    "sub": lambda t: t - 1,
    "mul": lambda t: t * t,
    "div": lambda t: t.div(t),
    "remainder": lambda t: t % t,
    "neg": lambda t: -t,
    "abs": lambda t: abs(t),
    "sign": lambda t: t.sign(),
    "square": lambda t: t.square(),
    "clamp": lambda t: t.clamp(0, 1),
    "clamp_min": lambda t: t.clamp_min(0),
    "clamp_max": lambda t: t.clamp_max(1),
    "powi": lambda t: t.powi(2),
    "matmul": lambda t: t @ t,
    "greater": lambda t: t > t,
    "lower_equal": lambda t: t <= False,
    "sum": lambda t: t.sum(),
    "sum_dim": lambda t: t.sum_dim(0),
    "mean": lambda t: t.mean(),
    "prod": lambda t: t.prod(),
    "max": lambda t: t.max(),
    "min_dim": lambda t: t.min_dim(0),
    "max_abs": lambda t: t.max_abs(),
    "argmax": lambda t: t.argmax(0),
    "argmin": lambda t: t.argmin(0),
    "cumsum": lambda t: t.cumsum(0),
    "cummax": lambda t: t.cummax(0),
    "sort": lambda t: t.sort(),
    "argsort": lambda t: t.argsort(),
    "topk": lambda t: t.topk(1),
    "max_dim_with_indices": lambda t: t.max_dim_with_indices(0),
}


@pytest.mark.parametrize("op", list(NUMERIC_ONLY))
def test_numeric_ops_refuse_bool_tensors(device: Device, op: str) -> None:
    with pytest.raises(TypeError, match=r"expected a Float or Int tensor, got a Bool"):
        NUMERIC_ONLY[op](bools(device, (3, 3)))


@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.BOOL], ids=["Float", "Bool"])
@pytest.mark.parametrize("op", [*INT_BINARY, "bitwise_not"])
def test_bitwise_ops_need_int_tensors(device: Device, op: str, kind: Kind) -> None:
    tensor = floats(device) if kind is Kind.FLOAT else bools(device)
    args = () if op == "bitwise_not" else (tensor,)
    with pytest.raises(TypeError, match=rf"{op}: expected an Int tensor"):
        getattr(tensor, op)(*args)


@pytest.mark.parametrize("op", ["bool_and", "bool_or", "bool_xor", "bool_not"])
@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT], ids=["Float", "Int"])
def test_logic_ops_need_bool_tensors(device: Device, op: str, kind: Kind) -> None:
    tensor = floats(device) if kind is Kind.FLOAT else ints(device)
    args = () if op == "bool_not" else (tensor,)
    with pytest.raises(TypeError, match=rf"{op}: expected a Bool tensor"):
        getattr(tensor, op)(*args)


def test_true_division_of_ints_is_an_error(device: Device) -> None:
    with pytest.raises(TypeError, match="true division of an Int tensor"):
        ints(device) / 2
    with pytest.raises(TypeError, match="expected a Float tensor"):
        2 / ints(device)


def test_int_scalars_for_int_tensors(device: Device) -> None:
    tensor = ints(device)
    with pytest.raises(TypeError, match=r"add: expected an int .*\.float\(\)"):
        tensor + 1.5
    with pytest.raises(TypeError, match=r"mul: expected an int .*\.float\(\)"):
        tensor * 2.0
    with pytest.raises(TypeError, match=r"mask_fill: expected an int .*\.float\(\)"):
        tensor.mask_fill(tensor > 1, 0.5)
    with pytest.raises(TypeError, match="expected an int"):
        tensor + True


def test_bool_scalars_for_bool_tensors(device: Device) -> None:
    tensor = bools(device)
    with pytest.raises(TypeError, match="expected a bool"):
        tensor.mask_fill(tensor, 2)
    with pytest.raises(TypeError, match="expected a bool"):
        tensor.equal_elem(0.5)


def test_float_tensors_refuse_bool_scalars(device: Device) -> None:
    with pytest.raises(TypeError, match="expected a number"):
        floats(device) + True


def test_elem_comparisons_refuse_tensors(device: Device) -> None:
    tensor = floats(device)
    with pytest.raises(TypeError, match=r"greater_elem: expected a scalar, got a tensor; use greater"):
        tensor.greater_elem(tensor)  # type: ignore[arg-type]


def test_powi_needs_an_int_exponent(device: Device) -> None:
    tensor = floats(device)
    with pytest.raises(TypeError, match="powi: expected an int exponent"):
        tensor.powi(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="powi"):
        tensor.powi(tensor)


def test_int_powi_refuses_negative_exponents(device: Device) -> None:
    with pytest.raises(ValueError, match="negative exponent"):
        ints(device).powi(-1)


def test_conversions_check_the_target_kind(device: Device) -> None:
    with pytest.raises(TypeError, match="float: i32 is not a float dtype"):
        floats(device).float(DType.I32)
    with pytest.raises(TypeError, match="int: f32 is not an int dtype"):
        ints(device).int(DType.F32)


# -- shapes -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [op for op in [*BINARY, *FLOAT_BINARY] if op != "slice_assign"])
def test_lower_ranks_align_from_the_right(device: Device, op: str) -> None:
    """Missing leading dims stretch (NumPy's rule), but the trailing dims must still broadcast: [2]
    aligns with the 3 of [2, 3], not with the 2."""
    a, b = floats(device, (2, 3)), floats(device, (2,))
    message = rf"{op}: shapes \[2, 3\],? .*\[2\] do not broadcast: aligned from the right"
    with pytest.raises(ValueError, match=message):
        {**BINARY, **FLOAT_BINARY}[op](a, b)


@pytest.mark.parametrize("op", [op for op in [*BINARY, *FLOAT_BINARY] if op != "slice_assign"])
def test_dims_that_do_not_broadcast_are_an_error(device: Device, op: str) -> None:
    a, b = floats(device, (2, 3)), floats(device, (3, 3))
    with pytest.raises(ValueError, match=rf"{op}: shapes \[2, 3\],? .*\[3, 3\] do not broadcast"):
        {**BINARY, **FLOAT_BINARY}[op](a, b)


@pytest.mark.parametrize("op", list(INT_BINARY))
def test_int_ops_check_broadcasting(device: Device, op: str) -> None:
    with pytest.raises(ValueError, match=rf"{op}: shapes \[2, 3\] and \[2, 2\] do not broadcast"):
        INT_BINARY[op](ints(device, (2, 3)), ints(device, (2, 2)))


def test_bool_ops_check_broadcasting(device: Device) -> None:
    with pytest.raises(ValueError, match="bool_and: shapes"):
        bools(device, (2, 3)).bool_and(bools(device, (2,)))


def test_powi_with_exponents_that_do_not_broadcast(device: Device) -> None:
    with pytest.raises(ValueError, match=r"powi: shapes \[2, 3\] and \[2, 2\]"):
        floats(device).powi(ints(device, (2, 2)))


@pytest.mark.parametrize(
    ("lhs", "rhs", "message"),
    [
        ((3,), (3,), "at least 2"),
        ((2, 3), (3,), "rank of at least 2"),
        ((2, 3), (4, 2), "inner dimensions differ"),
        ((2, 2, 3), (3, 3, 2), "do not broadcast"),
    ],
    ids=["rank-1", "ranks", "inner", "batch"],
)
def test_matmul_shape_errors(
    device: Device, lhs: tuple[int, ...], rhs: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=f"matmul: .*{message}|matmul: {message}"):
        floats(device, lhs).matmul(floats(device, rhs))


def test_cross_needs_size_3(device: Device) -> None:
    with pytest.raises(ValueError, match="cross: dim 1 must have size 3"):
        floats(device, (2, 4)).cross(floats(device, (2, 4)), 1)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (lambda t: t.reshape([4, -1]), "cannot reshape"),
        (lambda t: t.reshape([-1, -1]), "at most one -1"),
        (lambda t: t.reshape([7]), "cannot reshape"),
        (lambda t: t.reshape([-2, -3]), "cannot reshape"),
        (lambda t: t.expand([4, 3]), "cannot become"),
        (lambda t: t.expand([3]), "fewer dims"),
        (lambda t: t.expand([-1, 2, 3]), "new leading dims"),
        (lambda t: t.squeeze_dim(0), "has size 2, not 1"),
        (lambda t: t.squeeze_dims([1]), "has size 3, not 1"),
        (lambda t: t.squeeze_dims([0, -2]), "repeated dims"),
        (lambda t: t.permute([0]), "axes given for a tensor of rank 2"),
        (lambda t: t.permute([1, 1]), "repeated dims"),
        (lambda t: t.flip([0, 0]), "repeated dims"),
        (lambda t: t.flatten(1, 0), "start_dim 1 is after end_dim 0"),
        (lambda t: t.unsqueeze(rank=1), "below the tensor's rank"),
        (lambda t: t.movedim([0, 1], [1]), "sources for"),
        (lambda t: t.repeat_dim(0, -1), "non-negative"),
        (lambda t: t.repeat([2]), "sizes given for a tensor of rank 2"),
        (lambda t: t.narrow(1, 2, 2), "exceed dim 1"),
        (lambda t: t.narrow(0, 0, -1), "exceed dim 0"),
        (lambda t: t.chunk(0, 0), "chunks must be positive"),
        (lambda t: t.split(0, 1), "split_size must be positive"),
        (lambda t: t.split_with_sizes([1, 1], 1), "do not add up"),
        (lambda t: t.unfold(1, 4, 1), "larger than dim 1"),
        (lambda t: t.unfold(1, 0, 1), "must be positive"),
        (lambda t: t.unfold(1, 2, 0), "must be positive"),
        (lambda t: t.topk(4, 1), "k=4 is outside"),
        (lambda t: t.argtopk(-1, 0), "k=-1 is outside"),
        (lambda t: t.clamp(2.0, 1.0), "above maximum"),
    ],
    ids=[
        "reshape-size", "reshape-two-inferred", "reshape-count", "reshape-negative", "expand-dim",
        "expand-rank", "expand-new-dim", "squeeze_dim", "squeeze_dims", "squeeze_dims-repeated",
        "permute-length", "permute-repeated", "flip-repeated", "flatten", "unsqueeze", "movedim",
        "repeat_dim", "repeat", "narrow", "narrow-length", "chunk", "split", "split_with_sizes",
        "unfold-size", "unfold-zero", "unfold-step", "topk", "argtopk", "clamp",
    ],
)  # fmt: skip
def test_shape_argument_errors(device: Device, op: Op, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        op(floats(device, (2, 3)))


def test_cat_and_stack_shape_errors(device: Device) -> None:
    a = floats(device, (2, 3))
    with pytest.raises(ValueError, match="cat: expected at least one tensor"):
        Tensor.cat([], 0)
    with pytest.raises(ValueError, match="cat: tensors must have the same rank"):
        Tensor.cat([a, floats(device, (3,))], 0)
    with pytest.raises(ValueError, match=r"cat: shapes \[\[2, 3\], \[2, 2\]\] differ outside dim 0"):
        Tensor.cat([a, floats(device, (2, 2))], 0)
    with pytest.raises(ValueError, match="stack: tensors must have the same shape"):
        Tensor.stack([a, floats(device, (3, 3))], 0)


# -- dims out of range ----------------------------------------------------------------------------------
DIM_REDUCTIONS = (
    "sum_dim", "mean_dim", "prod_dim", "max_dim", "min_dim", "max_abs_dim", "argmax", "argmin",
    "any_dim", "all_dim", "cumsum", "cumprod", "cummin", "cummax", "max_dim_with_indices",
    "min_dim_with_indices", "sort", "argsort", "squeeze_dim", "var",
)  # fmt: skip
DIM_OPS: dict[str, Op] = {name: method(name) for name in DIM_REDUCTIONS}
DIM_OPS.update(
    {
        "topk": lambda t, d: t.topk(1, d),
        "swap_dims": lambda t, d: t.swap_dims(0, d),
        "flip": lambda t, d: t.flip([d]),
        "permute": lambda t, d: t.permute([0, 1, d]),
        "narrow": lambda t, d: t.narrow(d, 0, 1),
        "chunk": lambda t, d: t.chunk(2, d),
        "split": lambda t, d: t.split(1, d),
        "unfold": lambda t, d: t.unfold(d, 1, 1),
        "repeat_dim": lambda t, d: t.repeat_dim(d, 2),
        "flatten": lambda t, d: t.flatten(0, d),
        "cat": lambda t, d: Tensor.cat([t, t], d),
        "gather": lambda t, d: t.gather(d, index_tensor(np.zeros((2, 3, 4), np.int64), t.device)),
        "select": lambda t, d: t.select(d, index_tensor([0], t.device)),
        "cross": lambda t, d: t.cross(t, d),
    }
)


@pytest.mark.parametrize("op", list(DIM_OPS))
def test_dim_out_of_range(device: Device, op: str) -> None:
    tensor = floats(device, (2, 3, 4))
    for dim in (3, -4, 10):
        with pytest.raises(IndexError, match=rf"dim {dim} is out of range for a tensor of rank 3"):
            DIM_OPS[op](tensor, dim)


@pytest.mark.parametrize(
    ("op", "dim"),
    [
        (lambda t, d: t.unsqueeze_dim(d), 4),
        (lambda t, d: t.unsqueeze_dim(d), -5),
        (lambda t, d: Tensor.stack([t, t], d), 4),
        (lambda t, d: t.unsqueeze_dims([d]), 5),
        (lambda t, d: t.movedim(0, d), 3),
    ],
    ids=["unsqueeze_dim", "unsqueeze_dim-negative", "stack", "unsqueeze_dims", "movedim"],
)
def test_dims_of_new_dims_out_of_range(device: Device, op: Op, dim: int) -> None:
    with pytest.raises(IndexError, match=f"dim {dim} is out of range"):
        op(floats(device, (2, 3, 4)), dim)


def test_reductions_have_no_dims_on_rank_0(device: Device) -> None:
    scalar = Tensor.from_data(2.0, device)
    with pytest.raises(IndexError, match="sum_dim: dim 0 is out of range for a tensor of rank 0"):
        scalar.sum_dim(0)


# -- reductions over nothing -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.max(),
        lambda t: t.min(),
        lambda t: t.max_abs(),
        lambda t: t.max_dim(0),
        lambda t: t.min_dim(0),
        lambda t: t.max_abs_dim(0),
        lambda t: t.argmax(0),
        lambda t: t.argmin(0),
        lambda t: t.max_dim_with_indices(0),
        lambda t: t.min_dim_with_indices(0),
    ],
    ids=[
        "max",
        "min",
        "max_abs",
        "max_dim",
        "min_dim",
        "max_abs_dim",
        "argmax",
        "argmin",
        "max-idx",
        "min-idx",
    ],
)
@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT], ids=["Float", "Int"])
def test_extrema_of_nothing_are_errors(device: Device, op: Op, kind: Kind) -> None:
    with pytest.raises(ValueError, match=r"(no elements|is empty)"):
        op(Tensor.zeros([0, 3], device, kind))


def test_int_mean_of_nothing_is_an_error(device: Device) -> None:
    with pytest.raises(ValueError, match="mean: the tensor has no elements"):
        Tensor.zeros([0], device, Kind.INT).mean()


# -- indices and masks --------------------------------------------------------------------------------
INDEXED: dict[str, Op] = {
    "gather": lambda t, i: t.gather(0, i),
    "scatter": lambda t, i: t.scatter(0, i, t),
    "select": lambda t, i: t.select(0, i),
    "select_assign": lambda t, i: t.select_assign(0, i, t),
}


@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.BOOL], ids=["Float", "Bool"])
@pytest.mark.parametrize("op", list(INDEXED))
def test_indices_must_be_int(device: Device, op: str, kind: Kind) -> None:
    tensor = floats(device)
    indices = Tensor.zeros([2, 3] if op in ("gather", "scatter") else [2], device, kind)
    with pytest.raises(TypeError, match=rf"{op}: indices must be an Int tensor, got (Float|Bool)"):
        INDEXED[op](tensor, indices)


def test_indices_must_be_a_tensor(device: Device) -> None:
    with pytest.raises(TypeError, match="select: indices must be an Int tensor, got list"):
        floats(device).select(0, [0, 1])  # type: ignore[arg-type]


def test_index_ranks_and_shapes(device: Device) -> None:
    tensor = floats(device, (2, 3))
    with pytest.raises(ValueError, match="gather: indices of shape"):
        tensor.gather(1, index_tensor([0, 1], device))
    with pytest.raises(ValueError, match="select: indices must be 1-d"):
        tensor.select(1, index_tensor([[0, 1]], device))
    with pytest.raises(ValueError, match=r"scatter: indices .* and values .* need one shape"):
        tensor.scatter(1, index_tensor([[0], [1]], device), floats(device, (2, 2)))
    with pytest.raises(ValueError, match="select_assign: values of shape"):
        tensor.select_assign(1, index_tensor([0, 1], device), floats(device, (2, 3)))
    with pytest.raises(ValueError, match="select_assign: indices must be 1-d"):
        tensor.select_assign(1, index_tensor([[0]], device), floats(device, (2, 1)))


def test_indexed_updates_check_the_values_dtype(device: Device) -> None:
    tensor = floats(device, (2, 3))
    with pytest.raises(TypeError, match="scatter: dtypes differ"):
        tensor.scatter(1, index_tensor([[0], [1]], device), ints(device, (2, 1)))
    with pytest.raises(TypeError, match="select_assign: dtypes differ"):
        tensor.select_assign(0, index_tensor([1], device), ints(device, (1, 3)))


@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT], ids=["Float", "Int"])
@pytest.mark.parametrize("op", ["mask_where", "mask_fill"])
def test_masks_must_be_bool(device: Device, op: str, kind: Kind) -> None:
    tensor = floats(device)
    mask = Tensor.ones([2, 3], device, kind)
    args: tuple[Any, ...] = (mask, tensor) if op == "mask_where" else (mask, 0.0)
    with pytest.raises(TypeError, match=rf"{op}: mask must be a Bool tensor, got (Float|Int)"):
        getattr(tensor, op)(*args)


def test_masks_must_broadcast(device: Device) -> None:
    tensor = floats(device, (2, 3))
    with pytest.raises(ValueError, match=r"mask_fill: shapes \[2, 3\] and \[3, 3\] do not broadcast"):
        tensor.mask_fill(bools(device, (3, 3)), 0.0)
    with pytest.raises(ValueError, match=r"mask_where: shapes .* do not broadcast: aligned from the right"):
        tensor.mask_where(bools(device, (2,)), tensor)


# -- slicing --------------------------------------------------------------------------------------------
def test_slice_errors(device: Device) -> None:
    tensor = floats(device, (2, 3))
    with pytest.raises(IndexError, match="slice: 3 ranges given for a tensor of rank 2"):
        tensor.slice([0, 0, 0])
    with pytest.raises(IndexError, match="slice: index 2 is out of range for dim 0 of size 2"):
        tensor.slice([2])
    with pytest.raises(IndexError, match="index -4 is out of range for dim 1"):
        tensor.slice([slice(None), -4])
    with pytest.raises(ValueError, match="step must not be zero"):
        tensor.slice([slice(None, None, 0)])
    with pytest.raises(ValueError, match="step must not be zero"):
        tensor.slice([Slice(0, 2, 0)])


def test_slice_assign_errors(device: Device) -> None:
    tensor = floats(device, (2, 3))
    with pytest.raises(
        ValueError, match=r"slice_assign: values of shape \[1, 2\] for a region of shape \[1, 3\]"
    ):
        tensor.slice_assign([0], floats(device, (1, 2)))
    with pytest.raises(TypeError, match="slice_assign: dtypes differ"):
        tensor.slice_assign([0], ints(device, (1, 3)))


def test_getitem_errors(device: Device) -> None:
    tensor = floats(device, (2, 3))
    # None, masks and index tensors index (core/test_index_syntax.py); lists and arrays do not
    for key, kind in [([0, 1], "list"), (np.array([0, 1]), "ndarray")]:
        with pytest.raises(TypeError, match=f"__getitem__: {kind} indices are not slices"):
            tensor[key]
    with pytest.raises(TypeError, match="one 1-d Int tensor at most"):
        tensor[0, index_tensor([[0]], device)]
    with pytest.raises(IndexError, match="at most one ellipsis"):
        tensor[..., ...]
    with pytest.raises(IndexError, match="out of range"):
        tensor[2]
    with pytest.raises(IndexError, match="3 ranges given"):
        tensor[0, 0, 0]


def test_tensors_are_immutable(device: Device) -> None:
    tensor = floats(device)
    with pytest.raises(TypeError, match="immutable"):
        tensor[0] = 1.0


# -- creation -------------------------------------------------------------------------------------------
def test_creation_errors(device: Device) -> None:
    with pytest.raises(ValueError, match="zeros: a shape holds non-negative dimensions"):
        Tensor.zeros([2, -1], device)
    with pytest.raises(TypeError, match="ones: a shape holds ints"):
        Tensor.ones([1.5], device)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"full: fill value 2\.5 is not an integer"):
        Tensor.full([2], 2.5, device, Kind.INT)
    with pytest.raises(TypeError, match="random: Bool tensors"):
        Tensor.random([2], None, device, DType.BOOL)
    with pytest.raises(ValueError, match="arange: step must not be zero"):
        Tensor.arange(0, 4, 0, device)
    with pytest.raises(TypeError, match="arange: makes Int tensors"):
        Tensor.arange(4, device=device, dtype=DType.F32)
    with pytest.raises(TypeError):
        Tensor.arange(0.5, 4, device=device)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="linspace: steps must be non-negative"):
        Tensor.linspace(0, 1, -1, device)
    with pytest.raises(ValueError, match="tril_mask: needs at least two dims"):
        Tensor.tril_mask([3], 0, device)
    with pytest.raises(TypeError, match="not a supported dtype"):
        Tensor.zeros([2], device, "f8x")


def test_unknown_device_specs(device: Device) -> None:
    with pytest.raises(ValueError, match="no installed backend is named 'nosuchbackend'"):
        Tensor.zeros([2], "nosuchbackend")
    with pytest.raises(ValueError, match="is not an integer"):
        Tensor.zeros([2], f"{device.backend.name}:x")
    with pytest.raises(TypeError, match="expected a Device"):
        Tensor.zeros([2], 3)  # type: ignore[arg-type]


# -- Python protocols --------------------------------------------------------------------------------------
def test_scalar_protocol_errors(device: Device) -> None:
    tensor = floats(device)
    with pytest.raises(
        ValueError, match=r"into_scalar: expected a tensor of one element, got shape \[2, 3\]"
    ):
        tensor.into_scalar()
    with pytest.raises(ValueError, match=r"ambiguous; use \.any"):
        bool(tensor)
    with pytest.raises(TypeError, match="only Int tensors of one element"):
        [1, 2][floats(device, (1,))]
    with pytest.raises(ValueError, match="into_scalar"):
        float(Tensor.zeros([0], device))


def test_rank_0_has_no_length(device: Device) -> None:
    scalar = Tensor.from_data(1.5, device)
    with pytest.raises(TypeError, match="len"):
        len(scalar)
    with pytest.raises(TypeError, match="iteration over a tensor of rank 0"):
        iter(scalar).__next__()


def test_the_kind_error_describes_the_tensor(device: Device) -> None:
    tensor = ints(device, (2, 5))
    described = f"Int {device.backend.int_dtype} tensor of shape [2, 5]"
    with pytest.raises(TypeError, match=re.escape(f"exp: expected a Float tensor, got an {described}")):
        tensor.exp()
