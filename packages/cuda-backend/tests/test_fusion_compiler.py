"""Cuda's fusion compiler (``compile_elementwise``, and ``compile_fused`` for blocks with casts): every
float, int and bool op of the table, alone and in chains, with broadcasting, and every cast, gives what
the ops one by one give. The tests skip without a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import DType, Kind, Tensor
from burn_backend.kit import (
    ELEMENTWISE_OPS,
    CastStep,
    Deferred,
    ElementwiseBlock,
    ElementwiseStep,
    TensorSpec,
    resolved,
    run_op_by_op,
)
from burn_cuda import Cuda
from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")

FLOAT_OPS = sorted(name for name, op in ELEMENTWISE_OPS.items() if op.kind is Kind.FLOAT)
BOOL_OPS = sorted(name for name, op in ELEMENTWISE_OPS.items() if op.kind is Kind.BOOL)
TOLERANCE = {DType.F32: 2e-6, DType.F64: 1e-13, DType.F16: 2e-3}


Operands = tuple[list[TensorSpec], list[Any], list[Any]]


def operands(op: Any, dtype: DType, rng: np.random.Generator) -> Operands:
    """Specs and host values of ``op``'s tensor operands (broadcast against each other where the op
    broadcasts) and its scalars, drawn from the op's domain."""
    shapes = [(3, 1, 5), (1, 4, 5)] if op.broadcasts and op.arity == 2 else [(3, 4, 5)] * op.arity
    values: list[Any] = []
    for position, shape in enumerate(shapes):
        if dtype is DType.BOOL:
            values.append(rng.random(shape) < 0.5)
        else:
            low, high = op.domain[position] if op.domain else (-2.0, 2.0)
            values.append(rng.uniform(low, high, shape).astype(dtype.numpy))
    scalars: list[Any] = []
    for position in range(op.arity, op.arity + op.scalars):
        low, high = op.domain[position] if op.domain else (-2.0, 2.0)
        scalars.append(bool(rng.random() < 0.5) if dtype is DType.BOOL else float(rng.uniform(low, high)))
    if op.name == "float_powi_scalar":
        scalars = [2]
    return [TensorSpec(dtype, shape) for shape in shapes], values, scalars


def compare(block: ElementwiseBlock, inputs: list[Any], scalars: list[Any], dtype: DType) -> None:
    backend = Cuda()
    device = backend.device(0)
    primitives = [Tensor.from_numpy(value, device).primitive for value in inputs]
    plan = backend.compile_elementwise(block, device)
    assert plan is not None
    fused = resolved(plan(primitives, scalars))
    expected = run_op_by_op(backend, block, primitives, scalars)
    for got, want in zip(fused, expected):
        assert got.shape == want.shape
        assert got.dtype == want.dtype
        got_host, want_host = got.get().astype(np.float64), want.get().astype(np.float64)
        tolerance = TOLERANCE.get(dtype, 0)
        np.testing.assert_allclose(got_host, want_host, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.F16], ids=str)
@pytest.mark.parametrize("name", FLOAT_OPS)
def test_each_float_op_alone(name: str, dtype: DType) -> None:
    op = ELEMENTWISE_OPS[name]
    specs, values, scalars = operands(op, dtype, np.random.default_rng(1))
    step = ElementwiseStep(name, tuple(range(op.arity)), tuple(scalars))
    block = ElementwiseBlock(tuple(specs), (step,), (op.arity,))
    compare(block, values, scalars, dtype)


@pytest.mark.parametrize("name", BOOL_OPS)
def test_each_bool_op_alone(name: str) -> None:
    op = ELEMENTWISE_OPS[name]
    specs, values, scalars = operands(op, DType.BOOL, np.random.default_rng(2))
    step = ElementwiseStep(name, tuple(range(op.arity)), tuple(scalars))
    compare(ElementwiseBlock(tuple(specs), (step,), (op.arity,)), values, scalars, DType.BOOL)


@pytest.mark.parametrize("dtype", [DType.F32, DType.F16], ids=str)
def test_a_gelu_chain_with_a_broadcast_bias_and_two_outputs(dtype: DType) -> None:
    rng = np.random.default_rng(3)
    x, bias = rng.standard_normal((8, 16, 32)), rng.standard_normal((1, 16, 1))
    specs = (TensorSpec(dtype, (8, 16, 32)), TensorSpec(dtype, (1, 16, 1)))
    steps = (
        ElementwiseStep("float_add", (0, 1)),  # 2
        ElementwiseStep("float_mul_scalar", (2,), (0.7071067811865476,)),  # 3
        ElementwiseStep("float_erf", (3,)),  # 4
        ElementwiseStep("float_add_scalar", (4,), (1.0,)),  # 5
        ElementwiseStep("float_mul", (2, 5)),  # 6
        ElementwiseStep("float_mul_scalar", (6,), (0.5,)),  # 7
        ElementwiseStep("float_greater_elem", (7,), (0.1,)),  # 8
    )
    block = ElementwiseBlock(specs, steps, (7, 8))
    compare(block, [x.astype(dtype.numpy), bias.astype(dtype.numpy)], list(block.scalars), dtype)


@pytest.mark.parametrize("length", [1, 4, 1023, 4096 + 3])
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "unaligned"])
def test_f32_blocks_of_one_shape_through_float4_and_the_tail(length: int, offset: int) -> None:
    rng = np.random.default_rng(length)
    backend = Cuda()
    device = backend.device(0)
    spec = TensorSpec(DType.F32, (length,))
    steps = (ElementwiseStep("float_mul", (0, 1)), ElementwiseStep("float_tanh", (2,)))
    block = ElementwiseBlock((spec, spec), steps, (3, 2))
    host = [rng.standard_normal(length + offset).astype(np.float32) for _ in range(2)]
    # an offset view starts 4 bytes into its buffer: the kernel of one element per thread takes it
    primitives = [Tensor.from_numpy(value, device).primitive[offset:] for value in host]
    plan = backend.compile_elementwise(block, device)
    assert plan is not None
    activated, product = (output.get() for output in resolved(plan(primitives, ())))  # outputs (3, 2)
    a, b = host[0][offset:], host[1][offset:]
    np.testing.assert_array_equal(product, a * b)
    np.testing.assert_allclose(activated, np.tanh(a * b), rtol=2e-6, atol=1e-7)


# left to the ops one by one: int powers, and shifts (whose counts outside [0, width) take NumPy's rule)
UNFUSED = ("int_powi", "int_powi_scalar", "bitwise_left_shift", "bitwise_left_shift_scalar",
           "bitwise_right_shift", "bitwise_right_shift_scalar")  # fmt: skip
INT_OPS = sorted(name for name, op in ELEMENTWISE_OPS.items() if op.kind is Kind.INT and name not in UNFUSED)


@pytest.mark.parametrize("dtype", [DType.I64, DType.I32, DType.I16, DType.I8], ids=str)
@pytest.mark.parametrize("name", INT_OPS)
def test_each_int_op_alone(name: str, dtype: DType) -> None:
    op = ELEMENTWISE_OPS[name]
    specs, values, scalars = operands(op, dtype, np.random.default_rng(3))
    scalars = [round(value) for value in scalars]
    step = ElementwiseStep(name, tuple(range(op.arity)), tuple(scalars))
    compare(ElementwiseBlock(tuple(specs), (step,), (op.arity,)), values, scalars, dtype)


@pytest.mark.parametrize("dtype", [DType.I64, DType.I32, DType.I8, DType.U8], ids=str)
def test_int_division_floors_and_a_zero_divisor_gives_zero(dtype: DType) -> None:
    low = 0 if dtype is DType.U8 else -7
    grid = np.array([(a, b) for a in range(low, 8) for b in range(low, 8)], dtype=dtype.numpy)
    spec = TensorSpec(dtype, (len(grid),))
    steps = (ElementwiseStep("int_div", (0, 1)), ElementwiseStep("int_remainder", (0, 1)))
    block = ElementwiseBlock((spec, spec), steps, (2, 3))
    backend = Cuda()
    plan = backend.compile_elementwise(block, backend.device(0))
    assert plan is not None
    quotient, remainder = (
        out.get() for out in resolved(plan([cp.asarray(grid[:, 0]), cp.asarray(grid[:, 1])], []))
    )
    with np.errstate(divide="ignore"):  # NumPy's own answer for a zero divisor is 0 as well
        np.testing.assert_array_equal(quotient, np.floor_divide(grid[:, 0], grid[:, 1]))
        np.testing.assert_array_equal(remainder, np.remainder(grid[:, 0], grid[:, 1]))


@pytest.mark.parametrize("name", [name for name in UNFUSED if name.endswith("_scalar")])
def test_int_powers_and_shifts_are_left_to_the_ops_one_by_one(name: str) -> None:
    step = ElementwiseStep(name, (0,), (2,))
    block = ElementwiseBlock((TensorSpec(DType.I64, (4,)),), (step,), (1,))
    assert Cuda().compile_elementwise(block, Cuda().device(0)) is None


def test_casts_convert_as_the_ops_one_by_one() -> None:
    backend = Cuda()
    device = backend.device(0)
    rng = np.random.default_rng(5)
    floats = (rng.normal(size=(4, 6)) * 300).astype(np.float32)
    floats[0, :3] = [0.5, -0.5, 65519.0]  # halfway cases, the largest value that rounds to f16's max
    ints = rng.integers(-(2**40), 2**40, size=(4, 6))
    specs = (TensorSpec(DType.F32, (4, 6)), TensorSpec(DType.I64, (4, 6)))
    steps = (
        CastStep("float_cast", (0,), dtype=DType.F64),  # 2
        ElementwiseStep("float_mul_scalar", (2,), (1.0 / 3.0,)),  # 3: f64 digits f32 lacks
        CastStep("float_cast", (3,), dtype=DType.F16),  # 4: from f64 in one rounding
        CastStep("float_cast", (3,), dtype=DType.F32),  # 5
        CastStep("float_into_int", (0,), dtype=DType.I32),  # 6: truncated
        CastStep("int_cast", (1,), dtype=DType.I8),  # 7: wrapped
        CastStep("int_into_float", (1,), dtype=DType.F32),  # 8: rounded
        ElementwiseStep("float_greater_elem", (0,), (0.0,)),  # 9
        CastStep("bool_into_float", (9,), dtype=DType.F16),  # 10
        CastStep("bool_into_int", (9,), dtype=DType.I64),  # 11
        ElementwiseStep("int_add", (7, 7)),  # 12: i8 arithmetic wraps
    )
    block = ElementwiseBlock(specs, steps, (4, 5, 6, 8, 10, 11, 12))
    assert block.has_casts
    plan = backend.compile_fused(block, device)
    assert plan is not None
    inputs = [cp.asarray(floats), cp.asarray(ints)]
    scalars = [1.0 / 3.0, 0.0]
    fused = resolved(plan(inputs, scalars))
    for got, want in zip(fused, run_op_by_op(backend, block, inputs, scalars), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want.get())


@pytest.mark.parametrize("length", [5, 30000])
def test_outputs_of_several_dtypes_are_their_own_values(length: int) -> None:
    # small outputs are carved from one allocation, larger ones allocated one by one: either way each
    # output holds its own value, aligned for the vectorized loads of the kernels that read it
    spec = TensorSpec(DType.F32, (length,))
    steps = (
        ElementwiseStep("float_mul_scalar", (0,), (2.0,)),  # 1
        ElementwiseStep("float_greater_elem", (1,), (0.0,)),  # 2
        CastStep("float_cast", (1,), dtype=DType.F16),  # 3
        ElementwiseStep("float_add", (0, 1)),  # 4
        CastStep("float_into_int", (4,), dtype=DType.I32),  # 5: truncated
    )
    block = ElementwiseBlock((spec,), steps, (1, 2, 3, 4, 5))
    rng = np.random.default_rng(length)
    value = rng.uniform(-4.0, 4.0, length).astype(np.float32)
    backend = Cuda()
    device = backend.device(0)
    primitive = Tensor.from_numpy(value, device).primitive
    plan = backend.compile_fused(block, device)
    assert plan is not None
    outputs = resolved(plan([primitive], [2.0, 0.0]))
    expected = [
        value * 2,
        value * 2 > 0,
        (value * 2).astype(np.float16),
        value * 3,
        (value * 3).astype(np.int32),
    ]
    assert [out.dtype for out in outputs] == [want.dtype for want in expected]
    for out, want in zip(outputs, expected, strict=True):
        assert out.data.ptr % 256 == 0
        np.testing.assert_array_equal(out.get(), want)
    assert len({out.data.ptr for out in outputs}) == len(outputs)


@pytest.mark.parametrize("length", [7, 4096, 100_000])
def test_plans_take_back_the_device_buffers_they_return(length: int) -> None:
    # outputs stay device buffers until read; the next plan takes their addresses (the vectorized kernel
    # where they are aligned f32), and a read makes the CuPy array once
    spec = TensorSpec(DType.F32, (length,))
    steps = (
        ElementwiseStep("float_mul_scalar", (0,), (2.0,)),
        ElementwiseStep("float_add_scalar", (1,), (1.0,)),
    )
    block = ElementwiseBlock((spec,), steps, (1, 2))
    backend = Cuda()
    plan = backend.compile_elementwise(block, backend.device(0))
    assert plan is not None
    value = np.random.default_rng(length).uniform(-4.0, 4.0, length).astype(np.float32)
    first = plan([cp.asarray(value)], [2.0, 1.0])
    assert all(isinstance(out, Deferred) for out in first)
    second = plan([first[1]], [3.0, -1.0])
    scaled = (value * np.float32(2) + np.float32(1)) * np.float32(3)
    got = resolved(second)
    np.testing.assert_array_equal(got[0].get(), scaled)
    np.testing.assert_array_equal(got[1].get(), scaled - np.float32(1))
    assert first[1].resolve() is first[1].resolve()
    np.testing.assert_array_equal(first[0].resolve().get(), value * np.float32(2))
    misaligned = cp.asarray(np.concatenate([[0.0], value]).astype(np.float32))[
        1:
    ]  # 4 bytes off: scalar loads
    np.testing.assert_array_equal(
        resolved(plan([misaligned], [2.0, 1.0]))[1].get(), value * np.float32(2) + 1
    )
