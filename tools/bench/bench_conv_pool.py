"""Module-op benchmarks on NdArray f32 through ``burn_backend.module``, against PyTorch CPU (its default
thread count), measured side by side: conv2d forward, max_pool2d and adaptive_avg_pool2d.

Both sides use worker threads that spin for a while after a call (OpenBLAS under NumPy, OpenMP under
PyTorch); on a small machine the spinning threads of one library starve the other's, so the two are
timed in alternating blocks with a pause before each, never call by call.

The GEMM table measures convolution forward and both gradients at realistic shapes (ResNet layers at
batch 64 on 32x32 inputs, depthwise 3x3s at strides 1 and 2, a 1x1) against ``np.matmul`` of a GEMM
with the same FLOPs through the same BLAS (``[out channels, in channels / groups * taps] @ [.., batch *
positions]``, all of the thread policy's threads) and against PyTorch CPU: issue 40 asks for 1.5x the
GEMM's time. The GEMM, PyTorch and ours are timed in interleaved blocks, medians.

Run: ``python tools/bench/bench_conv_pool.py [--quick]``; ``BENCH_CPU_TIME=1`` runs the GEMM table on one
thread in process CPU time (on a machine other processes load, wall times of a few ms are multiples
of the scheduler's slice).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import numpy as np
import torch
from _harness import arguments, block_time, compare, print_table

from burn_backend import ConvOptions, Tensor, module
from burn_ndarray import NdArray, _threads


def main() -> None:
    args = arguments(__doc__ or "")
    repeat = 3 if args.quick else 9
    device = NdArray().device()
    torch.set_grad_enabled(False)
    functional = torch.nn.functional
    rng = np.random.default_rng(0)

    x = rng.standard_normal((64, 8, 26, 26)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    tx, tw = Tensor.from_numpy(x, device), Tensor.from_numpy(w, device)
    rx, rw = torch.from_numpy(x), torch.from_numpy(w)
    options = ConvOptions((1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(
        module.conv2d(tx, tw, options=options).to_numpy(), functional.conv2d(rx, rw).numpy(), atol=1e-4
    )
    conv = compare(
        "conv2d 64x8x26x26, 16x8x3x3",
        lambda: module.conv2d(tx, tw, options=options),
        lambda: functional.conv2d(rx, rw),
        "torch",
        "<= 2x",
        repeat,
        30,
    )

    p = rng.standard_normal((64, 16, 24, 24)).astype(np.float32)
    tp, rp = Tensor.from_numpy(p, device), torch.from_numpy(p)
    np.testing.assert_array_equal(module.max_pool2d(tp, 2).to_numpy(), functional.max_pool2d(rp, 2).numpy())
    np.testing.assert_allclose(
        module.adaptive_avg_pool2d(tp, 8).to_numpy(), functional.adaptive_avg_pool2d(rp, 8).numpy(), atol=1e-6
    )
    max_pool = compare(
        "max_pool2d 2x2 on 64x16x24x24",
        lambda: module.max_pool2d(tp, 2),
        lambda: functional.max_pool2d(rp, 2),
        "torch",
        "<= 2x",
        repeat,
        30,
    )
    adaptive = compare(
        "adaptive_avg_pool2d 8x8 on 64x16x24x24",
        lambda: module.adaptive_avg_pool2d(tp, 8),
        lambda: functional.adaptive_avg_pool2d(rp, 8),
        "torch",
        "<= 2x",
        repeat,
        30,
    )
    print_table("Module ops on NdArray f32 (ratio = our time / PyTorch CPU time)", [conv, max_pool, adaptive])
    gemm_rows(device, repeat)


SHAPES = [
    # name, batch, channels in, out, size, kernel, stride, groups
    ("resnet 64->64 32x32 3x3", 64, 64, 64, 32, 3, 1, 1),
    ("resnet 128->128 16x16 3x3", 64, 128, 128, 16, 3, 1, 1),
    ("resnet 64->128 32x32 3x3 /2", 64, 64, 128, 32, 3, 2, 1),
    ("depthwise 128 16x16 3x3", 64, 128, 128, 16, 3, 1, 128),
    ("depthwise 128 32x32 3x3 /2", 64, 128, 128, 32, 3, 2, 128),
    ("1x1 128->256 16x16", 64, 128, 256, 16, 1, 1, 1),
]


def _passes(
    backend: Any, case: tuple[Any, ...], rng: np.random.Generator
) -> tuple[Any, list[tuple[str, Any, Any]]]:
    """The same-FLOP GEMM and the three passes (ours, PyTorch's) of one shape."""
    _, batch, cin, cout, size, k, stride, groups = case
    pad = k // 2
    x = rng.standard_normal((batch, cin, size, size)).astype(np.float32)
    w = rng.standard_normal((cout, cin // groups, k, k)).astype(np.float32)
    options = ConvOptions((stride, stride), (pad, pad), (1, 1), groups)
    y = backend.conv2d(x, w, None, options)
    g = rng.standard_normal(y.shape).astype(np.float32)
    rx, rw, rg = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(g)
    a = rng.standard_normal((cout, cin // groups * k * k)).astype(np.float32)
    b = rng.standard_normal((cin // groups * k * k, batch * y.shape[2] * y.shape[3])).astype(np.float32)
    geometry = ([stride] * 2, [pad] * 2, [1, 1], False, [0, 0], groups)

    def torch_backward(which: list[bool]) -> Any:
        return lambda: torch.ops.aten.convolution_backward(rg, rx, rw, None, *geometry, which)

    return lambda: np.matmul(a, b), [
        ("forward", lambda: backend.conv2d(x, w, None, options),
         lambda: torch.nn.functional.conv2d(rx, rw, None, stride, pad, 1, groups)),
        ("x grad", lambda: backend.conv2d_x_backward(x, w, g, options), torch_backward([True, False, False])),
        ("w grad", lambda: backend.conv2d_weight_backward(x, w, g, options),
         torch_backward([False, True, False])),
    ]  # fmt: skip


def _cpu_block(function: Any, number: int) -> float:
    """The median CPU time of ``number`` calls after a warm-up (one thread: it is the wall time a quiet
    core would take, where a loaded machine's scheduler slices the wall clock into 4 ms steps)."""
    function()
    samples = []
    for _ in range(number):
        start = time.process_time()
        function()
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def gemm_rows(device: Any, repeat: int) -> None:
    """Forward, input gradient and weight gradient per shape: our time over the same-FLOP GEMM's and over
    PyTorch's. With ``BENCH_CPU_TIME=1``, all three on one thread, timed in process CPU time."""
    rng = np.random.default_rng(1)
    timer = block_time
    if os.environ.get("BENCH_CPU_TIME") == "1":
        _threads.set_num_threads(1)
        torch.set_num_threads(1)
        timer = _cpu_block
    clock = "CPU time" if timer is _cpu_block else "wall time"
    print(f"\nConvolutions against the GEMM of their FLOPs ({_threads.num_threads()} threads, {clock})")
    print(f"{'shape':<30} {'pass':<8} {'ours':>10} {'GEMM':>10} {'torch':>10} {'/GEMM':>6} {'/torch':>6}")
    for case in SHAPES:
        gemm_call, passes = _passes(device.backend, case, rng)
        for label, ours, theirs in passes:
            # the three interleaved, medians: on a loaded machine the load drifts between blocks
            times = [(timer(gemm_call, 3), timer(theirs, 3), timer(ours, 3)) for _ in range(repeat)]
            gemm = statistics.median(t[0] for t in times)
            reference = statistics.median(t[1] for t in times)
            mine = statistics.median(t[2] for t in times)
            print(
                f"{case[0]:<30} {label:<8} {mine * 1e3:8.2f}ms {gemm * 1e3:8.2f}ms {reference * 1e3:8.2f}ms "
                f"{mine / gemm:6.2f} {mine / reference:6.2f}"
            )


if __name__ == "__main__":
    main()
