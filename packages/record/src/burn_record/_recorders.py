"""The recorders: file formats with precision settings, to files or to bytes (Burn's recorders)."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from burn_backend import Device

from ._atomic import atomic_write, remove_stale_temporaries
from ._errors import RecordFileError, RecordLimits
from ._format import Format
from ._json import decode_json, encode_json
from ._precision import FullPrecisionSettings, HalfPrecisionSettings, PrecisionSettings
from ._read import read_binary_bytes, read_binary_file
from ._write import write_binary

__all__ = [
    "BinBytesRecorder",
    "BinFileRecorder",
    "BytesRecorder",
    "CompactRecorder",
    "DefaultFileRecorder",
    "DefaultRecorder",
    "FileRecorder",
    "NamedMpkBytesRecorder",
    "NamedMpkFileRecorder",
    "NamedMpkZstBytesRecorder",
    "NamedMpkZstFileRecorder",
    "PrettyJsonFileRecorder",
]


def _settings(
    value: PrecisionSettings | type[PrecisionSettings] | None, default: type[PrecisionSettings]
) -> Any:
    if value is None:
        return default()
    if isinstance(value, type) and issubclass(value, PrecisionSettings):
        return value()
    if not isinstance(value, PrecisionSettings):
        raise TypeError(
            f"expected precision settings (FullPrecisionSettings(), ...), got {type(value).__name__}"
        )
    return value


def _check_device(device: object, where: str) -> None:
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"{where}: device must be a Device or None, got {type(device).__name__}")


def _as_bytes(data: object, where: str) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)  # one copy: loaded tensors must not change when the caller's buffer does
    raise TypeError(f"{where}: expected bytes, got {type(data).__name__}")


class FileRecorder:
    """The base of the file recorders: one file format with its precision settings (Burn's
    ``FileRecorder``). Every file recorder is a backend-core ``Recorder``, the kind ``Module.save_file``
    and ``Module.load_file`` take.

    ``save`` writes atomically and durably (a temporary file beside the target, ``fsync``, rename), and
    adds the format's extension to a path that lacks it (``"model"`` becomes ``"model.mpk"``). ``load``
    checks the whole file before returning anything and raises ``RecordFileError`` for anything that is
    not a whole, undamaged record of the recorder's format; it converts the tensors to the recorder's
    precision settings (a file saved with other settings loads too). ``to_bytes`` and ``from_bytes``
    do the same in memory.

    Args:
        settings: the precision tensors are stored and loaded in (an instance or the class);
            ``FullPrecisionSettings`` by default.
        limits: what loading accepts (``RecordLimits()`` by default).
        memory_map: whether uncompressed files are loaded as views of the memory-mapped file (no copy;
            the default) rather than read into memory. A mapped file must not be truncated or rewritten
            in place while its tensors are in use (saving over it with a recorder is safe: that
            replaces the file).
        durable: whether ``save`` waits for the disk (``fsync`` of the file and its folder; the
            default). Without it a save is still atomic against the process dying (the temporary file
            is renamed over the target), but a power loss soon after may lose it.

    Example:
        >>> recorder = NamedMpkFileRecorder(FullPrecisionSettings())
        >>> written = recorder.save({"weight": TensorData([[1.0, 2.0]])}, "artifacts/model")
        >>> written.name
        'model.mpk'
        >>> recorder.load("artifacts/model")["weight"].shape
        Shape([1, 2])
    """

    file_extension: ClassVar[str] = ""
    """The extension ``save`` adds: ``"mpk"``, ``"mpk.zst"``, ``"bin"``, ``"json"``."""
    _default_settings: ClassVar[type[PrecisionSettings]] = FullPrecisionSettings

    def __init__(
        self,
        settings: PrecisionSettings | type[PrecisionSettings] | None = None,
        *,
        limits: RecordLimits | None = None,
        memory_map: bool = True,
        durable: bool = True,
    ) -> None:
        self._precision: PrecisionSettings = _settings(settings, self._default_settings)
        self._limits = limits if limits is not None else RecordLimits()
        if not isinstance(self._limits, RecordLimits):
            raise TypeError(
                f"{type(self).__name__}: limits must be RecordLimits, got {type(limits).__name__}"
            )
        self._memory_map = bool(memory_map)
        self._durable = bool(durable)

    @property
    def settings(self) -> PrecisionSettings:
        """The precision settings."""
        return self._precision

    @property
    def limits(self) -> RecordLimits:
        """What loading accepts."""
        return self._limits

    def path_for(self, path: str | os.PathLike[str]) -> Path:
        """``path`` with this format's extension added unless it ends with it already.

        Example:
            >>> NamedMpkZstFileRecorder().path_for("model"), NamedMpkFileRecorder().path_for("m.mpk")
            (PosixPath('model.mpk.zst'), PosixPath('m.mpk'))
        """
        path = Path(path)
        suffix = "." + self.file_extension
        return path if path.name.endswith(suffix) else path.with_name(path.name + suffix)

    def save(self, record: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
        """Write ``record`` to ``path`` (extension added), atomically.

        Args:
            record: a dict with str keys of dicts, lists, tensors (``TensorData``, ``ParamRecord``,
                ``Tensor``, NumPy arrays), numbers, strings, bytes, booleans and ``None``.
            path: where to write; the folder must exist.

        Returns:
            The path written.

        Raises:
            TypeError: the record holds a value no record holds (named by its path).
            PrecisionError: a tensor value does not fit the precision (named by its path).
            OSError: the file cannot be written. In every case the file at ``path`` is left as it was.

        Example:
            >>> NamedMpkFileRecorder().save({"step": 3, "w": TensorData([1.0, 2.0])}, "state")
            PosixPath('state.mpk')
        """
        target = self.path_for(path)
        with atomic_write(target, self._durable) as file:
            self._write(file, record)
        return target

    def load(self, path: str | os.PathLike[str], device: Device | None = None) -> dict[str, Any]:
        """The record saved at ``path`` (the path given to ``save``, or the file itself).

        Args:
            path: the file, with or without the format's extension.
            device: accepted for Burn's spelling (``recorder.load(path, device)``); records hold host
                data, so the module the record is loaded into decides the device.

        Returns:
            The record: dicts, lists, ``TensorData`` and ``ParamRecord`` (in this recorder's precision),
            numbers, strings, bytes, booleans and ``None``.

        Raises:
            OSError: the file cannot be read (``FileNotFoundError`` names the path tried).
            RecordFileError: the file is not a whole, undamaged record of this format within the limits.

        Example:
            >>> NamedMpkFileRecorder().load("state")["step"]
            3
        """
        _check_device(device, f"{type(self).__name__}.load")
        target = self.path_for(path)
        if not target.exists() and Path(path).is_file():
            target = Path(path)
        remove_stale_temporaries(target.parent)
        return self._read_file(target)

    def to_bytes(self, record: Mapping[str, Any]) -> bytes:
        """``record`` encoded as ``save`` would write it.

        Raises:
            TypeError, PrecisionError: as ``save``.

        Example:
            >>> data = NamedMpkZstFileRecorder().to_bytes(model.into_record())
        """
        out = io.BytesIO()
        self._write(out, record)
        return out.getvalue()

    def from_bytes(self, data: bytes) -> dict[str, Any]:
        """The record encoded in ``data`` (by ``to_bytes``, or read from a file ``save`` wrote).

        Raises:
            RecordFileError: as ``load``.

        Example:
            >>> record = NamedMpkZstFileRecorder().from_bytes(data)
        """
        return self._read_bytes(_as_bytes(data, f"{type(self).__name__}.from_bytes"))

    def _write(self, out: Any, record: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def _read_file(self, path: Path) -> dict[str, Any]:
        raise NotImplementedError

    def _read_bytes(self, data: bytes) -> dict[str, Any]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._precision!r})"


class _MpkRecorder(FileRecorder):
    """A recorder of the msgpack container."""

    _format: ClassVar[Format]

    def _write(self, out: Any, record: Mapping[str, Any]) -> None:
        write_binary(out, record, self._format, self._precision, self._limits.max_depth)

    def _read_file(self, path: Path) -> dict[str, Any]:
        return read_binary_file(path, self._format, self._precision, self._limits, self._memory_map)

    def _read_bytes(self, data: bytes) -> dict[str, Any]:
        return read_binary_bytes(data, self._format, self._precision, self._limits)


class NamedMpkFileRecorder(_MpkRecorder):
    """MessagePack with field names, uncompressed: the default recorder (``.mpk``). Tensors are stored
    as raw little-endian bytes aligned to 64 bytes and load as views of the memory-mapped file.

    Example:
        >>> recorder = NamedMpkFileRecorder(FullPrecisionSettings())
        >>> model.save_file("artifacts/model", recorder)
        PosixPath('artifacts/model.mpk')
        >>> model = model.load_file("artifacts/model", recorder, device)
    """

    file_extension = "mpk"
    _format = Format("named-mpk", named=True, compressed=False, extension="mpk")


class NamedMpkZstFileRecorder(_MpkRecorder):
    """MessagePack with field names, zstandard-compressed (``.mpk.zst``; Burn's ``NamedMpkGz`` with
    zstandard for gzip): smaller files, for storage. Float bytes are shuffled by byte position before
    compression, which is what makes trained weights compress.

    Example:
        >>> NamedMpkZstFileRecorder(HalfPrecisionSettings()).save(model.into_record(), "model")
        PosixPath('model.mpk.zst')
    """

    file_extension = "mpk.zst"
    _format = Format("named-mpk-zst", named=True, compressed=True, extension="mpk.zst")


class BinFileRecorder(_MpkRecorder):
    """The compact binary format (``.bin``): the same container with positional tensor descriptors (no
    field names). For files embedded in a program and read back with ``BinBytesRecorder``.

    Example:
        >>> model.save_file("model", BinFileRecorder(FullPrecisionSettings()))
        PosixPath('model.bin')
    """

    file_extension = "bin"
    _format = Format("bin", named=False, compressed=False, extension="bin")


class PrettyJsonFileRecorder(FileRecorder):
    """Indented JSON (``.json``), for reading and diffing small states by eye: tensors as flat value
    lists with their dtype and shape (the package README has the layout). Slow and large for big
    models; use it for debugging, not for weights.

    Example:
        >>> PrettyJsonFileRecorder().save({"step": 3, "lr": 1e-3}, "state")
        PosixPath('state.json')
    """

    file_extension = "json"

    def _write(self, out: Any, record: Mapping[str, Any]) -> None:
        out.write(encode_json(record, self._precision, self._limits.max_depth).encode())

    def _read_file(self, path: Path) -> dict[str, Any]:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > self._limits.max_structure_bytes:
                raise RecordFileError(
                    f"a JSON record of {size} bytes, more than {self._limits.max_structure_bytes} "
                    "(RecordLimits.max_structure_bytes)",
                    path,
                )
            return decode_json(file.read(), self._precision, self._limits, path)

    def _read_bytes(self, data: bytes) -> dict[str, Any]:
        return decode_json(data, self._precision, self._limits, None)


class CompactRecorder(NamedMpkZstFileRecorder):
    """Burn's ``CompactRecorder``: compressed named MessagePack in half precision (f16, i16) by default;
    its files are ``named-mpk-zst`` files, which ``NamedMpkZstFileRecorder`` reads too.

    Example:
        >>> model.save_file(f"{artifact_dir}/model", CompactRecorder())
        PosixPath('.../model.mpk.zst')
    """

    _default_settings = HalfPrecisionSettings


DefaultFileRecorder = NamedMpkFileRecorder
"""Burn's ``DefaultFileRecorder``: ``NamedMpkFileRecorder``."""
DefaultRecorder = NamedMpkFileRecorder
"""Burn's ``DefaultRecorder``: ``NamedMpkFileRecorder`` in full precision (its default)."""


class BytesRecorder:
    """The base of the in-memory recorders (Burn's ``BytesRecorder``): ``save`` returns bytes and
    ``load`` takes them, for weights embedded in a program or sent over a wire. The bytes are those the
    matching file recorder writes, so a file saved by it loads from its bytes.

    Args:
        settings: as for ``FileRecorder``.
        limits: as for ``FileRecorder``.

    Example:
        >>> data = BinBytesRecorder().save(model.into_record())
        >>> model = model.load_record(BinBytesRecorder().load(data, device))
    """

    _file_recorder: ClassVar[type[FileRecorder]]

    def __init__(
        self,
        settings: PrecisionSettings | type[PrecisionSettings] | None = None,
        *,
        limits: RecordLimits | None = None,
    ) -> None:
        self._inner = self._file_recorder(settings, limits=limits)

    @property
    def settings(self) -> PrecisionSettings:
        """The precision settings."""
        return self._inner.settings

    def save(self, record: Mapping[str, Any], path: None = None) -> bytes:
        """``record`` as bytes.

        Raises:
            TypeError: the record holds a value no record holds, or a ``path`` was given (this recorder
                writes bytes; its file recorder writes files).
            PrecisionError: a tensor value does not fit the precision.

        Example:
            >>> data = NamedMpkBytesRecorder().save({"step": 1})
        """
        if path is not None:
            raise TypeError(
                f"{type(self).__name__}.save returns bytes and takes no path; "
                f"{self._file_recorder.__name__} writes files"
            )
        return self._inner.to_bytes(record)

    def load(self, data: bytes, device: Device | None = None) -> dict[str, Any]:
        """The record in ``data`` (``device`` as for ``FileRecorder.load``). Uncompressed tensors are
        views of ``data`` when it is ``bytes``.

        Raises:
            RecordFileError: ``data`` is not a whole, undamaged record of this format.

        Example:
            >>> NamedMpkBytesRecorder().load(data)
            {'step': 1}
        """
        _check_device(device, f"{type(self).__name__}.load")
        return self._inner.from_bytes(data)

    def to_bytes(self, record: Mapping[str, Any]) -> bytes:
        """The same as ``save``."""
        return self.save(record)

    def from_bytes(self, data: bytes) -> dict[str, Any]:
        """The same as ``load``."""
        return self.load(data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings!r})"


class BinBytesRecorder(BytesRecorder):
    """``BinFileRecorder``'s format in memory.

    Example:
        >>> MODEL_BYTES = Path("model.bin").read_bytes()
        >>> record = BinBytesRecorder(FullPrecisionSettings()).load(MODEL_BYTES, device)
    """

    _file_recorder = BinFileRecorder


class NamedMpkBytesRecorder(BytesRecorder):
    """``NamedMpkFileRecorder``'s format in memory.

    Example:
        >>> data = NamedMpkBytesRecorder().save({"step": 1})
    """

    _file_recorder = NamedMpkFileRecorder


class NamedMpkZstBytesRecorder(BytesRecorder):
    """``NamedMpkZstFileRecorder``'s format in memory (compressed, for sending over a wire).

    Example:
        >>> data = NamedMpkZstBytesRecorder().save(model.into_record())
    """

    _file_recorder = NamedMpkZstFileRecorder
