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


def median_time(function: Callable[[], object], repeat: int, number: int) -> float:
    """The median over ``repeat`` runs of the mean time of ``number`` calls, in seconds."""
    function()  # warm up (caches, lazy imports, BLAS threads)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            function()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def compare(
    name: str,
    ours: Callable[[], object],
    reference: Callable[[], object],
    reference_name: str,
    target: str,
    repeat: int,
    number: int,
) -> Row:
    """Time ``ours`` and ``reference`` interleaved (alternating runs), so machine noise hits both."""
    ours_samples, reference_samples = [], []
    ours()
    reference()
    for _ in range(repeat):
        ours_samples.append(median_time(ours, 1, number))
        reference_samples.append(median_time(reference, 1, number))
    return Row(
        name, statistics.median(ours_samples), statistics.median(reference_samples), reference_name, target
    )


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
