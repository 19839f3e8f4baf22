"""Positional encodings: sinusoids added to the input (``PositionalEncoding``) and rotary encoding
(``RotaryEncoding``, RoPE)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from burn_backend import Device, Kind, Tensor

from ._config import Config
from ._module import Module

__all__ = [
    "PositionalEncoding",
    "PositionalEncodingConfig",
    "RotaryEncoding",
    "RotaryEncodingConfig",
    "generate_sinusoids",
]


def _like(constant: Tensor, input: Tensor) -> Tensor:
    """``constant`` (a tensor the module computed at init, not a parameter) on ``input``'s device and
    in its dtype: such constants do not follow ``to_device`` or ``valid``, so they follow the input."""
    if constant.device != input.device:
        constant = Tensor.from_data(constant.to_data(), input.device, constant.dtype)
    if constant.dtype != input.dtype:
        constant = constant.cast(input.dtype)
    return constant


def _float_input(where: str, input: object, min_rank: int) -> Tensor:
    if not isinstance(input, Tensor) or input.kind is not Kind.FLOAT:
        got = f"a tensor of dtype {input.dtype}" if isinstance(input, Tensor) else type(input).__name__
        raise TypeError(f"{where}: expected a Float tensor, got {got}")
    if input.rank < min_rank:
        raise ValueError(f"{where}: expected at least {min_rank} dims, got shape {input.dims()}")
    return input


# -- sinusoids ------------------------------------------------------------------------------------------
def generate_sinusoids(length: int, d_model: int, max_timescale: int, device: Device) -> Tensor:
    """The sinusoids of "Attention Is All You Need": ``[length, d_model]`` with, at position ``p`` and
    ``k = 0, 2, 4, ...``, ``sin(p * w_k)`` in column ``k`` and ``cos(p * w_k)`` in column ``k + 1``,
    where ``w_k = max_timescale ** (-k / d_model)`` (PyTorch's tutorial and Burn's values, computed in
    float64 and stored in the device's float dtype).

    Raises:
        ValueError: ``d_model`` is odd or not positive, or ``max_timescale`` is less than ``length``.
    """
    if d_model <= 0 or d_model % 2:
        raise ValueError(f"generate_sinusoids: d_model must be even and positive, got {d_model}")
    if length < 0:
        raise ValueError(f"generate_sinusoids: length must be non-negative, got {length}")
    if max_timescale < length:
        raise ValueError(
            f"generate_sinusoids: max_timescale ({max_timescale}) must be at least the length ({length})"
        )
    frequencies = np.exp(np.arange(0, d_model, 2, dtype=np.float64) * (-math.log(max_timescale) / d_model))
    angles = np.arange(length, dtype=np.float64)[:, None] * frequencies[None, :]
    sinusoids = np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(length, d_model)
    return Tensor.from_data(sinusoids, device, device.backend.float_dtype)


class PositionalEncodingConfig(Config):
    """Settings of a ``PositionalEncoding``.

    Args:
        d_model: the size of each position's vector (even).
        max_sequence_size: the longest sequence it encodes.
        max_timescale: the longest wavelength's scale (10000 in "Attention Is All You Need"); at least
            ``max_sequence_size``.
    """

    d_model: int
    max_sequence_size: int = 5_000
    max_timescale: int = 10_000

    def init(self, device: Device) -> PositionalEncoding:
        """A ``PositionalEncoding`` on ``device``."""
        return PositionalEncoding(self, device)


class PositionalEncoding(Module):
    """Adds the sinusoids of ``generate_sinusoids`` to ``[batch, seq, d_model]`` inputs, position by
    position. It has no parameters: ``sinusoids`` (``[1, max_sequence_size, d_model]``) is a constant
    that follows the input's device and dtype.

    Example:
        >>> encoding = PositionalEncodingConfig(d_model=8).init(device)
        >>> encoding(Tensor.zeros([2, 3, 8], device)).dims()
        [2, 3, 8]
    """

    def __init__(self, config: PositionalEncodingConfig, device: Device) -> None:
        self.sinusoids = generate_sinusoids(
            config.max_sequence_size, config.d_model, config.max_timescale, device
        ).unsqueeze_dim(0)
        self.max_sequence_size = config.max_sequence_size
        self.max_timescale = config.max_timescale

    def forward(self, input: Tensor) -> Tensor:
        """``input`` ``[batch, seq, d_model]`` plus the sinusoids of positions ``0 .. seq - 1``.

        Raises:
            ValueError: ``input`` is not ``[batch, seq, d_model]``, or ``seq`` exceeds
                ``max_sequence_size``.
        """
        input = _float_input("PositionalEncoding", input, 3)
        _, max_sequence_size, d_model = self.sinusoids.dims()
        dims = input.dims()
        if len(dims) != 3 or dims[2] != d_model:
            raise ValueError(
                f"PositionalEncoding: expected an input [batch, seq, d_model={d_model}], got {dims}"
            )
        if dims[1] > max_sequence_size:
            raise ValueError(
                f"PositionalEncoding: the sequence length {dims[1]} exceeds max_sequence_size "
                f"({max_sequence_size})"
            )
        return input + _like(self.sinusoids.narrow(1, 0, dims[1]), input)


# -- rotary ---------------------------------------------------------------------------------------------
class RotaryEncodingConfig(Config):
    """Settings of a ``RotaryEncoding``.

    Args:
        max_sequence_length: the number of positions it precomputes.
        d_model: the size of each vector it rotates (even; the head size in attention).
        theta: the base of the rotation frequencies ``theta ** (-2i / d_model)``.
    """

    max_sequence_length: int
    d_model: int
    theta: float = 10_000.0

    def init(self, device: Device) -> RotaryEncoding:
        """A ``RotaryEncoding`` on ``device``."""
        return RotaryEncoding(self, device)

    def init_with_frequency_scaling(
        self, scaling: Callable[[Tensor], Tensor], device: Device
    ) -> RotaryEncoding:
        """A ``RotaryEncoding`` whose base frequencies (a ``[d_model / 2]`` Float tensor on ``device``)
        are first passed through ``scaling`` (for RoPE extensions such as Llama 3's)."""
        return RotaryEncoding(self, device, scaling)


class RotaryEncoding(Module):
    """Rotary position embedding (RoPE, "RoFormer"), in Burn's interleaved layout: each pair
    ``(x[2i], x[2i+1])`` of a vector at position ``p`` is rotated by the angle ``p * theta_i`` with
    ``theta_i = theta ** (-2i / d_model)``; as a complex product, ``(x[2i] + j x[2i+1]) * e^(j p theta_i)``.

    It has no parameters: ``freq_complex`` (``[max_sequence_length, d_model, 2]``, the cosine and sine of
    every angle, each repeated for both members of a pair) and ``theta`` (``[d_model / 2]``) are constants
    that follow the input's device and dtype.

    Example:
        >>> rope = RotaryEncodingConfig(max_sequence_length=32, d_model=8).init(device)
        >>> rope(Tensor.ones([2, 4, 10, 8], device)).dims()
        [2, 4, 10, 8]
    """

    def __init__(
        self,
        config: RotaryEncodingConfig,
        device: Device,
        scaling: Callable[[Tensor], Tensor] | None = None,
    ) -> None:
        d_model, theta = config.d_model, config.theta
        if d_model <= 0 or d_model % 2:
            raise ValueError(f"RotaryEncoding: d_model must be even and positive, got {d_model}")
        if not theta > 0:
            raise ValueError(f"RotaryEncoding: theta must be positive, got {theta}")
        if config.max_sequence_length <= 0:
            raise ValueError(
                f"RotaryEncoding: max_sequence_length must be positive, got {config.max_sequence_length}"
            )
        exponents = np.arange(0, d_model, 2, dtype=np.float64) / d_model
        frequencies = Tensor.from_data(1.0 / theta**exponents, device, device.backend.float_dtype)
        if scaling is not None:
            frequencies = scaling(frequencies)
            if not isinstance(frequencies, Tensor) or frequencies.dims() != [d_model // 2]:
                got = frequencies.dims() if isinstance(frequencies, Tensor) else type(frequencies).__name__
                raise ValueError(
                    f"RotaryEncoding: the frequency scaling must return a [{d_model // 2}] tensor, got {got}"
                )
        self.theta = frequencies
        self.freq_complex = _rotations(0, config.max_sequence_length, frequencies)
        self.start_offset = 0

    def forward(self, input: Tensor) -> Tensor:
        """``apply(input, 0)``."""
        return self.apply(input, 0)

    def apply(self, input: Tensor, start: int) -> Tensor:
        """Rotate ``input`` ``[..., seq, d_model]`` (``[batch, seq, d]`` or ``[batch, heads, seq, d]``, say)
        as positions ``start .. start + seq - 1`` of the precomputed window.

        Raises:
            ValueError: the last dim is not ``d_model``, or the positions run past the window.
        """
        input = _float_input("RotaryEncoding", input, 2)
        window, d_model, _ = self.freq_complex.dims()
        dims = input.dims()
        seq_length = dims[-2]
        if dims[-1] != d_model:
            raise ValueError(f"RotaryEncoding: the last dim must be d_model={d_model}, got shape {dims}")
        if start < 0 or start + seq_length > window:
            raise ValueError(
                f"RotaryEncoding: positions {start}..{start + seq_length} run past the precomputed "
                f"{window} (max_sequence_length)"
            )
        batch = math.prod(dims[:-2])
        rotations = _like(self.freq_complex.narrow(0, start, seq_length), input).unsqueeze_dim(0)
        # (a, b) -> rows (a, -b) and (b, a), so that the rows times (cos, sin) summed are the rotation
        signs = _like(Tensor.from_data([[1.0, 0.0, 0.0, 1.0], [0.0, -1.0, 1.0, 0.0]], input.device), input)
        pairs = input.reshape([batch, seq_length, d_model // 2, 2]).matmul(
            signs.unsqueeze_dim(0).unsqueeze_dim(0)
        )
        rotated = pairs.reshape([batch, seq_length, d_model, 2]) * rotations
        return rotated.sum_dim(3).reshape(dims)

    def shift(self, start: int) -> None:
        """Move the precomputed window to positions ``start .. start + max_sequence_length - 1`` (for
        sequences longer than the window); ``start`` only grows. Changes this module in place, as Burn's
        ``shift(&mut self)``.

        Raises:
            ValueError: ``start`` is not past the current window start.
        """
        if start <= self.start_offset:
            raise ValueError(
                f"RotaryEncoding.shift: start must increase, got {start} after {self.start_offset}"
            )
        window = self.freq_complex.dims()[0]
        self.freq_complex = _rotations(start, start + window, self.theta)
        self.start_offset = start

    def reset(self) -> None:
        """Move the precomputed window back to position 0 (in place)."""
        if self.start_offset == 0:
            return
        window = self.freq_complex.dims()[0]
        self.freq_complex = _rotations(0, window, self.theta)
        self.start_offset = 0


def _rotations(start: int, end: int, frequencies: Tensor) -> Tensor:
    """``[end - start, d_model, 2]``: the cosine and sine of position times frequency, each frequency's
    pair repeated for the two members of its rotation pair (computed in float64)."""
    theta = frequencies.to_data().to_numpy().astype(np.float64)
    angles = np.arange(start, end, dtype=np.float64)[:, None] * theta[None, :]
    pairs = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    values = np.repeat(pairs, 2, axis=1)
    return Tensor.from_data(values, frequencies.device, frequencies.dtype)
