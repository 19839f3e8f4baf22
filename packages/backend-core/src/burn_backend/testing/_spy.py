"""The spy: counts the interface methods a backend object is called through."""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from typing import Any

from .._backend import Backend
from .._ops.activation import ActivationOps
from .._ops.bool import BoolTensorOps
from .._ops.float import FloatTensorOps
from .._ops.int import IntTensorOps
from .._ops.module import ModuleOps

OP_GROUPS = (FloatTensorOps, IntTensorOps, BoolTensorOps, ModuleOps, ActivationOps)
BACKEND_METHODS = (
    "device_count", "seed", "sync", "supports_dtype", "dtype_usage", "ad_enabled", "flush", "memory_cleanup",
    "tr_execute",
)  # fmt: skip


def interface_methods() -> dict[str, Any]:
    """Every method of the backend interface, by name, as the interface defines it."""
    methods: dict[str, Any] = {}
    for group in OP_GROUPS:
        for name, value in vars(group).items():
            if not name.startswith("_") and inspect.isfunction(value):
                methods[name] = value
    for name in BACKEND_METHODS:
        methods[name] = getattr(Backend, name)
    return methods


_counts: dict[int, Counter[str]] = {}


def calls(backend: Backend) -> Counter[str]:
    """How often each interface method of ``backend`` was called since its spy was installed."""
    return _counts.setdefault(id(backend), Counter())


def install(backend: Backend) -> Counter[str]:
    """Wrap every interface method of ``backend`` (on the instance) to count its calls; idempotent."""
    if id(backend) in _counts:
        return _counts[id(backend)]
    counter = calls(backend)
    for name in interface_methods():
        original = getattr(backend, name)
        setattr(backend, name, _counting(original, name, counter))
    return counter


def _counting(method: Any, name: str, counter: Counter[str]) -> Any:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counter[name] += 1
        return method(*args, **kwargs)

    return wrapper
