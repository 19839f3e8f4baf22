"""The backend registry: installed backends announce themselves through entry points, devices are
named by specs like ``"autodiff-ndarray:0"``, and a process default device is chosen by
``set_default_device``, ``BURN_DEVICE`` or the first installed CPU backend."""

from __future__ import annotations

import importlib.metadata
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._backend import Backend
    from ._device import Device

ENTRY_POINT_GROUP = "burn.backends"
"""The entry-point group a package registers its backends and decorators in.

A backend registers a class that takes no required argument (``ndarray = "burn_ndarray:NdArray"``);
a decorator registers a class that takes the inner backend (``autodiff = "burn_autodiff:Autodiff"``).
"""

_lock = threading.Lock()
_backends: dict[str, Backend] = {}
_devices: dict[str, Device] = {}
_override: Device | None = None


def registered() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed backends and decorators, by short name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _load(name: str, spec: str) -> Any:
    entry = registered().get(name)
    if entry is None:
        known = ", ".join(sorted(registered())) or "none"
        raise ValueError(f"device spec {spec!r}: no installed backend is named {name!r} (installed: {known})")
    return entry.load()


def _split(text: str, separator: str, spec: str) -> list[str]:
    """``text`` split at each ``separator`` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if depth < 0:
            break
        if char == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"device spec {spec!r}: unbalanced brackets in {text!r}")
    parts.append(text[start:])
    if not all(parts):
        raise ValueError(f"device spec {spec!r}: an empty backend name in {text!r}")
    return parts


def _build(stack: str, spec: str) -> Backend:
    parts = _split(stack, "-", spec)
    for decorator in parts[:-1]:
        if "[" in decorator:
            raise ValueError(
                f"device spec {spec!r}: {decorator!r} lists inner backends, so it must come last in "
                f"{stack!r} (as in 'autodiff-router[cuda,ndarray]')"
            )
    name, bracket, rest = parts[-1].partition("[")
    if bracket and not rest.endswith("]"):
        raise ValueError(f"device spec {spec!r}: expected 'name[stack,...]', got {parts[-1]!r}")
    inners = [_build(inner, spec) for inner in _split(rest[:-1], ",", spec)] if bracket else []
    backend: Backend = _load(name, spec)(*inners)
    for decorator in reversed(parts[:-1]):
        backend = _load(decorator, spec)(backend)
    return backend


def backend_from_name(stack: str) -> Backend:
    """The backend named by a stack: ``"ndarray"``, ``"autodiff-ndarray"`` (decorators first, each
    over the rest), or a backend over several, their stacks listed in brackets:
    ``"router[cuda,autodiff-ndarray]"``, ``"autodiff-router[cuda,ndarray]"``.

    The same stack name always gives the same backend object.

    Raises:
        ValueError: the stack is malformed or names a backend that is not installed.
    """
    with _lock:
        backend = _backends.get(stack)
        if backend is None:
            backend = _backends[stack] = _build(stack, stack)
        return backend


def parse_device(spec: str) -> Device:
    """The device named by ``spec``: ``"ndarray"``, ``"cuda:1"``, ``"autodiff-cuda:0"``,
    ``"router[cuda,ndarray]:1"``, ... .

    Raises:
        ValueError: the spec is malformed or names a backend that is not installed.
    """
    device = _devices.get(spec)
    if device is not None:
        return device
    stack, _, index = spec.strip().partition(":")
    if not stack:
        raise ValueError(f"device spec {spec!r}: expected 'backend[:index]', e.g. 'ndarray' or 'cuda:1'")
    try:
        number = int(index) if index else 0
    except ValueError:
        raise ValueError(f"device spec {spec!r}: the index {index!r} is not an integer") from None
    device = _devices[spec] = backend_from_name(stack).device(number)
    return device


def set_default_device(device: Device | str | None) -> None:
    """Make ``device`` the process default (``None`` goes back to ``BURN_DEVICE`` or the CPU default)."""
    global _override
    _override = parse_device(device) if isinstance(device, str) else device


def default_device() -> Device:
    """The device used where a call names none.

    ``set_default_device`` wins, then the ``BURN_DEVICE`` environment variable, then the first
    installed CPU backend by name.

    Raises:
        RuntimeError: no backend is installed.
    """
    if _override is not None:
        return _override
    spec = os.environ.get("BURN_DEVICE")
    if spec:
        return parse_device(spec)
    for name, entry in sorted(registered().items()):
        backend_class = entry.load()
        if getattr(backend_class, "is_cpu", False) and not getattr(backend_class, "is_decorator", False):
            return backend_from_name(name).device(0)
    raise RuntimeError(
        "no default device: no CPU backend is installed; install one (pip install burn-ndarray) "
        "or set BURN_DEVICE"
    )
