"""The short-time Fourier transform of ``burn_backend.signal`` and its inverse, as ``torch.stft`` and
``torch.istft``: frames cut with ``unfold``, windowed, transformed with the FFTs of ``_fft``; the inverse
adds the frames back with ``scatter_add`` (overlap-add) and divides by the summed squared window."""

from __future__ import annotations

import math

import numpy as np

from ._dtype import Kind
from ._fft import _full_spectrum, _pair, icfft, irfft, rfft
from ._pad import pad
from ._tensor import Tensor
from .module import _same, _tensor

__all__ = ["istft", "stft"]

_STFT_PAD_MODES = ("reflect", "constant", "replicate", "circular")


def _positive(op: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{op}: {name} must be an int >= 1, got {value!r}")
    return value


def _window(
    op: str, like: Tensor, n_fft: int, hop_length: int | None, win_length: int | None, window: Tensor | None
) -> tuple[int, Tensor]:
    """The hop (default ``n_fft // 4``) and the window (default ones) zero-padded to ``n_fft`` samples
    on both sides equally (the extra one on the right), as PyTorch places it."""
    n_fft = _positive(op, "n_fft", n_fft)
    hop = max(n_fft // 4, 1) if hop_length is None else _positive(op, "hop_length", hop_length)
    length = n_fft if win_length is None else _positive(op, "win_length", win_length)
    if length > n_fft:
        raise ValueError(f"{op}: win_length must be at most n_fft {n_fft}, got {length}")
    if window is None:
        window = Tensor.ones([length], like.device, like.dtype)
    else:
        window = _tensor(op, "window", window, Kind.FLOAT)
        _same(op, like, "window", window)
        if window.dims() != [length]:
            raise ValueError(f"{op}: window must have shape [{length}] (win_length), got {window.dims()}")
    left = (n_fft - length) // 2
    if left or n_fft - length - left:
        window = pad(window, (left, n_fft - length - left))
    return hop, window


def stft(
    x: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool = True,
) -> tuple[Tensor, Tensor]:
    """The short-time Fourier transform of the real signals ``x`` along their last dim, as
    ``torch.stft(..., return_complex=True)`` split into its real and imaginary parts.

    Frame ``t`` is the ``n_fft`` samples from ``t * hop_length`` of the signal (padded by ``n_fft // 2``
    on both sides where ``center``), multiplied by the window, then Fourier transformed:
    ``X[f, t] = sum_j window[j] * x[t * hop_length + j] * exp(-2 pi i f j / n_fft)``.

    Args:
        x: a Float tensor ``[..., time]``.
        n_fft: the size of the Fourier transform (and of each frame).
        hop_length: the step between frames; default ``n_fft // 4``.
        win_length: the window's size, at most ``n_fft``; default ``n_fft``. A shorter window is
            zero-padded to ``n_fft`` on both sides.
        window: a Float tensor ``[win_length]`` of ``x``'s dtype and device (``hann_window``, say);
            default ones (a rectangular window).
        center: pad the signal by ``n_fft // 2`` on both sides, so that frame ``t`` is centred at
            ``t * hop_length``.
        pad_mode: the padding where ``center``: ``"reflect"`` (PyTorch's default), ``"constant"``
            (zeros), ``"replicate"`` or ``"circular"``.
        normalized: multiply the spectrum by ``n_fft ** -0.5``.
        onesided: return the ``n_fft // 2 + 1`` non-negative frequencies only (the others are their
            conjugates), else all ``n_fft``.

    Returns:
        The real and imaginary parts, each ``[..., freq, frames]`` with ``freq`` ``n_fft // 2 + 1``
        (onesided) or ``n_fft`` and ``frames = 1 + (time' - n_fft) // hop_length`` for the (padded)
        length ``time'``.

    Example:
        >>> re, im = stft(Tensor.random([2, 400]), 64, window=hann_window(64))
        >>> re.dims()
        [2, 33, 26]
    """
    op = "stft"
    x = _tensor(op, "x", x, Kind.FLOAT)
    if x.rank < 1:
        raise ValueError(f"{op}: x must have rank >= 1 ([..., time]), got a scalar")
    hop, window = _window(op, x, n_fft, hop_length, win_length, window)
    if pad_mode not in _STFT_PAD_MODES:
        raise ValueError(
            f"{op}: pad_mode must be one of {', '.join(map(repr, _STFT_PAD_MODES))}, got {pad_mode!r}"
        )
    if center:
        if pad_mode == "reflect" and n_fft // 2 >= x.dims()[-1]:
            raise ValueError(
                f"{op}: reflect padding by n_fft // 2 = {n_fft // 2} needs a longer signal, got shape "
                f"{x.dims()}; use pad_mode='constant' or a smaller n_fft"
            )
        x = pad(x, (n_fft // 2, n_fft // 2), pad_mode)
    if x.dims()[-1] < n_fft:
        raise ValueError(
            f"{op}: the signal{' (padded)' if center else ''} has {x.dims()[-1]} samples, fewer than "
            f"n_fft {n_fft}"
        )
    frames = x.unfold(x.rank - 1, n_fft, hop) * window  # [..., frames, n_fft]
    re, im = rfft(frames, -1) if onesided else _full_spectrum(frames, frames.rank - 1)
    if normalized:
        re, im = re / math.sqrt(n_fft), im / math.sqrt(n_fft)
    return re.swap_dims(-1, -2), im.swap_dims(-1, -2)


def istft(
    re: Tensor,
    im: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
) -> Tensor:
    """The inverse of ``stft``, as ``torch.istft``: each frame is inverse transformed, multiplied by the
    window, and the frames are added back at their offsets (overlap-add), divided by the sum of the
    squared windows there. ``istft(*stft(x, ...), ...)`` gives ``x`` back.

    Args:
        re: the real parts, a Float tensor ``[..., freq, frames]``.
        im: the imaginary parts, of ``re``'s shape, dtype and device.
        n_fft, hop_length, win_length, window, center, normalized: as given to ``stft``.
        onesided: whether the spectrum holds the non-negative frequencies only (``freq = n_fft // 2 +
            1``) or all (``freq = n_fft``; the signal is the real part of the inverse); default: the
            former unless ``freq == n_fft``.
        length: the length of the signal to return (trimmed, or padded with zeros); default all the
            frames cover, less the ``center`` padding.

    Returns:
        The signals ``[..., time]``.

    Raises:
        ValueError: the shapes do not fit ``n_fft``, or the window's overlap leaves a sample with a
            zero sum of squared windows (the nonzero overlap-add condition, as PyTorch checks).

    Example:
        >>> window = hann_window(64)
        >>> x = Tensor.random([2, 400])
        >>> back = istft(*stft(x, 64, window=window), 64, window=window, length=400)
        >>> back.dims()
        [2, 400]
    """
    op = "istft"
    _pair(op, re, im)
    if re.rank < 2:
        raise ValueError(f"{op}: re and im must have rank >= 2 ([..., freq, frames]), got {re.dims()}")
    hop, window = _window(op, re, n_fft, hop_length, win_length, window)
    *batch, freq, count = re.dims()
    if onesided is None:
        onesided = freq != n_fft
    expected = n_fft // 2 + 1 if onesided else n_fft
    if freq != expected:
        raise ValueError(
            f"{op}: a {'onesided' if onesided else 'full'} spectrum of n_fft {n_fft} has {expected} "
            f"frequencies (dim -2), got shape {re.dims()}"
        )
    if count < 1:
        raise ValueError(f"{op}: the spectrum has no frames (dim -1), got shape {re.dims()}")
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 0):
        raise ValueError(f"{op}: length must be an int >= 0 or None, got {length!r}")
    re, im = re.swap_dims(-1, -2), im.swap_dims(-1, -2)  # [..., frames, freq]
    if normalized:
        re, im = re * math.sqrt(n_fft), im * math.sqrt(n_fft)
    frames = irfft(re, im, -1, n_fft) if onesided else icfft(re, im, -1)[0]
    frames = frames * window

    # overlap-add: sample j of frame t lands at t * hop + j
    total = n_fft + hop * (count - 1)
    positions = (np.arange(count)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    index = Tensor.from_data(positions, re.device, re.device.backend.int_dtype)
    flat = [*batch, count * n_fft]
    signal = Tensor.zeros([*batch, total], re.device, re.dtype).scatter_add(
        len(batch), index.reshape([1] * len(batch) + [count * n_fft]).expand(flat), frames.reshape(flat)
    )
    squares = (window * window).reshape([1, n_fft]).expand([count, n_fft]).reshape([count * n_fft])
    envelope = Tensor.zeros([total], re.device, re.dtype).scatter_add(0, index, squares)

    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    stop = min(end, total)
    kept = [slice(None)] * len(batch) + [slice(start, max(start, stop))]
    signal, envelope = signal.slice(kept), envelope.slice([slice(start, max(start, stop))])
    if envelope.dims()[0] and float(np.abs(envelope.to_numpy()).min()) < 1e-11:
        raise ValueError(
            f"{op}: the window overlap-add has zeros (the nonzero overlap-add condition fails for n_fft "
            f"{n_fft}, hop_length {hop} and this window); use a smaller hop_length or another window"
        )
    signal = signal / envelope
    if end > stop:  # a length beyond the frames: zeros
        signal = pad(signal, (0, end - max(start, stop)))
    return signal
