"""NdArray's thread policy (``burn_ndarray._threads``): N granted threads, divided among its workers,
BLAS and numba wherever work is split, and no more than N threads busy while a convolution runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from burn_backend import ConvOptions, Tensor, module
from burn_ndarray import NdArray, _threads


def blas_threads() -> set[int]:
    return {int(info["num_threads"]) for info in threadpool_info() if info["user_api"] == "blas"}


@pytest.fixture
def restore_policy() -> Iterator[None]:
    before = _threads.num_threads()
    yield
    _threads.set_num_threads(before)


def test_num_threads_sets_blas_to_the_grant(restore_policy: None) -> None:
    NdArray(num_threads=1)
    assert _threads.num_threads() == 1
    assert blas_threads() == {1}
    NdArray(num_threads=3)
    assert _threads.num_threads() == 3
    assert blas_threads() == {3}


def test_a_split_divides_the_grant_among_its_workers(restore_policy: None) -> None:
    NdArray(num_threads=4)
    assert _threads.workers(10) == min(4, _threads.MAX_WORKERS)
    assert _threads.workers(1) == 1
    seen: dict[int, tuple[set[int], int, int]] = {}

    def body(index: int) -> None:
        seen[index] = (blas_threads(), _threads.workers(100), _threads.numba_threads())

    _threads.parallel(body, 2)
    # two workers of four threads: BLAS and numba at two threads each, and no nested split past two
    assert seen == {0: ({2}, 2, 2), 1: ({2}, 2, 2)}
    assert blas_threads() == {4}  # the whole grant again once the split is over
    _threads.parallel(body, 4)
    assert seen[3] == ({1}, 1, 1)
    assert blas_threads() == {4}


def test_the_workers_see_their_errors_raised_and_floating_point_warnings_silenced(
    restore_policy: None,
) -> None:
    NdArray(num_threads=2)

    def body(index: int) -> None:
        np.divide(np.ones(2), np.zeros(2))  # would warn outside the workers' errstate
        if index == 1:
            raise RuntimeError("part 1 failed")

    with pytest.raises(RuntimeError, match="part 1 failed"):
        _threads.parallel(body, 2)
    assert blas_threads() == {2}


@pytest.mark.parametrize("count", [0, -2, 1.5, "2", True])
def test_bad_thread_counts_are_refused(count: object) -> None:
    with pytest.raises(ValueError, match="num_threads must be a positive integer"):
        NdArray(num_threads=count)  # type: ignore[arg-type]


def test_a_malformed_environment_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_NUM_THREADS", "many")
    with pytest.raises(ValueError, match=r"BURN_NUM_THREADS must be a positive integer.*'many'"):
        _threads.default_threads()
    monkeypatch.setenv("BURN_NUM_THREADS", "3")
    assert _threads.default_threads() == 3
    monkeypatch.delenv("BURN_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert _threads.default_threads() == 2
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert _threads.default_threads() == len(os.sched_getaffinity(0))


# Runs a convolution forward and backward (a split over workers) and a large GEMM for a while, and
# counts the threads of the process that were busy (CPU time of at least a fifth of the wall time).
_BUSY_SCRIPT = r"""
import json, os, sys, time
import numpy as np
from burn_backend import ConvOptions, Tensor, module
from burn_ndarray import NdArray

def cpu_times():
    times = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        times[tid] = int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return times

device = NdArray(num_threads=int(sys.argv[1])).device()
rng = np.random.default_rng(0)
x = Tensor.from_numpy(rng.standard_normal((64, 16, 32, 32), dtype=np.float32), device)
w = Tensor.from_numpy(rng.standard_normal((32, 16, 3, 3), dtype=np.float32), device)
a = rng.standard_normal((512, 512), dtype=np.float32)
options = ConvOptions((1, 1), (1, 1), (1, 1), 1)
backend = device.backend
def work():
    y = module.conv2d(x, w, options=options)
    backend.conv2d_x_backward(x.primitive, w.primitive, y.primitive, options)
    a @ a
work()
before, start = cpu_times(), time.perf_counter()
while time.perf_counter() - start < 1.0:
    work()
after, wall = cpu_times(), time.perf_counter() - start
ticks = os.sysconf("SC_CLK_TCK") * wall
busy = sum(1 for tid, t in after.items() if t - before.get(tid, 0) >= 0.2 * ticks)
print(json.dumps({"busy": busy, "threads": len(after)}))
"""


def test_no_more_threads_are_busy_than_granted() -> None:
    # one granted thread: the convolution's split and BLAS both stay on the calling thread (two
    # workers, each with a BLAS of the machine's width, ran before the policy)
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "NUMBA_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", _BUSY_SCRIPT, "1"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["busy"] == 1, report


def test_the_conv_of_a_split_batch_matches_one_thread(restore_policy: None) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((48, 8, 20, 20)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    options = ConvOptions((1, 1), (1, 1), (1, 1), 1)
    results = []
    for count in (1, 2, 4):
        device = NdArray(num_threads=count).device()
        tx, tw = Tensor.from_numpy(x, device), Tensor.from_numpy(w, device)
        results.append(module.conv2d(tx, tw, options=options).to_numpy())
    reference = np.zeros((48, 16, 20, 20))
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(3):
        for j in range(3):
            reference += np.einsum("bchw,oc->bohw", padded[:, :, i : i + 20, j : j + 20], w[:, :, i, j])
    for result in results:
        np.testing.assert_allclose(result, reference, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(results[1], results[2])


_WAIT_POLICY_SCRIPT = """
import json, os, sys
import numpy as np
from burn_ndarray import NdArray, _kernels, _numba
NdArray(num_threads=2)
assert _numba.kernels() is not None
_kernels.PARALLEL_MIN = 1
_kernels.relu(np.ones(100_000, dtype=np.float32))  # a parallel kernel: numba's OpenMP loads here
import numba
print(json.dumps({"policy": os.environ.get("OMP_WAIT_POLICY"), "layer": numba.threading_layer()}))
"""


@pytest.mark.parametrize(("preset", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_numbas_openmp_workers_sleep_between_kernels_unless_told_otherwise(
    preset: str | None, expected: str
) -> None:
    # numba's GNU OpenMP reads OMP_WAIT_POLICY when its first parallel kernel loads it: the policy asks
    # for passive workers before that (spinning ones made a 2-thread ReLU 30x slower on a shared
    # machine), and a user's own setting stays
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "NUMBA_NUM_THREADS")}
    if preset is not None:
        environment["OMP_WAIT_POLICY"] = preset
    done = subprocess.run(
        [sys.executable, "-c", _WAIT_POLICY_SCRIPT],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["policy"] == expected, report
