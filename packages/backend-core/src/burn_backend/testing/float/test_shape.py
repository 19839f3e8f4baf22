"""Layout ops on Float tensors: reshape (-1 and 0), flatten, (un)squeeze, swap_dims, transpose,
permute, movedim, flip, expand, repeat, narrow, chunk, split, unfold, tril and triu."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from burn_backend import Device, DType, Tensor
from burn_backend.testing import FLOAT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, f64, laid_out

SHAPE = (2, 3, 4)


@pytest.fixture
def data(rng: np.random.Generator) -> np.ndarray:
    return random_array(rng, SHAPE, DType.F64)


def tensor_of(data: np.ndarray, device: Device, dtype: DType, layout: str = "contiguous") -> Tensor:
    return laid_out(data.astype(dtype.numpy), device, layout)


def expected_of(data: np.ndarray, dtype: DType) -> np.ndarray:
    return f64(data.astype(dtype.numpy))


RESHAPES = [
    (SHAPE, (6, 4), (6, 4)),
    (SHAPE, (-1,), (24,)),
    (SHAPE, (0, -1), (2, 12)),
    (SHAPE, (0, 3, 0), (2, 3, 4)),
    (SHAPE, (4, -1, 2), (4, 3, 2)),
    (SHAPE, (1, 24, 1), (1, 24, 1)),
    ((2, 0, 3), (0, 5), (0, 5)),
    ((2, 0, 3), (-1, 3), (0, 3)),
    ((1,), (), ()),
    ((), (1, 1), (1, 1)),
]


@pytest.mark.parametrize(("shape", "target", "result"), RESHAPES, ids=[f"{a}->{b}" for a, b, _ in RESHAPES])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_reshape(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    shape: tuple[int, ...],
    target: tuple[int, ...],
    result: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, dtype)
    for layout in LAYOUTS if a.ndim and a.size else ["contiguous"]:
        check(laid_out(a, device, layout).reshape(list(target)), f64(a).reshape(result), dtype)


@pytest.mark.parametrize(
    ("start", "end", "result"),
    [(0, -1, (24,)), (1, 2, (2, 12)), (0, 1, (6, 4)), (-2, -1, (2, 12)), (1, 1, SHAPE), (2, 2, SHAPE)],
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_flatten(
    device: Device, data: np.ndarray, dtype: DType, start: int, end: int, result: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    check(
        tensor_of(data, device, dtype, "swapped").flatten(start, end),
        expected_of(data, dtype).reshape(result),
        dtype,
    )


def test_flatten_defaults_and_rank_0(device: Device, data: np.ndarray) -> None:
    check(tensor_of(data, device, DType.F32).flatten(), expected_of(data, DType.F32).reshape(-1), DType.F32)
    check(Tensor.from_data(2.0, device, DType.F32).flatten(), [2.0], DType.F32)


@pytest.mark.parametrize("dim", [0, 1, 3, -1, -4])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unsqueeze_dim(device: Device, data: np.ndarray, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    check(
        tensor_of(data, device, dtype, "flipped").unsqueeze_dim(dim),
        np.expand_dims(expected_of(data, dtype), dim),
        dtype,
    )


@pytest.mark.parametrize(
    ("dims", "result"),
    [([0], (1, 2, 3, 4)), ([0, -1], (1, 2, 3, 4, 1)), ([1, 2], (2, 1, 1, 3, 4)), ([], SHAPE)],
)
def test_unsqueeze_dims(device: Device, data: np.ndarray, dims: list[int], result: tuple[int, ...]) -> None:
    check(
        tensor_of(data, device, DType.F32).unsqueeze_dims(dims),
        expected_of(data, DType.F32).reshape(result),
        DType.F32,
    )


@pytest.mark.parametrize("rank", [3, 4, 6])
def test_unsqueeze_to_a_rank(device: Device, data: np.ndarray, rank: int) -> None:
    expected = expected_of(data, DType.F32).reshape((1,) * (rank - 3) + SHAPE)
    check(tensor_of(data, device, DType.F32).unsqueeze(rank=rank), expected, DType.F32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_squeeze(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (1, 3, 1, 2, 1), dtype)
    x = f64(a)
    tensor = make(a, device)
    check(tensor.squeeze_dim(0), x.reshape(3, 1, 2, 1), dtype)
    check(tensor.squeeze_dim(-1), x.reshape(1, 3, 1, 2), dtype)
    check(tensor.squeeze_dims([0, 2]), x.reshape(3, 2, 1), dtype)
    check(tensor.squeeze_dims([-1, 0]), x.reshape(3, 1, 2), dtype)
    check(tensor.squeeze(), x.reshape(3, 2), dtype)
    check(Tensor.ones([1, 1], device, dtype).squeeze(), np.float64(1.0), dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("dim1", "dim2"), [(0, 2), (-1, 0), (1, 2), (1, 1)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_swap_dims(device: Device, data: np.ndarray, dtype: DType, dim1: int, dim2: int, layout: str) -> None:
    require_dtype(device, dtype)
    result = tensor_of(data, device, dtype, layout).swap_dims(dim1, dim2)
    check(result, np.swapaxes(expected_of(data, dtype), dim1, dim2), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_transpose_swaps_the_last_two_dims(device: Device, data: np.ndarray, dtype: DType) -> None:
    require_dtype(device, dtype)
    expected = np.swapaxes(expected_of(data, dtype), -1, -2)
    check(tensor_of(data, device, dtype).transpose(), expected, dtype)
    check(tensor_of(data, device, dtype).T, expected, dtype)
    check(tensor_of(data, device, dtype).T.T, expected_of(data, dtype), dtype)
    vector = make(np.array([1.0, 2.0]), device, dtype)
    check(vector.transpose(), [1.0, 2.0], dtype)


@pytest.mark.parametrize("axes", [(2, 0, 1), (0, 1, 2), (1, 0, 2), (-1, -2, -3), (2, 1, 0)], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_permute(device: Device, data: np.ndarray, dtype: DType, axes: tuple[int, ...]) -> None:
    require_dtype(device, dtype)
    check(
        tensor_of(data, device, dtype, "strided").permute(list(axes)),
        np.transpose(expected_of(data, dtype), axes),
        dtype,
    )


@pytest.mark.parametrize(
    ("source", "destination"), [(0, -1), (2, 0), ([0, 1], [2, 0]), ([0, 2], [1, 0]), (-1, -1)], ids=str
)
def test_movedim(device: Device, data: np.ndarray, source: object, destination: object) -> None:
    expected = np.moveaxis(expected_of(data, DType.F32), source, destination)  # type: ignore[arg-type]
    check(tensor_of(data, device, DType.F32).movedim(source, destination), expected, DType.F32)  # type: ignore[arg-type]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("axes", [(0,), (1, 2), (-1,), (0, 1, 2), ()], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_flip(device: Device, data: np.ndarray, dtype: DType, axes: tuple[int, ...], layout: str) -> None:
    require_dtype(device, dtype)
    expected = np.flip(expected_of(data, dtype), axes) if axes else expected_of(data, dtype)
    check(tensor_of(data, device, dtype, layout).flip(list(axes)), expected, dtype)


EXPANDS = [
    ((3, 1), (3, 4)),
    ((3, 1), (2, -1, 4)),
    ((1,), (2, 3, 1)),
    ((1, 1), (0, 5)),
    ((2, 3), (2, 3)),
    ((), (2, 2)),
]


@pytest.mark.parametrize(("shape", "target"), EXPANDS, ids=[f"{a}->{b}" for a, b in EXPANDS])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_expand(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...], target: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, dtype)
    resolved = tuple(s if t == -1 else t for s, t in zip((1,) * (len(target) - len(shape)) + shape, target))
    expected = np.broadcast_to(f64(a), resolved)
    check(make(a, device).expand(list(target)), expected, dtype)
    check(make(a, device).broadcast_to(list(target)), expected, dtype)


def test_expanded_tensors_feed_other_ops(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (3, 1), DType.F32)
    expanded = make(a, device).expand([3, 4])
    check(expanded + 1.0, np.broadcast_to(f64(a), (3, 4)) + 1.0, DType.F32)
    check(expanded.sum_dim(1), f64(a) * 4, DType.F32)
    check(expanded.reshape([12]), np.broadcast_to(f64(a), (3, 4)).reshape(12), DType.F32)


@pytest.mark.parametrize(("dim", "times"), [(0, 3), (1, 2), (-1, 2), (2, 1), (0, 0)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_repeat_dim(device: Device, data: np.ndarray, dtype: DType, dim: int, times: int) -> None:
    require_dtype(device, dtype)
    reps = [1, 1, 1]
    reps[dim] = times
    check(
        tensor_of(data, device, dtype, "swapped").repeat_dim(dim, times),
        np.tile(expected_of(data, dtype), reps),
        dtype,
    )


@pytest.mark.parametrize("sizes", [(2, 1, 3), (1, 1, 1), (1, 2, 0)], ids=str)
def test_repeat(device: Device, data: np.ndarray, sizes: tuple[int, ...]) -> None:
    check(
        tensor_of(data, device, DType.F32).repeat(list(sizes)),
        np.tile(expected_of(data, DType.F32), sizes),
        DType.F32,
    )


@pytest.mark.parametrize(
    ("dim", "start", "length"), [(0, 1, 1), (1, 0, 2), (-1, 1, 3), (2, -2, 2), (1, 3, 0)]
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_narrow(device: Device, data: np.ndarray, dtype: DType, dim: int, start: int, length: int) -> None:
    require_dtype(device, dtype)
    size = SHAPE[dim]
    first = start + size if start < 0 else start
    expected = np.take(expected_of(data, dtype), range(first, first + length), axis=dim)
    check(tensor_of(data, device, dtype, "flipped").narrow(dim, start, length), expected, dtype)


CHUNKS = [
    (10, 4, [3, 3, 3, 1]),
    (6, 4, [2, 2, 2]),
    (6, 3, [2, 2, 2]),
    (2, 5, [1, 1]),
    (7, 1, [7]),
    (0, 3, [0]),
]


@pytest.mark.parametrize(("size", "chunks", "sizes"), CHUNKS, ids=[f"{s}/{c}" for s, c, _ in CHUNKS])
def test_chunk(device: Device, rng: np.random.Generator, size: int, chunks: int, sizes: list[int]) -> None:
    a = random_array(rng, (2, size), DType.F32)
    pieces = make(a, device).chunk(chunks, 1)
    assert [p.dims()[1] for p in pieces] == sizes
    starts = np.cumsum([0, *sizes])
    for piece, start, length in zip(pieces, starts, sizes):
        check(piece, f64(a)[:, start : start + length], DType.F32)


@pytest.mark.parametrize(("size", "split", "sizes"), [(10, 3, [3, 3, 3, 1]), (6, 2, [2, 2, 2]), (2, 5, [2])])
def test_split(device: Device, rng: np.random.Generator, size: int, split: int, sizes: list[int]) -> None:
    a = random_array(rng, (size, 2), DType.F32)
    pieces = make(a, device).split(split, 0)
    assert [p.dims()[0] for p in pieces] == sizes
    check(Tensor.cat(pieces, 0), f64(a), DType.F32)
    check(pieces[-1], f64(a)[size - sizes[-1] :], DType.F32)


def test_split_with_sizes(device: Device, data: np.ndarray) -> None:
    pieces = tensor_of(data, device, DType.F32).split_with_sizes([1, 0, 3], -1)
    assert [p.dims() for p in pieces] == [[2, 3, 1], [2, 3, 0], [2, 3, 3]]
    check(pieces[2], expected_of(data, DType.F32)[..., 1:], DType.F32)


UNFOLDS = [(0, 1, 1), (1, 2, 1), (2, 2, 2), (2, 3, 1), (-1, 4, 3), (1, 1, 2)]


@pytest.mark.parametrize(
    ("dim", "size", "step"), UNFOLDS, ids=[f"dim{d}-size{s}-step{t}" for d, s, t in UNFOLDS]
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unfold(device: Device, data: np.ndarray, dtype: DType, dim: int, size: int, step: int) -> None:
    require_dtype(device, dtype)
    windows = sliding_window_view(expected_of(data, dtype), size, axis=dim)
    index = [slice(None)] * windows.ndim
    index[dim % len(SHAPE)] = slice(None, None, step)
    result = tensor_of(data, device, dtype, "swapped").unfold(dim, size, step)
    check(result, windows[tuple(index)], dtype)


def test_unfold_windows_are_the_last_dim(device: Device) -> None:
    result = Tensor.arange(7, device=device).float().unfold(0, 3, 2)
    check(result, [[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0]], device.backend.float_dtype)


@pytest.mark.parametrize("diagonal", [-1, 0, 1, 2])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 3)], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_tril_and_triu(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...], diagonal: int
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, dtype)
    check(make(a, device).tril(diagonal), np.tril(f64(a), diagonal), dtype)
    check(make(a, device).triu(diagonal), np.triu(f64(a), diagonal), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_layout_ops_chain(device: Device, data: np.ndarray, layout: str) -> None:
    result = (
        tensor_of(data, device, DType.F32, layout).permute([2, 0, 1]).flip([1])[1:, :, ::2].reshape([-1, 2])
    )
    expected = np.flip(np.transpose(expected_of(data, DType.F32), (2, 0, 1)), 1)[1:, :, ::2].reshape(-1, 2)
    check(result, expected, DType.F32)
    check(result * 2.0 + 1.0, expected * 2.0 + 1.0, DType.F32)
