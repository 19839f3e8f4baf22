"""Data-parallel training over processes (``LearnerBuilder.distributed``; started by
``python -m burn_train.launch``): what the Learner does differently in each process of a run.

- Rank 0's model is sent to every process before the first step (through the record format, in
  double precision so that no value changes), so the replicas start equal whatever each process drew.
- Each process trains on its own consecutive part of the train loader's items (and validates on its
  own part of the valid loader's). Every part has the same number of items, ``n // world_size``; the
  last ``n % world_size`` items are left out, as PyTorch's ``DistributedSampler`` does with
  ``drop_last``, so that every process takes the same number of steps and meets the others in each.
- Gradients are averaged over the processes while backward still runs (``GradientSync``, PyTorch
  DDP's arrangement): the parameters are laid end to end in buckets, in reverse order (the last layers'
  gradients are complete first), the first bucket small so that sending starts early; a bucket's
  all-reduce starts as soon as backward has completed each of its gradients, buckets in one order in
  every process. After the step one small all-reduce says which parameters some process has a gradient
  for (a parameter no process used gets none, as on one device), whether a process changed a gradient
  after it was sent (then every process averages the step's final gradients again), and whether a
  process was asked to stop (Ctrl-C, ``q``), so that every process stops after the same step. With
  gradient accumulation, only the accumulated gradients are averaged, once per optimizer step (no
  ``watch``: every bucket starts in ``finish``).
- The epoch's metric values are averaged over the processes (each saw as many items), so every process
  stores the same history; rank 0 draws the dashboard, writes the checkpoints and the logs of the run's
  folder, and the other ranks log into ``rank-<r>`` beneath it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

import numpy as np

from burn_backend import Device, Kind, ReduceOperation, Tensor, watch_gradients
from burn_backend.distributed import ProcessGroup
from burn_nn import Module
from burn_nn.optim import GradientsParams

from ._multi_device import cut_apart, end_to_end
from .data import DataLoader

M = TypeVar("M", bound=Module)

__all__ = ["GradientSync", "QuietRenderer", "broadcast_model", "mean_across", "rank_part"]

_FIRST_BUCKET_BYTES = 1 << 20  # PyTorch DDP's sizes: a small first bucket starts sending early
_BUCKET_BYTES = 25 << 20


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


class GradientSync:
    """Averages one process's gradients with the other processes' while its backward still runs
    (what ``LearnerBuilder.distributed`` does each step; for a custom training loop, PyTorch's
    ``DistributedDataParallel``).

    The parameters are laid end to end in buckets, in reverse order (the last layers' gradients are
    complete first), one dtype each, the first bucket small so that sending starts early. Inside
    ``watch``, each bucket's all-reduce starts (``ProcessGroup.all_reduce_async``) as soon as backward
    has completed all of its gradients, buckets in one order in every process. ``finish`` sends what
    backward did not complete, agrees with the other processes on which parameters have a gradient and
    on stopping, and returns the means. A gradient changed after it was sent (clipped in the step, say)
    is noticed there, and every process then averages the step's final gradients again.

    Args:
        model: the model, the same in every process (its float parameters that require a gradient).
        device: the inner (non-autodiff) device the gradients are on.
        group: the run's processes.
        first_bucket_bytes: the size cap of the first bucket (PyTorch's 1 MiB).
        bucket_bytes: the size cap of the others (PyTorch's 25 MiB).

    Example:
        >>> sync = GradientSync(model, device.backend.inner_device(device), group)  # doctest: +SKIP
        >>> with sync.watch(model):  # doctest: +SKIP
        ...     grads = GradientsParams.from_grads(model.loss(batch).backward(), model)
        >>> grads, stop = sync.finish(grads, stop=False)  # doctest: +SKIP
        >>> model = optimizer.step(lr, model, grads)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: Module,
        device: Device,
        group: ProcessGroup,
        first_bucket_bytes: int = _FIRST_BUCKET_BYTES,
        bucket_bytes: int = _BUCKET_BYTES,
    ) -> None:
        self.device, self.group = device, group
        self.first_bucket_bytes, self.bucket_bytes = first_bucket_bytes, bucket_bytes
        self.redone = 0  # steps whose gradients were averaged again (changed after they were sent)
        self._lay_out(_float_params(model))

    def _lay_out(self, params: list[Any]) -> None:
        """Buckets over ``params`` in reverse order, one dtype each, within the size caps."""
        self.ids = [param.id for param in params]
        self.shapes = [list(param.shape) for param in params]
        self.dtypes = [param.dtype for param in params]
        self.buckets: list[list[int]] = []  # positions in self.ids
        size, cap = 0, self.first_bucket_bytes
        for position in reversed(range(len(params))):
            nbytes = math.prod(self.shapes[position]) * self.dtypes[position].size
            last = self.buckets[-1] if self.buckets else None
            if last is None or self.dtypes[last[0]] != self.dtypes[position] or size + nbytes > cap:
                if last is not None:
                    cap = self.bucket_bytes
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(position)
            size += nbytes
        self.bucket_of = {p: b for b, bucket in enumerate(self.buckets) for p in bucket}
        self._reset()

    def _reset(self) -> None:
        self._sent: list[Tensor | None] = [None] * len(self.ids)
        self._waiting = [len(bucket) for bucket in self.buckets]
        self._started: list[Future[Tensor]] = []

    @contextlib.contextmanager
    def watch(self, model: Module) -> Iterator[None]:
        """The block in which the step's backward runs: each bucket is sent once its gradients are
        complete. ``model`` is the step's model (its parameters are the ones watched)."""
        params = _float_params(model)
        if [param.id for param in params] != self.ids:  # a checkpoint was loaded: new ids
            self._lay_out(params)
        self._reset()
        with watch_gradients([param.val() for param in params], self._ready):
            yield

    def _ready(self, position: int, gradient: Tensor) -> None:
        bucket = self.bucket_of[position]
        if self._sent[position] is not None:  # a second backward in this step
            if bucket >= len(self._started):  # not sent yet: the newer gradient goes
                self._sent[position] = gradient
            return  # sent: finish sees that the step's gradient is another one
        self._sent[position] = gradient
        self._waiting[bucket] -= 1
        while len(self._started) < len(self.buckets) and self._waiting[len(self._started)] == 0:
            self._start(len(self._started))

    def _start(self, bucket: int) -> None:
        parts = []
        for position in self.buckets[bucket]:
            sent = self._sent[position]
            if sent is None:
                sent = Tensor.zeros(self.shapes[position], device=self.device, dtype=self.dtypes[position])
            parts.append(sent)
        self._started.append(self.group.all_reduce_async(end_to_end(parts), ReduceOperation.MEAN))

    def finish(self, grads: GradientsParams, stop: bool) -> tuple[GradientsParams, bool]:
        """The mean over the processes of each parameter's gradient, and whether any process asked to
        stop; every process calls it after its step.

        Args:
            grads: the step's final gradients, keyed by parameter id.
            stop: whether this process was asked to stop.

        Returns:
            The averaged gradients of the parameters some process has one for (a process without one
            counts zeros, as in PyTorch), and whether any process asked to stop.
        """
        early = len(self._started)
        sent = list(self._sent)
        final = [grads.get(param_id) for param_id in self.ids]
        changed = any(
            (sent[p] is None) != (final[p] is None)
            or (final[p] is not None and final[p].primitive is not sent[p].primitive)  # type: ignore[union-attr]
            for bucket in self.buckets[:early]
            for p in bucket
        )
        self._sent = final
        for bucket in range(early, len(self.buckets)):
            self._start(bucket)
        flags = np.array([t is not None for t in final] + [changed, stop], np.float64)
        agreed = self.group.all_reduce_array(flags, ReduceOperation.SUM) > 0
        stopping = bool(agreed[-1])
        if agreed[-2]:  # some process changed a gradient it had sent: every one averages the final ones
            for future in self._started:
                future.result()
            self.redone += 1
            self._reset()
            return self.finish(grads, stop)  # nothing was sent early this time
        averaged = GradientsParams()
        for positions, future in zip(self.buckets, self._started):
            shapes = [self.shapes[p] for p in positions]
            for position, mean in zip(positions, cut_apart(future.result(), shapes)):
                if agreed[position]:
                    averaged.register(self.ids[position], mean)
        self._reset()
        return averaged, stopping


def _float_params(model: Module) -> list[Any]:
    return [param for param in model.params() if param.require_grad and param.kind is Kind.FLOAT]


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
