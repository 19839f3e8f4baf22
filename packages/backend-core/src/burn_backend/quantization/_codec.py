"""Quantization arithmetic written once over an array namespace: the host form (NumPy) and every array
backend (``burn_backend.array``) compute with these, so that their values agree bit for bit.

``ns`` is a ``Namespace``: the array namespace and its dtype objects. Values round half to even (the
Array API's ``round``, NumPy's and CuPy's), and are clamped to the value type's range.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .._dtype import DType
from ._scheme import QuantScheme, QuantStore

Array = Any


@dataclasses.dataclass(frozen=True)
class Namespace:
    """An array namespace ``xp``, ``dtype(DType)`` giving its dtype objects, ``cast(array, dtype)``, and
    ``float8(numpy_dtype)``: its dtype object for a float8 value type, or ``None`` where it has none."""

    xp: Any
    dtype: Callable[[DType], Any]
    cast: Callable[[Array, Any], Array]
    float8: Callable[[np.dtype[Any]], Any]


def _numpy_cast(array: Array, dtype: Any) -> Array:
    with np.errstate(all="ignore"):
        return np.asarray(array).astype(dtype, copy=False)


NUMPY = Namespace(np, lambda d: d.numpy, _numpy_cast, lambda d: d)
"""NumPy, which holds every scheme (float8 through ml_dtypes)."""


def check_holds(ns: Namespace, scheme: QuantScheme, backend: str) -> Any:
    """The namespace's dtype for the stored values of ``scheme``.

    Raises:
        TypeError: the namespace cannot hold them (float8 without a float8 dtype).
    """
    try:
        ns.dtype(scheme.param.dtype)
    except TypeError:
        raise TypeError(
            f"quantize: {backend} cannot hold the scheme {scheme}: "
            f"it has no {scheme.param.value} dtype for scales"
        ) from None
    if scheme.store is QuantStore.PACKED_U32:
        return ns.dtype(DType.U32)
    if scheme.value.is_float:
        found = ns.float8(scheme.value.numpy)
        if found is None:
            raise TypeError(
                f"quantize: {backend} cannot hold the scheme {scheme}: it has no {scheme.value.value} dtype"
            )
        return found
    return ns.dtype(DType.I8)


def _blocks(ns: Namespace, x: Array, scheme: QuantScheme) -> Array:
    """``x`` with its last dim split into ``(blocks, block_size)`` (per tensor: unchanged)."""
    if scheme.block_size is None:
        return x
    shape = tuple(x.shape)
    return ns.xp.reshape(x, (*shape[:-1], shape[-1] // scheme.block_size, scheme.block_size))


def _per_block(ns: Namespace, scales: Array, scheme: QuantScheme) -> Array:
    """Scales shaped to broadcast against ``_blocks`` of the values."""
    if scheme.block_size is None:
        return ns.xp.reshape(scales, ())
    return ns.xp.expand_dims(scales, axis=-1)


def dynamic_scales(ns: Namespace, x: Array, scheme: QuantScheme, backend: str = "NumPy") -> Array:
    """The scales that map the largest magnitude of each block (or of the tensor) to the end of the value
    range: ``max|x| / qmax`` for symmetric ints, ``2 max|x| / (qmax - qmin)`` for full-range ones,
    ``max|x| / fmax`` for float8; 1 where a block is all zeros. In the scheme's scale dtype (rounded
    once), of ``scheme.scales_shape``."""
    xp = ns.xp
    f32 = ns.dtype(DType.F32)
    scheme.scales_shape(tuple(x.shape))
    check_holds(ns, scheme, backend)
    magnitude = xp.abs(_blocks(ns, ns.cast(x, f32), scheme))
    amax = xp.max(magnitude) if scheme.block_size is None else xp.max(magnitude, axis=-1)
    low, high = scheme.value.range
    span = high if scheme.value.is_float else (high - low) / 2.0
    scales = amax / span
    scales = xp.where(scales > 0, scales, xp.ones_like(scales))
    return ns.cast(scales, ns.dtype(scheme.param.dtype))


def quantize(ns: Namespace, x: Array, scales: Array, scheme: QuantScheme, backend: str) -> Array:
    """The stored values of ``x`` under ``scales`` (of ``scheme.scales_shape``; read as f32)."""
    xp = ns.xp
    f32 = ns.dtype(DType.F32)
    storage = check_holds(ns, scheme, backend)
    shape = tuple(x.shape)
    scaled = _blocks(ns, ns.cast(x, f32), scheme) / _per_block(ns, ns.cast(scales, f32), scheme)
    low, high = scheme.value.range
    if scheme.value.is_float:
        return xp.reshape(ns.cast(xp.clip(scaled, low, high), storage), shape)
    values = ns.cast(xp.clip(xp.round(scaled), low, high), ns.dtype(DType.I8))
    values = xp.reshape(values, shape)
    return pack(ns, values, scheme) if scheme.store is QuantStore.PACKED_U32 else values


def dequantize(
    ns: Namespace, stored: Array, scales: Array, scheme: QuantScheme, shape: tuple[int, ...]
) -> Array:
    """The f32 numbers that the stored values of a tensor of ``shape`` stand for."""
    xp = ns.xp
    f32 = ns.dtype(DType.F32)
    values = unpack(ns, stored, scheme, shape) if scheme.store is QuantStore.PACKED_U32 else stored
    numbers = _blocks(ns, ns.cast(values, f32), scheme) * _per_block(ns, ns.cast(scales, f32), scheme)
    return xp.reshape(numbers, shape)


def pack(ns: Namespace, values: Array, scheme: QuantScheme) -> Array:
    """int8 ``values`` (any shape) packed into u32 words, ``32 // bits`` to a word, the first in the
    lowest bits (two's complement, masked to ``bits``); the last word padded with zeros."""
    xp = ns.xp
    u32 = ns.dtype(DType.U32)
    bits = scheme.value.bits
    per = 32 // bits
    flat = xp.reshape(ns.cast(values, ns.dtype(DType.I32)), (-1,))
    count = int(flat.shape[0])
    padded = -(-count // per) * per
    if padded != count:
        flat = xp.concat([flat, xp.zeros((padded - count,), dtype=ns.dtype(DType.I32))])
    masked = ns.cast(flat & ((1 << bits) - 1), u32)
    shifts = ns.cast(xp.arange(per, dtype=ns.dtype(DType.I32)) * bits, u32)
    lanes = xp.bitwise_left_shift(xp.reshape(masked, (-1, per)), shifts)
    return ns.cast(xp.sum(lanes, axis=-1, dtype=u32), u32)  # disjoint bits: the sum is the OR


def unpack(ns: Namespace, words: Array, scheme: QuantScheme, shape: tuple[int, ...]) -> Array:
    """The int8 values of shape ``shape`` packed in ``words`` (``pack``'s inverse)."""
    xp = ns.xp
    i32 = ns.dtype(DType.I32)
    bits = scheme.value.bits
    per = 32 // bits
    count = 1
    for size in shape:
        count *= size
    shifts = ns.cast(xp.arange(per, dtype=i32) * bits, ns.dtype(DType.U32))
    lanes = xp.bitwise_right_shift(xp.expand_dims(words, axis=-1), shifts)
    fields = ns.cast(lanes & ((1 << bits) - 1), i32)
    fields = xp.reshape(fields, (-1,))[:count]
    signed = xp.where(fields >= (1 << (bits - 1)), fields - (1 << bits), fields)
    return xp.reshape(ns.cast(signed, ns.dtype(DType.I8)), shape)


def stored_count(scheme: QuantScheme, shape: tuple[int, ...]) -> int:
    """How many stored elements a tensor of ``shape`` has under ``scheme``."""
    count = 1
    for size in shape:
        count *= size
    per = scheme.values_per_word
    return -(-count // per) if per > 1 else count
