"""Gradients of indexing: slices (steps, negative steps, Burn's ``Slice``), slice_assign and slice_fill,
gather and scatter, select and select_assign, mask_where, mask_fill, mask_select, gather_nd and
scatter_nd; scatter updates without a gradient."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Gradients, IndexingUpdateOp, Kind, Slice, Tensor
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]


def grad_of(tensor: Tensor, grads: Gradients) -> Tensor:
    """``tensor``'s gradient, which must exist."""
    result = tensor.grad(grads)
    assert result is not None, "no gradient"
    return result


def torch_module() -> Any:
    return pytest.importorskip("torch")


def ints(values: Array, like: Tensor) -> Tensor:
    """An Int tensor on ``like``'s device (the autodiff device, or its inner one for finite differences)."""
    return Tensor.from_data(np.asarray(values), like.device, Kind.INT)


def bools(values: Array, like: Tensor) -> Tensor:
    return Tensor.from_data(np.asarray(values), like.device, DType.BOOL)


def uniform(rng: np.random.Generator, shape: Sequence[int]) -> Array:
    return rng.uniform(-2.0, 2.0, tuple(shape))


def shape_id(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape))


# -- slicing ----------------------------------------------------------------------------------------
def positions(piece: Any, size: int) -> list[int]:
    """The indices a range selects from a dim of ``size``, written out from the documented semantics:
    Python's for ``slice`` and ``range``; for ``Slice`` the clamped range ``[start, end)`` walked by
    ``step``, from its last element when the step is negative; an int keeps its dim."""
    if isinstance(piece, Slice):

        def clamp(index: int) -> int:
            return min(max(index + size if index < 0 else index, 0), size)

        start, end = clamp(piece.start), size if piece.end is None else clamp(piece.end)
        forward = list(range(start, end))
        return forward[:: piece.step] if piece.step > 0 else forward[::-1][:: -piece.step]
    if isinstance(piece, (slice, range)):
        return list(range(size))[slice(piece.start, piece.stop, piece.step)]
    return [piece + size if piece < 0 else piece]


def region(shape: Sequence[int], ranges: Sequence[Any]) -> list[list[int]]:
    """The selected indices of every dim (dims past ``ranges`` whole)."""
    return [
        positions(ranges[d], size) if d < len(ranges) else list(range(size)) for d, size in enumerate(shape)
    ]


def torch_take(tensor: Any, picked: list[list[int]]) -> Any:
    torch = torch_module()
    for dim, indices in enumerate(picked):
        tensor = tensor.index_select(dim, torch.tensor(indices, dtype=torch.long))
    return tensor


def torch_put(tensor: Any, picked: list[list[int]], values: Any) -> Any:
    torch = torch_module()
    grid = tuple(torch.as_tensor(ix) for ix in np.ix_(*[np.array(p, dtype=np.int64) for p in picked]))
    out = tensor.clone()
    out[grid] = values
    return out


SLICES: list[tuple[tuple[int, ...], list[Any]]] = [
    ((3, 4, 2), [slice(1, 3)]),
    ((3, 4, 2), [slice(None), slice(0, 4, 2)]),
    ((3, 4, 2), [1]),
    ((3, 4, 2), [-1, 2]),
    ((3, 4, 2), [slice(None, None, -1)]),
    ((3, 4, 2), [slice(None, None, -2), slice(None), 0]),
    ((3, 4, 2), [Slice(0, 3, -1)]),
    ((3, 4, 2), [Slice(1, None, -2), Slice(-3, None)]),
    ((3, 4, 2), [Slice(0, 3, 2), Slice(1, 4, -1), Slice()]),
    ((3, 4, 2), [range(0, 3, 2), range(3, -1, -1)]),
    ((3, 4, 2), [slice(-10, 10), slice(1, -1), slice(None, None, -1)]),
    ((6,), [slice(1, None, 2)]),
    ((6,), [slice(None, None, -3)]),
    ((6,), [Slice(-4, -1, -1)]),
    ((2, 5), [slice(None), Slice(0, 5, -2)]),
]
SLICE_IDS = [f"{shape_id(shape)}-{i}" for i, (shape, _) in enumerate(SLICES)]


@pytest.mark.parametrize(("shape", "ranges"), SLICES, ids=SLICE_IDS)
def test_slice(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], ranges: list[Any]
) -> None:
    picked = region(shape, ranges)
    gradcheck(
        ad_device,
        lambda a: a.slice(ranges),
        [uniform(rng, shape)],
        rng,
        torch_function=lambda a: torch_take(a, picked),
    )


def test_empty_slice_gives_a_zero_gradient(ad_device: Device, rng: np.random.Generator) -> None:
    grads = gradcheck(
        ad_device,
        lambda a: a.slice([slice(2, 2)]) * 2.0 + a.slice([slice(0, 0)]),
        [uniform(rng, (3, 2))],
        rng,
    )
    assert not grads[0].any()


def test_getitem(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device,
        lambda a: a[1:, ::-1] * a[1:, 0:1] + a[0],
        [uniform(rng, (3, 4))],
        rng,
        torch_function=lambda a: a[1:].flip(1) * a[1:, 0:1] + a[0:1],
    )


def test_overlapping_slices_sum_their_gradients(ad_device: Device) -> None:
    x = Tensor.from_data(np.arange(5.0), ad_device, DType.F64).require_grad()
    grads = (x.slice([slice(0, 3)]).sum() + x.slice([slice(2, None, -1)]).sum() * 2.0 + x[-1]).backward()
    assert grad_of(x, grads).tolist() == [3.0, 3.0, 3.0, 0.0, 1.0]


ASSIGNS = [case for case in SLICES if all(len(p) for p in region(*case))]
ASSIGN_IDS = [i for case, i in zip(SLICES, SLICE_IDS) if case in ASSIGNS]


@pytest.mark.parametrize(("shape", "ranges"), ASSIGNS, ids=ASSIGN_IDS)
def test_slice_assign(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], ranges: list[Any]
) -> None:
    picked = region(shape, ranges)
    gradcheck(
        ad_device,
        lambda a, v: a.slice_assign(ranges, v),
        [uniform(rng, shape), uniform(rng, [len(p) for p in picked])],
        rng,
        torch_function=lambda a, v: torch_put(a, picked, v),
    )


@pytest.mark.parametrize("wrt", [0, 1])
def test_slice_assign_one_tracked_input(ad_device: Device, rng: np.random.Generator, wrt: int) -> None:
    ranges = [slice(None, None, -2), Slice(1, 3)]
    picked = region((3, 4), ranges)
    gradcheck(
        ad_device,
        lambda a, v: a.slice_assign(ranges, v),
        [uniform(rng, (3, 4)), uniform(rng, (2, 2))],
        rng,
        torch_function=lambda a, v: torch_put(a, picked, v),
        wrt=[wrt],
    )


def test_slice_assign_gradient_values(ad_device: Device) -> None:
    x = Tensor.from_data(np.ones((2, 3)), ad_device, DType.F64).require_grad()
    v = Tensor.from_data(np.ones((2, 1)), ad_device, DType.F64).require_grad()
    weights = Tensor.from_data(np.arange(6.0).reshape(2, 3), ad_device, DType.F64)
    grads = (x.slice_assign([slice(None), 1], v) * weights).sum().backward()
    assert grad_of(x, grads).tolist() == [[0.0, 0.0, 2.0], [3.0, 0.0, 5.0]]
    assert grad_of(v, grads).tolist() == [[1.0], [4.0]]


@pytest.mark.parametrize(("shape", "ranges"), ASSIGNS[:8], ids=ASSIGN_IDS[:8])
def test_slice_fill(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], ranges: list[Any]
) -> None:
    picked = region(shape, ranges)
    grads = gradcheck(
        ad_device,
        lambda a: a.slice_fill(ranges, 2.5),
        [uniform(rng, shape)],
        rng,
        torch_function=lambda a: torch_put(a, picked, 2.5),
    )
    assert not grads[0][np.ix_(*picked)].any()


# -- gather and scatter ----------------------------------------------------------------------------
GATHERS = [
    ((5,), 0, (7,)),
    ((3, 4), 1, (3, 5)),
    ((3, 4), 0, (2, 4)),
    ((2, 3, 2), -1, (2, 3, 3)),
    ((2, 3, 2), 1, (2, 1, 2)),
]
GATHER_IDS = [f"{shape_id(s)}-dim{d}-{shape_id(i)}" for s, d, i in GATHERS]


@pytest.mark.parametrize(("shape", "dim", "index_shape"), GATHERS, ids=GATHER_IDS)
def test_gather(
    ad_device: Device,
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dim: int,
    index_shape: tuple[int, ...],
) -> None:
    indices = rng.integers(0, shape[dim], index_shape)
    gradcheck(
        ad_device,
        lambda a, i: a.gather(dim, ints(i, a)),
        [uniform(rng, shape)],
        rng,
        torch_function=lambda a, i: a.gather(dim, torch_module().as_tensor(i)),
        constants=[indices],
    )


def test_gather_repeated_indices_sum_their_gradients(ad_device: Device) -> None:
    x = Tensor.from_data(np.array([[1.0, 2.0, 3.0]]), ad_device, DType.F64).require_grad()
    picked = x.gather(1, ints(np.array([[2, 2, 0, 2]]), x))
    grads = picked.sum().backward()
    assert grad_of(x, grads).tolist() == [[1.0, 0.0, 3.0]]


SCATTERS = [((5,), 0, (7,)), ((3, 4), 0, (5, 4)), ((3, 4), 1, (3, 2)), ((2, 3, 2), -2, (2, 4, 2))]
SCATTER_IDS = [f"{shape_id(s)}-dim{d}-{shape_id(i)}" for s, d, i in SCATTERS]


@pytest.mark.parametrize("method", ["scatter", "scatter_add"])
@pytest.mark.parametrize(("shape", "dim", "index_shape"), SCATTERS, ids=SCATTER_IDS)
def test_scatter_add(
    ad_device: Device,
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dim: int,
    index_shape: tuple[int, ...],
    method: str,
) -> None:
    indices = rng.integers(0, shape[dim], index_shape)
    gradcheck(
        ad_device,
        lambda a, v, i: getattr(a, method)(dim, ints(i, a), v),
        [uniform(rng, shape), uniform(rng, index_shape)],
        rng,
        torch_function=lambda a, v, i: a.scatter_add(dim, torch_module().as_tensor(i), v),
        constants=[indices],
    )


@pytest.mark.parametrize("wrt", [0, 1])
def test_scatter_add_one_tracked_input(ad_device: Device, rng: np.random.Generator, wrt: int) -> None:
    indices = rng.integers(0, 3, (4, 2))
    gradcheck(
        ad_device,
        lambda a, v, i: a.scatter(0, ints(i, a), v, "add"),
        [uniform(rng, (3, 2)), uniform(rng, (4, 2))],
        rng,
        torch_function=lambda a, v, i: a.scatter_add(0, torch_module().as_tensor(i), v),
        constants=[indices],
        wrt=[wrt],
    )


def test_scatter_assign(ad_device: Device, rng: np.random.Generator) -> None:
    # every row of the indices is a permutation: no position is written twice
    indices = np.stack([rng.permutation(4)[:2] for _ in range(3)])
    gradcheck(
        ad_device,
        lambda a, v, i: a.scatter(1, ints(i, a), v, "assign"),
        [uniform(rng, (3, 4)), uniform(rng, (3, 2))],
        rng,
        torch_function=lambda a, v, i: a.scatter(1, torch_module().as_tensor(i), v),
        constants=[indices],
    )


@pytest.mark.parametrize("update", ["mul", "min", "max"])
def test_scatter_without_a_gradient_refuses_tracked_inputs(ad_device: Device, update: str) -> None:
    x = Tensor.from_data(np.ones((2, 3)), ad_device, DType.F64).require_grad()
    values = Tensor.from_data(np.full((1, 3), 2.0), ad_device, DType.F64)
    with pytest.raises(NotImplementedError, match="scatter"):
        x.scatter(0, ints(np.zeros((1, 3), dtype=np.int64), x), values, update)


# -- select ---------------------------------------------------------------------------------------
SELECTS = [
    ((5,), 0, [4, 0, 4]),
    ((4, 3), 0, [3, 0, 3, 1]),
    ((4, 3), 1, [2, 2]),
    ((2, 3, 4), -1, [1, 3, 0, 1, 1]),
]
SELECT_IDS = [f"{shape_id(s)}-dim{d}-{len(i)}" for s, d, i in SELECTS]


@pytest.mark.parametrize(("shape", "dim", "indices"), SELECTS, ids=SELECT_IDS)
def test_select(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, indices: list[int]
) -> None:
    index = np.array(indices, dtype=np.int64)
    gradcheck(
        ad_device,
        lambda a, i: a.select(dim, ints(i, a)),
        [uniform(rng, shape)],
        rng,
        torch_function=lambda a, i: a.index_select(dim, torch_module().as_tensor(i)),
        constants=[index],
    )


@pytest.mark.parametrize(("shape", "dim", "indices"), SELECTS, ids=SELECT_IDS)
def test_select_assign(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], dim: int, indices: list[int]
) -> None:
    index = np.array(indices, dtype=np.int64)
    values_shape = list(shape)
    values_shape[dim] = len(indices)
    gradcheck(
        ad_device,
        lambda a, v, i: a.select_assign(dim, ints(i, a), v),
        [uniform(rng, shape), uniform(rng, values_shape)],
        rng,
        torch_function=lambda a, v, i: a.index_add(dim, torch_module().as_tensor(i), v),
        constants=[index],
    )


def test_select_assign_gradient_values(ad_device: Device) -> None:
    x = Tensor.from_data(np.zeros((3, 2)), ad_device, DType.F64).require_grad()
    v = Tensor.from_data(np.zeros((2, 2)), ad_device, DType.F64).require_grad()
    weights = Tensor.from_data(np.arange(6.0).reshape(3, 2), ad_device, DType.F64)
    grads = (x.select_assign(0, ints(np.array([2, 2]), x), v) * weights).sum().backward()
    assert grad_of(x, grads).tolist() == weights.tolist()
    assert grad_of(v, grads).tolist() == [[4.0, 5.0], [4.0, 5.0]]


# -- masks ----------------------------------------------------------------------------------------
MASK_WHERES = [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4), (1, 4), (3, 4)),
    ((3, 4), (3, 4), (1, 4)),
    ((3, 4), (3, 1), (3, 1)),
    ((6,), (6,), (1,)),
    ((2, 3, 2), (2, 1, 2), (1, 3, 1)),
    ((3, 1), (3, 4), (1, 4)),
]
MASK_WHERE_IDS = ["-".join(shape_id(s) for s in case) for case in MASK_WHERES]


@pytest.mark.parametrize(("shape", "mask_shape", "values_shape"), MASK_WHERES, ids=MASK_WHERE_IDS)
def test_mask_where(
    ad_device: Device,
    rng: np.random.Generator,
    shape: tuple[int, ...],
    mask_shape: tuple[int, ...],
    values_shape: tuple[int, ...],
) -> None:
    mask = rng.random(mask_shape) < 0.5
    gradcheck(
        ad_device,
        lambda a, v, m: a.mask_where(bools(m, a), v),
        [uniform(rng, shape), uniform(rng, values_shape)],
        rng,
        torch_function=lambda a, v, m: torch_module().where(torch_module().as_tensor(m), v, a),
        constants=[mask],
    )


@pytest.mark.parametrize("wrt", [0, 1])
def test_mask_where_one_tracked_input(ad_device: Device, rng: np.random.Generator, wrt: int) -> None:
    mask = rng.random((3, 4)) < 0.5
    gradcheck(
        ad_device,
        lambda a, v, m: a.mask_where(bools(m, a), v),
        [uniform(rng, (3, 4)), uniform(rng, (3, 4))],
        rng,
        torch_function=lambda a, v, m: torch_module().where(torch_module().as_tensor(m), v, a),
        constants=[mask],
        wrt=[wrt],
    )


def test_mask_where_gradient_values(ad_device: Device) -> None:
    x = Tensor.from_data(np.zeros((2, 2)), ad_device, DType.F64).require_grad()
    v = Tensor.from_data(np.zeros((1, 2)), ad_device, DType.F64).require_grad()
    mask = bools(np.array([[True, False], [True, True]]), x)
    grads = x.mask_where(mask, v).sum().backward()
    assert grad_of(x, grads).tolist() == [[0.0, 1.0], [0.0, 0.0]]
    assert grad_of(v, grads).tolist() == [[2.0, 1.0]]


MASK_FILLS = [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((6,), (6,)), ((2, 3, 2), (2, 1, 2)), ((3, 1), (3, 4))]
MASK_FILL_IDS = ["-".join(shape_id(s) for s in case) for case in MASK_FILLS]


@pytest.mark.parametrize(("shape", "mask_shape"), MASK_FILLS, ids=MASK_FILL_IDS)
def test_mask_fill(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], mask_shape: tuple[int, ...]
) -> None:
    mask = rng.random(mask_shape) < 0.5
    torch = torch_module()
    grads = gradcheck(
        ad_device,
        lambda a, m: a.mask_fill(bools(m, a), -1.5),
        [uniform(rng, shape)],
        rng,
        torch_function=lambda a, m: torch.where(torch.as_tensor(m), torch.tensor(-1.5, dtype=a.dtype), a),
        constants=[mask],
    )
    if np.broadcast_shapes(shape, mask_shape) == shape:
        assert not grads[0][np.broadcast_to(mask, shape)].any()


@pytest.mark.parametrize(("shape", "mask_shape"), MASK_FILLS[:4], ids=MASK_FILL_IDS[:4])
def test_mask_select(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], mask_shape: tuple[int, ...]
) -> None:
    mask = rng.random(mask_shape) < 0.5
    mask.reshape(-1)[0] = True
    gradcheck(
        ad_device,
        lambda a, m: a.mask_select(bools(m, a)),
        [uniform(rng, shape)],
        rng,
        torch_function=lambda a, m: a.masked_select(torch_module().as_tensor(m)),
        constants=[mask],
    )


# -- n-dimensional indexing ------------------------------------------------------------------------
def torch_index(indices: Array) -> tuple[Any, ...]:
    torch = torch_module()
    return tuple(torch.as_tensor(indices[..., j]) for j in range(indices.shape[-1]))


GATHER_NDS = [((3, 4), (5, 2)), ((3, 4), (2, 1)), ((2, 3, 4), (2, 2, 2)), ((2, 3, 2), (4, 3)), ((5,), (3, 1))]
GATHER_ND_IDS = [f"{shape_id(s)}-{shape_id(i)}" for s, i in GATHER_NDS]


def random_index_tuples(
    rng: np.random.Generator, shape: tuple[int, ...], index_shape: tuple[int, ...], unique: bool
) -> Array:
    depth = index_shape[-1]
    count = int(np.prod(index_shape[:-1]))
    limits = shape[:depth]
    flat = rng.choice(int(np.prod(limits)), count, replace=not unique)
    return np.stack(np.unravel_index(flat, limits), axis=-1).reshape(index_shape).astype(np.int64)


@pytest.mark.parametrize(("shape", "index_shape"), GATHER_NDS, ids=GATHER_ND_IDS)
def test_gather_nd(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], index_shape: tuple[int, ...]
) -> None:
    indices = random_index_tuples(rng, shape, index_shape, unique=False)
    gradcheck(
        ad_device,
        lambda a, i: a.gather_nd(ints(i, a)),
        [uniform(rng, shape)],
        rng,
        torch_function=lambda a, i: a[torch_index(i)],
        constants=[indices],
    )


SCATTER_NDS = [
    ((3, 4), (3, 2)),
    ((3, 4), (2, 1)),
    ((2, 3, 2), (2, 2)),
    ((2, 3, 2), (2, 2, 3)),
    ((5,), (3, 1)),
]
SCATTER_ND_IDS = [f"{shape_id(s)}-{shape_id(i)}" for s, i in SCATTER_NDS]


@pytest.mark.parametrize(("shape", "index_shape"), SCATTER_NDS, ids=SCATTER_ND_IDS)
def test_scatter_nd_assign(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], index_shape: tuple[int, ...]
) -> None:
    indices = random_index_tuples(rng, shape, index_shape, unique=True)
    values_shape = index_shape[:-1] + shape[index_shape[-1] :]

    def torch_function(a: Any, v: Any, i: Array) -> Any:
        out = a.clone()
        out[torch_index(i)] = v
        return out

    gradcheck(
        ad_device,
        lambda a, v, i: a.scatter_nd(ints(i, a), v),
        [uniform(rng, shape), uniform(rng, values_shape)],
        rng,
        torch_function=torch_function,
        constants=[indices],
    )


@pytest.mark.parametrize(("shape", "index_shape"), SCATTER_NDS, ids=SCATTER_ND_IDS)
def test_scatter_nd_add(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], index_shape: tuple[int, ...]
) -> None:
    indices = random_index_tuples(rng, shape, index_shape, unique=False)
    values_shape = index_shape[:-1] + shape[index_shape[-1] :]
    gradcheck(
        ad_device,
        lambda a, v, i: a.scatter_nd(ints(i, a), v, IndexingUpdateOp.ADD),
        [uniform(rng, shape), uniform(rng, values_shape)],
        rng,
        torch_function=lambda a, v, i: a.index_put(torch_index(i), v, accumulate=True),
        constants=[indices],
    )


def test_scatter_nd_add_repeated_indices(ad_device: Device) -> None:
    x = Tensor.from_data(np.zeros((2, 2)), ad_device, DType.F64).require_grad()
    v = Tensor.from_data(np.zeros(3), ad_device, DType.F64).require_grad()
    weights = Tensor.from_data(np.array([[1.0, 2.0], [3.0, 4.0]]), ad_device, DType.F64)
    out = x.scatter_nd(ints(np.array([[1, 0], [1, 0], [0, 1]]), x), v, "add")
    grads = (out * weights).sum().backward()
    assert grad_of(x, grads).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert grad_of(v, grads).tolist() == [3.0, 3.0, 2.0]


@pytest.mark.parametrize("update", ["mul", "min", "max"])
def test_scatter_nd_without_a_gradient_refuses_tracked_inputs(ad_device: Device, update: str) -> None:
    x = Tensor.from_data(np.ones((2, 3)), ad_device, DType.F64).require_grad()
    values = Tensor.from_data(np.full((1, 3), 2.0), ad_device, DType.F64)
    with pytest.raises(NotImplementedError, match="scatter_nd"):
        x.scatter_nd(ints(np.array([[1]]), x), values, update)


def test_scatter_nd_without_a_gradient_on_untracked_inputs(ad_device: Device) -> None:
    x = Tensor.from_data(np.ones((2, 3)), ad_device, DType.F64)
    values = Tensor.from_data(np.full((1, 3), 2.0), ad_device, DType.F64)
    out = x.scatter_nd(ints(np.array([[1]]), x), values, "mul")
    assert out.tolist() == [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    assert not out.is_require_grad()
