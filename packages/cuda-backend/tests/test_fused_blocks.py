"""Cuda's compiler for reduce and matmul blocks (the ``compile_fused`` hook): the generated CUDA C (checked
everywhere), and on a GPU each block's values against the ops one by one, over shapes that put the
reduced dim first, in the middle and last, rows longer than a thread block, broadcast inputs, NaN and
infinities, and f32, f64 and f16."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import DType, Tensor
from burn_backend.kit import (
    FUSED_BLOCK_KINDS,
    CastStep,
    ElementwiseBlock,
    ElementwiseStep,
    MatmulBlock,
    ReduceBlock,
    ReduceStep,
    TensorSpec,
    resolved,
    row_program,
    run_fused_op_by_op,
)
from burn_cuda import Cuda
from burn_cuda._cupy import unavailable_reason
from burn_cuda._fusion_fused import reduce_source

REASON = unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")
TOLERANCE = {DType.F32: 1e-5, DType.F64: 1e-12, DType.F16: 4e-3}


def softmax(shape: tuple[int, ...], dim: int, dtype: DType) -> ReduceBlock:
    steps = (
        ReduceStep("float_max_dim", (0,)),
        ElementwiseStep("float_sub", (0, 1)),
        ElementwiseStep("float_exp", (2,)),
        ReduceStep("float_sum_dim", (3,)),
        ElementwiseStep("float_div", (3, 4)),
    )
    return ReduceBlock((TensorSpec(dtype, shape),), steps, (5,), dim)


def layer_norm(shape: tuple[int, ...], dtype: DType) -> ReduceBlock:
    """``(x - mean) / sqrt(var + eps) * w + b`` over the last dim, with ``w`` and ``b`` broadcast."""
    last = len(shape) - 1
    weight = TensorSpec(dtype, (1,) * last + (shape[last],))
    steps = (
        ReduceStep("float_mean_dim", (0,)),  # 3
        ElementwiseStep("float_sub", (0, 3)),  # 4
        ElementwiseStep("float_mul", (4, 4)),  # 5
        ReduceStep("float_mean_dim", (5,)),  # 6
        ElementwiseStep("float_add_scalar", (6,), (1e-5,)),  # 7
        ElementwiseStep("float_sqrt", (7,)),  # 8
        ElementwiseStep("float_div", (4, 8)),  # 9
        ElementwiseStep("float_mul", (9, 1)),  # 10
        ElementwiseStep("float_add", (10, 2)),  # 11
    )
    return ReduceBlock((TensorSpec(dtype, shape), weight, weight), steps, (11, 6), last)


def sum_with_prologue_and_epilogue(shape: tuple[int, ...], dim: int, reduce: str) -> ReduceBlock:
    """``reduce((x * 2 + y) > 0 ? ... )``: a prologue of two inputs, the reduction, an epilogue on the
    reduced value, and the prologue's full value as a second output."""
    narrow = tuple(1 if d == dim else size for d, size in enumerate(shape))
    x, y = TensorSpec(DType.F32, shape), TensorSpec(DType.F32, narrow)
    steps = (
        ElementwiseStep("float_mul_scalar", (0,), (2.0,)),  # 2
        ElementwiseStep("float_add", (2, 1)),  # 3
        ReduceStep(reduce, (3,)),  # 4
        ElementwiseStep("float_exp", (4,)),  # 5
        ElementwiseStep("float_greater_elem", (3,), (0.0,)),  # 6: a bool value of the full shape
    )
    return ReduceBlock((x, y), steps, (5, 3, 6), dim)


def test_a_softmax_is_two_passes_with_a_scratch_row_for_the_exponentials() -> None:
    block = softmax((4, 10), 1, DType.F32)
    _, d, _, views = block.row_layout()  # type: ignore[misc]
    source = reduce_source(block, row_program(block, views, d), views, d)
    assert source.count("for (long long j = threadIdx.x; j < nD; j += blockDim.x)") == 3
    assert "acc1 = burn_max_nan(acc1, (double)v0);" in source
    assert "acc4 += (double)v3;" in source
    assert "float* __restrict__ buf3" in source  # exp(x - max), read again by the division
    assert "out0[(a * nD + j) * nB + b] = v5;" in source
    assert source.index("burn_max_nan(shared[t], shared[t + s])") < source.index("shared[t] + shared[t + s]")


def test_reduce_blocks_with_casts_are_left_to_the_ops_one_by_one() -> None:
    backend = Cuda()
    spec = TensorSpec(DType.F32, (4, 6))
    cast = ReduceBlock(
        (spec,), (CastStep("float_cast", (0,), dtype=DType.F64), ReduceStep("float_sum_dim", (1,))), (2,), 1
    )
    from burn_cuda._fusion_fused import compile_reduce

    assert compile_reduce(cast, None) is None  # type: ignore[arg-type]
    assert backend.fused_block_kinds == FUSED_BLOCK_KINDS  # element-wise blocks of ints and casts too


def compare(block: Any, values: list[np.ndarray[Any, Any]], scalars: list[Any], dtype: DType) -> None:
    backend = Cuda()
    device = backend.device(0)
    primitives = [Tensor.from_numpy(value, device).primitive for value in values]
    plan = backend.compile_fused(block, device)
    assert plan is not None
    fused = resolved(plan(primitives, scalars))
    expected = run_fused_op_by_op(backend, block, primitives, scalars)
    assert len(fused) == len(expected)
    for got, want in zip(fused, expected):
        assert got.shape == want.shape
        assert got.dtype == want.dtype
        tolerance = TOLERANCE[dtype] if want.dtype.kind == "f" else 0
        np.testing.assert_allclose(
            got.get().astype(np.float64), want.get().astype(np.float64), rtol=tolerance, atol=tolerance
        )


@needs_gpu
@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.F16], ids=str)
@pytest.mark.parametrize(("shape", "dim"), [((8, 10), 1), ((3, 700, 5), 1), ((600, 4), 0), ((5, 1), 1)])
def test_softmax_equals_the_ops_one_by_one(shape: tuple[int, ...], dim: int, dtype: DType) -> None:
    values = [np.random.default_rng(0).normal(0, 3, shape).astype(dtype.numpy)]
    compare(softmax(shape, dim, dtype), values, [], dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.F16], ids=str)
@pytest.mark.parametrize("shape", [(16, 32), (2, 3, 1000)])
def test_layer_norm_equals_the_ops_one_by_one(shape: tuple[int, ...], dtype: DType) -> None:
    rng = np.random.default_rng(1)
    weight = (1,) * (len(shape) - 1) + (shape[-1],)
    values = [rng.normal(1, 2, shape), rng.normal(0, 1, weight), rng.normal(0, 1, weight)]
    compare(layer_norm(shape, dtype), [v.astype(dtype.numpy) for v in values], [1e-5], dtype)


@needs_gpu
@pytest.mark.parametrize("reduce", ["float_sum_dim", "float_mean_dim", "float_max_dim"])
@pytest.mark.parametrize(("shape", "dim"), [((6, 9), 1), ((6, 9), 0), ((4, 300, 3), 1)])
def test_reductions_with_a_prologue_and_an_epilogue(shape: tuple[int, ...], dim: int, reduce: str) -> None:
    rng = np.random.default_rng(2)
    narrow = tuple(1 if d == dim else size for d, size in enumerate(shape))
    values = [rng.normal(0, 1, shape).astype(np.float32), rng.normal(0, 1, narrow).astype(np.float32)]
    compare(sum_with_prologue_and_epilogue(shape, dim, reduce), values, [2.0, 0.0], DType.F32)


@needs_gpu
def test_the_maximum_propagates_nan_and_handles_infinities() -> None:
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, -np.inf, -np.inf], [np.inf, 2.0, 0.0]], np.float32)
    steps = (ReduceStep("float_max_dim", (0,)), ElementwiseStep("float_mul_scalar", (1,), (2.0,)))
    block = ReduceBlock((TensorSpec(DType.F32, (3, 3)),), steps, (2,), 1)
    backend = Cuda()
    device = backend.device(0)
    plan = backend.compile_fused(block, device)
    assert plan is not None
    (out,) = resolved(plan([Tensor.from_numpy(x, device).primitive], [2.0]))
    got = out.get()
    assert np.isnan(got[0, 0])
    assert got[1, 0] == -np.inf
    assert got[2, 0] == np.inf


@needs_gpu
@pytest.mark.parametrize("batched", [False, True])
def test_a_matmul_block_is_the_product_then_its_epilogue(batched: bool) -> None:
    lead = (3,) if batched else ()
    lhs, rhs = TensorSpec(DType.F32, (*lead, 5, 7)), TensorSpec(DType.F32, (*lead, 7, 4))
    product = TensorSpec(DType.F32, (*lead, 5, 4))
    bias = TensorSpec(DType.F32, (*((1,) * len(lead)), 1, 4))
    epilogue = ElementwiseBlock(
        (product, bias), (ElementwiseStep("float_add", (0, 1)), ElementwiseStep("relu", (2,))), (3,)
    )
    rng = np.random.default_rng(3)
    values = [rng.normal(0, 1, spec.shape).astype(np.float32) for spec in (lhs, rhs, bias)]
    compare(MatmulBlock(lhs, rhs, epilogue), values, [], DType.F32)
