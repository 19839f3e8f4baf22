"""The data loader: batches, per-epoch seeded shuffling, identical batches whatever the number of worker
threads, prefetching, resuming mid-epoch, slicing across devices; PyTorch's DataLoader as the reference
for unshuffled batching."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Tensor, default_device
from burn_train.data import DataLoaderBuilder, InMemDataset, MapperDataset, split_dataloader


class ListBatcher:
    """Batches as plain lists, recording the device and the threads used."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.devices: list[Device] = []
        self.threads: set[str] = set()

    def batch(self, items: list[int], device: Device) -> list[int]:
        self.devices.append(device)
        self.threads.add(threading.current_thread().name)
        if self.delay:
            time.sleep(self.delay)
        return list(items)


class TensorBatcher:
    def batch(self, items: list[int], device: Device) -> Tensor:
        return Tensor.from_data(np.asarray(items, dtype=np.float32), device)


def _epochs(loader: Any, count: int) -> list[list[Any]]:
    return [list(loader) for _ in range(count)]


def test_batches_without_shuffle_match_torch() -> None:
    torch = pytest.importorskip("torch")
    items = list(range(103))
    ours = list(DataLoaderBuilder(ListBatcher()).batch_size(10).build(InMemDataset(items)))
    theirs = [batch.tolist() for batch in torch.utils.data.DataLoader(items, batch_size=10)]
    assert ours == theirs
    assert [len(b) for b in ours] == [10] * 10 + [3]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_the_same_batches_whatever_the_number_of_workers(workers: int) -> None:
    dataset = InMemDataset(list(range(250)))
    reference = _epochs(DataLoaderBuilder(ListBatcher()).batch_size(16).shuffle(5).build(dataset), 3)
    batcher = ListBatcher(delay=0.001)
    loader = DataLoaderBuilder(batcher).batch_size(16).shuffle(5).num_workers(workers).build(dataset)
    assert _epochs(loader, 3) == reference
    # a batch that no worker has started when it is due is made by the caller instead of waited for
    workers_used = {name for name in batcher.threads if name.startswith("burn-data")}
    assert workers_used, batcher.threads
    assert batcher.threads - workers_used <= {threading.current_thread().name}


def test_each_epoch_is_a_new_seeded_permutation() -> None:
    dataset = InMemDataset(list(range(50)))
    loader = DataLoaderBuilder(ListBatcher()).batch_size(7).shuffle(11).build(dataset)
    epochs = [[x for batch in epoch for x in batch] for epoch in _epochs(loader, 3)]
    for number, order in enumerate(epochs, start=1):
        assert sorted(order) == list(range(50))
        assert order == list(np.random.default_rng([11, number]).permutation(50))
    assert epochs[0] != epochs[1] != epochs[2]
    again = DataLoaderBuilder(ListBatcher()).batch_size(7).shuffle(11).build(dataset)
    assert [[x for b in e for x in b] for e in _epochs(again, 3)] == epochs  # the same seed, the same run


def test_workers_prefetch_in_parallel() -> None:
    # counted rather than timed: a loaded machine stretches times, not the overlap of 20 ms sleeps
    lock, running, most = threading.Lock(), [0], [0]

    class Overlapping:
        def batch(self, items: list[int], device: Device) -> list[int]:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.02)
            with lock:
                running[0] -= 1
            return items

    loader = (
        DataLoaderBuilder(Overlapping()).batch_size(4).num_workers(4).build(InMemDataset(list(range(64))))
    )
    assert [x for batch in loader for x in batch] == list(range(64))
    assert most[0] >= 2, most  # batches were being made side by side


def test_resume_mid_epoch_continues_the_same_sequence() -> None:
    dataset = InMemDataset(list(range(40)))

    def build() -> Any:
        return DataLoaderBuilder(ListBatcher()).batch_size(6).shuffle(3).num_workers(2).build(dataset)

    reference = _epochs(build(), 3)
    first = build()
    list(first)
    iterator = first.iter()
    taken = [next(iterator), next(iterator), next(iterator)]
    state = first.state()
    assert state == {"epoch": 2, "position": 3, "complete": False}
    iterator.close()
    resumed = build().load_state(state)
    rest = list(resumed)
    assert taken + rest == reference[1]
    assert resumed.state() == {"epoch": 2, "position": 7, "complete": True}
    assert list(resumed) == reference[2]
    after_complete = build().load_state({"epoch": 1, "position": 7, "complete": True})
    assert list(after_complete) == reference[1]
    with pytest.raises(ValueError, match="expected"):
        build().load_state({"epoch": 1})


def test_progress_device_and_errors() -> None:
    dataset = InMemDataset(list(range(10)))
    batcher = ListBatcher()
    device = default_device()
    loader = DataLoaderBuilder(batcher).batch_size(4).set_device(device).build(dataset)
    iterator = loader.iter()
    next(iterator)
    assert iterator.progress() == (4, 10)
    assert batcher.devices == [device]
    assert (loader.num_items(), loader.num_batches(), len(loader)) == (10, 3, 3)

    def fail(item: int) -> int:
        if item == 7:
            raise RuntimeError("item 7 is broken")
        return item

    broken = DataLoaderBuilder(ListBatcher()).batch_size(2).num_workers(2).build(MapperDataset(dataset, fail))
    with pytest.raises(RuntimeError, match="item 7 is broken"):
        list(broken)
    with pytest.raises(ValueError, match="batch_size: expected an int >= 1"):
        DataLoaderBuilder(batcher).batch_size(0)
    with pytest.raises(TypeError, match="expected a batcher"):
        DataLoaderBuilder(object())  # type: ignore[arg-type]


def test_tensors_made_by_workers() -> None:
    dataset = InMemDataset(list(range(20)))
    loader = DataLoaderBuilder(TensorBatcher()).batch_size(8).num_workers(3).build(dataset)
    batches = list(loader)
    assert [b.tolist() for b in batches] == [list(map(float, range(i, min(i + 8, 20)))) for i in (0, 8, 16)]
    assert batches[0].device == default_device()


def test_slices_and_split_across_devices() -> None:
    dataset = InMemDataset(list(range(10)))
    loader = DataLoaderBuilder(ListBatcher()).batch_size(3).build(dataset)
    assert list(loader.slice(2, 6)) == [[2, 3, 4], [5]]
    device = default_device()
    parts = split_dataloader(loader, [device, device, device])
    assert [[x for b in part for x in b] for part in parts] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert all(part.device == device for part in parts)
    with pytest.raises(ValueError, match="at least one device"):
        split_dataloader(loader, [])


def test_drop_last_matches_torch_with_shuffling_workers_resume_and_splits() -> None:
    torch = pytest.importorskip("torch")
    items = list(range(103))
    ours = list(DataLoaderBuilder(ListBatcher()).batch_size(10).drop_last().build(InMemDataset(items)))
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(items, batch_size=10, drop_last=True)]
    assert ours == theirs
    assert [len(b) for b in ours] == [10] * 10
    dataset = InMemDataset(list(range(50)))
    shuffled = DataLoaderBuilder(ListBatcher()).batch_size(8).shuffle(3).drop_last()
    loader = shuffled.build(dataset)
    assert len(loader) == loader.num_batches() == 6
    assert len(DataLoaderBuilder(ListBatcher()).batch_size(8).build(dataset)) == 7
    epochs = _epochs(loader, 2)
    for number, epoch in enumerate(epochs, start=1):
        assert [len(b) for b in epoch] == [8] * 6
        assert [x for b in epoch for x in b] == list(np.random.default_rng([3, number]).permutation(50)[:48])
    assert epochs[0] != epochs[1]  # other items left out each epoch
    assert _epochs(shuffled.num_workers(3).build(dataset), 2) == epochs
    iterator = loader.iter()  # epoch 3
    first = [next(iterator) for _ in range(2)]
    assert iterator.progress() == (16, 48)
    resumed = shuffled.build(dataset).load_state(loader.state())
    rest = list(resumed)
    assert first + rest == list(np.random.default_rng([3, 3]).permutation(50)[:48].reshape(6, 8).tolist())
    devices = [default_device(), default_device()]
    parts = split_dataloader(
        DataLoaderBuilder(ListBatcher()).batch_size(8).drop_last().build(dataset), devices
    )
    assert [[len(b) for b in part] for part in parts] == [[8, 8, 8], [8, 8, 8]]  # 25 items each: 1 dropped
    with pytest.raises(TypeError, match="drop_last: expected a bool"):
        DataLoaderBuilder(ListBatcher()).drop_last(1)  # type: ignore[arg-type]
