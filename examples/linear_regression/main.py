"""A small end-to-end demo of the tensor API: fit a linear model by gradient descent.

Data comes from a known linear map plus noise; the gradients of the mean squared error are written out
by hand (the autodiff package will compute them for us). Runs on any backend: ``--device`` or
``BURN_DEVICE`` picks it (default: the first installed CPU backend).

Run: ``python examples/linear_regression/main.py [--device ndarray] [--steps 300]``.
"""

from __future__ import annotations

import argparse
import time

from burn_backend import Distribution, Tensor, default_device, parse_device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", help="device spec, e.g. ndarray (default: BURN_DEVICE or the CPU)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    device = parse_device(args.device) if args.device else default_device()
    device.seed(args.seed)
    features, samples = 8, 4096
    true_weight = Tensor.random([features, 1], Distribution.normal(0.0, 1.0), device)
    true_bias = 0.5
    x = Tensor.random([samples, features], Distribution.uniform(-1.0, 1.0), device)
    noise = Tensor.random([samples, 1], Distribution.normal(0.0, 0.05), device)
    y = x.matmul(true_weight) + true_bias + noise

    weight = Tensor.zeros([features, 1], device)
    bias = Tensor.zeros([1, 1], device)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        error = x.matmul(weight) + bias - y
        loss = error.square().mean().into_scalar()
        grad_weight = x.transpose().matmul(error) * (2.0 / samples)
        grad_bias = error.sum() * (2.0 / samples)
        weight = weight - grad_weight * args.lr
        bias = bias - grad_bias.reshape([1, 1]) * args.lr
        if step == 1 or step % 50 == 0:
            print(f"step {step:4d}  loss {loss:.6f}")
    elapsed = time.perf_counter() - start

    weight_error = (weight - true_weight).abs().max().into_scalar()
    bias_error = abs(bias.into_scalar() - true_bias)
    print(f"device {device}: {args.steps} steps in {elapsed:.2f} s")
    print(f"largest weight error {weight_error:.4f}, bias error {bias_error:.4f}")
    if weight_error > 0.05 or bias_error > 0.05:
        raise SystemExit("the fit did not recover the true parameters")


if __name__ == "__main__":
    main()
