"""The one mechanism behind the meta-package's modules: re-export a package's public names."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


def _missing(what: str, module_name: str, extra: str) -> ModuleNotFoundError:
    distribution = "burn-" + module_name.split(".")[0].removeprefix("burn_").replace("_", "-")
    error = ModuleNotFoundError(
        f"{what} needs the package providing '{module_name}' ({distribution}), which is not installed; "
        f"install it with: pip install 'burn[{extra}]'"
    )
    error.name = module_name
    return error


def import_extra(module_name: str, extra: str, what: str) -> ModuleType:
    """Import ``module_name``; if its package is not installed, name the extra that installs it.

    Args:
        module_name: the module to import, such as ``"burn_nn.optim"``.
        extra: the extra of the ``burn`` distribution that installs it, such as ``"nn"``.
        what: the name the user reached for, used in the error message.

    Returns:
        The imported module.

    Raises:
        ModuleNotFoundError: the package is missing; the message names ``pip install 'burn[extra]'``.
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        # Only the module or its package being absent means "install the extra"; a package that is
        # present but fails to import one of its own dependencies keeps its original error.
        missing = error.name or ""
        if missing != module_name and not module_name.startswith(missing + "."):
            raise
        raise _missing(what, module_name, extra) from error


def copy_public(namespace: dict[str, Any], module: ModuleType) -> None:
    """Copy the public names of ``module`` (its ``__all__``) into ``namespace`` and its ``__all__``."""
    names = list(getattr(module, "__all__", ()))
    for name in names:
        namespace[name] = getattr(module, name)
    namespace["__all__"] = names


def reexport(namespace: dict[str, Any], module_name: str, extra: str) -> None:
    """Make ``namespace`` (a module's ``globals()``) re-export the public names of ``module_name``.

    Raises:
        ModuleNotFoundError: the package is missing; the message names the extra to install.
    """
    copy_public(namespace, import_extra(module_name, extra, namespace["__name__"]))
