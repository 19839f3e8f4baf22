"""Shared timing for the benchmarks: medians of repeated runs, ratios against a reference measured in
the same process, and one table format."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Row:
    """One comparison: our median time and the reference's, per call, in seconds."""

    name: str
    ours: float
    reference: float
    reference_name: str
    target: str  # e.g. "<= 1.5x", read by a person, not by code

    @property
    def ratio(self) -> float:
        """Our time over the reference's (below 1: we are faster)."""
        return self.ours / self.reference


PAUSE_S = 0.3  # long enough for the other library's worker threads to stop spinning


def block_time(function: Callable[[], object], number: int, pause: float = PAUSE_S) -> float:
    """After a pause and a warm-up call, the median time of ``number`` calls, in seconds.

    Both NumPy's OpenBLAS and PyTorch's OpenMP keep worker threads spinning for a while after a call;
    on a small machine the spinning threads of one library starve the other's, so each block of calls
    starts after a pause.
    """
    time.sleep(pause)
    function()
    samples = []
    for _ in range(number):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def compare(
    name: str,
    ours: Callable[[], object],
    reference: Callable[[], object],
    reference_name: str,
    target: str,
    repeat: int,
    number: int,
    pause: float = PAUSE_S,
) -> Row:
    """Medians over ``repeat`` alternating blocks of ``number`` calls of each side, each block after
    ``pause`` seconds (0 on a GPU, where no CPU threads spin and an idle pause would let clocks drop)."""
    ours_blocks, reference_blocks = [], []
    for _ in range(repeat):
        reference_blocks.append(block_time(reference, number, pause))
        ours_blocks.append(block_time(ours, number, pause))
    return Row(
        name, statistics.median(ours_blocks), statistics.median(reference_blocks), reference_name, target
    )


def gpu_unavailable() -> str | None:
    """Why a GPU benchmark (ours on burn-cuda beside PyTorch CUDA) cannot run here, or ``None``."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA GPU"
    from burn_cuda._cupy import unavailable_reason

    return unavailable_reason()


def print_table(title: str, rows: list[Row]) -> None:
    """A plain-text table of the rows: times in microseconds or milliseconds, and the ratio."""

    def fmt(seconds: float) -> str:
        return f"{seconds * 1e6:9.2f} us" if seconds < 1e-3 else f"{seconds * 1e3:9.3f} ms"

    print(f"\n{title}")
    print(f"{'benchmark':<46} {'ours':>12} {'reference':>12}  {'ratio':>6}  target")
    for row in rows:
        label = f"{row.name} (vs {row.reference_name})"
        print(f"{label:<46} {fmt(row.ours):>12} {fmt(row.reference):>12}  {row.ratio:6.2f}  {row.target}")


def arguments(description: str) -> argparse.Namespace:
    """The common command line: ``--quick`` for fewer repetitions."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (noisier)")
    return parser.parse_args()
