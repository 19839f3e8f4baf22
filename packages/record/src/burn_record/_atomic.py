"""Atomic, durable file writes: a crash or a kill at any moment leaves the old file or the new one."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["DurableFile", "atomic_write", "temporary_name"]

_BUFFER = 1 << 20
_WRITEBACK_STEP = 16 << 20
_SYNC_FILE_RANGE_WRITE = 2


def _sync_file_range() -> Any:
    """Linux's ``sync_file_range`` (through the C library), or ``None`` elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_start_writeback = _sync_file_range()


class DurableFile:
    """A binary file being written that asks the disk to start writing every few MiB as they are
    written (Linux's ``sync_file_range``; elsewhere nothing), so that the ``fsync`` ending the save has
    little left to wait for: the disk works while the data is still being produced.

    Example:
        >>> with atomic_write(Path("weights.bin")) as file:
        ...     file.write(b"...")
    """

    def __init__(self, file: Any, durable: bool = True) -> None:
        self._file = file
        self._descriptor = file.fileno()
        self._position = 0
        self._started = 0
        self._writeback = _start_writeback if durable else None

    def write(self, data: Any) -> int:
        """Write ``data`` (any bytes-like object); returns its length."""
        count: int = self._file.write(data)
        self._position += count
        if self._writeback is not None and self._position - self._started >= _WRITEBACK_STEP:
            self._file.flush()
            self._writeback(
                self._descriptor, self._started, self._position - self._started, _SYNC_FILE_RANGE_WRITE
            )
            self._started = self._position
        return count

    def tell(self) -> int:
        """The number of bytes written."""
        return self._position

    def flush(self) -> None:
        """Hand the buffered bytes to the operating system."""
        self._file.flush()

    def fileno(self) -> int:
        """The file descriptor."""
        return int(self._descriptor)


def temporary_name(path: Path) -> Path:
    """The temporary file a save of ``path`` writes first: hidden, beside it, unique."""
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")


@contextlib.contextmanager
def atomic_write(path: Path, durable: bool = True) -> Iterator[DurableFile]:
    """A binary file to write whose content replaces ``path`` only once it is all written and on disk.

    The file is a temporary one in ``path``'s folder (so the final rename stays on one file system);
    when the ``with`` block ends it is flushed, ``fsync``-ed and renamed over ``path`` (atomic on POSIX
    and Windows), and the folder is ``fsync``-ed so the rename survives a power loss. If the block
    raises, the temporary file is removed and ``path`` is untouched. A process killed mid-write leaves
    ``path`` as it was, plus the hidden temporary file (``.<name>.<random>.tmp``). An existing file's
    permission bits are kept. Without ``durable`` there is no ``fsync``: the rename still protects
    against the process dying, not against the machine losing power before the disk has the data.

    Example:
        >>> with atomic_write(Path("weights.bin")) as file:
        ...     file.write(b"...")
    """
    temporary = temporary_name(path)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        if hasattr(os, "fchmod"):
            with contextlib.suppress(OSError):
                os.fchmod(descriptor, os.stat(path).st_mode & 0o7777)
        with open(descriptor, "wb", buffering=_BUFFER) as file:
            yield DurableFile(file, durable)
            file.flush()
            if durable:
                os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """``fsync`` a folder, where the platform allows it (not on Windows)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        descriptor = os.open(folder, flags)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
