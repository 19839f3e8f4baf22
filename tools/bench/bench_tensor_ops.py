"""Tensor-op benchmarks on NdArray: the cost of dispatching a tiny op (against PyTorch CPU eager) and
matmul throughput (against NumPy's own ``@`` on the same arrays).

Run: ``python tools/bench/bench_tensor_ops.py [--quick]``.
"""

from __future__ import annotations

import numpy as np
import torch
from _harness import arguments, compare, print_table

from burn_backend import Tensor
from burn_ndarray import NdArray


def main() -> None:
    args = arguments(__doc__ or "")
    repeat = 5 if args.quick else 15
    device = NdArray().device()
    torch.set_grad_enabled(False)

    a = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device=device)
    b = Tensor.from_data([[5.0, 6.0], [7.0, 8.0]], device=device)
    ta, tb = torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[5.0, 6.0], [7.0, 8.0]])
    tiny = compare("add 2x2 f32", lambda: a + b, lambda: ta + tb, "torch", "<= 1.5x", repeat, 2000)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    y = rng.standard_normal((1024, 1024)).astype(np.float32)
    tx, ty = Tensor.from_numpy(x, device), Tensor.from_numpy(y, device)
    matmul = compare(
        "matmul 1024x1024 f32", lambda: tx.matmul(ty), lambda: x @ y, "numpy @", "<= 1.11x", repeat, 5
    )

    print_table("Tensor ops on NdArray (ratio = our time / reference time)", [tiny, matmul])
    print(f"matmul throughput: {1 / matmul.ratio:.2f}x NumPy's (target >= 0.9x)")


if __name__ == "__main__":
    main()
