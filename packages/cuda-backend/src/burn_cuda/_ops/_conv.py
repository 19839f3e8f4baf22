"""Convolutions on the GPU: im2col and col2im as CUDA kernels around strided-batched cuBLAS GEMMs.

Every layout is batch-major, so no operand or result is ever transposed in memory:

- ``columns [batch, channels, prod(kernel), prod(out)]`` (equally ``[batch, groups, depth, prod(out)]``
  with ``depth = channels / groups * prod(kernel)``) hold the input's windows, gathered by one kernel
  that reads the unpadded input (positions outside it read as zero);
- the forward convolution is ``y[b, g] = w[g] @ columns[b, g]``, one batched GEMM whose result is
  already ``[batch, out channels, *out]``;
- the weight gradient is ``sum_b grad[b, g] @ columns[b, g]^T``, a batched GEMM and a small sum;
- the input gradient (and the transposed convolution, the same operator) is ``parts[b, g] = w[g]^T @
  grad[b, g]`` followed by col2im, one kernel in which each input element sums the entries of ``parts``
  its windows touched (a gather: no atomics, a fixed order, so results repeat bit for bit).

1-d and 2-d convolutions run as 3-d ones with unit leading dims. A pointwise convolution (kernel 1,
stride 1, no padding) uses the input as its columns and the GEMM result as its input gradient. Batches
are cut into chunks whose columns stay under ``_COLUMNS_MAX`` elements, which bounds the workspace.
Arrays are f32 or f64 (callers compute f16 and bf16 in f32). The GEMMs honour CuPy's ``CUPY_TF32``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._cublas import gemm_strided_batched
from .._cupy import contiguous, cp

Array = Any
Sizes = Sequence[int]

_COLUMNS_MAX = 1 << 27
_BLOCK = 256
_GRID_MAX = 1 << 20
_INT_MAX = (1 << 31) - 1

_SOURCE = r"""
typedef {T} T;
typedef {I} I;
#define UNIT_STRIDE {U}

struct Geometry {{
    int X0, X1, X2, O0, O1, O2, K0, K1, K2, s0, s1, s2, p0, p1, p2, d0, d1, d2;
}};

// The output index n of a window position (n + p - k * d) / s, or -1 where none lands there.
__device__ __forceinline__ int landing(const int n, const int s, const int limit) {{
#if UNIT_STRIDE
    return (n >= 0 && n < limit) ? n : -1;
#else
    const int o = n / s;
    return (n >= 0 && o * s == n && o < limit) ? o : -1;
#endif
}}

// columns[b, c, k, o] = x[b, c, o * s - p + k * d], zero outside x; one thread per (b, c, o).
extern "C" __global__ void burn_im2col(const T* __restrict__ x, T* __restrict__ columns, const I total,
                                       const Geometry g) {{
    const I plane = (I)g.X0 * g.X1 * g.X2;
    const I positions = (I)g.O0 * g.O1 * g.O2;
    const I taps = (I)g.K0 * g.K1 * g.K2;
    for (I t = (I)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (I)blockDim.x * gridDim.x) {{
        I r = t;
        const int o2 = (int)(r % g.O2); r /= g.O2;
        const int o1 = (int)(r % g.O1); r /= g.O1;
        const int o0 = (int)(r % g.O0); r /= g.O0;  // r = batch * channels + channel
        const T* source = x + r * plane;
        T* target = columns + r * taps * positions + ((I)o0 * g.O1 + o1) * g.O2 + o2;
        for (int k0 = 0; k0 < g.K0; ++k0) {{
            const int i0 = o0 * g.s0 - g.p0 + k0 * g.d0;
            const bool in0 = i0 >= 0 && i0 < g.X0;
            for (int k1 = 0; k1 < g.K1; ++k1) {{
                const int i1 = o1 * g.s1 - g.p1 + k1 * g.d1;
                const bool in1 = in0 && i1 >= 0 && i1 < g.X1;
                for (int k2 = 0; k2 < g.K2; ++k2) {{
                    const int i2 = o2 * g.s2 - g.p2 + k2 * g.d2;
                    *target = (in1 && i2 >= 0 && i2 < g.X2) ? source[((I)i0 * g.X1 + i1) * g.X2 + i2] : (T)0;
                    target += positions;
                }}
            }}
        }}
    }}
}}

// x[b, c, i] = sum over taps k of columns[b, c, k, o] where o * s - p + k * d = i; one thread per x element.
extern "C" __global__ void burn_col2im(const T* __restrict__ columns, T* __restrict__ x, const I total,
                                       const Geometry g) {{
    const I positions = (I)g.O0 * g.O1 * g.O2;
    const I taps = (I)g.K0 * g.K1 * g.K2;
    for (I t = (I)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (I)blockDim.x * gridDim.x) {{
        I r = t;
        const int x2 = (int)(r % g.X2); r /= g.X2;
        const int x1 = (int)(r % g.X1); r /= g.X1;
        const int x0 = (int)(r % g.X0); r /= g.X0;  // r = batch * channels + channel
        const T* source = columns + r * taps * positions;
        T sum = (T)0;
        for (int k0 = 0; k0 < g.K0; ++k0) {{
            const int o0 = landing(x0 + g.p0 - k0 * g.d0, g.s0, g.O0);
            if (o0 < 0) continue;
            for (int k1 = 0; k1 < g.K1; ++k1) {{
                const int o1 = landing(x1 + g.p1 - k1 * g.d1, g.s1, g.O1);
                if (o1 < 0) continue;
                for (int k2 = 0; k2 < g.K2; ++k2) {{
                    const int o2 = landing(x2 + g.p2 - k2 * g.d2, g.s2, g.O2);
                    if (o2 < 0) continue;
                    const I k = ((I)k0 * g.K1 + k1) * g.K2 + k2;
                    sum += source[k * positions + ((I)o0 * g.O1 + o1) * g.O2 + o2];
                }}
            }}
        }}
        x[t] = sum;
    }}
}}

// sums[c]: the sum of g[b, c, o] over b and o, for a contiguous g [batch, channels, positions] (a
// convolution's bias gradient). One block of {B} threads per channel, each summing a strided share
// and then a tree: a fixed order, so results repeat bit for bit.
extern "C" __global__ void burn_channel_sums(const T* __restrict__ g, T* __restrict__ sums, const I batch,
                                             const int channels, const I positions) {{
    __shared__ T partial[{B}];
    const int c = blockIdx.x;
    T sum = (T)0;
    for (I i = threadIdx.x; i < batch * positions; i += blockDim.x) {{
        const I b = i / positions;
        sum += g[(b * channels + c) * positions + (i - b * positions)];
    }}
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {{
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }}
    if (threadIdx.x == 0) sums[c] = partial[0];
}}

// y[b, c, o] += bias[c] for a contiguous y [batch, channels, positions], in place.
extern "C" __global__ void burn_add_bias(T* __restrict__ y, const T* __restrict__ bias, const I total,
                                         const int channels, const I positions) {{
    for (I t = (I)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (I)blockDim.x * gridDim.x) {{
        y[t] += bias[(t / positions) % channels];
    }}
}}
"""

_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_GEOMETRY = np.dtype([(f"{name}{i}", np.int32) for name in "XOKspd" for i in range(3)])
_kernels: dict[tuple[str, Any, bool, bool], Any] = {}


def _kernel(name: str, dtype: Any, wide: bool, unit_stride: bool) -> Any:
    key = (name, dtype, wide, unit_stride)
    kernel = _kernels.get(key)
    if kernel is None:
        source = _SOURCE.format(
            T=_TYPES[np.dtype(dtype)], I="long long" if wide else "int", U=int(unit_stride), B=_BLOCK
        )
        kernel = _kernels[key] = cp.RawKernel(source, name)  # compiled and loaded per device on use
    return kernel


class _Geometry:
    """A convolution's sizes lifted to three spatial dims (unit dims in front), and its kernels'
    argument. Columns are ``[batch, channels * taps, positions]``."""

    def __init__(
        self, spatial: Sizes, out: Sizes, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes
    ) -> None:
        lift = 3 - len(kernel)
        self.spatial = (1,) * lift + tuple(spatial)
        self.out = (1,) * lift + tuple(out)
        self.positions = math.prod(self.out)
        self.taps = math.prod(kernel)
        self.unit_stride = all(s == 1 for s in stride)
        self.pointwise = self.taps == 1 and self.unit_stride and not any(padding) and self.out == self.spatial
        values = (
            *self.spatial,
            *self.out,
            *((1,) * lift + tuple(kernel)),
            *((1,) * lift + tuple(stride)),
            *((0,) * lift + tuple(padding)),
            *((1,) * lift + tuple(dilation)),
        )
        self.argument = np.array(values, dtype=_GEOMETRY)[()]

    def _launch(self, name: str, source: Array, target: Array, total: int) -> None:
        wide = max(source.size, target.size) > _INT_MAX
        kernel = _kernel(name, source.dtype, wide, self.unit_stride)
        blocks = min(_GRID_MAX, max(1, -(-total // _BLOCK)))
        kernel(
            (blocks,),
            (_BLOCK,),
            (source, target, np.int64(total) if wide else np.int32(total), self.argument),
        )

    def columns(self, x: Array) -> Array:
        """The windows of ``x [batch, channels, *spatial]``: ``[batch, channels * taps, positions]`` (``x``
        itself, reshaped, for a pointwise convolution)."""
        batch, channels = x.shape[:2]
        if self.pointwise:
            return x.reshape(batch, channels, self.positions)
        columns = cp.empty((batch, channels * self.taps, self.positions), dtype=x.dtype)
        self._launch("burn_im2col", x, columns, batch * channels * self.positions)
        return columns

    def gather(self, columns: Array, into: Array) -> None:
        """col2im: ``into [batch, channels, *spatial]`` from ``columns [batch, channels * taps,
        positions]``."""
        self._launch("burn_col2im", columns, into, into.size)


@functools.lru_cache(maxsize=256)
def _geometry(
    spatial: tuple[int, ...],
    out: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
) -> _Geometry:
    return _Geometry(spatial, out, kernel, stride, padding, dilation)


def _per_item(weight: Array, batch: int, groups: int) -> tuple[Array, int]:
    """``weight [groups, rows, cols]`` for ``batch * groups`` GEMMs: the array and its batch step (one
    group: the weight itself with step 0; several: repeated over the batch, since a batched GEMM has a
    single step)."""
    if groups == 1:
        return weight, 0
    repeated = cp.ascontiguousarray(cp.broadcast_to(weight, (batch, *weight.shape)))
    return repeated, weight.shape[1] * weight.shape[2]


_ones: dict[tuple[int, Any, int], Array] = {}


def _sum_over_items(items: Array) -> Array:
    """``items.sum(axis=0)`` as one GEMM with a row of ones (a reduction's launch costs the host about
    three times a GEMM's)."""
    count = items.shape[0]
    if count == 1:
        return items[0]
    key = (cp.cuda.runtime.getDevice(), items.dtype, count)
    ones = _ones.get(key)
    if ones is None:
        ones = _ones[key] = cp.ones(count, dtype=items.dtype)
    width = items.size // count
    total = cp.ndarray(items.shape[1:], dtype=items.dtype)
    gemm_strided_batched(ones, items, total, 1, width, count, 1, a_step=0, b_step=0)
    return total


def add_bias(y: Array, bias: Array) -> Array:
    """``y [batch, channels, *spatial]`` (contiguous, f32 or f64) plus ``bias [channels]`` on each
    channel, in place (one launch: a broadcast ufunc costs the host about twice as much)."""
    total = y.size
    if total == 0:
        return y
    channels = y.shape[1]
    positions = total // (y.shape[0] * channels)
    wide = total > _INT_MAX
    index = np.int64 if wide else np.int32
    kernel = _kernel("burn_add_bias", y.dtype, wide, True)
    blocks = min(_GRID_MAX, -(-total // _BLOCK))
    values = contiguous(bias.astype(y.dtype, copy=False))
    kernel((blocks,), (_BLOCK,), (y, values, index(total), np.int32(channels), index(positions)))
    return y


def channel_sums(grad: Array) -> Array:
    """``grad [batch, channels, *spatial]`` (f32 or f64) summed over every dim but the channels: a
    convolution's bias gradient, one block per channel (CuPy's reduction over several axes costs the
    host about three launches)."""
    batch, channels = grad.shape[:2]
    sums = cp.empty(channels, dtype=grad.dtype)
    if grad.size == 0:
        sums.fill(0)
        return sums
    positions = grad.size // (batch * channels)
    wide = grad.size > _INT_MAX
    index = np.int64 if wide else np.int32
    kernel = _kernel("burn_channel_sums", grad.dtype, wide, True)
    arguments = (contiguous(grad), sums, index(batch), np.int32(channels), index(positions))
    kernel((channels,), (_BLOCK,), arguments)  # _BLOCK threads: the kernel's shared array
    return sums


# -- the three operators -----------------------------------------------------------------------------------
def _chunks(batch: int, per_item: int) -> list[tuple[int, int]]:
    size = max(1, _COLUMNS_MAX // max(1, per_item))
    return [(start, min(batch, start + size)) for start in range(0, batch, size)]


def convolve(
    x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int,
    out: Sizes,
) -> Array:  # fmt: skip
    """The convolution of ``x [batch, channels, *spatial]`` with ``weight [out channels, channels /
    groups, *kernel]`` plus ``bias`` (if given), whose output has the spatial size ``out``: a new
    contiguous array."""
    batch, channels = x.shape[:2]
    out_channels = weight.shape[0]
    kernel = weight.shape[2:]
    geometry = _geometry(x.shape[2:], tuple(out), kernel, tuple(stride), tuple(padding), tuple(dilation))
    rows, depth, positions = out_channels // groups, channels // groups * geometry.taps, geometry.positions
    if depth == 0 or positions == 0 or batch * out_channels == 0:
        y = cp.zeros((batch, out_channels, *out), dtype=x.dtype)
        return y if bias is None else add_bias(y, bias)
    x = contiguous(x)
    w = contiguous(weight).reshape(groups, rows, depth)
    y = cp.empty((batch, out_channels, *out), dtype=x.dtype)
    flat = y.reshape(batch, out_channels, positions)
    for start, stop in _chunks(batch, channels * geometry.taps * positions):
        a, step = _per_item(w, stop - start, groups)
        gemm_strided_batched(
            a,
            geometry.columns(x[start:stop]),
            flat[start:stop],
            rows,
            positions,
            depth,
            (stop - start) * groups,
            a_step=step,
            b_step=depth * positions,
        )
    return y if bias is None else add_bias(y, bias)


def convolve_weight_grad(
    x: Array, grad: Array, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int
) -> Array:
    """``sum over batch and positions of grad * window of x``: ``[grad channels, x channels / groups,
    *kernel]``, the weight gradient of a convolution (and, roles swapped, of a transposed one)."""
    batch, channels = x.shape[:2]
    grad_channels = grad.shape[1]
    geometry = _geometry(
        x.shape[2:], grad.shape[2:], tuple(kernel), tuple(stride), tuple(padding), tuple(dilation)
    )
    rows, depth, positions = grad_channels // groups, channels // groups * geometry.taps, geometry.positions
    shape = (grad_channels, channels // groups, *kernel)
    if rows * depth == 0 or batch == 0 or positions == 0:
        return cp.zeros(shape, dtype=x.dtype)
    x = contiguous(x)
    g = contiguous(grad).reshape(batch, grad_channels, positions)
    total: Any = None
    for start, stop in _chunks(batch, channels * geometry.taps * positions):
        items = cp.empty((stop - start, groups, rows, depth), dtype=x.dtype)
        gemm_strided_batched(
            g[start:stop],
            geometry.columns(x[start:stop]),
            items,
            rows,
            depth,
            positions,
            (stop - start) * groups,
            b_t=True,
            a_step=rows * positions,
            b_step=depth * positions,
        )
        part = _sum_over_items(items)
        total = part if total is None else total + part
    return total.reshape(shape)


def convolve_adjoint(
    x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes,
    groups: int, out: Sizes,
) -> Array:  # fmt: skip
    """The adjoint of ``convolve``: for ``x`` the gradient of a convolution's output, the gradient with
    respect to its input, of spatial size ``out``, for ``weight [x channels, channels / groups,
    *kernel]``; also the transposed convolution of ``x`` (plus ``bias``, if given). A new contiguous
    ``[batch, channels, *out]`` array."""
    batch, grad_channels = x.shape[:2]
    per_group = weight.shape[1]
    channels = groups * per_group
    geometry = _geometry(
        tuple(out), x.shape[2:], weight.shape[2:], tuple(stride), tuple(padding), tuple(dilation)
    )
    rows, depth, positions = grad_channels // groups, per_group * geometry.taps, geometry.positions
    if rows == 0 or positions == 0 or batch * channels * math.prod(out) == 0:
        result = cp.zeros((batch, channels, *out), dtype=x.dtype)
        return result if bias is None else add_bias(result, bias)
    w = contiguous(weight).reshape(groups, rows, depth)
    g = contiguous(x).reshape(batch, grad_channels, positions)
    result = cp.empty((batch, channels, *out), dtype=x.dtype)
    for start, stop in _chunks(batch, channels * geometry.taps * positions):
        target = result[start:stop]
        parts = (
            target.reshape(stop - start, channels, positions)
            if geometry.pointwise
            else cp.empty((stop - start, channels * geometry.taps, positions), dtype=x.dtype)
        )
        a, step = _per_item(w, stop - start, groups)
        gemm_strided_batched(
            a,
            g[start:stop],
            parts,
            depth,
            positions,
            rows,
            (stop - start) * groups,
            a_t=True,
            a_step=step,
            b_step=rows * positions,
        )
        if not geometry.pointwise:
            geometry.gather(parts, target)
    return result if bias is None else add_bias(result, bias)
