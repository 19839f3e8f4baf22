"""Backends and backend decorators (``NdArray``, ``Cuda``, ``Autodiff``, ``Fusion``, ``Router``), the
backend interfaces and the device functions.

Each name is imported from its own package on first use; a missing package raises
``ModuleNotFoundError`` naming the extra that installs it, e.g. ``pip install 'burn[cuda]'``.

Example:
    >>> from burn.backend import Autodiff, NdArray  # doctest: +SKIP
    >>> device = Autodiff(NdArray()).device()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from burn_backend import AutodiffBackend as AutodiffBackend
from burn_backend import Backend as Backend
from burn_backend import Device as Device
from burn_backend import default_device as default_device
from burn_backend import parse_device as parse_device
from burn_backend import set_default_device as set_default_device

from ._reexport import import_extra

# name -> (module providing it, extra of ``burn`` installing that module)
PROVIDERS: dict[str, tuple[str, str]] = {
    "NdArray": ("burn_ndarray", "ndarray"),
    "Cuda": ("burn_cuda", "cuda"),
    "Autodiff": ("burn_autodiff", "autodiff"),
    "Fusion": ("burn_fusion", "fusion"),
    "Router": ("burn_router", "router"),
}

__all__ = [
    *sorted(PROVIDERS),
    "Backend",
    "AutodiffBackend",
    "Device",
    "default_device",
    "parse_device",
    "set_default_device",
]


def __getattr__(name: str) -> Any:
    if name not in PROVIDERS:
        raise AttributeError(f"module 'burn.backend' has no attribute {name!r}")
    module_name, extra = PROVIDERS[name]
    value = getattr(import_extra(module_name, extra, f"burn.backend.{name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(PROVIDERS))
