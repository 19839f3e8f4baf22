"""The remote backend over loopback, server and client in separate processes on this machine:

- op streaming: 2x2 adds from one client, every result kept, one read at the end (target >= 50,000 ops/s);
- transfer: a 256 MB f32 tensor up (``from_data`` until the server holds it) and down (``to_data``)
  (target >= 1 GB/s each way);
- the guide model's training (examples/guide: 10 epochs, 4,000 images) on ``Autodiff(Remote(NdArray
  server))`` against ``Autodiff(NdArray())`` in this process, with both accuracies (target <= 1.5x);
- the server process's resident memory over 100 client sessions that connect, compute and disconnect
  (target: flat).

Medians are printed with the spread; the machine is shared, so quote medians.

Run: ``python tools/bench/bench_remote.py [--quick] [--no-training]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from burn_autodiff import Autodiff
from burn_backend import Backend, Tensor
from burn_ndarray import NdArray
from burn_remote import Remote
from burn_remote.testing import LoopbackServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "guide"))


def _median(samples: list[float]) -> str:
    return f"median {statistics.median(samples):,.0f} (min {min(samples):,.0f}, max {max(samples):,.0f})"


def streaming(url: str, ops: int, repeat: int) -> list[float]:
    """Ops per second of ``ops`` 2x2 adds, results kept, read once at the end."""
    remote = Remote(url)
    device = remote.device(0)
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device)
    rates = []
    for _ in range(repeat):
        kept = []
        start = time.perf_counter()
        for _ in range(ops):
            kept.append(x + x)
        kept[-1].to_data()
        rates.append(ops / (time.perf_counter() - start))
        del kept
    remote.close()
    return rates


def transfer(url: str, megabytes: int, repeat: int) -> tuple[list[float], list[float]]:
    """GB/s up and down of a ``megabytes`` MB f32 tensor."""
    remote = Remote(url)
    device = remote.device(0)
    values = np.random.default_rng(0).standard_normal(megabytes * (1 << 20) // 4).astype(np.float32)
    size = values.nbytes / 1e9
    up, down = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        tensor = Tensor.from_data(values, device)
        remote.sync(device)  # the server holds it
        up.append(size / (time.perf_counter() - start))
        start = time.perf_counter()
        back = tensor.to_data()
        down.append(size / (time.perf_counter() - start))
        assert back.to_numpy()[-1] == values[-1]
        del tensor, back
    remote.close()
    return up, down


def guide_training(backend: Backend, epochs: int) -> tuple[float, float]:
    """Seconds and validation accuracy of the guide training on ``Autodiff(backend)``."""
    from data import load_mnist_5k
    from model import ModelConfig

    from burn_nn import loss
    from burn_nn.optim import AdamConfig, GradientsParams

    train, valid = load_mnist_5k(0)
    device = Autodiff(backend).device(0)
    device.seed(0)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    model = ModelConfig(10, 512).init(device)
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    for _ in range(epochs):
        for images, labels in train.batches(64, rng):
            batch_loss = criterion(model(Tensor.from_data(images, device)), Tensor.from_data(labels, device))
            model = optim.step(1e-3, model, GradientsParams.from_grads(batch_loss.backward(), model))
    valid_model = model.valid()
    inner = valid_model.devices()[0]
    correct = 0
    for images, labels in valid.batches(64, None):
        predicted = valid_model(Tensor.from_data(images, inner)).argmax(1).to_data().to_numpy().reshape(-1)
        correct += int((predicted == labels).sum())
    return time.perf_counter() - start, 100.0 * correct / len(valid)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sessions(server: LoopbackServer, count: int, report: Callable[[int, float], None]) -> None:
    """``count`` sessions that each connect, compute on 1 MB tensors and disconnect; reports the
    server's resident memory every 20."""
    pid = server.process.pid
    report(0, _rss_mb(pid))
    for k in range(1, count + 1):
        remote = Remote(server.url)
        device = remote.device(0)
        x = Tensor.from_data(np.full((512, 512), float(k), np.float32), device)
        y = (x @ x).exp().sum_dim(1)
        y.to_data()
        remote.close()
        if k % 20 == 0:
            time.sleep(0.2)  # the server ends the session once the close reaches it
            report(k, _rss_mb(pid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and one epoch")
    parser.add_argument("--no-training", action="store_true", help="skip the guide training")
    args = parser.parse_args()
    repeat = 3 if args.quick else 5

    server = LoopbackServer("ndarray")
    try:
        rates = streaming(server.url, 20_000, repeat)
        print(f"op streaming (2x2 adds, results kept, one read): {_median(rates)} ops/s (target >= 50,000)")
        up, down = transfer(server.url, 256, repeat)
        for way, rates in (("up:  ", up), ("down:", down)):
            median = statistics.median(rates)
            print(f"256 MB {way} median {median:.2f} GB/s (min {min(rates):.2f}) (target >= 1 GB/s)")

        sessions(server, 100, lambda k, mb: print(f"server RSS after {k:3d} sessions: {mb:7.1f} MB"))

        if not args.no_training:
            epochs = 1 if args.quick else 10
            local_s, local_acc = guide_training(NdArray(), epochs)
            remote_s, remote_acc = guide_training(Remote(server.url), epochs)
            print(
                f"guide training, {epochs} epoch(s): Autodiff(Remote(NdArray server)) {remote_s:.1f} s "
                f"(accuracy {remote_acc:.2f}%), Autodiff(NdArray()) {local_s:.1f} s "
                f"(accuracy {local_acc:.2f}%), "
                f"ratio {remote_s / local_s:.2f} (target <= 1.5x)"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
