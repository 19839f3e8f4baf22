"""Quantized tensors in records: a ``QuantizedData`` (a quantized module's parameter) is stored as a node of
the record tree, ``{"$quantized": scheme and shape, "values": stored values, "scales": scales}``, whose two
tensors keep their dtypes whatever the precision settings (int8 values are not widened to i32, scales
not narrowed to f16), so a quantized model's file is about as small as its values."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType, ParamId, ParamRecord, TensorData
from burn_backend.quantization import (
    QuantizedData,
    QuantMode,
    QuantParam,
    QuantScheme,
    QuantStore,
    QuantValue,
)

from ._errors import RecordFileError

__all__ = ["MARKER", "from_node", "is_node", "to_node"]

MARKER = "__burn_quantized__"
"""The key that marks a quantized node (a plain key, so every binary and text format carries it)."""


def to_node(data: QuantizedData, param_id: ParamId | None) -> dict[str, Any]:
    """The record-tree node of ``data``; the values tensor carries ``param_id`` (float8 values travel as
    their bytes, u8)."""
    scheme = data.scheme
    values = data.values
    if scheme.value.is_float:
        values = values.view(np.uint8)
    header = {
        "value": scheme.value.value,
        "param": scheme.param.value,
        "store": scheme.store.value,
        "block_size": scheme.block_size,
        "mode": scheme.mode.value,
        "shape": [int(d) for d in data.shape],
    }
    stored_values: Any = TensorData.from_numpy(np.ascontiguousarray(values))
    if param_id is not None:
        stored_values = ParamRecord(param_id, stored_values)
    return {MARKER: header, "values": stored_values, "scales": TensorData.from_numpy(data.scales)}


def is_node(value: Any) -> bool:
    """Whether ``value`` (a loaded dict) is a quantized node."""
    return type(value) is dict and MARKER in value


def _enum(kind: Any, header: dict[str, Any], key: str) -> Any:
    text = header.get(key)
    for member in kind:
        if member.value == text:
            return member
    raise RecordFileError(f"{key} {text!r:.40} is not one of {[m.value for m in kind]}")


def from_node(node: dict[str, Any], path: str) -> QuantizedData | ParamRecord:
    """The ``QuantizedData`` (in a ``ParamRecord`` where the values carry an id) of a loaded node.

    Raises:
        RecordFileError: a malformed node (unknown scheme fields, a shape or sizes that do not fit,
            values outside the value type's range), named by ``path``; the source is added by the caller.
    """
    try:
        return _from_node(node)
    except RecordFileError as error:
        raise RecordFileError(f"quantized entry {path!r}: {error.reason}") from None


def _from_node(node: dict[str, Any]) -> QuantizedData | ParamRecord:
    header = node.get(MARKER)
    if type(header) is not dict or set(node) != {MARKER, "values", "scales"}:
        raise RecordFileError(f"expected the keys {MARKER!r}, 'values' and 'scales', got {sorted(node)}")
    value = _enum(QuantValue, header, "value")
    param = _enum(QuantParam, header, "param")
    store = _enum(QuantStore, header, "store")
    mode = _enum(QuantMode, header, "mode")
    block = header.get("block_size")
    shape = header.get("shape")
    if block is not None and (type(block) is not int or block < 1):
        raise RecordFileError(f"block_size {block!r:.40} is not a positive int or None")
    if type(shape) is not list or len(shape) > 64 or not all(type(d) is int and d >= 0 for d in shape):
        raise RecordFileError(f"shape {shape!r:.80} is not a list of sizes")
    try:
        scheme = QuantScheme(value, param, store, block, mode)
        scheme.scales_shape(tuple(shape))
    except (TypeError, ValueError) as error:
        raise RecordFileError(str(error)) from None
    stored, scales = node["values"], node["scales"]
    param_id = None
    if isinstance(stored, ParamRecord):
        param_id, stored = stored.id, stored.value
    if not isinstance(stored, TensorData) or not isinstance(scales, TensorData):
        raise RecordFileError("'values' and 'scales' must be tensors")
    array = stored.to_numpy().reshape(-1)
    if value.is_float:
        if stored.dtype is not DType.U8:
            raise RecordFileError(f"{value.value} values are stored as u8 bytes, got {stored.dtype}")
        array = array.view(value.numpy)
    elif store is QuantStore.PACKED_U32:
        if stored.dtype is not DType.U32:
            raise RecordFileError(f"packed values are stored as u32, got {stored.dtype}")
    else:
        if not stored.dtype.is_int:
            raise RecordFileError(f"{value.value} values are stored as ints, got {stored.dtype}")
        low, high = value.range
        if array.size and (int(array.min()) < low or int(array.max()) > high):
            raise RecordFileError(f"values outside the range [{low:.0f}, {high:.0f}] of {value.value}")
        array = array.astype(np.int8)
    if not scales.dtype.is_float or not np.isfinite(scales.to_numpy()).all():
        raise RecordFileError(f"scales must be finite floats, got {scales.dtype}")
    try:
        data = QuantizedData(array, scales.to_numpy().reshape(-1), scheme, shape)
    except (TypeError, ValueError) as error:
        raise RecordFileError(str(error)) from None
    return data if param_id is None else ParamRecord(param_id, data)  # type: ignore[arg-type]
