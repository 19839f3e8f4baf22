"""Operands and arguments: NumPy arrays are operands (taken in the tensor's dtype, on its device, as
Python numbers are: PyTorch accepts them too, but promotes, which Burn never does); ints beyond the range
of an Int tensor's dtype are errors in arithmetic and compare as NumPy and PyTorch do; arguments of the
wrong type raise a ``TypeError`` (or a ``ValueError`` for a wrong value) naming the op."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Kind, Tensor
from burn_backend.testing import check, make, require_dtype

Op = Callable[[Any, Any], Any]


def floats(device: Device) -> Tensor:
    return make(np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]]), device, DType.F32)


# -- NumPy arrays as operands ------------------------------------------------------------------------------
OPERATORS: dict[str, tuple[Op, Op]] = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "floordiv": (lambda a, b: a // b, np.floor_divide),
    "remainder": (lambda a, b: a % b, np.remainder),
    "pow": (lambda a, b: abs(a) ** b, lambda a, b: np.abs(a) ** b),
    "equal": (lambda a, b: a == b, np.equal),
    "lower": (lambda a, b: a < b, np.less),
    "greater_equal": (lambda a, b: a >= b, np.greater_equal),
}


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("shape", [(2, 3), (3,), ()], ids=["2x3", "3", "scalar"])
@pytest.mark.parametrize("op", list(OPERATORS))
def test_numpy_arrays_are_operands_in_the_tensors_dtype(
    device: Device, op: str, shape: tuple[int, ...], side: str
) -> None:
    ours, reference = OPERATORS[op]
    tensor = floats(device)
    array = np.full(shape, 3.0)
    values = np.asarray(tensor.to_numpy(), dtype=np.float64)
    if side == "right":
        result, expected = ours(tensor, array), reference(values, array)
    elif op == "pow":
        result, expected = array**tensor, array**values
    else:
        result, expected = ours(array, tensor), reference(array, values)
    assert isinstance(result, Tensor), f"{type(result).__name__}: NumPy took over the operator"
    assert result.device == device
    check(result, expected, DType.BOOL if expected.dtype == np.bool_ else DType.F32)


def test_numpy_arrays_are_operands_of_int_tensors(device: Device) -> None:
    dtype = device.backend.int_dtype
    tensor = make(np.array([[7, -8, 9]]), device, dtype)
    check(tensor * np.array([1, 2, 3]), np.array([[7, -16, 27]]), dtype)
    check(tensor & np.array([3, 3, 3]), np.array([[3, 0, 1]]), dtype)
    check(tensor.add(np.array([1], dtype=np.int8)), np.array([[8, -7, 10]]), dtype)


def test_a_numpy_array_of_another_kind_is_an_error(device: Device) -> None:
    ints = make(np.array([1, 2, 3]), device, device.backend.int_dtype)
    with pytest.raises(
        TypeError, match=r"mul: a NumPy array of float64 cannot be an operand of the Int .*\.float\(\)"
    ):
        ints * np.ones(3)
    with pytest.raises(
        TypeError, match=r"add: a NumPy array of bool cannot be an operand of the Float .*Tensor\.from_data"
    ):
        floats(device) + np.ones(3, dtype=np.bool_)


def test_a_numpy_array_beyond_an_int_dtype_is_an_error(device: Device) -> None:
    require_dtype(device, DType.I8)
    tensor = make(np.array([1, 2]), device, DType.I8)
    with pytest.raises(
        OverflowError, match=r"add: the NumPy array's values lie outside the range \[-128, 127\]"
    ):
        tensor + np.array([1000, 1])
    check(tensor + np.array([100, -100]), np.array([101, -98]), DType.I8)


# -- ints beyond an Int dtype's range ----------------------------------------------------------------------
SCALAR_OPS: dict[str, Op] = {
    "add": lambda t, v: t + v,
    "sub": lambda t, v: t - v,
    "mul": lambda t, v: t * v,
    "div": lambda t, v: t // v,
    "remainder": lambda t, v: t % v,
    "add_scalar": lambda t, v: t.add_scalar(v),
    "mask_fill": lambda t, v: t.mask_fill(t > 0, v),
    "clamp_max": lambda t, v: t.clamp_max(v),
    "bitwise_and": lambda t, v: t & v,
}


@pytest.mark.parametrize(
    ("dtype", "value"), [(DType.I32, 2**40), (DType.I8, -129), (DType.U8, 256), (DType.I64, 2**63)]
)
@pytest.mark.parametrize("op", list(SCALAR_OPS))
def test_int_scalar_overflow_names_the_op_and_dtype(
    device: Device, op: str, dtype: DType, value: int
) -> None:
    require_dtype(device, dtype)
    tensor = make(np.array([1, 2, 3]), device, dtype)
    with pytest.raises(
        OverflowError, match=rf"^{op}: {value} is outside the range \[-?\d+, \d+\] of the Int {dtype} tensor"
    ):
        SCALAR_OPS[op](tensor, value)


COMPARISONS: dict[str, Op] = {
    "equal": lambda t, v: t == v,
    "not_equal": lambda t, v: t != v,
    "greater": lambda t, v: t > v,
    "greater_equal": lambda t, v: t >= v,
    "lower": lambda t, v: t < v,
    "lower_equal": lambda t, v: t <= v,
}


@pytest.mark.parametrize("value", [1000, -1000, 2**70])
@pytest.mark.parametrize("op", list(COMPARISONS))
def test_comparisons_with_ints_beyond_the_dtype_range(device: Device, op: str, value: int) -> None:
    """As NumPy and PyTorch: the number is compared as it is, not wrapped into the dtype."""
    require_dtype(device, DType.I8)
    values = np.array([[-128, 0, 127]])
    result = COMPARISONS[op](make(values, device, DType.I8), value)
    expected = COMPARISONS[op](values.astype(object), value).astype(bool)
    check(result, expected, DType.BOOL)


# -- arguments of the wrong type ------------------------------------------------------------------------
ARGUMENTS: dict[str, tuple[Callable[[Device], Any], type[Exception], str]] = {
    "random-distribution": (
        lambda d: Tensor.random([2], "gauss", d),  # type: ignore[arg-type]
        TypeError,
        r"^random: distribution must be a Distribution .* got 'gauss'",
    ),
    "reshape-bool": (
        lambda d: floats(d).reshape([True, 6]),
        TypeError,
        r"^reshape: a shape holds ints, got True",
    ),
    "reshape-float": (
        lambda d: floats(d).reshape([2.0, 3]),  # type: ignore[list-item]
        TypeError,
        r"^reshape: a shape holds ints, got 2\.0",
    ),
    "reshape-string": (lambda d: floats(d).reshape("6"), TypeError, r"^reshape: expected a shape"),  # type: ignore[arg-type]
    "sum_dim-float": (lambda d: floats(d).sum_dim(0.0), TypeError, r"^sum_dim: a dim is an int, got 0\.0"),  # type: ignore[arg-type]
    "swap_dims-bool": (
        lambda d: floats(d).swap_dims(True, 0),
        TypeError,
        r"^swap_dims: a dim is an int, got True",
    ),
    "slice-tuple": (
        lambda d: floats(d).slice([(0, 5)]),  # type: ignore[list-item]
        TypeError,
        r"^slice: range 0 is \(0, 5\) \(tuple\); a range is a Slice, a slice, a range or an int, "
        r"e\.g\. slice\(0, 5\)",
    ),
    "slice-float": (lambda d: floats(d).slice([0.5]), TypeError, r"^slice: range 0 is 0\.5 \(float\)"),  # type: ignore[list-item]
    "eye-negative": (lambda d: Tensor.eye(-1, d), ValueError, r"^eye: size must be non-negative, got -1"),
    "eye-float": (lambda d: Tensor.eye(2.5, d), TypeError, r"^eye: size must be an int, got 2\.5"),  # type: ignore[arg-type]
    "from_data-ragged": (
        lambda d: Tensor.from_data([[1, 2], [3]], d),
        ValueError,
        r"^from_data: the nested sequences are ragged .*: \[\[1, 2\], \[3\]\]",
    ),
    "from_data-ragged-deep": (
        lambda d: Tensor.from_data([[[1.0], [2.0]], [[3.0]]], d, DType.F32),
        ValueError,
        r"^from_data: the nested sequences are ragged",
    ),
}


@pytest.mark.parametrize("case", list(ARGUMENTS))
def test_wrong_arguments_name_the_op(device: Device, case: str) -> None:
    call, error, message = ARGUMENTS[case]
    with pytest.raises(error, match=message):
        call(device)


def test_grad_needs_the_gradients_of_backward(device: Device) -> None:
    if not device.backend.ad_enabled():
        pytest.skip(f"{device.backend.stack_name} computes no gradients")
    x = Tensor.ones([2], device).require_grad()
    grads = (x * x).sum().backward()
    for op in ("grad", "grad_remove"):
        with pytest.raises(
            TypeError, match=rf"^{op}: expected the Gradients that backward\(\) returned, got None"
        ):
            getattr(x, op)(None)
    with pytest.raises(TypeError, match=r"^grad_replace: the gradient must be a Tensor, got list"):
        x.grad_replace(grads, [1.0, 1.0])  # type: ignore[arg-type]
    gradient = x.grad(grads)
    assert gradient is not None
    assert gradient.tolist() == [2.0, 2.0]


def test_reshape_takes_an_int_for_one_dim(device: Device) -> None:
    assert floats(device).reshape(6).dims() == [6]
    assert floats(device).reshape(np.array([3, 2])).dims() == [3, 2]  # type: ignore[arg-type]
    assert Tensor.eye(np.int64(2), device).kind is Kind.FLOAT
