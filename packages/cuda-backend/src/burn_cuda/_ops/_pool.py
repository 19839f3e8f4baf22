"""Adaptive average pooling on the GPU: one kernel for the forward, one for the gradient.

Windows are PyTorch's: output ``i`` of an axis of ``size`` inputs and ``out`` outputs averages inputs
``floor(i * size / out)`` to ``ceil((i + 1) * size / out)`` (exclusive). The forward sums each window in
row-major order and divides once. The gradient is a gather: each input element sums the gradients of
the windows that hold it, each divided by its window's size, in a fixed order, so results repeat bit
for bit. The 1-d op runs as the 2-d one with one row. Arrays are f32 or f64 (callers compute f16 and
bf16 in f32); ``burn_backend.array``'s lowering took about ten CuPy calls for either direction.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._cupy import contiguous, cp

Array = Any

_BLOCK = 256
_GRID_MAX = 1 << 20
_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

_SOURCE = r"""
typedef {T} T;

// PyTorch's adaptive windows along an axis of ``size`` inputs and ``out`` outputs
__device__ __forceinline__ long long window_start(long long i, long long size, long long out) {{
    return (i * size) / out;
}}
__device__ __forceinline__ long long window_end(long long i, long long size, long long out) {{
    return ((i + 1) * size + out - 1) / out;
}}

// y[plane, oh, ow]: the mean of x[plane] over window (oh, ow)
extern "C" __global__ void burn_adaptive_avg_pool(
    const T* __restrict__ x, T* __restrict__ y, const long long total,
    const long long H, const long long W, const long long OH, const long long OW) {{
    for (long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x; n < total;
         n += (long long)gridDim.x * blockDim.x) {{
        const long long ow = n % OW, oh = (n / OW) % OH, plane = n / (OW * OH);
        const long long h0 = window_start(oh, H, OH), h1 = window_end(oh, H, OH);
        const long long w0 = window_start(ow, W, OW), w1 = window_end(ow, W, OW);
        const T* rows = x + plane * H * W;
        T sum = 0;
        for (long long h = h0; h < h1; ++h) {{
            for (long long w = w0; w < w1; ++w) sum += rows[h * W + w];
        }}
        y[n] = sum / (T)((h1 - h0) * (w1 - w0));
    }}
}}

// dx[plane, h, w]: the sum of g[plane, oh, ow] / window size over the windows holding (h, w)
extern "C" __global__ void burn_adaptive_avg_pool_grad(
    const T* __restrict__ g, T* __restrict__ dx, const long long total,
    const long long H, const long long W, const long long OH, const long long OW) {{
    for (long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x; n < total;
         n += (long long)gridDim.x * blockDim.x) {{
        const long long w = n % W, h = (n / W) % H, plane = n / (W * H);
        const T* grads = g + plane * OH * OW;
        T sum = 0;
        // the windows holding h lie in [floor(h * OH / H), ceil((h + 1) * OH / H))
        for (long long oh = (h * OH) / H; oh < ((h + 1) * OH + H - 1) / H; ++oh) {{
            const long long h0 = window_start(oh, H, OH), h1 = window_end(oh, H, OH);
            if (h < h0 || h >= h1) continue;
            for (long long ow = (w * OW) / W; ow < ((w + 1) * OW + W - 1) / W; ++ow) {{
                const long long w0 = window_start(ow, W, OW), w1 = window_end(ow, W, OW);
                if (w < w0 || w >= w1) continue;
                sum += grads[oh * OW + ow] / (T)((h1 - h0) * (w1 - w0));
            }}
        }}
        dx[n] = sum;
    }}
}}
"""

_kernels: dict[tuple[str, np.dtype[Any]], Any] = {}


def _kernel(name: str, dtype: np.dtype[Any]) -> Any:
    key = (name, dtype)
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = _kernels[key] = cp.RawKernel(_SOURCE.format(T=_TYPES[dtype]), name)
    return kernel


def _launch(name: str, source: Array, target: Array, sizes: tuple[int, int, int, int]) -> None:
    """Launch kernel ``name`` over every element of ``target``; ``sizes`` are (H, W, OH, OW)."""
    total = target.size
    if total:
        blocks = min(_GRID_MAX, -(-total // _BLOCK))
        arguments = (source, target, np.int64(total), *(np.int64(size) for size in sizes))
        _kernel(name, np.dtype(source.dtype))((blocks,), (_BLOCK,), arguments)


def _spatial(shape: tuple[int, ...]) -> tuple[int, int]:
    """The two spatial sizes of ``[batch, channels, (H,) W]`` (H 1 for the 1-d op)."""
    return (shape[2] if len(shape) == 4 else 1), shape[-1]


def adaptive_avg_pool(x: Array, output_size: tuple[int, ...]) -> Array:
    """The adaptive average pool of contiguous-or-not ``x [batch, channels, (H,) W]`` (f32 or f64) to
    ``output_size`` (one size per spatial dim)."""
    x = contiguous(x)
    y = cp.empty((*x.shape[:2], *output_size), dtype=x.dtype)
    _launch("burn_adaptive_avg_pool", x, y, (*_spatial(x.shape), *_spatial(y.shape)))
    return y


def adaptive_avg_pool_grad(x_shape: tuple[int, ...], grad: Array) -> Array:
    """The gradient of ``adaptive_avg_pool`` with respect to an input of ``x_shape``, from the output's
    gradient ``grad`` (f32 or f64)."""
    grad = contiguous(grad)
    dx = cp.empty(x_shape, dtype=grad.dtype)
    _launch("burn_adaptive_avg_pool_grad", grad, dx, (*_spatial(x_shape), *_spatial(grad.shape)))
    return dx
