"""numba kernels for what NumPy lacks or does in many passes: erf and its inverse, exact GELU and its
backward, the Adam update, and the scalar helpers that the fusion compiler's generated kernels call.

This module imports numba: import it through ``burn_ndarray._numba.kernels()``, which returns ``None``
where numba is missing or broken, so that NdArray falls back to NumPy. Kernels are compiled on first use
and cached on disk by numba (``cache=True``); arrays of at least ``PARALLEL_MIN`` elements are split
over the threads the thread policy grants (``_threads``).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from numba import njit, prange

from . import _threads

PARALLEL_MIN = int(os.environ.get("BURN_NDARRAY_PARALLEL_MIN", 1 << 24))
"""Arrays with fewer elements run on one thread (``BURN_NDARRAY_PARALLEL_MIN`` overrides it). Alone, two
threads halve an f32 erf from 64K elements on (14 against 24 us on 2 cores). Inside a model they lose:
OpenBLAS's idle threads spin for a while after each product (and numba's did after each parallel loop
before the thread policy made them sleep), so a kernel split over the cores right after a GEMM shares
them with spinning threads, and the next GEMM with the kernel's. Measured on 2 cores at 2 threads a side,
with 1M elements as the threshold against none below 16M: the char-level GPT's step 250 against 134 ms
(its GELU and GELU gradient 9 ms a call against 1.6, its matrix products 56 against 42 ms: PyTorch's step
took 142 ms), the ResNet's 390 against 341 ms; at 64K the guide's step took 22 to 40 ms instead of 15."""
CHUNK = 16384
"""Elements per parallel work item: long enough to vectorize, short enough to balance. A parallel kernel
runs its serial twin on slices of this length: a loop over ``range(start, stop)`` indexes with values
LLVM cannot prove non-negative, so numba's negative-index wraparound stays in the loop and blocks
vectorization (4x slower per element), where a slice's loop starts at 0."""

_F32 = np.float32
# erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (the rational approximation of Eigen and XLA for f32: within
# 4e-7 of erf, 1 beyond): a polynomial without branches, which LLVM vectorizes
_ALPHA = (
    _F32(-2.72614225801306e-10), _F32(2.77068142495902e-08), _F32(-2.10102402082508e-06),
    _F32(-5.69250639462346e-05), _F32(-7.34990630326855e-04), _F32(-2.95459980854025e-03),
    _F32(-1.60960333262415e-02),
)  # fmt: skip
_BETA = (
    _F32(-1.45660718464996e-05), _F32(-2.13374055278905e-04), _F32(-1.68282697438203e-03),
    _F32(-7.37332916720468e-03), _F32(-1.42647390514189e-02),
)  # fmt: skip
_A0, _A1, _A2, _A3, _A4, _A5, _A6 = _ALPHA
_B0, _B1, _B2, _B3, _B4 = _BETA
_FOUR = _F32(4.0)
_HALF = _F32(0.5)
_ONE = _F32(1.0)
_SQRT1_2_F32 = _F32(1.0 / math.sqrt(2.0))
_INV_SQRT_2PI_F32 = _F32(1.0 / math.sqrt(2.0 * math.pi))
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


# contract: the polynomials' multiply-adds become fused multiply-adds (one rounding each), which make a
# fused GELU over 4M f32 1.45x as fast (0.83 against 1.21 ms on 2 cores) and erf no less accurate
@njit(cache=True, error_model="numpy", fastmath={"contract"})
def erf32(x: Any) -> Any:
    """erf of an f32 scalar (NaN stays NaN)."""
    c = min(max(x, -_FOUR), _FOUR)
    x2 = c * c
    p = ((((((_A0 * x2 + _A1) * x2 + _A2) * x2 + _A3) * x2 + _A4) * x2 + _A5) * x2 + _A6) * c
    q = (((_B0 * x2 + _B1) * x2 + _B2) * x2 + _B3) * x2 + _B4
    return p / q if x == x else x


@njit(cache=True, error_model="numpy")
def erfc32(x: Any) -> Any:
    """erfc of an f32 scalar, through f64 where 1 - erf would lose its digits."""
    if x < _HALF:
        return _ONE - erf32(x)
    return _F32(math.erfc(np.float64(x)))


_WINITZKI_T = 2.0 / (math.pi * 0.147)
_SQRT_PI_2 = math.sqrt(math.pi) / 2.0


@njit(cache=True, error_model="numpy")
def erfinv32(y: Any) -> Any:
    """The inverse error function of an f32 scalar, computed in f64: Winitzki's approximation and three
    Newton steps (on ``erfc(x) = 1 - |y|`` beyond 1/2); ``inf`` at 1, NaN beyond."""
    v = np.float64(y)
    a = abs(v)
    if not a < 1.0:
        return np.float32(math.copysign(math.inf, v)) if a == 1.0 else np.float32(math.nan)
    if a == 0.0:
        return y
    ln = math.log((1.0 - a) * (1.0 + a))
    t = _WINITZKI_T + ln / 2.0
    x = math.sqrt(math.sqrt(t * t - ln / 0.147) - t)
    for _ in range(3):
        residual = math.erf(x) - a if a <= 0.5 else (1.0 - a) - math.erfc(x)
        x -= residual * _SQRT_PI_2 * math.exp(x * x)
    return np.float32(math.copysign(x, v))


@njit(cache=True, error_model="numpy")
def erf64(x: Any) -> Any:
    """erf of an f64 scalar."""
    return math.erf(x)


@njit(cache=True, error_model="numpy")
def erfc64(x: Any) -> Any:
    """erfc of an f64 scalar."""
    return math.erfc(x)


@njit(cache=True, error_model="numpy")
def float_mod(a: Any, b: Any) -> Any:
    """NumPy's remainder of two float scalars: numba's ``np.mod`` gives +0 where NumPy gives a zero of
    the divisor's sign (``copysign`` keeps the operands' type, so a chain stays in f32)."""
    r = np.mod(a, b)
    return np.copysign(r, b) if r == 0 else r


@njit(cache=True, error_model="numpy")
def int_floordiv(a: Any, b: Any) -> Any:
    """NumPy's floored division of two int scalars: the minimum over -1 wraps to itself (a processor's
    division traps on it; numba's ``np.floor_divide`` gives 0)."""
    if b == -1:
        return a * b
    return np.floor_divide(a, b)


@njit(cache=True, error_model="numpy")
def int_mod(a: Any, b: Any) -> Any:
    """NumPy's remainder of two int scalars: 0 for a divisor of -1 (the minimum's would trap)."""
    if b == -1:
        return a - a
    return np.mod(a, b)


@njit(cache=True, error_model="numpy")
def int_sign(a: Any) -> Any:
    """-1, 0 or 1 (numba's ``np.sign`` reads a large unsigned value as negative)."""
    return 1 if a > 0 else (-1 if a < 0 else 0)


@njit(cache=True, error_model="numpy")
def int_pow(a: Any, b: Any) -> Any:
    """NumPy's int power: a product of squares that wraps as the dtype's products do (numba's
    ``np.power`` gave 0 where it overflows); a negative exponent as numba's ``np.power`` takes it."""
    if b < 0:
        return np.power(a, b)
    result = np.power(a, a - a)  # 1, of the operands' type (a literal 1 would make u64 values floats)
    base = a
    exponent = b
    while exponent > 0:
        if exponent & 1:
            result = result * base
        base = base * base
        exponent = exponent >> 1
    return result


@njit(cache=True, error_model="numpy")
def left_shift(a: Any, b: Any) -> Any:
    """NumPy's left shift: 0 for a count below 0 or of 64 and more (a processor takes it modulo 64)."""
    if b < 0 or b >= 64:
        return a - a
    return a << b


@njit(cache=True, error_model="numpy")
def right_shift(a: Any, b: Any) -> Any:
    """NumPy's right shift: the sign's fill (0 or -1) for a count below 0 or of 64 and more."""
    if b < 0 or b >= 64:
        return (a >> 62) >> 62  # two shifts, so that an unsigned value's top bit goes too
    return a >> b


@njit(cache=True, error_model="numpy")
def where(condition: Any, a: Any, b: Any) -> Any:
    """``a`` if ``condition`` else ``b``."""
    return a if condition else b


# -- whole-array kernels ----------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _erf_f32_serial(x: Any, out: Any) -> None:
    for i in range(x.shape[0]):
        out[i] = erf32(x[i])


@njit(cache=True, parallel=True, error_model="numpy")
def _erf_f32_parallel(x: Any, out: Any) -> None:
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _erf_f32_serial(x[start:stop], out[start:stop])


@njit(cache=True, error_model="numpy")
def _erfinv_f32_serial(x: Any, out: Any) -> None:
    for i in range(x.shape[0]):
        out[i] = erfinv32(x[i])


@njit(cache=True, parallel=True, error_model="numpy")
def _erfinv_f32_parallel(x: Any, out: Any) -> None:
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _erfinv_f32_serial(x[start:stop], out[start:stop])


@njit(cache=True, parallel=True, error_model="numpy")
def _erf_f64(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        out[i] = math.erf(x[i])


# erfc(z) = exp(-z^2) F(|z|) for z >= 0 (2 minus it below): F a polynomial in t = 1 / (1 + |z|/2), fitted
# here (weighted least squares on Chebyshev nodes) to erfc(z) exp(z^2) on [0, 10.1] within 4e-8 relative
# (4e-7 evaluated in f32); beyond 10.1, exp(-z^2) is below f32's smallest subnormal. The f32 GELU kernels
# take exp(-z^2) from NumPy's SIMD exp (numba's exp is a scalar libm call without SVML, which kept the
# loop from vectorizing: the GELU and its gradient took 8-10x PyTorch's time) and select without
# branches, so that LLVM vectorizes them
_ERFC_TAIL = (
    -4.626003611612345e-06, 0.28218970605474614, 0.2814039462274018, 0.24816092945428386,
    0.18658337483157367, 0.006003466480837827, 0.2358499634712251, -0.4534463077695774,
    0.2693910126645975, -0.05613150110386988,
)  # fmt: skip
_T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7, _T8, _T9 = (_F32(c) for c in _ERFC_TAIL)
_TAIL_STOP = _F32(10.1)
_TWO = _F32(2.0)
_EXPONENT_FLOOR = -150.0  # exp of it is 0 in f32, and it keeps -inf out of the residual below


@njit(cache=True, error_model="numpy", inline="always")
def _half_square(v: Any) -> Any:
    """-v^2 / 2 in f64 (floored): exp's argument for the GELU at ``v`` (= -z^2 for z = -v / sqrt 2)."""
    return max(-0.5 * v * v, _EXPONENT_FLOOR)


@njit(cache=True, error_model="numpy", inline="always")
def _rounding(exponent: Any) -> Any:
    """What rounding ``exponent`` (f64) to f32 lost, as an f32: exp(exponent) = exp(f32) * (1 + it)."""
    return np.float32(exponent - np.float64(np.float32(exponent)))


@njit(cache=True, error_model="numpy", fastmath={"contract"}, inline="always")
def _erfc_gelu(x: Any, e: Any) -> Any:
    """erfc(-x / sqrt 2) of an f32 ``x``, given ``e`` = exp of ``_half_square(x)`` rounded to f32, within
    5e-7 relative (the exponent's rounding to f32, 1e-5 of the result at x = -13, is put back)."""
    z = -x * _SQRT1_2_F32
    t = _ONE / (_ONE + _HALF * min(abs(z), _TAIL_STOP))
    f = ((((((((_T9 * t + _T8) * t + _T7) * t + _T6) * t + _T5) * t + _T4) * t + _T3) * t + _T2) * t
         + _T1) * t + _T0  # fmt: skip
    tail = e * (_ONE + _rounding(_half_square(np.float64(x)))) * f
    return tail if z >= 0 else _TWO - tail


@njit(cache=True, error_model="numpy")
def _gelu_exponent_f32(x: Any, out: Any) -> None:
    for i in range(x.shape[0]):
        out[i] = np.float32(_half_square(np.float64(x[i])))


@njit(cache=True, parallel=True, error_model="numpy")
def _gelu_exponent_f32_parallel(x: Any, out: Any) -> None:
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _gelu_exponent_f32(x[start:stop], out[start:stop])


@njit(cache=True, error_model="numpy")
def _gelu_f32_serial(x: Any, e: Any, out: Any) -> None:
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v * _HALF * _erfc_gelu(v, e[i])


@njit(cache=True, parallel=True, error_model="numpy")
def _gelu_f32_parallel(x: Any, e: Any, out: Any) -> None:
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _gelu_f32_serial(x[start:stop], e[start:stop], out[start:stop])


@njit(cache=True, parallel=True, error_model="numpy")
def _gelu_f64(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        v = x[i]
        out[i] = v * 0.5 * math.erfc(-v * _SQRT1_2)


@njit(cache=True, error_model="numpy")
def _gelu_backward_f32_serial(x: Any, grad: Any, e: Any, out: Any) -> None:
    for i in range(x.shape[0]):
        v = x[i]
        density = e[i] * (_ONE + _rounding(_half_square(np.float64(v))))
        cdf = _HALF * _erfc_gelu(v, e[i])
        out[i] = grad[i] * (cdf + v * density * _INV_SQRT_2PI_F32)


@njit(cache=True, parallel=True, error_model="numpy")
def _gelu_backward_f32_parallel(x: Any, grad: Any, e: Any, out: Any) -> None:
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _gelu_backward_f32_serial(x[start:stop], grad[start:stop], e[start:stop], out[start:stop])


@njit(cache=True, parallel=True, error_model="numpy")
def _gelu_backward_f64(x: Any, grad: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        v = x[i]
        out[i] = grad[i] * (0.5 * math.erfc(-v * _SQRT1_2) + v * math.exp(-0.5 * v * v) * _INV_SQRT_2PI)


def parallel(size: int) -> bool:
    """Whether an array of ``size`` elements takes a kernel's parallel twin: at least ``PARALLEL_MIN``
    elements, and more than one thread granted to the calling thread (numba set to that many)."""
    return size >= PARALLEL_MIN and _threads.numba_threads() > 1


def _flat(x: Any) -> Any:
    return np.ascontiguousarray(x).reshape(-1)


def erf(x: Any) -> Any:
    """erf of an f32 or f64 array, as a new array of its dtype and shape."""
    flat = _flat(x)
    out = np.empty_like(flat)
    if x.dtype == np.float64:
        _erf_f64(flat, out)
    elif parallel(flat.size):
        _erf_f32_parallel(flat, out)
    else:
        _erf_f32_serial(flat, out)
    return out.reshape(x.shape)


def erfinv(x: Any) -> Any:
    """The inverse error function of an f32 array, as a new array of its shape."""
    flat = _flat(x)
    out = np.empty_like(flat)
    (_erfinv_f32_parallel if parallel(flat.size) else _erfinv_f32_serial)(flat, out)
    return out.reshape(x.shape)


def _gelu_density(flat: Any, split: bool) -> Any:
    """exp(-x^2 / 2) of a flat f32 array in f32, through NumPy's SIMD exp."""
    e = np.empty_like(flat)
    (_gelu_exponent_f32_parallel if split else _gelu_exponent_f32)(flat, e)
    return np.exp(e, out=e)


def gelu(x: Any) -> Any:
    """The exact GELU of an f32 or f64 array."""
    flat = _flat(x)
    out = np.empty_like(flat)
    if x.dtype == np.float64:
        _gelu_f64(flat, out)
    else:
        split = parallel(flat.size)
        e = _gelu_density(flat, split)
        (_gelu_f32_parallel if split else _gelu_f32_serial)(flat, e, out)
    return out.reshape(x.shape)


def gelu_backward(x: Any, grad: Any) -> Any:
    """The gradient of the exact GELU at ``x`` (f32 or f64, ``grad`` of its shape and dtype)."""
    flat, flat_grad = _flat(x), _flat(grad)
    out = np.empty_like(flat)
    if x.dtype == np.float64:
        _gelu_backward_f64(flat, flat_grad, out)
    else:
        split = parallel(flat.size)
        e = _gelu_density(flat, split)
        (_gelu_backward_f32_parallel if split else _gelu_backward_f32_serial)(flat, flat_grad, e, out)
    return out.reshape(x.shape)


# -- ReLU and its gradient --------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _relu_serial(x: Any, zero: Any, out: Any) -> None:
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = zero if v <= zero else v  # NaN stays NaN, -0 becomes +0: np.maximum(x, 0)'s values


@njit(cache=True, parallel=True, error_model="numpy")
def _relu_parallel(x: Any, zero: Any, out: Any) -> None:
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _relu_serial(x[start:stop], zero, out[start:stop])


def relu(x: Any) -> Any:
    """``np.maximum(x, 0)`` of a float array at the speed of a copy (NumPy's maximum, which checks for
    NaN, takes 3x as long)."""
    flat = _flat(x)
    out = np.empty_like(flat)
    (_relu_parallel if parallel(out.size) else _relu_serial)(flat, x.dtype.type(0), out)
    return out.reshape(x.shape)


@njit(cache=True, error_model="numpy")
def _relu_backward_serial(output: Any, grad: Any, zero: Any, out: Any) -> None:
    for i in range(output.shape[0]):
        out[i] = grad[i] if output[i] > zero else zero


@njit(cache=True, parallel=True, error_model="numpy")
def _relu_backward_parallel(output: Any, grad: Any, zero: Any, out: Any) -> None:
    n = output.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _relu_backward_serial(output[start:stop], grad[start:stop], zero, out[start:stop])


def relu_backward(output: Any, grad: Any) -> Any:
    """``grad`` where ``output > 0``, else 0 (a NaN output gives 0, an infinite gradient stays), in one
    vectorized pass: ``output`` and ``grad`` of one float dtype and shape."""
    flat_output, flat_grad = _flat(output), _flat(grad)
    out = np.empty_like(flat_grad)
    kernel = _relu_backward_parallel if parallel(out.size) else _relu_backward_serial
    kernel(flat_output, flat_grad, grad.dtype.type(0), out)
    return out.reshape(grad.shape)


# -- scatter-add of rows ----------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _add_rows(out: Any, indices: Any, rows: Any) -> None:
    for i in range(indices.shape[0]):
        target = out[indices[i]]
        source = rows[i]
        for j in range(source.shape[0]):
            target[j] += source[j]


def add_rows(out: Any, indices: Any, rows: Any) -> None:
    """``out[indices[i]] += rows[i]`` in place, in the order of ``indices`` (NumPy's ``np.add.at``'s
    order, so its sums bit for bit, without its per-element dispatch): ``out [n, d]`` and ``rows [k, d]``
    C-contiguous of one float dtype, ``indices [k]`` int64, each in ``[0, n)`` (unchecked here)."""
    _add_rows(out, indices, rows)


# -- optimizer updates ------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _adam_serial(
    p: Any, g: Any, m: Any, v: Any, out_p: Any, out_m: Any, out_v: Any, first: bool, l2: bool, decay: Any,
    beta_1: Any, rest_1: Any, beta_2: Any, rest_2: Any, root_2: Any, epsilon: Any, step: Any, keep: Any,
) -> None:  # fmt: skip
    # the default's operations in its order, each rounded to the dtype (burn_backend's OptimizerOps)
    for i in range(p.shape[0]):
        x = p[i]
        grad = x * decay + g[i] if l2 else g[i]
        if first:
            moment_1 = grad * rest_1
            moment_2 = grad * grad * rest_2
        else:
            moment_1 = m[i] * beta_1 + grad * rest_1
            moment_2 = v[i] * beta_2 + grad * grad * rest_2
        change = moment_1 / (np.sqrt(moment_2) / root_2 + epsilon) * step
        out_p[i] = x * keep - change
        out_m[i] = moment_1
        out_v[i] = moment_2


@njit(cache=True, parallel=True, error_model="numpy")
def _adam_parallel(
    p: Any, g: Any, m: Any, v: Any, out_p: Any, out_m: Any, out_v: Any, first: bool, l2: bool, decay: Any,
    beta_1: Any, rest_1: Any, beta_2: Any, rest_2: Any, root_2: Any, epsilon: Any, step: Any, keep: Any,
) -> None:  # fmt: skip
    n = p.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        start, stop = c * CHUNK, min(n, (c + 1) * CHUNK)
        _adam_serial(
            p[start:stop], g[start:stop], m if first else m[start:stop], v if first else v[start:stop],
            out_p[start:stop], out_m[start:stop], out_v[start:stop], first, l2, decay, beta_1, rest_1,
            beta_2, rest_2, root_2, epsilon, step, keep,
        )  # fmt: skip


def adam_step(
    tensor: Any, grad: Any, moment_1: Any, moment_2: Any, scalars: tuple[float, ...], decay: float
) -> tuple[Any, Any, Any]:
    """One Adam update of an f32 or f64 array (see ``burn_backend.OptimizerOps.float_adam_step``):
    ``scalars`` as ``AdamOptions.scalars()`` gives them, ``decay`` the L2 penalty (0 for none, or with
    AdamW's decay, which ``scalars`` holds). ``moment_1`` and ``moment_2`` are ``None`` at the first step."""
    dtype = tensor.dtype.type
    p, g = _flat(tensor), _flat(grad)
    first = moment_1 is None
    m = p[:0] if first else _flat(moment_1)
    v = p[:0] if first else _flat(moment_2)
    out_p, out_m, out_v = np.empty_like(p), np.empty_like(p), np.empty_like(p)
    kernel = _adam_parallel if parallel(p.size) else _adam_serial
    constants = [dtype(value) for value in scalars]
    kernel(p, g, m, v, out_p, out_m, out_v, first, decay != 0.0, dtype(decay), *constants)
    shape = tensor.shape
    return out_p.reshape(shape), out_m.reshape(shape), out_v.reshape(shape)
