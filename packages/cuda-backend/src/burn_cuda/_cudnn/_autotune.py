"""Automatic kernel selection for cuDNN graphs (Burn's autotune): the first time a shape key is seen,
every engine cuDNN proposes and can build is timed on the call's own operands, and the fastest is kept,
in memory and on disk, so that the next process starts with it.

The disk cache is one JSON file per GPU model, driver and cuDNN version (a choice made on one does not
carry to another), in ``BURN_CUDA_AUTOTUNE_DIR`` or else ``~/.cache/burn-cuda/autotune``; it maps a
key's description (without the GPU's index) to the chosen engine's name. A file that cannot be read is
ignored and rewritten; one that cannot be written leaves the choice in memory only. ``BURN_CUDA_AUTOTUNE=0``
turns tuning off (for cold starts): the heuristics' first engine that builds is used, as cuDNN's own
choice. Tuning never runs while a stream is being captured into a CUDA graph (the heuristics' choice is
taken there), and it waits for the GPU once per key: the time of a model's first step, not of later ones.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._cupy import cp
from . import _library

ENVIRONMENT = "BURN_CUDA_AUTOTUNE"
"""The environment variable that turns tuning off: ``0`` (read at each new key)."""
DIRECTORY = "BURN_CUDA_AUTOTUNE_DIR"
"""The environment variable naming the disk cache's folder."""

CANDIDATES = 4
"""At most this many engines are timed per key, in the heuristics' order (8 took a GPU ResNet's first
step 3.1 s longer than a warm one, against the bar of 2 s; the heuristics rank the fastest early)."""
REPEATS = 2
"""Timed runs per candidate after one untimed run; the faster is compared."""

LOG = logging.getLogger("burn_cuda.autotune")

_lock = threading.Lock()
_files: dict[str, dict[str, str]] = {}
stats = {"timed": 0, "from_disk": 0}
"""How many keys were timed and how many took a choice from the disk cache (read by tests)."""


def enabled() -> bool:
    """Whether ``BURN_CUDA_AUTOTUNE`` leaves tuning on (anything but ``0``, ``false``, ``off``, ``no``)."""
    return os.environ.get(ENVIRONMENT, "1").strip().lower() not in {"0", "false", "off", "no"}


def _directory() -> Path:
    configured = os.environ.get(DIRECTORY)
    return Path(configured) if configured else Path.home() / ".cache" / "burn-cuda" / "autotune"


def cache_file() -> Path:
    """This GPU's cache file: its model, the driver's version and cuDNN's in the name."""
    device = cp.cuda.runtime.getDevice()
    name = cp.cuda.runtime.getDeviceProperties(device)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    cudnn: Any = _library.module()
    version = f"{name}-driver{cp.cuda.runtime.driverGetVersion()}-cudnn{cudnn.backend_version()}"
    return _directory() / (re.sub(r"[^A-Za-z0-9._-]+", "_", version) + ".json")


def _choices(path: Path) -> dict[str, str]:
    """The choices stored in ``path`` (read once per process)."""
    key = str(path)
    found = _files.get(key)
    if found is None:
        found = {}
        try:
            loaded = json.loads(path.read_text())
            if isinstance(loaded, dict):
                found = {str(k): str(v) for k, v in loaded.items() if isinstance(v, str)}
        except (OSError, ValueError):
            pass  # none yet, or unreadable: tuned again and rewritten
        _files[key] = found
    return found


def _store(path: Path, description: str, engine: str) -> None:
    """Record a choice in memory and, atomically (a temporary file renamed), on disk."""
    with _lock:
        choices = _choices(path)
        choices[description] = engine
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as file:
                json.dump(choices, file, indent=0, sort_keys=True)
            os.replace(file.name, path)
        except OSError as error:
            LOG.info("autotune: the choice for %s is kept in memory only (%s)", description, error)


def choose(
    description: str,
    candidates: Sequence[tuple[str, Any]],
    run: Callable[[Any], None],
) -> Any:
    """The candidate to use for a key described by ``description``: the one the disk cache names where
    it is among ``candidates`` (``(engine name, candidate)`` pairs in the heuristics' order), else the
    fastest of them, timed by ``run(candidate)`` on the current stream (its result is overwritten by
    the caller's run of the winner), recorded on disk."""
    if len(candidates) == 1:
        return candidates[0][1]
    path = cache_file()
    with _lock:
        named = _choices(path).get(description)
    for engine, candidate in candidates:
        if engine == named:
            stats["from_disk"] += 1
            return candidate
    stream = cp.cuda.get_current_stream()
    timings = []
    for engine, candidate in candidates:
        try:
            run(candidate)  # untimed: the engine's first run loads its kernels
            samples = []
            for _ in range(REPEATS):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(stream)
                run(candidate)
                end.record(stream)
                end.synchronize()
                samples.append(cp.cuda.get_elapsed_time(start, end))
        except Exception as error:  # an engine that builds but fails to run is skipped
            LOG.info("autotune: engine %s failed on %s (%s)", engine, description, error)
            continue
        timings.append((min(samples), engine, candidate))
    if not timings:
        return candidates[0][1]
    _, engine, chosen = min(timings, key=lambda timing: timing[0])
    stats["timed"] += 1
    _store(path, description, engine)
    LOG.debug("autotune: %s takes %s (%s)", description, engine, timings)
    return chosen
