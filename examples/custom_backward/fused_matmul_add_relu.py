"""The Burn Book's "Backend Extension" example in Python: a fused matmul + add + relu with its own
backward.

The forward is one kernel (here composed from the backend's ops; a backend author would call a fused
kernel of its own). On an autodiff backend the op records a backward written against the inner
backend, the same mechanism the built-in ops use, so gradients flow through the fused op:

    python examples/custom_backward/fused_matmul_add_relu.py
"""

from __future__ import annotations

from typing import Any

from burn_autodiff import Autodiff, OpSpec, custom_op
from burn_backend import Backend, Distribution, Tensor
from burn_backend.activation import relu
from burn_ndarray import NdArray


def fused_forward(backend: Backend, lhs: Any, rhs: Any, bias: Any, args: Any) -> Any:
    """``relu(lhs @ rhs + bias)`` on primitives: the kernel of the op."""
    return backend.relu(backend.float_add(backend.float_matmul(lhs, rhs), bias))


def fused_backward(inner: Backend, grad: Any, inputs: Any, output: Any, args: Any) -> tuple[Any, Any, Any]:
    """The gradients of ``lhs``, ``rhs`` and ``bias``, from the kept inputs and output."""
    lhs, rhs, _ = inputs
    grad = inner.relu_backward(output, grad)  # zero where the relu clipped
    grad_lhs = inner.float_matmul(grad, inner.float_transpose(rhs))
    grad_rhs = inner.float_matmul(inner.float_transpose(lhs), grad)
    grad_bias = inner.float_sum_dim(grad, 0)  # bias is [1, n]: summed over the batch
    return grad_lhs, grad_rhs, grad_bias


fused_matmul_add_relu = custom_op(
    OpSpec("fused_matmul_add_relu", fused_backward, keeps_inputs=(0, 1), keeps_output=True), fused_forward
)


def main() -> None:
    device = Autodiff(NdArray()).device()
    device.seed(0)
    lhs = Tensor.random([4, 8], Distribution.normal(0.0, 1.0), device).require_grad()
    rhs = Tensor.random([8, 3], Distribution.normal(0.0, 1.0), device).require_grad()
    bias = Tensor.random([1, 3], Distribution.normal(0.0, 1.0), device).require_grad()

    fused = fused_matmul_add_relu(lhs, rhs, bias)
    grads = fused.sum().backward()
    reference = relu(lhs.matmul(rhs) + bias)
    reference_grads = reference.sum().backward()

    print("output equal to relu(lhs @ rhs + bias):", fused.all_close(reference))
    for name, tensor in (("lhs", lhs), ("rhs", rhs), ("bias", bias)):
        ours, theirs = tensor.grad(grads), tensor.grad(reference_grads)
        assert ours is not None
        assert theirs is not None
        print(f"gradient of {name} equal to the composed ops':", ours.all_close(theirs))


if __name__ == "__main__":
    main()
