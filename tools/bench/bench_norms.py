"""Forward and backward of layer, RMS, group and batch norm and of causal attention on
``Autodiff(NdArray())``: NdArray's kernels (``burn_ndarray._ops._norm`` and ``_attention``) against the
array code NdArray ran before them (``burn_backend.array``), the composed defaults over float ops
(``burn_backend._ops``) and PyTorch CPU, at the shapes of the bench's GPT (layer norm over [2048, 128],
attention [32, 4, 64, 32]) and ResNet (batch norm over [64, 64, 16, 16]), and attention over a longer
sequence ([4, 4, 512, 64]).

One thread each (``NdArray(num_threads=1)``, ``torch.set_num_threads(1)``) and the calling thread's CPU
time (``time.thread_time``: at one thread every variant runs there), the variants interleaved block by
block, medians: the figures hold on a machine that other processes load. PyTorch runs in the same process
(as ``bench_models.py``); its batch and group norm took 3 to 4 times longer here than in a process of its
own (5 to 7 ms for the batch norm step), so read those two ratios as bounds.

    python tools/bench/bench_norms.py [--repeat 7] [--number 5]

``--device cuda`` times Cuda's kernels instead (the ops called directly, forward then backward, f32)
against PyTorch CUDA on 64M elements: layer norm over the last dim of [65536, 1024] and group norm of
[64, 64, 128, 128] in 32 groups. Each time is the median of ``--number`` launches timed with CUDA events;
the bandwidth is the least traffic an op needs (forward: read x, write y; backward: read x and dy, write
dx) over its time, as a fraction of a device-to-device copy of as many bytes.

    python tools/bench/bench_norms.py --device cuda [--number 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from burn_autodiff import Autodiff
from burn_backend import AttentionOptions, Tensor, module
from burn_backend._ops import _attention as composed_attention
from burn_backend._ops import _norm as composed
from burn_ndarray import NdArray
from burn_ndarray._ops import _attention as attention_kernels
from burn_ndarray._ops import _norm as kernels

F = torch.nn.functional


class Composed(NdArray):
    """NdArray with the composed defaults (float ops) for the norms."""

    layer_norm = composed.layer_norm
    layer_norm_backward = composed.layer_norm_backward
    rms_norm = composed.rms_norm
    rms_norm_backward = composed.rms_norm_backward
    group_norm = composed.group_norm
    group_norm_backward = composed.group_norm_backward
    batch_norm_training = composed.batch_norm_training
    batch_norm_backward = composed.batch_norm_backward
    attention = composed_attention.attention
    attention_backward = composed_attention.attention_backward


def ours(name: str, device: Any, arrays: dict[str, np.ndarray]) -> Callable[[], object]:
    def step() -> object:
        x = Tensor.from_data(arrays["x"], device=device).require_grad()
        gamma = Tensor.from_data(arrays["gamma"], device=device).require_grad()
        beta = Tensor.from_data(arrays["beta"], device=device).require_grad()
        if name == "layer_norm":
            y = module.layer_norm(x, gamma, beta, 1e-5)
        elif name == "rms_norm":
            y = module.rms_norm(x, gamma, 1e-5)
        elif name == "group_norm":
            y = module.group_norm(x, 8, gamma, beta, 1e-5)
        elif name.startswith("attention"):
            y = module.attention(x, gamma, beta, options=AttentionOptions(is_causal=True))
        else:
            y = module.batch_norm_training(x, gamma, beta)[0]
        grads = (y * Tensor.from_data(arrays["grad"], device=device)).sum().backward()
        return x.grad(grads)

    return step


def reference(name: str, arrays: dict[str, np.ndarray]) -> Callable[[], object]:
    def step() -> object:
        x, gamma, beta = (torch.from_numpy(arrays[k]).requires_grad_() for k in ("x", "gamma", "beta"))
        if name == "layer_norm":
            y = F.layer_norm(x, x.shape[-1:], gamma, beta, 1e-5)
        elif name == "rms_norm":
            y = F.rms_norm(x, x.shape[-1:], gamma, 1e-5)
        elif name == "group_norm":
            y = F.group_norm(x, 8, gamma, beta, 1e-5)
        elif name.startswith("attention"):
            y = F.scaled_dot_product_attention(x, gamma, beta, is_causal=True)
        else:
            y = F.batch_norm(x, None, None, gamma, beta, True)
        (y * torch.from_numpy(arrays["grad"])).sum().backward()
        return x.grad

    return step


CASES = {
    "layer_norm": (2048, 128),
    "rms_norm": (2048, 128),
    "group_norm": (16, 64, 32, 32),
    "batch_norm_training": (64, 64, 16, 16),
    "attention (GPT)": (32, 4, 64, 32),
    "attention (long)": (4, 4, 512, 64),
}


def cpu_time(function: Callable[[], object], number: int) -> float:
    function()
    samples = []
    for _ in range(number):
        start = time.thread_time()
        function()
        samples.append(time.thread_time() - start)
    return statistics.median(samples)


GPU_CASES = {"layer_norm": (65536, 1024), "group_norm": (64, 64, 128, 128)}


def gpu_time(function: Callable[[], object], number: int) -> float:
    """The median time in seconds of ``function``'s GPU work (CUDA events on the current stream)."""
    import cupy as cp

    function()
    samples = []
    for _ in range(number):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        function()
        end.record()
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return statistics.median(samples)


def gpu_case(backend: Any, name: str, shape: tuple[int, ...], number: int) -> None:
    """Print the forward's and the backward's times and bandwidths of ``name`` on ``shape``, ours and
    PyTorch's, and the copy's."""
    import cupy as cp

    rng = np.random.default_rng(0)
    features = shape[-1] if name == "layer_norm" else shape[1]
    x = cp.asarray(rng.standard_normal(shape, dtype=np.float32))
    dy = cp.asarray(rng.standard_normal(shape, dtype=np.float32))
    gamma, beta = (cp.asarray(rng.standard_normal(features, dtype=np.float32)) for _ in range(2))
    tx, tdy, tg, tb = (torch.as_tensor(a, device="cuda") for a in (x, dy, gamma, beta))
    for tensor in (tx, tg, tb):
        tensor.requires_grad_()

    def forward() -> object:
        if name == "layer_norm":
            return backend.layer_norm(x, gamma, beta, 1e-5)
        return backend.group_norm(x, gamma, beta, 32, 1e-5)

    def backward() -> object:
        if name == "layer_norm":
            return backend.layer_norm_backward(x, gamma, beta, 1e-5, dy)
        return backend.group_norm_backward(x, gamma, beta, 32, 1e-5, dy)

    def torch_forward() -> Any:
        if name == "layer_norm":
            return F.layer_norm(tx, (features,), tg, tb, 1e-5)
        return F.group_norm(tx, 32, tg, tb, 1e-5)

    ty = torch_forward()

    def torch_backward() -> object:
        return torch.autograd.grad(ty, (tx, tg, tb), tdy, retain_graph=True)

    out = cp.empty_like(x)
    copy = gpu_time(lambda: cp.copyto(out, x), number)
    copy_bandwidth = 2 * x.nbytes / copy
    label = "x".join(map(str, shape))
    steps = (("forward", forward, torch_forward, 2), ("backward", backward, torch_backward, 3))
    for step, ours_step, torch_step, traffic in steps:
        t_ours, t_torch = gpu_time(ours_step, number), gpu_time(torch_step, number)
        ours_bw, torch_bw = traffic * x.nbytes / t_ours, traffic * x.nbytes / t_torch
        print(f"{name:<12}{label:<16}{step:<10}{t_ours * 1e3:>8.3f}ms{t_torch * 1e3:>8.3f}ms"
              f"{ours_bw / copy_bandwidth:>10.2f}x{torch_bw / copy_bandwidth:>10.2f}x")  # fmt: skip
    print(f"{'':<12}{label:<16}{'copy':<10}{copy * 1e3:>8.3f}ms  ({copy_bandwidth / 1e12:.2f} TB/s)")


def main_cuda(number: int) -> None:
    from burn_cuda import Cuda

    backend = Cuda()
    print(f"{'op':<12}{'shape':<16}{'pass':<10}{'ours':>10}{'torch':>10}{'ours/copy':>11}{'torch/copy':>11}")
    for name, shape in GPU_CASES.items():
        gpu_case(backend, name, shape, number)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=5)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    options = parser.parse_args()
    if options.device == "cuda":
        main_cuda(max(options.number, 20))
        return
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    devices = {"kernels": Autodiff(NdArray(num_threads=1)).device()}
    composed_device = Autodiff(Composed(num_threads=1)).device()
    fits, attention_fits = kernels._fits, attention_kernels._fits
    print(f"{'op':<22}{'shape':<18}{'kernels':>10}{'array code':>12}{'composed':>10}{'torch':>10}"
          f"{'vs array':>10}{'vs comp.':>10}{'vs torch':>10}")  # fmt: skip
    for name, shape in CASES.items():
        features = shape[-1] if name in ("layer_norm", "rms_norm") else shape[1]
        if name.startswith("attention"):  # query, key and value: x, gamma and beta
            features = shape  # type: ignore[assignment]
        arrays = {
            "x": rng.standard_normal(shape).astype(np.float32),
            "grad": rng.standard_normal(shape).astype(np.float32),
            "gamma": rng.standard_normal(features).astype(np.float32),
            "beta": rng.standard_normal(features).astype(np.float32),
        }
        kernel_step = ours(name, devices["kernels"], arrays)
        array_step = ours(name, devices["kernels"], arrays)
        composed_step = ours(name, composed_device, arrays)
        torch_step = reference(name, arrays)

        def array_code(step: Callable[[], object] = array_step) -> object:
            kernels._fits = lambda x, rank: False  # type: ignore[assignment]
            attention_kernels._fits = lambda *args: False  # type: ignore[assignment]
            try:
                return step()
            finally:
                kernels._fits, attention_kernels._fits = fits, attention_fits

        times: dict[str, list[float]] = {k: [] for k in ("kernels", "array", "composed", "torch")}
        for _ in range(options.repeat):
            times["kernels"].append(cpu_time(kernel_step, options.number))
            times["array"].append(cpu_time(array_code, options.number))
            times["composed"].append(cpu_time(composed_step, options.number))
            times["torch"].append(cpu_time(torch_step, options.number))
        k, a, c, t = (statistics.median(times[key]) * 1e3 for key in times)
        print(f"{name:<22}{'x'.join(map(str, shape)):<18}{k:>8.2f}ms{a:>10.2f}ms{c:>8.2f}ms{t:>8.2f}ms"
              f"{k / a:>9.2f}x{k / c:>9.2f}x{k / t:>9.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
