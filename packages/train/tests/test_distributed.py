"""Data-parallel training over processes: the process group's collectives (ranks as threads here, the
transport being the same sockets), the launcher, and two CPU processes started by
``python -m burn_train.launch`` training like two devices of one process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("burn_autodiff")
pytest.importorskip("burn_record")
pytest.importorskip("burn_router")

from burn_autodiff import Autodiff
from burn_backend import ReduceOperation, Tensor
from burn_backend.activation import relu
from burn_backend.distributed import ProcessGroup
from burn_ndarray import NdArray
from burn_nn import LinearConfig, Module
from burn_nn.optim import GradientsParams
from burn_router import Router
from burn_train import GradientSync
from burn_train.launch import _free_port, launch

HERE = Path(__file__).parent
import toy_training as toy  # noqa: E402


def in_ranks(world: int, body: Callable[[ProcessGroup], Any], key: str = "00ff", **kwargs: Any) -> list[Any]:
    """``body(group)`` in one thread per rank; each rank's result, or the exception it raised."""
    port = _free_port()
    results: list[Any] = [None] * world

    def rank(r: int) -> None:
        try:
            group = ProcessGroup(r, world, "127.0.0.1", port, key, **kwargs)
            try:
                results[r] = body(group)
            finally:
                group.close()
        except Exception as error:  # handed to the test
            results[r] = error

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.parametrize("op", [ReduceOperation.SUM, ReduceOperation.MEAN])
def test_the_group_all_reduce_combines_every_rank_in_rank_order(op: ReduceOperation) -> None:
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(3)]

    def body(group: ProcessGroup) -> Any:
        tensor = Tensor.from_data(values[group.rank], NdArray().device())
        return group.all_reduce(tensor, op).to_data().to_numpy(), group.all_reduce_array(
            values[group.rank], op
        )

    expected = (values[0] + values[1]) + values[2]  # rank 0 adds in rank order: the same bits every run
    if op is ReduceOperation.MEAN:
        expected = expected / np.float32(3)
    for tensor_result, array_result in in_ranks(3, body):
        np.testing.assert_array_equal(tensor_result, expected)
        np.testing.assert_array_equal(array_result, expected)


def test_started_all_reduces_keep_their_order_with_direct_calls() -> None:
    def body(group: ProcessGroup) -> Any:
        device = NdArray().device()
        started = [
            group.all_reduce_async(Tensor.from_data([float(k + group.rank)], device), ReduceOperation.SUM)
            for k in range(3)
        ]
        direct = group.all_reduce_array(np.array([10.0 * (group.rank + 1)]), ReduceOperation.SUM)
        late = group.all_reduce_async(Tensor.from_data([1.0, 2.0], device), ReduceOperation.MEAN)
        return [f.result().tolist() for f in started], direct.tolist(), late.result().tolist()

    for result in in_ranks(2, body):
        assert result == ([[1.0], [3.0], [5.0]], [30.0], [1.0, 2.0])


def test_a_started_all_reduce_hands_its_error_to_the_future() -> None:
    def body(group: ProcessGroup) -> Any:
        device = NdArray().device()  # the sockets' transport (a GPU default would take NCCL)
        future = group.all_reduce_async(
            Tensor.from_data([0.0] * (1 + group.rank), device), ReduceOperation.SUM
        )
        with pytest.raises(ValueError, match="rank 1 sent"):
            future.result()
        with pytest.raises(TypeError, match="all_reduce_async: expected a Float tensor"):
            group.all_reduce_async(Tensor.from_data([1, 2], device), ReduceOperation.SUM)
        return True

    assert in_ranks(2, body) == [True, True]


class ThreeLayers(Module):
    def __init__(self, device: Any) -> None:
        self.first = LinearConfig(6, 8).init(device)
        self.second = LinearConfig(8, 8).init(device)
        self.third = LinearConfig(8, 3).init(device)

    def loss(self, x: Tensor, use_third: bool = True) -> Tensor:
        hidden = relu(self.second(relu(self.first(x))))
        return (self.third(hidden) if use_third else hidden).square().mean()


def _sync_step(
    group: ProcessGroup,
    model: ThreeLayers,
    change: bool = False,
    skip_third: bool = False,
    twice: bool = False,
) -> tuple[dict[Any, np.ndarray], dict[Any, np.ndarray], GradientSync, int]:
    """One rank's step under a ``GradientSync`` with small buckets: its own and the averaged gradients,
    the sync, and the buckets it had started when backward returned."""
    device = model.devices()[0]
    inner = device.backend.inner_device(device)  # type: ignore[attr-defined]
    sync = GradientSync(model, inner, group, first_bucket_bytes=64, bucket_bytes=200)
    x = Tensor.from_data(
        np.random.default_rng(group.rank).normal(size=(5, 6)).astype(np.float32), model.devices()[0]
    )
    with sync.watch(model):
        grads = GradientsParams.from_grads(
            model.loss(x, not (skip_third and group.rank == 1)).backward(), model
        )
        if twice and group.rank == 1:  # a second backward: its gradients are the step's
            grads = GradientsParams.from_grads((model.loss(x) * 2.0).backward(), model)
    started = len(sync._started)
    if change and group.rank == 1:  # a gradient changed after backward (clipping in train_step, say)
        first = grads.param_ids()[0]
        grads.register(first, grads.get(first) * 3.0)  # type: ignore[operator]
    own = {i: grads.get(i).to_numpy() for i in grads.param_ids()}  # type: ignore[union-attr]
    averaged, stop = sync.finish(grads, stop=group.rank == 1)
    assert stop  # rank 1 asked, every rank agrees
    return own, {i: averaged.get(i).to_numpy() for i in averaged.param_ids()}, sync, started  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "twice", "fused"),
    [(False, False, False), (True, False, False), (False, True, False), (False, False, True)],
)
def test_gradients_are_sent_during_backward_and_averaged(change: bool, twice: bool, fused: bool) -> None:
    inner = pytest.importorskip("burn_fusion").Fusion(NdArray()) if fused else NdArray()
    model = ThreeLayers(Autodiff(inner).device())
    results = in_ranks(2, lambda group: _sync_step(group, model, change=change, twice=twice))
    (own0, mean0, sync0, started0), (own1, mean1, _, started1) = results
    assert len(sync0.buckets) >= 4  # the caps cut the six parameters into several buckets
    assert started0 == started1 == len(sync0.buckets)  # every bucket left during backward
    assert sync0.redone == (1 if change or twice else 0)
    assert sorted(mean0, key=str) == sorted(own0, key=str)
    for key in own0:
        np.testing.assert_array_equal(mean0[key], mean1[key])
        np.testing.assert_allclose(mean0[key], (own0[key] + own1[key]) / 2, rtol=1e-6, atol=1e-7)


def test_a_parameter_one_process_did_not_use_gets_the_others_gradient_halved() -> None:
    model = ThreeLayers(Autodiff(NdArray()).device())
    (own0, mean0, _, started0), (own1, mean1, _, started1) = in_ranks(
        2, lambda group: _sync_step(group, model, skip_third=True)
    )
    third = {model.third.weight.id, model.third.bias.id}  # type: ignore[union-attr]
    assert third <= set(own0)
    assert not third & set(own1)
    assert started0 > 0
    assert started1 == 0
    for key in own0:
        expected = own0[key] / 2 if key in third else (own0[key] + own1[key]) / 2
        np.testing.assert_allclose(mean0[key], expected, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(mean0[key], mean1[key])


def test_the_group_all_reduce_is_differentiable() -> None:
    device = Autodiff(NdArray()).device()

    def body(group: ProcessGroup) -> Any:
        x = Tensor.from_data([1.0, 2.0], device).require_grad()
        y = group.all_reduce(x * float(group.rank + 1), ReduceOperation.SUM)  # x * 1 + x * 2 = 3x
        grads = (y * y).sum().backward()  # d/dx_r = all-reduce of 2y, times (r + 1)
        return y.to_data().to_numpy(), x.grad(grads).to_data().to_numpy()

    results = in_ranks(2, body)
    for rank, (y, grad) in enumerate(results):
        np.testing.assert_allclose(y, [3.0, 6.0])
        np.testing.assert_allclose(grad, np.array([12.0, 24.0]) * (rank + 1))


def test_ranks_that_disagree_get_one_clear_error_each() -> None:
    def body(group: ProcessGroup) -> Any:
        return group.all_reduce_array(np.zeros(2 + group.rank, np.float32), ReduceOperation.SUM)

    results = in_ranks(2, body)
    for result in results:
        assert isinstance(result, ValueError)
        assert "rank 1 sent [3] <f4" in str(result)
        assert "rank 0 [2] <f4" in str(result)


def test_the_group_checks_its_arguments_and_times_out() -> None:
    with pytest.raises(ValueError, match="rank 2 is outside"):
        ProcessGroup(2, 2)
    with pytest.raises(ValueError, match="authkey"):
        ProcessGroup(0, 2, authkey=b"")
    with pytest.raises(TypeError, match="Float tensor"):
        ProcessGroup(0, 1).all_reduce(Tensor.from_data([1, 2]))
    with pytest.raises(RuntimeError, match=r"burn_train\.launch"):
        ProcessGroup.from_environment()
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="waited"):
        ProcessGroup(0, 2, "127.0.0.1", _free_port(), "ab", timeout=0.5)  # nobody else comes
    assert time.monotonic() - started < 10


def test_a_process_without_the_runs_key_is_refused_while_the_run_meets() -> None:
    port = _free_port()
    results: dict[str, Any] = {}

    def member(name: str, rank: int, key: str) -> None:
        try:
            group = ProcessGroup(rank, 2, "127.0.0.1", port, key, timeout=5)
            results[name] = group.all_reduce_array(np.arange(3.0) * (rank + 1), ReduceOperation.SUM)
            group.close()
        except BaseException as error:
            results[name] = error

    members = [("rank 0", 0, "600d"), ("intruder", 1, "0bad"), ("rank 1", 1, "600d")]
    threads = {name: threading.Thread(target=member, args=(name, rank, key)) for name, rank, key in members}
    threads["rank 0"].start()
    threads["intruder"].start()
    threads["intruder"].join(10)  # refused by rank 0, which goes on to meet the real rank 1
    threads["rank 1"].start()
    for thread in threads.values():
        thread.join(10)
    assert isinstance(results["intruder"], ConnectionError), results["intruder"]
    np.testing.assert_array_equal(results["rank 0"], [0.0, 3.0, 6.0])
    np.testing.assert_array_equal(results["rank 1"], [0.0, 3.0, 6.0])


def test_the_launcher_stops_the_run_when_a_process_fails(tmp_path: Path) -> None:
    # each process gets its share of the cores, unless the caller chose a number of threads
    threads = os.environ.get("OMP_NUM_THREADS") or str(max(1, len(os.sched_getaffinity(0)) // 3))
    script = tmp_path / "rank.py"
    script.write_text(
        "import os, sys, time\n"
        "rank = int(os.environ['BURN_RANK'])\n"
        "assert os.environ['BURN_WORLD_SIZE'] == '3' and os.environ['BURN_LOCAL_RANK'] == str(rank)\n"
        f"assert os.environ['OMP_NUM_THREADS'] == {threads!r}, os.environ['OMP_NUM_THREADS']\n"
        "sys.exit(3) if rank == 1 else time.sleep(60)\n"
    )
    started = time.monotonic()
    assert launch([sys.executable, str(script)], nproc_per_node=3) == 3
    assert time.monotonic() - started < 30  # the sleeping ranks were stopped
    with pytest.raises(ValueError, match="master-port and a key"):
        launch([sys.executable, str(script)], nproc_per_node=1, nnodes=2)


def test_the_launcher_passes_a_signal_on_and_kills_what_ignores_it(tmp_path: Path) -> None:
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "open(sys.argv[1] + os.environ['BURN_RANK'], 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n"
    )
    code = (
        "import sys, burn_train.launch as launch\n"
        "launch._GRACE_S = 0.5\n"
        f"sys.exit(launch.main(['--nproc-per-node', '2', {str(script)!r}, {str(tmp_path / 'pid')!r}]))\n"
    )
    launcher = subprocess.Popen([sys.executable, "-c", code])
    pids = [tmp_path / f"pid{rank}" for rank in range(2)]
    deadline = time.monotonic() + 60
    while not all(p.exists() and p.read_text() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    launcher.terminate()
    assert launcher.wait(30) == 128 + 15  # SIGTERM's code, once the stubborn processes were killed
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid.read_text()), 0)


def _launch_toy(artifacts: Path, *extra: str) -> None:
    command = [
        sys.executable, "-m", "burn_train.launch", "--nproc-per-node", "2", str(HERE / "toy_training.py"),
        str(artifacts), "--epochs", "2", "--dropout", "0", "--distributed", *extra,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_processes_train_like_two_devices_of_one_process(tmp_path: Path) -> None:
    _launch_toy(tmp_path / "ddp")
    ranks = [np.load(tmp_path / "ddp" / f"final-rank{r}.npz") for r in range(2)]
    backend = Autodiff(Router(NdArray(), NdArray()))
    reference = toy.weights(
        toy.run(tmp_path / "one", 2, devices=[backend.device(0), backend.device(1)], dropout=0.0)
    )
    for key, value in reference.items():
        np.testing.assert_array_equal(ranks[0][key], ranks[1][key], err_msg=key)  # the replicas agree
        np.testing.assert_allclose(ranks[0][key], value, rtol=1e-5, atol=1e-6, err_msg=key)
    # rank 0 writes the checkpoints and the run's logs; the metric values are the run's, not a part's
    assert sorted(p.name for p in (tmp_path / "ddp" / "checkpoint").iterdir()) == sorted(
        p.name for p in (tmp_path / "one" / "checkpoint").iterdir()
    )
    assert not (tmp_path / "ddp" / "rank-1" / "checkpoint").exists()
    # each process draws its curves in its own log directory: no two writers share a file
    for log_dir in (tmp_path / "ddp", tmp_path / "ddp" / "rank-1"):
        assert (log_dir / "curves.html").is_file()
    assert not list((tmp_path / "ddp").rglob("*.part"))
    for name in ("Accuracy", "Loss"):
        ours = (tmp_path / "ddp" / "valid" / "epoch-2" / f"{name}.log").read_text().split()
        part = (tmp_path / "ddp" / "rank-1" / "valid" / "epoch-2" / f"{name}.log").read_text().split()
        both = [float(line.split(",")[0]) for line in ours + part]
        one = [float(line.split(",")[0]) for line in
               (tmp_path / "one" / "valid" / "epoch-2" / f"{name}.log").read_text().split()]  # fmt: skip
        np.testing.assert_allclose(np.mean(both), np.mean(one), rtol=1e-5)


def test_two_processes_accumulating_gradients_train_like_two_devices(tmp_path: Path) -> None:
    # with accumulation the gradients are averaged once per optimizer step, after the last backward
    _launch_toy(tmp_path / "ddp", "--accumulation", "2")
    ranks = [np.load(tmp_path / "ddp" / f"final-rank{r}.npz") for r in range(2)]
    backend = Autodiff(Router(NdArray(), NdArray()))
    devices = [backend.device(0), backend.device(1)]
    reference = toy.weights(toy.run(tmp_path / "one", 2, devices=devices, dropout=0.0, accumulation=2))
    for key, value in reference.items():
        np.testing.assert_array_equal(ranks[0][key], ranks[1][key], err_msg=key)
        np.testing.assert_allclose(ranks[0][key], value, rtol=1e-5, atol=1e-6, err_msg=key)


def test_a_stop_in_one_process_stops_all_after_the_same_step_and_resumes(tmp_path: Path) -> None:
    _launch_toy(tmp_path / "full")
    _launch_toy(tmp_path / "part", "--stop-at", "1", "2", "3")  # rank 1 is asked to stop in epoch 2
    steps = (tmp_path / "part" / "progress-rank0.txt").read_text().split("\n")
    # rank 1's metric asks for the stop when it reads step 3's values, after step 4 is queued (metrics
    # run one step behind); step 5's all-reduce carries it to every process
    assert steps[-2] == "2 5"
    _launch_toy(tmp_path / "part", "--resume", "2")
    for r in range(2):
        full, resumed = (
            np.load(tmp_path / "full" / f"final-rank{r}.npz"),
            np.load(tmp_path / "part" / f"final-rank{r}.npz"),
        )
        for key in full.files:
            np.testing.assert_array_equal(full[key], resumed[key], err_msg=key)
