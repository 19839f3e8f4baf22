"""Scaled dot-product attention as strided-batched cuBLAS GEMMs around one fused row kernel.

Forward: ``S = Q K^T`` (one GEMM), then one kernel per row of ``S`` that applies the scale, the
softcap, the causal and boolean masks and the additive bias and takes the softmax (reading ``S`` once,
writing ``P`` over it), then ``O = P V`` (one GEMM). Backward: ``S`` and ``dP = dO V^T`` (two GEMMs),
then the same kernel in its backward form: it recomputes ``P`` over ``S`` and writes
``dS = P * (dP - rowsum(dO * O))`` (through the softcap's ``tanh`` and the scale) over ``dP``, and the
bias gradient before those where there is a bias; then ``dV = P^T dO``, ``dQ = dS K``, ``dK = dS^T Q``.

Grouped-query attention needs no repeated keys: query heads are viewed as ``[batch, kv_heads,
group * seq_q, dim]`` (a free reshape of a contiguous query), so each key head multiplies its whole
group in one matrix, and ``dK`` and ``dV`` come out summed over the group by the GEMMs themselves.
Masks and biases of any broadcasting shape are read in place through their strides (0 on a
broadcast dim).

Causal cases with enough queries (``causal_tiles``: no bias, no grouped heads) run in tiles of query
rows: the rows of a tile see only the keys before its end, so each tile's GEMMs and row kernel take
only those keys (with ``MAX_TILES`` = 4 tiles, 62.5% of the whole square's work). A tile's
``dK`` and ``dV`` parts are added into the first keys of the gradients.

f32 and f64 compute in their own dtype; f16 and bf16 are widened to f32 and the results rounded
once. Each function returns ``None`` for what it does not serve (another rank or dtype, empty
operands, rows longer than ``MAX_KEYS``): the caller then runs the shared version, with the same
semantics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import AttentionBackward, AttentionOptions
from burn_backend.array import LOW_PRECISION

from .. import _cublas
from .._cupy import contiguous, cp

Array = Any
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)
MAX_BLOCK = 256
MAX_ITEMS = 32
TARGET_ITEMS = 8
MIN_TILE = 128
"""The fewest query rows of a causal tile (smaller tiles' GEMMs lose more than the skipped keys save)."""
MAX_TILES = 4
"""The most causal tiles: on an H200 at [16, 8, 1024, 64] f32, 4 tiles of 256 rows beat 8 of 128 (smaller
GEMMs, more launches), and 16 or 32 tiles were slower than none."""
MAX_KEYS = MAX_BLOCK * MAX_ITEMS
"""The longest key sequence the row kernel holds in registers (``MAX_ITEMS`` per thread)."""

_SOURCE = r"""
#define T {ctype}
#define ITEMS {items}
#define BACKWARD {backward}

__device__ __forceinline__ T neg_inf() {{ return {neg_inf}; }}
// max that keeps a NaN, as the shared version's max does
__device__ __forceinline__ T greater(T a, T b) {{ return (a > b || a != a) ? a : b; }}

__device__ T block_max(T v, T* red) {{
    for (int o = 16; o > 0; o >>= 1) v = greater(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {{
        v = lane < warps ? red[lane] : neg_inf();
        for (int o = 16; o > 0; o >>= 1) v = greater(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0) red[0] = v;
    }}
    __syncthreads();
    const T r = red[0];
    __syncthreads();
    return r;
}}

__device__ T block_sum(T v, T* red) {{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {{
        v = lane < warps ? red[lane] : (T)0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) red[0] = v;
    }}
    __syncthreads();
    const T r = red[0];
    __syncthreads();
    return r;
}}

// One block per row (batch, head, query i) of scores [rows, seq_k] (the first seq_k keys): the logits
// (scale, softcap, masks, bias), their softmax written over the scores; with BACKWARD also dS over dP
// (and the bias gradient).
extern "C" __global__ void {name}(
    T* __restrict__ scores, const unsigned char* __restrict__ mask, const T* __restrict__ bias,
    const long long m0, const long long m1, const long long m2, const long long m3,
    const long long b0, const long long b1, const long long b2, const long long b3,
    const int heads, const int seq_q, const int tile_rows, const int q_offset, const int seq_k,
    const T scale, const T softcap, const int capped, const int causal
#if BACKWARD
    , T* __restrict__ grad, const T* __restrict__ out_grad, const T* __restrict__ out,
    const int value_dim, T* __restrict__ bias_grad
#endif
) {{
    __shared__ T red[32];
    // row of this buffer (tile_rows query rows per head, from query q_offset on) and its query i
    const long long row = blockIdx.x;
    const int i = q_offset + (int)(row % tile_rows);
    const long long head_row = row / tile_rows;
    const long long h = head_row % heads, b = head_row / heads;
    T* s = scores + row * seq_k;
    const unsigned char* mask_row = mask ? mask + b * m0 + h * m1 + i * m2 : nullptr;
    const T* bias_row = bias ? bias + b * b0 + h * b1 + i * b2 : nullptr;
    T v[ITEMS];
    T peak = neg_inf();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {{
        const int j = threadIdx.x + k * blockDim.x;
        T x = neg_inf();
        if (j < seq_k) {{
            x = s[j] * scale;
            if (capped) x = softcap * {tanh}(x / softcap);
            if ((causal && j > i) || (mask_row && mask_row[j * m3])) x = neg_inf();
            if (bias_row) x += bias_row[j * b3];
            peak = greater(x, peak);
        }}
        v[k] = x;
    }}
    peak = block_max(peak, red);
    if (!isfinite(peak)) peak = (T)0;  // a fully masked row: exp(-inf) = 0 everywhere, no NaN
    T total = (T)0;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {{
        const int j = threadIdx.x + k * blockDim.x;
        v[k] = j < seq_k ? {exp}(v[k] - peak) : (T)0;
        total += v[k];
    }}
    total = block_sum(total, red);
    if (total == (T)0) total = (T)1;
#if BACKWARD
    T dot = (T)0;
    const long long out_row = (head_row * seq_q + i) * value_dim;
    for (int c = threadIdx.x; c < value_dim; c += blockDim.x) dot += out_grad[out_row + c] * out[out_row + c];
    dot = block_sum(dot, red);
    T* g = grad + row * seq_k;
#endif
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {{
        const int j = threadIdx.x + k * blockDim.x;
        if (j < seq_k) {{
            const T p = v[k] / total;
#if BACKWARD
            T ds = p * (g[j] - dot);
            if (bias_grad) bias_grad[row * seq_k + j] = ds;
            if (capped) {{
                const T c = {tanh}(s[j] * scale / softcap);
                ds *= (T)1 - c * c;
            }}
            g[j] = ds * scale;
#endif
            s[j] = p;
        }}
    }}
}}
"""

_kernels: dict[tuple[str, int, bool], Any] = {}


def kernel_source(dtype: np.dtype[Any], items: int, backward: bool) -> tuple[str, str]:
    """The CUDA C and the entry name of the row kernel for ``dtype`` (f32 or f64) holding ``items``
    keys per thread, in its forward or backward form."""
    wide = dtype == _F64
    name = f"burn_attention_rows_{'f64' if wide else 'f32'}_{items}{'_backward' if backward else ''}"
    source = _SOURCE.format(
        ctype="double" if wide else "float",
        items=items,
        backward=int(backward),
        neg_inf="__longlong_as_double(0xfff0000000000000ULL)" if wide else "__int_as_float(0xff800000)",
        tanh="tanh" if wide else "tanhf",
        exp="exp" if wide else "expf",
        name=name,
    )
    return source, name


def _kernel(dtype: np.dtype[Any], items: int, backward: bool) -> Any:
    key = (dtype.name, items, backward)
    found = _kernels.get(key)
    if found is None:
        source, name = kernel_source(dtype, items, backward)
        found = _kernels[key] = cp.RawKernel(source, name)
    return found


def launch_shape(seq_k: int) -> tuple[int, int]:
    """Threads per row (about ``TARGET_ITEMS`` keys each, at most ``MAX_BLOCK``) and keys per thread (a
    power of two, so that few variants are compiled)."""
    block = min(MAX_BLOCK, max(32, 1 << (-(-seq_k // TARGET_ITEMS) - 1).bit_length()))
    items = 1 << (-(-seq_k // block) - 1).bit_length()
    return block, items


def _strides4(array: Array | None, itemsize: int) -> list[np.int64]:
    """Element strides of a rank-4 operand that broadcasts, 0 on its broadcast (size 1) dims."""
    if array is None:
        return [np.int64(0)] * 4
    return [
        np.int64(0 if size == 1 else stride // itemsize) for size, stride in zip(array.shape, array.strides)
    ]


def _pointer(array: Array | None) -> Any:
    return np.uint64(0) if array is None else array


def _rows(
    scores: Array,
    mask: Array | None,
    bias: Array | None,
    heads: int,
    seq_q: int,
    options: AttentionOptions,
    scale: float,
    backward: tuple[Array, Array, Array, Array | None] | None = None,
    tile: tuple[int, int] | None = None,
) -> None:
    """The row kernel over ``scores`` (contiguous rows of ``[batch, heads, rows, keys]``, in order);
    ``backward`` is ``(dP, dO, O, bias gradient or None)``, dP and the bias gradient written in place;
    ``tile`` is ``(rows, first query)`` where the rows are a tile of the queries (``seq_q`` by default)."""
    dtype = scores.dtype
    seq_k = scores.shape[-1]
    rows = scores.size // seq_k
    tile_rows, q_offset = tile if tile is not None else (seq_q, 0)
    block, items = launch_shape(seq_k)
    scalar = dtype.type
    softcap = options.softcap
    args: list[Any] = [scores, _pointer(mask), _pointer(bias)]
    args += _strides4(mask, 1) + _strides4(bias, dtype.itemsize)
    args += [np.int32(heads), np.int32(seq_q), np.int32(tile_rows), np.int32(q_offset), np.int32(seq_k)]
    args += [scalar(scale), scalar(softcap if softcap is not None else 1.0), np.int32(softcap is not None)]
    args.append(np.int32(options.is_causal))
    if backward is not None:
        grad, out_grad, out, bias_grad = backward
        args += [grad, out_grad, out, np.int32(out.shape[-1]), _pointer(bias_grad)]
    _kernel(dtype, items, backward is not None)((rows,), (block,), tuple(args))


def _broadcasts(array: Array, full: tuple[int, ...]) -> bool:
    return array.ndim == 4 and all(size in (1, whole) for size, whole in zip(array.shape, full))


def _compute_dtype(dtype: np.dtype[Any]) -> np.dtype[Any] | None:
    if dtype in (_F32, _F64):
        return dtype
    return _F32 if dtype in LOW_PRECISION else None


def serves(query: Array, key: Array, value: Array, mask: Array | None, attn_bias: Array | None) -> bool:
    """Whether the GEMM path takes the case (else the shared version runs)."""
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        return False
    batch, heads, seq_q, dim = query.shape
    _, kv_heads, seq_k, _ = key.shape
    if key.shape[0] != batch or key.shape[3] != dim or value.shape[:3] != key.shape[:3]:
        return False
    if (
        kv_heads == 0
        or heads % kv_heads
        or not 0 < seq_k <= MAX_KEYS
        or 0 in query.shape
        or value.shape[3] == 0
    ):
        return False
    if not query.dtype == key.dtype == value.dtype or _compute_dtype(query.dtype) is None:
        return False
    full = (batch, heads, seq_q, seq_k)
    if mask is not None and (mask.dtype != _BOOL or not _broadcasts(mask, full)):
        return False
    if attn_bias is not None and (
        _compute_dtype(attn_bias.dtype) is None or not _broadcasts(attn_bias, full)
    ):
        return False
    return rows_fit(batch * heads * seq_q)


def rows_fit(rows: int) -> bool:
    """Whether a grid of one block per row fits CUDA's limit on the grid's x size."""
    return rows < 2**31


def _scale(options: AttentionOptions, dim: int) -> float:
    return options.scale if options.scale is not None else 1.0 / math.sqrt(dim)


def _operands(runtime: Any, arrays: tuple[Array, ...], dtype: np.dtype[Any]) -> list[Array]:
    return [contiguous(runtime.cast(array, dtype)) for array in arrays]


def _grouped(array: Array, kv_heads: int) -> Array:
    """``[batch, heads, seq, d]`` (contiguous) as ``[batch, kv_heads, group * seq, d]``."""
    batch, heads, seq, dim = array.shape
    return array.reshape(batch, kv_heads, heads // kv_heads * seq, dim)


def _transposed(array: Array) -> Array:
    return cp.swapaxes(array, -1, -2)


def causal_tiles(seq_q: int, seq_k: int) -> list[tuple[int, int, int]] | None:
    """``(first query, end, keys)`` for each tile of the queries of a causal case: the rows of a tile see
    no key at or past ``end``, so its GEMMs take only the first ``keys = min(seq_k, end)`` keys (about
    half the work over all tiles); ``None`` where there are too few queries to split."""
    count = min(MAX_TILES, seq_q // MIN_TILE)
    if count < 2:
        return None
    size = -(-seq_q // count)
    return [(start, min(seq_q, start + size), min(seq_k, start + size)) for start in range(0, seq_q, size)]


def _gemm(
    a: Array, b: Array, m: int, n: int, k: int, count: int, a_step: int, b_step: int, *, a_t: bool = False,
    b_t: bool = False,
) -> Array:  # fmt: skip
    """``count`` products ``op(a) @ op(b)`` into a new ``[count, m, n]`` (``_cublas.gemm_strided_batched``:
    ``a`` and ``b`` may be views whose matrices start ``a_step`` and ``b_step`` elements apart)."""
    out = cp.empty((count, m, n), dtype=a.dtype)
    _cublas.gemm_strided_batched(a, b, out, m, n, k, count, a_t=a_t, b_t=b_t, a_step=a_step, b_step=b_step)
    return out


def _forward_tiled(
    q: Array, k: Array, v: Array, mask: Array | None, tiles: list[tuple[int, int, int]],
    options: AttentionOptions, scale: float,
) -> Array:  # fmt: skip
    batch, heads, seq_q, dim = q.shape
    seq_k, value_dim = k.shape[2], v.shape[3]
    count = batch * heads
    out = cp.empty((batch, heads, seq_q, value_dim), dtype=q.dtype)
    for start, end, keys in tiles:
        rows = end - start
        scores = _gemm(q[:, :, start:], k, rows, keys, dim, count, seq_q * dim, seq_k * dim, b_t=True)
        _rows(scores, mask, None, heads, seq_q, options, scale, tile=(rows, start))
        part = _gemm(scores, v, rows, value_dim, keys, count, rows * keys, seq_k * value_dim)
        out[:, :, start:end] = part.reshape(batch, heads, rows, value_dim)
    return out


def _backward_tiled(
    q: Array, k: Array, v: Array, mask: Array | None, tiles: list[tuple[int, int, int]],
    options: AttentionOptions, scale: float, out: Array, out_grad: Array,
) -> tuple[Array, Array, Array]:  # fmt: skip
    batch, heads, seq_q, dim = q.shape
    seq_k, value_dim = k.shape[2], v.shape[3]
    count = batch * heads
    query_grad = cp.empty(q.shape, dtype=q.dtype)
    key_grad, value_grad = cp.zeros(k.shape, dtype=q.dtype), cp.zeros(v.shape, dtype=q.dtype)
    for start, end, keys in tiles:
        rows = end - start
        q_tile, grad_tile = q[:, :, start:], out_grad[:, :, start:]
        scores = _gemm(q_tile, k, rows, keys, dim, count, seq_q * dim, seq_k * dim, b_t=True)
        scores_grad = _gemm(
            grad_tile, v, rows, keys, value_dim, count, seq_q * value_dim, seq_k * value_dim, b_t=True
        )
        backward = (scores_grad, out_grad, out, None)
        _rows(scores, mask, None, heads, seq_q, options, scale, backward, (rows, start))
        part = _gemm(scores_grad, k, rows, dim, keys, count, rows * keys, seq_k * dim)
        query_grad[:, :, start:end] = part.reshape(batch, heads, rows, dim)
        part = _gemm(scores_grad, q_tile, keys, dim, rows, count, rows * keys, seq_q * dim, a_t=True)
        key_grad[:, :, :keys] += part.reshape(batch, heads, keys, dim)
        part = _gemm(
            scores, grad_tile, keys, value_dim, rows, count, rows * keys, seq_q * value_dim, a_t=True
        )
        value_grad[:, :, :keys] += part.reshape(batch, heads, keys, value_dim)
    return query_grad, key_grad, value_grad


def _tiles(query: Array, key: Array, attn_bias: Array | None, options: AttentionOptions) -> Any:
    """The causal tiles where the case takes them (causal, no grouped heads, no bias), else ``None``."""
    if not options.is_causal or attn_bias is not None or key.shape[1] != query.shape[1]:
        return None
    return causal_tiles(query.shape[2], key.shape[2])


def attention(
    runtime: Any,
    query: Array,
    key: Array,
    value: Array,
    mask: Array | None,
    attn_bias: Array | None,
    options: AttentionOptions,
) -> Array | None:
    """The forward on the GEMM path, or ``None`` where it does not serve the case."""
    if not serves(query, key, value, mask, attn_bias):
        return None
    dtype = _compute_dtype(query.dtype)
    assert dtype is not None
    batch, heads, seq_q, dim = query.shape
    kv_heads = key.shape[1]
    q, k, v = _operands(runtime, (query, key, value), dtype)
    tiles = _tiles(query, key, attn_bias, options)
    if tiles is not None:
        tiled = _forward_tiled(q, k, v, mask, tiles, options, _scale(options, dim))
        return runtime.narrow(tiled, query.dtype)
    bias = None if attn_bias is None else runtime.cast(attn_bias, dtype)
    scores = runtime.matmul(_grouped(q, kv_heads), _transposed(k))
    _rows(scores, mask, bias, heads, seq_q, options, _scale(options, dim))
    out = runtime.matmul(scores, v).reshape(batch, heads, seq_q, value.shape[3])
    return runtime.narrow(out, query.dtype)


def attention_backward(
    runtime: Any,
    query: Array,
    key: Array,
    value: Array,
    mask: Array | None,
    attn_bias: Array | None,
    options: AttentionOptions,
    output: Array,
    output_grad: Array,
) -> AttentionBackward | None:
    """The gradients on the GEMM path, or ``None`` where it does not serve the case."""
    if not serves(query, key, value, mask, attn_bias) or output.shape != output_grad.shape:
        return None
    if output.shape != (*query.shape[:3], value.shape[3]):
        return None
    dtype = _compute_dtype(query.dtype)
    assert dtype is not None
    dim = query.shape[3]
    kv_heads = key.shape[1]
    q, k, v, out, out_grad = _operands(runtime, (query, key, value, output, output_grad), dtype)
    tiles = _tiles(query, key, attn_bias, options)
    if tiles is not None:
        grads = _backward_tiled(q, k, v, mask, tiles, options, _scale(options, dim), out, out_grad)
        query_grad, key_grad, value_grad = (
            runtime.narrow(grad, array.dtype) for grad, array in zip(grads, (query, key, value), strict=True)
        )
        return AttentionBackward(query_grad, key_grad, value_grad, None)
    bias = None if attn_bias is None else runtime.cast(attn_bias, dtype)
    q_grouped, grad_grouped = _grouped(q, kv_heads), _grouped(out_grad, kv_heads)
    scores = runtime.matmul(q_grouped, _transposed(k))
    scores_grad = runtime.matmul(grad_grouped, _transposed(v))
    bias_full = None if bias is None else cp.empty(scores.shape, dtype=dtype)
    backward = (scores_grad, out_grad, out, bias_full)
    _rows(scores, mask, bias, query.shape[1], query.shape[2], options, _scale(options, dim), backward)
    value_grad = runtime.matmul(_transposed(scores), grad_grouped)
    query_grad = runtime.matmul(scores_grad, k).reshape(query.shape)
    key_grad = runtime.matmul(_transposed(scores_grad), q_grouped)
    bias_grad = None
    if bias_full is not None and attn_bias is not None:
        full = bias_full.reshape(*query.shape[:3], key.shape[2])
        summed = tuple(d for d in range(4) if attn_bias.shape[d] == 1 and full.shape[d] != 1)
        reduced = cp.sum(full, axis=summed, keepdims=True) if summed else full
        bias_grad = runtime.narrow(reduced, attn_bias.dtype)
    return AttentionBackward(
        runtime.narrow(query_grad, query.dtype),
        runtime.narrow(key_grad, key.dtype),
        runtime.narrow(value_grad, value.dtype),
        bias_grad,
    )
