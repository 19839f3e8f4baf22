"""Lazy dataset transforms (Burn's ``burn_dataset::transform``): mapping, ranges, shuffling, sampling,
selection, composition and sliding windows."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from ._dataset import Dataset

__all__ = [
    "ComposedDataset",
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "SamplerDataset",
    "SelectionDataset",
    "ShuffledDataset",
    "WindowsDataset",
]

I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741
I_contra = TypeVar("I_contra", contravariant=True)
O_co = TypeVar("O_co", covariant=True)


class Mapper(Protocol[I_contra, O_co]):
    """What ``MapperDataset`` applies to each item (Burn's ``Mapper`` trait): an object with ``map``.
    A plain function works as well."""

    def map(self, item: I_contra) -> O_co:
        """The mapped item."""
        ...


def _check_dataset(where: str, dataset: object) -> None:
    if not (callable(getattr(dataset, "get", None)) and callable(getattr(dataset, "len", None))):
        raise TypeError(f"{where}: expected a dataset (with get and len), got {type(dataset).__name__}")


class MapperDataset(Dataset[O], Generic[I, O]):
    """Applies a function to each item as it is read (lazily; nothing is precomputed).

    Args:
        dataset: the dataset read.
        mapper: a function of one item, or an object with a ``map(item)`` method.

    Example:
        >>> from burn_train.data import InMemDataset
        >>> MapperDataset(InMemDataset([1, 2, 3]), lambda x: x * 10).get(2)
        30
    """

    def __init__(self, dataset: Dataset[I], mapper: Callable[[I], O] | Mapper[I, O]) -> None:
        _check_dataset("MapperDataset", dataset)
        function = getattr(mapper, "map", mapper)
        if not callable(function):
            raise TypeError(f"MapperDataset: the mapper must be callable or have map, got {mapper!r}")
        self._dataset = dataset
        self._map: Callable[[I], O] = function

    def get(self, index: int) -> O | None:
        """The mapped item at ``index``, or ``None`` out of range."""
        item = self._dataset.get(index)
        return None if item is None else self._map(item)

    def len(self) -> int:
        """The inner dataset's length."""
        return self._dataset.len()


class PartialDataset(Dataset[I]):
    """The items ``[start, end)`` of a dataset (Burn's ``PartialDataset``), e.g. a train/valid split.

    Args:
        dataset: the dataset viewed.
        start: the first index (clamped to ``[0, len]``).
        end: one past the last index (clamped to ``[start, len]``).

    Example:
        >>> from burn_train.data import InMemDataset
        >>> list(PartialDataset(InMemDataset(range(10)), 8, 20))
        [8, 9]
    """

    def __init__(self, dataset: Dataset[I], start: int, end: int) -> None:
        _check_dataset("PartialDataset", dataset)
        length = dataset.len()
        self._dataset = dataset
        self._start = min(max(int(start), 0), length)
        self._end = min(max(int(end), self._start), length)

    @classmethod
    def split(cls, dataset: Dataset[I], num: int) -> list[PartialDataset[I]]:
        """``dataset`` cut into ``num`` consecutive parts of nearly equal lengths (the first ones one
        longer where the length does not divide), as the data loader's workers use it.

        Raises:
            ValueError: ``num`` is below 1.
        """
        if num < 1:
            raise ValueError(f"PartialDataset.split: expected at least 1 part, got {num}")
        length = dataset.len()
        size, extra = divmod(length, num)
        parts, start = [], 0
        for i in range(num):
            end = start + size + (1 if i < extra else 0)
            parts.append(cls(dataset, start, end))
            start = end
        return parts

    def get(self, index: int) -> I | None:
        """The item at ``start + index``, or ``None`` out of the range."""
        if 0 <= index < self._end - self._start:
            return self._dataset.get(self._start + index)
        return None

    def len(self) -> int:
        """``end - start``."""
        return self._end - self._start


class SelectionDataset(Dataset[I]):
    """The items of a dataset at chosen indices, in the chosen order (Burn's ``SelectionDataset``).

    Args:
        dataset: the dataset read.
        indices: the indices of ``dataset`` to present, in order (repeats allowed).

    Raises:
        IndexError: an index is out of ``dataset``'s range.

    Example:
        >>> from burn_train.data import InMemDataset
        >>> list(SelectionDataset(InMemDataset("abcd"), [3, 0, 0]))
        ['d', 'a', 'a']
    """

    def __init__(self, dataset: Dataset[I], indices: Sequence[int] | np.ndarray) -> None:
        _check_dataset("SelectionDataset", dataset)
        selected = np.asarray(indices, dtype=np.int64).reshape(-1)
        length = dataset.len()
        if selected.size and (selected.min() < 0 or selected.max() >= length):
            bad = int(selected[(selected < 0) | (selected >= length)][0])
            raise IndexError(f"SelectionDataset: index {bad} is out of the dataset's [0, {length})")
        self._dataset = dataset
        self._indices = selected

    @classmethod
    def new_shuffled(cls, dataset: Dataset[I], seed: int) -> SelectionDataset[I]:
        """Every item of ``dataset`` in an order shuffled by ``seed``."""
        return cls(dataset, np.random.default_rng(seed).permutation(dataset.len()))

    @property
    def indices(self) -> list[int]:
        """The selected indices of the inner dataset."""
        return [int(i) for i in self._indices]

    def get(self, index: int) -> I | None:
        """The inner item at ``indices[index]``, or ``None`` out of range."""
        if 0 <= index < len(self._indices):
            return self._dataset.get(int(self._indices[index]))
        return None

    def len(self) -> int:
        """The number of selected indices."""
        return len(self._indices)


class ShuffledDataset(SelectionDataset[I]):
    """Every item of a dataset in an order shuffled once by a seed (Burn's ``ShuffledDataset``).

    The same seed gives the same order, in any process. (The data loader's ``shuffle(seed)`` is the
    one that reshuffles every epoch.)

    Example:
        >>> from burn_train.data import InMemDataset
        >>> sorted(ShuffledDataset(InMemDataset(range(5)), seed=42))
        [0, 1, 2, 3, 4]
    """

    def __init__(self, dataset: Dataset[I], seed: int) -> None:
        _check_dataset("ShuffledDataset", dataset)
        super().__init__(dataset, np.random.default_rng(seed).permutation(dataset.len()))

    @classmethod
    def with_seed(cls, dataset: Dataset[I], seed: int) -> ShuffledDataset[I]:
        """Burn's spelling of ``ShuffledDataset(dataset, seed)``."""
        return cls(dataset, seed)


class SamplerDataset(Dataset[I]):
    """A dataset of ``size`` items drawn from another, with replacement (the default) or without
    (Burn's ``SamplerDataset``): a way to set an epoch's length independently of the data.

    Without replacement, the draws go through shuffled passes over the whole dataset, so every item
    appears once before any appears twice. The draws are fixed by ``seed`` (by default a fresh random
    one) when the sampler is made: item ``i`` is the same each time it is read, and so whatever the
    number of loader workers.

    Args:
        dataset: the dataset sampled.
        size: the number of items of the sampled dataset.
        replacement: whether an item can be drawn again before every item was drawn.
        seed: the seed of the draws.

    Raises:
        ValueError: ``size`` is negative, or the dataset is empty and ``size`` is not 0.

    Example:
        >>> from burn_train.data import InMemDataset
        >>> SamplerDataset(InMemDataset(range(3)), 7, replacement=False, seed=0).len()
        7
    """

    def __init__(
        self, dataset: Dataset[I], size: int, *, replacement: bool = True, seed: int | None = None
    ) -> None:
        _check_dataset("SamplerDataset", dataset)
        length = dataset.len()
        if size < 0:
            raise ValueError(f"SamplerDataset: the size must be >= 0, got {size}")
        if length == 0 and size > 0:
            raise ValueError("SamplerDataset: cannot draw items from an empty dataset")
        rng = np.random.default_rng(seed)
        if replacement:
            indices = rng.integers(0, max(length, 1), size=size)
        else:
            passes = -(-size // length) if length else 0
            drawn = [rng.permutation(length) for _ in range(passes)]
            indices = np.concatenate(drawn)[:size] if drawn else np.zeros(0, dtype=np.int64)
        self._dataset = dataset
        self._indices = np.asarray(indices, dtype=np.int64)

    @classmethod
    def with_replacement(cls, dataset: Dataset[I], size: int, seed: int | None = None) -> SamplerDataset[I]:
        """``size`` items drawn with replacement."""
        return cls(dataset, size, replacement=True, seed=seed)

    @classmethod
    def without_replacement(
        cls, dataset: Dataset[I], size: int, seed: int | None = None
    ) -> SamplerDataset[I]:
        """``size`` items drawn without replacement (in passes over the dataset)."""
        return cls(dataset, size, replacement=False, seed=seed)

    def get(self, index: int) -> I | None:
        """The ``index``-th drawn item, or ``None`` out of range."""
        if 0 <= index < len(self._indices):
            return self._dataset.get(int(self._indices[index]))
        return None

    def len(self) -> int:
        """The sampled size."""
        return len(self._indices)


class ComposedDataset(Dataset[I]):
    """Several datasets one after the other, without copying (Burn's ``ComposedDataset``).

    Example:
        >>> from burn_train.data import InMemDataset
        >>> list(ComposedDataset([InMemDataset([1, 2]), InMemDataset([3])]))
        [1, 2, 3]
    """

    def __init__(self, datasets: Sequence[Dataset[I]]) -> None:
        for dataset in datasets:
            _check_dataset("ComposedDataset", dataset)
        self._datasets = list(datasets)
        self._ends: list[int] = []
        total = 0
        for dataset in self._datasets:
            total += dataset.len()
            self._ends.append(total)

    def get(self, index: int) -> I | None:
        """The item at ``index`` of the concatenation, or ``None`` out of range."""
        if not 0 <= index < (self._ends[-1] if self._ends else 0):
            return None
        which = bisect.bisect_right(self._ends, index)
        start = self._ends[which - 1] if which else 0
        return self._datasets[which].get(index - start)

    def len(self) -> int:
        """The sum of the lengths."""
        return self._ends[-1] if self._ends else 0


class WindowsDataset(Dataset[list[I]]):
    """The sliding windows of ``size`` consecutive items of a dataset (Burn's ``WindowsDataset``): item
    ``i`` is ``[d[i], ..., d[i + size - 1]]``, and there are ``len - size + 1`` of them.

    Raises:
        ValueError: ``size`` is below 1.

    Example:
        >>> from burn_train.data import InMemDataset
        >>> list(WindowsDataset(InMemDataset([1, 2, 3, 4]), 3))
        [[1, 2, 3], [2, 3, 4]]
    """

    def __init__(self, dataset: Dataset[I], size: int) -> None:
        _check_dataset("WindowsDataset", dataset)
        if size < 1:
            raise ValueError(f"WindowsDataset: the window size must be >= 1, got {size}")
        self._dataset = dataset
        self._size = int(size)

    @property
    def size(self) -> int:
        """The window size."""
        return self._size

    def get(self, index: int) -> list[I] | None:
        """The window starting at ``index``, or ``None`` out of range."""
        if not 0 <= index < self.len():
            return None
        items: list[Any] = [self._dataset.get(index + offset) for offset in range(self._size)]
        return None if any(item is None for item in items) else items

    def len(self) -> int:
        """``max(0, len - size + 1)``."""
        return max(0, self._dataset.len() - self._size + 1)
