"""Data-parallel training over processes (``python -m burn_train.launch``, ``GradientSync``): throughput
scaling with the number of processes, and loss curves against one process with the same global batch.

Two models, each trained on synthetic batches (the same items every run, whatever the number of
processes; each process takes its consecutive part of the global batch):

- ``guide``: the Burn Book's guide model (examples/guide, dropout off so that runs are comparable),
  28x28 images;
- ``resnet``: a ResNet-style network (a stem, three stages of two basic blocks of 3x3 convolutions with
  64/128/256 channels, GroupNorm so that a process's statistics do not depend on its part of the batch,
  global average pooling, a linear head), 32x32 RGB images.

For ``N`` processes, three runs per model: one process with the per-process batch ``b`` (the unit of
throughput), ``N`` processes with ``b`` each (the global batch ``N * b``), and one process with the
global batch ``N * b`` for the first steps (the reference loss curve). Printed per model: step time,
items/s, the scaling efficiency ``throughput(N) / (N * throughput(1))`` (target for the ResNet: >= 0.9),
and the largest relative difference between the ``N``-process loss curve and the one-process one.

Run: ``python tools/bench/bench_ddp.py --backend cuda --processes 2`` on a machine with 2 GPUs (one
process per GPU); ``--backend ndarray`` runs the same on the CPU (processes share the cores there, so
only the loss curves mean something).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2] / "examples" / "guide"))

SEED = 7


def _backend(name: str) -> Any:
    from burn_autodiff import Autodiff

    if name == "cuda":
        from burn_cuda import Cuda

        return Autodiff(Cuda())
    from burn_ndarray import NdArray

    return Autodiff(NdArray())


def _resnet(device: Any) -> Any:
    from burn_backend import activation
    from burn_nn import (
        AdaptiveAvgPool2dConfig,
        Conv2dConfig,
        GroupNormConfig,
        LinearConfig,
        Module,
        PaddingConfig2d,
    )

    same = PaddingConfig2d.Explicit(1, 1)

    class Block(Module):
        def __init__(self, channels_in: int, channels: int, stride: int) -> None:
            self.conv1 = Conv2dConfig([channels_in, channels], [3, 3], stride=[stride, stride], padding=same,
                                      bias=False).init(device)  # fmt: skip
            self.norm1 = GroupNormConfig(8, channels).init(device)
            self.conv2 = Conv2dConfig([channels, channels], [3, 3], padding=same, bias=False).init(device)
            self.norm2 = GroupNormConfig(8, channels).init(device)
            self.skip = (
                Conv2dConfig([channels_in, channels], [1, 1], stride=[stride, stride], bias=False).init(
                    device
                )
                if stride != 1 or channels_in != channels
                else None
            )

        def forward(self, x: Any) -> Any:
            y = activation.relu(self.norm1(self.conv1(x)))
            y = self.norm2(self.conv2(y))
            return activation.relu(y + (x if self.skip is None else self.skip(x)))

    class ResNet(Module):
        def __init__(self) -> None:
            self.stem = Conv2dConfig([3, 64], [3, 3], padding=same, bias=False).init(device)
            self.stem_norm = GroupNormConfig(8, 64).init(device)
            widths, blocks, channels = [64, 128, 256], [], 64
            for stage, width in enumerate(widths):
                for index in range(2):
                    blocks.append(Block(channels, width, 2 if stage > 0 and index == 0 else 1))
                    channels = width
            self.blocks = blocks
            self.pool = AdaptiveAvgPool2dConfig([1, 1]).init()
            self.head = LinearConfig(256, 10).init(device)

        def forward(self, images: Any) -> Any:
            x = activation.relu(self.stem_norm(self.stem(images)))
            for block in self.blocks:
                x = block.forward(x)
            return self.head(self.pool(x).reshape([images.dims()[0], 256]))

    return ResNet()


def _model(name: str, device: Any) -> tuple[Any, list[int], int]:
    """The model, an item's shape and the number of classes."""
    if name == "guide":
        from model import ModelConfig

        return ModelConfig(num_classes=10, hidden_size=512, dropout=0.0).init(device), [28, 28], 10
    return _resnet(device), [3, 32, 32], 10


def _pool(shape: list[int], classes: int, items: int) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic items every run draws its batches from (made before the timed steps, so that the
    time of making them does not grow with the global batch)."""
    rng = np.random.default_rng(SEED)
    labels = rng.integers(0, classes, items)
    images = rng.normal(size=[items, *shape]).astype(np.float32)
    images += labels.reshape(-1, *[1] * len(shape)).astype(np.float32) / classes  # something to learn
    return images, labels


_POOL_BATCHES = 8  # the pool holds this many global batches; step k takes the (k mod 8)-th


def worker(args: argparse.Namespace) -> None:
    """One process of a run: ``args.steps`` steps of SGD with momentum; rank 0 writes the results."""
    from burn_backend import Tensor
    from burn_backend.distributed import ProcessGroup, ReduceOperation
    from burn_nn import loss
    from burn_nn.optim import GradientsParams, MomentumConfig, SgdConfig
    from burn_train import GradientSync

    group = ProcessGroup.from_environment(timeout=120)
    backend = _backend(args.backend)
    device = backend.device(group.local_rank if args.backend == "cuda" else 0)
    inner = backend.inner_device(device)
    device.seed(SEED)  # every process draws the same initial model
    model, shape, classes = _model(args.model, device)
    optimizer = SgdConfig(momentum=MomentumConfig(0.9, 0.0)).init()
    sync = GradientSync(model, inner, group)
    criterion = loss.CrossEntropyLossConfig().init(device)
    part = args.global_batch // group.world_size
    images, labels = _pool(shape, classes, _POOL_BATCHES * args.global_batch)
    losses, started = [], 0.0
    for step in range(args.steps):
        if step == args.warmup:
            backend.sync(device)
            group.barrier()
            started = time.perf_counter()
        first = (step % _POOL_BATCHES) * args.global_batch + group.rank * part
        x = Tensor.from_data(images[first : first + part], device)
        y = Tensor.from_data(labels[first : first + part], device)
        with sync.watch(model):
            value = criterion.forward(model.forward(x), y)
            grads = GradientsParams.from_grads(value.backward(), model)
        grads, _ = sync.finish(grads, stop=False)
        model = optimizer.step(0.01, model, grads)
        losses.append(value.detach().inner())
    backend.sync(device)
    seconds = (time.perf_counter() - started) / max(1, args.steps - args.warmup)
    curve = Tensor.cat([v.reshape([1]) for v in losses], 0).to_numpy().astype(np.float64)
    curve = group.all_reduce_array(curve, ReduceOperation.MEAN)
    if group.rank == 0:
        result = {"step_s": seconds, "losses": curve.tolist(), "redone": sync.redone}
        Path(args.out).write_text(json.dumps(result))
    group.close()


def _run(
    args: argparse.Namespace, model: str, processes: int, global_batch: int, steps: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        command = [
            sys.executable, "-m", "burn_train.launch", "--nproc-per-node", str(processes), str(HERE),
            "--worker", "--backend", args.backend, "--model", model, "--global-batch", str(global_batch),
            "--steps", str(steps), "--warmup", str(min(args.warmup, steps - 1)), "--out", str(out),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout)
        if done.returncode != 0:
            raise SystemExit(f"{model} on {processes} process(es) failed:\n{done.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["cuda", "ndarray"], default="ndarray")
    parser.add_argument("--processes", type=int, default=2, help="processes (GPUs) of the parallel run")
    parser.add_argument("--models", default="guide,resnet")
    parser.add_argument("--batch", type=int, default=0, help="items per process (default: per model)")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--curve-steps", type=int, default=10, help="steps of the loss-curve comparison")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--global-batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    n = args.processes
    print(f"backend {args.backend}, {n} processes, {args.steps} steps ({args.warmup} warm-up)")
    header = f"{'model':8} {'batch/proc':>10} {'1 proc ms':>10} {f'{n} proc ms':>10} {'items/s 1':>10} "
    print(header + f"{f'items/s {n}':>10} {'scaling':>8} {'curve diff':>10}")
    for model in args.models.split(","):
        batch = args.batch or {"guide": 256, "resnet": 128}[model]
        one = _run(args, model, 1, batch, args.steps)
        many = _run(args, model, n, n * batch, args.steps)
        reference = _run(args, model, 1, n * batch, args.curve_steps)
        ours = np.array(many["losses"][: args.curve_steps])
        theirs = np.array(reference["losses"])
        difference = float(np.max(np.abs(ours - theirs) / np.abs(theirs)))
        rate_one, rate_many = batch / one["step_s"], n * batch / many["step_s"]
        print(
            f"{model:8} {batch:>10} {one['step_s'] * 1e3:>10.2f} {many['step_s'] * 1e3:>10.2f} "
            f"{rate_one:>10.0f} {rate_many:>10.0f} {rate_many / (n * rate_one):>8.2f} {difference:>10.1e}"
        )
        again = f"(averaged again: {many['redone']} steps)"
        print(f"         losses ({n} proc): {np.round(ours, 4).tolist()} {again}")
        print(f"         losses (1 proc):  {np.round(theirs, 4).tolist()}")


if __name__ == "__main__":
    main()
