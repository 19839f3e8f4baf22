"""Signal processing on tensors, as Burn's signal functions: the real and complex FFTs and their
inverses, the short-time Fourier transform and its inverse, and windows.

A complex signal or spectrum is a pair of Float tensors, its real and imaginary parts (Burn has no
complex dtype): ``rfft`` returns one and ``irfft`` takes one, ``cfft`` and ``icfft`` take and return
them, ``stft`` returns one and ``istft`` takes one. The transforms follow ``numpy.fft`` (and
``torch.fft``), unnormalized forward and ``1 / n`` backward; ``stft`` and ``istft`` follow
``torch.stft`` and ``torch.istft``; the windows follow ``torch.hann_window`` and its siblings.

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
from ._fft import cfft as cfft
from ._fft import icfft as icfft
from ._fft import irfft as irfft
from ._fft import rfft as rfft
from ._stft import istft as istft
from ._stft import stft as stft
from ._tensor import DeviceLike, DTypeLike, Tensor, resolve

__all__ = [
    # transforms
    "rfft",
    "irfft",
    "cfft",
    "icfft",
    # short-time transforms
    "stft",
    "istft",
    # windows
    "hann_window",
    "hamming_window",
    "blackman_window",
]


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
