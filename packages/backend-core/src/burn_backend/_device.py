"""``Device``: a value naming one backend and one device on it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._backend import Backend


class Device:
    """One device of one backend, e.g. ``NdArray().device()`` or ``Autodiff(Cuda()).device(1)``.

    Devices are values: two devices are equal when their backends are equal and their indices match.
    ``str(device)`` is the spec that ``BURN_DEVICE`` and ``parse_device`` accept, such as
    ``"autodiff-cuda:1"``.
    """

    __slots__ = ("_hash", "backend", "index")

    backend: Backend
    index: int

    def __init__(self, backend: Backend, index: int = 0) -> None:
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Device is immutable")

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Device):
            return NotImplemented
        return self.index == other.index and self.backend == other.backend

    def __hash__(self) -> int:
        # computed once: a backend's hash walks its settings (and its inner backends'), and devices are
        # hashed at every op of some paths (replay's call signatures)
        try:
            return self._hash  # type: ignore[attr-defined,no-any-return]
        except AttributeError:
            value = hash((self.backend, self.index))
            object.__setattr__(self, "_hash", value)
            return value

    def __reduce__(self) -> tuple[type[Device], tuple[Backend, int]]:
        # not the cached hash: hashes of strings differ between processes
        return (Device, (self.backend, self.index))

    def __repr__(self) -> str:
        return f"Device({self.backend!r}, {self.index})"

    def __str__(self) -> str:
        return f"{self.backend.stack_name}:{self.index}"

    def seed(self, seed: int) -> None:
        """Seed this device's random generator, so that random tensors repeat run to run."""
        self.backend.seed(self, seed)

    def sync(self) -> None:
        """Wait until every operation queued on this device has finished."""
        self.backend.sync(self)
