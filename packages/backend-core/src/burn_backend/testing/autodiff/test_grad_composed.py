"""Gradients of the ops composed of other ops: pairwise extrema, where, log2/log10/exp2/expm1, lerp,
fmod, nan_to_num, reductions over several dims, logsumexp, std, median, kthvalue, quantile, diagonal,
roll, einsum and indexing by None, masks and index tensors; against finite differences and PyTorch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Tensor
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]


def torch() -> Any:
    return pytest.importorskip("torch")


def test_max_pair_and_min_pair(ad_device: Device, rng: np.random.Generator) -> None:
    a, b = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,))
    gradcheck(ad_device, lambda x, y: x.max_pair(y), [a, b], rng, lambda x, y: torch().maximum(x, y))
    gradcheck(ad_device, lambda x, y: x.min_pair(y), [a, b], rng, lambda x, y: torch().minimum(x, y))


def test_where(ad_device: Device, rng: np.random.Generator) -> None:
    a, b = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3))
    mask = rng.random((2, 3)) < 0.5

    def ours(x: Tensor, y: Tensor) -> Tensor:
        condition = Tensor.from_data(mask, x.device)
        return Tensor.where(condition, x, y) + x.where(condition, 2.0) * y

    def theirs(x: Any, y: Any) -> Any:
        condition = torch().tensor(mask)
        return torch().where(condition, x, y) + torch().where(condition, x, 2.0) * y

    gradcheck(ad_device, ours, [a, b], rng, theirs)


UNARY: dict[str, tuple[float, float]] = {
    "log2": (0.2, 3.0),
    "log10": (0.2, 3.0),
    "exp2": (-2.0, 2.0),
    "expm1": (-2.0, 2.0),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    low, high = UNARY[name]
    x = rng.uniform(low, high, (2, 4))
    if name == "expm1":
        x[0, :3] = [1e-3, -0.3, 0.45]  # both sides of the branch
    gradcheck(ad_device, lambda a: getattr(a, name)(), [x], rng, lambda a: getattr(torch(), name)(a))


def test_lerp(ad_device: Device, rng: np.random.Generator) -> None:
    a, b, w = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,)), rng.uniform(0, 1, (2, 1))
    gradcheck(ad_device, lambda x, y, z: x.lerp(y, z), [a, b, w], rng, lambda x, y, z: torch().lerp(x, y, z))


def test_fmod(ad_device: Device, rng: np.random.Generator) -> None:
    a = rng.uniform(-5, 5, (2, 3))
    b = rng.uniform(0.7, 2.0, (3,)) * np.array([1, -1, 1])
    a = np.where(np.abs(np.fmod(a, b[None]) / b[None]) < 0.05, a + 0.3, a)  # away from the jumps
    gradcheck(ad_device, lambda x, y: x.fmod(y), [a, b], rng, lambda x, y: torch().fmod(x, y))


def test_nan_to_num_passes_finite_gradients(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device, lambda x: x.nan_to_num(), [rng.uniform(-1, 1, (3,))], rng, lambda x: torch().nan_to_num(x)
    )


@pytest.mark.parametrize("op", ["sum_dims", "mean_dims", "prod_dims", "max_dims", "min_dims"])
def test_several_dims(ad_device: Device, rng: np.random.Generator, op: str) -> None:
    reference: dict[str, Callable[[Any], Any]] = {
        "sum_dims": lambda x: x.sum((0, 2), keepdim=True),
        "mean_dims": lambda x: x.mean((0, 2), keepdim=True),
        "prod_dims": lambda x: x.prod(0, keepdim=True).prod(2, keepdim=True),
        "max_dims": lambda x: x.amax((0, 2), keepdim=True),
        "min_dims": lambda x: x.amin((0, 2), keepdim=True),
    }
    gradcheck(
        ad_device, lambda x: getattr(x, op)([0, 2]), [rng.uniform(0.5, 1.5, (2, 2, 3))], rng, reference[op]
    )


def test_logsumexp_and_std(ad_device: Device, rng: np.random.Generator) -> None:
    x = rng.uniform(-2, 2, (3, 4))
    gradcheck(ad_device, lambda a: a.logsumexp(1), [x], rng, lambda a: torch().logsumexp(a, 1, keepdim=True))
    gradcheck(ad_device, lambda a: a.std(0), [x], rng, lambda a: torch().std(a, 0, keepdim=True))
    gradcheck(
        ad_device, lambda a: a.std_bias(1), [x], rng, lambda a: torch().std(a, 1, correction=0, keepdim=True)
    )


def test_order_statistics(ad_device: Device, rng: np.random.Generator) -> None:
    x = rng.permutation(15).reshape(3, 5) + rng.uniform(-0.1, 0.1, (3, 5))
    gradcheck(ad_device, lambda a: a.median(1), [x], rng, lambda a: a.median(1, keepdim=True).values)
    gradcheck(
        ad_device, lambda a: a.kthvalue(2, 0), [x], rng, lambda a: a.kthvalue(2, 0, keepdim=True).values
    )
    gradcheck(
        ad_device,
        lambda a: a.quantile([0.3, 0.5], 1),
        [x],
        rng,
        lambda a: torch().quantile(a, torch().tensor([0.3, 0.5], dtype=a.dtype), 1).T,
    )


def test_diagonal_and_roll(ad_device: Device, rng: np.random.Generator) -> None:
    x = rng.uniform(-1, 1, (3, 4, 2))
    gradcheck(ad_device, lambda a: a.diagonal(1, 0, 1), [x], rng, lambda a: torch().diagonal(a, 1, 0, 1))
    gradcheck(
        ad_device, lambda a: a.roll([1, -1], [0, 2]), [x], rng, lambda a: torch().roll(a, (1, -1), (0, 2))
    )


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(2, 3), (3, 2)]),
        ("bij,bkj->bik", [(2, 2, 3), (2, 3, 3)]),
        ("ii->", [(3, 3)]),
        ("i,j->ij", [(2,), (3,)]),
    ],
)
def test_einsum(
    ad_device: Device, rng: np.random.Generator, equation: str, shapes: list[tuple[int, ...]]
) -> None:
    arrays = [rng.uniform(-1, 1, s) for s in shapes]
    gradcheck(
        ad_device,
        lambda *xs: Tensor.einsum(equation, *xs),
        arrays,
        rng,
        lambda *xs: torch().einsum(equation, *xs),
    )


def test_indexing_by_none_masks_and_indices(ad_device: Device, rng: np.random.Generator) -> None:
    x = rng.uniform(-1, 1, (3, 4))
    mask = rng.random((3, 4)) < 0.5
    rows = np.array([True, False, True])
    index = np.array([2, 0, 2])

    def ours(a: Tensor) -> Tensor:
        device = a.device
        picked = a[Tensor.from_data(mask, device)].sum() + a[Tensor.from_data(rows, device)].sum()
        return a[None, ..., 1] * picked + a[Tensor.from_data(index, device)].sum()

    def theirs(a: Any) -> Any:
        t = torch()
        picked = a[t.tensor(mask)].sum() + a[t.tensor(rows)].sum()
        return a[None, ..., 1:2] * picked + a[t.tensor(index)].sum()

    gradcheck(ad_device, ours, [x], rng, theirs)
