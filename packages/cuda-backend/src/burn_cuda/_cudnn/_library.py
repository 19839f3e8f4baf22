"""NVIDIA's cuDNN frontend (the ``nvidia-cudnn-frontend`` wheel, imported as ``cudnn``), loaded on first
use, and what every cuDNN graph of burn-cuda shares: one handle per device and thread bound to CuPy's
current stream, the dtypes cuDNN names, the TF32 setting and workspaces from CuPy's memory pool.

Nothing here imports the frontend at import time: ``import burn_cuda`` stays free of it, and a missing
or broken frontend only means the ops keep their own kernels.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import Any

import numpy as np

from burn_backend import DType

from .._cublas import FAST_TF32
from .._cupy import cp

Array = Any

LOG = logging.getLogger("burn_cuda.cudnn")
"""Where burn-cuda says, once per case, that cuDNN was not used (missing, or a case it refused)."""

ENVIRONMENT = "BURN_CUDA_CUDNN"
"""The environment variable that turns cuDNN off for backends built without ``cudnn=``: ``0``."""

TF32 = FAST_TF32
"""Whether f32 convolutions may use TF32 tensor cores: the backend's one setting for cuBLAS and cuDNN
(CuPy's ``CUPY_TF32=1``, read once at import)."""

_lock = threading.Lock()
_module: Any = None
_error: str | None = None
_local = threading.local()


def enabled_by_environment() -> bool:
    """Whether ``BURN_CUDA_CUDNN`` leaves cuDNN on (anything but ``0``, ``false``, ``off``, ``no``)."""
    return os.environ.get(ENVIRONMENT, "1").strip().lower() not in {"0", "false", "off", "no"}


def module() -> Any | None:
    """The ``cudnn`` module, or ``None`` where it cannot be imported (logged once, with the reason)."""
    global _module, _error
    if _module is not None or _error is not None:
        return _module
    with _lock:
        if _module is None and _error is None:
            try:
                _module = importlib.import_module("cudnn")
                _module.backend_version()  # the runtime library itself, not only the frontend
            except Exception as error:  # missing, or cuDNN's library unusable: keep our kernels
                _module = None
                _error = f"{type(error).__name__}: {error}"
                LOG.info(
                    "cuDNN is not used: the frontend cannot be loaded (%s); install it with "
                    "pip install 'burn-cuda[cudnn13]' (or cudnn12)",
                    _error,
                )
    return _module


def unavailable_reason() -> str | None:
    """Why cuDNN cannot be used here, or ``None`` where its frontend loads."""
    return None if module() is not None else f"the cuDNN frontend cannot be loaded ({_error})"


def handle() -> Any:
    """This thread's cuDNN handle on the current device, bound to CuPy's current stream (cuDNN forbids
    sharing a handle between threads; the frontend skips the rebinding when the stream is unchanged)."""
    cudnn: Any = module()
    device = cp.cuda.runtime.getDevice()
    handles: dict[int, Any] | None = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    found = handles.get(device)
    if found is None:
        found = handles[device] = cudnn.create_handle()
    cudnn.set_stream(found, cp.cuda.get_current_stream().ptr)
    return found


def data_type(dtype: np.dtype[Any]) -> Any | None:
    """cuDNN's name of ``dtype`` for the convolutions burn-cuda hands it (f32, f16, bf16), else ``None``:
    f64 and the rest keep burn-cuda's kernels."""
    cudnn: Any = module()
    if dtype == np.float32:
        return cudnn.data_type.FLOAT
    if dtype == np.float16:
        return cudnn.data_type.HALF
    if dtype == DType.BF16.numpy:
        return cudnn.data_type.BFLOAT16
    return None


def workspace(size: int) -> Array | None:
    """``size`` bytes from CuPy's memory pool for one execution (stream-ordered: the pool hands the
    block out again only to later work), or ``None`` for none."""
    return cp.empty(size, dtype=np.uint8) if size > 0 else None
