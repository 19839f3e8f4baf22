"""burn-record against safetensors' NumPy API and torch.save / torch.load(weights_only=True), side by side
in one run: save and load times of a 100M-parameter f32 model (400 MB in 229 tensors), the peak extra
memory while loading (and saving), and the size of a trained guide model with and without compression.

Times are medians over rounds; each round times every library in turn (rotating who goes first), each
save writing a file deleted beforehand (so no save pays for freeing another's pages), after ``os.sync``
and a pause (so no ``fsync`` waits for another side's data). Our saves ``fsync`` the file and its
folder (durability is part of the contract); the references do not, so a second save row gives
safetensors the same ``fsync``, and a last row times our save without it (``durable=False``: still
atomic against the process dying, not against a power loss). A last side writes the same bytes with
the simplest durable code there is (``os.write`` of every tensor, then ``fsync``: no format, no
checksum): what any durable save must at least wait for, the disk's floor. Besides medians of the
times, the bench prints the median of the per-round ratios (each round's two samples are taken seconds
apart, so that a machine shared with other work disturbs them alike) and the median CPU time
(``time.process_time``, all threads), a second opinion that waiting for the disk does not inflate.
Memory is measured in a fresh process per library: the peak resident set (Linux's ``VmHWM``, reset
before the operation) minus the resident set before it, over the model's size.

Run: ``python tools/bench/bench_record.py [--quick] [--rounds N] [--guide-epochs N] [--folder DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _harness import Row, print_table
from safetensors.numpy import load_file as st_load
from safetensors.numpy import save_file as st_save

from burn_backend import TensorData
from burn_record import FullPrecisionSettings, NamedMpkFileRecorder, NamedMpkZstFileRecorder

PARAMS = 100_000_000
SHAPES = [(1024, 1024), (1024,), (256, 1024)]  # cycled: 229 tensors, 100.7M values
PAUSE_S = 0.5


def model_arrays() -> dict[str, np.ndarray[Any, Any]]:
    """About 100M f32 values in a few hundred tensors, named like a module's parameters."""
    rng = np.random.default_rng(0)
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    total = index = 0
    while total < PARAMS:
        shape = SHAPES[index % len(SHAPES)]
        arrays[f"layers.{index // 3}.{['weight', 'bias', 'proj'][index % 3]}"] = rng.standard_normal(
            shape, dtype=np.float32
        )
        total += int(np.prod(shape))
        index += 1
    return arrays


def _fsync(path: Path) -> None:
    with open(path, "rb+") as file:
        os.fsync(file.fileno())


def _write_fsync(arrays: dict[str, np.ndarray[Any, Any]], path: Path) -> None:
    """The tensors' bytes written one after the other, then ``fsync``-ed: the floor of a durable save."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        for array in arrays.values():
            view = memoryview(np.ascontiguousarray(array)).cast("B")
            while len(view):
                view = view[os.write(descriptor, view) :]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class Library:
    """One side: how it saves ``arrays`` to a file and loads them back (``None``: not loaded)."""

    def __init__(
        self, name: str, path: Path, save: Callable[[], Any], load: Callable[[], Any] | None
    ) -> None:
        self.name, self.path, self.save, self.load = name, path, save, load


def libraries(arrays: dict[str, np.ndarray[Any, Any]], folder: Path) -> list[Library]:
    record = {name: TensorData.from_numpy(array, copy=False) for name, array in arrays.items()}
    tensors = {name: torch.from_numpy(array) for name, array in arrays.items()}
    recorder = NamedMpkFileRecorder(FullPrecisionSettings())
    fast = NamedMpkFileRecorder(FullPrecisionSettings(), durable=False)
    names = ("ours.mpk", "fast.mpk", "st.safetensors", "sts.safetensors", "t.pt", "raw.bin")
    ours, ours_fast, st, st_synced, pt, raw = (folder / name for name in names)
    return [
        Library(
            "burn-record NamedMpk", ours, lambda: recorder.save(record, ours), lambda: recorder.load(ours)
        ),
        Library(
            "burn-record durable=False",
            ours_fast,
            lambda: fast.save(record, ours_fast),
            lambda: fast.load(ours_fast),
        ),
        Library("safetensors", st, lambda: st_save(arrays, str(st)), lambda: st_load(str(st))),
        Library(
            "safetensors + fsync",
            st_synced,
            lambda: (st_save(arrays, str(st_synced)), _fsync(st_synced)),
            lambda: st_load(str(st_synced)),
        ),
        Library("torch", pt, lambda: torch.save(tensors, pt), lambda: torch.load(pt, weights_only=True)),
        Library("os.write + fsync", raw, lambda: _write_fsync(arrays, raw), None),
    ]


def timed(function: Callable[[], Any]) -> tuple[float, float]:
    """Seconds one call takes and the CPU seconds it uses (all threads), after the previous writes
    reached the disk (so that no side's ``fsync`` waits for another's data) and a pause."""
    gc.collect()
    os.sync()
    time.sleep(PAUSE_S)
    cpu = time.process_time()
    start = time.perf_counter()
    result = function()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    del result
    return elapsed, cpu


Samples = dict[str, dict[str, list[float]]]


def measure_times(sides: list[Library], rounds: int) -> tuple[Samples, Samples]:
    """Save and load seconds per library, one sample per round, and the CPU seconds of each."""
    wall: Samples = {side.name: {"save": [], "load": []} for side in sides}
    cpu: Samples = {side.name: {"save": [], "load": []} for side in sides}
    for round_index in range(rounds):
        order = sides[round_index % len(sides) :] + sides[: round_index % len(sides)]
        for side in order:
            side.path.unlink(missing_ok=True)
            elapsed, used = timed(side.save)
            wall[side.name]["save"].append(elapsed)
            cpu[side.name]["save"].append(used)
        for side in order:
            if side.load is not None:
                elapsed, used = timed(side.load)
                wall[side.name]["load"].append(elapsed)
                cpu[side.name]["load"].append(used)
    return wall, cpu


def paired_ratio(ours: list[float], theirs: list[float]) -> float:
    """The median of the rounds' ratios (each round's two samples were taken close together)."""
    return statistics.median(a / b for a, b in zip(ours, theirs))


_MEMORY_CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[3])
import bench_record as bench

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    raise KeyError(key)

folder, what = sys.argv[1], sys.argv[2]
operation, name = what.split(":", 1)
arrays = bench.model_arrays() if operation == "save" else {}
arrays = arrays or {"x": bench.np.zeros(1, bench.np.float32)}
side = {s.name: s for s in bench.libraries(arrays, bench.Path(folder))}[name]
if operation == "save":
    side.path.unlink(missing_ok=True)
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak resident set (VmHWM) to the current one
result = side.save() if operation == "save" else side.load()
print(json.dumps({"extra": status("VmHWM") - before}))
"""


def measure_memory(folder: Path, operation: str, name: str) -> float | None:
    """Peak extra resident memory of one save or load in a fresh process, in bytes (None off Linux)."""
    if not Path("/proc/self/clear_refs").exists():
        return None
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, str(folder), f"{operation}:{name}", str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1])["extra"])


def guide_sizes(epochs: int, folder: Path) -> tuple[int, int, float] | None:
    """Train the guide model (examples/guide, ``epochs`` on the MNIST subset) and save it in full precision
    with and without compression: (plain bytes, compressed bytes, final validation accuracy)."""
    guide = Path(__file__).resolve().parents[2] / "examples" / "guide"
    sys.path.insert(0, str(guide))
    try:
        from data import load_mnist_5k
        from model import ModelConfig
        from training import TrainingConfig, train

        from burn_autodiff import Autodiff
        from burn_ndarray import NdArray
        from burn_nn.optim import AdamConfig

        train_split, valid_split = load_mnist_5k(42)
    except Exception as error:  # no data (offline) or no backend: say so, skip the row
        print(f"guide model row skipped: {type(error).__name__}: {error}")
        return None
    config = TrainingConfig(ModelConfig(10, 512), AdamConfig(), num_epochs=epochs, seed=42)
    model, accuracy = train(config, train_split, valid_split, Autodiff(NdArray()).device(), folder / "guide")
    plain = model.save_file(folder / "guide-model", NamedMpkFileRecorder(FullPrecisionSettings()))
    compressed = model.save_file(folder / "guide-model", NamedMpkZstFileRecorder(FullPrecisionSettings()))
    return plain.stat().st_size, compressed.stat().st_size, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier), a 1-epoch guide model")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--guide-epochs", type=int, default=10, help="0: no guide model row")
    parser.add_argument("--folder", type=Path, help="where the files go (default: a temporary folder)")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    epochs = 1 if args.quick else args.guide_epochs

    with tempfile.TemporaryDirectory(dir=args.folder) as name:
        folder = Path(name)
        arrays = model_arrays()
        size = sum(array.nbytes for array in arrays.values())
        print(f"model: {sum(a.size for a in arrays.values()) / 1e6:.1f}M f32 values, {size / 1e6:.0f} MB, "
              f"{len(arrays)} tensors; {rounds} rounds")  # fmt: skip
        sides = libraries(arrays, folder)
        samples, cpu = measure_times(sides, rounds)
        targets = {
            "safetensors": ("<= 1.2x", "<= 1.0x"),
            "safetensors + fsync": ("-", "-"),
            "torch": ("-", "-"),
        }
        times = {
            name: {op: statistics.median(v) for op, v in ops.items() if v} for name, ops in samples.items()
        }
        ours, fast = times["burn-record NamedMpk"], times["burn-record durable=False"]
        rows = []
        for reference, (save_target, load_target) in targets.items():
            theirs = times[reference]
            rows.append(Row("save 100M f32", ours["save"], theirs["save"], reference, save_target))
            rows.append(Row("load 100M f32", ours["load"], theirs["load"], reference, load_target))
        rows.append(
            Row("save, durable=False", fast["save"], times["safetensors"]["save"], "safetensors", "-")
        )
        floor = times["os.write + fsync"]["save"]
        rows.append(Row("os.write + fsync (floor)", floor, times["safetensors"]["save"], "safetensors", "-"))
        print_table("Save and load, NamedMpkFileRecorder (full precision), medians", rows)
        print("\nmedian of the per-round ratios, and median CPU seconds (process_time, all threads):")
        reference = samples["safetensors"]
        for name, ops in samples.items():
            line = []
            for op, values in ops.items():
                if values:
                    ratio = paired_ratio(values, reference[op])
                    used = statistics.median(cpu[name][op])
                    line.append(f"{op} {ratio:5.2f}x st, cpu {used * 1e3:4.0f} ms")
            print(f"  {name:<26} {';  '.join(line)}")
        print("spread over the rounds (fastest - slowest, ms):")
        for name, ops in samples.items():
            spread = ", ".join(f"{op} {min(v) * 1e3:.0f} - {max(v) * 1e3:.0f}" for op, v in ops.items() if v)
            print(f"  {name:<26} {spread}")
        del arrays, sides
        gc.collect()

        print(
            f"\nPeak extra resident memory, fresh process each, over the model's size ({size / 1e6:.0f} MB):"
        )
        print(f"{'library':<24} {'load':>8} {'save':>8}   target: load <= 1.1x")
        for name in ("burn-record NamedMpk", "safetensors", "torch"):
            load = measure_memory(folder, "load", name)
            save = measure_memory(folder, "save", name)
            if load is None or save is None:
                print("(needs Linux's /proc: skipped)")
                break
            print(f"{name:<24} {load / size:7.2f}x {save / size:7.2f}x")

        sizes = guide_sizes(epochs, folder) if epochs > 0 else None
        if sizes is not None:
            plain, compressed, accuracy = sizes
            print(f"\nTrained guide model ({epochs} epochs, validation accuracy {accuracy:.1f}%), f32:")
            print(f"  NamedMpk {plain:,} bytes, NamedMpkZst {compressed:,} bytes: "
                  f"{100 * (1 - compressed / plain):.1f}% smaller (target >= 10%)")  # fmt: skip


if __name__ == "__main__":
    main()
