"""Grid sampling (``module.grid_sample_2d``, kernel ``float_grid_sample_2d``) and ``module.affine_grid_2d``:
values against a NumPy float64 reference computed point by point from the definitions, the interface's
default run unbound, every mode / padding mode / corner alignment, PyTorch cross-checks, and errors."""

from __future__ import annotations

import itertools
import math
from typing import Any, Literal

import numpy as np
import pytest

from burn_backend import Device, DType, FloatTensorOps, GridSampleOptions, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module._reference import Array

WIDE = [DType.F64, DType.F32]
MODES: tuple[Literal["bilinear", "nearest"], ...] = ("bilinear", "nearest")
PADDINGS: tuple[Literal["zeros", "border", "reflection"], ...] = ("zeros", "border", "reflection")
OPTIONS = [
    GridSampleOptions(mode, padding, align)
    for mode, padding, align in itertools.product(MODES, PADDINGS, [False, True])
]

# (x shape, grid shape): wider than tall, a single row, a single column, a single sample
SHAPES = [
    ((2, 3, 5, 6), (2, 4, 7, 2)),
    ((1, 2, 1, 4), (1, 3, 2, 2)),
    ((2, 1, 3, 1), (2, 2, 3, 2)),
    ((1, 2, 1, 1), (1, 2, 2, 2)),
]


def options_id(options: GridSampleOptions) -> str:
    return f"{options.mode}-{options.padding_mode}{'-aligned' if options.align_corners else ''}"


def f64(array: Array) -> Array:
    return array.astype(np.float64)


# -- the reference ---------------------------------------------------------------------------------------
def mirror(v: float, low: float, high: float) -> float:
    """``v`` folded into ``[low, high]`` by reflecting at both ends, as often as needed."""
    if high == low:
        return low
    period = 2 * (high - low)
    t = (v - low) % period
    return low + (t if t <= high - low else period - t)


def source(g: float, size: int, options: GridSampleOptions) -> float:
    """A normalized coordinate as a (fractional) sample index, after the padding mode."""
    if options.align_corners:
        v = (g + 1) / 2 * (size - 1)  # -1 and 1: the centres of the first and last samples
    else:
        v = ((g + 1) * size - 1) / 2  # -1 and 1: the outer edges of the first and last samples
    if options.padding_mode == "zeros":
        return v
    if options.padding_mode == "reflection":
        v = mirror(v, 0, size - 1) if options.align_corners else mirror(v, -0.5, size - 0.5)
    if math.isnan(v):  # a NaN coordinate, or an infinite one reflected: clamped to 0, as PyTorch does
        return 0.0
    return min(max(v, 0.0), size - 1.0)


def grid_sample(x: Array, grid: Array, options: GridSampleOptions) -> Array:
    """Point by point: each output reads its nearest sample (halves to even), or the four around it with
    bilinear weights; samples outside the input read zero."""
    n, c, h, w = x.shape
    h_out, w_out = grid.shape[1:3]
    out = np.zeros((n, c, h_out, w_out))
    for b, i, j in itertools.product(range(n), range(h_out), range(w_out)):
        sx = source(float(grid[b, i, j, 0]), w, options)
        sy = source(float(grid[b, i, j, 1]), h, options)
        if options.mode == "nearest":
            taps = [(round(sy), round(sx), 1.0)]  # Python's round: halves to even
        else:
            x0, y0 = math.floor(sx), math.floor(sy)
            fx, fy = sx - x0, sy - y0
            taps = [
                (y0, x0, (1 - fx) * (1 - fy)),
                (y0, x0 + 1, fx * (1 - fy)),
                (y0 + 1, x0, (1 - fx) * fy),
                (y0 + 1, x0 + 1, fx * fy),
            ]
        for yy, xx, weight in taps:
            if 0 <= yy < h and 0 <= xx < w:
                out[b, :, i, j] += weight * x[b, :, yy, xx]
    return out


def centres(steps: int, align_corners: bool) -> Array:
    """The normalized centres of ``steps`` samples: ``(2 i + 1) / steps - 1``, or ``[-1, 1]`` evenly."""
    if steps == 1:
        return np.zeros(1)
    i = np.arange(steps)
    return -1 + 2 * i / (steps - 1) if align_corners else (2 * i + 1) / steps - 1


def affine_grid(theta: Array, size: tuple[int, int, int, int], align_corners: bool) -> Array:
    n, _, h, w = size
    grid = np.zeros((n, h, w, 2))
    xs, ys = centres(w, align_corners), centres(h, align_corners)
    for b, i, j in itertools.product(range(n), range(h), range(w)):
        grid[b, i, j] = theta[b] @ np.array([xs[j], ys[i], 1.0])
    return grid


def inputs(rng: np.random.Generator, shapes: tuple[Any, ...], dtype: DType) -> tuple[Array, Array]:
    x_shape, grid_shape = shapes
    # the grid reaches past [-1, 1] so that every padding mode has points outside to handle
    return random_array(rng, x_shape, dtype), random_array(rng, grid_shape, dtype, -1.7, 1.7)


# -- grid_sample_2d --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("options", OPTIONS, ids=options_id)
def test_grid_sample_2d(
    device: Device, rng: np.random.Generator, options: GridSampleOptions, dtype: DType
) -> None:
    for shapes in SHAPES:
        x, grid = inputs(rng, shapes, dtype)
        result = module.grid_sample_2d(make(x, device), make(grid, device), options)
        check(result, grid_sample(f64(x), f64(grid), options), dtype, scale=4)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("options", OPTIONS, ids=options_id)
def test_grid_sample_2d_default(
    device: Device, rng: np.random.Generator, options: GridSampleOptions, dtype: DType
) -> None:
    for shapes in SHAPES:
        x, grid = inputs(rng, shapes, dtype)
        primitive = FloatTensorOps.float_grid_sample_2d(
            device.backend, make(x, device)._primitive, make(grid, device)._primitive, options
        )
        check(
            Tensor.from_primitive(primitive, device), grid_sample(f64(x), f64(grid), options), dtype, scale=4
        )


def test_grid_sample_2d_defaults_to_bilinear_zeros(device: Device, rng: np.random.Generator) -> None:
    x, grid = inputs(rng, SHAPES[0], DType.F32)
    expected = grid_sample(f64(x), f64(grid), GridSampleOptions("bilinear", "zeros", False))
    check(module.grid_sample_2d(make(x, device), make(grid, device)), expected, DType.F32, scale=4)


def test_grid_sample_2d_at_the_sample_centres_is_the_identity(
    device: Device, rng: np.random.Generator
) -> None:
    x = random_array(rng, (2, 3, 4, 5), DType.F64)
    for align in (False, True):
        xs, ys = np.meshgrid(centres(5, align), centres(4, align))
        grid = np.broadcast_to(np.stack([xs, ys], axis=-1), (2, 4, 5, 2))
        for mode, padding in itertools.product(MODES, PADDINGS):
            options = GridSampleOptions(mode, padding, align)
            check(module.grid_sample_2d(make(x, device), make(grid, device), options), x, DType.F64)


def test_grid_sample_2d_rounds_halves_to_even(device: Device) -> None:
    x = np.arange(4.0).reshape(1, 1, 1, 4)
    # over 4 samples, corners not aligned, x = k / 4 - 1 (exact) is sample (k - 1) / 2: a half for even k
    gx = np.arange(9) / 4 - 1
    grid = np.stack([gx, np.zeros(9)], axis=-1).reshape(1, 1, 9, 2)
    options = GridSampleOptions("nearest", "zeros", False)
    expected = np.array([0, 0, 0, 1, 2, 2, 2, 3, 0], dtype=np.float64).reshape(1, 1, 1, 9)
    check(module.grid_sample_2d(make(x, device), make(grid, device), options), expected, DType.F64)
    default = FloatTensorOps.float_grid_sample_2d(
        device.backend, make(x, device)._primitive, make(grid, device)._primitive, options
    )
    check(Tensor.from_primitive(default, device), expected, DType.F64)
    check(Tensor.from_primitive(default, device), grid_sample(x, grid, options), DType.F64)


def test_grid_sample_2d_far_outside(device: Device) -> None:
    x = np.arange(1.0, 7.0).reshape(1, 1, 2, 3)
    grid = np.array([[[[-40.0, 0.0], [55.0, 0.0], [0.0, 1e6], [-1e30, -1e30]]]])
    zeros = module.grid_sample_2d(make(x, device), make(grid, device))
    check(zeros, np.zeros((1, 1, 1, 4)), DType.F64)
    border = module.grid_sample_2d(
        make(x, device), make(grid, device), GridSampleOptions(padding_mode="border")
    )
    check(border, np.array([[[[2.5, 4.5, 5.0, 1.0]]]]), DType.F64)


NON_FINITE_X = np.arange(1.0, 7.0).reshape(1, 1, 2, 3)
NON_FINITE_GRID = np.array([[[[np.nan, 0.0], [0.0, np.inf], [-np.inf, 0.3], [0.2, 0.1]]]])


def test_grid_sample_2d_non_finite_points(device: Device) -> None:
    x, grid = NON_FINITE_X, NON_FINITE_GRID
    for options in OPTIONS:
        result = module.grid_sample_2d(make(x, device), make(grid, device), options)
        default = FloatTensorOps.float_grid_sample_2d(
            device.backend, make(x, device)._primitive, make(grid, device)._primitive, options
        )
        check(Tensor.from_primitive(default, device), result.to_numpy(), DType.F64)
        if options.padding_mode != "zeros":  # clamped: NaN becomes 0 (the reference does the same)
            check(result, grid_sample(x, grid, options), DType.F64)
            continue
        # with zeros padding a non-finite point reads nothing: 0 when nearest, NaN weights when bilinear
        head = result.to_numpy()[..., :3]
        if options.mode == "nearest":
            np.testing.assert_array_equal(head, 0.0)
        else:
            assert np.isnan(head).all()
        check(result.slice([0, 0, 0, slice(3, 4)]), grid_sample(x, grid[:, :, 3:], options), DType.F64)


def test_grid_sample_2d_non_finite_points_match_torch(device: Device) -> None:
    torch = pytest.importorskip("torch")
    x, grid = NON_FINITE_X, NON_FINITE_GRID
    for options in OPTIONS:
        expected = torch.nn.functional.grid_sample(
            torch.tensor(x), torch.tensor(grid), options.mode, options.padding_mode, options.align_corners
        )
        result = module.grid_sample_2d(make(x, device), make(grid, device), options)
        np.testing.assert_allclose(result.to_numpy(), expected.numpy(), rtol=1e-12, atol=0)


def test_grid_sample_2d_low_precision(device: Device, rng: np.random.Generator) -> None:
    for dtype in (DType.F16, DType.BF16):
        require_dtype(device, dtype)
        x, grid = inputs(rng, SHAPES[0], dtype)
        for options in (OPTIONS[0], OPTIONS[5]):  # bilinear zeros; bilinear reflection aligned
            result = module.grid_sample_2d(make(x, device), make(grid, device), options)
            check(result, grid_sample(f64(x), f64(grid), options), dtype, scale=4)


def test_grid_sample_2d_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    for options in OPTIONS:
        for shapes in SHAPES:
            x, grid = inputs(rng, shapes, DType.F64)
            expected = torch.nn.functional.grid_sample(
                torch.tensor(x),
                torch.tensor(grid),
                options.mode,
                options.padding_mode,
                options.align_corners,
            )
            result = module.grid_sample_2d(make(x, device), make(grid, device), options)
            check(result, expected.numpy(), DType.F64)


def test_grid_sample_2d_errors(device: Device) -> None:
    x = make(np.zeros((2, 3, 4, 5)), device)
    grid = make(np.zeros((2, 6, 7, 2)), device)
    with pytest.raises(ValueError, match=r"grid_sample_2d: x must have rank 4"):
        module.grid_sample_2d(make(np.zeros((3, 4, 5)), device), grid)
    with pytest.raises(ValueError, match=r"grid_sample_2d: grid must have rank 4"):
        module.grid_sample_2d(x, make(np.zeros((2, 6, 2)), device))
    with pytest.raises(
        ValueError, match=r"grid_sample_2d: grid must have shape \[2, height_out, width_out, 2\]"
    ):
        module.grid_sample_2d(x, make(np.zeros((2, 6, 7, 3)), device))
    with pytest.raises(ValueError, match=r"grid_sample_2d: grid must have shape \[2,"):
        module.grid_sample_2d(x, make(np.zeros((1, 6, 7, 2)), device))
    with pytest.raises(TypeError, match=r"grid_sample_2d: grid has dtype f32, x has f64"):
        module.grid_sample_2d(x, make(np.zeros((2, 6, 7, 2), dtype=np.float32), device))
    with pytest.raises(TypeError, match=r"grid_sample_2d: grid must be a Float tensor"):
        module.grid_sample_2d(x, make(np.zeros((2, 6, 7, 2), dtype=np.int64), device))
    with pytest.raises(ValueError, match=r"grid_sample_2d: x must not be empty along its spatial dims"):
        module.grid_sample_2d(make(np.zeros((2, 3, 0, 5)), device), grid)
    with pytest.raises(TypeError, match=r"grid_sample_2d: options must be GridSampleOptions or None"):
        module.grid_sample_2d(x, grid, "bilinear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"GridSampleOptions: unknown mode 'bicubic'"):
        GridSampleOptions("bicubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"GridSampleOptions: unknown padding_mode 'wrap'"):
        GridSampleOptions(padding_mode="wrap")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"GridSampleOptions: align_corners must be a bool"):
        GridSampleOptions(align_corners=1)  # type: ignore[arg-type]


# -- affine_grid_2d --------------------------------------------------------------------------------------
AFFINE_SIZES = [(2, 3, 4, 5), (1, 1, 1, 3), (2, 2, 3, 1), (1, 1, 1, 1)]


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("align", [False, True], ids=["edges", "aligned"])
def test_affine_grid_2d(device: Device, rng: np.random.Generator, align: bool, dtype: DType) -> None:
    for size in AFFINE_SIZES:
        theta = random_array(rng, (size[0], 2, 3), dtype)
        result = module.affine_grid_2d(make(theta, device), size, align)
        check(result, affine_grid(f64(theta), size, align), dtype, scale=4)


def test_affine_grid_2d_then_grid_sample_2d(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (2, 3, 4, 6), DType.F64)
    identity = np.broadcast_to(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), (2, 2, 3))
    for align in (False, True):
        grid = module.affine_grid_2d(make(identity, device), [2, 3, 4, 6], align_corners=align)
        same = module.grid_sample_2d(make(x, device), grid, GridSampleOptions(align_corners=align))
        check(same, x, DType.F64)
    flip = np.broadcast_to(np.array([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), (2, 2, 3))  # mirror left-right
    grid = module.affine_grid_2d(make(flip, device), (2, 3, 4, 6))
    check(module.grid_sample_2d(make(x, device), grid), x[..., ::-1], DType.F64)


def test_affine_grid_2d_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    for size in AFFINE_SIZES:
        for align in (False, True) if min(size[2:]) > 1 else (False,):  # PyTorch warns on unit sizes
            theta = random_array(rng, (size[0], 2, 3), DType.F64)
            expected = torch.nn.functional.affine_grid(torch.tensor(theta), list(size), align)
            check(module.affine_grid_2d(make(theta, device), size, align), expected.numpy(), DType.F64)


def test_affine_grid_2d_errors(device: Device) -> None:
    theta = make(np.zeros((2, 2, 3)), device)
    with pytest.raises(ValueError, match=r"affine_grid_2d: theta must have rank 3"):
        module.affine_grid_2d(make(np.zeros((2, 3)), device), (1, 1, 2, 2))
    with pytest.raises(
        ValueError, match=r"affine_grid_2d: theta must have shape \[batch, 2, 3\] = \[3, 2, 3\]"
    ):
        module.affine_grid_2d(theta, (3, 1, 2, 2))
    with pytest.raises(ValueError, match=r"affine_grid_2d: theta must have shape"):
        module.affine_grid_2d(make(np.zeros((2, 3, 3)), device), (2, 1, 2, 2))
    with pytest.raises(TypeError, match=r"affine_grid_2d: size must be 4 ints"):
        module.affine_grid_2d(theta, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"affine_grid_2d: size must be an int or 4 ints"):
        module.affine_grid_2d(theta, (2, 2, 2))
    with pytest.raises(ValueError, match=r"affine_grid_2d: size must be >= 1"):
        module.affine_grid_2d(theta, (2, 1, 0, 2))
    with pytest.raises(TypeError, match=r"affine_grid_2d: theta must be a Float tensor"):
        module.affine_grid_2d(make(np.zeros((2, 2, 3), dtype=np.int64), device), (2, 1, 2, 2))
    with pytest.raises(TypeError, match=r"affine_grid_2d: align_corners must be a bool"):
        module.affine_grid_2d(theta, (2, 1, 2, 2), 1)  # type: ignore[arg-type]
