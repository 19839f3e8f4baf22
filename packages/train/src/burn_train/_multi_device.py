"""Data-parallel training over several devices: the train loader split across them and one step per
device, whose gradients meet on the first device.

Each step takes one batch per device from loaders that advance in lockstep (``split_dataloader``: each
device reads its own consecutive part of the data set, as Burn's multi-device learner does), runs the
model's ``train_step`` on a copy of the model forked to that device, device after device, and averages
the gradients with an all-reduce (``burn_backend.distributed``; NCCL between GPUs), one per dtype over
the gradients laid end to end. The optimizer then steps the first device's model once, and the next
step forks the updated parameters again. Averaging (rather than Burn's sum) is PyTorch DDP's
convention: ``n`` devices with batches of ``b`` items train like one device with batches of ``n * b``,
so a learning rate tuned on one device carries over.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from burn_backend import Device, ReduceOperation, Tensor, distributed
from burn_nn import Module
from burn_nn.optim import GradientsParams

from ._output import TrainOutput, run_train_step
from .data import DataLoader, split_dataloader

B = TypeVar("B")

__all__ = ["SplitLoader", "data_parallel_step"]


class SplitLoader(Generic[B]):
    """One ``DataLoader`` per device over consecutive parts of a loader's items, iterated in lockstep:
    each item of an epoch is the list of the devices' next batches (devices whose part has run out
    give none, so the last lists can be shorter).

    ``state()``/``load_state`` are the first part's (the parts advance together), so a checkpoint of a
    multi-device run resumes mid-epoch like a single-device one.

    Example:
        >>> loader = SplitLoader(train_loader, [device0, device1])  # doctest: +SKIP
        >>> for batches in loader:  # doctest: +SKIP
        ...     assert len(batches) <= 2
    """

    def __init__(self, loader: DataLoader[B], devices: Sequence[Device]) -> None:
        if not isinstance(loader, DataLoader):
            raise TypeError(
                f"Learner: training on {len(devices)} devices splits the train loader across them, so it "
                f"must be a DataLoader (from DataLoaderBuilder), got {type(loader).__name__}"
            )
        self.parts: list[DataLoader[B]] = split_dataloader(loader, devices)
        self.devices = list(devices)

    def __len__(self) -> int:
        return max(len(part) for part in self.parts)

    def num_items(self) -> int:
        """Items per epoch, over every device."""
        return sum(part.num_items() for part in self.parts)

    def batches_before(self, position: int) -> int:
        """The batches every device together handed out in the first ``position`` steps of an epoch."""
        return sum(min(position, len(part)) for part in self.parts)

    def iter(self) -> _LockstepIterator[B]:
        """One epoch: lists of batches, one per device that still has one."""
        return _LockstepIterator(self, [part.iter() for part in self.parts])

    def __iter__(self) -> Iterator[list[B]]:
        return self.iter()

    def state(self) -> dict[str, int | bool]:
        """The first part's state (epoch, position, complete); the others are at the same place."""
        return self.parts[0].state()

    def load_state(self, state: dict[str, Any]) -> SplitLoader[B]:
        """Continue every part from ``state`` (as ``state()`` returned it)."""
        for part in self.parts:
            part.load_state(state)
        return self


class _LockstepIterator(Iterator[list[B]]):
    """An epoch of a ``SplitLoader``: the parts' iterators advanced together."""

    def __init__(self, loader: SplitLoader[B], iterators: list[Any]) -> None:
        self._loader = loader
        self._iterators = iterators
        self._live = [True] * len(iterators)

    @property
    def position(self) -> int:
        """Steps taken in this epoch (the first part's batches handed out)."""
        return int(self._iterators[0].position)

    def progress(self) -> tuple[int, int]:
        """``(items handed out, items in the epoch)`` over every device."""
        done = sum(iterator.progress()[0] for iterator in self._iterators)
        return done, self._loader.num_items()

    def __next__(self) -> list[B]:
        batches = []
        for i, iterator in enumerate(self._iterators):
            if not self._live[i]:
                continue
            try:
                batches.append(next(iterator))
            except StopIteration:
                self._live[i] = False
        if not batches:
            raise StopIteration
        return batches

    def close(self) -> None:
        """Stop every part's workers."""
        for iterator in self._iterators:
            iterator.close()


def data_parallel_step(
    model: Module, devices: Sequence[Device], batches: Sequence[Any]
) -> tuple[list[TrainOutput[Any]], GradientsParams]:
    """Run ``model.train_step`` on each batch, the ``i``-th on ``devices[i]``, and average the gradients
    with one all-reduce per dtype (``burn_backend.distributed``: NCCL between GPUs, copies elsewhere).

    The devices' steps run one after the other in this thread, in device order, so that random draws
    (dropout) come in the same order every run, even where two devices share a generator (a router over
    two equal CPU backends); on GPUs the kernels of one device still run while the next device's are
    launched, since nothing waits for them.

    Args:
        model: the model on ``devices[0]``, an autodiff device; it must implement ``train_step``.
        devices: the devices, the model's first.
        batches: at most one batch per device, each made on its device (the first ``len(batches)``
            devices take part).

    Returns:
        The steps' outputs (in device order) and the averaged gradients, on the first device's inner
        backend, keyed by the model's parameter ids.

    Raises:
        TypeError: a ``train_step`` did not return a ``TrainOutput``.
    """
    devices = list(devices)[: len(batches)]
    outputs: list[TrainOutput[Any]] = []
    for rank, (device, batch) in enumerate(zip(devices, batches)):
        replica = model if rank == 0 else model.fork(device)
        outputs.append(run_train_step(replica, batch))
    inner = [d.backend.inner_device(d) if d.backend.is_autodiff else d for d in devices]  # type: ignore[attr-defined]
    return outputs, _averaged([output.grads for output in outputs], inner)


def _averaged(grads: list[GradientsParams], devices: list[Device]) -> GradientsParams:
    """The mean of every device's gradients, on the first device's inner backend: each device's gradients
    laid end to end in one vector per dtype (a bucket), one all-reduce per bucket, then cut apart."""
    averaged = GradientsParams()
    if len(grads) == 1:
        return grads[0]
    ids = list(dict.fromkeys(param_id for g in grads for param_id in g.param_ids()))
    reference: dict[Any, Tensor] = {}
    for param_id in ids:
        found = [g.get(param_id) for g in grads]
        reference[param_id] = next(t for t in found if t is not None)
    buckets: dict[Any, list[Any]] = {}
    for param_id in ids:
        buckets.setdefault(reference[param_id].dtype, []).append(param_id)
    for bucket in buckets.values():
        flats = []
        for g, device in zip(grads, devices):
            parts = []
            for param_id in bucket:
                tensor = g.get(param_id)
                if tensor is None:  # unused by this device's step: contributes zeros, as in DDP
                    like = reference[param_id]
                    tensor = Tensor.zeros(like.shape, device=device, dtype=like.dtype)
                parts.append(tensor)
            flats.append(end_to_end(parts))
        mean = distributed.all_reduce(flats, ReduceOperation.MEAN)[0]
        for param_id, part in zip(bucket, cut_apart(mean, [reference[i].shape for i in bucket])):
            averaged.register(param_id, part)
    return averaged


def end_to_end(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors (of one dtype, on one device) flattened and laid end to end in one vector: a bucket,
    so that one collective carries them all."""
    flat = [tensor.reshape([-1]) for tensor in tensors]
    return Tensor.cat(flat, 0) if len(flat) > 1 else flat[0]


def cut_apart(flat: Tensor, shapes: Sequence[Any]) -> list[Tensor]:
    """The tensors of ``shapes`` laid end to end at the start of ``flat`` (``end_to_end``'s inverse)."""
    parts, offset = [], 0
    for shape in shapes:
        size = math.prod(shape)
        parts.append(flat.narrow(0, offset, size).reshape(shape))
        offset += size
    return parts
