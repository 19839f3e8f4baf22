"""``module.interpolate`` (nearest, bilinear and bicubic with aligned corners) and its backward kernel:
values against NumPy float64 references, the backward kernel as the forward's adjoint, PyTorch
cross-checks where installed, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, InterpolateMode, InterpolateOptions, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref
from burn_backend.testing.module._reference import Array, check_adjoint, kernel

MODES = list(InterpolateMode)
SIZES = [
    ((2, 3, 5, 6), (10, 12)),  # exactly twice
    ((1, 2, 7, 6), (3, 4)),  # down
    ((2, 1, 4, 5), (13, 11)),  # up, not a multiple
    ((1, 2, 6, 5), (6, 5)),  # same size
    ((1, 1, 3, 4), (1, 1)),  # a single sample
    ((1, 2, 1, 1), (3, 2)),  # from a single sample
]


def f64(array: Array) -> Array:
    return array.astype(np.float64)


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize(("shape", "out"), SIZES, ids=lambda v: str(list(v)))
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_interpolate(
    device: Device,
    rng: np.random.Generator,
    mode: InterpolateMode,
    shape: tuple[int, ...],
    out: tuple[int, ...],
    dtype: DType,
) -> None:
    x = random_array(rng, shape, dtype)
    options = InterpolateOptions(mode)
    result = module.interpolate(make(x, device), out, options)
    expected = ref.interpolate(f64(x), out, mode.value)
    check(result, expected, dtype, scale=4)

    g = random_array(rng, result.dims(), dtype)
    grad = kernel(device, "interpolate_backward", make(x, device), make(g, device), out, options)
    check_adjoint(expected, f64(g), f64(x), grad, 1e-12 if dtype is DType.F64 else 1e-5)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_interpolate_matches_torch(device: Device, rng: np.random.Generator, mode: InterpolateMode) -> None:
    torch = pytest.importorskip("torch")
    for shape, out in [*SIZES, ((1, 1, 3, 7), (5, 9)), ((1, 1, 9, 10), (4, 7))]:
        x = random_array(rng, shape, DType.F64)
        tx = torch.tensor(x, requires_grad=True)
        corners = {} if mode is InterpolateMode.NEAREST else {"align_corners": True}
        y = torch.nn.functional.interpolate(tx, out, mode=mode.value, **corners)
        g = random_array(rng, tuple(y.shape), DType.F64)
        y.backward(torch.tensor(g))
        options = InterpolateOptions(mode)
        check(module.interpolate(make(x, device), out, options), y.detach().numpy(), DType.F64)
        check(
            kernel(device, "interpolate_backward", make(x, device), make(g, device), out, options),
            tx.grad.numpy(),
            DType.F64,
        )


def test_nearest_uses_pytorch_index_rule(device: Device) -> None:
    # floor(o * in / out) in single precision: 3 -> 5 reads 0, 0, 1, 1, 2
    x = np.arange(3, dtype=np.float32).reshape(1, 1, 1, 3)
    result = module.interpolate(make(x, device), (1, 5), InterpolateMode.NEAREST)
    check(result, np.array([[[[0.0, 0.0, 1.0, 1.0, 2.0]]]]), DType.F32)
    down = np.arange(7, dtype=np.float32).reshape(1, 1, 7, 1)
    check(
        module.interpolate(make(down, device), (3, 1)),
        np.array([0.0, 2.0, 4.0]).reshape(1, 1, 3, 1),
        DType.F32,
    )


def test_bilinear_aligns_corners(device: Device) -> None:
    x = np.array([[[[0.0, 3.0], [6.0, 9.0]]]], dtype=np.float32)
    result = module.interpolate(make(x, device), (3, 4), "bilinear")
    expected = np.array([[[[0.0, 1.0, 2.0, 3.0], [3.0, 4.0, 5.0, 6.0], [6.0, 7.0, 8.0, 9.0]]]])
    check(result, expected, DType.F32)


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16], ids=str)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_interpolate_low_precision(
    device: Device, rng: np.random.Generator, mode: InterpolateMode, dtype: DType
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, (1, 2, 5, 4), dtype)
    result = module.interpolate(make(x, device), (7, 6), InterpolateOptions(mode))
    check(result, ref.interpolate(f64(x), (7, 6), mode.value), dtype, scale=4)


def test_interpolate_errors(device: Device) -> None:
    x = Tensor.zeros([1, 2, 4, 4], device=device)
    with pytest.raises(ValueError, match=r"interpolate: x must have rank 4"):
        module.interpolate(Tensor.zeros([2, 4, 4], device=device), (2, 2))
    with pytest.raises(ValueError, match=r"interpolate: output_size must be >= 1"):
        module.interpolate(x, (0, 2))
    with pytest.raises(ValueError, match=r"interpolate: unknown mode 'lanczos'"):
        module.interpolate(x, 2, "lanczos")
    with pytest.raises(TypeError, match=r"interpolate: options must be InterpolateOptions"):
        module.interpolate(x, 2, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"interpolate: x must be a Float tensor"):
        module.interpolate(Tensor.zeros([1, 2, 4, 4], device=device, dtype=DType.I64), 2)
