"""Logging of a run into its artifact folder, in Burn's layout: ``<split>/epoch-<n>/<Metric>.log`` (one
line per step) and the application log ``experiment.log``."""

from __future__ import annotations

import logging
import math
import re
import shutil
from pathlib import Path
from typing import IO

from ._metrics._base import MetricEntry

__all__ = ["FileMetricLogger", "application_logger"]

log = logging.getLogger("burn_train")


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", name).strip("_") or "metric"


class FileMetricLogger:
    """Writes every metric entry of a run to ``<directory>/<split>/epoch-<n>/<Metric>.log``, one line
    per step (the entry's ``serialized`` text: ``value,items`` for numeric metrics), as Burn's
    ``FileMetricLogger``.

    Example:
        >>> logger = FileMetricLogger("artifacts")  # doctest: +SKIP
        >>> logger.log("train", 1, entries)  # doctest: +SKIP
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._files: dict[tuple[str, int, str], IO[str]] = {}

    def path(self, split: str, epoch: int, name: str) -> Path:
        """The log file of metric ``name`` for ``split`` and ``epoch``."""
        return self.directory / split / f"epoch-{epoch}" / f"{_file_name(name)}.log"

    def log(self, split: str, epoch: int, entries: list[MetricEntry]) -> None:
        """Append one line per entry."""
        for entry in entries:
            key = (split, epoch, entry.name)
            file = self._files.get(key)
            if file is None:
                path = self.path(split, epoch, entry.name)
                path.parent.mkdir(parents=True, exist_ok=True)
                file = self._files[key] = open(path, "a", encoding="utf-8")  # noqa: SIM115
            file.write(entry.serialized.replace("\n", " ") + "\n")

    def flush(self) -> None:
        """Write buffered lines to disk."""
        for file in self._files.values():
            file.flush()

    def end_epoch(self, split: str, epoch: int) -> None:
        """Close the files of ``split``'s ``epoch``."""
        for key in [k for k in self._files if k[0] == split and k[1] == epoch]:
            self._files.pop(key).close()

    def close(self) -> None:
        """Close every file."""
        for file in self._files.values():
            file.close()
        self._files.clear()

    def read_values(self, split: str, epoch: int, name: str) -> list[tuple[float, int]]:
        """The ``(value, items)`` lines of a numeric metric's log (``[]`` when absent)."""
        path = self.path(split, epoch, name)
        if not path.exists():
            return []
        values = []
        for line in path.read_text(encoding="utf-8").splitlines():
            value, _, count = line.partition(",")
            try:
                values.append((float(value), int(count or 1)))
            except ValueError:
                continue
        return values

    def epoch_mean(self, split: str, epoch: int, name: str) -> float:
        """The items-weighted mean of a numeric metric's log lines (NaN when none)."""
        pairs = [(v, c) for v, c in self.read_values(split, epoch, name) if not math.isnan(v)]
        total = sum(c for _, c in pairs)
        return sum(v * c for v, c in pairs) / total if total else math.nan

    def truncate(self, split: str, epoch: int, lines: int) -> None:
        """Keep the first ``lines`` lines of every log of ``split``'s ``epoch`` and delete the logs of
        later epochs (when a run resumes, what the interrupted run logged past its checkpoint goes)."""
        self.close()
        split_dir = self.directory / split
        if not split_dir.exists():
            return
        for folder in split_dir.glob("epoch-*"):
            number = folder.name.removeprefix("epoch-")
            if not number.isdigit():
                continue
            if int(number) > epoch or (int(number) == epoch and lines == 0):
                shutil.rmtree(folder, ignore_errors=True)
            elif int(number) == epoch:
                for path in folder.glob("*.log"):
                    kept = path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]
                    path.write_text("".join(kept), encoding="utf-8")


class application_logger:
    """While active, the ``burn_train`` logger's records (INFO and above) go to
    ``<directory>/experiment.log`` only (not to the console, where the dashboard draws), and so do the
    records the root logger handles, as with Burn's ``FileApplicationLoggerInstaller``.

    Example:
        >>> with application_logger("artifacts"):  # doctest: +SKIP
        ...     logging.getLogger("burn_train").info("hello")
    """

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / "experiment.log"
        self._handler: logging.Handler | None = None
        self._level = logging.NOTSET
        self._propagate = True

    def __enter__(self) -> application_logger:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.path, encoding="utf-8")
        handler.setLevel(logging.INFO)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(handler)
        log.addHandler(handler)
        self._level, self._propagate = log.level, log.propagate
        log.setLevel(logging.INFO)
        log.propagate = False
        self._handler = handler
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            log.removeHandler(self._handler)
            self._handler.close()
            self._handler = None
        log.setLevel(self._level)
        log.propagate = self._propagate
