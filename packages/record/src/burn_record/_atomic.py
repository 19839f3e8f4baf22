"""Atomic, durable file writes: a crash or a kill at any moment leaves the old file or the new one."""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import re
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["DurableFile", "atomic_write", "remove_stale_temporaries", "temporary_name"]

_SMALL = 64 << 10  # writes shorter than this are gathered and written with the next large one
_STEP = 8 << 20  # the most bytes handed to the operating system per write call
_WRITEBACK_STEP = 8 << 20  # how often the disk is asked to start writing
_SYNC_FILE_RANGE_WRITE = 2
_HAS_WRITEV = hasattr(os, "writev")  # not on Windows


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


class _Writeback:
    """A thread that asks the disk to start writing ranges of a file as they are written (Linux's
    ``sync_file_range``, which releases the GIL): the file system's block allocation and the submission
    of the writes happen there, beside the thread producing the data, and the ``fsync`` ending the save
    finds most of the data on disk already. Its requests are hints: an error is left for ``fsync``."""

    def __init__(self, descriptor: int, function: Any) -> None:
        self._descriptor = descriptor
        self._function = function
        self._ranges: queue.SimpleQueue[tuple[int, int] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="burn-record-writeback", daemon=True)

    def start(self) -> None:
        """Start the thread (separately from construction: the owner keeps the object first, so that an
        exception raised by a signal handler at any point still reaches a ``close`` that stops it)."""
        self._thread.start()

    def _run(self) -> None:
        while (item := self._ranges.get()) is not None:
            self._function(self._descriptor, item[0], item[1], _SYNC_FILE_RANGE_WRITE)

    def request(self, start: int, length: int) -> None:
        """Ask for ``length`` bytes from ``start`` to be written to the disk soon."""
        self._ranges.put((start, length))

    def close(self) -> None:
        """Wait for the requests made so far (the descriptor must stay open until then)."""
        self._ranges.put(None)
        if self._thread.ident is not None:
            self._thread.join()


class DurableFile:
    """A binary file being written straight to its descriptor, with no buffer copy for large writes
    (small ones are gathered and go with the next large one through ``os.writev``), that asks the disk
    to start writing every few MiB as they are written (see ``_Writeback``; on other systems nothing),
    so that the ``fsync`` ending the save has little left to wait for.

    Example:
        >>> with atomic_write(Path("weights.bin")) as file:
        ...     file.write(b"...")
    """

    def __init__(self, descriptor: int, durable: bool = True) -> None:
        self._descriptor = descriptor
        self._pending = bytearray()
        self._position = 0  # bytes handed to the operating system
        self._started = 0  # bytes the disk was asked to write
        self._writeback: _Writeback | None = None
        self._durable = durable and _start_writeback is not None

    def write(self, data: Any) -> int:
        """Write ``data`` (any bytes-like object, C-contiguous); returns its length. Large objects are
        written from their memory, not copied (they must not change until ``write`` returns)."""
        view = memoryview(data)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        size = len(view)
        if size < _SMALL:
            self._pending += view
            if len(self._pending) >= _SMALL:
                self._write_all([])
            return size
        for start in range(0, size, _STEP):
            self._write_all([view[start : start + _STEP]])
        return size

    def _write_all(self, parts: list[memoryview]) -> None:
        if self._pending:
            parts = [memoryview(self._pending), *parts]
        left = sum(len(part) for part in parts)
        while left:
            if _HAS_WRITEV:
                written = os.writev(self._descriptor, parts)
            else:  # pragma: no cover (Windows)
                written = os.write(self._descriptor, parts[0])
            self._position += written
            left -= written
            while parts and written >= len(parts[0]):
                written -= len(parts.pop(0))
            if written:
                parts[0] = parts[0][written:]
        if self._pending:
            self._pending = bytearray()
        if self._durable and self._position - self._started >= _WRITEBACK_STEP:
            if self._writeback is None:
                self._writeback = _Writeback(self._descriptor, _start_writeback)
                self._writeback.start()
            self._writeback.request(self._started, self._position - self._started)
            self._started = self._position

    def tell(self) -> int:
        """The number of bytes written."""
        return self._position + len(self._pending)

    def flush(self) -> None:
        """Hand the gathered bytes to the operating system."""
        if self._pending:
            self._write_all([])

    def fileno(self) -> int:
        """The file descriptor."""
        return self._descriptor

    def close(self) -> None:
        """Stop asking for writeback (the descriptor stays open)."""
        if self._writeback is not None:
            self._writeback.close()
            self._writeback = None


_STARTED = time.time()  # when this process loaded the library: older temporaries are not its own
# folders cleaned already: a temporary only becomes stale here if written before _STARTED, so once a
# folder is clean it stays so (for this process), and a folder of many files is not listed at each save
_CLEANED: set[str] = set()
_TEMPORARY = re.compile(r"^\..+\.burn-(\d+)-[0-9a-f]{12}\.tmp$")


def temporary_name(path: Path) -> Path:
    """The temporary file a save of ``path`` writes first: hidden, beside it, unique, and naming the
    writing process (``.<name>.burn-<pid>-<random>.tmp``), so that a later save can tell a dead
    writer's leftover from a live one's file in progress."""
    return path.with_name(f".{path.name}.burn-{os.getpid()}-{secrets.token_hex(6)}.tmp")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (assumed so where that cannot be asked without harm)."""
    if os.name != "posix":
        return True  # Windows' os.kill terminates the process it is given
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (PermissionError), or an invalid pid
        return True
    return True


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary files that saves killed mid-write left in ``folder``: those of this library
    (named by ``temporary_name``) whose writing process is gone and that were last written before this
    process loaded the library. A file of a live process (a concurrent save, from this process or
    another) is kept, and so is a recent one (its process may live where this one cannot see it, as in
    another container sharing the folder). Each folder is cleaned once per process (what a later
    look could find stale was there already). Failures (a read-only folder, a file removed meanwhile)
    are ignored.

    Returns:
        The files removed.

    Example:
        >>> remove_stale_temporaries(Path("artifacts/checkpoint"))  # doctest: +SKIP
        [PosixPath('artifacts/checkpoint/.model-3.mpk.burn-4242-0123456789ab.tmp')]
    """
    removed: list[Path] = []
    key = os.path.abspath(folder)
    if key in _CLEANED:
        return removed
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    _CLEANED.add(key)
    own = os.getpid()
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match is None or int(match.group(1)) == own:
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= _STARTED or _alive(int(match.group(1))):
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def atomic_write(path: Path, durable: bool = True) -> Iterator[DurableFile]:
    """A binary file to write whose content replaces ``path`` only once it is all written and on disk.

    The file is a temporary one in ``path``'s folder (so the final rename stays on one file system);
    when the ``with`` block ends it is flushed, ``fsync``-ed and renamed over ``path`` (atomic on POSIX
    and Windows), and the folder is ``fsync``-ed so the rename survives a power loss. If the block
    raises, the temporary file is removed and ``path`` is untouched. A process killed mid-write leaves
    ``path`` as it was, plus the hidden temporary file (``.<name>.burn-<pid>-<random>.tmp``), which the
    next save or load in that folder by a later process removes (``remove_stale_temporaries``). An
    existing file's
    permission bits are kept. Without ``durable`` there is no ``fsync``: the rename still protects
    against the process dying, not against the machine losing power before the disk has the data.

    Example:
        >>> with atomic_write(Path("weights.bin")) as file:
        ...     file.write(b"...")
    """
    remove_stale_temporaries(path.parent)
    temporary = temporary_name(path)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        if hasattr(os, "fchmod"):
            with contextlib.suppress(OSError):
                os.fchmod(descriptor, os.stat(path).st_mode & 0o7777)
        file = DurableFile(descriptor, durable)
        try:
            yield file
            file.flush()
        finally:
            file.close()
        if durable:
            os.fsync(descriptor)
        os.close(descriptor)
        descriptor = -1
        os.replace(temporary, path)
    except BaseException:
        if descriptor >= 0:
            os.close(descriptor)
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
