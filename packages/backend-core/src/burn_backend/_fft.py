"""The discrete Fourier transforms of ``burn_backend.signal``: ``rfft`` / ``irfft`` (backend kernels) and
``cfft`` / ``icfft`` (composed from them), on spectra held as (real, imaginary) pairs of Float tensors."""

from __future__ import annotations

from ._dtype import Kind
from ._shape import normalize_dim
from ._tensor import Tensor
from .module import _same, _tensor

__all__ = ["cfft", "icfft", "irfft", "rfft"]


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


def _pair(op: str, re: Tensor, im: Tensor) -> None:
    """Check that ``re`` and ``im`` are the two parts of one complex Float tensor of rank >= 1."""
    _tensor(op, "re", re, Kind.FLOAT)
    _tensor(op, "im", im, Kind.FLOAT)
    _same(op, re, "im", im, "re")
    if im.dims() != re.dims():
        raise ValueError(f"{op}: re and im must have the same shape, got {re.dims()} and {im.dims()}")
    if re.rank < 1:
        raise ValueError(f"{op}: re and im must have rank >= 1, got scalars")


def _full_spectrum(x: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """The DFT of the real ``x`` along ``dim`` at all ``n`` frequencies: ``rfft``'s bins, then the
    conjugates of bins ``n - n // 2 - 1`` down to ``1`` (a real signal's spectrum is Hermitian)."""
    n = x.dims()[dim]
    re, im = rfft(x, dim)
    mirrored = [slice(None)] * x.rank
    mirrored[dim] = slice(1, n - n // 2)
    if n - n // 2 <= 1:
        return re, im
    return (
        Tensor.cat([re, re.slice(mirrored).flip([dim])], dim),
        Tensor.cat([im, im.slice(mirrored).flip([dim]).neg()], dim),
    )


def cfft(re: Tensor, im: Tensor, dim: int = -1) -> tuple[Tensor, Tensor]:
    """The discrete Fourier transform of the complex signal ``re + i * im`` along ``dim``: ``X[k] =
    sum_t x[t] * exp(-2 pi i k t / n)`` for all ``n`` frequencies, as ``numpy.fft.fft``.

    Args:
        re: the real parts, a Float tensor of rank >= 1 with ``n >= 1`` samples along ``dim``.
        im: the imaginary parts, of ``re``'s shape, dtype and device.
        dim: the dim to transform (negative counts from the end).

    Returns:
        The real and imaginary parts of ``X``, each of ``re``'s shape and dtype.

    Example:
        >>> re, im = cfft(Tensor.from_data([1.0, 0.0, 0.0, 0.0]), Tensor.from_data([0.0, 1.0, 0.0, 0.0]))
        >>> re.tolist(), im.tolist()
        ([1.0, 2.0, 1.0, 0.0], [1.0, 0.0, -1.0, 0.0])
    """
    op = "cfft"
    _pair(op, re, im)
    dim = normalize_dim(op, dim, re.rank)
    if re.dims()[dim] < 1:
        raise ValueError(f"{op}: the signal must have at least one sample along dim {dim}, got {re.dims()}")
    # the DFT is linear: F(a + ib) = F(a) + i F(b), each of a real signal
    a_re, a_im = _full_spectrum(re, dim)
    b_re, b_im = _full_spectrum(im, dim)
    return a_re - b_im, a_im + b_re


def icfft(re: Tensor, im: Tensor, dim: int = -1) -> tuple[Tensor, Tensor]:
    """The inverse of ``cfft``: ``x[t] = (1 / n) * sum_k X[k] * exp(2 pi i k t / n)`` along ``dim``, as
    ``numpy.fft.ifft``.

    Args:
        re: the real parts of the spectrum, a Float tensor of rank >= 1 with ``n >= 1`` bins along
            ``dim``.
        im: the imaginary parts, of ``re``'s shape, dtype and device.
        dim: the dim of the bins (negative counts from the end).

    Returns:
        The real and imaginary parts of the signal, each of ``re``'s shape and dtype.

    Example:
        >>> re, im = icfft(*cfft(Tensor.from_data([1.0, 2.0]), Tensor.from_data([3.0, 4.0])))
        >>> re.tolist(), im.tolist()
        ([1.0, 2.0], [3.0, 4.0])
    """
    op = "icfft"
    _pair(op, re, im)
    dim = normalize_dim(op, dim, re.rank)
    n = re.dims()[dim]
    if n < 1:
        raise ValueError(f"{op}: the spectrum must have at least one bin along dim {dim}, got {re.dims()}")
    # ifft(X) = conj(fft(conj(X))) / n
    out_re, out_im = cfft(re, im.neg(), dim)
    return out_re / n, out_im / -n
