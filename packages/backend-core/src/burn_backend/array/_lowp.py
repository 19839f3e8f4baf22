"""The low-precision rule: f16 and bf16 are computed in f32 and rounded once per op.

Element-wise methods of ``burn_backend.array`` are marked with ``in_f32``. A backend class whose
runtime computes some low-precision dtype natively (NumPy with ml_dtypes does both) keeps the method as
written for those; for the others the class is built with a wrapper that widens float operands of
that dtype to f32 and rounds float results back. The choice is made once per class, so a namespace
that needs no conversion pays nothing per call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_MARK = "_burn_in_f32"


def in_f32(method: F) -> F:
    """Mark ``method`` (an element-wise op taking ``self`` then arrays or scalars) as computed in f32
    for the low-precision dtypes its backend's namespace does not compute natively."""
    setattr(method, _MARK, True)
    return method


def widened(method: Callable[..., Any], dtypes: frozenset[np.dtype[Any]]) -> Callable[..., Any]:
    """``method`` with its operands of ``dtypes`` widened to f32 and its float results rounded back to
    the first such operand's dtype."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any) -> Any:
        low = None
        for arg in args:  # the common case first: no operand of a low-precision dtype
            dtype = getattr(arg, "dtype", None)
            if dtype is not None and dtype is not _F32 and dtype is not _F64 and dtype in dtypes:
                low = dtype
                break
        if low is None:
            return method(self, *args)
        cast = self.runtime.cast
        wide = [cast(arg, _F32) if getattr(arg, "dtype", None) in dtypes else arg for arg in args]
        with self.runtime.quiet():
            result = method(self, *wide)
        if isinstance(result, tuple):
            return tuple(cast(r, low) if r.dtype == _F32 else r for r in result)
        return cast(result, low) if result.dtype == _F32 else result

    return wrapper


def apply(cls: type, dtypes: frozenset[np.dtype[Any]]) -> None:
    """Wrap every ``in_f32`` method of ``cls`` (and its bases) with ``widened`` for ``dtypes``."""
    if not dtypes:
        return
    for name in dir(cls):
        method = inspect.getattr_static(cls, name, None)
        if inspect.isfunction(method) and getattr(method, _MARK, False):
            wrapped = widened(method, dtypes)
            setattr(wrapped, _MARK, False)
            setattr(cls, name, wrapped)
