"""``Transaction``: read many tensors with one wait per backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._data import TensorData
from ._dtype import Kind

if TYPE_CHECKING:
    from ._backend import Backend
    from ._tensor import Tensor


class Transaction:
    """Tensors registered to be read together: ``execute`` reads them with one ``tr_execute`` call per
    backend, so an asynchronous backend synchronizes once rather than once per tensor.

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
        groups: dict[int, tuple[Backend, list[int]]] = {}
        for position, tensor in enumerate(self._tensors):
            backend = tensor.device.backend
            groups.setdefault(id(backend), (backend, []))[1].append(position)
        results: list[TensorData | None] = [None] * len(self._tensors)
        for backend, positions in groups.values():
            by_kind: dict[Kind, list[int]] = {Kind.FLOAT: [], Kind.INT: [], Kind.BOOL: []}
            for position in positions:
                by_kind[self._tensors[position].kind].append(position)
            datas = backend.tr_execute(
                *[
                    [self._tensors[i].primitive for i in by_kind[kind]]
                    for kind in (Kind.FLOAT, Kind.INT, Kind.BOOL)
                ]
            )
            for kind, data in zip((Kind.FLOAT, Kind.INT, Kind.BOOL), datas):
                for position, value in zip(by_kind[kind], data):
                    results[position] = value
        return [data for data in results if data is not None]
