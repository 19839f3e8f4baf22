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
from ._format import SafetensorsError as SafetensorsError
from ._format import read_safetensors as read_safetensors
from ._format import read_safetensors_metadata as read_safetensors_metadata
from ._format import write_safetensors as write_safetensors

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
) -> LoadResult[M]:
    """Load a safetensors file into ``module`` by name (see ``burn_import.pytorch.load_pytorch``)."""
    return load_state_dict(
        module, read_safetensors(path), key_remap=key_remap, pytorch_adapter=adapter, strict=strict
    )


def save_safetensors(path: str | os.PathLike[str], module: Module, *, pytorch_layout: bool = True) -> Path:
    """Write ``module``'s parameters and running state to a safetensors file; with ``pytorch_layout``
    in PyTorch's names and layouts, so ``safetensors.torch.load_file`` feeds ``load_state_dict`` of the
    same PyTorch architecture."""
    return write_safetensors(path, export_state_dict(module, pytorch_layout=pytorch_layout))
