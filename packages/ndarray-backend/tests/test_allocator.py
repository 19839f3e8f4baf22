"""The allocator setting: large arrays freed by one step are reused by the next, not faulted in again."""

import os
import subprocess
import sys

import pytest

LINUX_GLIBC = sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION") is not None

# 40 rounds of allocating, touching and freeing 8 MiB in 256 KiB arrays (a training step's gradients)
STEPS = """
import resource, sys
import numpy as np
import burn_ndarray
def step():
    arrays = [np.ones((256, 256), dtype=np.float32) for _ in range(32)]
    return sum(float(a[0, 0]) for a in arrays)
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(keep_freed: str) -> int:
    env = {**os.environ, "BURN_NDARRAY_KEEP_FREED": keep_freed}
    done = subprocess.run([sys.executable, "-c", STEPS], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(not LINUX_GLIBC, reason="the setting is glibc's mallopt")
def test_freed_arrays_are_reused_without_page_faults() -> None:
    # 40 steps x 8 MiB of fresh pages would be about 80,000 faults with glibc's defaults
    assert _faults("0") > 20_000
    assert _faults("1") < 2_000


@pytest.mark.skipif(not LINUX_GLIBC, reason="the setting is glibc's mallopt")
def test_setting_reports_whether_it_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    from burn_ndarray._allocator import keep_freed_memory

    assert keep_freed_memory() is True
    monkeypatch.setenv("BURN_NDARRAY_KEEP_FREED", "0")
    assert keep_freed_memory() is False
