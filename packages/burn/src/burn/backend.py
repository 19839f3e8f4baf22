"""Backends and backend decorators (``NdArray``, ``Cuda``, ``Autodiff``, ``Fusion``, ``Router``,
``Remote``), the backend interfaces and the device functions.

Each backend is imported from its own package on first use; a missing package raises
``ModuleNotFoundError`` naming the extra that installs it, e.g. ``pip install 'burn-py[cuda]'``.

Example:
    >>> from burn.backend import Autodiff, NdArray  # doctest: +SKIP
    >>> device = Autodiff(NdArray()).device()  # doctest: +SKIP
"""

from burn_backend import AutodiffBackend as AutodiffBackend
from burn_backend import Backend as Backend
from burn_backend import Device as Device
from burn_backend import default_device as default_device
from burn_backend import parse_device as parse_device
from burn_backend import set_default_device as set_default_device

from ._reexport import backend as __getattr__  # noqa: F401  (the backends, imported on first use)

# the backends are not defined here: __getattr__ imports each from its package on first use
__all__ = [
    "Autodiff",  # noqa: F822
    "Cuda",  # noqa: F822
    "Fusion",  # noqa: F822
    "NdArray",  # noqa: F822
    "Router",  # noqa: F822
    "Remote",  # noqa: F822
    "Backend",
    "AutodiffBackend",
    "Device",
    "default_device",
    "parse_device",
    "set_default_device",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
