"""Gradients of layout ops: reshapes, dim swaps and permutations, flips, expansion and repetition,
new and removed dims, narrowing and splitting, concatenation and stacking, windows, triangles."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Gradients, Tensor
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]


def grad_of(tensor: Tensor, grads: Gradients) -> Tensor:
    """``tensor``'s gradient, which must exist."""
    result = tensor.grad(grads)
    assert result is not None, "no gradient"
    return result


def ids(cases: Sequence[tuple[Any, ...]]) -> list[str]:
    """Readable test ids: shapes written ``2x3``, other arguments as they are."""

    def part(value: Any) -> str:
        if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
            return "x".join(map(str, value))
        return str(value).replace(" ", "")

    return ["-".join(part(value) for value in case) for case in cases]


def values(rng: np.random.Generator, shape: Sequence[int]) -> Array:
    return rng.uniform(-2.0, 2.0, tuple(shape))


def check_single(
    device: Device,
    rng: np.random.Generator,
    shape: tuple[int, ...],
    function: Callable[[Tensor], Tensor],
    torch_function: Callable[[Any], Any],
) -> None:
    gradcheck(device, function, [values(rng, shape)], rng, torch_function=torch_function)


def torch_module() -> Any:
    return pytest.importorskip("torch")


RESHAPES = [
    ((2, 3), (3, 2), (3, 2)),
    ((2, 3), (6,), (6,)),
    ((6,), (2, 1, 3), (2, 1, 3)),
    ((2, 3, 4), (4, -1), (4, 6)),
    ((2, 3, 4), (0, 12), (2, 12)),
    ((1,), (1, 1, 1), (1, 1, 1)),
]


@pytest.mark.parametrize(("shape", "target", "resolved"), RESHAPES, ids=ids(RESHAPES))
def test_reshape(
    ad_device: Device,
    rng: np.random.Generator,
    shape: tuple[int, ...],
    target: tuple[int, ...],
    resolved: tuple[int, ...],
) -> None:
    check_single(ad_device, rng, shape, lambda a: a.reshape(target), lambda a: a.reshape(resolved))


FLATTENS = [((2, 3, 4), 0, -1), ((2, 3, 4), 1, 2), ((2, 3, 4), 0, 1), ((5,), 0, 0), ((2, 1, 3, 2), 1, -2)]


@pytest.mark.parametrize(("shape", "start", "end"), FLATTENS, ids=ids(FLATTENS))
def test_flatten(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], start: int, end: int
) -> None:
    check_single(ad_device, rng, shape, lambda a: a.flatten(start, end), lambda a: a.flatten(start, end))


SWAPS = [((2, 3), 0, 1), ((2, 3, 4), 0, 2), ((2, 3, 4), -1, 1), ((2, 3, 4), 1, 1), ((3, 1, 2), 0, -2)]


@pytest.mark.parametrize(("shape", "dim1", "dim2"), SWAPS, ids=ids(SWAPS))
def test_swap_dims(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim1: int, dim2: int
) -> None:
    check_single(ad_device, rng, shape, lambda a: a.swap_dims(dim1, dim2), lambda a: a.transpose(dim1, dim2))


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 4), (1, 3, 1)], ids=["5", "2x3", "2x3x4", "1x3x1"])
def test_transpose(ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    def torch_function(a: Any) -> Any:
        return a.transpose(-2, -1) if a.dim() >= 2 else a

    check_single(
        ad_device, rng, shape, lambda a: a.transpose() * a.T, lambda a: torch_function(a) * torch_function(a)
    )


def test_transpose_of_a_matrix_feeds_a_product(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device,
        lambda a, b: a.T * b,
        [values(rng, (3, 2)), values(rng, (2, 3))],
        rng,
        torch_function=lambda a, b: a.T * b,
    )


PERMUTES = [
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4), (1, 2, 0)),
    ((2, 3, 4), (-1, 0, -2)),
    ((2, 1, 3, 2), (3, 1, 0, 2)),
    ((3, 2), (1, 0)),
]


@pytest.mark.parametrize(("shape", "axes"), PERMUTES, ids=ids(PERMUTES))
def test_permute(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], axes: tuple[int, ...]
) -> None:
    check_single(ad_device, rng, shape, lambda a: a.permute(axes), lambda a: a.permute(axes))


MOVES: list[tuple[tuple[int, ...], Any, Any]] = [
    ((2, 3, 4), 0, 2),
    ((2, 3, 4), -1, 0),
    ((2, 3, 4), [0, 1], [2, 0]),
    ((2, 1, 3, 2), 1, -1),
]


@pytest.mark.parametrize(("shape", "source", "destination"), MOVES, ids=ids(MOVES))
def test_movedim(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], source: Any, destination: Any
) -> None:
    check_single(
        ad_device,
        rng,
        shape,
        lambda a: a.movedim(source, destination),
        lambda a: torch_module().movedim(a, source, destination),
    )


FLIPS = [
    ((5,), (0,)),
    ((2, 3), (1,)),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), (-1,)),
    ((2, 3), (0, 1)),
    ((2, 1, 3), (1,)),
]


@pytest.mark.parametrize(("shape", "axes"), FLIPS, ids=ids(FLIPS))
def test_flip(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], axes: tuple[int, ...]
) -> None:
    check_single(ad_device, rng, shape, lambda a: a.flip(axes), lambda a: a.flip(axes))


def test_flip_gradient_values(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([1.0, 2.0, 3.0]), ad_device, DType.F64).require_grad()
    weights = Tensor.from_data(np.array([10.0, 20.0, 30.0]), ad_device, DType.F64)
    grads = (x.flip([0]) * weights).sum().backward()
    assert grad_of(x, grads).tolist() == [30.0, 20.0, 10.0]


EXPANDS = [
    ((1, 3), (4, 3)),
    ((3, 1), (3, 4)),
    ((3,), (2, 3)),
    ((2, 1, 3), (2, 4, 3)),
    ((1, 1), (2, 3, 4)),
    ((2, 1), (-1, 3)),
    ((1,), (5,)),
]


@pytest.mark.parametrize(("shape", "target"), EXPANDS, ids=ids(EXPANDS))
def test_expand(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], target: tuple[int, ...]
) -> None:
    check_single(ad_device, rng, shape, lambda a: a.expand(target), lambda a: a.expand(target))


def test_broadcast_to(ad_device: Device, rng: np.random.Generator) -> None:
    check_single(ad_device, rng, (3, 1), lambda a: a.broadcast_to((2, 3, 4)), lambda a: a.expand(2, 3, 4))


REPEATS = [((2, 3), (2, 1)), ((2, 3), (1, 3)), ((2, 1, 2), (2, 3, 1)), ((4,), (3,))]


@pytest.mark.parametrize(("shape", "sizes"), REPEATS, ids=ids(REPEATS))
def test_repeat(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], sizes: tuple[int, ...]
) -> None:
    check_single(ad_device, rng, shape, lambda a: a.repeat(sizes), lambda a: a.repeat(sizes))


REPEAT_DIMS = [((2, 3), 0, 3), ((2, 3), -1, 2), ((5,), 0, 2), ((2, 1, 2), 1, 4), ((2, 3), 1, 0)]


@pytest.mark.parametrize(("shape", "dim", "times"), REPEAT_DIMS, ids=ids(REPEAT_DIMS))
def test_repeat_dim(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, times: int
) -> None:
    def torch_function(a: Any) -> Any:
        sizes = [1] * a.dim()
        sizes[dim] = times
        return a.repeat(sizes)

    check_single(ad_device, rng, shape, lambda a: a.repeat_dim(dim, times), torch_function)


def test_repeat_dim_zero_times_gives_a_zero_gradient(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([[1.0, 2.0]]), ad_device, DType.F64).require_grad()
    y = x.repeat_dim(1, 0)
    assert y.dims() == [1, 0]
    grads = (y.sum() + x.sum() * 0.0).backward()
    assert grad_of(x, grads).tolist() == [[0.0, 0.0]]


NEW_DIMS: dict[str, tuple[tuple[int, ...], Callable[[Tensor], Tensor], Callable[[Any], Any]]] = {
    "unsqueeze_dim_front": ((2, 3), lambda a: a.unsqueeze_dim(0), lambda a: a.unsqueeze(0)),
    "unsqueeze_dim_middle": ((2, 3), lambda a: a.unsqueeze_dim(1), lambda a: a.unsqueeze(1)),
    "unsqueeze_dim_negative": ((2, 3), lambda a: a.unsqueeze_dim(-1), lambda a: a.unsqueeze(-1)),
    "unsqueeze_dims": ((2, 3), lambda a: a.unsqueeze_dims([0, -1]), lambda a: a.unsqueeze(0).unsqueeze(-1)),
    "unsqueeze_to_rank": ((3,), lambda a: a.unsqueeze(rank=3), lambda a: a.reshape(1, 1, 3)),
    "squeeze_dim": ((2, 1, 3), lambda a: a.squeeze_dim(1), lambda a: a.squeeze(1)),
    "squeeze_dim_negative": ((2, 3, 1), lambda a: a.squeeze_dim(-1), lambda a: a.squeeze(-1)),
    "squeeze_dims": ((1, 2, 1, 3), lambda a: a.squeeze_dims([0, 2]), lambda a: a.reshape(2, 3)),
    "squeeze": ((1, 3, 1, 2), lambda a: a.squeeze(), lambda a: a.squeeze()),
    "unsqueeze_then_broadcast": (
        (3,),
        lambda a: a.unsqueeze_dim(1) * a.unsqueeze_dim(0),
        lambda a: a[:, None] * a[None, :],
    ),
}


@pytest.mark.parametrize("name", NEW_DIMS)
def test_new_and_removed_dims(ad_device: Device, rng: np.random.Generator, name: str) -> None:
    shape, function, torch_function = NEW_DIMS[name]
    check_single(ad_device, rng, shape, function, torch_function)


NARROWS = [
    ((5,), 0, 1, 3),
    ((3, 4), 1, -2, 2),
    ((2, 3, 4), 2, 0, 4),
    ((2, 3, 4), -2, 1, 1),
    ((3, 4), 0, 2, 0),
]


@pytest.mark.parametrize(("shape", "dim", "start", "length"), NARROWS, ids=ids(NARROWS))
def test_narrow(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, start: int, length: int
) -> None:
    check_single(
        ad_device, rng, shape, lambda a: a.narrow(dim, start, length), lambda a: a.narrow(dim, start, length)
    )


def weighted_pieces(pieces: Sequence[Any], dim: int, cat: Callable[[list[Any], int], Any]) -> Any:
    """The pieces scaled by 1, 2, 3, ... and joined again: each piece's gradient is told apart."""
    return cat([piece * float(i + 1) for i, piece in enumerate(pieces)], dim)


CHUNKS = [((5,), 2, 0), ((3, 4), 3, 1), ((2, 6, 2), 4, 1), ((4, 2), 1, 0), ((3, 5), 2, -1)]


@pytest.mark.parametrize(("shape", "chunks", "dim"), CHUNKS, ids=ids(CHUNKS))
def test_chunk(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], chunks: int, dim: int
) -> None:
    check_single(
        ad_device,
        rng,
        shape,
        lambda a: weighted_pieces(a.chunk(chunks, dim), dim, Tensor.cat),
        lambda a: weighted_pieces(a.chunk(chunks, dim), dim, torch_module().cat),
    )


SPLITS = [((5,), 2, 0), ((3, 4), 3, 1), ((2, 6, 2), 4, -2), ((4, 3), 1, 0)]


@pytest.mark.parametrize(("shape", "size", "dim"), SPLITS, ids=ids(SPLITS))
def test_split(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], size: int, dim: int
) -> None:
    check_single(
        ad_device,
        rng,
        shape,
        lambda a: weighted_pieces(a.split(size, dim), dim, Tensor.cat),
        lambda a: weighted_pieces(a.split(size, dim), dim, torch_module().cat),
    )


SPLIT_SIZES: list[tuple[tuple[int, ...], list[int], int]] = [
    ((5,), [1, 4], 0),
    ((2, 6), [2, 1, 3], 1),
    ((4, 2), [0, 3, 1], 0),
]


@pytest.mark.parametrize(("shape", "sizes", "dim"), SPLIT_SIZES, ids=ids(SPLIT_SIZES))
def test_split_with_sizes(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], sizes: list[int], dim: int
) -> None:
    check_single(
        ad_device,
        rng,
        shape,
        lambda a: weighted_pieces(a.split_with_sizes(sizes, dim), dim, Tensor.cat),
        lambda a: weighted_pieces(a.split(sizes, dim), dim, torch_module().cat),
    )


def test_pieces_used_unevenly(ad_device: Device) -> None:
    x = Tensor.from_data(np.arange(6.0).reshape(2, 3), ad_device, DType.F64).require_grad()
    first, second = x.split_with_sizes([1, 2], dim=1)
    grads = (first * 5.0).sum().add(second.narrow(1, 1, 1).sum()).backward()
    assert grad_of(x, grads).tolist() == [[5.0, 0.0, 1.0], [5.0, 0.0, 1.0]]


CATS: list[tuple[list[tuple[int, ...]], int]] = [
    ([(2, 3), (1, 3)], 0),
    ([(2, 3), (2, 1), (2, 2)], 1),
    ([(2, 1, 3), (2, 2, 3)], -2),
    ([(3,), (2,), (1,)], 0),
    ([(2, 2), (2, 2)], -1),
    ([(4, 2)], 0),
]


@pytest.mark.parametrize(
    ("shapes", "dim"), CATS, ids=[f"{len(s)}-tensors-dim{d}-{i}" for i, (s, d) in enumerate(CATS)]
)
def test_cat(ad_device: Device, rng: np.random.Generator, shapes: list[tuple[int, ...]], dim: int) -> None:
    gradcheck(
        ad_device,
        lambda *tensors: Tensor.cat(list(tensors), dim),
        [values(rng, shape) for shape in shapes],
        rng,
        torch_function=lambda *tensors: torch_module().cat(tensors, dim),
    )


@pytest.mark.parametrize("wrt", [[0], [1], [0, 2]])
def test_cat_with_untracked_tensors(ad_device: Device, rng: np.random.Generator, wrt: list[int]) -> None:
    gradcheck(
        ad_device,
        lambda *tensors: Tensor.cat(list(tensors), 1),
        [values(rng, (2, n)) for n in (1, 2, 3)],
        rng,
        torch_function=lambda *tensors: torch_module().cat(tensors, 1),
        wrt=wrt,
    )


def test_cat_of_one_tensor_with_itself(ad_device: Device, rng: np.random.Generator) -> None:
    check_single(
        ad_device,
        rng,
        (2, 3),
        lambda a: Tensor.cat([a, a * 2.0, a], 0),
        lambda a: torch_module().cat([a, a * 2.0, a], 0),
    )


STACKS: list[tuple[list[tuple[int, ...]], int]] = [
    ([(2, 3), (2, 3)], 0),
    ([(2, 3), (2, 3)], 2),
    ([(2, 3), (2, 3), (2, 3)], -1),
    ([(4,), (4,), (4,)], 1),
    ([(1, 2), (1, 2)], 1),
]


@pytest.mark.parametrize(
    ("shapes", "dim"), STACKS, ids=[f"{len(s)}-tensors-dim{d}-{i}" for i, (s, d) in enumerate(STACKS)]
)
def test_stack(ad_device: Device, rng: np.random.Generator, shapes: list[tuple[int, ...]], dim: int) -> None:
    gradcheck(
        ad_device,
        lambda *tensors: Tensor.stack(list(tensors), dim),
        [values(rng, shape) for shape in shapes],
        rng,
        torch_function=lambda *tensors: torch_module().stack(tensors, dim),
    )


UNFOLDS = [
    ((6,), 0, 2, 1),
    ((6,), 0, 3, 2),
    ((7,), 0, 3, 3),
    ((5,), 0, 5, 1),
    ((2, 5), 1, 2, 2),
    ((4, 3), 0, 2, 1),
    ((2, 5, 2), 1, 3, 1),
    ((2, 5, 2), -2, 2, 3),
]


@pytest.mark.parametrize(("shape", "dim", "size", "step"), UNFOLDS, ids=ids(UNFOLDS))
def test_unfold(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, size: int, step: int
) -> None:
    check_single(
        ad_device, rng, shape, lambda a: a.unfold(dim, size, step), lambda a: a.unfold(dim, size, step)
    )


def test_unfold_overlapping_windows_sum_their_gradients(ad_device: Device) -> None:
    x = Tensor.from_data(np.arange(5.0), ad_device, DType.F64).require_grad()
    grads = x.unfold(0, 3, 1).sum().backward()
    assert grad_of(x, grads).tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]


TRIANGLES = [((3, 3), 0), ((3, 4), 1), ((4, 3), -1), ((2, 3, 3), 0), ((2, 2, 4), 2), ((3, 3), -3)]


@pytest.mark.parametrize(("shape", "diagonal"), TRIANGLES, ids=ids(TRIANGLES))
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangle(
    ad_device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...], diagonal: int
) -> None:
    check_single(
        ad_device,
        rng,
        shape,
        lambda a: getattr(a, name)(diagonal),
        lambda a: getattr(torch_module(), name)(a, diagonal),
    )


def test_layout_chain(ad_device: Device, rng: np.random.Generator) -> None:
    def function(a: Tensor) -> Tensor:
        b = a.reshape([3, 2, 2]).permute([2, 0, 1]).flip([1]).swap_dims(0, 2)
        return b.expand([2, 2, 3, 2]).repeat_dim(0, 2).unfold(2, 2, 1).sum_dim(-1)

    def torch_function(a: Any) -> Any:
        b = a.reshape(3, 2, 2).permute(2, 0, 1).flip(1).transpose(0, 2)
        return b.expand(2, 2, 3, 2).repeat(2, 1, 1, 1).unfold(2, 2, 1).sum(-1, keepdim=True)

    check_single(ad_device, rng, (12,), function, torch_function)
