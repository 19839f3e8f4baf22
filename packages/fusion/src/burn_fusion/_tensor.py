"""``FusionTensor``: Fusion's primitive, a handle on a value that may not be computed yet.

A value of the stream is a ``Node``: its dtype and shape (known when the op is recorded), the inner
backend's primitive once computed (or the ``Deferred`` a compiled plan returned for it, made into the
primitive when first read), the stream that will compute it, and a weak reference to the one
``FusionTensor`` handle the user holds. Pending ops reference nodes, never handles, so whether the
handle is still alive says whether anything outside the stream can still read the value: a value whose
handle died is never materialized unless a later op of another block needs it.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from burn_backend import DType
from burn_backend.kit import Deferred

if TYPE_CHECKING:
    from burn_backend import Device

    from ._stream import Stream


class Node:
    """One value of a stream: computed (``value`` is the inner primitive, or a ``Deferred`` for it) or
    pending on ``stream``."""

    __slots__ = ("dtype", "handle", "shape", "shared", "stream", "value")

    def __init__(self, shape: tuple[int, ...], dtype: DType, value: Any, stream: Stream | None) -> None:
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.stream = stream
        self.handle: weakref.ref[FusionTensor] | None = None
        self.shared = False
        """Whether an op of another stream read it (its value is then never given up for reuse)."""

    def alive(self) -> bool:
        """Whether a ``FusionTensor`` still refers to this value (it must then be materialized)."""
        handle = self.handle
        return handle is not None and handle() is not None


class FusionTensor:
    """The primitive of ``Fusion``: the dtype and shape of a value, and the value once it is computed.

    Its ``shape`` and ``dtype`` are known as soon as the op that makes it is recorded; reading its
    values (``Fusion.unwrap``, every op that is not deferred) runs the stream that computes it.

    Attributes:
        shape: the dims, a tuple of ints.
        dtype: the element type (a ``DType``).
        node: the value in its stream.
    """

    __slots__ = ("__weakref__", "_device", "dtype", "node", "shape")

    def __init__(self, node: Node, device: Device | None) -> None:
        self.node = node
        self.shape = node.shape
        self.dtype = node.dtype
        self._device = device
        node.handle = weakref.ref(self)

    @property
    def is_ready(self) -> bool:
        """Whether the value is computed (no pending op makes it)."""
        return self.node.value is not None

    def materialize(self) -> Any:
        """The inner backend's primitive, computing the pending ops of its stream first if needed."""
        node = self.node
        value = node.value
        if value is None:
            stream = node.stream
            assert stream is not None
            stream.execute()
            value = node.value
            assert value is not None, "the stream did not compute a live value"
        if isinstance(value, Deferred):
            value = node.value = value.resolve()
        return value

    def __repr__(self) -> str:
        state = "ready" if self.node.value is not None else "pending"
        return f"FusionTensor(shape={self.shape}, dtype={self.dtype}, {state})"
