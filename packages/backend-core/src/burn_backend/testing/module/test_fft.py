"""The real FFT (``signal.rfft`` / ``irfft``, kernels ``rfft`` / ``irfft``) and the window functions:
values against ``numpy.fft`` and the windows' formulas in float64, the interface's defaults (dense DFT
matrices) run unbound against the same references, round trips, PyTorch cross-checks, and the errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, ModuleOps, Tensor, signal
from burn_backend.testing import FLOAT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.module._reference import Array, as_f64

WIDE = [DType.F64, DType.F32]

# (shape, dim): lengths odd and even, 1 and 2, first, middle and last dims
RFFT = [
    ((8,), 0),
    ((7,), -1),
    ((3, 10, 4), 1),
    ((2, 5, 1), 2),
    ((4, 9), 0),
    ((2, 2), -1),
    ((2, 3, 16), -1),
]

# (shape of the spectrum, dim, n): n default, odd, even, trimming and zero-padding the bins
IRFFT = [
    ((6,), 0, None),
    ((6,), 0, 11),
    ((6,), 0, 10),
    ((6,), 0, 4),
    ((6,), 0, 5),
    ((6,), 0, 15),
    ((3, 5, 2), 1, None),
    ((3, 5, 2), 1, 9),
    ((2, 4), 0, 3),
    ((4, 1), -1, 1),
    ((4, 1), -1, 2),
    ((2, 3, 9), -1, 17),
]


def f64(array: Array) -> Array:
    return array.astype(np.float64)


def case_id(case: tuple[Any, ...]) -> str:
    return "-".join(str(list(part)) if isinstance(part, tuple) else str(part) for part in case)


def spectrum(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> tuple[Array, Array]:
    return random_array(rng, shape, dtype), random_array(rng, shape, dtype)


def n_of(shape: tuple[int, ...], dim: int, n: int | None) -> int:
    return n if n is not None else 2 * (shape[dim] - 1)


# -- rfft ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", RFFT, ids=case_id)
def test_rfft(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, dim = case
    x = random_array(rng, shape, dtype)
    expected = np.fft.rfft(f64(x), axis=dim)
    re, im = signal.rfft(make(x, device), dim)
    check(re, expected.real, dtype, scale=4)
    check(im, expected.imag, dtype, scale=4)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", RFFT, ids=case_id)
def test_rfft_default(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, dim = case
    x = random_array(rng, shape, dtype)
    expected = np.fft.rfft(f64(x), axis=dim)
    primitive = make(x, device)._primitive
    re, im = ModuleOps.rfft(device.backend, primitive, dim % len(shape))
    check(Tensor.from_primitive(re, device), expected.real, dtype, scale=10)
    check(Tensor.from_primitive(im, device), expected.imag, dtype, scale=10)


def test_rfft_of_known_signals(device: Device) -> None:
    n = 8
    t = np.arange(n)
    cosine = np.cos(2 * np.pi * 3 * t / n)  # all its energy in bin 3
    re, im = signal.rfft(make(cosine, device))
    check(re, [0, 0, 0, 4, 0], DType.F64)
    check(im, [0, 0, 0, 0, 0], DType.F64)
    re, im = signal.rfft(make(np.ones((2, 5)), device), dim=1)  # a constant: bin 0 only
    check(re, [[5, 0, 0]] * 2, DType.F64)
    check(im, [[0, 0, 0]] * 2, DType.F64)
    re, im = signal.rfft(make(np.array([3.0]), device))  # one sample: itself
    check(re, [3.0], DType.F64)
    check(im, [0.0], DType.F64)


def test_rfft_low_precision(device: Device, rng: np.random.Generator) -> None:
    for dtype in FLOAT_DTYPES:
        require_dtype(device, dtype)
        x = random_array(rng, (3, 12), dtype)
        expected = np.fft.rfft(f64(x), axis=1)
        re, im = signal.rfft(make(x, device))
        check(re, expected.real, dtype, scale=4)
        check(im, expected.imag, dtype, scale=4)
        back = signal.irfft(re, im, n=12)
        check(back, np.fft.irfft(f64(re.to_numpy()) + 1j * f64(im.to_numpy()), 12, axis=1), dtype, scale=4)


# -- irfft ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", IRFFT, ids=case_id)
def test_irfft(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, dim, n = case
    re, im = spectrum(rng, shape, dtype)
    # random spectra are not Hermitian: the imaginary parts of bin 0 and n / 2 must be ignored
    expected = np.fft.irfft(f64(re) + 1j * f64(im), n, axis=dim)
    result = signal.irfft(make(re, device), make(im, device), dim, n)
    check(result, expected, dtype, scale=4)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", IRFFT, ids=case_id)
def test_irfft_default(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    shape, dim, n = case
    re, im = spectrum(rng, shape, dtype)
    expected = np.fft.irfft(f64(re) + 1j * f64(im), n, axis=dim)
    result = ModuleOps.irfft(
        device.backend,
        make(re, device)._primitive,
        make(im, device)._primitive,
        dim % len(shape),
        n_of(shape, dim, n),
    )
    check(Tensor.from_primitive(result, device), expected, dtype, scale=10)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("length", [1, 2, 3, 8, 11, 16, 25])
def test_round_trip(device: Device, rng: np.random.Generator, length: int, dtype: DType) -> None:
    x = random_array(rng, (3, length, 2), dtype)
    re, im = signal.rfft(make(x, device), dim=1)
    assert re.dims() == im.dims() == [3, length // 2 + 1, 2]
    check(signal.irfft(re, im, dim=1, n=length), f64(x), dtype, scale=4)
    if length % 2 == 0 and length > 1:  # the default n is the even length
        check(signal.irfft(re, im, dim=1), f64(x), dtype, scale=4)


def test_fft_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    for shape, dim in RFFT:
        x = random_array(rng, shape, DType.F64)
        expected = torch.fft.rfft(torch.tensor(x), dim=dim)
        re, im = signal.rfft(make(x, device), dim)
        check(re, expected.real.numpy(), DType.F64)
        check(im, expected.imag.numpy(), DType.F64)
    for shape, dim, n in IRFFT:
        re_, im_ = spectrum(rng, shape, DType.F64)
        expected = torch.fft.irfft(torch.complex(torch.tensor(re_), torch.tensor(im_)), n, dim)
        check(signal.irfft(make(re_, device), make(im_, device), dim, n), expected.numpy(), DType.F64)


def test_fft_errors(device: Device) -> None:
    x = make(np.zeros((2, 4)), device)
    with pytest.raises(TypeError, match=r"rfft: x must be a Float tensor"):
        signal.rfft(make(np.zeros(4, dtype=np.int64), device))
    with pytest.raises(TypeError, match=r"rfft: x must be a Tensor, got ndarray"):
        signal.rfft(np.zeros(4))  # type: ignore[arg-type]
    with pytest.raises(IndexError, match=r"rfft: dim 2 is out of range"):
        signal.rfft(x, 2)
    with pytest.raises(ValueError, match=r"rfft: x must have at least one sample along dim 1"):
        signal.rfft(make(np.zeros((2, 0)), device))
    with pytest.raises(ValueError, match=r"irfft: re and im must have the same shape"):
        signal.irfft(x, make(np.zeros((2, 3)), device))
    with pytest.raises(TypeError, match=r"irfft: im has dtype f32, re has f64"):
        signal.irfft(x, make(np.zeros((2, 4), dtype=np.float32), device))
    with pytest.raises(TypeError, match=r"irfft: im must be a Float tensor"):
        signal.irfft(x, make(np.zeros((2, 4), dtype=np.int64), device))
    with pytest.raises(ValueError, match=r"irfft: a spectrum of 1 bin .* needs an explicit n"):
        signal.irfft(make(np.zeros((2, 1)), device), make(np.zeros((2, 1)), device))
    with pytest.raises(ValueError, match=r"irfft: n must be >= 1, got 0"):
        signal.irfft(x, x, n=0)
    with pytest.raises(TypeError, match=r"irfft: n must be an int or None"):
        signal.irfft(x, x, n=4.0)  # type: ignore[arg-type]
    with pytest.raises(IndexError, match=r"irfft: dim -3 is out of range"):
        signal.irfft(x, x, dim=-3)


# -- windows -------------------------------------------------------------------------------------------
def window(name: str, size: int, periodic: bool, alpha: float = 0.54, beta: float = 0.46) -> Array:
    """The window's formula in float64, straight from its definition."""
    if size == 0:
        return np.zeros(0)
    if size == 1:
        return np.ones(1)
    m = size + 1 if periodic else size
    phase = np.array([2 * math.pi * t / (m - 1) for t in range(size)])
    if name == "hann":
        result: Array = 0.5 - 0.5 * np.cos(phase)
    elif name == "hamming":
        result = alpha - beta * np.cos(phase)
    else:
        result = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
    return result


WINDOWS = {
    "hann": signal.hann_window,
    "hamming": signal.hamming_window,
    "blackman": signal.blackman_window,
}


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("periodic", [True, False], ids=["periodic", "symmetric"])
@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows(device: Device, name: str, periodic: bool, dtype: DType) -> None:
    for size in (0, 1, 2, 5, 8, 33):
        result = WINDOWS[name](size, periodic, device=device, dtype=dtype)
        check(result, window(name, size, periodic), dtype)


def test_window_options(device: Device) -> None:
    check(signal.hann_window(4, device=device, dtype=DType.F64), [0.0, 0.5, 1.0, 0.5], DType.F64)
    check(signal.hann_window(5, False, device, DType.F64), [0.0, 0.5, 1.0, 0.5, 0.0], DType.F64)
    result = signal.hamming_window(6, False, device, DType.F64, alpha=0.5, beta=0.5)
    check(result, window("hamming", 6, False, 0.5, 0.5), DType.F64)
    default = signal.hann_window(3, device=device)
    assert default.dtype is device.backend.default_dtype(default.kind)
    for dtype in (DType.F16, DType.BF16):
        require_dtype(device, dtype)
        check(signal.blackman_window(9, device=device, dtype=dtype), window("blackman", 9, True), dtype)


def test_windows_match_torch(device: Device) -> None:
    torch = pytest.importorskip("torch")
    functions = {
        "hann": torch.hann_window,
        "hamming": torch.hamming_window,
        "blackman": torch.blackman_window,
    }
    for name, function in functions.items():
        for size in (0, 1, 2, 7, 10):
            for periodic in (True, False):
                expected = function(size, periodic, dtype=torch.float64).numpy()
                check(WINDOWS[name](size, periodic, device, DType.F64), expected, DType.F64)


def test_window_errors(device: Device) -> None:
    with pytest.raises(ValueError, match=r"hann_window: size must be >= 0, got -1"):
        signal.hann_window(-1, device=device)
    with pytest.raises(TypeError, match=r"hamming_window: size must be an int"):
        signal.hamming_window(True, device=device)
    with pytest.raises(TypeError):
        signal.blackman_window(2.5, device=device)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"blackman_window: makes Float tensors, got dtype i64"):
        signal.blackman_window(4, device=device, dtype=DType.I64)


def test_spectrum_of_a_windowed_tone(device: Device) -> None:
    # window and transform together: the Hann window spreads a bin-centred tone over 3 bins (-1/4, 1/2, -1/4)
    n = 32
    tone = np.cos(2 * np.pi * 5 * np.arange(n) / n)
    windowed = make(tone, device) * signal.hann_window(n, device=device, dtype=DType.F64)
    re, im = signal.rfft(windowed)
    expected = np.zeros(n // 2 + 1)
    expected[4:7] = [-n / 8, n / 4, -n / 8]
    check(re, expected, DType.F64)
    check(im, np.zeros(n // 2 + 1), DType.F64)
    assert as_f64(re).shape == (n // 2 + 1,)
