"""The ``Dataset`` protocol (Burn's ``Dataset`` trait) and ``InMemDataset``."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Dataset", "DatasetIterator", "InMemDataset"]

I = TypeVar("I")  # noqa: E741


@runtime_checkable
class Dataset(Protocol[I]):
    """A fixed-length collection of items read by index (Burn's ``Dataset`` trait).

    ``get`` and ``len`` are all a dataset needs (any object with both is one, structurally); a class
    that subclasses ``Dataset`` explicitly also gets ``iter``, ``get_many``, ``is_empty`` and Python's
    ``len()``, ``[]`` and ``for``. Datasets are read from the data loader's worker threads, so ``get``
    must be safe to call from several threads at once.

    Example:
        >>> class Squares(Dataset[int]):
        ...     def get(self, index: int) -> int | None:
        ...         return index * index if 0 <= index < 4 else None
        ...     def len(self) -> int:
        ...         return 4
        >>> list(Squares()), Squares()[3], Squares().get(9)
        ([0, 1, 4, 9], 9, None)
    """

    def get(self, index: int) -> I | None:
        """The item at ``index``, or ``None`` when ``index`` is out of ``[0, len())``."""
        ...

    def len(self) -> int:
        """The number of items."""
        ...

    def is_empty(self) -> bool:
        """Whether the dataset holds no item."""
        return self.len() == 0

    def iter(self) -> Iterator[I]:
        """The items in index order."""
        return DatasetIterator(self)

    def get_many(self, indices: Sequence[int]) -> list[I]:
        """The items at ``indices``, in that order.

        Raises:
            IndexError: an index is out of range.
        """
        return [self[index] for index in indices]

    def __len__(self) -> int:
        return self.len()

    def __iter__(self) -> Iterator[I]:
        return self.iter()

    def __getitem__(self, index: int) -> I:
        item = self.get(index)
        if item is None:
            raise IndexError(f"{type(self).__name__}[{index}]: the index is out of [0, {self.len()})")
        return item


class DatasetIterator(Iterator[I]):
    """Iterates a dataset's items by index, from 0 to ``len() - 1`` (Burn's ``DatasetIterator``).

    Example:
        >>> list(DatasetIterator(InMemDataset(["a", "b"])))
        ['a', 'b']
    """

    def __init__(self, dataset: Dataset[I]) -> None:
        self._dataset = dataset
        self._index = 0

    def __iter__(self) -> DatasetIterator[I]:
        return self

    def __next__(self) -> I:
        if self._index >= self._dataset.len():
            raise StopIteration
        item = self._dataset.get(self._index)
        self._index += 1
        if item is None:
            raise StopIteration
        return item


class InMemDataset(Dataset[I]):
    """A dataset of items held in a list (Burn's ``InMemDataset``): for data sets that fit in memory.

    Args:
        items: the items, copied into a list.

    Example:
        >>> dataset = InMemDataset([{"x": 1}, {"x": 2}])
        >>> dataset.len(), dataset.get(1)
        (2, {'x': 2})
    """

    def __init__(self, items: Sequence[I] | Iterator[I]) -> None:
        self._items: list[I] = list(items)

    def get(self, index: int) -> I | None:
        """The item at ``index``, or ``None`` out of range (negative indices are out of range)."""
        if 0 <= index < len(self._items):
            return self._items[index]
        return None

    def len(self) -> int:
        """The number of items."""
        return len(self._items)

    @classmethod
    def from_dataset(cls, dataset: Dataset[I]) -> InMemDataset[I]:
        """Every item of ``dataset`` read once into memory."""
        return cls([_required(dataset, i) for i in range(dataset.len())])

    @classmethod
    def from_json_rows(
        cls, path: str | os.PathLike[str], item_type: Callable[..., I] | None = None
    ) -> InMemDataset[Any]:
        """Items from a JSON-lines file: one JSON object per line (blank lines are skipped).

        Args:
            path: the file.
            item_type: builds each item from the row's fields as keyword arguments (a dataclass, say);
                by default the items are the rows as dicts.

        Raises:
            ValueError: a line is not a JSON object, or does not fit ``item_type`` (the line is named).

        Example:
            >>> dataset = InMemDataset.from_json_rows("items.jsonl")  # doctest: +SKIP
        """
        items: list[Any] = []
        with open(path, encoding="utf-8") as file:
            for number, line in enumerate(file, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"InMemDataset.from_json_rows: {path}:{number}: {error.msg}") from None
                if not isinstance(row, dict):
                    raise ValueError(
                        f"InMemDataset.from_json_rows: {path}:{number}: expected a JSON object per line, "
                        f"got {type(row).__name__}"
                    )
                items.append(_build(item_type, row, f"InMemDataset.from_json_rows: {path}:{number}"))
        return cls(items)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        item_type: Callable[..., I] | None = None,
        *,
        delimiter: str = ",",
        has_headers: bool = True,
    ) -> InMemDataset[Any]:
        """Items from a CSV file (Burn's ``InMemDataset::from_csv``).

        Args:
            path: the file.
            item_type: builds each item from the row's fields as keyword arguments. For a dataclass,
                each value is converted to its field's type (``int``, ``float``, ``bool``, ``str``, or
                optional ones, where an empty cell is ``None``). By default the items are dicts of
                strings.
            delimiter: the field separator.
            has_headers: whether the first row names the columns; without headers the columns are
                named ``"0"``, ``"1"``, ...

        Raises:
            ValueError: a row has another number of cells than the header, or a value does not convert
                to its field's type (the row is named).

        Example:
            >>> @dataclasses.dataclass
            ... class Row:
            ...     x: float
            ...     label: int
            >>> dataset = InMemDataset.from_csv("rows.csv", Row)  # doctest: +SKIP
        """
        where = f"InMemDataset.from_csv: {path}"
        with open(path, encoding="utf-8", newline="") as file:
            rows = list(csv.reader(file, delimiter=delimiter))
        if not rows:
            return cls([])
        header = rows[0] if has_headers else [str(i) for i in range(len(rows[0]))]
        body = rows[1:] if has_headers else rows
        converters = _converters(item_type, header, where)
        items: list[Any] = []
        for number, cells in enumerate(body, start=2 if has_headers else 1):
            if not cells:
                continue
            if len(cells) != len(header):
                raise ValueError(f"{where}:{number}: {len(cells)} cells, the header names {len(header)}")
            row: dict[str, Any] = {}
            for name, cell in zip(header, cells):
                try:
                    row[name] = converters[name](cell)
                except ValueError:
                    raise ValueError(f"{where}:{number}: column {name!r}: cannot read {cell!r}") from None
            items.append(_build(item_type, row, f"{where}:{number}"))
        return cls(items)


def _required(dataset: Dataset[I], index: int) -> I:
    item = dataset.get(index)
    if item is None:
        raise IndexError(f"{type(dataset).__name__}.get({index}) returned None within its length")
    return item


def _build(item_type: Callable[..., Any] | None, row: dict[str, Any], where: str) -> Any:
    if item_type is None:
        return row
    try:
        return item_type(**row)
    except TypeError as error:
        name = getattr(item_type, "__name__", item_type)
        raise ValueError(f"{where}: the row does not fit {name}: {error}") from None


def _to_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(text)


def _converter(annotation: Any) -> Callable[[str], Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is getattr(types, "UnionType", None):
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        inner = _converter(arguments[0]) if len(arguments) == 1 else str
        return lambda text: None if text == "" else inner(text)
    if annotation is bool:
        return _to_bool
    if annotation in (int, float, str):
        return annotation  # type: ignore[no-any-return]
    return str


def _converters(item_type: Any, header: list[str], where: str) -> dict[str, Callable[[str], Any]]:
    converters: dict[str, Callable[[str], Any]] = {name: str for name in header}
    if item_type is not None and dataclasses.is_dataclass(item_type):
        hints = typing.get_type_hints(item_type)
        for field in dataclasses.fields(item_type):
            if field.name in converters:
                converters[field.name] = _converter(hints.get(field.name, str))
    return converters
