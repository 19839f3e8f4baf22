"""The complex FFT (``signal.cfft`` / ``icfft``) and the short-time transforms (``signal.stft`` /
``istft``), composed from the real FFT kernels: values against ``numpy.fft`` and a framing reference in
float64, round trips, PyTorch cross-checks, and the errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, signal
from burn_backend.testing import check, make, random_array, require_dtype

Array = np.ndarray[Any, Any]
WIDE = [DType.F64, DType.F32]


def f64(array: Array) -> Array:
    return np.asarray(array, dtype=np.float64)


def reference_stft(
    x: Array, n_fft: int, hop: int, window: Array, center: bool, onesided: bool, normalized: bool
) -> Array:
    """The STFT ``[..., freq, frames]`` of ``x`` ``[..., time]`` by framing and ``numpy.fft``, reflect
    padding where ``center``."""
    if center:
        widths = [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)]
        x = np.pad(x, widths, mode="reflect")
    count = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., t * hop : t * hop + n_fft] * window for t in range(count)], -2)
    spectrum = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    if normalized:
        spectrum = spectrum / np.sqrt(n_fft)
    return np.swapaxes(spectrum, -1, -2)


# -- cfft ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize(
    ("shape", "dim"), [((1,), 0), ((2,), 0), ((3, 7), -1), ((8, 2), 0), ((2, 6, 3), 1)], ids=str
)
def test_cfft_and_icfft(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, dtype: DType
) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    z = f64(a) + 1j * f64(b)
    re, im = signal.cfft(make(a, device), make(b, device), dim)
    expected = np.fft.fft(z, axis=dim)
    check(re, expected.real, dtype, scale=8)
    check(im, expected.imag, dtype, scale=8)
    re, im = signal.icfft(make(a, device), make(b, device), dim)
    expected = np.fft.ifft(z, axis=dim)
    check(re, expected.real, dtype, scale=8)
    check(im, expected.imag, dtype, scale=8)


def test_cfft_errors(device: Device) -> None:
    x = Tensor.ones([4], device)
    with pytest.raises(ValueError, match=r"cfft: re and im must have the same shape, got \[4\] and \[5\]"):
        signal.cfft(x, Tensor.ones([5], device))
    with pytest.raises(TypeError, match=r"icfft: im must be a Float tensor"):
        signal.icfft(x, x.int())


# -- stft ------------------------------------------------------------------------------------------------
# (n_fft, hop, win_length, center, onesided, normalized)
STFT = [
    (16, 4, 16, True, True, False),
    (16, 5, 11, True, True, True),
    (15, 4, 15, False, True, False),
    (8, 2, 8, True, False, False),
    (9, 3, 9, False, False, True),
    (10, 3, 6, True, False, True),
]


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", STFT, ids=str)
def test_stft(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    require_dtype(device, dtype)
    n_fft, hop, win_length, center, onesided, normalized = case
    x = random_array(rng, (2, 40), dtype)
    window = random_array(rng, (win_length,), dtype, 0.5, 1.0)
    left = (n_fft - win_length) // 2
    padded = np.pad(f64(window), (left, n_fft - win_length - left))
    expected = reference_stft(f64(x), n_fft, hop, padded, center, onesided, normalized)
    re, im = signal.stft(
        make(x, device),
        n_fft,
        hop,
        win_length,
        make(window, device),
        center=center,
        onesided=onesided,
        normalized=normalized,
    )
    check(re, expected.real, dtype, scale=16)
    check(im, expected.imag, dtype, scale=16)
    # the inverse gives the signal back where the frames cover it
    back = signal.istft(
        re, im, n_fft, hop, win_length, make(window, device), center, normalized, onesided, 40
    )
    covered = 40 if center else n_fft + hop * ((40 - n_fft) // hop)
    check(back.slice([slice(None), slice(0, covered)]), f64(x)[:, :covered], dtype, scale=16)


@pytest.mark.parametrize("pad_mode", ["reflect", "constant", "replicate", "circular"])
def test_stft_matches_torch(device: Device, rng: np.random.Generator, pad_mode: str) -> None:
    torch = pytest.importorskip("torch")
    x = rng.uniform(-1.0, 1.0, (3, 50))
    window = signal.hann_window(12, device=device, dtype=DType.F64)
    twindow = torch.hann_window(12, dtype=torch.float64)
    re, im = signal.stft(make(x, device), 16, 5, 12, window, pad_mode=pad_mode)
    expected = torch.stft(torch.tensor(x), 16, 5, 12, twindow, pad_mode=pad_mode, return_complex=True)
    check(re, expected.real.numpy())
    check(im, expected.imag.numpy())
    for length in (None, 37, 55):
        back = signal.istft(re, im, 16, 5, 12, window, length=length)
        check(back, torch.istft(expected, 16, 5, 12, twindow, length=length).numpy())


def test_stft_defaults_and_shapes(device: Device, rng: np.random.Generator) -> None:
    x = rng.uniform(-1.0, 1.0, (2, 3, 64))
    re, im = signal.stft(make(x, device), 32)  # hop 8, a rectangular window
    assert re.dims() == [2, 3, 17, 9]
    expected = reference_stft(x, 32, 8, np.ones(32), True, True, False)
    check(re, expected.real)
    check(signal.istft(re, im, 32), x)


def test_stft_errors(device: Device) -> None:
    x = Tensor.ones([2, 10], device)
    with pytest.raises(ValueError, match=r"stft: win_length must be at most n_fft 8, got 9"):
        signal.stft(x, 8, win_length=9)
    with pytest.raises(ValueError, match=r"stft: window must have shape \[8\] \(win_length\), got \[7\]"):
        signal.stft(x, 8, window=Tensor.ones([7], device))
    with pytest.raises(ValueError, match=r"stft: reflect padding by n_fft // 2 = 10 needs a longer signal"):
        signal.stft(x, 20)
    with pytest.raises(ValueError, match=r"stft: the signal has 10 samples, fewer than n_fft 16"):
        signal.stft(x, 16, center=False)
    with pytest.raises(ValueError, match=r"stft: pad_mode must be one of"):
        signal.stft(x, 4, pad_mode="wrap")
    re, im = signal.stft(x, 8)
    with pytest.raises(ValueError, match=r"istft: a onesided spectrum of n_fft 6 has 4 frequencies"):
        signal.istft(re, im, 6)
    with pytest.raises(ValueError, match=r"istft: the window overlap-add has zeros"):
        signal.istft(re, im, 8, 2, window=Tensor.zeros([8], device))
