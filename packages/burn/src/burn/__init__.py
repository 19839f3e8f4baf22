"""Burn for Python: one tensor API over composable backends.

``burn`` re-exports the installed packages: ``burn.tensor`` (also at the top level), ``burn.backend``,
``burn.nn``, ``burn.optim``, ``burn.record``, ``burn.train``, ``burn.data`` and ``burn.onnx``. The
submodules load on first access; one whose package is missing raises ``ModuleNotFoundError`` naming the
extra to install.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import tensor as tensor
from ._version import __version__ as __version__
from .tensor import *  # noqa: F403  (the tensor API, re-exported by name in burn.tensor.__all__)

SUBMODULES = ("backend", "nn", "optim", "record", "train", "data", "onnx")


def __getattr__(name: str) -> Any:
    if name in SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'burn' has no attribute {name!r}")
