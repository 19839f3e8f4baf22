"""The spy: counts the interface methods a backend object was called through and that returned, and
checks that the primitives they return carry a shape and a dtype the Tensor API understands."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from .._backend import Backend, interface_methods
from .._dtype import DType
from ..quantization._scheme import QuantScheme

_counts: dict[int, Counter[str]] = {}
# the interface's return annotations (strings, postponed) that hold primitives
_RETURNS_PRIMITIVES = frozenset({"P", "tuple[P, P]"})


def calls(backend: Backend) -> Counter[str]:
    """How often each interface method of ``backend`` returned (raised calls do not count) since its spy
    was installed."""
    return _counts.setdefault(id(backend), Counter())


def install(backend: Backend) -> Counter[str]:
    """Wrap every interface method of ``backend`` (on the instance) to count its calls; idempotent."""
    if id(backend) in _counts:
        return _counts[id(backend)]
    counter = calls(backend)
    for name, interface in interface_methods().items():
        original = getattr(backend, name)
        op = f"{type(backend).__name__}.{name}"
        returns_primitives = interface.__annotations__.get("return") in _RETURNS_PRIMITIVES
        setattr(backend, name, _counting(original, name, op, counter, returns_primitives))
    return counter


def _counting(method: Any, name: str, op: str, counter: Counter[str], returns_primitives: bool) -> Any:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if returns_primitives:
            for primitive in result if isinstance(result, tuple) else (result,):
                check_primitive(primitive, op)
        counter[name] += 1
        return result

    return wrapper


def check_primitive(primitive: Any, op: str) -> None:
    """Raise ``TypeError`` naming ``op`` unless ``primitive`` has what the Tensor API reads from every
    primitive: ``shape``, a tuple of ints, and ``dtype``, a value ``DType.of`` accepts."""
    requirement = "a primitive must have `shape`, a tuple of ints, and `dtype`, a NumPy dtype or a DType"
    shape = getattr(primitive, "shape", None)
    if not isinstance(shape, tuple) or not all(isinstance(size, int) for size in shape):
        raise TypeError(f"{op} returned a {type(primitive).__name__} whose shape is {shape!r}: {requirement}")
    dtype = getattr(primitive, "dtype", None)
    if type(dtype) is QuantScheme:  # a quantized primitive: its dtype is its scheme
        return
    try:
        DType.of(dtype)
    except TypeError:
        raise TypeError(
            f"{op} returned a {type(primitive).__name__} whose dtype is {dtype!r}, which DType.of does not "
            f"accept: {requirement}"
        ) from None
