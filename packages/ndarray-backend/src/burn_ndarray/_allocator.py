"""Keep freed memory in the process instead of handing it back to the system at every step.

glibc's ``malloc`` serves blocks above a threshold (128 KiB at first, raised as large blocks are freed)
with fresh ``mmap`` pages, and gives the top of its heap back whenever more than twice that threshold
lies free there. A training step allocates and frees the same large arrays every iteration
(gradients, activations), so by default each of them is faulted in and zeroed by the kernel again: a
64x256 @ 256x256 weight gradient takes 2.4x as long as the same product into recycled memory. Keeping
blocks up to 32 MiB in the heap and 256 MiB of free heap before trimming makes them reuse memory as
PyTorch's CPU allocator does. ``BURN_NDARRAY_KEEP_FREED=0`` keeps glibc's defaults.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # the largest glibc accepts on 64-bit systems
TRIM_THRESHOLD = 256 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds once per process, unless ``BURN_NDARRAY_KEEP_FREED=0``.

    Returns:
        Whether the thresholds were set: False off Linux, on a C library other than glibc (musl has no
        ``mallopt``), or when the environment variable asks for the defaults.
    """
    if os.environ.get("BURN_NDARRAY_KEEP_FREED", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mmap_set = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    return bool(mmap_set) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
