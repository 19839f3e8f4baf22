"""Gradients through broadcasting across ranks: the operand of lower rank gets its gradient summed back
to its own shape. Against finite differences and ``torch.autograd``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing.autodiff._gradcheck import gradcheck
from burn_backend.testing.autodiff.test_grad_arithmetic import BINARY, remainder_inputs
from burn_backend.testing.core.test_broadcasting import RANK_PAIR_IDS, RANK_PAIRS


@pytest.mark.parametrize(("lhs", "rhs"), RANK_PAIRS[:6], ids=RANK_PAIR_IDS[:6])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_gradients_across_ranks(
    ad_device: Device, rng: np.random.Generator, name: str, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    function, torch_function, lhs_sampler, rhs_sampler = BINARY[name]
    inputs = [lhs_sampler(rng, lhs), rhs_sampler(rng, rhs)]
    gradcheck(ad_device, function, inputs, rng, torch_function=torch_function)


@pytest.mark.parametrize(("lhs", "rhs"), RANK_PAIRS[:4], ids=RANK_PAIR_IDS[:4])
def test_remainder_gradients_across_ranks(
    ad_device: Device, rng: np.random.Generator, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a.remainder(b),
        remainder_inputs(rng, lhs, rhs),
        rng,
        torch_function=lambda a, b: a.remainder(b),
    )


@pytest.mark.parametrize(
    ("tensor", "mask", "values"),
    [((2, 3), (3,), (3,)), ((3,), (2, 3), (2, 1, 3)), ((2, 1, 3), (4, 1), ())],
    ids=["values-lower", "tensor-lower", "scalar-values"],
)
def test_mask_where_gradients_across_ranks(
    ad_device: Device,
    rng: np.random.Generator,
    tensor: tuple[int, ...],
    mask: tuple[int, ...],
    values: tuple[int, ...],
) -> None:
    m = rng.random(mask) < 0.5

    def torch_function(x: Any, v: Any) -> Any:
        torch = pytest.importorskip("torch")
        return torch.where(torch.from_numpy(m), v, x)

    gradcheck(
        ad_device,
        lambda x, v: x.mask_where(Tensor.from_data(m, x.device, DType.BOOL), v),
        [rng.uniform(-2.0, 2.0, tensor), rng.uniform(-2.0, 2.0, values)],
        rng,
        torch_function=torch_function,
    )


@pytest.mark.parametrize(
    ("tensor", "mask"), [((3,), (2, 3)), ((2, 3), (3,))], ids=["tensor-lower", "mask-lower"]
)
def test_mask_fill_gradients_across_ranks(
    ad_device: Device, rng: np.random.Generator, tensor: tuple[int, ...], mask: tuple[int, ...]
) -> None:
    m = rng.random(mask) < 0.5

    def torch_function(x: Any) -> Any:
        torch = pytest.importorskip("torch")
        return torch.where(torch.from_numpy(m), torch.tensor(0.5, dtype=torch.float64), x)

    gradcheck(
        ad_device,
        lambda x: x.mask_fill(Tensor.from_data(m, x.device, DType.BOOL), 0.5),
        [rng.uniform(-2.0, 2.0, tensor)],
        rng,
        torch_function=torch_function,
    )


@pytest.mark.parametrize(
    ("lhs", "rhs"), [((4, 2, 3), (3, 5)), ((2, 3), (4, 3, 5)), ((2, 1, 2, 3), (4, 3, 2))]
)
def test_matmul_gradients_across_ranks(
    ad_device: Device, rng: np.random.Generator, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a.matmul(b),
        [rng.uniform(-1.0, 1.0, lhs), rng.uniform(-1.0, 1.0, rhs)],
        rng,
        torch_function=lambda a, b: a.matmul(b),
    )


def test_cross_gradients_across_ranks(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a.cross(b),
        [rng.uniform(-1.0, 1.0, (3,)), rng.uniform(-1.0, 1.0, (4, 3))],
        rng,
        torch_function=lambda a, b: a.expand(4, 3).cross(b, dim=-1),
    )


def test_the_lower_rank_gradient_is_the_sum_over_the_new_dims(ad_device: Device) -> None:
    x = Tensor.from_data([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], ad_device, DType.F64).require_grad()
    row = Tensor.from_data([1.0, 10.0, 100.0], ad_device, DType.F64).require_grad()
    grads = (x * row).sum().backward()
    row_grad, x_grad = row.grad(grads), x.grad(grads)
    assert row_grad is not None
    assert x_grad is not None
    assert row_grad.tolist() == [5.0, 7.0, 9.0]
    assert x_grad.tolist() == [[1.0, 10.0, 100.0], [1.0, 10.0, 100.0]]
