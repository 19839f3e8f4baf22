"""CuPy, imported on first use: ``import burn_cuda`` works without CuPy or a GPU.

The op modules use ``cp`` as if it were the ``cupy`` module. It loads CuPy the first time one of its
attributes is read, then holds CuPy's attributes as its own, so later reads cost a plain attribute
lookup. No op runs before a device exists, and a device exists only where CuPy found a GPU.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from typing import Any

_lock = threading.Lock()
_module: Any = None
_error: str | None = None


def load() -> Any:
    """The ``cupy`` module.

    Raises:
        RuntimeError: CuPy is not installed or cannot be imported, with the reason.
    """
    global _module, _error
    if _module is not None:
        return _module
    with _lock:
        if _module is None and _error is None:
            try:
                # CuPy warns at import about its environment (no CUDA_PATH with the pip CUDA wheels, say):
                # where warnings are errors that would read as "no CuPy"; real failures still raise
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module = importlib.import_module("cupy")
                    importlib.import_module("cupy.lib.stride_tricks")
            except Exception as error:  # missing, or its CUDA libraries unusable: report, never crash
                _error = f"CuPy cannot be imported ({type(error).__name__}: {error})"
            else:
                _module = module
        if _module is None:
            raise RuntimeError(
                f"cuda: {_error}; install the CuPy build of your CUDA toolkit: "
                "pip install 'burn-cuda[cuda13]' (or 'burn-cuda[cuda12]')"
            )
        return _module


def unavailable_reason() -> str | None:
    """Why no GPU can be used, or ``None`` where CuPy sees at least one."""
    try:
        cupy = load()
    except RuntimeError as error:
        return str(error)
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as error:  # no driver, no device: CuPy raises CUDARuntimeError
        return f"cuda: CuPy found no usable GPU ({type(error).__name__}: {error})"
    return None if count > 0 else "cuda: CuPy found no GPU (0 CUDA devices)"


class _LazyCupy:
    """A stand-in for the ``cupy`` module that imports it on first attribute access."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # probes such as abc's __isabstractmethod__ must not import CuPy
            raise AttributeError(name)
        module = load()
        # copy every attribute over: later reads find them in the instance dict, not through here
        vars(self).update(vars(module))
        return getattr(module, name)


cp: Any = _LazyCupy()
"""The ``cupy`` module, imported on first use."""


def contiguous(array: Any) -> Any:
    """``array`` itself when C-contiguous (without the cost of a call into CuPy), else a contiguous
    copy: what a kernel that indexes its operands flat takes."""
    return array if array._c_contiguous else cp.ascontiguousarray(array)
