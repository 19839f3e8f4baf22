"""PyTorch ``.pt``/``.pth`` weights, read without PyTorch and without executing the file's pickle.

``read_pytorch`` gives the saved object with lazily read (memory-mapped) tensors; ``load_pytorch``
loads a file's state dict into a module by name, with ``top_level_key``, regular-expression key
remapping, PyTorch layout adapters and the list of missing and unused entries.
"""

from __future__ import annotations

import os
from typing import TypeVar

from burn_nn import Module

from .._adapt import KeyRemap, LoadError, LoadResult, load_state_dict
from .._recorder import LoadArgs as LoadArgs
from .._recorder import PyTorchFileRecorder as PyTorchFileRecorder
from ._lazy import LazyArray as LazyArray
from ._lazy import PyTorchReadError as PyTorchReadError
from ._limits import ReadLimits as ReadLimits
from ._reader import read_pytorch as read_pytorch

__all__ = [
    "LazyArray",
    "LoadArgs",
    "LoadError",
    "LoadResult",
    "PyTorchFileRecorder",
    "PyTorchReadError",
    "ReadLimits",
    "load_pytorch",
    "read_pytorch",
]

M = TypeVar("M", bound=Module)


def load_pytorch(
    path: str | os.PathLike[str],
    module: M,
    *,
    top_level_key: str | None = None,
    key_remap: KeyRemap = (),
    strict: bool = False,
    adapter: bool = True,
    limits: ReadLimits | None = None,
) -> LoadResult[M]:
    """Load a PyTorch file's weights into ``module`` (as Burn's ``PyTorchFileRecorder``).

    Args:
        path: the ``.pt``/``.pth`` file.
        module: the module to fill (a copy is returned).
        top_level_key: where the state dict lives in the saved object (``"state_dict"``).
        key_remap: ``(pattern, replacement)`` rules, e.g. ``[(r"^conv\\.(\\d+)", r"convs.\\1")]``.
        strict: raise on missing or unused entries (shape mismatches always raise).
        adapter: translate PyTorch's layouts (Linear transposes, norm names, RNN gates, attention).
        limits: the sizes the file may declare (``ReadLimits()`` by default).

    Raises:
        PyTorchReadError: the file is damaged, refused or over a limit (see ``read_pytorch``).
        LoadError: shapes that do not fit; with ``strict``, missing or unused entries.

    Example:
        >>> result = load_pytorch("model.pt", NetConfig().init(device), key_remap=[(r"^fc", "head")])
        >>> model, result.missing, result.unused  # doctest: +SKIP
    """
    state = read_pytorch(path, limits=limits)
    return load_state_dict(
        module,
        state,
        key_remap=key_remap,
        top_level_key=top_level_key,
        pytorch_adapter=adapter,
        strict=strict,
    )
