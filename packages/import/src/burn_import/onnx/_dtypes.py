"""ONNX element types and their burn ``DType``s (no ``onnx`` import: the numbers are ONNX's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType

__all__ = ["ELEM_TYPE_OF", "dtype_of", "elem_type_name", "elem_type_of"]

# TensorProto.DataType numbers (onnx.proto): stable across versions
_NAMES = {
    0: "undefined",
    1: "float",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "double",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
    17: "float8e4m3fn",
    18: "float8e4m3fnuz",
    19: "float8e5m2",
    20: "float8e5m2fnuz",
    21: "uint4",
    22: "int4",
    23: "float4e2m1",
    24: "float8e8m0",
    25: "uint2",
    26: "int2",
}

_DTYPES = {
    1: DType.F32,
    2: DType.U8,
    3: DType.I8,
    4: DType.U16,
    5: DType.I16,
    6: DType.I32,
    7: DType.I64,
    9: DType.BOOL,
    10: DType.F16,
    11: DType.F64,
    12: DType.U32,
    13: DType.U64,
    16: DType.BF16,
}

ELEM_TYPE_OF: dict[DType, int] = {dtype: number for number, dtype in _DTYPES.items()}
"""The ONNX element type number of each burn dtype."""


def dtype_of(elem_type: int) -> DType | None:
    """The burn dtype of ONNX element type ``elem_type``; ``None`` for a type our backends do not have
    (strings, complex numbers, 8-, 4- and 2-bit floats and ints)."""
    return _DTYPES.get(elem_type)


def elem_type_name(elem_type: int) -> str:
    """ONNX's name of an element type (``"float"``)."""
    return _NAMES.get(elem_type, f"type {elem_type}")


def elem_type_of(dtype: DType | np.dtype[Any]) -> int:
    """The ONNX element type number of a burn or NumPy dtype."""
    return ELEM_TYPE_OF[DType.of(dtype)]
