"""Burn's ``PyTorchFileRecorder`` and ``SafetensorsFileRecorder`` with their ``LoadArgs``: recorders that
read another framework's weights file into a record that ``Module.load_record`` (or ``load_file``) takes.

Burn's Rust record types tell its recorders each entry's layout; a Python record is untyped, so pass
the module to ``load(..., module=...)`` to have PyTorch's layouts adapted to it (``Linear`` weights
transposed, norm names, recurrent gates, fused attention). Without a module the record holds the file's
entries as they are, nested by their dotted names (a convolution's weights need no adapting).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from burn_backend import Device, TensorData
from burn_nn import Module

from ._adapt import KeyRemap, LoadError, apply_remap, match_state, pick_top_level

if TYPE_CHECKING:
    from .pytorch import ReadLimits

__all__ = ["LoadArgs", "PyTorchFileRecorder", "SafetensorsFileRecorder"]

_DOLLAR_GROUP = re.compile(r"\$(\d+)|\$\{(\d+)\}")


def _python_replacement(replacement: str) -> str:
    r"""Burn's (Rust ``regex``) replacement syntax, ``$1`` and ``${1}``, as Python's ``\g<1>``."""
    return _DOLLAR_GROUP.sub(lambda m: rf"\g<{m.group(1) or m.group(2)}>", replacement)


class LoadArgs:
    """What to load and how (Burn's ``LoadArgs``): the file, key remapping rules, the top-level key and
    whether to print the keys read.

    Example:
        >>> args = LoadArgs("model.pt").with_key_remap(r"conv\\.(.*)", "$1").with_top_level_key("state_dict")
    """

    def __init__(
        self,
        file: str | os.PathLike[str],
        *,
        key_remap: KeyRemap = (),
        top_level_key: str | None = None,
        debug: bool = False,
        adapter_type: str = "pytorch",
    ) -> None:
        if adapter_type not in ("pytorch", "none"):
            raise ValueError(f"LoadArgs: adapter_type must be 'pytorch' or 'none', got {adapter_type!r}")
        self.file = Path(file)
        self.key_remap: list[tuple[str, str]] = [(p, _python_replacement(r)) for p, r in key_remap]
        self.top_level_key = top_level_key
        self.debug = debug
        self.adapter_type = adapter_type

    def _with(self, **changes: Any) -> LoadArgs:
        settings: dict[str, Any] = {
            "key_remap": self.key_remap,
            "top_level_key": self.top_level_key,
            "debug": self.debug,
            "adapter_type": self.adapter_type,
        }
        settings.update(changes)
        return LoadArgs(self.file, **settings)

    def with_key_remap(self, pattern: str, replacement: str) -> LoadArgs:
        """A copy with one more remapping rule: ``re.sub(pattern, replacement, key)`` on every key, in
        the order the rules were added; ``replacement`` may use Burn's ``$1`` or Python's ``\\1``."""
        return self._with(key_remap=[*self.key_remap, (pattern, replacement)])

    def with_top_level_key(self, key: str) -> LoadArgs:
        """A copy reading the state dict under ``key`` of the saved object (``"state_dict"``)."""
        return self._with(top_level_key=key)

    def with_debug_print(self) -> LoadArgs:
        """A copy that prints every key read (after remapping) with its dtype and shape."""
        return self._with(debug=True)

    def with_adapter_type(self, adapter_type: str) -> LoadArgs:
        """A copy with another adapter (Burn's ``AdapterType``): ``"pytorch"`` (the default: PyTorch's
        layouts adapted to the module given to ``load``) or ``"none"`` (entries taken as they are, for
        files already in Burn's layout)."""
        return self._with(adapter_type=adapter_type)

    def __repr__(self) -> str:
        return (
            f"LoadArgs({str(self.file)!r}, key_remap={self.key_remap}, "
            f"top_level_key={self.top_level_key!r}, debug={self.debug}, adapter_type={self.adapter_type!r})"
        )


class _ForeignFileRecorder:
    """What both recorders share: read a state dict, remap, adapt, and nest it as a record."""

    _format = ""

    def __init__(self, settings: Any = None) -> None:
        """Args:
        settings: burn-record's precision settings (``FullPrecisionSettings()``): float entries are
            converted to its ``float_dtype`` and signed int entries to its ``int_dtype``; ``None``
            keeps the file's dtypes. ``load_record`` converts to the module's dtypes in any case.
        """
        self.settings = settings

    def _read(self, path: Path) -> Any:
        raise NotImplementedError

    def load(
        self,
        args: LoadArgs | str | os.PathLike[str],
        device: Device | None = None,
        *,
        module: Module | None = None,
    ) -> dict[str, Any]:
        """The file's weights as a record for ``Module.load_record``.

        Args:
            args: a ``LoadArgs`` or the file's path.
            device: accepted for Burn's signature; records hold no device (``load_record`` puts the
                values on the module's device).
            module: the module the record is for: PyTorch's layouts are adapted to it (unless
                ``args`` says ``with_adapter_type("none")``) and entries it has no place for are
                left out (``LoadError`` on shape mismatches). Without it, the file's entries are
                nested by name as they are.

        Raises:
            LoadError: with ``module``, entries whose shapes do not fit it (all of them named).
        """
        del device
        args = args if isinstance(args, LoadArgs) else LoadArgs(args)
        state = apply_remap(pick_top_level(self._read(args.file), args.top_level_key), args.key_remap)
        if args.debug:
            for key, value in state.items():
                print(f"{key}: {np.dtype(value.dtype)} {list(value.shape)}")
        if module is None:
            flat = {key: np.asarray(_numpy(value)) for key, value in state.items()}
            return _nest({key: self._data(value) for key, value in flat.items()}, None)
        pytorch = args.adapter_type == "pytorch"
        match = match_state(module, state, pytorch_adapter=pytorch)
        if match.mismatched:
            listed = "\n  ".join(match.mismatched)
            raise LoadError(f"{self._format}: the weights do not fit the module:\n  {listed}")
        return _nest({path: self._data(value) for path, value in match.values.items()}, module)

    def _data(self, array: np.ndarray[Any, Any]) -> TensorData:
        settings = self.settings
        if settings is not None:
            if array.dtype.kind == "f" or array.dtype.name == "bfloat16":
                return TensorData(array, dtype=settings.float_dtype)
            if array.dtype.kind == "i":
                return TensorData(array, dtype=settings.int_dtype)
        return TensorData(array)

    def save(self, record: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
        """Not a format this recorder writes (as Burn's)."""
        raise NotImplementedError(f"{type(self).__name__} only loads; save with burn_record's recorders")

    def to_bytes(self, record: Mapping[str, Any]) -> bytes:
        """Not supported: this recorder reads files."""
        raise NotImplementedError(f"{type(self).__name__} reads files only")

    def from_bytes(self, data: bytes) -> dict[str, Any]:
        """Not supported: this recorder reads files."""
        raise NotImplementedError(f"{type(self).__name__} reads files only")


def _numpy(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value


def _nest(flat: Mapping[str, TensorData], module: Module | None) -> dict[str, Any]:
    """Dotted paths as a nested record: a dict per level, a list where the module has one (without a
    module: where a level's keys are exactly ``0..n-1``)."""
    root: dict[str, Any] = {}
    for path, data in flat.items():
        node = root
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = data
    return _listify(root, module)  # type: ignore[no-any-return]


def _listify(node: Any, value: Any) -> Any:
    if not isinstance(node, dict):
        return node
    children = {
        key: _listify(item, _field(value, key) if value is not None else None) for key, item in node.items()
    }
    indices = sorted(int(key) for key in children if key.isdigit())
    as_list = isinstance(value, (list, tuple)) if value is not None else indices == list(range(len(children)))
    if as_list and indices == list(range(len(children))) and children:
        return [children[str(i)] for i in indices]
    return children


def _field(value: Any, key: str) -> Any:
    try:
        if isinstance(value, (list, tuple)):
            return value[int(key)]
        if isinstance(value, dict):
            return value.get(key)
        return getattr(value, key, None)
    except (ValueError, IndexError):
        return None


class PyTorchFileRecorder(_ForeignFileRecorder):
    """Reads PyTorch ``.pt``/``.pth`` files (Burn's ``PyTorchFileRecorder``): no torch import, nothing
    executed (see ``burn_import.pytorch.read_pytorch``).

    Example:
        >>> record = PyTorchFileRecorder(FullPrecisionSettings()).load("conv2d.pt", device)
        >>> model = Net(device).load_record(record)
    """

    _format = "PyTorchFileRecorder"

    def __init__(self, settings: Any = None, *, limits: ReadLimits | None = None) -> None:
        """Args:
        settings: burn-record's precision settings (see ``_ForeignFileRecorder``); ``None`` keeps the
            file's dtypes.
        limits: the sizes the file may declare (``burn_import.pytorch.ReadLimits()`` by default).
        """
        super().__init__(settings)
        self.limits = limits

    def _read(self, path: Path) -> Any:
        from .pytorch import read_pytorch

        return read_pytorch(path, limits=self.limits)


class SafetensorsFileRecorder(_ForeignFileRecorder):
    """Reads safetensors files (Burn's ``SafetensorsFileRecorder``), memory-mapped; PyTorch's layouts
    are adapted as by ``PyTorchFileRecorder``.

    Example:
        >>> record = SafetensorsFileRecorder().load(LoadArgs("model.safetensors"), device, module=net)
        >>> net = net.load_record(record)
    """

    _format = "SafetensorsFileRecorder"

    def __init__(self, settings: Any = None, *, max_header_bytes: int | None = None) -> None:
        """Args:
        settings: burn-record's precision settings (see ``_ForeignFileRecorder``); ``None`` keeps the
            file's dtypes.
        max_header_bytes: the largest header accepted (by default the reference package's
            100,000,000 bytes).
        """
        super().__init__(settings)
        self.max_header_bytes = max_header_bytes

    def _read(self, path: Path) -> Any:
        from .safetensors import read_safetensors

        if self.max_header_bytes is None:
            return read_safetensors(path)
        return read_safetensors(path, max_header_bytes=self.max_header_bytes)
