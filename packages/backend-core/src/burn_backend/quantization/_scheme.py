"""``QuantScheme``: how a quantized tensor stores its values (Burn's ``QuantScheme``)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import ml_dtypes
import numpy as np

from .._dtype import DType, Kind


class QuantValue(enum.Enum):
    """What one quantized value is: a signed integer of 8, 4 or 2 bits, full range (``F``: -2^(b-1) to
    2^(b-1)-1) or symmetric (``S``: the negative end one closer to zero), or a float8 (E4M3, E5M2)."""

    Q8F = "q8f"
    Q8S = "q8s"
    Q4F = "q4f"
    Q4S = "q4s"
    Q2F = "q2f"
    Q2S = "q2s"
    E4M3 = "e4m3"
    E5M2 = "e5m2"

    @property
    def bits(self) -> int:
        """Bits per value."""
        return _BITS[self]

    @property
    def is_float(self) -> bool:
        """Whether the values are float8 (E4M3, E5M2) rather than integers."""
        return self in (QuantValue.E4M3, QuantValue.E5M2)

    @property
    def range(self) -> tuple[float, float]:
        """The smallest and largest value (for float8 the largest finite magnitude, negated and not)."""
        if self.is_float:
            top = float(ml_dtypes.finfo(self.numpy).max)  # type: ignore[no-untyped-call]
            return (-top, top)
        half = 1 << (self.bits - 1)
        low = -half if self.name.endswith("F") else -half + 1
        return (float(low), float(half - 1))

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype that holds one value natively (int8, or ml_dtypes' float8)."""
        if self is QuantValue.E4M3:
            return np.dtype(ml_dtypes.float8_e4m3fn)  # type: ignore[no-any-return]
        if self is QuantValue.E5M2:
            return np.dtype(ml_dtypes.float8_e5m2)  # type: ignore[no-any-return]
        return np.dtype(np.int8)


_BITS = {
    QuantValue.Q8F: 8, QuantValue.Q8S: 8, QuantValue.Q4F: 4, QuantValue.Q4S: 4,
    QuantValue.Q2F: 2, QuantValue.Q2S: 2, QuantValue.E4M3: 8, QuantValue.E5M2: 8,
}  # fmt: skip


class QuantStore(enum.Enum):
    """How values are stored: one per byte (``NATIVE``), or packed into 32-bit words (``PACKED_U32``,
    ``32 // bits`` values a word, the first in the lowest bits)."""

    NATIVE = "native"
    PACKED_U32 = "packed_u32"


class QuantParam(enum.Enum):
    """The dtype the scales are stored in."""

    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"

    @property
    def dtype(self) -> DType:
        """The scales' ``DType``."""
        return DType.of(self.value)


class QuantMode(enum.Enum):
    """How values map to numbers: ``SYMMETRIC`` is ``value * scale`` (no zero point), Burn's mode."""

    SYMMETRIC = "symmetric"


@dataclasses.dataclass(frozen=True)
class QuantScheme:
    """A quantization scheme: the value type, the scales' granularity and dtype, the storage and mode.

    It is the dtype of a quantized tensor, of the Float kind (``kind``, ``is_float`` as ``DType``'s).
    Scales are per tensor (``block_size=None``) or per block of ``block_size`` consecutive values along
    the last dim, which the block size must divide. A value ``q`` stands for ``q * scale``.

    Args:
        value: the value type (default ``QuantValue.Q8S``).
        param: the dtype of the scales (default f32).
        store: native or packed into u32 words (float8 values are stored natively only).
        block_size: values per scale along the last dim, or ``None`` for one scale per tensor.
        mode: ``QuantMode.SYMMETRIC``.

    Raises:
        ValueError: a block size below 1, or float8 values with packed storage.

    Example:
        >>> scheme = QuantScheme().with_value(QuantValue.Q4S).with_block_size(32)
        >>> str(scheme), scheme.kind
        ('q4s[block 32, f32 scales, native]', Float)
    """

    value: QuantValue = QuantValue.Q8S
    param: QuantParam = QuantParam.F32
    store: QuantStore = QuantStore.NATIVE
    block_size: int | None = None
    mode: QuantMode = QuantMode.SYMMETRIC

    def __post_init__(self) -> None:
        for name, kind in (("value", QuantValue), ("param", QuantParam), ("store", QuantStore)):
            if not isinstance(getattr(self, name), kind):
                raise TypeError(f"QuantScheme: {name} must be a {kind.__name__}, got {getattr(self, name)!r}")
        if self.block_size is not None and (
            isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or self.block_size < 1
        ):
            raise ValueError(
                f"QuantScheme: block_size must be a positive int or None, got {self.block_size!r}"
            )
        if self.value.is_float and self.store is not QuantStore.NATIVE:
            raise ValueError(
                f"QuantScheme: {self.value.value} values are stored natively only, not {self.store.value}"
            )

    def with_value(self, value: QuantValue) -> QuantScheme:
        """This scheme with another value type."""
        return dataclasses.replace(self, value=value)

    def with_param(self, param: QuantParam) -> QuantScheme:
        """This scheme with scales of another dtype."""
        return dataclasses.replace(self, param=param)

    def with_store(self, store: QuantStore) -> QuantScheme:
        """This scheme with another storage."""
        return dataclasses.replace(self, store=store)

    def with_block_size(self, block_size: int | None) -> QuantScheme:
        """This scheme with scales per block of ``block_size`` values (``None``: per tensor)."""
        return dataclasses.replace(self, block_size=block_size)

    # -- as a dtype of the Float kind -------------------------------------------------------------
    @property
    def kind(self) -> Kind:
        """``Kind.FLOAT``: quantized values stand for floats."""
        return Kind.FLOAT

    @property
    def is_float(self) -> bool:
        """True, as for the float dtypes."""
        return True

    @property
    def is_int(self) -> bool:
        """False."""
        return False

    @property
    def values_per_word(self) -> int:
        """Values per stored element: ``32 // bits`` when packed, else 1."""
        return 32 // self.value.bits if self.store is QuantStore.PACKED_U32 else 1

    @property
    def storage_numpy(self) -> np.dtype[Any]:
        """The NumPy dtype of the stored values: uint32 when packed, else ``value.numpy``."""
        return np.dtype(np.uint32) if self.store is QuantStore.PACKED_U32 else self.value.numpy

    def scales_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of the scales of a tensor of ``shape``: ``()`` per tensor, else ``shape`` with the
        last dim divided by the block size.

        Raises:
            ValueError: the block size does not divide the last dim (or the tensor has rank 0).
        """
        if self.block_size is None:
            return ()
        if not shape or shape[-1] % self.block_size:
            last = shape[-1] if shape else None
            raise ValueError(
                f"quantize: block size {self.block_size} of {self} does not divide the last dim ({last}) "
                f"of shape {list(shape)}"
            )
        return (*shape[:-1], shape[-1] // self.block_size)

    def __str__(self) -> str:
        level = "tensor" if self.block_size is None else f"block {self.block_size}"
        return f"{self.value.value}[{level}, {self.param.value} scales, {self.store.value}]"


def is_quantized(primitive: Any) -> bool:
    """Whether ``primitive`` (any backend's) is a quantized one: its ``dtype`` is a ``QuantScheme``."""
    return type(getattr(primitive, "dtype", None)) is QuantScheme
