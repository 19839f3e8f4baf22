"""Checkpointing (Burn's ``burn_train::checkpoint``): ``FileCheckpointer`` over any recorder, and the
strategies that decide which epochs keep their checkpoint: ``KeepLastNCheckpoints``,
``MetricCheckpointingStrategy`` (the best epoch by a metric), ``ComposedCheckpointingStrategy``."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from burn_backend import Recorder

from ._state import Aggregate, Direction, MetricsStore, Split, _metric_name

__all__ = [
    "AsyncCheckpointer",
    "CheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "FileCheckpointer",
    "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy",
]

PARTS = ("model", "optim", "scheduler", "state")


def default_recorder() -> Recorder:
    """burn-record's named MessagePack recorder at full precision: checkpoints must restore the exact
    values for a resumed run to match an uninterrupted one."""
    from burn_record import FullPrecisionSettings, NamedMpkFileRecorder

    return NamedMpkFileRecorder(FullPrecisionSettings())


class FileCheckpointer:
    """Saves and restores a run's state per epoch with a recorder (Burn's ``FileCheckpointer``): in
    ``directory``, ``model-<epoch>``, ``optim-<epoch>``, ``scheduler-<epoch>`` and ``state-<epoch>``
    (the epoch and batch reached, the data loaders' positions, the random generators' states), each
    with the recorder's extension.

    Args:
        recorder: the file format (burn-record's ``NamedMpkFileRecorder`` at full precision by
            default; a half-precision recorder makes a resumed run differ from an uninterrupted one).
        directory: where the files go.

    Example:
        >>> checkpointer = FileCheckpointer(NamedMpkFileRecorder(), "artifacts/checkpoint")  # doctest: +SKIP
    """

    def __init__(self, recorder: Recorder | None, directory: str | os.PathLike[str]) -> None:
        if recorder is not None and not isinstance(recorder, Recorder):
            raise TypeError(
                f"FileCheckpointer: expected a recorder (save, load, to_bytes, from_bytes), got "
                f"{type(recorder).__name__}"
            )
        self.recorder: Recorder = recorder if recorder is not None else default_recorder()
        self.directory = Path(directory)

    def _path(self, part: str, epoch: int) -> Path:
        return self.directory / f"{part}-{epoch}"

    def save(self, epoch: int, records: Mapping[str, Mapping[str, Any]]) -> list[Path]:
        """Write the records of ``epoch`` (keys among ``model``, ``optim``, ``scheduler``, ``state``;
        ``state`` last, so that a checkpoint with a ``state`` file is whole). Returns the files."""
        self.directory.mkdir(parents=True, exist_ok=True)
        written = []
        for part in sorted(records, key=lambda name: name == "state"):
            written.append(self.recorder.save(dict(records[part]), self._path(part, epoch)))
        return written

    def exists(self, epoch: int) -> bool:
        """Whether the checkpoint of ``epoch`` was completely written."""
        return any(self.directory.glob(f"state-{epoch}.*")) or self._path("state", epoch).exists()

    def epochs(self) -> list[int]:
        """The epochs with a complete checkpoint, ascending."""
        found = set()
        for path in self.directory.glob("state-*"):
            number = path.name.removeprefix("state-").split(".")[0]
            if number.isdigit():
                found.add(int(number))
        return sorted(found)

    def load(self, epoch: int, part: str) -> dict[str, Any]:
        """The ``part`` record of ``epoch``'s checkpoint.

        Raises:
            FileNotFoundError: there is no complete checkpoint for ``epoch`` (the ones there are named).
        """
        if not self.exists(epoch):
            raise FileNotFoundError(
                f"FileCheckpointer: no complete checkpoint of epoch {epoch} in {self.directory} "
                f"(there are: {self.epochs() or 'none'})"
            )
        return self.recorder.load(self._path(part, epoch))

    def delete(self, epoch: int) -> None:
        """Remove ``epoch``'s checkpoint files (the state file first, so a half-deleted checkpoint is
        never taken for a whole one)."""
        for part in ("state", "model", "optim", "scheduler"):
            for path in self.directory.glob(f"{part}-{epoch}.*"):
                path.unlink(missing_ok=True)
            self._path(part, epoch).unlink(missing_ok=True)


class AsyncCheckpointer:
    """A ``FileCheckpointer`` that writes on a worker thread (Burn's ``AsyncCheckpointer``): ``save``
    returns once the next epoch may start, and the files, written and made durable meanwhile, are
    complete by the next call (every method waits for the write in flight first, and re-raises its
    error). Records are snapshots (tensors are immutable), so training goes on while they are written.

    Args:
        checkpointer: what writes (its recorder and folder).

    Example:
        >>> checkpointer = AsyncCheckpointer(FileCheckpointer(None, "artifacts/checkpoint"))  # doctest: +SKIP
        >>> checkpointer.save(3, records, then=lambda: checkpointer.inner.delete(1))  # doctest: +SKIP
        >>> checkpointer.wait()  # doctest: +SKIP
    """

    def __init__(self, checkpointer: FileCheckpointer) -> None:
        self.inner = checkpointer
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def recorder(self) -> Recorder:
        """The inner checkpointer's recorder."""
        return self.inner.recorder

    @property
    def directory(self) -> Path:
        """The inner checkpointer's folder."""
        return self.inner.directory

    def save(
        self, epoch: int, records: Mapping[str, Mapping[str, Any]], then: Callable[[], None] | None = None
    ) -> None:
        """Start writing ``epoch``'s records (after the previous write has finished), then run ``then``
        (deleting older checkpoints, say) on the worker once they are durable."""
        self.wait()

        def write() -> None:
            try:
                self.inner.save(epoch, records)
                if then is not None:
                    then()
            except BaseException as error:  # raised again by the next call in the training thread
                self._error = error

        self._thread = threading.Thread(target=write, name=f"burn-checkpoint-{epoch}", daemon=False)
        self._thread.start()

    def wait(self) -> None:
        """Wait for the write in flight; raise its error, if it failed."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error

    def exists(self, epoch: int) -> bool:
        """Whether the checkpoint of ``epoch`` was completely written."""
        self.wait()
        return self.inner.exists(epoch)

    def epochs(self) -> list[int]:
        """The epochs with a complete checkpoint, ascending."""
        self.wait()
        return self.inner.epochs()

    def load(self, epoch: int, part: str) -> dict[str, Any]:
        """The ``part`` record of ``epoch``'s checkpoint (see ``FileCheckpointer.load``)."""
        self.wait()
        return self.inner.load(epoch, part)

    def delete(self, epoch: int) -> None:
        """Remove ``epoch``'s checkpoint files."""
        self.wait()
        self.inner.delete(epoch)


@runtime_checkable
class CheckpointingStrategy(Protocol):
    """Decides, at the end of each epoch, which saved checkpoints to delete (Burn's
    ``CheckpointingStrategy``): ``to_delete(epoch, saved, store)`` returns the epochs among ``saved``
    (which includes ``epoch``, just saved) that this strategy does not need."""

    def to_delete(self, epoch: int, saved: Sequence[int], store: MetricsStore) -> set[int]:
        """The saved epochs this strategy lets go."""
        ...


@dataclass(frozen=True)
class KeepLastNCheckpoints:
    """Keep the checkpoints of the last ``n`` epochs (Burn's ``KeepLastNCheckpoints``).

    Example:
        >>> KeepLastNCheckpoints(2).to_delete(5, [3, 4, 5], MetricsStore())
        {3}
    """

    n: int

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"KeepLastNCheckpoints: n must be >= 1, got {self.n}")

    def to_delete(self, epoch: int, saved: Sequence[int], store: MetricsStore) -> set[int]:
        """Every saved epoch but the last ``n``."""
        return set(sorted(saved)[: -self.n])


class MetricCheckpointingStrategy:
    """Keep the checkpoint of the best epoch by a metric (Burn's ``MetricCheckpointingStrategy``).

    Args:
        metric: the metric (or its name), registered as numeric for ``split``.
        aggregate: how the epoch's value is made.
        direction: which way is better.
        split: the split whose values count.

    Example:
        >>> strategy = MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID)
    """

    def __init__(
        self,
        metric: Any,
        aggregate: Aggregate = Aggregate.MEAN,
        direction: Direction = Direction.LOWEST,
        split: Split = Split.VALID,
    ) -> None:
        self.metric = _metric_name(metric)
        self.aggregate, self.direction, self.split = aggregate, direction, split

    def best(self, store: MetricsStore) -> int | None:
        """The best epoch so far, or ``None`` before the metric has a value."""
        return store.find_epoch(self.metric, self.aggregate, self.direction, self.split)

    def to_delete(self, epoch: int, saved: Sequence[int], store: MetricsStore) -> set[int]:
        """Every saved epoch but the best (all kept while the metric has no value)."""
        best = self.best(store)
        return set() if best is None else {e for e in saved if e != best}


class ComposedCheckpointingStrategy:
    """Several strategies together (Burn's ``ComposedCheckpointingStrategy``): a checkpoint is deleted
    only when every strategy lets it go, so it is kept when any one needs it.

    Example:
        >>> strategy = ComposedCheckpointingStrategy(
        ...     [KeepLastNCheckpoints(2), MetricCheckpointingStrategy("Loss")]
        ... )
    """

    def __init__(self, strategies: Sequence[CheckpointingStrategy]) -> None:
        if not strategies:
            raise ValueError("ComposedCheckpointingStrategy: expected at least one strategy")
        self.strategies = list(strategies)

    def to_delete(self, epoch: int, saved: Sequence[int], store: MetricsStore) -> set[int]:
        """The saved epochs every strategy lets go."""
        result = set(saved)
        for strategy in self.strategies:
            result &= strategy.to_delete(epoch, saved, store)
        return result
