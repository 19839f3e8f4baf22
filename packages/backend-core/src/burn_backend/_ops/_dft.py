"""The defaults of ``ModuleOps.rfft`` and ``ModuleOps.irfft``: dense DFT matrices and one matrix product.

A spectrum is two float tensors, its real and imaginary parts (as in Burn, which has no complex dtype).
The matrices cost ``O(n^2)`` memory and time, which is what a default may spend; backends with an FFT
override both ops. Angles are reduced on the device in integers (``k * t mod n``) before they become
floats, so they stay exact for long signals (``k * t`` must fit the backend's int dtype: with i32,
``n`` up to 65535); f16 and bf16 build the matrices in f32.
"""

from __future__ import annotations

import math
from typing import Any

from .._data import TensorData
from .._dtype import DType

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype

_LOW_PRECISION = (DType.F16, DType.BF16)


def _angles(b: Any, rows: int, columns: int, n: int, like: P) -> P:
    """``[rows, columns]``: ``2 * pi * (r * c mod n) / n``, in ``like``'s dtype (f32 for f16 / bf16)."""
    device = b.float_device(like)
    r = b.int_reshape(b.int_arange(0, rows, device, b.int_dtype), (rows, 1))
    c = b.int_reshape(b.int_arange(0, columns, device, b.int_dtype), (1, columns))
    phase = b.int_remainder_scalar(b.int_mul(r, c), n)
    dtype = DType.of(like.dtype)
    work = DType.F32 if dtype in _LOW_PRECISION else dtype
    return b.float_mul_scalar(b.int_into_float(phase, work), 2.0 * math.pi / n)


def _in_dtype(b: Any, matrix: P, like: P) -> P:
    dtype = DType.of(like.dtype)
    return b.float_cast(matrix, dtype) if dtype in _LOW_PRECISION else matrix


def _last(b: Any, tensor: P, dim: int) -> P:
    """``tensor`` with ``dim`` swapped with the last dim (its own inverse)."""
    last = len(tensor.shape) - 1
    return tensor if dim == last else b.float_swap_dims(tensor, dim, last)


def _rows(b: Any, tensor: P) -> P:
    """``tensor [..., m]`` as a matrix ``[prod(...), m]``."""
    return b.float_reshape(tensor, (math.prod(tensor.shape[:-1]), tensor.shape[-1]))


def rfft(b: Any, signal: P, dim: int) -> tuple[P, P]:
    """The real and imaginary parts of the DFT of a real ``signal`` along ``dim``, bins ``0..n // 2``:
    ``X[k] = sum_t x[t] * exp(-2 pi i k t / n)``."""
    moved = _last(b, signal, dim)
    lead = tuple(moved.shape[:-1])
    n = moved.shape[-1]
    bins = n // 2 + 1
    angles = _angles(b, n, bins, n, signal)
    cos = _in_dtype(b, b.float_cos(angles), signal)
    minus_sin = _in_dtype(b, b.float_neg(b.float_sin(angles)), signal)
    rows = _rows(b, moved)
    parts = []
    for matrix in (cos, minus_sin):
        part = b.float_reshape(b.float_matmul(rows, matrix), (*lead, bins))
        parts.append(_last(b, part, dim))
    return parts[0], parts[1]


def irfft_weights(bins: int, n: int) -> tuple[list[float], list[float]]:
    """The factors of each bin's cosine and sine rows in the inverse of a real DFT of length ``n``.

    The spectrum of a real signal is Hermitian, so bins ``1 .. (n - 1) // 2`` stand for themselves and
    their mirror images (factor 2); bin 0 and, for even ``n``, bin ``n / 2`` stand alone and their
    imaginary parts are ignored; bins past ``n // 2`` are dropped (as NumPy and PyTorch trim the input
    to ``n // 2 + 1`` bins, and zero-pad a shorter one).
    """
    cos, sin = [], []
    for k in range(bins):
        if k == 0 or 2 * k == n:
            cos.append(1.0 / n)
            sin.append(0.0)
        elif 2 * k < n:
            cos.append(2.0 / n)
            sin.append(-2.0 / n)
        else:
            cos.append(0.0)
            sin.append(0.0)
    return cos, sin


def irfft(b: Any, spectrum_re: P, spectrum_im: P, dim: int, n: int) -> P:
    """The real signal of length ``n`` whose DFT has bins ``0..`` ``spectrum_re + i * spectrum_im``
    along ``dim``: ``x[t] = sum_k w_k * (re[k] * cos(2 pi k t / n) - im[k] * sin(2 pi k t / n))``."""
    re = _last(b, spectrum_re, dim)
    im = _last(b, spectrum_im, dim)
    lead = tuple(re.shape[:-1])
    bins = re.shape[-1]
    if bins > n // 2 + 1:  # the bins past n // 2 do not count: drop them before the product
        bins = n // 2 + 1
        kept = [slice(0, size, 1) for size in lead] + [slice(0, bins, 1)]
        re, im = b.float_slice(re, kept), b.float_slice(im, kept)
    angles = _angles(b, bins, n, n, spectrum_re)
    cos_weights, sin_weights = irfft_weights(bins, n)
    device = b.float_device(angles)
    dtype = DType.of(angles.dtype)
    factors = []
    for weights in (cos_weights, sin_weights):
        factors.append(b.float_from_data(TensorData(weights, dtype, shape=(bins, 1)), device))
    cos = _in_dtype(b, b.float_mul(b.float_cos(angles), factors[0]), spectrum_re)
    sin = _in_dtype(b, b.float_mul(b.float_sin(angles), factors[1]), spectrum_re)
    signal = b.float_add(b.float_matmul(_rows(b, re), cos), b.float_matmul(_rows(b, im), sin))
    return _last(b, b.float_reshape(signal, (*lead, n)), dim)
