"""Partial backends: the conformance suite runs on a backend class that still lacks abstract methods.

Where the plugin builds the backends named by ``--backend``, a ``Backend`` subclass that has abstract
methods is replaced by ``completed(cls)``: its subclass of the same name in which each of them is a stub
raising ``NotImplementedError`` that names the method. The tests that reach a stub fail, and so do the
coverage check and ``test_backend_implements_every_required_method``; everything else runs. Outside the
suite the class still cannot be instantiated.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

from .. import _registry
from .._backend import Backend, interface_methods

_STUBS = "_burn_stubbed_methods"
_completed: dict[type[Backend], type[Backend]] = {}


def _stub(class_name: str, name: str) -> Any:
    def stub(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{class_name}.{name} is not implemented (the conformance suite stands in a stub for it)"
        )

    interface = interface_methods()[name]
    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = interface.__doc__
    # the signature check then reports the method as missing, not as having other parameters
    stub.__signature__ = inspect.signature(interface)  # type: ignore[attr-defined]
    return stub


def completed(cls: type[Backend]) -> type[Backend]:
    """``cls`` if it has no abstract method, else its subclass (of the same name) in which every
    abstract method is a stub raising ``NotImplementedError``."""
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if not missing:
        return cls
    found = _completed.get(cls)
    if found is None:
        namespace: dict[str, Any] = {name: _stub(cls.__name__, name) for name in missing}
        namespace.update(__module__=cls.__module__, __qualname__=cls.__qualname__, __doc__=cls.__doc__)
        namespace[_STUBS] = frozenset(missing)
        found = _completed[cls] = type(cls.__name__, (cls,), namespace)  # the metaclass is cls's (ABCMeta)
    return found


def stubbed_methods(backend: Backend) -> frozenset[str]:
    """The methods of ``backend`` that are stubs standing in for unimplemented abstract methods."""
    return frozenset(type(backend).__dict__.get(_STUBS, ()))


def completed_namespace(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a module's ``namespace`` in which every backend class with abstract methods, other than
    backend-core's own (``Backend`` is abstract by design), is ``completed``: a ``module:expression``
    spec is evaluated in it."""
    return {name: _completed_backend(value) for name, value in namespace.items()}


def _completed_backend(value: Any) -> Any:
    if (
        isinstance(value, type)
        and issubclass(value, Backend)
        and value.__module__.split(".")[0] != "burn_backend"
    ):
        return completed(value)
    return value


@contextlib.contextmanager
def allowing_partial_backends() -> Iterator[None]:
    """Within the block, the registry builds a backend class with abstract methods (one named by a
    device spec such as ``mybackend`` or ``autodiff-mybackend``) as ``completed(cls)``."""
    load = _registry._load

    def loading_completed(name: str, spec: str) -> Any:
        return _completed_backend(load(name, spec))

    _registry._load = loading_completed
    try:
        yield
    finally:
        _registry._load = load
