"""Autodiff benchmarks on ``Autodiff(NdArray())`` against PyTorch CPU eager, side by side in one run:
a tiny op on tensors that require grad, and forward + backward of a 10-layer MLP (width 256, batch 64),
written both ways a user writes it: with the ``linear`` layer function (``burn_backend.module.linear``
against ``torch.nn.functional.linear``, what ``Linear`` layers call) and spelled out as matmul + add.

Run: ``python tools/bench/bench_autodiff.py [--quick]``.
"""

from __future__ import annotations

import torch
from _harness import arguments, compare, print_table
from _mlp import mlp

from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_backend.activation import relu
from burn_backend.module import linear
from burn_ndarray import NdArray


def main() -> None:
    args = arguments(__doc__ or "")
    repeat = 5 if args.quick else 15
    device = Autodiff(NdArray()).device()

    a = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device).require_grad()
    b = Tensor.from_data([[5.0, 6.0], [7.0, 8.0]], device).require_grad()
    ta = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    tb = torch.tensor([[5.0, 6.0], [7.0, 8.0]], requires_grad=True)
    tiny = compare(
        "add 2x2 f32, require_grad", lambda: a + b, lambda: ta + tb, "torch", "<= 2x", repeat, 10_000
    )

    problem = mlp(device, read_all=False)
    weights, biases = problem.weights, problem.biases
    x, tx = Tensor.from_numpy(problem.x, device), torch.tensor(problem.x)
    matmul_add = compare(
        "MLP 10x256 (matmul + add), fwd + bwd", problem.ours, problem.theirs, "torch", "<= 1.2x", repeat, 10
    )

    # Burn's Linear layout: weight [d_in, d_out], bias [d_out]; torch's linear takes the transpose
    layer_params = [
        (Tensor.from_numpy(w, device).require_grad(), Tensor.from_numpy(c[0], device).require_grad())
        for w, c in zip(weights, biases)
    ]
    torch_layers = [(torch.tensor(w.T.copy(), requires_grad=True), torch.tensor(c[0], requires_grad=True))
                    for w, c in zip(weights, biases)]  # fmt: skip

    def ours_linear() -> None:
        h = x
        for w, c in layer_params:
            h = relu(linear(h, w, c))
        grads = h.sum().backward()
        layer_params[0][0].grad(grads)

    def theirs_linear() -> None:
        h = tx
        for w, c in torch_layers:
            h = torch.relu(torch.nn.functional.linear(h, w, c))
            w.grad = None
            c.grad = None
        h.sum().backward()

    mlp_linear = compare(
        "MLP 10x256 (linear layers), fwd + bwd", ours_linear, theirs_linear, "torch", "<= 1.5x", repeat, 10
    )
    print_table("Autodiff(NdArray()) (ratio = our time / PyTorch CPU time)", [tiny, mlp_linear, matmul_add])


if __name__ == "__main__":
    main()
