"""Signal processing on tensors, as Burn's signal functions: the real FFT and its inverse, and windows.

A spectrum is a pair of Float tensors, its real and imaginary parts (Burn has no complex dtype):
``rfft`` returns them and ``irfft`` takes them. The transforms follow ``numpy.fft.rfft`` / ``irfft``
(and ``torch.fft``), unnormalized forward and ``1 / n`` backward; the windows follow
``torch.hann_window`` and its siblings.

Example:
    >>> from burn_backend import Tensor, signal
    >>> re, im = signal.rfft(Tensor.from_data([1.0, 2.0, 3.0, 4.0]))
    >>> re.to_data().tolist(), im.to_data().tolist()
    ([10.0, -2.0, -2.0], [0.0, 2.0, 0.0])
    >>> signal.irfft(re, im).to_data().tolist()
    [1.0, 2.0, 3.0, 4.0]
"""

from __future__ import annotations

import operator

import numpy as np

from ._data import TensorData
from ._dtype import DType, Kind
from ._shape import normalize_dim
from ._tensor import DeviceLike, DTypeLike, Tensor, resolve
from .module import _same, _tensor

__all__ = [
    # transforms
    "rfft",
    "irfft",
    # windows
    "hann_window",
    "hamming_window",
    "blackman_window",
]


# -- transforms --------------------------------------------------------------------------------------
def rfft(x: Tensor, dim: int = -1) -> tuple[Tensor, Tensor]:
    """The discrete Fourier transform of the real ``x`` along ``dim``: ``X[k] = sum_t x[t] * exp(-2 pi
    i k t / n)`` for the ``n // 2 + 1`` non-negative frequencies ``k`` (the others are their conjugates).

    Args:
        x: a Float tensor of rank >= 1 with ``n >= 1`` samples along ``dim``.
        dim: the dim to transform (negative counts from the end).

    Returns:
        The real and imaginary parts of ``X``: two tensors of ``x``'s shape and dtype with ``n // 2 + 1``
        along ``dim``.
    """
    op = "rfft"
    x = _tensor(op, "x", x, Kind.FLOAT)
    if x.rank < 1:
        raise ValueError(f"{op}: x must have rank >= 1, got a scalar")
    dim = normalize_dim(op, dim, x.rank)
    if x.dims()[dim] < 1:
        raise ValueError(f"{op}: x must have at least one sample along dim {dim}, got shape {x.dims()}")
    re, im = x._device.backend.rfft(x._primitive, dim)
    return x._new(re), x._new(im)


def irfft(re: Tensor, im: Tensor, dim: int = -1, n: int | None = None) -> Tensor:
    """The inverse of ``rfft``: the real signal of length ``n`` whose spectrum has the bins ``re + i * im``
    along ``dim``, ``x[t] = (1 / n) * sum_k X[k] * exp(2 pi i k t / n)`` over the Hermitian spectrum.

    As ``numpy.fft.irfft``: the bins are trimmed or zero-padded to ``n // 2 + 1``, and the imaginary
    parts of bin 0 and (for even ``n``) bin ``n / 2`` are ignored, as a real signal's are zero.

    Args:
        re: the real parts, a Float tensor of rank >= 1 with ``bins >= 1`` along ``dim``.
        im: the imaginary parts, of ``re``'s shape, dtype and device.
        dim: the dim of the bins (negative counts from the end).
        n: the length of the result; default ``2 * (bins - 1)`` (the even length ``rfft`` maps to
            ``bins`` bins; an odd length must be given).

    Returns:
        A tensor of ``re``'s shape and dtype with ``n`` along ``dim``.
    """
    op = "irfft"
    re = _tensor(op, "re", re, Kind.FLOAT)
    im = _tensor(op, "im", im, Kind.FLOAT)
    _same(op, re, "im", im, "re")
    if im.dims() != re.dims():
        raise ValueError(f"{op}: re and im must have the same shape, got {re.dims()} and {im.dims()}")
    if re.rank < 1:
        raise ValueError(f"{op}: re and im must have rank >= 1, got scalars")
    dim = normalize_dim(op, dim, re.rank)
    bins = re.dims()[dim]
    if bins < 1:
        raise ValueError(f"{op}: the spectrum must have at least one bin along dim {dim}, got {re.dims()}")
    if n is None:
        n = 2 * (bins - 1)
        if n < 1:
            raise ValueError(
                f"{op}: a spectrum of 1 bin (shape {re.dims()}, dim {dim}) needs an explicit n >= 1"
            )
    elif isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}: n must be an int or None, got {n!r}")
    elif n < 1:
        raise ValueError(f"{op}: n must be >= 1, got {n}")
    return re._new(re._device.backend.irfft(re._primitive, im._primitive, dim, n))


# -- windows -----------------------------------------------------------------------------------------
def _cosine_window(
    op: str,
    size: int,
    periodic: bool,
    coefficients: tuple[float, ...],
    device: DeviceLike,
    dtype: DTypeLike,
) -> Tensor:
    """``sum_i (-1)^i * a_i * cos(2 pi i t / (m - 1))`` for ``t < size``, computed in float64, with
    ``m = size + 1`` for a periodic window (the symmetric one of ``size + 1`` samples less its last)."""
    if isinstance(size, bool):
        raise TypeError(f"{op}: size must be an int, got {size!r}")
    size = operator.index(size)
    if size < 0:
        raise ValueError(f"{op}: size must be >= 0, got {size}")
    device, dtype = resolve(device, dtype, Kind.FLOAT)
    if not dtype.is_float:
        raise TypeError(f"{op}: makes Float tensors, got dtype {dtype}")
    if size <= 1:
        values = np.ones(size)
    else:
        length = size + 1 if periodic else size
        phase = 2.0 * np.pi * np.arange(size) / (length - 1)
        values = np.zeros(size)
        for i, a in enumerate(coefficients):
            values += (-1.0) ** i * a * np.cos(i * phase)
    return Tensor.from_data(TensorData(values, DType.F64), device, dtype)


def hann_window(
    size: int, periodic: bool = True, device: DeviceLike = None, dtype: DTypeLike = None
) -> Tensor:
    """The Hann window of ``size`` samples, ``0.5 - 0.5 * cos(2 pi t / (m - 1))``, as
    ``torch.hann_window``: ``periodic`` (the default, for spectral analysis) uses ``m = size + 1``,
    else ``m = size`` (symmetric, for filter design). A window of 1 sample is ``[1]``.

    Example:
        >>> hann_window(4).to_data().tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    return _cosine_window("hann_window", size, periodic, (0.5, 0.5), device, dtype)


def hamming_window(
    size: int,
    periodic: bool = True,
    device: DeviceLike = None,
    dtype: DTypeLike = None,
    *,
    alpha: float = 0.54,
    beta: float = 0.46,
) -> Tensor:
    """The Hamming window of ``size`` samples, ``alpha - beta * cos(2 pi t / (m - 1))``, as
    ``torch.hamming_window`` (see ``hann_window`` for ``periodic``)."""
    return _cosine_window("hamming_window", size, periodic, (float(alpha), float(beta)), device, dtype)


def blackman_window(
    size: int, periodic: bool = True, device: DeviceLike = None, dtype: DTypeLike = None
) -> Tensor:
    """The Blackman window of ``size`` samples, ``0.42 - 0.5 * cos(2 pi t / (m - 1)) + 0.08 * cos(4 pi t
    / (m - 1))``, as ``torch.blackman_window`` (see ``hann_window`` for ``periodic``)."""
    return _cosine_window("blackman_window", size, periodic, (0.42, 0.5, 0.08), device, dtype)
