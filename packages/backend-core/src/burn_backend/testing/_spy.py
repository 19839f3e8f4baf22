"""The spy: counts the interface methods a backend object is called through."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from .._backend import Backend, interface_methods

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
