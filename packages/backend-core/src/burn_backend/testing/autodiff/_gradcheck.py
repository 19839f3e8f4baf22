"""Gradient checks: analytic gradients against central finite differences in float64 and, where
PyTorch is installed, against ``torch.autograd`` on the same inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor

Array = np.ndarray[Any, Any]


def _inner_device(device: Device) -> Device:
    backend: Any = device.backend
    return backend.inner.device(device.index)  # type: ignore[no-any-return]


def gradcheck(
    device: Device,
    function: Callable[..., Tensor],
    inputs: Sequence[Array],
    rng: np.random.Generator,
    torch_function: Callable[..., Any] | None = None,
    constants: Sequence[Any] = (),
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-7,
    wrt: Sequence[int] | None = None,
) -> list[Array]:
    """Check the gradients of ``sum(function(*inputs) * w)`` for a random weight ``w``.

    Args:
        device: an autodiff device; values are computed in float64.
        function: Tensor inputs (then ``constants``) to a Float Tensor.
        inputs: float64 arrays, the differentiated inputs.
        rng: for the weights.
        torch_function: the same computation on ``torch`` tensors, for a second opinion.
        constants: further arguments passed as they are (ints, Int/Bool tensors built by the caller).
        wrt: which inputs require a gradient (default: all); the others must get none.

    Returns:
        The analytic gradients (float64 arrays), one per input in ``wrt``.
    """
    wrt = list(range(len(inputs))) if wrt is None else list(wrt)
    arrays = [np.asarray(x, dtype=np.float64) for x in inputs]
    tensors = [Tensor.from_data(a, device, DType.F64) for a in arrays]
    tensors = [t.require_grad() if i in wrt else t for i, t in enumerate(tensors)]
    output = function(*tensors, *constants)
    weights = rng.uniform(0.5, 1.5, output.dims())
    loss = (output * Tensor.from_data(weights, device, DType.F64)).sum()
    grads = loss.backward()
    analytic = []
    for i, tensor in enumerate(tensors):
        grad = tensor.grad(grads)
        if i not in wrt:
            assert grad is None, f"input {i} does not require a gradient but got one"
            continue
        assert grad is not None, f"input {i} got no gradient"
        assert grad.dims() == list(arrays[i].shape), (
            f"gradient of input {i}: shape {grad.dims()}, expected {list(arrays[i].shape)}"
        )
        analytic.append(np.asarray(grad.to_numpy(), dtype=np.float64))

    inner = _inner_device(device)

    def value(values: Sequence[Array]) -> float:
        out = function(*[Tensor.from_data(v, inner, DType.F64) for v in values], *constants)
        return float(np.sum(np.asarray(out.to_numpy(), dtype=np.float64) * weights))

    for position, i in enumerate(wrt):
        numeric = np.zeros_like(arrays[i])
        flat = numeric.reshape(-1)
        for k in range(arrays[i].size):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i].reshape(-1)[k] += eps
            minus[i].reshape(-1)[k] -= eps
            flat[k] = (value(plus) - value(minus)) / (2 * eps)
        np.testing.assert_allclose(
            analytic[position],
            numeric,
            rtol=rtol,
            atol=atol,
            err_msg=f"input {i}: analytic vs finite differences",
        )

    if torch_function is not None:
        torch = pytest.importorskip("torch")
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=i in wrt) for i, a in enumerate(arrays)]
        torch_out = torch_function(*leaves, *constants)
        (torch_out * torch.tensor(weights, dtype=torch.float64)).sum().backward()
        for position, i in enumerate(wrt):
            expected = leaves[i].grad
            assert expected is not None
            np.testing.assert_allclose(
                analytic[position],
                expected.numpy(),
                rtol=1e-9,
                atol=1e-12,
                err_msg=f"input {i}: analytic vs torch",
            )
    return analytic
