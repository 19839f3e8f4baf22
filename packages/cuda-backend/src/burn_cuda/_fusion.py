"""Cuda's fusion compiler: an ``ElementwiseBlock`` becomes one CUDA C kernel, compiled by NVRTC.

Each step's expression is rendered from the op table (``ElementwiseOp.render``) into CUDA C: the CUDA
math library's functions for the expression functions (its C++ overloads keep f32 in f32), small
device helpers where NumPy's definition differs from C's (``min``/``max`` propagate NaN, ``mod`` takes
the divisor's sign, ``sign`` keeps NaN), literals of the operands' dtype. f16 values compute in f32
and are rounded to f16 after every step, as the ops one by one round each result, so a fused block
gives the same values as the unfused ops (products are not contracted into multiply-adds either).

One thread computes one element of the outputs (all of one shape), in a grid-stride loop; where every input
and output is f32 of the outputs' shape, one thread computes four, through 16-byte loads and stores. The
output shape is walked with its size-1 dims dropped and neighbouring dims of the same broadcast pattern
merged; each input is read at its own offset, with stride 0 along the dims it is broadcast over, and a block
whose inputs all have the output's shape reads them at the flat index. Sizes and strides are kernel arguments,
so one kernel serves every batch size; CuPy caches the compiled module on disk, so a new process does not
compile it again. Outputs are ``DeviceBuffer``s: memory that becomes a CuPy array only when something other
than a fused kernel reads it (the kernels take its address). Int values compute in their own C type (C's
wrapping arithmetic, as CuPy's kernels; floored division and remainder as NumPy's), casts convert as C (as
CuPy's ``astype``). Blocks of u64 or bf16 values, and int powers, run op by op (``None``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from burn_backend import DType, Kind
from burn_backend.kit import (
    CastStep,
    Deferred,
    ElementwiseBlock,
    ElementwisePlan,
    ElementwiseStep,
    ReduceBlock,
    TensorSpec,
)

from ._cupy import contiguous, cp

if TYPE_CHECKING:
    from burn_backend import Device

Array = Any
_BLOCK = 256
_MAX_BLOCKS = 65535 * 4
_INT_TYPES = {
    DType.I64: "long long", DType.I32: "int", DType.I16: "short", DType.I8: "signed char",
    DType.U32: "unsigned int", DType.U16: "unsigned short", DType.U8: "unsigned char",
}  # fmt: skip
_C_TYPES = {DType.F32: "float", DType.F64: "double", DType.F16: "__half", DType.BOOL: "bool", **_INT_TYPES}
# the type a value of each dtype computes in
_COMPUTE = {DType.F32: "float", DType.F64: "double", DType.F16: "float", DType.BOOL: "bool", **_INT_TYPES}
# a compute type's NumPy scalar
_NUMPY = {"float": np.float32, "double": np.float64, "bool": np.bool_} | {
    kind: dtype.numpy.type for dtype, kind in _INT_TYPES.items()
}
_FUNCTIONS = {
    "abs": "burn_abs", "sign": "burn_sign", "min": "burn_min", "max": "burn_max", "mod": "burn_mod",
    "floordiv": "burn_floordiv", "where": "burn_where", "logical_not": "!", "erfinv": "burn_erfinv",
}  # fmt: skip
# left to the ops one by one: CuPy's integer power has its own rules for negative exponents, and a
# shift's count outside [0, width) takes NumPy's rule in the shared ops (a GPU's shift reads a 64-bit
# count's low 32 bits)
_UNFUSED = frozenset({
    "int_powi", "int_powi_scalar", "bitwise_left_shift", "bitwise_left_shift_scalar",
    "bitwise_right_shift", "bitwise_right_shift_scalar",
})  # fmt: skip
ERFINV = """
__device__ __forceinline__ float burn_erfinv(float a) { return erfinvf(a); }
__device__ __forceinline__ double burn_erfinv(double a) { return erfinv(a); }
"""
"""``burn_erfinv``, CUDA's ``erfinvf`` and ``erfinv`` as one overloaded name (the op table's ``erfinv``)."""
FLOAT_MOD = """
template <typename T> __device__ __forceinline__ T burn_mod(T a, T b) {
    T r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r == 0 ? copysign((T)0, b) : r;
}
"""
"""``burn_mod``, NumPy's remainder of floats (the op table's ``mod``): a zero result takes the divisor's
sign, and a finite dividend over an infinite divisor of the other sign gives that infinity."""
_PRELUDE = (
    "#include <cuda_fp16.h>\n"
    + FLOAT_MOD
    + r"""
template <typename T> __device__ __forceinline__ T burn_min(T a, T b) {
    return a != a ? a : (b != b ? b : (b < a ? b : a));
}
template <typename T> __device__ __forceinline__ T burn_max(T a, T b) {
    return a != a ? a : (b != b ? b : (b > a ? b : a));
}
template <typename T> __device__ __forceinline__ T burn_abs(T a) { return a < 0 ? -a : (a == 0 ? (T)0 : a); }
template <typename T> __device__ __forceinline__ T burn_sign(T a) {
    return a != a ? a : (a > 0 ? (T)1 : (a < 0 ? (T)-1 : (T)0));
}
template <typename T> __device__ __forceinline__ T burn_where(bool c, T a, T b) { return c ? a : b; }
// ints: NumPy's (and CuPy's) floored division and remainder, 0 for a zero divisor
#define BURN_INT_DIVISION(T) \
__device__ __forceinline__ T burn_mod(T a, T b) { \
    if (b == 0) return (T)0; \
    const T r = a % b; \
    return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r; \
} \
__device__ __forceinline__ T burn_floordiv(T a, T b) { \
    if (b == 0) return (T)0; \
    const T q = a / b; \
    return (a % b != 0 && ((a < 0) != (b < 0))) ? (T)(q - 1) : q; \
}
BURN_INT_DIVISION(long long) BURN_INT_DIVISION(int) BURN_INT_DIVISION(short) BURN_INT_DIVISION(signed char)
BURN_INT_DIVISION(unsigned int) BURN_INT_DIVISION(unsigned short) BURN_INT_DIVISION(unsigned char)
"""
    + ERFINV
)

# no multiply-add contraction: a fused block rounds each product as the ops one by one do
_OPTIONS = ("-std=c++17", "--fmad=false")
_lock = threading.Lock()
_kernels: dict[str, Any] = {}


def _literal(dtype: DType) -> Any:
    suffix = "f" if _COMPUTE[dtype] == "float" else ""

    def literal(value: int | float) -> str:
        if dtype is DType.BOOL:
            return "true" if value else "false"
        if dtype.kind is Kind.INT:
            return f"({_COMPUTE[dtype]}){int(value)}"
        return f"{float(value)!r}{suffix}"

    return literal


def render_step(
    step: ElementwiseStep, values: Sequence[TensorSpec], result: DType, scalars: list[str]
) -> str:
    """The CUDA C expression of ``step`` on the variables ``v<ref>`` and the scalar parameters
    ``scalars``, in its result's compute type (an f16 result rounded as the op alone rounds it; a cast
    converts as CuPy's ``astype``, C's conversion)."""
    if isinstance(step, CastStep):
        source, value = values[step.args[0]].dtype, f"v{step.args[0]}"
        if result is DType.F16:  # from f64 in one rounding, as the cast alone rounds
            half = f"__double2half({value})" if source is DType.F64 else f"__float2half((float)({value}))"
            return f"__half2float({half})"
        return f"({_COMPUTE[result]})({value})"
    operands = [f"v{ref}" for ref in step.args] + scalars
    value = step.entry.render(operands, _FUNCTIONS, _literal(values[step.args[0]].dtype))
    return f"__half2float(__float2half({value}))" if result is DType.F16 else value


def _steps(block: ElementwiseBlock) -> list[str]:
    """The lines computing every step's value ``v<n>`` from the inputs' ``v0 ..`` and the scalars."""
    lines = []
    scalar_at = 0
    first = len(block.inputs)
    for position, step in enumerate(block.steps):
        result = block.values[first + position].dtype
        scalars = [f"s{k}" for k in range(scalar_at, scalar_at + len(step.scalars))]
        scalar_at += len(step.scalars)
        value = render_step(step, block.values, result, scalars)
        lines.append(f"const {_COMPUTE[result]} v{first + position} = {value};")
    return lines


def scalar_types(steps: Sequence[Any], values: Sequence[TensorSpec]) -> list[str]:
    """The C type of each scalar parameter, in step order: the compute type of the step's first operand."""
    types: list[str] = []
    for step in steps:
        types += [_COMPUTE[values[step.args[0]].dtype]] * len(step.scalars)
    return types


def _element(block: ElementwiseBlock, load: list[str], store: list[str]) -> list[str]:
    """One element: the inputs loaded (``load[j]``, an expression), the steps, the outputs stored
    (``store[k]``, an assignable place)."""
    lines = []
    for j, spec in enumerate(block.inputs):
        value = f"__half2float({load[j]})" if spec.dtype is DType.F16 else load[j]
        lines.append(f"const {_COMPUTE[spec.dtype]} v{j} = {value};")
    lines += _steps(block)
    for k, ref in enumerate(block.outputs):
        value = f"__float2half(v{ref})" if block.values[ref].dtype is DType.F16 else f"v{ref}"
        lines.append(f"{store[k]} = {value};")
    return lines


def _parameters(block: ElementwiseBlock, flags: list[tuple[bool, ...]], rank: int, flat: bool) -> str:
    params = [f"const {_C_TYPES[spec.dtype]}* __restrict__ in{j}" for j, spec in enumerate(block.inputs)]
    outputs = [block.values[ref].dtype for ref in block.outputs]
    params += [f"{_C_TYPES[dtype]}* __restrict__ out{k}" for k, dtype in enumerate(outputs)]
    params += [f"const {kind} s{k}" for k, kind in enumerate(scalar_types(block.steps, block.values))]
    params.append("const long long n")
    if not flat:
        params += [f"const long long size{d}" for d in range(rank)]
        params += [f"const long long stride{j}_{d}" for j in range(len(block.inputs)) for d in range(rank)]
    return ", ".join(params)


_LOOP = (
    "for (long long {i} = (long long)blockIdx.x * blockDim.x + threadIdx.x; {i} < {n}; "
    "{i} += (long long)gridDim.x * blockDim.x) {{"
)


def _source(block: ElementwiseBlock, flags: list[tuple[bool, ...]], rank: int) -> str:
    """The CUDA C of ``burn_fused`` for ``block`` over a layout of ``rank`` merged dims: one element
    per thread, inputs read at their broadcast offsets (or at the flat index where none broadcasts)."""
    flat = all(all(spans) for spans in flags)
    n_in, n_out = len(block.inputs), len(block.outputs)
    body = []
    if not flat:
        body.append("long long rest = i;")
        body += [f"long long at{j} = 0;" for j in range(n_in)]
        for d in range(rank - 1, -1, -1):
            body.append(f"{{ const long long q = rest % size{d}; rest /= size{d};")
            body += [f"  at{j} += q * stride{j}_{d};" for j in range(n_in) if flags[j][d]]
            body.append("}")
    loads = [f"in{j}[{'i' if flat else f'at{j}'}]" for j in range(n_in)]
    body += _element(block, loads, [f"out{k}[i]" for k in range(n_out)])
    lines = [
        _PRELUDE,
        f'extern "C" __global__ void burn_fused({_parameters(block, flags, rank, flat)}) {{',
        "  " + _LOOP.format(i="i", n="n"),
        *(f"    {line}" for line in body),
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _vectorized(block: ElementwiseBlock) -> bool:
    """Whether the block's inputs and outputs are all f32 of the outputs' shape: then ``_source_x4``
    moves one ``float4`` per operand per thread, the way PyTorch's element-wise kernels do."""
    outputs = [block.values[ref] for ref in block.outputs]
    shape = outputs[0].shape
    return all(spec.dtype is DType.F32 and spec.shape == shape for spec in (*block.inputs, *outputs))


def _source_x4(block: ElementwiseBlock) -> str:
    """The CUDA C of ``burn_fused`` for a ``_vectorized`` block: four elements per thread through
    16-byte loads and stores (the arrays are 16-byte aligned), the last ``n % 4`` one by one."""
    n_in, n_out = len(block.inputs), len(block.outputs)
    body = [f"const float4 a{j} = reinterpret_cast<const float4*>(in{j})[q];" for j in range(n_in)]
    body += [f"float4 r{k};" for k in range(n_out)]
    for lane in "xyzw":
        element = _element(
            block, [f"a{j}.{lane}" for j in range(n_in)], [f"r{k}.{lane}" for k in range(n_out)]
        )
        body += ["{", *(f"  {line}" for line in element), "}"]
    body += [f"reinterpret_cast<float4*>(out{k})[q] = r{k};" for k in range(n_out)]
    tail = _element(block, [f"in{j}[i]" for j in range(n_in)], [f"out{k}[i]" for k in range(n_out)])
    lines = [
        _PRELUDE,
        f'extern "C" __global__ void burn_fused({_parameters(block, [], 0, True)}) {{',
        "  const long long quads = n >> 2;",
        "  " + _LOOP.format(i="q", n="quads"),
        *(f"    {line}" for line in body),
        "  }",
        "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (t < (n & 3)) {",
        "    const long long i = (quads << 2) + t;",
        *(f"    {line}" for line in tail),
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def kernel_of(source: str, name: str = "burn_fused") -> Any:
    """The kernel ``name`` of ``source``, compiled once per process (and cached on disk by CuPy)."""
    with _lock:
        kernel = _kernels.get(source)
        if kernel is None:
            kernel = _kernels[source] = cp.RawKernel(source, name, options=_OPTIONS)
        return kernel


_CARVED_BYTES = 1 << 16
"""Outputs of a block up to this size each are carved from one allocation."""
_CARVED_ALIGN = 256  # cudaMalloc's alignment: every output keeps the vectorized loads' 16 bytes


class DeviceBuffer(Deferred):
    """A fused block's output: C-contiguous values of ``shape`` and ``dtype`` at ``offset`` bytes into
    ``memory`` (a CuPy ``MemoryPointer``), made into a CuPy array only when something other than a
    fused kernel reads it.

    Fused kernels take its address as it is: a chain of tiny fused blocks costs the host no CuPy array
    per value (2.7 µs each on an H100's host, more than their kernels take), and an output nothing
    reads is never wrapped at all."""

    __slots__ = ("array", "dtype", "memory", "offset", "shape")

    def __init__(self, memory: Any, offset: int, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.memory = memory
        self.offset = offset
        self.shape = shape
        self.dtype = dtype
        self.array: Any = None

    def resolve(self) -> Any:
        """The CuPy array over the buffer (made once)."""
        array = self.array
        if array is None:
            memory = self.memory + self.offset if self.offset else self.memory
            array = self.array = cp.ndarray(self.shape, self.dtype, memptr=memory)
        return array


def output_allocator(
    shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]
) -> Callable[[], tuple[list[DeviceBuffer], list[Any]]]:
    """A function that allocates a block's outputs (of ``shape``, one per dtype) on the current GPU:
    the ``DeviceBuffer``s, and their addresses as kernel arguments.

    Several small outputs are carved from one allocation: a block of tiny ops costs the host far more
    than the GPU, and one call into CuPy's memory pool replaces one per output. Larger outputs get
    allocations of their own, so that each is given back to the pool as soon as it dies."""
    count = int(np.prod(shape, dtype=np.int64))
    sizes = [count * dtype.itemsize for dtype in dtypes]
    alloc, address = cp.cuda.alloc, np.uint64  # the current allocator's: a capture's private pool included
    if len(sizes) < 2 or not 0 < max(sizes) <= _CARVED_BYTES:
        pairs = list(zip(dtypes, sizes, strict=True))

        def allocate_each() -> tuple[list[DeviceBuffer], list[Any]]:
            buffers = [DeviceBuffer(alloc(size), 0, shape, dtype) for dtype, size in pairs]
            return buffers, [address(buffer.memory.ptr) for buffer in buffers]

        return allocate_each
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += -(-size // _CARVED_ALIGN) * _CARVED_ALIGN
    carved = list(zip(dtypes, offsets, strict=True))

    def allocate_carved() -> tuple[list[DeviceBuffer], list[Any]]:
        memory = alloc(total)
        base = memory.ptr
        buffers = [DeviceBuffer(memory, offset, shape, dtype) for dtype, offset in carved]
        return buffers, [address(base + offset) for offset in offsets]

    return allocate_carved


def kernel_operands(inputs: Sequence[Any], index: int) -> tuple[list[Any], bool]:
    """The kernel arguments of a plan's inputs on GPU ``index`` (CuPy arrays made contiguous, and the
    addresses of this compiler's ``DeviceBuffer``s), and whether every one is 16-byte aligned."""
    operands: list[Any] = []
    aligned = True
    for value in inputs:
        if type(value) is DeviceBuffer and value.memory.device_id == index:
            address = value.memory.ptr + value.offset
            operands.append(np.uint64(address))
        else:
            if type(value) is DeviceBuffer:
                value = value.resolve()
            value = contiguous(value)
            address = value.data.ptr
            operands.append(value)
        if address & 15:
            aligned = False
    return operands, aligned


def supported(block: ElementwiseBlock | ReduceBlock) -> bool:
    """Whether this compiler takes the block's values and steps: f32, f64, f16, bool and the int
    dtypes but u64; every step but int powers."""
    if any(spec.dtype not in _C_TYPES for spec in block.values):
        return False
    return not any(step.op in _UNFUSED for step in block.steps)


def compile_block(block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
    """The plan of ``block`` (casts included) on ``device``: one kernel launch per call; ``None`` for
    blocks this compiler leaves to the ops one by one (u64 or bf16 values, int powers, outputs of
    different shapes)."""
    if not supported(block):
        return None
    layout = block.loop_layout()
    if layout is None:
        return None
    sizes, flags = layout
    rank = len(sizes)
    flat = all(all(spans) for spans in flags)
    kernel = kernel_of(_source(block, flags, rank))
    quad = kernel_of(_source_x4(block)) if _vectorized(block) else None
    out_shape = block.values[block.outputs[0]].shape
    allocate_outputs = output_allocator(out_shape, [block.values[ref].dtype.numpy for ref in block.outputs])
    kinds = [_NUMPY[kind] for kind in scalar_types(block.steps, block.values)]
    n = int(np.prod(out_shape, dtype=np.int64))
    geometry: list[Any] = [np.int64(n)]
    if not flat:  # the block's shapes are fixed: sizes and strides are computed once
        geometry += [np.int64(size) for size in sizes]
        for spans in flags:
            stride, strides = 1, [0] * rank
            for d in range(rank - 1, -1, -1):
                if spans[d]:
                    strides[d] = stride
                    stride *= sizes[d]
            geometry += [np.int64(value) for value in strides]
    blocks = min(_MAX_BLOCKS, (n + _BLOCK - 1) // _BLOCK)
    quad_blocks = min(_MAX_BLOCKS, max(1, (n // 4 + _BLOCK - 1) // _BLOCK))
    index = device.index

    def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
        with cp.cuda.Device(index):
            operands, aligned = kernel_operands(inputs, index)
            outputs, addresses = allocate_outputs()
            if n:
                arguments = (
                    *operands,
                    *addresses,
                    *(kind(v) for kind, v in zip(kinds, scalars)),
                    *geometry,
                )
                if quad is not None and aligned:
                    quad((quad_blocks,), (_BLOCK,), arguments)
                else:
                    kernel((blocks,), (_BLOCK,), arguments)
            return outputs

    return plan
