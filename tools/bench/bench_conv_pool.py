"""Module-op benchmarks on NdArray f32 through ``burn_backend.module``, against PyTorch CPU (its default
thread count), measured side by side: conv2d forward, max_pool2d and adaptive_avg_pool2d.

Both sides use worker threads that spin for a while after a call (OpenBLAS under NumPy, OpenMP under
PyTorch); on a small machine the spinning threads of one library starve the other's, so the two are
timed in alternating blocks with a pause before each, never call by call.

Run: ``python tools/bench/bench_conv_pool.py [--quick]``.
"""

from __future__ import annotations

import numpy as np
import torch
from _harness import arguments, compare, print_table

from burn_backend import ConvOptions, Tensor, module
from burn_ndarray import NdArray


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


if __name__ == "__main__":
    main()
