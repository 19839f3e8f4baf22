"""The output sizes of convolutions and pooling and the tables every implementation of pooling and
interpolation agrees on (``burn_backend.kit`` exports them to backend authors)."""

from __future__ import annotations

import math

import numpy as np

from .._options import InterpolateMode


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """The length of a convolution's output along one dim (may be <= 0 for a too large kernel)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_output_size(
    size: int, kernel: int, stride: int, padding: int, padding_out: int, dilation: int
) -> int:
    """The length of a transposed convolution's output along one dim."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + padding_out + 1


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool
) -> int:
    """The length of a pooling output along one dim, as PyTorch computes it.

    With ``ceil_mode`` a last, partial window is kept if it starts inside the input or its left padding.
    """
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + padding:
        out -= 1
    return out


def avg_pool_divisors(
    size: int, kernel: int, stride: int, padding: int, count_include_pad: bool, out: int
) -> list[int]:
    """The divisor of each output of an average pool along one dim (PyTorch's rule).

    A window counts its padding (if ``count_include_pad``) but never the overhang of ``ceil_mode``.
    """
    divisors = []
    for index in range(out):
        start = index * stride - padding
        end = min(start + kernel, size + padding)
        with_padding = end - start
        inside = min(end, size) - max(start, 0)
        divisors.append(max(1, with_padding if count_include_pad else inside))
    return divisors


def adaptive_pool_windows(size: int, out: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` input range each output of an adaptive pool averages."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def nearest_indices(size: int, out: int) -> list[int]:
    """The input index each output of a nearest interpolation reads (PyTorch's ``nearest`` rule).

    PyTorch computes ``floor(o * (size / out))`` in single precision; so does this, bit for bit.
    """
    scale = np.float32(size) / np.float32(out)
    positions = np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64)
    return [min(int(p), size - 1) for p in positions]


def _cubic_near(t: float, a: float) -> float:
    return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0


def _cubic_far(t: float, a: float) -> float:
    return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a


def interpolation_taps(mode: InterpolateMode, size: int, out: int) -> list[tuple[list[int], list[float]]]:
    """The taps of a 1-d interpolation from ``size`` to ``out`` samples: a list of ``(indices, weights)``
    pairs, one entry per output in each, such that ``y[o] = sum(w[o] * x[i[o]] for i, w in taps)``.

    ``NEAREST`` follows PyTorch's ``nearest`` rule; ``BILINEAR`` and ``BICUBIC`` align corners (as Burn),
    and bicubic uses the cubic convolution with ``A = -0.75`` and clamped borders (as PyTorch).
    """
    if mode is InterpolateMode.NEAREST:
        return [(nearest_indices(size, out), [1.0] * out)]
    scale = (size - 1) / (out - 1) if out > 1 else 0.0
    sources = [scale * o for o in range(out)]
    if mode is InterpolateMode.BILINEAR:
        low, high, w_low, w_high = [], [], [], []
        for source in sources:
            index = min(math.floor(source), size - 1)
            frac = source - index
            low.append(index)
            high.append(index + 1 if index < size - 1 else index)
            w_low.append(1.0 - frac)
            w_high.append(frac)
        return [(low, w_low), (high, w_high)]
    if mode is InterpolateMode.BICUBIC:
        a = -0.75
        taps: list[tuple[list[int], list[float]]] = [([], []) for _ in range(4)]
        for source in sources:
            index = math.floor(source)
            t = source - index
            weights = (
                _cubic_far(t + 1.0, a),
                _cubic_near(t, a),
                _cubic_near(1.0 - t, a),
                _cubic_far(2.0 - t, a),
            )
            for tap, weight in enumerate(weights):
                taps[tap][0].append(min(max(index - 1 + tap, 0), size - 1))
                taps[tap][1].append(weight)
        return taps
    raise ValueError(f"interpolate: unsupported mode {mode!r}")
