"""Data-parallel training over processes (``LearnerBuilder.distributed``; started by
``python -m burn_train.launch``): what the Learner does differently in each process of a run.

- Rank 0's model is sent to every process before the first step (through the record format, in
  double precision so that no value changes), so the replicas start equal whatever each process drew.
- Each process trains on its own consecutive part of the train loader's items (and validates on its
  own part of the valid loader's). Every part has the same number of items, ``n // world_size``; the
  last ``n % world_size`` items are left out, as PyTorch's ``DistributedSampler`` does with
  ``drop_last``, so that every process takes the same number of steps and meets the others in each.
- After each step's backward the gradients are averaged over the processes: one all-reduce per dtype,
  over the gradients laid end to end (a bucket) followed by one flag per parameter saying the process
  has its gradient (a parameter no process used gets none, as on one device) and a flag saying the
  process was asked to stop (Ctrl-C, ``q``), so that every process stops after the same step.
- The epoch's metric values are averaged over the processes (each saw as many items), so every process
  stores the same history; rank 0 draws the dashboard, writes the checkpoints and the logs of the run's
  folder, and the other ranks log into ``rank-<r>`` beneath it.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from burn_backend import Device, Kind, ReduceOperation, Tensor
from burn_backend.distributed import ProcessGroup
from burn_nn import Module
from burn_nn.optim import GradientsParams

from ._multi_device import cut_apart, end_to_end
from .data import DataLoader

M = TypeVar("M", bound=Module)

__all__ = ["QuietRenderer", "averaged_across", "broadcast_model", "mean_across", "rank_part"]


def rank_part(loader: DataLoader[Any], group: ProcessGroup, what: str) -> DataLoader[Any]:
    """This process's part of ``loader``: items ``[r * k, (r + 1) * k)`` with ``k = n // world_size``.

    Raises:
        TypeError: ``loader`` is not a ``DataLoader`` (only those can be split).
        ValueError: fewer items than processes.
    """
    if not isinstance(loader, DataLoader):
        raise TypeError(
            f"Learner: distributed training splits the {what} loader across the processes, so it must be a "
            f"DataLoader (from DataLoaderBuilder), got {type(loader).__name__}"
        )
    size = loader.num_items() // group.world_size
    if size == 0:
        raise ValueError(
            f"Learner: the {what} loader has {loader.num_items()} items, fewer than the {group.world_size} "
            "processes of the run"
        )
    return loader.slice(group.rank * size, (group.rank + 1) * size)


def broadcast_model(model: M, group: ProcessGroup) -> M:
    """``model`` with rank 0's parameters and running state, in every process."""
    if group.world_size == 1:
        return model
    from burn_record import DoublePrecisionSettings, NamedMpkBytesRecorder

    recorder = NamedMpkBytesRecorder(DoublePrecisionSettings())  # every dtype fits f64/i64 exactly
    payload = group.broadcast_bytes(recorder.save(model.into_record()) if group.rank == 0 else b"")
    return model if group.rank == 0 else model.load_record(recorder.load(payload))


def averaged_across(
    grads: GradientsParams, model: Module, device: Device, group: ProcessGroup, stop: bool
) -> tuple[GradientsParams, bool]:
    """The mean over the processes of each parameter's gradient, and whether any process asked to stop.

    Args:
        grads: this process's gradients (on ``device``, the inner device), keyed by parameter id.
        model: the model (the same in every process): its parameters fix the buckets' layout.
        device: where the gradients are.
        group: the run's processes.
        stop: whether this process was asked to stop.

    Returns:
        The averaged gradients of the parameters some process has a gradient for, and the agreed stop.
    """
    if group.world_size == 1:
        return grads, stop
    params = [param for param in model.params() if param.require_grad and param.kind is Kind.FLOAT]
    buckets: dict[Any, list[Any]] = {}
    for param in params:
        buckets.setdefault(param.dtype, []).append(param)
    averaged = GradientsParams()
    stopping = False
    for index, bucket in enumerate(buckets.values()):
        parts, flags = [], []
        for param in bucket:
            tensor = grads.get(param.id)
            flags.append(0.0 if tensor is None else 1.0)
            if tensor is None:
                tensor = Tensor.zeros(param.shape, device=device, dtype=param.dtype)
            parts.append(tensor)
        if index == 0:
            flags.append(1.0 if stop else 0.0)
        parts.append(Tensor.from_data(np.array(flags, np.float32), device).cast(bucket[0].dtype))
        pieces = cut_apart(
            group.all_reduce(end_to_end(parts), ReduceOperation.MEAN),
            [p.shape for p in bucket] + [[len(flags)]],
        )
        present = pieces[-1].to_numpy() > 0  # one host read per bucket
        if index == 0:
            stopping = bool(present[-1])
        for param, used, mean in zip(bucket, present, pieces):
            if used:
                averaged.register(param.id, mean)
    if not buckets:  # nothing to average: still agree on stopping
        flag = np.array([1.0 if stop else 0.0])
        stopping = bool(group.all_reduce_array(flag, ReduceOperation.SUM)[0] > 0)
    return averaged, stopping


def mean_across(values: list[float], group: ProcessGroup) -> list[float]:
    """The mean of each value over the processes (each process passes its values in one order)."""
    if group.world_size == 1 or not values:
        return values
    return [float(v) for v in group.all_reduce_array(np.array(values, np.float64), ReduceOperation.MEAN)]


class QuietRenderer:
    """The renderer of the processes other than rank 0: draws nothing (rank 0 shows the run)."""

    def start(self, title: str, epoch_total: int, start_epoch: int) -> None:
        """Nothing to draw."""

    def update(self, progress: Any, entries: Any) -> None:
        """Nothing to draw."""

    def end_epoch(self, epoch: int, values: Any, seconds: float) -> None:
        """Nothing to draw."""

    def status(self, message: str) -> None:
        """Nothing to draw."""

    def close(self) -> None:
        """Nothing to close."""
