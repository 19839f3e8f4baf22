"""The ``Batcher`` protocol and the data loader: ``DataLoaderBuilder(batcher).batch_size(n).shuffle(seed)
.num_workers(n).set_device(d).build(dataset)`` (Burn's ``burn::data::dataloader``)."""

from __future__ import annotations

import collections
import copy
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from burn_backend import Device, default_device

from ._dataset import Dataset
from ._transform import PartialDataset

__all__ = ["Batcher", "DataLoader", "DataLoaderBuilder", "DataLoaderIterator", "split_dataloader"]

I = TypeVar("I")  # noqa: E741
B = TypeVar("B")
B_co = TypeVar("B_co", covariant=True)


class Batcher(Protocol[I, B_co]):
    """Turns a list of dataset items into one batch on a device (Burn's ``Batcher`` trait).

    A batcher is called from the loader's worker threads, so ``batch`` must not depend on shared
    mutable state.

    Example:
        >>> class MnistBatcher:
        ...     def batch(self, items, device):
        ...         images = np.stack([item.image for item in items])
        ...         labels = [item.label for item in items]
        ...         return Tensor.from_data(images, device), Tensor.from_data(labels, device)
    """

    def batch(self, items: list[I], device: Device) -> B_co:
        """The batch of ``items`` with its tensors on ``device``."""
        ...


class DataLoaderBuilder(Generic[I, B]):
    """Configures a ``DataLoader`` (Burn's ``DataLoaderBuilder``).

    Args:
        batcher: what turns items into a batch.

    Example:
        >>> loader = (
        ...     DataLoaderBuilder(MnistBatcher())
        ...     .batch_size(64)
        ...     .shuffle(42)
        ...     .num_workers(4)
        ...     .build(MnistDataset.train())
        ... )  # doctest: +SKIP
    """

    def __init__(self, batcher: Batcher[I, B]) -> None:
        if not callable(getattr(batcher, "batch", None)):
            raise TypeError(
                f"DataLoaderBuilder: expected a batcher (an object with batch(items, device)), got "
                f"{type(batcher).__name__}"
            )
        self._batcher = batcher
        self._batch_size = 1
        self._seed: int | None = None
        self._num_workers = 0
        self._prefetch = 2
        self._device: Device | None = None
        self._drop_last = False

    def batch_size(self, batch_size: int) -> DataLoaderBuilder[I, B]:
        """Items per batch (the last batch of an epoch may be smaller; see ``drop_last``).

        Raises:
            ValueError: ``batch_size`` is below 1.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"DataLoaderBuilder.batch_size: expected an int >= 1, got {batch_size!r}")
        self._batch_size = batch_size
        return self

    def shuffle(self, seed: int) -> DataLoaderBuilder[I, B]:
        """Shuffle the items, in a new order each epoch, fixed by ``seed`` (epoch ``e``'s order depends
        on ``seed`` and ``e`` only, so a resumed run sees the same orders)."""
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"DataLoaderBuilder.shuffle: expected a seed int >= 0, got {seed!r}")
        self._seed = seed
        return self

    def drop_last(self, drop: bool = True) -> DataLoaderBuilder[I, B]:
        """Drop the last batch of each epoch when it is smaller than the batch size (PyTorch's
        ``drop_last``): every batch then has ``batch_size`` items, and ``len(loader)`` counts only those.
        With ``shuffle`` the items left out change from epoch to epoch; a loader split across devices or
        processes drops each part's last, incomplete batch. Use it where a small batch harms training,
        as with batch normalization (its statistics from a handful of items), not for validation.

        Raises:
            TypeError: ``drop`` is not a bool.

        Example:
            >>> builder = DataLoaderBuilder(MnistBatcher()).batch_size(64).drop_last()
        """
        if not isinstance(drop, bool):
            raise TypeError(f"DataLoaderBuilder.drop_last: expected a bool, got {type(drop).__name__}")
        self._drop_last = drop
        return self

    def num_workers(self, num_workers: int) -> DataLoaderBuilder[I, B]:
        """Worker threads reading and batching ahead (0: in the caller's thread). Whatever the number,
        the batches are the same, in the same order.

        Raises:
            ValueError: ``num_workers`` is negative.
        """
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoaderBuilder.num_workers: expected an int >= 0, got {num_workers!r}")
        self._num_workers = num_workers
        return self

    def prefetch(self, batches_per_worker: int) -> DataLoaderBuilder[I, B]:
        """How many batches each worker may prepare ahead of the consumer (default 2).

        Raises:
            ValueError: below 1.
        """
        if isinstance(batches_per_worker, bool) or not isinstance(batches_per_worker, int):
            raise ValueError(f"DataLoaderBuilder.prefetch: expected an int >= 1, got {batches_per_worker!r}")
        if batches_per_worker < 1:
            raise ValueError(f"DataLoaderBuilder.prefetch: expected an int >= 1, got {batches_per_worker}")
        self._prefetch = batches_per_worker
        return self

    def set_device(self, device: Device) -> DataLoaderBuilder[I, B]:
        """The device batches are made on (default: the default device when the loader is built)."""
        if not isinstance(device, Device):
            raise TypeError(f"DataLoaderBuilder.set_device: expected a Device, got {type(device).__name__}")
        self._device = device
        return self

    def build(self, dataset: Dataset[I]) -> DataLoader[B]:
        """The data loader over ``dataset``.

        Raises:
            TypeError: ``dataset`` has no ``get`` and ``len``.
        """
        if not (callable(getattr(dataset, "get", None)) and callable(getattr(dataset, "len", None))):
            raise TypeError(
                "DataLoaderBuilder.build: expected a dataset (with get and len), got "
                f"{type(dataset).__name__}"
            )
        return DataLoader(
            self._batcher,
            dataset,
            batch_size=self._batch_size,
            seed=self._seed,
            num_workers=self._num_workers,
            prefetch=self._prefetch,
            device=self._device if self._device is not None else default_device(),
            drop_last=self._drop_last,
        )


class DataLoader(Generic[B]):
    """Batches of a dataset, epoch after epoch (Burn's ``DataLoader``; made by ``DataLoaderBuilder``).

    Each ``iter()`` (or ``for batch in loader``) is one epoch: with ``shuffle(seed)``, epoch ``e``
    visits the items in the order of a permutation drawn from ``(seed, e)``. Worker threads make the
    batches ahead; the batches come out in order whatever their number. ``state()`` tells which epoch
    and batch the loader is at, and ``load_state`` makes the next ``iter()`` continue from there, so a
    checkpoint can resume mid-epoch.

    Example:
        >>> for images, labels in loader:  # doctest: +SKIP
        ...     ...
    """

    def __init__(
        self,
        batcher: Batcher[Any, B],
        dataset: Dataset[Any],
        *,
        batch_size: int,
        seed: int | None,
        num_workers: int,
        prefetch: int,
        device: Device,
        drop_last: bool = False,
    ) -> None:
        self._batcher = batcher
        self._dataset = dataset
        self._batch_size = batch_size
        self._seed = seed
        self._num_workers = num_workers
        self._prefetch = prefetch
        self._device = device
        self._drop_last = drop_last
        self._epoch = 0  # epochs started
        self._position = 0  # batches handed out in the current epoch
        self._complete = True  # whether the current epoch was fully handed out
        self._resume_at: int | None = None  # from load_state: the batch the next iter() starts at
        self._lock = threading.Lock()

    # -- what it serves -----------------------------------------------------------------------------
    @property
    def device(self) -> Device:
        """The device batches are made on."""
        return self._device

    @property
    def batch_size(self) -> int:
        """Items per batch."""
        return self._batch_size

    @property
    def drop_last(self) -> bool:
        """Whether the last, incomplete batch of each epoch is dropped."""
        return self._drop_last

    @property
    def num_workers(self) -> int:
        """The number of worker threads."""
        return self._num_workers

    @property
    def dataset(self) -> Dataset[Any]:
        """The dataset read."""
        return self._dataset

    def num_items(self) -> int:
        """Items of the dataset (with ``drop_last``, an epoch hands out ``num_batches() * batch_size``
        of them)."""
        return self._dataset.len()

    def num_batches(self) -> int:
        """Batches per epoch (the last, incomplete one left out with ``drop_last``)."""
        if self._drop_last:
            return self.num_items() // self._batch_size
        return -(-self.num_items() // self._batch_size)

    def __len__(self) -> int:
        return self.num_batches()

    def order(self, epoch: int) -> np.ndarray:
        """The item indices in the order epoch ``epoch`` (from 1) visits them."""
        count = self.num_items()
        if self._seed is None:
            return np.arange(count)
        return np.random.default_rng([self._seed, epoch]).permutation(count)

    # -- epochs -------------------------------------------------------------------------------------
    def iter(self) -> DataLoaderIterator[B]:
        """One epoch's batches: the next epoch, or the rest of the epoch ``load_state`` names."""
        with self._lock:
            if self._resume_at is not None:
                start, self._resume_at = self._resume_at, None
            else:
                self._epoch += 1
                start = 0
            self._position = start
            self._complete = start >= self.num_batches()
            epoch = self._epoch
        return DataLoaderIterator(self, epoch, start)

    def __iter__(self) -> Iterator[B]:
        return self.iter()

    def state(self) -> dict[str, int | bool]:
        """Where the loader is: ``epoch`` (epochs started, from 1), ``position`` (batches of it handed
        out) and ``complete`` (whether it handed out all of them)."""
        with self._lock:
            return {"epoch": self._epoch, "position": self._position, "complete": self._complete}

    def load_state(self, state: dict[str, Any]) -> DataLoader[B]:
        """Continue from ``state`` (as ``state()`` returned it, possibly in another process): the next
        ``iter()`` is the epoch after a complete one, or the rest of an incomplete one.

        Returns:
            This loader.

        Raises:
            ValueError: the state lacks ``epoch`` or ``position`` or holds negative numbers.
        """
        try:
            epoch, position = int(state["epoch"]), int(state["position"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"DataLoader.load_state: expected {{'epoch': int, 'position': int, ...}}, got {state!r}"
            ) from None
        if epoch < 0 or position < 0:
            raise ValueError(f"DataLoader.load_state: negative epoch or position in {state!r}")
        complete = bool(state.get("complete", position >= self.num_batches()))
        with self._lock:
            if complete:
                self._epoch, self._position, self._complete, self._resume_at = epoch, 0, True, None
            else:
                self._epoch, self._position, self._complete = epoch, position, False
                self._resume_at = position
        return self

    def _advance(self, epoch: int, position: int, complete: bool) -> None:
        with self._lock:
            if epoch == self._epoch:
                self._position = position
                self._complete = complete

    # -- views --------------------------------------------------------------------------------------
    def to_device(self, device: Device) -> DataLoader[B]:
        """A loader making the same batches on ``device`` (its epoch count starts where this one is)."""
        if not isinstance(device, Device):
            raise TypeError(f"DataLoader.to_device: expected a Device, got {type(device).__name__}")
        moved = copy.copy(self)
        moved._device = device
        moved._lock = threading.Lock()
        return moved

    def slice(self, start: int, end: int) -> DataLoader[B]:
        """A loader over the items ``[start, end)`` of the dataset (same batcher, seed, workers)."""
        sliced = copy.copy(self)
        sliced._dataset = PartialDataset(self._dataset, start, end)
        sliced._lock = threading.Lock()
        return sliced

    def _make(self, indices: np.ndarray) -> B:
        items = []
        for index in indices:
            item = self._dataset.get(int(index))
            if item is None:
                raise IndexError(
                    f"DataLoader: {type(self._dataset).__name__}.get({int(index)}) returned None; its len() "
                    f"is {self._dataset.len()}"
                )
            items.append(item)
        return self._batcher.batch(items, self._device)

    def __repr__(self) -> str:
        return (
            f"DataLoader({self.num_items()} items, batch_size={self._batch_size}, shuffle={self._seed}, "
            f"drop_last={self._drop_last}, num_workers={self._num_workers}, device={self._device})"
        )


class DataLoaderIterator(Iterator[B]):
    """One epoch of a ``DataLoader``: yields its batches in order, made ahead by the worker threads.

    ``progress()`` gives ``(items_processed, items_total)``. Closing it (or dropping it) stops the
    workers.
    """

    def __init__(self, loader: DataLoader[B], epoch: int, start: int) -> None:
        self._loader = loader
        self._epoch = epoch
        order = loader.order(epoch)
        size = loader.batch_size
        self._batches = [order[i : i + size] for i in range(0, len(order), size)]
        if loader.drop_last and self._batches and len(self._batches[-1]) < size:
            self._batches.pop()
        self._items_total = sum(len(batch) for batch in self._batches)
        self._next = start
        self._items_done = sum(len(b) for b in self._batches[:start])
        self._pending: collections.deque[tuple[int, Future[B]]] = collections.deque()
        self._submitted = start
        self._pool: ThreadPoolExecutor | None = None
        if loader.num_workers > 0 and start < len(self._batches):
            self._pool = ThreadPoolExecutor(loader.num_workers, thread_name_prefix="burn-data")

    @property
    def epoch(self) -> int:
        """The epoch this iterator serves (from 1)."""
        return self._epoch

    @property
    def position(self) -> int:
        """Batches handed out so far in this epoch (those before a resume point included)."""
        return self._next

    def progress(self) -> tuple[int, int]:
        """``(items handed out, items in the epoch)`` (without a dropped last batch)."""
        return self._items_done, self._items_total

    def __iter__(self) -> DataLoaderIterator[B]:
        return self

    def _fill(self) -> None:
        pool = self._pool
        assert pool is not None
        window = self._loader.num_workers * self._loader._prefetch
        while self._submitted < len(self._batches) and len(self._pending) < window:
            index = self._submitted
            future = pool.submit(self._loader._make, self._batches[index])
            self._pending.append((index, future))
            self._submitted += 1

    def __next__(self) -> B:
        if self._next >= len(self._batches):
            self.close()
            raise StopIteration
        index = self._next
        try:
            if self._pool is None:
                batch = self._loader._make(self._batches[index])
            else:
                self._fill()
                _, future = self._pending.popleft()
                # a batch no worker has started yet is made here rather than waited for: the caller
                # never idles behind the queue (busy cores can leave it unstarted)
                batch = self._loader._make(self._batches[index]) if future.cancel() else future.result()
                self._fill()
        except BaseException:
            self.close()
            raise
        self._next += 1
        self._items_done += len(self._batches[index])
        self._loader._advance(self._epoch, self._next, self._next >= len(self._batches))
        return batch

    def close(self) -> None:
        """Stop the workers and drop the batches made ahead."""
        if not hasattr(self, "_pool"):
            return  # construction failed
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __del__(self) -> None:
        self.close()


def split_dataloader(loader: DataLoader[B], devices: Sequence[Device]) -> list[DataLoader[B]]:
    """One loader per device over consecutive, nearly equal parts of ``loader``'s items (Burn's
    ``split_dataloader``), each making its batches on its device.

    Raises:
        ValueError: ``devices`` is empty.

    Example:
        >>> parts = split_dataloader(loader, [device0, device1])  # doctest: +SKIP
    """
    if not devices:
        raise ValueError("split_dataloader: expected at least one device")
    count = loader.num_items()
    size, extra = divmod(count, len(devices))
    parts, start = [], 0
    for i, device in enumerate(devices):
        end = start + size + (1 if i < extra else 0)
        parts.append(loader.slice(start, end).to_device(device))
        start = end
    return parts
