"""The guide's training step without replay, split: the host time of the layers above the backend (the
Tensor API, Autodiff, Fusion's recording, nn, the optimizer's walk of the module) against PyTorch's
whole eager step, side by side in one run.

Timers wrap every interface method of the inner backend's class and Fusion's stream execution (the
outermost call only, so an op a flush runs counts once); a step's time outside them is the layers'
above the backend. Each round times blocks of steps: ours as it is, PyTorch's, then ours with the
timers (they add well under a microsecond a call). The table gives the medians over the rounds; the
outside time is split by phase below it.

Run: ``python tools/bench/bench_step_host.py [--quick] [--device cuda|ndarray]`` (``cuda`` by default:
``Autodiff(Fusion(Cuda()))`` against PyTorch CUDA eager, TF32 off on both sides; ``ndarray``:
``Autodiff(Fusion(NdArray()))`` against PyTorch CPU eager).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _harness import PAUSE_S, Row, print_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "guide"))

from bench_guide import BATCH, LR, TorchModel
from model import ModelConfig

from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_backend._backend import interface_methods
from burn_fusion import Fusion
from burn_fusion._stream import Stream
from burn_nn import loss
from burn_nn.optim import AdamConfig, GradientsParams

STEPS = 60  # per block
_NOT_OPS = frozenset({"device_count", "supports_dtype", "dtype_usage", "ad_enabled"})


class InsideTimer:
    """Perf-counter timers around every interface method of ``backend_class`` and around
    ``Stream.execute``, counting the outermost call only; ``inside`` accumulates their seconds."""

    def __init__(self, backend_class: type) -> None:
        self.inside = 0.0
        self._depth = 0
        self._class = backend_class
        self._methods = {
            name: getattr(backend_class, name)
            for name in interface_methods()
            if name not in _NOT_OPS and hasattr(backend_class, name)
        }
        self._execute = Stream.execute

    def _timed(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return function(*args, **kwargs)
            self._depth += 1
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.inside += time.perf_counter() - start
                self._depth -= 1

        return timed

    def install(self, on: bool) -> None:
        """Put the timers in place (``on``) or the original methods back."""
        for name, method in self._methods.items():
            setattr(self._class, name, self._timed(method) if on else method)
        Stream.execute = self._timed(self._execute) if on else self._execute  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--device", choices=("cuda", "ndarray"), default="cuda")
    args = parser.parse_args()
    if args.device == "cuda":
        from _harness import gpu_unavailable

        reason = gpu_unavailable()
        if reason is not None:
            print(f"bench_step_host: skipped: {reason} (--device ndarray runs on the CPU)")
            return
        from burn_cuda import Cuda

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        inner_class: type = Cuda
        torch_device = "cuda"
    else:
        from burn_ndarray import NdArray

        inner_class = NdArray
        torch_device = "cpu"
    rounds = 3 if args.quick else 5
    timer = InsideTimer(inner_class)

    rng = np.random.default_rng(0)
    images = rng.random((BATCH, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, BATCH)
    device = Autodiff(Fusion(inner_class())).device(0)
    device.seed(0)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    x, y = Tensor.from_data(images, device), Tensor.from_data(labels, device)
    outside_by_phase: dict[str, list[float]] = defaultdict(list)

    def phase(name: str, function: Callable[[], Any]) -> Any:
        start, inside = time.perf_counter(), timer.inside
        result = function()
        outside_by_phase[name].append(time.perf_counter() - start - (timer.inside - inside))
        return result

    def ours() -> None:
        model = state["model"]
        output = phase("forward", lambda: model(x))
        value = phase("loss", lambda: criterion(output, y))
        grads = phase("backward", lambda: value.backward())
        by_param = phase("gradients by parameter", lambda: GradientsParams.from_grads(grads, model))
        state["model"] = phase("optimizer", lambda: optim.step(LR, model, by_param))
        phase("sync", lambda: device.sync())

    torch.manual_seed(0)
    torch_model = TorchModel().to(torch_device)
    torch_optim = torch.optim.Adam(torch_model.parameters(), lr=LR)
    tx, ty = torch.from_numpy(images).to(torch_device), torch.from_numpy(labels).to(torch_device)

    def theirs() -> None:
        torch_optim.zero_grad()
        torch.nn.functional.cross_entropy(torch_model(tx), ty).backward()
        torch_optim.step()
        if torch_device == "cuda":
            torch.cuda.synchronize()

    def block(function: Callable[[], None]) -> list[float]:
        time.sleep(PAUSE_S)
        samples = []
        for _ in range(STEPS):
            start = time.perf_counter()
            function()
            samples.append(time.perf_counter() - start)
        return samples

    for _ in range(20):  # warm-up: kernels compiled, plans cached
        ours()
        theirs()
    step, reference, outside = [], [], []
    phases: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        step.append(statistics.median(block(ours)))
        reference.append(statistics.median(block(theirs)))
        timer.install(True)
        outside_by_phase.clear()
        time.sleep(PAUSE_S)
        outside_per_step = []
        for _ in range(STEPS):
            start, inside = time.perf_counter(), timer.inside
            ours()
            outside_per_step.append(time.perf_counter() - start - (timer.inside - inside))
        timer.install(False)
        outside.append(statistics.median(outside_per_step))
        for name, values in outside_by_phase.items():
            phases[name].append(statistics.median(values))
    stack = device.backend.stack_name
    rows = [
        Row(f"guide step without replay, {stack}", statistics.median(step), statistics.median(reference),
            "torch", "<= 1x (issue 17)" if args.device == "cuda" else "-"),
        Row("its host time above the backend", statistics.median(outside), statistics.median(reference),
            "torch's whole step", "-"),
    ]  # fmt: skip
    print_table(f"The guide step's host time above the backend ({rounds} rounds of {STEPS} steps)", rows)
    split = ", ".join(f"{name} {statistics.median(v) * 1e6:.0f} us" for name, v in phases.items())
    print(f"above the backend, by phase (medians): {split}")


if __name__ == "__main__":
    main()
