"""Reading PyTorch ``.pt``/``.pth`` files without PyTorch and without running anything they contain.

The pickle inside is read by a restricted unpickler: it resolves only the globals a state dict needs
(``collections.OrderedDict``, PyTorch's tensor and parameter rebuild functions and storage types, a few
builtins), each mapped to a stand-in of ours; any other global is refused with its name before
anything is called. Tensor data is not read while unpickling: each tensor is a ``LazyArray`` over its
storage, which is memory-mapped from the file where the format allows (the zip format stores it
uncompressed), so loading a large file does not hold it twice.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["LazyArray", "PyTorchReadError", "read_pytorch"]

_STORAGE_DTYPES: dict[str, np.dtype[Any]] = {
    "FloatStorage": np.dtype(np.float32),
    "DoubleStorage": np.dtype(np.float64),
    "HalfStorage": np.dtype(np.float16),
    "BFloat16Storage": np.dtype(ml_dtypes.bfloat16),
    "LongStorage": np.dtype(np.int64),
    "IntStorage": np.dtype(np.int32),
    "ShortStorage": np.dtype(np.int16),
    "CharStorage": np.dtype(np.int8),
    "ByteStorage": np.dtype(np.uint8),
    "BoolStorage": np.dtype(np.bool_),
}
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_SAFE_BUILTINS = {"set", "frozenset", "tuple", "list", "dict", "slice", "int", "float", "bool", "complex"}


class PyTorchReadError(ValueError):
    """A file is not a PyTorch file this reader understands, or holds something it refuses to build
    (the message names the refused global)."""


class _Storage:
    """A storage: its dtype and, once known, where its bytes are."""

    def __init__(self, dtype: np.dtype[Any], key: str, numel: int | None) -> None:
        self.dtype = dtype
        self.key = key
        self.numel = numel
        self.array: np.ndarray[Any, Any] | None = None

    def data(self) -> np.ndarray[Any, Any]:
        if self.array is None:
            raise PyTorchReadError(f"storage {self.key!r} has no data in the file")
        return self.array


class LazyArray:
    """A tensor of a PyTorch file, read when ``numpy()`` is called (a view of the memory-mapped
    storage, copied only when not contiguous)."""

    __slots__ = ("offset", "shape", "storage", "stride")

    def __init__(
        self, storage: _Storage, offset: int, shape: tuple[int, ...], stride: tuple[int, ...]
    ) -> None:
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.stride = stride

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of the values."""
        return self.storage.dtype

    def numpy(self) -> np.ndarray[Any, Any]:
        """The values (read-only when they map the file)."""
        flat = self.storage.data()
        count = int(np.prod(self.shape)) if self.shape else 1
        if count == 0:
            return np.zeros(self.shape, dtype=self.dtype)
        size = self.dtype.itemsize
        contiguous = _contiguous_strides(self.shape)
        if tuple(self.stride) == contiguous:
            return flat[self.offset : self.offset + count].reshape(self.shape)
        view = np.lib.stride_tricks.as_strided(
            flat[self.offset :], shape=self.shape, strides=[s * size for s in self.stride], writeable=False
        )
        return np.array(view)

    def __repr__(self) -> str:
        return f"LazyArray(shape={list(self.shape)}, dtype={self.dtype})"


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


# -- stand-ins for the globals a state dict refers to ---------------------------------------------
def _rebuild_tensor_v2(storage: Any, offset: int, size: Any, stride: Any, *args: Any) -> LazyArray:
    if not isinstance(storage, _Storage):
        raise PyTorchReadError(f"a tensor refers to {type(storage).__name__}, not a storage")
    return LazyArray(storage, int(offset), tuple(int(s) for s in size), tuple(int(s) for s in stride))


def _rebuild_parameter(data: Any, *args: Any) -> Any:
    return data


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    if func not in (_rebuild_tensor_v2, _rebuild_parameter):
        raise PyTorchReadError("_rebuild_from_type_v2 with a function other than a tensor rebuild")
    return func(*args)


class _StorageType:
    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]


class _Marker:
    """A class the pickle names but whose construction is never needed (``torch.nn.Parameter``)."""

    def __init__(self, name: str) -> None:
        self.name = name


_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch.nn.parameter", "Parameter"): _Marker("torch.nn.Parameter"),
    ("torch", "Tensor"): _Marker("torch.Tensor"),
}


class _Unpickler(pickle.Unpickler):
    """An unpickler that builds only what ``_ALLOWED`` lists and resolves storages by key."""

    def __init__(self, file: Any, storages: dict[str, _Storage]) -> None:
        super().__init__(file)
        self.storages = storages

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        if module in ("builtins", "__builtin__") and name in _SAFE_BUILTINS:
            return getattr(__import__("builtins"), name)
        raise PyTorchReadError(
            f"refused to load global '{module}.{name}': a PyTorch weights file needs only tensors, "
            "storages, OrderedDicts, containers and numbers (nothing was executed)"
        )

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise PyTorchReadError(f"unknown persistent id {pid!r}")
        storage_type, key = pid[1], str(pid[2])
        numel = int(pid[4]) if len(pid) > 4 else None
        if not isinstance(storage_type, _StorageType):
            raise PyTorchReadError(f"storage of unsupported type {storage_type!r}")
        if key not in self.storages:
            self.storages[key] = _Storage(storage_type.dtype, key, numel)
        return self.storages[key]


def read_pytorch(path: str | os.PathLike[str], *, mmap: bool = True) -> Any:
    """The object saved in a PyTorch file (usually a state dict), with ``LazyArray`` tensors.

    Args:
        path: a ``.pt``/``.pth`` file written by ``torch.save`` (the zip format of PyTorch >= 1.6, or
            the legacy format before it).
        mmap: map storages from the file rather than reading them (zip format, uncompressed entries).

    Raises:
        PyTorchReadError: the file is not a PyTorch file, or its pickle names a global outside the
            allowed set (nothing is executed in that case).
    """
    path = Path(path)
    if zipfile.is_zipfile(path):
        return _read_zip(path, mmap)
    return _read_legacy(path)


def _read_zip(path: Path, mmap: bool) -> Any:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("data.pkl")]
        if not pickles:
            raise PyTorchReadError(f"{path}: a zip file without data.pkl is not a PyTorch file")
        prefix = pickles[0][: -len("data.pkl")]
        storages: dict[str, _Storage] = {}
        obj = _Unpickler(io.BytesIO(archive.read(pickles[0])), storages).load()
        for key, storage in storages.items():
            info = archive.getinfo(f"{prefix}data/{key}")
            if mmap and info.compress_type == zipfile.ZIP_STORED and info.file_size:
                offset = _data_offset(path, info)
                count = info.file_size // storage.dtype.itemsize
                storage.array = np.memmap(path, dtype=storage.dtype, mode="r", offset=offset, shape=(count,))
            else:
                storage.array = np.frombuffer(archive.read(info), dtype=storage.dtype)
    return obj


def _data_offset(path: Path, info: zipfile.ZipInfo) -> int:
    """Where a stored zip member's bytes start (after its local header)."""
    with open(path, "rb") as file:
        file.seek(info.header_offset)
        header = file.read(30)
        if header[:4] != b"PK\x03\x04":
            raise PyTorchReadError(f"{path}: damaged zip entry {info.filename!r}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        return int(info.header_offset + 30 + name_len + extra_len)


def _read_legacy(path: Path) -> Any:
    with open(path, "rb") as file:
        storages: dict[str, _Storage] = {}
        try:
            magic = _Unpickler(file, storages).load()
        except (pickle.UnpicklingError, EOFError) as error:
            raise PyTorchReadError(f"{path}: not a PyTorch file ({error})") from None
        if magic != _LEGACY_MAGIC:
            raise PyTorchReadError(f"{path}: not a PyTorch file (no zip archive, no legacy magic number)")
        _Unpickler(file, storages).load()  # protocol version
        _Unpickler(file, storages).load()  # system info
        obj = _Unpickler(file, storages).load()
        keys = _Unpickler(file, storages).load()
        for key in keys:
            storage = storages[str(key)]
            (count,) = struct.unpack("<q", file.read(8))
            offset = file.tell()
            storage.array = np.memmap(path, dtype=storage.dtype, mode="r", offset=offset, shape=(count,))
            file.seek(offset + count * storage.dtype.itemsize)
    return obj
