"""Where NdArray finds numba: loaded on first use, and never an error if it is missing or broken."""

from __future__ import annotations

import os
import threading
import warnings
from types import ModuleType

_lock = threading.Lock()
_loaded: list[ModuleType | None] = []


def kernels() -> ModuleType | None:
    """``burn_ndarray._kernels`` (which imports numba), or ``None`` where numba cannot be imported or
    ``BURN_NDARRAY_NUMBA=0``: NdArray then computes with NumPy alone."""
    if _loaded:
        return _loaded[0]
    with _lock:
        if not _loaded:
            module: ModuleType | None = None
            if os.environ.get("BURN_NDARRAY_NUMBA", "1") != "0":
                try:
                    from . import _threads

                    _threads.prepare_numba()  # numba sizes its pool from the environment, at import
                    from . import _kernels

                    module = _kernels
                except Exception as error:  # an ImportError, or numba failing to initialize
                    warnings.warn(
                        f"burn_ndarray: numba is unavailable ({error!r}); using NumPy alone", stacklevel=2
                    )
            _loaded.append(module)
    return _loaded[0]


def disable(reason: BaseException) -> None:
    """Stop using numba in this process, after a kernel failed to compile or run."""
    warnings.warn(
        f"burn_ndarray: a numba kernel failed ({reason!r}); using NumPy alone from now on", stacklevel=2
    )
    with _lock:
        _loaded[:] = [None]
