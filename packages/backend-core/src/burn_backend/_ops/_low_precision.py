"""The low-precision rule of the defaults: f16 and bf16 are computed in f32 and rounded once.

A default built from many ops would round its f16 or bf16 intermediates at every step (an
interpolation's weighted sums, a DFT's products, a softmax's exponentials) and end far outside the
tolerance of the result's dtype. ``in_f32`` marks such a default: its low-precision float operands are
cast to f32, and its float results are cast back to their dtype once, at the end.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .._dtype import DType

F = TypeVar("F", bound=Callable[..., Any])

LOW_PRECISION = frozenset({DType.F16, DType.BF16})
"""The float dtypes the defaults compute in f32."""


def _low_dtype(value: Any) -> DType | None:
    """The dtype of ``value`` if it is a primitive of a low-precision float dtype."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    found = DType.of(dtype)
    return found if found in LOW_PRECISION else None


def in_f32(method: F) -> F:
    """``method`` (a default of an op group: ``self``, then primitives and other arguments) computed in
    f32 when an operand is an f16 or bf16 primitive: those operands are cast to f32 with ``float_cast``
    and the f32 results (a primitive or a tuple of them) are cast back to the first such operand's
    dtype (a named tuple of results keeps its type). Other calls go straight through."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        low = None
        for value in (*args, *kwargs.values()):
            low = _low_dtype(value)
            if low is not None:
                break
        if low is None:
            return method(self, *args, **kwargs)

        def widened(value: Any) -> Any:
            return self.float_cast(value, DType.F32) if _low_dtype(value) is not None else value

        def narrowed(value: Any) -> Any:
            dtype = getattr(value, "dtype", None)
            if dtype is None or DType.of(dtype) is not DType.F32:
                return value
            return self.float_cast(value, low)

        result = method(
            self, *(widened(a) for a in args), **{name: widened(value) for name, value in kwargs.items()}
        )
        if not isinstance(result, tuple):
            return narrowed(result)
        results = [narrowed(r) for r in result]
        return type(result)(*results) if hasattr(result, "_fields") else tuple(results)

    return wrapper  # type: ignore[return-value]
