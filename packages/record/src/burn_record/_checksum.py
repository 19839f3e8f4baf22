"""The CRC-32 of tensor bytes: zlib's (the one every format version specifies), computed by zlib-ng when
it is installed (``pip install 'burn-record[fast]'``): the same values, about six times as fast on
machines with carry-less multiplication (PCLMULQDQ, ARMv8 PMULL), since saving and loading a large model
spend most of their CPU time in it. Both release the GIL on large buffers."""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["ACCELERATED", "crc32"]


def _fastest() -> tuple[Callable[..., int], bool]:
    try:
        module: Any = importlib.import_module("zlib_ng.zlib_ng")
    except ImportError:
        return zlib.crc32, False
    function = getattr(module, "crc32", None)
    probe = b"burn-record: the same CRC-32 as zlib"
    if function is None or function(probe, 12345) != zlib.crc32(probe, 12345):  # pragma: no cover
        return zlib.crc32, False
    return function, True


crc32, ACCELERATED = _fastest()
"""``crc32(data, value=0)``: zlib's CRC-32 of ``data`` continuing from ``value``; whether it is
zlib-ng's."""
