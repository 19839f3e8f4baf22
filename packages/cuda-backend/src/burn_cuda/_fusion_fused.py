"""Cuda's compiler for the blocks beyond element-wise chains (the ``compile_fused`` hook): a reduce block
(softmax, log-softmax, layer norm, a sum, mean or max with its prologue and epilogue) becomes one CUDA C
kernel; a matmul block is cuBLAS's product followed by its epilogue as one element-wise kernel.

A reduce block is walked as ``(A, D, B)`` (``ReduceBlock.row_layout``): one thread block per row (an
``(a, b)`` pair, in a grid-stride loop over rows), its threads striding over the row's ``D`` values. The
steps run as the block's row program (``burn_backend.kit.row_program``, which NdArray's compiler renders
too): each loop over the row computes the values of the
full shape that its reductions need, each thread accumulating its share in double (sums; the maximum
propagates NaN), then the block combines the threads' shares in shared memory and every thread continues
with the reduced values. A value of the full shape that a later pass reads is written to an output or, if
it is none, to a scratch buffer of the row; each thread reads back only what it wrote. Every step rounds
as in an element-wise kernel (f16 to f16 after each step, no multiply-add contraction).

Reduce blocks with casts (the only way int values enter one) run op by op (``None``): the reduction
accumulates in double, which an int64 sum would outgrow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from burn_backend import DType
from burn_backend.kit import (
    CastStep,
    ElementwisePlan,
    MatmulBlock,
    ReduceBlock,
    ReduceStep,
    RowLoop,
    RowProgram,
    resolved,
    row_program,
)

from ._cupy import cp
from ._fusion import (
    _C_TYPES,
    _COMPUTE,
    _NUMPY,
    _PRELUDE,
    compile_block,
    kernel_of,
    kernel_operands,
    render_step,
    scalar_types,
    supported,
)

if TYPE_CHECKING:
    from burn_backend import Backend, Device

_THREADS = 256
_MAX_ROWS = 65535 * 16  # thread blocks of one launch; more rows loop
_COMBINE = r"""
__device__ __forceinline__ double burn_minus_infinity() {
    return __longlong_as_double(0xfff0000000000000ULL);
}
__device__ __forceinline__ double burn_max_nan(double a, double b) {
    return a != a ? a : (b != b ? b : (b > a ? b : a));
}
"""


def _to_compute(dtype: DType, expression: str) -> str:
    return f"__half2float({expression})" if dtype is DType.F16 else expression


def _to_storage(dtype: DType, expression: str) -> str:
    return f"__float2half({expression})" if dtype is DType.F16 else expression


def reduce_source(
    block: ReduceBlock, program: RowProgram, views: Sequence[tuple[int, int, int]], D: int
) -> str:
    """The CUDA C of ``burn_reduce`` for ``block``, whose inputs have ``views`` on the ``(A, D, B)``
    frame: its row program (``burn_backend.kit.row_program``) with a thread block per row, the threads
    striding over the row's values (sizes are kernel arguments)."""
    n_in = len(block.inputs)
    values = block.values
    spans = [(va != 1, vd == D and D != 1, vb != 1) for va, vd, vb in views]
    expressions: dict[int, str] = {}
    scalar_at = 0
    for s, step in enumerate(block.steps):
        if isinstance(step, ReduceStep):
            continue
        names = [f"s{i}" for i in range(scalar_at, scalar_at + len(step.scalars))]
        expressions[n_in + s] = render_step(step, values, values[n_in + s].dtype, names)
        scalar_at += len(step.scalars)

    def at(j: int, along: str) -> str:
        """Input ``j``'s offset at row ``(a, b)`` and position ``along``: its view is ``A``, ``D`` and
        ``B`` long or 1 (broadcast) in each part, stored contiguously."""
        a, d, b = spans[j]
        outer = f"{'a' if a else '0'} * {'nD' if d else '1'} + {along if d else '0'}"
        return f"({outer}) * {'nB' if b else '1'} + {'b' if b else '0'}"

    def declare(ref: int, expression: str) -> str:
        return f"const {_COMPUTE[values[ref].dtype]} v{ref} = {expression};"

    position = "(a * nD + j) * nB + b"
    code: list[str] = ["const long long a = row / nB;", "const long long b = row - a * nB;"]
    for item in program.items:
        if isinstance(item, RowLoop):
            kinds = {k: kind for k, kind, _ in item.reductions}
            code += [
                f"double acc{k} = {'burn_minus_infinity()' if kind == 'max' else '0.0'};"
                for k, kind in kinds.items()
            ]
            code.append("for (long long j = threadIdx.x; j < nD; j += blockDim.x) {")
            for entry in item.body:
                what, ref = entry[0], entry[1]
                if what == "input":
                    line = declare(ref, _to_compute(values[ref].dtype, f"in{ref}[{at(ref, 'j')}]"))
                elif what == "reload":
                    o = entry[2]
                    where = (
                        f"buf{ref}[{position}]"
                        if o is None
                        else _to_compute(values[ref].dtype, f"out{o}[{position}]")
                    )
                    line = declare(ref, where)
                elif what == "step":
                    line = declare(ref, expressions[ref])
                elif what == "fold":
                    folded = f"(double)v{entry[2]}"
                    line = (
                        f"acc{ref} = burn_max_nan(acc{ref}, {folded});"
                        if kinds[ref] == "max"
                        else f"acc{ref} += {folded};"
                    )
                elif what == "output":
                    value = entry[2]
                    line = f"out{ref}[{position}] = {_to_storage(values[value].dtype, f'v{value}')};"
                else:  # keep
                    line = f"buf{ref}[{position}] = v{ref};"
                code.append("    " + line)
            code.append("}")
            for k, kind in kinds.items():
                combine = (
                    "burn_max_nan(shared[t], shared[t + s])" if kind == "max" else "shared[t] + shared[t + s]"
                )
                code += [
                    f"shared[threadIdx.x] = acc{k};",
                    "__syncthreads();",
                    "for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {",
                    "    const unsigned t = threadIdx.x;",
                    f"    if (t < s) shared[t] = {combine};",
                    "    __syncthreads();",
                    "}",
                    f"acc{k} = shared[0];",
                    "__syncthreads();",
                ]
                dtype = values[k].dtype
                total = f"acc{k} / (double)nD" if kind == "mean" else f"acc{k}"
                value = f"({_COMPUTE[dtype]})({total})"
                if dtype is DType.F16:
                    value = f"__half2float(__float2half((float)({total})))"
                code.append(declare(k, value))
        elif item[0] == "input":
            j = item[1]
            code.append(declare(j, _to_compute(values[j].dtype, f"in{j}[{at(j, '0')}]")))
        elif item[0] == "step":
            code.append(declare(item[1], expressions[item[1]]))
        else:  # an output of the reduced shape, written once per row
            o, ref = item[1], item[2]
            code.append(
                f"if (threadIdx.x == 0) out{o}[a * nB + b] = {_to_storage(values[ref].dtype, f'v{ref}')};"
            )

    params = [f"const {_C_TYPES[spec.dtype]}* __restrict__ in{j}" for j, spec in enumerate(block.inputs)]
    params += [f"{_C_TYPES[values[ref].dtype]}* __restrict__ out{o}" for o, ref in enumerate(block.outputs)]
    params += [f"{_COMPUTE[values[ref].dtype]}* __restrict__ buf{ref}" for ref in program.kept]
    params += [f"const {kind} s{i}" for i, kind in enumerate(scalar_types(block.steps, values))]
    params += ["const long long nA", "const long long nD", "const long long nB"]
    lines = [
        _PRELUDE,
        _COMBINE,
        f'extern "C" __global__ void burn_reduce({", ".join(params)}) {{',
        f"  __shared__ double shared[{_THREADS}];",
        "  for (long long row = blockIdx.x; row < nA * nB; row += gridDim.x) {",
        *(f"    {line}" for line in code),
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def compile_reduce(block: ReduceBlock, device: Device) -> ElementwisePlan | None:
    """One kernel launch per call for a reduce block of f32, f64, f16 and bool values; ``None`` for
    blocks with casts or int values, or outside the ``(A, D, B)`` frame."""
    if any(isinstance(step, CastStep) for step in block.steps) or not supported(block):
        return None
    layout = block.row_layout()
    if layout is None:
        return None
    A, D, B, views = layout
    program = row_program(block, views, D)
    kernel = kernel_of(reduce_source(block, program, views, D), "burn_reduce")
    values = block.values
    out_specs = [values[ref] for ref in block.outputs]
    out_views = [(A, D if spec.shape[block.dim] != 1 else 1, B) for spec in out_specs]
    buffers = [(A * D * B, _NUMPY[_COMPUTE[values[ref].dtype]]) for ref in program.kept]
    kinds = [_NUMPY[kind] for kind in scalar_types(block.steps, values)]
    sizes = (np.int64(A), np.int64(D), np.int64(B))
    rows = min(_MAX_ROWS, A * B)
    index = device.index

    def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
        with cp.cuda.Device(index):
            arrays, _ = kernel_operands(inputs, index)
            outputs = [cp.empty(view, dtype=spec.dtype.numpy) for view, spec in zip(out_views, out_specs)]
            temporary = [cp.empty(size, dtype=dtype) for size, dtype in buffers]
            arguments = (*arrays, *outputs, *temporary, *(kind(v) for kind, v in zip(kinds, scalars)), *sizes)
            kernel((rows,), (_THREADS,), arguments)
            return [out.reshape(spec.shape) for out, spec in zip(outputs, out_specs)]

    return plan


def compile_matmul(backend: Backend, block: MatmulBlock, device: Device) -> ElementwisePlan | None:
    """cuBLAS's product (the backend's ``float_matmul``), then the epilogue as one element-wise kernel
    (casts included); ``None`` where ``compile_block`` leaves the epilogue to the ops."""
    epilogue = compile_block(block.epilogue, device)
    if epilogue is None:
        return None
    matmul = backend.float_matmul

    def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> Sequence[Any]:
        lhs, rhs = resolved(inputs[:2])
        return epilogue([matmul(lhs, rhs), *inputs[2:]], scalars)

    return plan
