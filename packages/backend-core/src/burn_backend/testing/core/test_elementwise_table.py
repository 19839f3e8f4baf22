"""The element-wise op table (``burn_backend.kit.ELEMENTWISE_OPS``) holds for this backend: each entry
names an interface method with its operands, its expression computes its NumPy reference, and the
backend's method computes that reference for every dtype of the entry's kind; blocks of the fusion
compile hook compute, op by op and through the backend's plan where it gives one, what the references
composed compute."""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Kind, Tensor
from burn_backend.kit import (
    ELEMENTWISE_OPS,
    ElementwiseBlock,
    ElementwiseOp,
    ElementwiseStep,
    TensorSpec,
    resolved,
    run_op_by_op,
)
from burn_backend.testing import (
    FLOAT_DTYPES,
    IMPLEMENTATION_DEFINED,
    INT_DTYPES,
    check,
    interface_methods,
    make,
    require_dtype,
)
from burn_backend.testing._implementation_defined import implementation_defined
from burn_backend.testing.core._common import values

DTYPES = {Kind.FLOAT: FLOAT_DTYPES, Kind.INT: INT_DTYPES, Kind.BOOL: (DType.BOOL,)}
CASES = [(name, dtype) for name, op in ELEMENTWISE_OPS.items() for dtype in DTYPES[op.kind]]
# tensor operands of one rank that broadcast: the interface's binary ops take such
SHAPES = {1: [(2, 3, 4)], 2: [(2, 3, 1), (2, 1, 4)]}
SPECIALS = [np.nan, np.inf, -np.inf]
SCALAR_TYPES: dict[str, type] = {"float": float, "int": int, "bool": bool}


def scalar_types(op: ElementwiseOp) -> list[type]:
    """The Python types of ``op``'s scalar operands, from the interface's annotations."""
    parameters = list(inspect.signature(interface_methods()[op.name]).parameters.values())[1:]
    return [SCALAR_TYPES[str(p.annotation)] for p in parameters[op.arity :]]


def operands(rng: np.random.Generator, op: ElementwiseOp, dtype: DType) -> list[Any]:
    """Inputs of ``op`` in its domain: arrays of ``dtype`` then Python scalars. Ops with a Bool result
    get floats on a grid of halves (ties are frequent) with NaN and infinities among them."""
    result: list[Any] = []
    types = scalar_types(op)
    for index, (low, high) in enumerate(op.domain):
        tensor = index < op.arity
        shape = (SHAPES[op.arity][index] if op.broadcasts else SHAPES[1][0]) if tensor else ()
        if dtype is DType.BOOL:
            array: Any = rng.random(shape) < 0.5
        elif dtype.is_int:
            info = np.iinfo(dtype.numpy)
            array = rng.integers(max(int(low), int(info.min)), int(high), shape, endpoint=True)
        elif op.bool_result:
            array = rng.integers(int(2 * low), int(2 * high), shape, endpoint=True) / 2
            if tensor:
                array.flat[: len(SPECIALS)] = SPECIALS
        else:
            array = rng.uniform(low, high, shape)
        # scalars too are values of the dtype: a backend may round them to it first
        value = np.asarray(array).astype(dtype.numpy)
        result.append(value if tensor else types[index - op.arity](value.item()))
    return result


def wide(value: Any) -> Any:
    """A NumPy reference's operand: arrays in float64, int64 or bool; scalars as they are."""
    if not isinstance(value, np.ndarray) or value.dtype == np.bool_:
        return value
    return value.astype(np.int64 if value.dtype.kind in "iu" else np.float64)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE_OPS))
def test_entry_is_an_interface_method_with_its_operands(name: str) -> None:
    op = ELEMENTWISE_OPS[name]
    assert name in interface_methods(), f"{name} is not a method of the backend interface"
    signature = inspect.signature(interface_methods()[name])
    parameters = list(signature.parameters.values())[1:]
    assert len(parameters) == op.operands, f"{name}{signature}: the table says {op.operands} operands"
    assert [str(p.annotation) for p in parameters[: op.arity]] == ["P"] * op.arity
    assert all(str(p.annotation) in SCALAR_TYPES for p in parameters[op.arity :])
    assert str(signature.return_annotation) == "P"
    if op.scalar_form is not None:
        assert ELEMENTWISE_OPS[op.scalar_form].tensor_form == name
    if op.tensor_form is not None:
        assert ELEMENTWISE_OPS[op.tensor_form].scalar_form == name


@pytest.mark.parametrize("name", sorted(ELEMENTWISE_OPS))
def test_expression_computes_the_reference(rng: np.random.Generator, name: str) -> None:
    op = ELEMENTWISE_OPS[name]
    dtype = {Kind.FLOAT: DType.F64, Kind.INT: DType.I64, Kind.BOOL: DType.BOOL}[op.kind]
    inputs = [wide(value) for value in operands(rng, op, dtype)]
    with np.errstate(all="ignore"):
        expected = np.asarray(op.reference(*inputs))
    actual = np.asarray(op.evaluate(*inputs))
    assert actual.shape == expected.shape
    assert actual.dtype.kind == expected.dtype.kind, (
        f"{op.expression}: {actual.dtype}, reference {expected.dtype}"
    )
    np.testing.assert_allclose(
        actual, expected, rtol=1e-12, atol=1e-300, equal_nan=True, err_msg=op.expression
    )


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=[f"{name}-{dtype}" for name, dtype in CASES])
def test_backend_computes_the_reference(
    device: Device, rng: np.random.Generator, name: str, dtype: DType
) -> None:
    require_dtype(device, dtype)
    op = ELEMENTWISE_OPS[name]
    inputs = operands(rng, op, dtype)
    arguments = [make(value, device).primitive for value in inputs[: op.arity]] + inputs[op.arity :]
    result = Tensor.from_primitive(getattr(device.backend, name)(*arguments), device)
    with np.errstate(all="ignore"):
        expected = op.reference(*[wide(value) for value in inputs])
    result_dtype = DType.BOOL if op.bool_result else dtype
    check(result, expected, result_dtype, scale=op.tolerance_scale)


# -- the fusion compile hook ----------------------------------------------------------------------
def block_of(dtype: DType) -> ElementwiseBlock:
    """``a * b + 0.5``, its ``exp`` and whether that exceeds 1, with ``a`` and ``b`` broadcast."""
    return ElementwiseBlock(
        inputs=(TensorSpec(dtype, (2, 3, 1)), TensorSpec(dtype, (1, 3, 4))),
        steps=(
            ElementwiseStep("float_mul", (0, 1)),
            ElementwiseStep("float_add_scalar", (2,), (0.5,)),
            ElementwiseStep("float_exp", (3,)),
            ElementwiseStep("float_greater_elem", (4,), (1.0,)),
        ),
        outputs=(4, 5),
    )


def composed(block: ElementwiseBlock, inputs: list[Any], scalars: tuple[Any, ...]) -> list[Any]:
    """The block's outputs from the table's NumPy references, in float64."""
    results = [wide(value) for value in inputs]
    given = iter(scalars)
    for step in block.steps:
        results.append(
            step.entry.reference(*[results[ref] for ref in step.args], *[next(given) for _ in step.scalars])
        )
    return [results[ref] for ref in block.outputs]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_compile_hook_blocks_compute_the_composed_references(
    device: Device, rng: np.random.Generator, dtype: DType
) -> None:
    require_dtype(device, dtype)
    block = block_of(dtype)
    inputs = [rng.uniform(-1.0, 1.0, spec.shape).astype(dtype.numpy) for spec in block.inputs]
    primitives = [make(value, device).primitive for value in inputs]
    scalars = (-0.25, 0.75)  # other values than the block's: a plan reads them when called
    expected = composed(block, inputs, scalars)
    specs = [block.values[ref] for ref in block.outputs]
    op_by_op = run_op_by_op(device.backend, block, primitives, scalars)
    for output, spec, reference in zip(op_by_op, specs, expected):
        check(Tensor.from_primitive(output, device), reference, spec.dtype)
    plan = device.backend.compile_elementwise(block, device)
    if plan is None:
        return  # no compiler: the block runs op by op, as above
    outputs = resolved(plan(primitives, scalars))  # a plan's outputs may be Deferred
    assert len(outputs) == len(block.outputs)
    for output, spec, reference in zip(outputs, specs, expected):
        tensor = Tensor.from_primitive(output, device)
        check(tensor, reference, spec.dtype)
        assert tensor.dims() == list(spec.shape)
    for primitive, value in zip(primitives, inputs):  # inputs untouched
        np.testing.assert_array_equal(values(Tensor.from_primitive(primitive, device)), value)


# -- special values -------------------------------------------------------------------------------
# floats: infinities and NaN (and zeros of both signs), with a few ordinary values (a tie, a negative
# non-integer); ints: the dtype's extremes, -1 and 0 (the minimum over -1 overflows; a processor's
# division traps on it). Where array libraries and compilers differ most: CuPy's remainder gave NaN for
# an infinite divisor, NdArray's fused int remainder of the minimum by -1 killed the process
SPECIAL_FLOATS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, np.inf, -np.inf, np.nan])
SPECIAL_CASES = [(name, dtype) for name, dtype in CASES if dtype is not DType.BOOL]


def special_values(dtype: DType) -> np.ndarray[Any, Any]:
    """The special values of ``dtype`` (an int dtype's that an int64 reference computes with)."""
    if dtype.is_float:
        return SPECIAL_FLOATS.astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    top = min(int(info.max), int(np.iinfo(np.int64).max))
    found = [v for v in (0, 1, -1, 2, -7, int(info.min), top - 1, top) if info.min <= v <= top]
    return np.array(found, dtype.numpy)


def name_is_int_power(op: ElementwiseOp) -> bool:
    """Whether ``op`` raises an int to an int power (its second operand the exponent)."""
    return op.name in ("int_powi", "int_powi_scalar")


def special_operands(op: ElementwiseOp, dtype: DType) -> list[list[Any]]:
    """Operand lists of ``op`` on special values: every pair for a binary op (a column and a row where
    it broadcasts), every value for a unary one; one list per special scalar its scalars take (all of
    them that value; the integral finite ones for an int scalar). An int power's exponent takes the
    values from 0 up (NumPy's integer power refuses negative ones)."""
    exponent = 1 if name_is_int_power(op) else None
    tensors = []
    for index in range(op.arity):
        values = special_values(dtype)
        tensors.append(values[values >= 0] if index == exponent else values)
    if op.arity == 2:
        first, second = tensors
        if op.broadcasts:
            tensors = [first.reshape(-1, 1), second.reshape(1, -1)]
        else:
            tensors = [*np.meshgrid(first, second, indexing="ij")]
    types = scalar_types(op)
    if not types:
        return [tensors]
    lists = []
    for value in special_values(dtype).tolist():  # Python ints for an int dtype: exact
        if int in types and not (math.isfinite(value) and value == int(value)):
            continue
        if exponent is not None and value < 0:
            continue
        lists.append(tensors + [kind(int(value) if kind is int else value) for kind in types])
    return lists


def check_special(result: Tensor, op: ElementwiseOp, inputs: list[Any], dtype: DType, where: str) -> None:
    """``result`` of ``op`` on ``inputs`` is its reference: NaN and infinities where it has them, the
    other values within the dtype's tolerance."""
    with np.errstate(all="ignore"):
        expected = np.asarray(op.reference(*[wide(value) for value in inputs]))
    if op.bool_result:
        check(result, expected, DType.BOOL)
        return
    if dtype.kind is Kind.INT:  # an int64 reference wraps to the dtype as the dtype's arithmetic does
        check(result, expected.astype(dtype.numpy), dtype)
        return
    expected = expected.astype(dtype.numpy).astype(np.float64)  # rounded (and overflowed) as stored
    got = values(result).astype(np.float64)
    assert got.shape == expected.shape, where
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan, f"{where}: where NaN is")
    infinite = np.isinf(expected)
    np.testing.assert_array_equal(got[infinite], expected[infinite], f"{where}: the infinities")
    check(result, np.where(nan | infinite, got, expected), dtype, scale=op.tolerance_scale)


def selected(op: ElementwiseOp, inputs: list[Any], mask: np.ndarray[Any, Any]) -> list[Any]:
    """``inputs`` at the elements of ``mask`` (of the result's shape): each tensor operand broadcast and
    taken there, in one dim; the scalars as they are."""
    tensors = np.broadcast_arrays(*inputs[: op.arity])
    return [tensor[mask] for tensor in tensors] + inputs[op.arity :]


def required_operands(op: ElementwiseOp, dtype: DType) -> list[list[Any]]:
    """The special operand lists of ``op`` without their implementation-defined elements (a list that
    has some keeps the others, in one dim; one that has only those is left out)."""
    lists = []
    for inputs in special_operands(op, dtype):
        groups = implementation_defined(op, dtype, inputs)
        if not groups:
            lists.append(inputs)
            continue
        required = ~np.logical_or.reduce(list(groups.values()))
        if required.any():
            lists.append(selected(op, inputs, required))
    return lists


def group_operands(op: ElementwiseOp, dtype: DType, group: str) -> list[list[Any]]:
    """The special operand lists of ``op``, each at its elements of the implementation-defined
    ``group`` (in one dim), where it has some."""
    lists = []
    for inputs in special_operands(op, dtype):
        mask = implementation_defined(op, dtype, inputs).get(group)
        if mask is not None:
            lists.append(selected(op, inputs, mask))
    return lists


def run_op(device: Device, op: ElementwiseOp, inputs: list[Any]) -> Tensor:
    """``op`` on ``inputs`` through the backend's method."""
    arguments = [make(value, device).primitive for value in inputs[: op.arity]] + inputs[op.arity :]
    return Tensor.from_primitive(getattr(device.backend, op.name)(*arguments), device)


def run_compiled(device: Device, op: ElementwiseOp, inputs: list[Any], dtype: DType) -> Tensor:
    """``op`` on ``inputs`` as a block of the one op, compiled by the backend (skips where it compiles
    none: the op runs as its method)."""
    tensors, scalars = inputs[: op.arity], tuple(inputs[op.arity :])
    step = ElementwiseStep(op.name, tuple(range(op.arity)), scalars)
    block = ElementwiseBlock(tuple(TensorSpec(dtype, t.shape) for t in tensors), (step,), (op.arity,))
    plan = device.backend.compile_elementwise(block, device)
    if plan is None:
        pytest.skip(f"{device.backend.stack_name} compiles no block of {op.name} on {dtype}: run op by op")
    (output,) = resolved(plan([make(t, device).primitive for t in tensors], scalars))
    return Tensor.from_primitive(output, device)


@pytest.mark.parametrize(
    ("name", "dtype"), SPECIAL_CASES, ids=[f"{name}-{dtype}" for name, dtype in SPECIAL_CASES]
)
def test_backend_computes_the_reference_at_special_values(device: Device, name: str, dtype: DType) -> None:
    # the values every backend gives: IEEE 754's at infinities, NaN and signed zeros, NumPy's at the int
    # extremes; the implementation-defined ones are the tests below
    require_dtype(device, dtype)
    op = ELEMENTWISE_OPS[name]
    for inputs in required_operands(op, dtype):
        check_special(run_op(device, op, inputs), op, inputs, dtype, f"{name}{tuple(inputs[op.arity :])}")


@pytest.mark.parametrize(
    ("name", "dtype"), SPECIAL_CASES, ids=[f"{name}-{dtype}" for name, dtype in SPECIAL_CASES]
)
def test_compiled_blocks_compute_the_reference_at_special_values(
    device: Device, name: str, dtype: DType
) -> None:
    # a block of the one op, through the backend's compiler where it has one: a fused chain must give
    # what the op alone gives, NaN and infinities included
    require_dtype(device, dtype)
    op = ELEMENTWISE_OPS[name]
    for inputs in required_operands(op, dtype):
        result = run_compiled(device, op, inputs, dtype)
        check_special(result, op, inputs, dtype, f"{name}{tuple(inputs[op.arity :])}, compiled")


# (group, op, dtype) for each implementation-defined group an op's special values reach on a dtype; each
# test is marked with its group, which a backend declares as "implementation-defined:<group>"
GROUP_CASES = [
    (group, name, dtype)
    for name, dtype in SPECIAL_CASES
    for group in IMPLEMENTATION_DEFINED
    if group_operands(ELEMENTWISE_OPS[name], dtype, group)
]
GROUP_PARAMS = [
    pytest.param(
        group, name, dtype, marks=pytest.mark.implementation_defined(group), id=f"{group}-{name}-{dtype}"
    )
    for group, name, dtype in GROUP_CASES
]


@pytest.mark.parametrize(("group", "name", "dtype"), GROUP_PARAMS)
def test_implementation_defined_special_values(device: Device, group: str, name: str, dtype: DType) -> None:
    # NumPy's values (NdArray's and Cuda's) where the interface leaves them to the backend
    require_dtype(device, dtype)
    op = ELEMENTWISE_OPS[name]
    for inputs in group_operands(op, dtype, group):
        check_special(run_op(device, op, inputs), op, inputs, dtype, f"{name}{tuple(inputs[op.arity :])}")


@pytest.mark.parametrize(("group", "name", "dtype"), GROUP_PARAMS)
def test_compiled_implementation_defined_special_values(
    device: Device, group: str, name: str, dtype: DType
) -> None:
    require_dtype(device, dtype)
    op = ELEMENTWISE_OPS[name]
    for inputs in group_operands(op, dtype, group):
        result = run_compiled(device, op, inputs, dtype)
        check_special(result, op, inputs, dtype, f"{name}{tuple(inputs[op.arity :])}, compiled")
