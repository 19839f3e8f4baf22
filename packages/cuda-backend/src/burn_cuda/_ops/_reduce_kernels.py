"""One CUDA C reduction kernel for every reduction along a dim and over a whole tensor.

The input is viewed as ``[outer, reduced, inner]`` (C-contiguous) and the result as the
``outputs = outer * inner`` values it reduces to. A block of 256 threads is ``bx`` outputs by ``by``
lanes along the reduced dim: with ``inner == 1`` ("rows") the lanes of one output are neighbouring
threads, which read a row's neighbouring values; otherwise ("columns") neighbouring threads are
neighbouring outputs, which read neighbouring columns. Each lane folds its share of the reduced dim
in registers, then the lanes of an output are folded by warp shuffles and shared memory. Where the
outputs are too few blocks to fill the GPU, the reduced dim is also split into ``splits`` parts, each
reduced by its own blocks, which write a partial result; the last block of an output tile to finish
(counted by an atomic per tile) folds the parts' results, in a fixed order: one launch, and the same
result whichever block finishes last. A whole-tensor reduction is ``[1, size, 1]``.

f16 and bf16 are widened in registers and accumulate in f32 (bf16 is read and written as its bits:
CuPy has no kernels for ml_dtypes' bf16), f32 in f32, f64 in f64, i32 and i64 in i64. Maxima and
minima propagate NaN; the arg-reductions take a NaN as the extreme and pick the first index among
equal values, as NumPy's ``max`` and ``argmax`` (the shared ops' reference) do.

The launch parameters of each (shape, dtype, dim, op) are worked out once and cached, so a call costs
its output allocations and one launch on the host.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any, NamedTuple

import numpy as np

from burn_backend import DType

from .._cupy import cp

Array = Any
THREADS = 256
MIN_PER_LANE = 16  # values a lane folds at least (fewer lanes where the reduced dim is short)
BLOCKS_PER_SM = THREADS // 32  # 2048 threads an SM: 8 blocks of 256 fill it
MAX_SPLITS = 65535  # grid.y's limit
_NULL = np.uint64(0)  # a null pointer argument

_ZERO = {"f": "0.0f", "d": "0.0", "i": "0LL"}
_ONE = {"f": "1.0f", "d": "1.0", "i": "1LL"}
_LOWEST = {
    "f": "__int_as_float(0xff800000)",
    "d": "__longlong_as_double(0xfff0000000000000LL)",
    "i": "BURN_I64_MIN",
}
_HIGHEST = {
    "f": "__int_as_float(0x7f800000)",
    "d": "__longlong_as_double(0x7ff0000000000000LL)",
    "i": "BURN_I64_MAX",
}


def _first_extreme(better: str) -> str:
    """The fold of an arg-reduction: a NaN is the extreme, and among equal values (NaNs too) the first
    index wins. A total order, so lanes and parts may be folded in any order."""
    return (
        "const bool a_nan = a != a, b_nan = b != b;\n"
        f"    if (a_nan ? (b_nan && bi < ai) : (b_nan || b {better} a || (b == a && bi < ai))) {{\n"
        "        a = b;\n"
        "        ai = bi;\n"
        "    }"
    )


# op -> (identity by accumulator kind ("f" f32, "d" f64, "i" i64), fold of ``b`` into ``a``, indexed)
_OPS: dict[str, tuple[dict[str, str], str, bool]] = {
    "sum": (_ZERO, "a += b;", False),
    "mean": (_ZERO, "a += b;", False),
    "prod": (_ONE, "a *= b;", False),
    # a NaN sticks: once ``a`` is NaN nothing replaces it
    "max": (_LOWEST, "if (a == a && (b > a || b != b)) a = b;", False),
    "min": (_HIGHEST, "if (a == a && (b < a || b != b)) a = b;", False),
    "argmax": (_LOWEST, _first_extreme(">"), True),
    "argmin": (_HIGHEST, _first_extreme("<"), True),
}
INT_OPS = frozenset({"sum", "max", "min", "argmax", "argmin"})


class Element(NamedTuple):
    """How one dtype is read into and written from an accumulator in CUDA C."""

    ctype: str  # the C type of its values in memory
    acc: str  # the accumulator's kind: "f", "d" or "i"
    load: str  # the accumulator's value of ``x[k]``
    store: str  # the value in memory of the accumulator's ``v``


_ACC_CTYPES = {"f": "float", "d": "double", "i": "long long"}
_ACC_DTYPES: dict[str, np.dtype[Any]] = {
    "f": np.dtype(np.float32),
    "d": np.dtype(np.float64),
    "i": np.dtype(np.int64),
}
_ELEMENTS: dict[str, Element] = {
    "float32": Element("float", "f", "x[k]", "v"),
    "float64": Element("double", "d", "x[k]", "v"),
    "float16": Element("__half", "f", "__half2float(x[k])", "__float2half_rn(v)"),
    "bfloat16": Element(
        "unsigned short", "f", "__uint_as_float(((unsigned int)x[k]) << 16)", "burn_to_bf16(v)"
    ),
    "int32": Element("int", "i", "(long long)x[k]", "(int)v"),
    "int64": Element("long long", "i", "x[k]", "v"),
}
_BF16 = DType.BF16.numpy
_U16 = np.dtype(np.uint16)
# looked up by hash: a NumPy dtype is never compared with ml_dtypes' bf16
_NAMES = {np.dtype(name): name for name in _ELEMENTS if name != "bfloat16"} | {_BF16: "bfloat16"}
_INDEX_CTYPES = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
}

_SOURCE = r"""
#include <cuda_fp16.h>
#define BURN_I64_MAX 0x7fffffffffffffffLL
#define BURN_I64_MIN (-0x7fffffffffffffffLL - 1)
typedef {src} src_t;
typedef {acc} acc_t;
typedef {dst} dst_t;
typedef {index} index_t;
typedef {pos} pos_t;  // positions along the reduced dim
#define BURN_POS_END {pos_end}
#define BURN_ROWS {rows}

__device__ __forceinline__ unsigned short burn_to_bf16(const float f) {{
    // round to nearest even; a NaN stays a (quiet) NaN of its sign
    const unsigned int u = __float_as_uint(f);
    if (f != f) return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}}

__device__ __forceinline__ acc_t burn_load(const src_t* __restrict__ x, const long long k) {{
    return {load};
}}

__device__ __forceinline__ void burn_combine(acc_t& a, pos_t& ai, const acc_t b, const pos_t bi) {{
    {combine}
}}

// folds the lanes of each output: every thread of the block calls it, the lane ty == 0 ends with the result
__device__ __forceinline__ void burn_fold_lanes(acc_t& a, pos_t& ai, const int tx, const int ty, const int lb,
                                                acc_t* shared_a, pos_t* shared_ai) {{
    const int by = 1 << lb;
    const int bx = 256 >> lb;
    if (BURN_ROWS) {{
        // an output's lanes are neighbouring threads: shuffles within the warp, then across warps
        for (int offset = (by < 32 ? by : 32) >> 1; offset > 0; offset >>= 1) {{
            const acc_t b = __shfl_xor_sync(0xffffffffu, a, offset);
            {shuffle_index}
            burn_combine(a, ai, b, bi);
        }}
        if (by > 32) {{
            const int warp = threadIdx.x >> 5;
            __syncthreads();  // earlier readers of the shared slots are done
            if ((threadIdx.x & 31) == 0) {{
                shared_a[warp] = a;
                shared_ai[warp] = ai;
            }}
            __syncthreads();
            if (ty == 0) {{
                for (int w = warp + 1; w < warp + (by >> 5); ++w) {{
                    burn_combine(a, ai, shared_a[w], shared_ai[w]);
                }}
            }}
        }}
    }} else if (by > 1) {{
        // an output's lanes are threads bx apart: through shared memory
        __syncthreads();
        shared_a[threadIdx.x] = a;
        shared_ai[threadIdx.x] = ai;
        __syncthreads();
        if (ty == 0) {{
            for (int y = 1; y < by; ++y) burn_combine(a, ai, shared_a[y * bx + tx], shared_ai[y * bx + tx]);
        }}
    }}
}}

extern "C" __global__ void __launch_bounds__(256) burn_reduce(
        const src_t* __restrict__ x, dst_t* __restrict__ out, index_t* __restrict__ out_index,
        acc_t* partial, pos_t* partial_index, unsigned int* arrivals,
        const long long outputs, const long long reduced, const long long inner, const long long chunk,
        const int lb) {{
    __shared__ acc_t shared_a[256];
    __shared__ pos_t shared_ai[256];
    __shared__ bool last;
    const int by = 1 << lb;  // lanes along the reduced dim
    const int bx = 256 >> lb;  // outputs of the block
    const int tx = BURN_ROWS ? threadIdx.x >> lb : threadIdx.x & (bx - 1);
    const int ty = BURN_ROWS ? threadIdx.x & (by - 1) : threadIdx.x >> (8 - lb);
    const long long j = (long long)blockIdx.x * bx + tx;
    const long long r0 = (long long)blockIdx.y * chunk;
    const long long r1 = min(r0 + chunk, reduced);
    acc_t a = {identity};
    pos_t ai = BURN_POS_END;
    if (j < outputs) {{
        const long long o = j / inner;
        const long long step = (long long)by * inner;
        long long r = r0 + ty;
        long long k = o * reduced * inner + (j - o * inner) + r * inner;
        // four loads in flight before they are folded
        for (; r + 3 * by < r1; r += 4 * by, k += 4 * step) {{
            const acc_t v0 = burn_load(x, k);
            const acc_t v1 = burn_load(x, k + step);
            const acc_t v2 = burn_load(x, k + 2 * step);
            const acc_t v3 = burn_load(x, k + 3 * step);
            burn_combine(a, ai, v0, (pos_t)r);
            burn_combine(a, ai, v1, (pos_t)(r + by));
            burn_combine(a, ai, v2, (pos_t)(r + 2 * by));
            burn_combine(a, ai, v3, (pos_t)(r + 3 * by));
        }}
        for (; r < r1; r += by, k += step) burn_combine(a, ai, burn_load(x, k), (pos_t)r);
    }}
    burn_fold_lanes(a, ai, tx, ty, lb, shared_a, shared_ai);
    if (gridDim.y > 1) {{
        // this part's result; the tile's last part to arrive folds them all, in the parts' order
        if (ty == 0 && j < outputs) {{
            partial[blockIdx.y * outputs + j] = a;
            {store_partial_index}
            __threadfence();
        }}
        __syncthreads();
        if (threadIdx.x == 0) last = atomicAdd(arrivals + blockIdx.x, 1u) == gridDim.y - 1;
        __syncthreads();
        if (!last) return;
        a = {identity};
        ai = BURN_POS_END;
        if (j < outputs) {{
            for (long long s = ty; s < gridDim.y; s += by) {{
                burn_combine(a, ai, __ldcg(partial + s * outputs + j), {load_partial_index});
            }}
        }}
        burn_fold_lanes(a, ai, tx, ty, lb, shared_a, shared_ai);
        if (threadIdx.x == 0) arrivals[blockIdx.x] = 0u;  // ready for the next launch on this stream
    }}
    if (ty == 0 && j < outputs) {{
        const acc_t v = {finish};
        if (out != nullptr) out[j] = {store};
        if (out_index != nullptr) out_index[j] = (index_t)ai;
    }}
}}
"""


class Plan(NamedTuple):
    """How one launch covers ``[outer, reduced, inner]``."""

    rows: bool  # inner == 1: an output's lanes are neighbouring threads
    lb: int  # log2 of the lanes along the reduced dim (``by``)
    blocks: int  # grid.x: blocks of 256 >> lb outputs
    splits: int  # grid.y: parts of the reduced dim, each reduced by its own blocks
    chunk: int  # the length of each part


def plan(outputs: int, reduced: int, inner: int, fill: int) -> Plan:
    """The launch for ``outputs`` results of ``reduced`` values each (``inner`` apart), where ``fill``
    blocks fill the GPU: ``MIN_PER_LANE`` values a lane at least, the reduced dim split into parts
    only while the outputs' blocks are fewer than ``fill``."""
    rows = inner == 1
    lanes = max(1, reduced // MIN_PER_LANE)
    lb = min(lanes.bit_length() - 1, 8 if rows else 3)  # columns keep 32 outputs a block at least
    by = 1 << lb
    blocks = -(-outputs // (THREADS >> lb))
    splits = 1
    if blocks < fill:
        splits = max(1, min(-(-fill // blocks), reduced // (by * MIN_PER_LANE), MAX_SPLITS))
    chunk = max(1, -(-reduced // splits))
    return Plan(rows, lb, blocks, -(-reduced // chunk) if reduced else 1, chunk)


def source(op: str, dtype: str, index: str, rows: bool, wide: bool = False) -> str:
    """The CUDA C of the kernel ``burn_reduce`` for ``op`` of values of ``dtype`` (a NumPy dtype's
    name, or ``bfloat16``), writing results of ``dtype`` and indices of the C type ``index``; ``rows``
    where the reduced values are neighbours, ``wide`` where their positions pass 2^31."""
    identities, combine, indexed = _OPS[op]
    element = _ELEMENTS[dtype]
    pos = "long long" if wide else "int"
    return _SOURCE.format(
        src=element.ctype,
        acc=_ACC_CTYPES[element.acc],
        dst=element.ctype,
        index=index,
        pos=pos,
        pos_end="BURN_I64_MAX" if wide else "0x7fffffff",
        rows="true" if rows else "false",
        load=element.load,
        combine=combine,
        identity=identities[element.acc],
        shuffle_index=(
            "const pos_t bi = __shfl_xor_sync(0xffffffffu, ai, offset);" if indexed else "const pos_t bi = 0;"
        ),
        store_partial_index="partial_index[blockIdx.y * outputs + j] = ai;" if indexed else "",
        load_partial_index="__ldcg(partial_index + s * outputs + j)" if indexed else "(pos_t)0",
        finish="a / (acc_t)reduced" if op == "mean" else "a",
        store=element.store,
    )


_lock = threading.Lock()
_modules: dict[tuple[Any, ...], Any] = {}


def _function(op: str, dtype: str, index: str, rows: bool, wide: bool, device: int) -> Any:
    """The compiled ``burn_reduce`` of ``source(...)`` on GPU ``device`` (compiled once per process
    and key, and cached on disk by CuPy)."""
    key = (op, dtype, index, rows, wide)
    with _lock:
        module = _modules.get(key)
        if module is None:
            module = _modules[key] = cp.RawModule(code=source(op, dtype, index, rows, wide))
    with cp.cuda.Device(device):
        return module.get_function("burn_reduce")


class Launch(NamedTuple):
    """A reduction's launch worked out once for its shape, dtype, dim and op."""

    function: Any  # the compiled kernel
    grid: tuple[int, int]
    out_shape: tuple[int, ...]
    partial_shape: tuple[int, int] | None  # [splits, outputs] where the reduced dim is split
    acc_dtype: np.dtype[Any]
    pos_dtype: np.dtype[Any]
    scalars: tuple[Any, ...]  # outputs, reduced, inner, chunk, lb


@functools.lru_cache(maxsize=1024)
def _launch(
    shape: tuple[int, ...], dtype: Any, axis: int | None, op: str, index_dtype: Any, device: int
) -> Launch | None:
    name = _NAMES.get(dtype)
    if name is None or math.prod(shape) == 0:
        return None
    element = _ELEMENTS[name]
    if op not in (INT_OPS if element.acc == "i" else _OPS):
        return None
    index = "long long" if index_dtype is None else _INDEX_CTYPES.get(np.dtype(index_dtype))
    if index is None:
        return None
    out_shape: tuple[int, ...] = (1,)
    if axis is None:
        outer, reduced, inner = 1, math.prod(shape), 1
    else:
        if not shape:
            return None
        axis %= len(shape)
        outer, reduced, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
        out_shape = (*shape[:axis], 1, *shape[axis + 1 :])
    outputs = outer * inner
    found = plan(outputs, reduced, inner, _fill(device))
    if found.blocks > 2**31 - 1:
        return None
    wide = reduced > 2**31 - 2
    return Launch(
        _function(op, name, index, found.rows, wide, device),
        (found.blocks, found.splits),
        out_shape,
        (found.splits, outputs) if found.splits > 1 else None,
        _ACC_DTYPES[element.acc],
        np.dtype(np.int64 if wide else np.int32),
        (np.int64(outputs), np.int64(reduced), np.int64(inner), np.int64(found.chunk), np.int32(found.lb)),
    )


@functools.cache
def _fill(device: int) -> int:
    """Blocks of 256 threads that fill GPU ``device``."""
    return int(cp.cuda.Device(device).attributes["MultiProcessorCount"]) * BLOCKS_PER_SM


_arrivals: dict[tuple[int, int], Array] = {}


def _arrival_counters(device: int) -> Array:
    """The zeroed arrival counters of the current stream (each split launch leaves them zeroed; one
    set per stream, so that launches on two streams never share one)."""
    key = (device, cp.cuda.get_current_stream().ptr)
    counters = _arrivals.get(key)
    if counters is None:
        counters = _arrivals[key] = cp.zeros(_fill(device), dtype=np.uint32)
    return counters


def supports(dtype: Any, op: str) -> bool:
    """Whether the kernels reduce arrays of ``dtype`` with ``op``."""
    name = _NAMES.get(dtype)
    if name is None:
        return False
    return op in INT_OPS if _ELEMENTS[name].acc == "i" else op in _OPS


def reduce(
    tensor: Array, axis: int | None, op: str, index_dtype: Any = None, values: bool = True
) -> tuple[Array | None, Array | None] | None:
    """``op`` (``sum``, ``mean``, ``prod``, ``max``, ``min``, ``argmax``, ``argmin``) of ``tensor``
    along ``axis`` (kept with size 1), or of the whole tensor (shape ``(1,)``) where ``axis`` is
    ``None``: the values in ``tensor``'s dtype (where ``values``) and, for the arg-reductions, the
    indices in ``index_dtype``. ``None`` where the kernels do not serve the case (another dtype, an
    empty tensor, an index dtype without a C type): the caller takes the shared op."""
    indexed = _OPS[op][2]
    if indexed and index_dtype is None:
        return None
    dtype, device = tensor.dtype, tensor.device.id
    launch = _launch(tensor.shape, dtype, axis, op, index_dtype if indexed else None, device)
    if launch is None:
        return None
    if not tensor._c_contiguous:
        # bf16 moves as its bits (CuPy copies no bf16)
        tensor = cp.ascontiguousarray(tensor.view(_U16) if _NAMES[dtype] == "bfloat16" else tensor)
    out = cp.ndarray(launch.out_shape, dtype=dtype) if values or not indexed else None
    out_index = cp.ndarray(launch.out_shape, dtype=index_dtype) if indexed else None
    partial = partial_index = arrivals = None
    if launch.partial_shape is not None:
        partial = cp.ndarray(launch.partial_shape, dtype=launch.acc_dtype)
        if indexed:
            partial_index = cp.ndarray(launch.partial_shape, dtype=launch.pos_dtype)
        arrivals = _arrival_counters(device)
    launch.function(
        launch.grid,
        (THREADS,),
        (
            tensor,
            _NULL if out is None else out,
            _NULL if out_index is None else out_index,
            _NULL if partial is None else partial,
            _NULL if partial_index is None else partial_index,
            _NULL if arrivals is None else arrivals,
            *launch.scalars,
        ),
    )
    return out, out_index
