"""``Transaction``: read many tensors with one wait per backend; ``PendingRead``: a read under way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from ._data import TensorData
from ._dtype import Kind

if TYPE_CHECKING:
    from ._backend import Backend
    from ._tensor import Tensor

T = TypeVar("T")


class PendingRead(Generic[T]):
    """Data being read from a device: ``wait`` returns it, waiting for the device the first time.

    A backend whose device runs behind the host queues its copies to host memory and returns one of
    these at once (``Backend.tr_execute_async``), so that the host can queue more work before it waits;
    elsewhere the data is read at once and ``wait`` returns it.

    Args:
        finish: called by the first ``wait``: waits for the copies and returns the data.

    Example:
        >>> PendingRead.ready([1, 2]).wait()
        [1, 2]
    """

    __slots__ = ("_finish", "_value")

    def __init__(self, finish: Callable[[], T]) -> None:
        self._finish: Callable[[], T] | None = finish
        self._value: T | None = None  # set by the first wait

    @classmethod
    def ready(cls, value: T) -> PendingRead[T]:
        """A read already done, of ``value``."""
        read: PendingRead[T] = cls(lambda: value)
        return read

    def wait(self) -> T:
        """The data, once the device has copied it (the same object at every call)."""
        if self._finish is not None:
            finish, self._finish = self._finish, None
            self._value = finish()
        return self._value  # type: ignore[return-value]  # set above, or by an earlier wait


class Transaction:
    """Tensors registered to be read together: ``execute`` reads them with one ``tr_execute`` call per
    backend, so an asynchronous backend synchronizes once rather than once per tensor;
    ``execute_async`` starts the same reads and returns before waiting.

    Example:
        >>> from burn_backend import Tensor
        >>> a, b = Tensor.ones([2]), Tensor.arange(3)
        >>> [d.tolist() for d in Transaction().register(a).register(b).execute()]
        [[1.0, 1.0], [0, 1, 2]]
    """

    def __init__(self) -> None:
        self._tensors: list[Tensor] = []

    def register(self, tensor: Tensor) -> Transaction:
        """Add ``tensor`` to the tensors to read; returns the transaction, for chaining."""
        self._tensors.append(tensor)
        return self

    def execute(self) -> list[TensorData]:
        """The data of every registered tensor, in registration order."""
        return self.execute_async().wait()

    def execute_async(self) -> PendingRead[list[TensorData]]:
        """Start reading every registered tensor (``Backend.tr_execute_async``, once per backend) and
        return before waiting for a device: ``wait()`` on the result gives the data in registration
        order. What the device computes after this call does not delay the read.

        Example:
            >>> from burn_backend import Tensor
            >>> read = Transaction().register(Tensor.ones([2])).execute_async()
            >>> [d.tolist() for d in read.wait()]
            [[1.0, 1.0]]
        """
        kinds = (Kind.FLOAT, Kind.INT, Kind.BOOL)
        groups: dict[int, tuple[Backend, list[int]]] = {}
        for position, tensor in enumerate(self._tensors):
            backend = tensor.device.backend
            groups.setdefault(id(backend), (backend, []))[1].append(position)
        reads = []
        for backend, positions in groups.values():
            by_kind: dict[Kind, list[int]] = {kind: [] for kind in kinds}
            for position in positions:
                by_kind[self._tensors[position].kind].append(position)
            primitives = [[self._tensors[i].primitive for i in by_kind[kind]] for kind in kinds]
            reads.append((by_kind, backend.tr_execute_async(*primitives)))
        count = len(self._tensors)

        def finish() -> list[TensorData]:
            results: list[TensorData | None] = [None] * count
            for by_kind, read in reads:
                for kind, data in zip(kinds, read.wait(), strict=True):
                    for position, value in zip(by_kind[kind], data, strict=True):
                        results[position] = value
            return [data for data in results if data is not None]

        return PendingRead(finish)
