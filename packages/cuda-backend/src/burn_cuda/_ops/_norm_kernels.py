"""The CUDA C of Cuda's normalization kernels, and their compilation (once per variant, cached).

Two families. *Set* kernels (layer, RMS and group norm) normalize contiguous sets of ``L`` elements, one
block per set (a grid-stride loop over the sets): element ``i`` of set ``s`` takes parameter
``(s % G) * cb + i / M`` (layer and RMS norm: ``G = 1``, ``M = 1``, so parameter ``i``; group norm:
``cb`` channels of ``M`` elements per group). Each thread holds elements ``tid + j * blockDim`` for
``j < K``: in registers where ``K`` is small enough (``CACHE_X``, ``CACHE_G``), so that the set is read
from memory once for the statistics and the output, else read again per pass (from L2, the block having
just read it). The statistics are two-pass (mean, then the mean of squared deviations) in ``A`` (f32,
f64 for f64). The backward writes the input gradient and per-feature partial sums of ``dy * x^`` and
``dy``: per block and element where the parameters are per element (``PER_ELEMENT``, held in registers
over the block's sets), else per set and channel; the caller sums the partials (two stages, no atomics,
so results repeat bit for bit).

*Channel* kernels (batch norm): a partial-sum kernel over ``[N, C, M]`` per channel and split of the
channel's ``N * M`` elements (shifted sums of ``x`` and ``x^2`` for the statistics, or of ``dy`` and
``dy * (x - mean)`` for the gradients), and an element-wise kernel ``a[c] * u + b[c] * v + d[c]`` that
applies the normalization or the input gradient from per-channel coefficients.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .._cupy import cp

_TYPES = {
    np.dtype(np.float16): ("half", "float"),
    np.dtype(np.float32): ("float", "float"),
    np.dtype(np.float64): ("double", "double"),
}
KERNEL_DTYPES = frozenset(_TYPES)
"""The dtypes the kernels take (others fall back to the shared code)."""

_OPTIONS = ("-std=c++17",)

_PRELUDE = r"""
#include <cuda_fp16.h>
typedef {T} T;
typedef {A} A;

__device__ __forceinline__ float to_acc(const __half v) {{ return __half2float(v); }}
__device__ __forceinline__ float to_acc(const float v) {{ return v; }}
__device__ __forceinline__ double to_acc(const double v) {{ return v; }}
__device__ __forceinline__ void put(__half* p, const long long i, const float v) {{
    p[i] = __float2half_rn(v);
}}
__device__ __forceinline__ void put(float* p, const long long i, const float v) {{ p[i] = v; }}
__device__ __forceinline__ void put(double* p, const long long i, const double v) {{ p[i] = v; }}

// the sums of ``a`` and ``b`` over the block, in every thread; each thread adds the warps' sums in one
// order, so every thread gets the same bits
__device__ __forceinline__ void block_sum2(A& a, A& b, A* shared) {{
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {{
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }}
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads();  // the previous reduction's reads are done
    if ((threadIdx.x & 31) == 0) {{
        shared[warp] = a;
        shared[32 + warp] = b;
    }}
    __syncthreads();
    a = 0;
    b = 0;
    for (int w = 0; w < warps; ++w) {{
        a += shared[w];
        b += shared[32 + w];
    }}
}}
"""

_SETS = r"""
#define K {K}
#define CACHE_X {cache_x}
#define CACHE_G {cache_g}
#define PER_ELEMENT {per_element}

#if CACHE_X
#define XV(j) xv[j]
#else
#define XV(j) to_acc(xs[tid + (j) * bs])
#endif
#if CACHE_G
#define GV(j) gv[j]
#else
#define GV(j) to_acc(gs[tid + (j) * bs])
#endif
#if PER_ELEMENT
#define PARAM(i) (i)
#else
#define PARAM(i) (pbase + (i) / M)
#endif
// per-element parameters of few elements a thread stay in registers over the block's sets
#define CACHE_P (PER_ELEMENT && K <= 8)
#if CACHE_P
#define GAMMA(j, i) gk[j]
#define BETA(j, i) bk[j]
#define LOAD_PARAMS                                                                 \
    A gk[K], bk[K];                                                                 \
    _Pragma("unroll")                                                               \
    for (int j = 0; j < K; ++j) {{                                                  \
        const int i = tid + j * bs;                                                 \
        gk[j] = gamma != nullptr && i < L ? to_acc(gamma[i]) : (A)1;                \
        bk[j] = beta != nullptr && i < L ? to_acc(beta[i]) : (A)0;                  \
    }}
#else
#define GAMMA(j, i) to_acc(gamma[PARAM(i)])
#define BETA(j, i) to_acc(beta[PARAM(i)])
#define LOAD_PARAMS
#endif
#if CACHE_X
#define KK K
#else
#define KK k
#endif

// the set's mean (0 where not ``center``) and 1 / sqrt(var + eps), var the mean of squared deviations
#define SET_STATISTICS                                                              \
    A mean = 0;                                                                     \
    {{                                                                              \
        A sum = 0, unused = 0;                                                      \
        if (center) {{                                                              \
            _Pragma("unroll")                                                       \
            for (int j = 0; j < KK; ++j) {{                                         \
                if (tid + j * bs < L) sum += XV(j);                                 \
            }}                                                                      \
            block_sum2(sum, unused, shared);                                        \
            mean = sum / (A)L;                                                      \
        }}                                                                          \
        A squares = 0;                                                              \
        unused = 0;                                                                 \
        _Pragma("unroll")                                                           \
        for (int j = 0; j < KK; ++j) {{                                             \
            if (tid + j * bs < L) {{                                                \
                const A d = XV(j) - mean;                                           \
                squares += d * d;                                                   \
            }}                                                                      \
        }}                                                                          \
        block_sum2(squares, unused, shared);                                        \
        invstd = (A)1 / sqrt(squares / (A)L + eps);                                 \
    }}

extern "C" __global__ void __launch_bounds__(1024) burn_norm_sets_forward(
    const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
    T* __restrict__ y, const long long sets, const int L, const int M, const int cb, const int G,
    const A eps, const int center, const int k) {{
    __shared__ A shared[64];
    const int tid = threadIdx.x, bs = blockDim.x;
    LOAD_PARAMS
    for (long long s = blockIdx.x; s < sets; s += gridDim.x) {{
        const T* xs = x + s * L;
        T* ys = y + s * L;
        const int pbase = (int)(s % G) * cb;
#if CACHE_X
        A xv[K];
        #pragma unroll
        for (int j = 0; j < K; ++j) {{
            const int i = tid + j * bs;
            xv[j] = i < L ? to_acc(xs[i]) : (A)0;
        }}
#endif
        A invstd;
        SET_STATISTICS
        #pragma unroll
        for (int j = 0; j < KK; ++j) {{
            const int i = tid + j * bs;
            if (i < L) {{
                A v = (XV(j) - mean) * invstd;
                if (gamma != nullptr) v *= GAMMA(j, i);
                if (beta != nullptr) v += BETA(j, i);
                put(ys, i, v);
            }}
        }}
    }}
}}

// dx, and the partial sums of dy * x^ (pg) and dy (pb): [gridDim.x, L] where PER_ELEMENT, else
// [sets, cb] (null when no parameter's gradient is asked for)
extern "C" __global__ void __launch_bounds__(1024) burn_norm_sets_backward(
    const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ dy,
    T* __restrict__ dx, A* __restrict__ pg, A* __restrict__ pb, const long long sets, const int L,
    const int M, const int cb, const int G, const A eps, const int center, const int k) {{
    __shared__ A shared[64];
    const int tid = threadIdx.x, bs = blockDim.x;
    const T* beta = nullptr;  // (LOAD_PARAMS reads it)
    LOAD_PARAMS
#if PER_ELEMENT
    A gsum[K], bsum[K];
    #pragma unroll
    for (int j = 0; j < K; ++j) {{
        gsum[j] = 0;
        bsum[j] = 0;
    }}
#endif
    for (long long s = blockIdx.x; s < sets; s += gridDim.x) {{
        const T* xs = x + s * L;
        const T* gs = dy + s * L;
        T* dxs = dx + s * L;
        const int pbase = (int)(s % G) * cb;
#if CACHE_X
        A xv[K];
        #pragma unroll
        for (int j = 0; j < K; ++j) {{
            const int i = tid + j * bs;
            xv[j] = i < L ? to_acc(xs[i]) : (A)0;
        }}
#endif
#if CACHE_G
        A gv[K];
        #pragma unroll
        for (int j = 0; j < K; ++j) {{
            const int i = tid + j * bs;
            gv[j] = i < L ? to_acc(gs[i]) : (A)0;
        }}
#endif
        A invstd;
        SET_STATISTICS
        // the closed form's sums: of gy = dy * gamma, and of gy * x^
        A s1 = 0, s2 = 0;
        #pragma unroll
        for (int j = 0; j < KK; ++j) {{
            const int i = tid + j * bs;
            if (i < L) {{
                const A g = GV(j);
                const A gy = gamma != nullptr ? g * GAMMA(j, i) : g;
                const A xh = (XV(j) - mean) * invstd;
                s1 += gy;
                s2 += gy * xh;
#if PER_ELEMENT
                gsum[j] += g * xh;
                bsum[j] += g;
#endif
            }}
        }}
        block_sum2(s1, s2, shared);
        const A c1 = center ? s1 / (A)L : (A)0, c2 = s2 / (A)L;
        #pragma unroll
        for (int j = 0; j < KK; ++j) {{
            const int i = tid + j * bs;
            if (i < L) {{
                const A g = GV(j);
                const A gy = gamma != nullptr ? g * GAMMA(j, i) : g;
                const A xh = (XV(j) - mean) * invstd;
                put(dxs, i, invstd * (gy - c1 - xh * c2));
            }}
        }}
#if !PER_ELEMENT
        if (pg != nullptr) {{
            // one reduction per channel of the set (channel c holds elements [c * M, (c + 1) * M))
            for (int c = 0; c < cb; ++c) {{
                A a = 0, b = 0;
                #pragma unroll
                for (int j = 0; j < KK; ++j) {{
                    const int i = tid + j * bs;
                    if (i < L && i / M == c) {{
                        const A g = GV(j);
                        a += g * (XV(j) - mean) * invstd;
                        b += g;
                    }}
                }}
                block_sum2(a, b, shared);
                if (tid == 0) {{
                    pg[s * cb + c] = a;
                    pb[s * cb + c] = b;
                }}
            }}
        }}
#endif
    }}
#if PER_ELEMENT
    if (pg != nullptr) {{
        #pragma unroll
        for (int j = 0; j < K; ++j) {{
            const int i = tid + j * bs;
            if (i < L) {{
                pg[(long long)blockIdx.x * L + i] = gsum[j];
                pb[(long long)blockIdx.x * L + i] = bsum[j];
            }}
        }}
    }}
#endif
}}
"""

_CHANNELS = r"""
// one step of bs elements along a channel of [N, C, M]: (n, m) += divmod(bs, M)
#define ADVANCE                \
    n += step_n;               \
    m += step_m;               \
    if (m >= M) {{             \
        m -= M;                \
        ++n;                   \
    }}

// per channel c and split of its N * M elements of x [N, C, M] (block c * splits + split): the sums
// of d = x - shift and of d * d, and with dy those of dy and dy * d. shift is shift[c], or without
// shift the first element of x[0, c / cb * cb] (the first of the channel's set of cb channels, so that
// the variance does not cancel where the mean is large against the spread)
extern "C" __global__ void __launch_bounds__(256) burn_norm_channels_partial(
    const T* __restrict__ x, const T* __restrict__ dy, const A* __restrict__ shift,
    A* __restrict__ pa, A* __restrict__ pb, A* __restrict__ pc, A* __restrict__ pd,
    const long long N, const long long C, const long long M, const long long cb,
    const long long splits, const long long chunk) {{
    __shared__ A shared[64];
    const long long c = blockIdx.x / splits, split = blockIdx.x % splits, count = N * M;
    const long long first = split * chunk;
    const long long last = first + chunk < count ? first + chunk : count;
    const A center = shift != nullptr ? shift[c] : to_acc(x[c / cb * cb * M]);
    // t runs over the channel's elements, n = t / M and m = t % M kept by increments, four loads at
    // a time in flight
    const long long bs = blockDim.x;
    long long t = first + threadIdx.x;
    long long n = t / M, m = t % M;
    const long long step_n = bs / M, step_m = bs % M;
    A a = 0, b = 0, e = 0, f = 0;
    for (; t + 3 * bs < last; t += 4 * bs) {{
        long long at[4];
        #pragma unroll
        for (int u = 0; u < 4; ++u) {{
            at[u] = (n * C + c) * M + m;
            ADVANCE
        }}
        A xv[4], gv[4];
        #pragma unroll
        for (int u = 0; u < 4; ++u) {{
            xv[u] = to_acc(x[at[u]]);
            gv[u] = dy != nullptr ? to_acc(dy[at[u]]) : (A)0;
        }}
        #pragma unroll
        for (int u = 0; u < 4; ++u) {{
            const A d = xv[u] - center;
            a += d;
            b += d * d;
            e += gv[u];
            f += gv[u] * d;
        }}
    }}
    for (; t < last; t += bs) {{
        const long long at = (n * C + c) * M + m;
        const A d = to_acc(x[at]) - center;
        a += d;
        b += d * d;
        if (dy != nullptr) {{
            const A g = to_acc(dy[at]);
            e += g;
            f += g * d;
        }}
        ADVANCE
    }}
    block_sum2(a, b, shared);
    if (threadIdx.x == 0) {{
        pa[blockIdx.x] = a;
        pb[blockIdx.x] = b;
    }}
    if (dy != nullptr) {{
        block_sum2(e, f, shared);
        if (threadIdx.x == 0) {{
            pc[blockIdx.x] = e;
            pd[blockIdx.x] = f;
        }}
    }}
}}

// group norm from the partial sums of its rows (x viewed [N * C, M], each row one channel of one
// sample, cb consecutive rows one set of L = cb * M elements): per row q, the coefficients of
// out = a * u + b * v + d (the forward: u = x; the backward: u = dy, v = x), and with dy the row's
// sums of dy * x^ (pg) and dy (pb2)
extern "C" __global__ void burn_norm_groups_coefficients(
    const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
    const A* __restrict__ pa, const A* __restrict__ pb, const A* __restrict__ pc,
    const A* __restrict__ pd, A* __restrict__ ca, A* __restrict__ cb_, A* __restrict__ cd,
    A* __restrict__ pg, A* __restrict__ pb2, const long long rows, const long long C,
    const long long M, const long long cb, const long long splits, const A eps) {{
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= rows) return;
    const long long s = q / cb, c = q % C;
    const A L = (A)(cb * M);
    A sx = 0, sxx = 0, s1 = 0, s2 = 0;
    for (long long r = s * cb; r < (s + 1) * cb; ++r) {{
        A e = 0, f = 0;
        for (long long j = r * splits; j < (r + 1) * splits; ++j) {{
            sx += pa[j];
            sxx += pb[j];
            if (pc != nullptr) {{
                e += pc[j];
                f += pd[j];
            }}
        }}
        const A g = gamma != nullptr ? to_acc(gamma[r % C]) : (A)1;
        s1 += g * e;
        s2 += g * f;
    }}
    const A offset = sx / L;
    A variance = sxx / L - offset * offset;
    variance = variance > (A)0 ? variance : (A)0;
    const A invstd = (A)1 / sqrt(variance + eps);
    const A mean = to_acc(x[s * cb * M]) + offset;
    const A scale = gamma != nullptr ? invstd * to_acc(gamma[c]) : invstd;
    ca[q] = scale;
    if (pc == nullptr) {{
        cd[q] = (beta != nullptr ? to_acc(beta[c]) : (A)0) - mean * scale;
        return;
    }}
    // sum(gy * x^) = invstd * (sum(gy * (x - shift)) - offset * sum(gy))
    const A k = invstd * invstd * invstd * (s2 - offset * s1) / L;
    cb_[q] = -k;
    cd[q] = k * mean - invstd * s1 / L;
    if (pg != nullptr) {{
        A e = 0, f = 0;
        for (long long j = q * splits; j < (q + 1) * splits; ++j) {{
            e += pc[j];
            f += pd[j];
        }}
        pg[q] = invstd * (f - offset * e);
        pb2[q] = e;
    }}
}}

// out = a[c] * u + b[c] * v + d[c] over [N, C, M] (v may be null): each block takes 8 * blockDim
// consecutive elements, each thread 8 of them, loaded at once; where the rows (M elements) are at
// least as long as a block's span, the block meets at most two, and c needs no division per element
extern "C" __global__ void __launch_bounds__(256) burn_norm_channels_apply(
    const T* __restrict__ u, const T* __restrict__ v, const A* __restrict__ a,
    const A* __restrict__ b, const A* __restrict__ d, T* __restrict__ out, const long long total,
    const long long C, const long long M) {{
    const long long bs = blockDim.x, span = 8 * bs;
    const long long t0 = (long long)blockIdx.x * span;
    const long long row0 = t0 / M, boundary = (row0 + 1) * M;
    const long long c0 = row0 % C, c1 = (row0 + 1) % C;
    const bool two_rows = M >= span;
    A uv[8], vv[8];
    #pragma unroll
    for (int j = 0; j < 8; ++j) {{
        const long long t = t0 + threadIdx.x + j * bs;
        uv[j] = t < total ? to_acc(u[t]) : (A)0;
        vv[j] = t < total && v != nullptr ? to_acc(v[t]) : (A)0;
    }}
    #pragma unroll
    for (int j = 0; j < 8; ++j) {{
        const long long t = t0 + threadIdx.x + j * bs;
        if (t < total) {{
            const long long c = two_rows ? (t < boundary ? c0 : c1) : (t / M) % C;
            A r = a[c] * uv[j] + d[c];
            if (v != nullptr) r += b[c] * vv[j];
            put(out, t, r);
        }}
    }}
}}
"""

_lock = threading.Lock()
_modules: dict[tuple[Any, ...], Any] = {}
_functions: dict[tuple[Any, ...], Any] = {}


def _function(key: tuple[Any, ...], source: Callable[[], str], name: str) -> Any:
    """Function ``name`` of the module ``source()`` compiles, compiled once per ``key`` and device."""
    full = (*key, name, cp.cuda.runtime.getDevice())
    function = _functions.get(full)
    if function is None:
        with _lock:
            module = _modules.get(key)
            if module is None:
                module = _modules[key] = cp.RawModule(code=source(), options=_OPTIONS)
            function = _functions[full] = module.get_function(name)
    return function


def sets_kernel(
    dtype: np.dtype[Any], direction: str, k: int, cache_x: bool, cache_g: bool, per_element: bool
) -> Any:
    """The set kernel ``burn_norm_sets_<direction>`` for ``dtype`` holding ``k`` elements per thread in
    registers (``x``'s where ``cache_x``, ``dy``'s where also ``cache_g``), or reading them again per
    pass (no ``cache_x``: ``k`` is then a launch argument). Per-element parameters (``per_element``)
    need ``cache_x``."""
    cache_g = cache_g and cache_x
    key = ("sets", dtype, k if cache_x else 0, cache_x, cache_g, per_element and cache_x)

    def source() -> str:
        storage, accumulate = _TYPES[dtype]
        return _PRELUDE.format(T=storage, A=accumulate) + _SETS.format(
            K=k if cache_x else 1,
            cache_x=int(cache_x),
            cache_g=int(cache_g),
            per_element=int(per_element and cache_x),
        )

    return _function(key, source, f"burn_norm_sets_{direction}")


def channels_kernel(dtype: np.dtype[Any], name: str) -> Any:
    """The channel kernel ``burn_norm_<name>`` (``channels_partial``, ``channels_apply`` or
    ``groups_coefficients``) for ``dtype``."""

    def source() -> str:
        storage, accumulate = _TYPES[dtype]
        return _PRELUDE.format(T=storage, A=accumulate) + _CHANNELS.format()

    return _function(("channels", dtype), source, f"burn_norm_{name}")


def accumulation(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype the kernels compute ``dtype`` in: f64 for f64, else f32."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
