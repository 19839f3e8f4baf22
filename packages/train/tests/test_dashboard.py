"""How a run is shown: the rich dashboard (drawn into a recording console), its braille charts, the `q`
key through a pseudo-terminal, Ctrl-C as a graceful stop, the one-line-per-epoch fallback and the curves
file."""

from __future__ import annotations

import io
import os
import pty
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from burn_train import (
    CliRenderer,
    MetricEntry,
    MetricMetadata,
    TrainingProgress,
    TuiRenderer,
    write_curves,
)
from burn_train._dashboard import _KeyListener, braille_chart
from burn_train._learner import default_renderer


@pytest.fixture(scope="module")
def toy() -> Any:
    """The toy training run of toy_training.py (it trains on Autodiff(NdArray()))."""
    pytest.importorskip("burn_autodiff")
    pytest.importorskip("burn_record")
    import toy_training

    return toy_training


def test_braille_chart_draws_lines_in_the_right_cells() -> None:
    flat, low, high = braille_chart({"train": [(0, 1.0), (1, 1.0)]}, width=4, height=2)
    assert (low, high) == (0.5, 1.5)
    text = [line.plain for line in flat]
    assert text[0].strip() == "" or text[1].strip() == ""  # a flat line stays in one row of cells
    assert all(char != " " for char in (text[0] + text[1]).replace(" ", "")[:4])
    rising, _, _ = braille_chart({"train": [(0, 0.0), (1, 1.0)], "valid": [(0, 1.0), (1, 0.0)]}, 6, 3)
    rows = [line.plain for line in rising]
    assert rows[0][0] != " "
    assert rows[0][-1] != " "
    assert rows[-1][0] != " "
    assert rows[-1][-1] != " "
    styles = {span.style for line in rising for span in line.spans}
    assert {"cyan", "magenta"} <= styles
    empty, low, _ = braille_chart({"train": []}, 3, 1)
    assert empty[0].plain == "   "


def test_dashboard_shows_progress_metrics_and_charts(tmp_path: Path, toy: Any) -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120, record=True)
    toy.run(tmp_path, 2, renderer=TuiRenderer(console=console, refresh_per_second=20))
    screen = console.export_text()
    for text in ("Epoch 2/2", "Run", "Accuracy", "Loss", "Train (batch)", "Valid (epoch)", "Epoch 2 done"):
        assert text in screen, text
    assert any(0x2800 < ord(char) <= 0x28FF for char in screen)  # the charts' braille dots
    assert "━ train" in screen
    assert "━ valid" in screen


@pytest.mark.parametrize("per_second", [1e6, 1e-6])
def test_the_dashboard_is_drawn_by_the_training_thread_at_most_as_often_as_asked(
    tmp_path: Path, toy: Any, per_second: float
) -> None:
    """No drawing thread takes the GIL from a step: frames are drawn after steps, by the thread that
    trains, no more often than ``refresh_per_second`` (beside the first and last frames)."""
    import threading

    frames: list[str] = []

    class Counting(TuiRenderer):
        def __rich__(self) -> Any:
            frames.append(threading.current_thread().name)
            return super().__rich__()

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    toy.run(tmp_path, 2, renderer=Counting(console=console, refresh_per_second=per_second))
    assert set(frames) == {threading.current_thread().name}
    if per_second > 1:
        assert len(frames) > 10  # a frame after each step
    else:
        assert len(frames) <= 3  # the first frame, the last, and nothing between


def test_q_on_the_terminal_asks_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    master, slave = pty.openpty()
    pressed = []

    class Terminal:
        def fileno(self) -> int:
            return slave

    monkeypatch.setattr(sys, "stdin", Terminal())
    listener = _KeyListener(lambda: pressed.append(True))
    listener.start()
    try:
        os.write(master, b"xq")
        deadline = time.monotonic() + 5
        while not pressed and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        listener.stop()
        os.close(master)
        os.close(slave)
    assert pressed == [True]


class CtrlC:
    """Sends this process a SIGINT at one training step."""

    input_type = None

    def __init__(self, epoch: int, iteration: int) -> None:
        self.at = (epoch, iteration)

    def name(self) -> str:
        return "CtrlC"

    def update(self, item: object, metadata: MetricMetadata) -> MetricEntry:
        if (metadata.epoch, metadata.iteration) == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        return MetricEntry("CtrlC", "", "")

    def clear(self) -> None:
        pass


def test_ctrl_c_checkpoints_and_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str], toy: Any) -> None:
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN where the run started in a background job
    toy.run(tmp_path, 3, builder_hook=lambda builder: builder.metric_train(CtrlC(2, 4)))
    output = capsys.readouterr().out
    # metrics are updated one step behind (the values of step 4 are read once step 5 is queued): the
    # signal arrives during step 5, which is the last one run and saved
    assert "Checkpoint saved in epoch 2 at batch 5" in output
    assert "Stopped in epoch 2: Ctrl-C" in output
    assert "[Epoch 2/3]" not in output
    assert signal.getsignal(signal.SIGINT) is before  # the handler is restored


def test_without_a_terminal_one_line_per_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert isinstance(default_renderer(), CliRenderer)
    stream = io.StringIO()
    renderer = CliRenderer(stream)
    renderer.start("run", 10, 1)
    entry = MetricEntry("Accuracy", "", "", unit="%")
    renderer.end_epoch(3, {"train": [(entry, 91.234)], "valid": [(entry, 90.0)]}, 2.04)
    assert stream.getvalue() == "[Epoch  3/10] train Accuracy 91.23 % | valid Accuracy 90.00 % | 2.0 s\n"


def test_without_a_terminal_a_progress_line_every_interval_on_a_fake_clock() -> None:
    now = [100.0]
    stream = io.StringIO()
    renderer = CliRenderer(stream, interval=5, clock=lambda: now[0])
    renderer.start("run", 10, 1)
    loss = MetricEntry("Loss", "0.500", "", value=0.5, running=0.4, precision=3)
    note = MetricEntry("Note", "", "")  # a metric with nothing to show is left out
    for step in range(1, 101):  # 32 items a step, 4 steps a second: 128 items/s
        now[0] = 100.0 + 0.25 * step
        renderer.update(TrainingProgress("train", 2, 10, step, 100, 32 * step, 3200), [loss, note])
    lines = stream.getvalue().splitlines()
    # the first step starts the clock; then a line every 5 s (20 steps): steps 21, 41, 61, 81
    assert len(lines) == 4
    for line, step in zip(lines, (21, 41, 61, 81)):
        eta = round((3200 - 32 * step) / 128)
        assert line == (
            f"[Epoch  2/10] train {step}/100 ({100 * 32 * step / 3200:.1f} %) | Loss 0.400 | 128.0 items/s | "
            f"ETA 0:00:{eta:02d}"
        )
    assert lines[0].endswith("ETA 0:00:20")  # 2528 items left at 128 items/s: 19.75 s
    stream.truncate(0)
    stream.seek(0)
    for step in range(1, 30):  # validation starts its own clock, at 2 s a step
        now[0] = 200.0 + 2 * step
        renderer.update(TrainingProgress("valid", 2, 10, step, 0, 10 * step, 0), [])
    assert stream.getvalue().splitlines()[0] == "[Epoch  2/10] valid 4 | 5.0 items/s | ETA -"
    quiet = io.StringIO()
    silent = CliRenderer(quiet, interval=None, clock=lambda: now[0])
    for step in range(1, 50):
        now[0] += 10
        silent.update(TrainingProgress("train", 1, 1, step, 50, step, 50), [loss])
    assert quiet.getvalue() == ""
    with pytest.raises(ValueError, match="interval must be seconds > 0 or None, got 0"):
        CliRenderer(interval=0)


def test_curves_file_is_self_contained_svg(tmp_path: Path) -> None:
    path = write_curves(
        tmp_path / "curves.html",
        "run",
        {"Loss": {"train": {1: 1.0, 2: 0.5, 3: 0.25}, "valid": {1: 1.2, 2: float("nan"), 3: 0.4}}},
    )
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<polyline") == 2
    assert "valid epoch 3: 0.4" in page
    assert "<script" not in page
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched from elsewhere
