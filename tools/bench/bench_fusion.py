"""Fusion benchmarks against PyTorch CPU eager, side by side in one run: the Burn Book's custom GELU
(``x * 0.5 * (1 + erf(x / sqrt(2)))``, 4M f32) on ``Fusion(NdArray())`` against ``torch``'s built-in
``gelu`` and against the same composition in PyTorch eager; ``NdArray().float_erf`` against
``torch.erf``; the guide model's training step (batch 64, Adam) and a 10-layer MLP forward + backward on
``Autodiff(Fusion(NdArray()))`` against PyTorch (and on ``Autodiff(NdArray())`` for context); and the
compile time of the first guide steps in a fresh process, with an empty kernel cache and a warm one.

Run: ``python tools/bench/bench_fusion.py [--quick]``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from _harness import Row, arguments, compare, print_table
from _mlp import mlp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "guide"))

from burn_autodiff import Autodiff
from burn_backend import Backend, Tensor
from burn_fusion import Fusion
from burn_ndarray import NdArray

SIZE = 4_000_000


BATCH = 64  # the guide's batch


def custom_gelu(x: Tensor) -> Tensor:
    return x * 0.5 * ((x / math.sqrt(2.0)).erf() + 1)


def gelu_rows(repeat: int) -> list[Row]:
    data = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    device = Fusion(NdArray()).device()
    x = Tensor.from_data(data, device)
    tx = torch.from_numpy(data)

    def ours() -> None:
        custom_gelu(x).to_data()  # the read runs the fused kernel

    def composed() -> None:
        tx * 0.5 * (1 + torch.erf(tx / math.sqrt(2.0)))

    gelu = compare("custom GELU 4M f32, Fusion(NdArray())", ours, lambda: torch.nn.functional.gelu(tx),
                   "torch gelu", "<= 2x", repeat, 10)  # fmt: skip
    eager = compare(
        "custom GELU 4M f32, Fusion(NdArray())", ours, composed, "torch composed", "<= 0.1x", repeat, 10
    )
    inner = NdArray()
    erf = compare("erf 4M f32, NdArray()", lambda: inner.float_erf(data), lambda: torch.erf(tx), "torch.erf",
                  "<= 1.5x", repeat, 10)  # fmt: skip
    return [gelu, eager, erf]


def mlp_row(backend: Backend, label: str, repeat: int) -> Row:
    problem = mlp(backend.device(), read_all=True)
    return compare(
        f"MLP 10x256 fwd + bwd, {label}", problem.ours, problem.theirs, "torch", "<= 1.0x", repeat, 10
    )


def guide_row(backend: Backend, label: str, repeat: int) -> Row:
    from model import ModelConfig

    from burn_nn import loss
    from burn_nn.optim import AdamConfig, GradientsParams

    rng = np.random.default_rng(0)
    images = rng.random((BATCH, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, BATCH)
    device = backend.device()
    device.seed(0)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    x, y = Tensor.from_data(images, device), Tensor.from_data(labels, device)

    def ours() -> None:
        model = state["model"]
        grads = GradientsParams.from_grads(criterion(model(x), y).backward(), model)
        state["model"] = optim.step(1e-3, model, grads)
        device.sync()

    from bench_guide import TorchModel

    torch.manual_seed(0)
    torch_model = TorchModel()
    torch_optim = torch.optim.Adam(torch_model.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(images), torch.from_numpy(labels)

    def theirs() -> None:
        torch_optim.zero_grad()
        torch.nn.functional.cross_entropy(torch_model(tx), ty).backward()
        torch_optim.step()

    return compare(f"guide step, batch 64 (Adam), {label}", ours, theirs, "torch", "<= 0.85x", repeat, 5)


_FIRST_STEPS = """
import sys, time
start = time.perf_counter()
sys.path.insert(0, {bench!r}); sys.path.insert(0, {guide!r})
from bench_fusion import guide_first_steps
guide_first_steps({fused!r}, start)
"""


def guide_first_steps(fused: bool, start: float) -> None:
    """In a fresh process: the time to import and run the first 4 guide steps, less 4 steady steps."""
    from model import ModelConfig

    from burn_nn import loss
    from burn_nn.optim import AdamConfig, GradientsParams

    backend: Backend = Autodiff(Fusion(NdArray())) if fused else Autodiff(NdArray())
    device = backend.device()
    rng = np.random.default_rng(0)
    x = Tensor.from_data(rng.random((BATCH, 28, 28), dtype=np.float32), device)
    y = Tensor.from_data(rng.integers(0, 10, BATCH), device)
    model = ModelConfig(10, 512).init(device)
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)

    def steps(count: int) -> None:
        nonlocal model
        for _ in range(count):
            grads = GradientsParams.from_grads(criterion(model(x), y).backward(), model)
            model = optim.step(1e-3, model, grads)
        device.sync()

    steps(4)
    first = time.perf_counter() - start
    again = time.perf_counter()
    steps(4)
    print(first - (time.perf_counter() - again))


def startup_seconds(fused: bool, cache: str) -> float:
    here = Path(__file__).resolve().parent
    code = _FIRST_STEPS.format(
        bench=str(here), guide=str(here.parents[1] / "examples" / "guide"), fused=fused
    )
    env = {**os.environ, "BURN_NDARRAY_CACHE_DIR": cache, "NUMBA_CACHE_DIR": cache}
    # Python's own bytecode cache on, as on a user's machine (pip writes .pyc files at install): where
    # PYTHONDONTWRITEBYTECODE is set, every process compiles numba's ~500 modules from source (~1.5 s),
    # a cost of that setting, not of fusion. The cold run writes the .pyc files the later runs read.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    output = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return float(output.stdout.strip().splitlines()[-1])


def main() -> None:
    args = arguments(__doc__ or "")
    repeat = 3 if args.quick else 7
    rows = gelu_rows(repeat)
    print_table("Element-wise (ratio = our time / PyTorch CPU time)", rows)
    models = [
        mlp_row(Autodiff(Fusion(NdArray())), "Autodiff(Fusion(NdArray()))", repeat),
        mlp_row(Autodiff(NdArray()), "Autodiff(NdArray())", repeat),
        guide_row(Autodiff(Fusion(NdArray())), "Autodiff(Fusion(NdArray()))", repeat),
        guide_row(Autodiff(NdArray()), "Autodiff(NdArray())", repeat),
    ]
    print_table("Training steps (ratio = our time / PyTorch CPU time)", models)

    print("\nFirst 4 guide steps in a fresh process, import and compilation included, less 4 steady steps:")
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        cold = startup_seconds(True, cache)
        warm = startup_seconds(True, cache)
        plain = startup_seconds(False, cache)
        print(f"  Autodiff(Fusion(NdArray())), empty kernel cache: {cold:7.2f} s")
        print(f"  Autodiff(Fusion(NdArray())), warm kernel cache:  {warm:7.2f} s")
        print(f"  Autodiff(NdArray()) (no fusion):                 {plain:7.2f} s")
        print(f"  warm start adds {warm - plain:.2f} s over no fusion (target <= 1 s)"
              f"  [{time.perf_counter() - started:.0f} s measuring]")  # fmt: skip


if __name__ == "__main__":
    main()
