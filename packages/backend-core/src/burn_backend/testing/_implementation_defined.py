"""The implementation-defined values of the element-wise ops: the groups of inputs whose results the
interface leaves to the backend, and where each group lies in an op's operands.

The conformance suite checks every other value of the element-wise table at special values for every
backend (IEEE 754's infinities, NaN and signed zeros, the dtype's extremes). The inputs of a group are
those where C, PyTorch and NumPy disagree; the suite checks them against NumPy (which NdArray and Cuda
follow) in tests marked with the group, and a backend that gives its own values there declares the
group in its ``conformance_exclusions`` as ``"implementation-defined:<group>"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .._dtype import DType
from .._elementwise import ElementwiseOp

EXCLUSION_PREFIX = "implementation-defined:"
"""How an exclusion key names a group: ``"implementation-defined:int-division-by-zero"``."""

IMPLEMENTATION_DEFINED: Mapping[str, str] = MappingProxyType(
    {
        "int-division-by-zero": (
            "int_div and int_remainder (tensor and scalar forms) by 0: NumPy gives 0, PyTorch raises, "
            "C's division traps. The Tensor API raises ZeroDivisionError first where the backend "
            "validates_index_values."
        ),
        "int-overflow": (
            "signed int arithmetic whose exact result does not fit the dtype (add, sub, mul, neg, abs, "
            "square, powi, and floor division of the minimum by -1), and the remainder of the minimum "
            "by -1, whose quotient overflows: NumPy and PyTorch wrap modulo 2**bits (the remainder is "
            "0); C leaves signed overflow undefined and its division of the minimum by -1 traps. "
            "Unsigned arithmetic is modulo 2**bits on every backend."
        ),
        "shift-out-of-range": (
            "bitwise_left_shift and bitwise_right_shift (tensor and scalar forms) by a count outside "
            "[0, bits): NumPy gives 0, or for a right shift of a negative value -1; C leaves them "
            "undefined and processors take the count modulo the width."
        ),
    }
)
"""The groups of implementation-defined element-wise results, by name, with the inputs each covers.

A backend whose results differ from NumPy's there declares the group in its ``conformance_exclusions``
(``{"implementation-defined:int-overflow": "wraps like C on the device"}``); the suite's tests of that
group then skip for it. Every other value of the element-wise table, at special values too, is required.

Example:
    >>> from burn_backend.testing import IMPLEMENTATION_DEFINED
    >>> sorted(IMPLEMENTATION_DEFINED)
    ['int-division-by-zero', 'int-overflow', 'shift-out-of-range']
"""

Mask = np.ndarray[Any, np.dtype[np.bool_]]

_DIVISIONS = ("int_div", "int_remainder")
_OVERFLOWING = frozenset(
    (
        "int_add",
        "int_sub",
        "int_mul",
        "int_div",
        "int_remainder",
        "int_powi",
        "int_neg",
        "int_abs",
        "int_square",
    )
)
_SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")


def _family(op: ElementwiseOp) -> str:
    """The tensor form's name of ``op`` (``int_div`` for ``int_div_scalar``)."""
    return op.tensor_form or op.name


def _shape(operands: list[Any]) -> tuple[int, ...]:
    return np.broadcast_shapes(*(np.shape(value) for value in operands))


def _divisor_is_zero(op: ElementwiseOp, dtype: DType, operands: list[Any]) -> Mask | None:
    if _family(op) not in _DIVISIONS:
        return None
    return np.broadcast_to(np.asarray(operands[1]) == 0, _shape(operands))


def _exact(op: ElementwiseOp, operands: list[Any]) -> Any:
    """The result of ``op`` in Python's unbounded ints (the remainder's: its quotient; a zero divisor
    taken as 1, an exponent of a base other than 0 and +-1 capped where every width overflows)."""
    values = [np.asarray(value).astype(object) for value in operands]
    family = _family(op)
    if family in _DIVISIONS:
        values[1] = np.where(values[1] == 0, 1, values[1])
        return np.floor_divide(*values)
    if family == "int_powi":
        small = np.abs(values[0]) <= 1
        values[1] = np.where(small, values[1], np.minimum(values[1], 65))
    return op.reference(*values)


def _overflows(op: ElementwiseOp, dtype: DType, operands: list[Any]) -> Mask | None:
    if _family(op) not in _OVERFLOWING or not dtype.is_signed:
        return None
    exact = np.broadcast_to(_exact(op, operands), _shape(operands))
    info = np.iinfo(dtype.numpy)
    return np.asarray((exact < int(info.min)) | (exact > int(info.max)), dtype=bool)


def _shift_out_of_range(op: ElementwiseOp, dtype: DType, operands: list[Any]) -> Mask | None:
    if _family(op) not in _SHIFTS:
        return None
    count = np.asarray(operands[1])
    bits = np.dtype(dtype.numpy).itemsize * 8
    return np.broadcast_to((count < 0) | (count >= bits), _shape(operands))


_WHERE: dict[str, Callable[[ElementwiseOp, DType, list[Any]], Mask | None]] = {
    "int-division-by-zero": _divisor_is_zero,
    "int-overflow": _overflows,
    "shift-out-of-range": _shift_out_of_range,
}


def implementation_defined(op: ElementwiseOp, dtype: DType, operands: list[Any]) -> dict[str, Mask]:
    """Where the result of ``op`` on ``operands`` (arrays of ``dtype``, or their int64 and float64
    widenings, then Python scalars) is implementation-defined: one mask of the result's shape per group
    that has such elements. The masks are disjoint: an element is in the first group of
    ``IMPLEMENTATION_DEFINED`` it falls in (a zero divisor's quotient does not also overflow)."""
    found: dict[str, Mask] = {}
    taken: Mask | None = None
    for group in IMPLEMENTATION_DEFINED:
        mask = _WHERE[group](op, dtype, operands)
        if mask is None:
            continue
        if taken is not None:
            mask = mask & ~taken
        if mask.any():
            found[group] = mask
            taken = mask if taken is None else taken | mask
    return found
