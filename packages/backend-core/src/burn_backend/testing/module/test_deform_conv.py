"""Deformable convolution (``module.deform_conv2d``) and its backward kernel: values against a NumPy
float64 reference written from torchvision's definition (each tap's bilinear read of each output point),
gradients against central finite differences of the forward and as adjoints of its linear parts, the
interface's defaults run unbound, and the errors of the public function."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import ConvOptions, DeformConvOptions, Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref
from burn_backend.testing.module._reference import Array, check_adjoint, default, kernel


# -- reference -----------------------------------------------------------------------------------------
def bilinear(planes: Array, y: Array, x: Array) -> Array:
    """torchvision's ``bilinear_interpolate`` of ``planes [batch, channels, height, width]`` at points
    ``y``/``x`` ``[batch, 1, *points]``: zero unless ``-1 < y < height`` and ``-1 < x < width``, else the
    four samples around the point weighted by nearness, those outside the plane reading 0."""
    height, width = planes.shape[2:]
    inside = (y > -1) & (y < height) & (x > -1) & (x < width)
    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    ly, lx = y - y0, x - x0
    total = (1 - ly) * (1 - lx) * _read(planes, y0, x0)
    total += (1 - ly) * lx * _read(planes, y0, x0 + 1)
    total += ly * (1 - lx) * _read(planes, y0 + 1, x0)
    total += ly * lx * _read(planes, y0 + 1, x0 + 1)
    return np.where(inside, total, 0.0)


def _read(planes: Array, rows: Array, cols: Array) -> Array:
    batch, channels, height, width = planes.shape
    valid = (rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)
    n = np.arange(batch).reshape(batch, 1, 1, 1)
    c = np.arange(channels).reshape(1, channels, 1, 1)
    return np.where(valid, planes[n, c, np.clip(rows, 0, height - 1), np.clip(cols, 0, width - 1)], 0.0)


def deform_conv2d(
    x: Array, offset: Array, weight: Array, mask: Array | None, bias: Array | None, options: DeformConvOptions
) -> Array:
    """torchvision's ``deform_conv2d``: each offset group's read of each tap, then the grouped products."""
    batch, channels, _, _ = x.shape
    out_channels, per_group, kh, kw = weight.shape
    out_h, out_w = offset.shape[2:]
    taps = kh * kw
    per_offset_group = channels // options.offset_groups
    (sh, sw), (ph, pw), (dh, dw) = options.stride, options.padding, options.dilation
    rows = np.arange(out_h)[:, None] * sh - ph + np.zeros((1, out_w))
    cols = np.arange(out_w)[None, :] * sw - pw + np.zeros((out_h, 1))
    columns = np.zeros((batch, channels, taps, out_h, out_w))
    for g, i, j in itertools.product(range(options.offset_groups), range(kh), range(kw)):
        k = i * kw + j
        dy = offset[:, g * 2 * taps + 2 * k, None]
        dx = offset[:, g * 2 * taps + 2 * k + 1, None]
        group = slice(g * per_offset_group, (g + 1) * per_offset_group)
        value = bilinear(x[:, group], rows + i * dh + dy, cols + j * dw + dx)
        columns[:, group, k] = value if mask is None else value * mask[:, g * taps + k, None]
    per_out = out_channels // options.weight_groups
    y = np.zeros((batch, out_channels, out_h, out_w))
    for g in range(options.weight_groups):
        part = columns[:, g * per_group : (g + 1) * per_group]
        w = weight[g * per_out : (g + 1) * per_out].reshape(per_out, per_group, taps)
        y[:, g * per_out : (g + 1) * per_out] = np.einsum("bckyx,ock->boyx", part, w)
    if bias is not None:
        y += bias[None, :, None, None]
    return y


# -- cases ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Deform:
    x: tuple[int, int, int, int]
    weight: tuple[int, int, int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    weight_groups: int = 1
    offset_groups: int = 1
    mask: bool = False
    bias: bool = False
    spread: float = 2.0  # offsets are uniform in [-spread, spread]

    @property
    def options(self) -> DeformConvOptions:
        return DeformConvOptions(
            self.stride, self.padding, self.dilation, self.weight_groups, self.offset_groups
        )

    @property
    def out(self) -> tuple[int, int]:
        sizes = zip(self.x[2:], self.weight[2:], self.stride, self.padding, self.dilation)
        h, w = ((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in sizes)
        return h, w

    def __str__(self) -> str:
        return (
            f"x{list(self.x)}-w{list(self.weight)}-s{list(self.stride)}-p{list(self.padding)}"
            f"-d{list(self.dilation)}-wg{self.weight_groups}-og{self.offset_groups}"
            f"{'-mask' if self.mask else ''}{'-bias' if self.bias else ''}"
        )


CASES = [
    Deform((1, 2, 5, 5), (3, 2, 3, 3), padding=(1, 1)),
    Deform((2, 4, 4, 5), (3, 4, 3, 2), (1, 2), (1, 0), offset_groups=2, mask=True, bias=True),
    Deform((2, 4, 5, 6), (6, 2, 3, 2), (2, 1), (1, 1), (1, 2), 2, 2, mask=True, bias=True),
    Deform((1, 4, 5, 5), (4, 1, 2, 2), weight_groups=4, offset_groups=4, mask=True),  # depthwise
    Deform((2, 3, 6, 5), (2, 3, 1, 1), (2, 2), offset_groups=3, bias=True, spread=6.0),  # far outside
    Deform((1, 2, 4, 4), (2, 1, 2, 3), (1, 1), (2, 1), (2, 1), weight_groups=2, spread=1.0),
]


def inputs(rng: np.random.Generator, case: Deform, dtype: DType = DType.F64) -> list[Array | None]:
    """``[x, offset, weight, mask, bias]`` (mask and bias ``None`` where the case has none)."""
    batch = case.x[0]
    taps = case.offset_groups * case.weight[2] * case.weight[3]
    return [
        random_array(rng, case.x, dtype, -1.0, 1.0),
        random_array(rng, (batch, 2 * taps, *case.out), dtype, -case.spread, case.spread),
        random_array(rng, case.weight, dtype, -1.0, 1.0),
        random_array(rng, (batch, taps, *case.out), dtype, 0.0, 1.0) if case.mask else None,
        random_array(rng, (case.weight[0],), dtype, -1.0, 1.0) if case.bias else None,
    ]


def f64(arrays: list[Array | None]) -> list[Array | None]:
    return [None if a is None else a.astype(np.float64) for a in arrays]


def tensors(device: Device, arrays: list[Array | None]) -> list[Tensor | None]:
    return [None if a is None else make(a, device) for a in arrays]


def reference(arrays: list[Array | None], options: DeformConvOptions) -> Array:
    x, offset, weight, mask, bias = f64(arrays)
    assert x is not None
    assert offset is not None
    assert weight is not None
    return deform_conv2d(x, offset, weight, mask, bias, options)


def forward(device: Device, arrays: list[Array | None], options: DeformConvOptions) -> Tensor:
    """The public ``deform_conv2d`` on tensors of ``arrays``."""
    x, offset, weight, mask, bias = tensors(device, arrays)
    assert x is not None
    assert offset is not None
    assert weight is not None
    return module.deform_conv2d(x, offset, weight, mask, bias, options)


# -- forward -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_deform_conv2d_matches_reference(
    device: Device, rng: np.random.Generator, case: Deform, dtype: DType
) -> None:
    arrays = inputs(rng, case, dtype)
    result = forward(device, arrays, case.options)
    check(result, reference(arrays, case.options), dtype, scale=10)


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16], ids=str)
def test_deform_conv2d_low_precision(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    case = CASES[2]
    arrays = inputs(rng, case, dtype)
    result = forward(device, arrays, case.options)
    check(result, reference(arrays, case.options), dtype, scale=8)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_deform_conv2d_default_matches_reference(
    device: Device, rng: np.random.Generator, case: Deform
) -> None:
    arrays = inputs(rng, case)
    result = default(device, "deform_conv2d", *tensors(device, arrays), case.options)
    check(result, reference(arrays, case.options), DType.F64)


def test_deform_conv2d_integral_offsets(device: Device, rng: np.random.Generator) -> None:
    # reads land exactly on samples, on the border (-1, height) and beyond it: floor's edge cases
    case = Deform((1, 2, 4, 5), (2, 2, 2, 2), padding=(1, 1), offset_groups=2, mask=True)
    arrays = inputs(rng, case)
    shape = (1, 2 * 2 * 4, *case.out)
    arrays[1] = np.array(rng.integers(-5, 6, shape), dtype=np.float64)
    result = forward(device, arrays, case.options)
    check(result, reference(arrays, case.options), DType.F64)
    check(default(device, "deform_conv2d", *tensors(device, arrays), case.options), result.to_numpy())


@pytest.mark.parametrize("groups", [1, 2], ids=lambda g: f"groups{g}")
def test_deform_conv2d_without_offsets_is_conv2d(
    device: Device, rng: np.random.Generator, groups: int
) -> None:
    x = random_array(rng, (2, 4, 6, 5), DType.F64)
    w = random_array(rng, (4, 4 // groups, 3, 2), DType.F64)
    b = random_array(rng, (4,), DType.F64)
    options = DeformConvOptions((2, 1), (1, 1), (1, 2), groups, 2)
    conv = module.conv2d(make(x, device), make(w, device), make(b, device), conv_options(options))
    offset = np.zeros((2, 2 * 2 * 6, *conv.dims()[2:]))
    result = module.deform_conv2d(
        make(x, device), make(offset, device), make(w, device), None, make(b, device), options
    )
    check(result, conv.to_numpy(), DType.F64)


def conv_options(options: DeformConvOptions) -> ConvOptions:
    return ConvOptions(options.stride, options.padding, options.dilation, options.weight_groups)


def test_deform_conv2d_default_options(device: Device, rng: np.random.Generator) -> None:
    arrays = inputs(rng, Deform((1, 2, 4, 4), (3, 2, 2, 2)))
    x, offset, weight, _, _ = tensors(device, arrays)
    assert x is not None
    assert offset is not None
    assert weight is not None
    check(module.deform_conv2d(x, offset, weight), reference(arrays, DeformConvOptions()), DType.F64)


# -- backward ------------------------------------------------------------------------------------------
def directional_check(
    arrays: list[Array | None],
    options: DeformConvOptions,
    grad: Array,
    results: dict[str, Any],
    rng: np.random.Generator,
) -> None:
    """Each gradient of each result against central differences of the reference along two random
    directions."""
    step = 1e-6
    for index, base in enumerate(arrays):
        for name, grads in results.items():
            if base is None:
                assert grads[index] is None, f"{name}: input {index} is None but its gradient is not"
        if base is None:
            continue
        for _ in range(2):
            direction = rng.standard_normal(base.shape)
            plus, minus = list(arrays), list(arrays)
            plus[index], minus[index] = base + step * direction, base - step * direction
            numeric = np.sum((reference(plus, options) - reference(minus, options)) * grad) / (2 * step)
            for name, grads in results.items():
                gradient = ref.as_f64(grads[index])
                assert gradient.shape == base.shape, f"{name}: input {index} has a gradient of another shape"
                analytic = float(np.sum(gradient * direction))
                assert abs(numeric - analytic) <= 1e-6 * (1.0 + abs(analytic)), (
                    f"{name}: input {index}: finite differences give {numeric}, the gradient {analytic}"
                )


@pytest.mark.parametrize("case", CASES, ids=str)
def test_deform_conv2d_backward(device: Device, rng: np.random.Generator, case: Deform) -> None:
    arrays = inputs(rng, case)
    y = reference(arrays, case.options)
    grad = random_array(rng, y.shape, DType.F64, -1.0, 1.0)
    args = (*tensors(device, arrays), make(grad, device), case.options)
    results = {
        "kernel": kernel(device, "deform_conv2d_backward", *args),
        "default": default(device, "deform_conv2d_backward", *args),
    }
    directional_check(arrays, case.options, grad, results, rng)
    # x, weight and mask enter linearly: their gradients are adjoints of the forward without bias
    x, offset, weight, mask, bias = arrays
    assert x is not None
    assert weight is not None
    linear = reference([x, offset, weight, mask, None], case.options)
    for grads in results.values():
        assert len(grads) == 5
        check_adjoint(linear, grad, x, grads[0], 1e-12)
        check_adjoint(linear, grad, weight, grads[2], 1e-12)
        if mask is not None:
            check_adjoint(linear, grad, mask, grads[3], 1e-12)
        if bias is not None:
            check(grads[4], grad.sum(axis=(0, 2, 3)), DType.F64)


def test_deform_conv2d_backward_f32(device: Device, rng: np.random.Generator) -> None:
    case = CASES[2]
    arrays = inputs(rng, case, DType.F32)
    grad = random_array(rng, (case.x[0], case.weight[0], *case.out), DType.F32, -1.0, 1.0)
    grads32 = kernel(
        device, "deform_conv2d_backward", *tensors(device, arrays), make(grad, device), case.options
    )
    grads64 = kernel(
        device,
        "deform_conv2d_backward",
        *tensors(device, f64(arrays)),
        make(grad.astype(np.float64), device),
        case.options,
    )
    for ours, exact in zip(grads32, grads64):
        check(ours, exact.to_numpy(), DType.F32, scale=20)


# -- errors --------------------------------------------------------------------------------------------
def test_deform_conv2d_errors(device: Device) -> None:
    def t(*shape: int) -> Tensor:
        return make(np.zeros(shape), device)

    x, offset, weight = t(1, 4, 5, 5), t(1, 18, 3, 3), t(2, 4, 3, 3)
    with pytest.raises(TypeError, match="deform_conv2d: x must be a Tensor"):
        module.deform_conv2d(np.zeros((1, 4, 5, 5)), offset, weight)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="offset must be a Float tensor"):
        module.deform_conv2d(x, make(np.zeros((1, 18, 3, 3), np.int64), device), weight)
    with pytest.raises(ValueError, match=r"x must have rank 4"):
        module.deform_conv2d(t(4, 5, 5), offset, weight)
    with pytest.raises(ValueError, match=r"offset must have shape \[1, 18, 3, 3\]"):
        module.deform_conv2d(x, t(1, 18, 4, 4), weight)
    with pytest.raises(ValueError, match=r"offset must have shape \[1, 36, 3, 3\]"):
        module.deform_conv2d(x, offset, weight, options=DeformConvOptions(offset_groups=2))
    with pytest.raises(ValueError, match=r"mask must have shape \[1, 9, 3, 3\]"):
        module.deform_conv2d(x, offset, weight, mask=t(1, 18, 3, 3))
    with pytest.raises(ValueError, match="offset_groups \\(3\\) must divide the input channels"):
        module.deform_conv2d(x, t(1, 54, 3, 3), weight, options=DeformConvOptions(offset_groups=3))
    with pytest.raises(ValueError, match="weight_groups \\(3\\) must divide"):
        module.deform_conv2d(x, offset, t(3, 4, 3, 3), options=DeformConvOptions(weight_groups=3))
    with pytest.raises(ValueError, match="takes 4 channels per group"):
        module.deform_conv2d(x, offset, weight, options=DeformConvOptions(weight_groups=2))
    with pytest.raises(ValueError, match="is larger than the padded input"):
        module.deform_conv2d(x, offset, t(2, 4, 6, 3))
    with pytest.raises(ValueError, match=r"bias must have shape \[2\]"):
        module.deform_conv2d(x, offset, weight, bias=t(3))
    with pytest.raises(ValueError, match="stride must be >= 1"):
        module.deform_conv2d(x, offset, weight, options=DeformConvOptions(stride=(0, 1)))
    with pytest.raises(TypeError, match="options must be DeformConvOptions"):
        module.deform_conv2d(x, offset, weight, options=conv_options(DeformConvOptions()))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="weight has dtype"):
        module.deform_conv2d(x, offset, make(np.zeros((2, 4, 3, 3), np.float32), device))


def test_deform_conv2d_does_not_modify_inputs(device: Device, rng: np.random.Generator) -> None:
    case = CASES[2]
    arrays = inputs(rng, case)
    values = tensors(device, arrays)
    x, offset, weight, mask, bias = values
    assert x is not None
    assert offset is not None
    assert weight is not None
    y = module.deform_conv2d(x, offset, weight, mask, bias, case.options)
    kernel(device, "deform_conv2d_backward", *values, make(np.ones(y.dims()), device), case.options)
    for tensor, array in zip(values, arrays):
        if tensor is not None:
            check(tensor, array)
