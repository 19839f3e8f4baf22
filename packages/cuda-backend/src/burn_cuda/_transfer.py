"""Copies between host memory and a GPU that the host does not wait for: ``upload`` through a pinned
staging ring, ``download_async`` into pinned memory read once an event says the copy ran.

A copy from pageable host memory (what ``cupy.asarray`` does with a NumPy array) may first wait for
every kernel queued before it on the stream: a batch made on a data loader's thread would wait for the
training step the GPU is running, and hold up the main thread's CUDA calls meanwhile. Copied into
pinned host memory first, the same bytes go to the GPU asynchronously.

Each GPU has one pinned arena used as a ring: a copy takes the next free bytes, and an event recorded
after it marks when they are free again. The host waits only when the ring is full of copies the GPU
has not run yet.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._cupy import cp

Array = Any

RING_BYTES = 16 << 20
"""The pinned arena of each GPU."""
STAGING_MAX = 4 << 20
"""Bytes: a larger array is copied as CuPy copies it (its own copy time hides a wait)."""
_ALIGN = 256


class _Ring:
    """The pinned arena of one GPU, the next free offset, and the copies still reading it (their start
    offsets and the events after them, oldest first)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arena = cp.cuda.alloc_pinned_memory(RING_BYTES)
        self.base = int(self.arena.ptr)
        self.head = 0
        self.pending: collections.deque[tuple[int, Any]] = collections.deque()

    def reserve(self, nbytes: int) -> int:
        """The offset of ``nbytes`` free bytes (the lock held), waiting for the oldest copies only
        when the ring has no room. The ring is never filled completely, so that a head equal to the
        oldest copy's start always means an empty ring."""
        size = -(-nbytes // _ALIGN) * _ALIGN
        pending = self.pending
        while True:
            while pending and pending[0][1].done:
                pending.popleft()
            if not pending:
                self.head = 0
                start = 0
                break
            tail, head = pending[0][0], self.head
            if tail < head and head + size <= RING_BYTES:
                start = head
                break
            if tail < head and size < tail:
                start = 0  # the end of the arena is skipped
                break
            if head < tail and head + size < tail:
                start = head
                break
            pending.popleft()[1].synchronize()  # the ring is full: the oldest copy must run first
        self.head = start + size
        return start


_rings: dict[int, _Ring] = {}
_rings_lock = threading.Lock()


def upload(array: Any) -> Array:
    """``array`` (a NumPy array, or anything ``cupy.asarray`` takes) on the current GPU, copied on the
    current stream.

    A NumPy array of up to ``STAGING_MAX`` bytes of bools, ints or floats goes through the GPU's
    pinned ring; anything else (a device array, a larger one, other dtypes, or while the current stream
    is being captured, where CuPy's copy refuses: a graph may not record a read of host memory a later
    call changes) goes through ``cupy.asarray``.

    Example:
        >>> upload(np.arange(3.0)).get().tolist()  # doctest: +SKIP
        [0.0, 1.0, 2.0]
    """
    stream = cp.cuda.get_current_stream()
    if (
        type(array) is not np.ndarray
        or not 0 < array.nbytes <= STAGING_MAX
        or array.dtype.kind not in "biuf"
        or not array.dtype.isnative
        or stream.is_capturing()
    ):
        return cp.asarray(array)
    device = int(cp.cuda.runtime.getDevice())
    ring = _rings.get(device)
    if ring is None:
        with _rings_lock:
            ring = _rings.get(device)
            if ring is None:
                ring = _rings[device] = _Ring()
    out = cp.empty(array.shape, dtype=array.dtype)
    source = np.ascontiguousarray(array)
    with ring.lock:
        start = ring.reserve(array.nbytes)
        pinned = ring.base + start
        ctypes.memmove(pinned, source.ctypes.data, array.nbytes)  # releases the GIL while it copies
        cp.cuda.runtime.memcpyAsync(
            out.data.ptr, pinned, array.nbytes, cp.cuda.runtime.memcpyHostToDevice, stream.ptr
        )
        ring.pending.append((start, stream.record()))
    return out


DOWNLOAD_MAX = 16 << 20
"""Bytes: a larger array is read at once, as CuPy reads it."""


def download_async(array: Array) -> Callable[[], np.ndarray[Any, Any]]:
    """Start copying ``array`` (on any GPU) to host memory, queued on its GPU's current stream after
    what is queued there now; returns the function that waits for the copy and gives the NumPy array.

    Up to ``DOWNLOAD_MAX`` bytes of bools, ints or floats go to pinned host memory without the host
    waiting; anything else is read now, as ``cupy.asnumpy`` reads it.
    """
    with cp.cuda.Device(array.device.id):
        stream = cp.cuda.get_current_stream()
        if not 0 < array.nbytes <= DOWNLOAD_MAX or array.dtype.kind not in "biuf" or stream.is_capturing():
            host = cp.asnumpy(array)  # while capturing, CuPy refuses: a graph may not read to the host
            return lambda: host
        source = cp.ascontiguousarray(array)
        pinned = cp.cuda.alloc_pinned_memory(source.nbytes)
        # a NumPy array over the pinned memory, which it keeps alive
        host = np.frombuffer(pinned, np.uint8, source.nbytes).view(source.dtype).reshape(source.shape)
        cp.cuda.runtime.memcpyAsync(
            host.ctypes.data, source.data.ptr, source.nbytes, cp.cuda.runtime.memcpyDeviceToHost, stream.ptr
        )
        return functools.partial(_finish_download, stream.record(), host, source)


def _finish_download(event: Any, host: np.ndarray[Any, Any], source: Array) -> np.ndarray[Any, Any]:
    """``host`` once ``event`` (after its copy from ``source``, kept alive until now) has passed."""
    event.synchronize()
    return host
