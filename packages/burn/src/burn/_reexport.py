"""What the meta-package's namespaces share: the error naming a missing extra, and lazy attributes.

The namespaces themselves (``burn.nn``, ``burn.tensor.module``, ...) are plain modules made of
``from <package> import *`` and ``from <package> import __all__``, so that they hold their package's
public names and nothing else, and type checkers see those names. Everything they need besides that
lives here, out of their namespace.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, NoReturn

DISTRIBUTION = "burn-py"
"""The distribution name of the meta-package on the package index (its import name is ``burn``)."""

SUBMODULES = ("tensor", "backend", "nn", "optim", "record", "train", "data", "onnx")
"""The namespaces of ``burn``, loaded on first access."""

BACKEND_PROVIDERS: dict[str, tuple[str, str]] = {
    "NdArray": ("burn_ndarray", "ndarray"),
    "Cuda": ("burn_cuda", "cuda"),
    "Autodiff": ("burn_autodiff", "autodiff"),
    "Fusion": ("burn_fusion", "fusion"),
    "Router": ("burn_router", "router"),
    "Remote": ("burn_remote", "remote"),
}
"""The backends of ``burn.backend``: name -> (module providing it, extra of the meta-package installing
that module)."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` of the meta-package."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def raise_missing_extra(error: ModuleNotFoundError, module_name: str, extra: str, what: str) -> NoReturn:
    """Raise the error that importing ``module_name`` should give, after it failed with ``error``.

    Only the module or its package being absent means "install the extra": then the error raised names
    the distribution and the extra that installs it. A package that is present but fails to import one of
    its own dependencies raises its original error.

    Args:
        error: what importing ``module_name`` raised.
        module_name: the module that was imported, such as ``"burn_nn.optim"``.
        extra: the extra of the meta-package that installs it, such as ``"nn"``.
        what: the name the user reached for, used in the message, such as ``"burn.optim"``.

    Raises:
        ModuleNotFoundError: always.
    """
    missing = error.name or ""
    if missing != module_name and not module_name.startswith(missing + "."):
        raise error
    distribution = "burn-" + module_name.split(".")[0].removeprefix("burn_").replace("_", "-")
    replacement = ModuleNotFoundError(
        f"{what} needs the package providing '{module_name}' ({distribution}), which is not installed; "
        f"install it with: {install_hint(extra)}"
    )
    replacement.name = module_name
    raise replacement from error


def import_extra(module_name: str, extra: str, what: str) -> ModuleType:
    """Import ``module_name``; if its package is not installed, name the extra that installs it.

    Args:
        module_name: the module to import, such as ``"burn_nn.optim"``.
        extra: the extra of the meta-package that installs it, such as ``"nn"``.
        what: the name the user reached for, used in the error message.

    Returns:
        The imported module.

    Raises:
        ModuleNotFoundError: the package is missing; the message names ``pip install 'burn-py[extra]'``.
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise_missing_extra(error, module_name, extra, what)


def submodule(name: str) -> ModuleType:
    """``burn.<name>`` for a namespace of ``SUBMODULES``, imported on first access (``burn.__getattr__``).

    Raises:
        AttributeError: ``name`` is not a namespace of ``burn``.
    """
    if name in SUBMODULES:
        return importlib.import_module(f"burn.{name}")
    raise AttributeError(f"module 'burn' has no attribute {name!r}")


def backend(name: str) -> Any:
    """The backend class ``name`` of ``burn.backend``, imported from its package on first access and
    then kept in ``burn.backend`` (``burn.backend.__getattr__``).

    Raises:
        AttributeError: ``name`` is not a name of ``burn.backend``.
        ModuleNotFoundError: the backend's package is not installed; the message names its extra.
    """
    if name not in BACKEND_PROVIDERS:
        raise AttributeError(f"module 'burn.backend' has no attribute {name!r}")
    module_name, extra = BACKEND_PROVIDERS[name]
    value = getattr(import_extra(module_name, extra, f"burn.backend.{name}"), name)
    setattr(importlib.import_module("burn.backend"), name, value)
    return value
