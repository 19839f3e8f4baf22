"""Checkpointing (Burn's ``burn_train::checkpoint``): ``FileCheckpointer`` over any recorder, and the
strategies that decide which epochs keep their checkpoint: ``KeepLastNCheckpoints``,
``MetricCheckpointingStrategy`` (the best epoch by a metric), ``ComposedCheckpointingStrategy``."""

from __future__ import annotations

import hashlib
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
    "CheckpointError",
    "CheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "FileCheckpointer",
    "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy",
]

PARTS = ("model", "optim", "scheduler", "state")
_BINDING = "__checkpoint__"  # the state record's entry naming the files of its checkpoint
_CHUNK = 1 << 20


class CheckpointError(ValueError):
    """A checkpoint's files do not belong together: a file of the checkpoint is missing, or its content
    is not the one the checkpoint's state file recorded when they were written (a save interrupted
    between its files, or a file of another epoch copied in). Raised by ``FileCheckpointer.load``, and
    so by a resumed ``fit``, instead of loading a model beside another epoch's optimizer or state.

    Example:
        >>> try:
        ...     checkpointer.load(3, "model")
        ... except CheckpointError as error:
        ...     print(error)  # doctest: +SKIP
        checkpoint of epoch 3 in artifacts/checkpoint: model-3.mpk holds epoch 2's model ...
    """


def _digest(path: Path) -> str:
    """The SHA-256 of the file at ``path``, read in chunks."""
    digest = hashlib.sha256()
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb") as file:
        while count := file.readinto(buffer):
            digest.update(view[:count])
    return digest.hexdigest()


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

    A checkpoint is whole or absent as a unit: the state file, written last, records the name, size and
    SHA-256 of each other file, and rewriting an epoch's checkpoint removes its state file first. A
    file whose content is not the one recorded (a save interrupted between the files, a file copied in
    from another epoch) raises ``CheckpointError`` on load, naming the epoch it came from where another
    checkpoint of the folder recorded it. Saving and loading hash each file (SHA-256, 1 to 2 s per GB).

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

    def _state_files(self, epoch: int) -> list[Path]:
        bare = self._path("state", epoch)  # a recorder may add no extension
        return [*self.directory.glob(f"state-{epoch}.*"), *([bare] if bare.exists() else [])]

    def save(self, epoch: int, records: Mapping[str, Mapping[str, Any]]) -> list[Path]:
        """Write the records of ``epoch`` (keys among ``model``, ``optim``, ``scheduler``, ``state``),
        bound together: an earlier checkpoint of ``epoch`` stops counting (its state file goes first),
        the other files are written, then the state file recording their hashes (an empty state when
        ``records`` has none). Returns the files, the state file last."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in self._state_files(epoch):
            path.unlink(missing_ok=True)
        written: list[Path] = []
        files: dict[str, dict[str, Any]] = {}
        for part in records:
            if part == "state":
                continue
            path = Path(self.recorder.save(dict(records[part]), self._path(part, epoch)))
            written.append(path)
            files[part] = {"name": path.name, "bytes": path.stat().st_size, "sha256": _digest(path)}
        state = {**dict(records.get("state", {})), _BINDING: {"epoch": epoch, "files": files}}
        written.append(Path(self.recorder.save(state, self._path("state", epoch))))
        return written

    def exists(self, epoch: int) -> bool:
        """Whether the checkpoint of ``epoch`` was completely written (its state file is there)."""
        return bool(self._state_files(epoch))

    def epochs(self) -> list[int]:
        """The epochs with a complete checkpoint, ascending."""
        found = set()
        for path in self.directory.glob("state-*"):
            number = path.name.removeprefix("state-").split(".")[0]
            if number.isdigit():
                found.add(int(number))
        return sorted(found)

    def _state(self, epoch: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``epoch``'s state record without its binding, and the binding (``None`` in a checkpoint
        written before checkpoints were bound)."""
        state = dict(self.recorder.load(self._path("state", epoch)))
        binding = state.pop(_BINDING, None)
        return state, binding if isinstance(binding, dict) else None

    def load(self, epoch: int, part: str) -> dict[str, Any]:
        """The ``part`` record of ``epoch``'s checkpoint, checked to be the file its state recorded.

        Raises:
            FileNotFoundError: there is no complete checkpoint for ``epoch`` (the ones there are named).
            CheckpointError: the ``part`` file is missing or is not the one the checkpoint's state
                recorded (the message names the epoch it belongs to, where one in the folder does).
        """
        if not self.exists(epoch):
            raise FileNotFoundError(
                f"FileCheckpointer: no complete checkpoint of epoch {epoch} in {self.directory} "
                f"(there are: {self.epochs() or 'none'})"
            )
        state, binding = self._state(epoch)
        if binding is None:  # an unbound checkpoint of an earlier version: nothing to check against
            return state if part == "state" else self.recorder.load(self._path(part, epoch))
        where = f"checkpoint of epoch {epoch} in {self.directory}"
        if binding.get("epoch") != epoch:
            raise CheckpointError(
                f"{where}: its state file is epoch {binding.get('epoch')}'s, not epoch {epoch}'s (copied "
                "from another epoch?); the checkpoint is refused"
            )
        if part == "state":
            return state
        entry = binding.get("files", {}).get(part)
        if entry is None:
            raise CheckpointError(
                f"{where}: it has no {part} file (it holds {sorted(binding.get('files', {})) or 'none'})"
            )
        path = self.directory / str(entry["name"])
        if not path.is_file():
            raise CheckpointError(f"{where}: its {part} file {path.name} is missing")
        digest = _digest(path)
        if digest != entry["sha256"]:
            raise CheckpointError(f"{where}: {self._mismatch(epoch, part, path, digest, entry)}")
        return self.recorder.load(path)

    def _mismatch(self, epoch: int, part: str, path: Path, digest: str, entry: Mapping[str, Any]) -> str:
        """Why ``path`` does not belong to ``epoch``'s checkpoint: the epoch whose checkpoint recorded
        its content, where one in the folder did."""
        origin = None
        for other in self.epochs():
            if other == epoch:
                continue
            try:
                _, binding = self._state(other)
            except Exception:  # an unreadable state only means the origin stays unknown
                continue
            recorded = (binding or {}).get("files", {}).get(part) or {}
            if recorded.get("sha256") == digest:
                origin = other
                break
        found = f"{path.stat().st_size} bytes, SHA-256 {digest[:12]}"
        recorded = f"{entry['bytes']} bytes, SHA-256 {str(entry['sha256'])[:12]}"
        if origin is not None:
            what = f"{path.name} holds epoch {origin}'s {part} (the file state-{origin} recorded)"
        else:
            what = f"{path.name} is not the file state-{epoch} recorded (a save cut between its files?)"
        return (
            f"{what}, not epoch {epoch}'s: found {found}, recorded {recorded}. The checkpoint mixes "
            f"files of different saves and is refused; resume from another epoch "
            f"(checkpoints here: {self.epochs()})"
        )

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
