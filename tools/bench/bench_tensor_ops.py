"""Tensor-op benchmarks on NdArray: the per-op cost of tiny ops through the Tensor API (against PyTorch CPU
eager on the same values), and matmul throughput (against NumPy's own ``@`` on the same arrays).

The tiny ops measure what the API adds per call: a slip on the hot path (an extra call, a custom attribute
lookup) shows in their microseconds. Each is timed as loops of calls (no timer call between two ops),
alternating with PyTorch's, the median of the blocks kept.

Run: ``python tools/bench/bench_tensor_ops.py [--quick]``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from _harness import PAUSE_S, Row, arguments, compare, print_table

from burn_backend import Tensor
from burn_ndarray import NdArray


def loop_time(function: Callable[[], object], number: int) -> float:
    """After a pause and a warm-up call, the time per call of a loop of ``number`` calls, in seconds."""
    time.sleep(PAUSE_S)
    function()
    start = time.perf_counter()
    for _ in range(number):
        function()
    return (time.perf_counter() - start) / number


def per_op(
    name: str,
    ours: Callable[[], object],
    torch_op: Callable[[], object],
    repeat: int,
    number: int,
    target: str = "<= 1.5x",
) -> Row:
    """Medians over ``repeat`` alternating loops of each side (``target``: "tracked" where none is set)."""
    ours_blocks, torch_blocks = [], []
    for _ in range(repeat):
        torch_blocks.append(loop_time(torch_op, number))
        ours_blocks.append(loop_time(ours, number))
    return Row(name, statistics.median(ours_blocks), statistics.median(torch_blocks), "torch", target)


def main() -> None:
    args = arguments(__doc__ or "")
    repeat = 5 if args.quick else 15
    device = NdArray().device()
    torch.set_grad_enabled(False)

    values, others = [[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]
    a, b = Tensor.from_data(values, device=device), Tensor.from_data(others, device=device)
    ta, tb = torch.tensor(values), torch.tensor(others)
    tiny = [
        per_op("add 2x2 f32", lambda: a + b, lambda: ta + tb, repeat, 20_000),
        per_op("mul 2x2 f32", lambda: a * b, lambda: ta * tb, repeat, 20_000),
        per_op("mul 2x2 f32 by a float", lambda: a * 2.0, lambda: ta * 2.0, repeat, 20_000),
        per_op("exp 2x2 f32", lambda: a.exp(), lambda: ta.exp(), repeat, 20_000, "tracked"),
        per_op("sum 2x2 f32", lambda: a.sum(), lambda: ta.sum(), repeat, 20_000, "tracked"),
        per_op("matmul 2x2 f32", lambda: a.matmul(b), lambda: ta.matmul(tb), repeat, 20_000, "tracked"),
        per_op(
            "reshape 2x2 f32 to [4]", lambda: a.reshape([4]), lambda: ta.reshape(4), repeat, 20_000, "tracked"
        ),
    ]
    print_table("Tiny ops on NdArray, per op (ratio = our time / PyTorch's)", tiny)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    y = rng.standard_normal((1024, 1024)).astype(np.float32)
    tx, ty = Tensor.from_numpy(x, device), Tensor.from_numpy(y, device)
    matmul = compare(
        "matmul 1024x1024 f32", lambda: tx.matmul(ty), lambda: x @ y, "numpy @", "<= 1.11x", repeat, 5
    )

    print_table("Matmul on NdArray (ratio = our time / NumPy's)", [matmul])
    print(f"matmul throughput: {1 / matmul.ratio:.2f}x NumPy's (target >= 0.9x)")


if __name__ == "__main__":
    main()
