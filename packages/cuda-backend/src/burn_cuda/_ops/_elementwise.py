"""Vectorized f32 kernels for the commonest element-wise ops: ``+ - * /`` of two contiguous f32 arrays
of one shape, or of one and a Python scalar.

Each thread moves one ``float4`` (16 bytes) per operand, the way PyTorch's element-wise kernels do,
and a launch skips CuPy's ufunc dispatch (type resolution, broadcasting), which is most of a tiny op's
host cost. Every other case (another dtype, broadcasting, a strided or unaligned view) returns
``None`` and the caller takes CuPy's ufunc. Results are the same IEEE f32 operations CuPy performs.

The kernels' arithmetic is the expression of the op's entry in backend-core's element-wise op table
(``float_add``, ``float_add_scalar``, ...), rendered as CUDA C for each lane of the ``float4``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend.kit import ELEMENTWISE_OPS

from .._cupy import cp

Array = Any
_F32 = np.dtype(np.float32)
_F32_MAX = float(np.finfo(np.float32).max)
_BLOCK = 256
# the ops whose table expression is one IEEE f32 operation, computed as CuPy's ufunc computes it
_VECTORIZED = frozenset({"add", "sub", "mul", "div"})

_BINARY = r"""
extern "C" __global__ void burn_{name}_ff(const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ out, const long long n) {{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long quads = n >> 2;
    if (i < quads) {{
        const float4 x = reinterpret_cast<const float4*>(a)[i];
        const float4 y = reinterpret_cast<const float4*>(b)[i];
        float4 r;
        r.x = {x};
        r.y = {y};
        r.z = {z};
        r.w = {w};
        reinterpret_cast<float4*>(out)[i] = r;
    }}
    if (i < (n & 3)) {{
        const long long j = (quads << 2) + i;
        out[j] = {tail};
    }}
}}
"""

_SCALAR = r"""
extern "C" __global__ void burn_{name}_fs(const float* __restrict__ a, const float s,
                                          float* __restrict__ out, const long long n) {{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long quads = n >> 2;
    if (i < quads) {{
        const float4 x = reinterpret_cast<const float4*>(a)[i];
        float4 r;
        r.x = {x};
        r.y = {y};
        r.z = {z};
        r.w = {w};
        reinterpret_cast<float4*>(out)[i] = r;
    }}
    if (i < (n & 3)) {{
        const long long j = (quads << 2) + i;
        out[j] = {tail};
    }}
}}
"""

_kernels: dict[tuple[str, bool], Any] = {}


def _f32(value: float) -> str:
    return f"{float(value)!r}f"


def _source(name: str, scalar: bool) -> str:
    """The CUDA C of the kernel for ``float_<name>`` (``float_<name>_scalar`` with ``scalar``)."""
    if name not in _VECTORIZED:
        raise KeyError(name)
    op = ELEMENTWISE_OPS[f"float_{name}_scalar" if scalar else f"float_{name}"]
    lanes = {lane: op.render([f"x.{lane}", "s" if scalar else f"y.{lane}"], literal=_f32) for lane in "xyzw"}
    tail = op.render(["a[j]", "s" if scalar else "b[j]"], literal=_f32)
    return (_SCALAR if scalar else _BINARY).format(name=name, tail=tail, **lanes)


def _kernel(name: str, scalar: bool) -> Any:
    kernel = _kernels.get((name, scalar))
    if kernel is None:
        source = _source(name, scalar)
        kernel = _kernels[name, scalar] = cp.RawKernel(source, f"burn_{name}_{'fs' if scalar else 'ff'}")
    return kernel


def _grid(n: int) -> tuple[int]:
    return (max(1, ((n >> 2) + _BLOCK - 1) // _BLOCK),)


def binary(name: str, lhs: Array, rhs: Array) -> Array | None:
    """``lhs <op> rhs`` for two C-contiguous, 16-byte aligned f32 arrays of one shape; else ``None``."""
    if lhs.dtype is not _F32 or rhs.dtype is not _F32 or lhs.shape != rhs.shape:
        return None
    if (lhs.data.ptr | rhs.data.ptr) & 15 or not (lhs._c_contiguous and rhs._c_contiguous):
        return None
    out = cp.ndarray(lhs.shape, dtype=_F32)
    n = lhs.size
    if n:
        _kernel(name, False)(_grid(n), (_BLOCK,), (lhs, rhs, out, np.int64(n)))
    return out


def scalar(name: str, lhs: Array, rhs: Any) -> Array | None:
    """``lhs <op> rhs`` for a C-contiguous, 16-byte aligned f32 array and a Python number (taken as
    f32, as CuPy takes it); else ``None``."""
    if lhs.dtype is not _F32 or type(rhs) not in (float, int) or not -_F32_MAX <= rhs <= _F32_MAX:
        return None  # (NaN, inf and values beyond f32's range take CuPy's path too)
    if lhs.data.ptr & 15 or not lhs._c_contiguous:
        return None
    value = np.float32(rhs)
    out = cp.ndarray(lhs.shape, dtype=_F32)
    n = lhs.size
    if n:
        _kernel(name, True)(_grid(n), (_BLOCK,), (lhs, value, out, np.int64(n)))
    return out
