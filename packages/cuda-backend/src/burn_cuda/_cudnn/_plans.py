"""Built cuDNN plans, one per shape key, and the rule that a cuDNN failure is never an error.

A key names everything a plan depends on (op, shapes, dtype, options, TF32 setting, device). Its plan
is built the first time the key is seen and kept (least recently used first out, past ``capacity``).
Where building or executing fails, the key is remembered as failed, the failure is logged once, and
the caller runs its own kernels: a case cuDNN does not support costs one attempt per process.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from ._library import LOG

P = TypeVar("P")
R = TypeVar("R")

_FAILED: Any = object()


class Unsupported(Exception):
    """cuDNN has no plan for a case (every engine it proposed refused to build, or none was proposed)."""


class PlanCache(Generic[P]):
    """Plans by key, built on first use, with failures remembered.

    Args:
        name: what the plans compute, for the log (``"convolution"``).
        capacity: how many keys are kept (plans and failures alike).
        quiet: whether failures go unlogged (for a variant whose failure has a cuDNN alternative).
    """

    def __init__(self, name: str, capacity: int = 1024, quiet: bool = False) -> None:
        self.name = name
        self.capacity = capacity
        self.quiet = quiet
        self.builds = 0
        """How many plans were built (a test reads it to see a key's plan reused)."""
        self.failures = 0
        """How many keys failed (a test reads it to see that cuDNN served a case)."""
        self._entries: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every plan and failure."""
        with self._lock:
            self._entries.clear()

    def run(
        self,
        key: Hashable,
        build: Callable[[], P],
        execute: Callable[[P], R],
        may_build: Callable[[], bool] = lambda: True,
    ) -> R | None:
        """``execute(plan)`` with the key's plan (built by ``build()`` where there is none yet), or ``None``
        where cuDNN cannot serve the key: the caller then runs its own kernels.

        ``may_build()`` false (a stream being captured into a CUDA graph, where a build's allocations
        and library loads are not allowed) gives ``None`` for an unbuilt key without marking it failed.
        """
        with self._lock:
            plan = self._entries.get(key)
            if plan is not None:
                self._entries.move_to_end(key)
        if plan is _FAILED:
            return None
        if plan is None:
            if not may_build():
                return None
            try:
                plan = build()
            except Exception as error:  # any refusal or library failure: our kernels instead
                self._fail(key, error, "building")
                return None
            self._store(key, plan)
        try:
            return execute(plan)
        except Exception as error:
            self._fail(key, error, "running")
            return None

    def _store(self, key: Hashable, value: Any) -> None:
        with self._lock:
            if value is not _FAILED:
                self.builds += 1
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def _fail(self, key: Hashable, error: Exception, stage: str) -> None:
        self._store(key, _FAILED)
        self.failures += 1
        if self.quiet:
            return
        refused = isinstance(error, Unsupported) or type(error).__name__ == "cudnnGraphNotSupportedError"
        LOG.log(
            logging.INFO if refused else logging.WARNING,
            "cuDNN is not used for the %s %s (%s failed: %s: %s); burn-cuda's own kernels run instead",
            self.name,
            key,
            stage,
            type(error).__name__,
            error,
        )
