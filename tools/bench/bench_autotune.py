"""The cost of cuDNN autotune (``burn_cuda._cudnn._autotune``) on the first training step of
``bench_models.py``'s GPU ResNet (issue 36's bar: the first step at most 2 s longer than a warm one; a
second process reuses the disk cache).

Each row is a fresh process on ``Autodiff(Cuda())`` with an empty or a filled cache folder: the first
step's time (CUDA context, kernel compilation, cuDNN plan builds, tuning), the median of 5 warm steps,
and how many keys were timed or read from disk. Rows: autotune on with an empty cache; on again with the
cache the first row filled (a second process); off (``BURN_CUDA_AUTOTUNE=0``, cuDNN's heuristic choice).

Run: ``python tools/bench/bench_autotune.py``. Without a GPU it prints why and exits 0.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker() -> None:
    """One process: the first step and 5 warm steps of the ResNet; a JSON line with the times."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    import bench_models

    from burn_cuda._cudnn import _autotune

    device = bench_models._device("cuda", 1)
    ours, _ = bench_models._steps("resnet-gn", device, "cuda", np.random.default_rng(0))
    start = time.perf_counter()
    ours()
    first = time.perf_counter() - start
    warm = []
    for _ in range(5):
        start = time.perf_counter()
        ours()
        warm.append(time.perf_counter() - start)
    print(json.dumps({"first": first, "warm": statistics.median(warm), **_autotune.stats}))


def main() -> None:
    try:
        from burn_cuda._cupy import unavailable_reason
    except ImportError as error:
        print(f"bench_autotune: burn-cuda cannot be imported ({error})")
        return
    reason = unavailable_reason()
    if reason is not None:
        print(f"bench_autotune: no GPU ({reason})")
        return
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, setting in (("on, empty cache", "1"), ("on, cache of the run above", "1"), ("off", "0")):
            env = {**os.environ, "BURN_CUDA_AUTOTUNE": setting, "BURN_CUDA_AUTOTUNE_DIR": folder}
            done = subprocess.run(
                [sys.executable, __file__, "--worker"], env=env, capture_output=True, text=True, check=True
            )
            rows.append((label, json.loads(done.stdout.strip().splitlines()[-1])))
    print("\ncuDNN autotune on the GPU ResNet's first training step (a fresh process each)")
    print(f"{'autotune':<30} {'first step':>11} {'warm step':>10} {'extra':>8} {'timed':>6} {'from disk':>9}")
    for label, row in rows:
        extra = row["first"] - row["warm"]
        print(
            f"{label:<30} {row['first']:10.3f}s {row['warm'] * 1e3:8.2f}ms {extra:7.2f}s "
            f"{row['timed']:6d} {row['from_disk']:9d}"
        )
    print("target: the first step <= 2 s longer than a warm one with an empty cache")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        main()
