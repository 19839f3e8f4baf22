"""The live terminal dashboard (Burn's TUI, here on ``rich``): progress bars for the epoch and the whole
run with their ETA, each metric's current and epoch values, a chart of each numeric metric over the run
(train and valid), and ``q`` to stop (the learner checkpoints, then returns)."""

from __future__ import annotations

import contextlib
import math
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from ._metrics._base import MetricEntry
from ._renderer import TrainingProgress

__all__ = ["TuiRenderer", "braille_chart"]

_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # braille dot bits by (row, column)
_STYLES = {"train": "cyan", "valid": "magenta"}
_MAX_POINTS = 2000  # per series; older points are thinned out
_CHART_REFRESH_S = 1.0


def braille_chart(
    series: Mapping[str, Sequence[tuple[float, float]]], width: int, height: int
) -> tuple[list[Text], float, float]:
    """Lines of braille characters drawing each series of ``(x, y)`` points (2 x 4 dots per character),
    styled per series name; returns the lines and the y range drawn."""
    finite = {n: [(x, y) for x, y in pts if math.isfinite(y)] for n, pts in series.items()}
    every = [p for pts in finite.values() for p in pts]
    if not every:
        return [Text(" " * width) for _ in range(height)], math.nan, math.nan
    x_low, x_high = min(x for x, _ in every), max(x for x, _ in every)
    y_low, y_high = min(y for _, y in every), max(y for _, y in every)
    if y_high == y_low:
        y_low, y_high = y_low - 0.5, y_high + 0.5
    dots_w, dots_h = width * 2, height * 4
    cells: dict[tuple[int, int], dict[str, int]] = {}

    def plot(name: str, dx: int, dy: int) -> None:
        row, column = divmod(dy, 4)[0], dx // 2
        bits = _DOTS[dy % 4][dx % 2]
        cell = cells.setdefault((row, column), {})
        cell[name] = cell.get(name, 0) | bits

    for name, points in finite.items():
        columns: dict[int, list[float]] = {}  # one point per dot column: the mean of the points there
        for x, y in points:
            dx = round((x - x_low) / (x_high - x_low) * (dots_w - 1)) if x_high > x_low else 0
            columns.setdefault(dx, []).append(y)
        previous: tuple[int, int] | None = None
        for dx in sorted(columns):
            y = sum(columns[dx]) / len(columns[dx])
            dy = round((1 - (y - y_low) / (y_high - y_low)) * (dots_h - 1))
            if previous is not None:
                steps = max(abs(dx - previous[0]), abs(dy - previous[1]), 1)
                for step in range(1, steps):
                    plot(
                        name,
                        previous[0] + round((dx - previous[0]) * step / steps),
                        previous[1] + round((dy - previous[1]) * step / steps),
                    )
            plot(name, dx, dy)
            previous = (dx, dy)
    lines = []
    for row in range(height):
        line = Text()
        run, run_style = "", ""
        for column in range(width):
            cell = cells.get((row, column))
            if not cell:
                char, style = " ", ""
            else:
                bits = 0
                for value in cell.values():
                    bits |= value
                char = chr(0x2800 + bits)
                style = _STYLES.get(next(iter(cell)), "white") if len(cell) == 1 else "white"
            if style != run_style and run:
                line.append(run, style=run_style or None)
                run = ""
            run, run_style = run + char, style
        if run:
            line.append(run, style=run_style or None)
        lines.append(line)
    return lines, y_low, y_high


class _KeyListener:
    """Reads single keys from a terminal's stdin in a thread (cbreak mode, restored on stop)."""

    def __init__(self, on_quit: Callable[[], None]) -> None:
        self._on_quit = on_quit
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._saved: Any = None

    def start(self) -> None:
        try:
            import termios
            import tty

            descriptor = sys.stdin.fileno()
            if not os.isatty(descriptor):
                return
            self._saved = termios.tcgetattr(descriptor)
            tty.setcbreak(descriptor)
        except (ImportError, OSError, ValueError, AttributeError):
            return  # no terminal: Ctrl-C still stops the run
        self._thread = threading.Thread(target=self._run, args=(descriptor,), daemon=True, name="burn-keys")
        self._thread.start()

    def _run(self, descriptor: int) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([descriptor], [], [], 0.1)
            if ready:
                key = os.read(descriptor, 1)
                if key in (b"q", b"Q"):
                    self._on_quit()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        if self._saved is not None:
            import termios

            with contextlib.suppress(OSError, ValueError):
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None


class TuiRenderer:
    """The live dashboard: ``rich`` progress bars with ETA for the epoch and the run, a table of each
    metric's batch and epoch values (train and valid), a braille chart per numeric metric over the run,
    and the last status message. ``q`` asks the learner to stop (it checkpoints, then returns), as
    Ctrl-C does.

    Args:
        on_quit: called when ``q`` is pressed (the learner passes its interrupter's ``stop``).
        console: where to draw (a terminal by default).
        refresh_per_second: how often the screen is redrawn at most: by the training thread, after a
            step, so that drawing never takes the GIL from a step in the middle of its work.

    Example:
        >>> renderer = TuiRenderer()  # doctest: +SKIP
    """

    def __init__(
        self,
        on_quit: Callable[[], None] | None = None,
        console: Console | None = None,
        refresh_per_second: float = 2.0,
    ) -> None:
        self._console = console or Console()
        self._on_quit = on_quit
        self._refresh = refresh_per_second
        self._lock = threading.Lock()
        self._title = ""
        self._status = "Press q or Ctrl-C to stop (a checkpoint is saved first)"
        self._epoch_total = 1
        self._current: dict[str, dict[str, MetricEntry]] = {"train": {}, "valid": {}}
        self._epoch_values: dict[str, dict[str, str]] = {"train": {}, "valid": {}}
        self._points: dict[str, dict[str, list[tuple[float, float]]]] = {}
        self._progress = Progress(
            TextColumn("{task.description:<12}"),
            BarColumn(bar_width=None),
            MofNCompleteColumn(),
            TextColumn("{task.fields[split]}"),
            TimeRemainingColumn(),
            expand=True,
        )
        self._epoch_task = self._progress.add_task("Epoch", total=1, split="")
        self._run_task = self._progress.add_task("Run", total=1, split="")
        self._iterations_per_epoch = 0
        self._live: Live | None = None
        self._keys: _KeyListener | None = None
        self._charts_cache: tuple[float, int, RenderableType] | None = None  # (time, width, charts)
        self._drawn = 0.0  # when the screen was last drawn

    def set_on_quit(self, on_quit: Callable[[], None]) -> None:
        """What ``q`` calls."""
        self._on_quit = on_quit

    def start(self, title: str, epoch_total: int, start_epoch: int) -> None:
        """Start drawing."""
        self._title, self._epoch_total = title, epoch_total
        self._progress.update(self._run_task, total=epoch_total, completed=start_epoch - 1)
        self._live = Live(self, console=self._console, auto_refresh=False, transient=False)
        self._live.start(refresh=True)
        self._drawn = time.monotonic()
        if self._on_quit is not None:
            self._keys = _KeyListener(self._on_quit)
            self._keys.start()

    def update(self, progress: TrainingProgress, entries: Sequence[MetricEntry]) -> None:
        """Record a step's progress and entries (drawn at the next refresh)."""
        with self._lock:
            self._progress.update(
                self._epoch_task,
                description=f"Epoch {progress.epoch}/{progress.epoch_total}",
                total=progress.iterations,
                completed=progress.iteration,
                split=progress.split,
            )
            if progress.split == "train":
                self._iterations_per_epoch = progress.iterations
                fraction = progress.iteration / progress.iterations if progress.iterations else 1.0
                self._progress.update(self._run_task, completed=progress.epoch - 1 + fraction)
            x = progress.epoch - 1 + (progress.iteration / progress.iterations if progress.iterations else 1)
            current = self._current.setdefault(progress.split, {})
            for entry in entries:
                current[entry.name] = entry
                shown = entry.running if entry.running is not None else entry.value  # epoch so far: smooth
                if shown is not None:
                    points = self._points.setdefault(entry.name, {}).setdefault(progress.split, [])
                    points.append((x, shown))
                    if len(points) > _MAX_POINTS:
                        del points[::2]
        now = time.monotonic()
        if self._live is not None and now - self._drawn >= 1.0 / self._refresh:
            self._drawn = now
            self._live.refresh()

    def end_epoch(
        self, epoch: int, values: Mapping[str, Sequence[tuple[MetricEntry, float]]], seconds: float
    ) -> None:
        """Show the epoch's values."""
        with self._lock:
            for split, pairs in values.items():
                self._epoch_values[split] = {entry.name: entry.format(value) for entry, value in pairs}
            self._progress.update(self._run_task, completed=epoch)
            self._charts_cache = None
            self._status = f"Epoch {epoch} done in {seconds:.1f} s. Press q or Ctrl-C to stop"

    def status(self, message: str) -> None:
        """Show ``message`` under the charts."""
        with self._lock:
            self._status = message

    def close(self) -> None:
        """Stop drawing (the last frame stays on screen) and restore the terminal."""
        if self._keys is not None:
            self._keys.stop()
            self._keys = None
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    # -- drawing ------------------------------------------------------------------------------------
    def _table(self) -> Table:
        table = Table(expand=True, box=None, padding=(0, 1))
        for column in ("Metric", "Train (batch)", "Train (epoch)", "Valid (batch)", "Valid (epoch)"):
            table.add_column(column, justify="left" if column == "Metric" else "right")
        names = list(dict.fromkeys([*self._current.get("train", {}), *self._current.get("valid", {})]))
        for name in names:
            row = [name]
            for split in ("train", "valid"):
                entry = self._current.get(split, {}).get(name)
                row.append(entry.formatted if entry else "")
                running = entry.format(entry.running) if entry and entry.running is not None else ""
                row.append(self._epoch_values.get(split, {}).get(name, "") if split == "valid" else running)
            table.add_row(*row)
        return table

    def _charts(self, width: int) -> RenderableType:
        """The charts, redrawn at most once a second (drawing them is the dashboard's main cost)."""
        now = time.monotonic()
        cached = self._charts_cache
        if cached is not None and cached[1] == width and now - cached[0] < _CHART_REFRESH_S:
            return cached[2]
        charts = self._draw_charts(width)
        self._charts_cache = (now, width, charts)
        return charts

    def _draw_charts(self, width: int) -> RenderableType:
        panels: list[RenderableType] = []
        chart_width = max(20, min(60, (width - 8) // 2 - 12))
        for name, series in self._points.items():
            lines, low, high = braille_chart(series, chart_width, 6)
            labels = [
                f"{high:>9.4g} " if i == 0 else f"{low:>9.4g} " if i == len(lines) - 1 else " " * 10
                for i in range(len(lines))
            ]
            body = Text("\n").join(Text(label, style="dim") + line for label, line in zip(labels, lines))
            legend = Text("  ").join(Text(f"━ {s}", style=_STYLES.get(s, "white")) for s in series)
            panels.append(Panel(Group(body, legend), title=name, expand=False))
        if not panels:
            return Text("")
        grid = Table.grid(padding=(0, 1))
        for _ in range(2):
            grid.add_column()
        for index in range(0, len(panels), 2):
            grid.add_row(*panels[index : index + 2])
        return grid

    def __rich__(self) -> RenderableType:
        with self._lock:
            width = self._console.width
            body = Group(
                self._progress.get_renderable(),
                self._table(),
                self._charts(width),
                Text(self._status, style="dim"),
            )
            return Panel(body, title=f"Burn · {self._title}", border_style="blue")
