"""The launcher's conventions across machines, simulated by two launchers on this one (``--nnodes 2``,
``--node-rank 0`` and ``1``, one port and key): every process gets its place under both the ``BURN_``
names and the names ``torchrun`` sets, ``ProcessGroup.from_environment`` reads either, and a process
that dies mid-run ends the processes of the other machine with a clear error, not a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from burn_backend.distributed import ProcessGroup
from burn_train import launch as launcher

RANK_SCRIPT = """
import os, sys
import numpy as np
from burn_backend import Tensor
from burn_backend.distributed import ProcessGroup
from burn_ndarray import NdArray

for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    assert os.environ[name] == os.environ["BURN_" + name], name
assert os.environ["WORLD_SIZE"] == "2" and os.environ["LOCAL_RANK"] == "0"
group = ProcessGroup.from_environment(timeout=60)
ones = Tensor.from_data(np.ones(3, np.float32), NdArray().device())
print("sum", group.all_reduce(ones).tolist(), flush=True)
if group.rank == 1:
    os._exit(3)  # dies without a word, as a crashed process does
try:
    group.all_reduce(ones)
except Exception as error:
    print(f"error: {type(error).__name__}: {error}", flush=True)
    sys.exit(4)
print("no error", flush=True)
"""


def test_a_process_dying_on_one_machine_ends_the_other_machine_with_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    port = launcher._free_port()
    env = {**os.environ, "BURN_AUTHKEY": ProcessGroup.new_authkey(), "OMP_NUM_THREADS": "1"}
    nodes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "burn_train.launch",
                "--nproc-per-node",
                "1",
                "--nnodes",
                "2",
                "--node-rank",
                str(rank),
                "--master-port",
                str(port),
                str(script),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(2)
    ]
    started = time.monotonic()
    outputs = [node.communicate(timeout=120)[0] for node in nodes]
    assert time.monotonic() - started < 60, outputs  # no hang until a timeout
    assert "sum [2.0, 2.0, 2.0]" in outputs[0], outputs[0]
    assert nodes[1].returncode == 3, outputs[1]
    assert nodes[0].returncode == 4, outputs[0]
    assert "error: ConnectionError: ProcessGroup: rank 0 lost rank 1 of the run" in outputs[0], outputs[0]
    assert "no error" not in outputs[0]


def test_the_group_reads_the_names_torchrun_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "AUTHKEY"):
        monkeypatch.delenv(f"BURN_{name}", raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(launcher._free_port()))
    with pytest.raises(RuntimeError, match="BURN_AUTHKEY not set"):
        ProcessGroup.from_environment()
    monkeypatch.setenv("BURN_AUTHKEY", ProcessGroup.new_authkey())
    group = ProcessGroup.from_environment()
    try:
        assert (group.rank, group.world_size, group.local_rank) == (0, 1, 0)
    finally:
        group.close()
    monkeypatch.setenv("BURN_RANK", "zero")
    with pytest.raises(RuntimeError, match="expected integers"):
        ProcessGroup.from_environment()
