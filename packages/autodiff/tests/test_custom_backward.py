"""Custom backward: the Burn Book's fused matmul + add + relu, through the public mechanism."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from burn_autodiff import Autodiff, OpSpec, custom_op
from burn_backend import DType, Tensor
from burn_ndarray import NdArray

EXAMPLE = Path(__file__).parents[3] / "examples" / "custom_backward" / "fused_matmul_add_relu.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fused_matmul_add_relu", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), rng.standard_normal((1, 3))


def test_fused_op_gradients_match_torch(example: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    lhs, rhs, bias = inputs(rng)
    device = Autodiff(NdArray()).device()
    tensors = [Tensor.from_data(a, device, DType.F64).require_grad() for a in (lhs, rhs, bias)]
    out = example.fused_matmul_add_relu(*tensors)
    weights = rng.standard_normal(out.dims())
    grads = (out * Tensor.from_data(weights, device, DType.F64)).sum().backward()

    leaves = [torch.tensor(a, requires_grad=True) for a in (lhs, rhs, bias)]
    expected = torch.relu(leaves[0] @ leaves[1] + leaves[2])
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(out.to_numpy(), expected.detach().numpy(), rtol=1e-12)
    for tensor, leaf in zip(tensors, leaves):
        np.testing.assert_allclose(tensor.grad(grads).to_numpy(), leaf.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_fused_op_runs_on_a_plain_backend(example: ModuleType) -> None:
    rng = np.random.default_rng(1)
    lhs, rhs, bias = inputs(rng)
    device = NdArray().device()
    out = example.fused_matmul_add_relu(*[Tensor.from_data(a, device, DType.F64) for a in (lhs, rhs, bias)])
    np.testing.assert_allclose(out.to_numpy(), np.maximum(lhs @ rhs + bias, 0.0), rtol=1e-12)


def test_the_example_runs(example: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    example.main()
    printed = capsys.readouterr().out
    assert printed.count("True") == 4
    assert "False" not in printed


def test_custom_op_with_args_and_untracked_inputs() -> None:
    def backward(inner, grad, kept, output, factor):  # type: ignore[no-untyped-def]
        return (inner.float_mul_scalar(grad, factor), None)

    scale = custom_op(
        OpSpec("scale", backward),
        lambda backend, x, y, factor: backend.float_add(backend.float_mul_scalar(x, factor), y),
    )
    device = Autodiff(NdArray()).device()
    x = Tensor.from_data([1.0, 2.0], device).require_grad()
    y = Tensor.from_data([10.0, 10.0], device)
    out = scale(x, y, args=3.0)
    assert out.tolist() == [13.0, 16.0]
    grads = out.sum().backward()
    assert x.grad(grads).tolist() == [3.0, 3.0]
    assert y.grad(grads) is None
