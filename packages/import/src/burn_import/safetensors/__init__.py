"""safetensors files, read (memory-mapped) and written without dependencies, and loaded into modules
with the same remapping and PyTorch adapters as ``burn_import.pytorch``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from burn_nn import Module

from .._adapt import KeyRemap, LoadResult, export_state_dict, load_state_dict
from .._recorder import LoadArgs as LoadArgs
from .._recorder import SafetensorsFileRecorder as SafetensorsFileRecorder
from ._format import read_safetensors as read_safetensors
from ._format import read_safetensors_metadata as read_safetensors_metadata
from ._format import write_safetensors as write_safetensors
from ._header import DEFAULT_MAX_HEADER_BYTES
from ._header import SafetensorsError as SafetensorsError

__all__ = [
    "LoadArgs",
    "SafetensorsError",
    "SafetensorsFileRecorder",
    "load_safetensors",
    "read_safetensors",
    "read_safetensors_metadata",
    "save_safetensors",
    "write_safetensors",
]

M = TypeVar("M", bound=Module)


def load_safetensors(
    path: str | os.PathLike[str],
    module: M,
    *,
    key_remap: KeyRemap = (),
    strict: bool = False,
    adapter: bool = True,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
) -> LoadResult[M]:
    """Load a safetensors file into ``module`` by name (see ``burn_import.pytorch.load_pytorch``).

    Args:
        path: the file.
        module: the module to fill (a copy is returned).
        key_remap: ``(pattern, replacement)`` regular-expression rules applied to every key, in order.
        strict: raise on missing or unused entries (shape mismatches always raise).
        adapter: translate PyTorch's layouts (Linear transposes, norm names, RNN gates, attention).
        max_header_bytes: the largest header accepted (the reference package's 100,000,000 bytes).

    Returns:
        The new module and the ``loaded``, ``missing``, ``unused`` and ``ignored`` lists.

    Raises:
        SafetensorsError: the file is malformed (see ``read_safetensors``).
        LoadError: shapes that do not fit; with ``strict``, missing or unused entries.

    Example:
        >>> net = load_safetensors("net.safetensors", Net(device), strict=True).module  # doctest: +SKIP
    """
    state = read_safetensors(path, max_header_bytes=max_header_bytes)
    return load_state_dict(module, state, key_remap=key_remap, pytorch_adapter=adapter, strict=strict)


def save_safetensors(path: str | os.PathLike[str], module: Module, *, pytorch_layout: bool = True) -> Path:
    """Write ``module``'s parameters and running state to a safetensors file; with ``pytorch_layout``
    in PyTorch's names and layouts, so ``safetensors.torch.load_file`` feeds ``load_state_dict`` of the
    same PyTorch architecture."""
    return write_safetensors(path, export_state_dict(module, pytorch_layout=pytorch_layout))
