"""``module.fold4d`` (kernel ``fold4d``, col2im, the inverse of ``unfold4d``): values against a NumPy
float64 reference that adds each column value at its place, window by window, the interface's default
run unbound, the round trip through ``unfold4d``, PyTorch cross-checks (``F.fold``), and the errors."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, ModuleOps, Tensor, UnfoldOptions, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref
from burn_backend.testing.module._reference import Array

WIDE = [DType.F64, DType.F32]

# (batch, channels, output size, kernel, stride, padding, dilation)
CASES = [
    (2, 3, (5, 5), (2, 2), (1, 1), (0, 0), (1, 1)),  # overlapping windows
    (1, 2, (7, 6), (3, 2), (2, 1), (1, 1), (1, 2)),  # everything at once
    (2, 1, (6, 6), (2, 3), (2, 3), (0, 0), (1, 1)),  # disjoint windows tiling the output
    (1, 2, (7, 7), (2, 2), (3, 3), (0, 0), (1, 1)),  # gaps no window covers
    (2, 2, (8, 9), (3, 3), (3, 2), (2, 1), (2, 1)),  # padding wider than a stride
    (1, 3, (4, 5), (1, 1), (1, 1), (0, 0), (1, 1)),  # a 1 x 1 kernel: a reshape
    (1, 1, (3, 4), (3, 4), (1, 1), (0, 0), (1, 1)),  # one window
]


def case_id(case: tuple[Any, ...]) -> str:
    b, c, out, k, s, p, d = case
    return f"b{b}-c{c}-out{list(out)}-k{list(k)}-s{list(s)}-p{list(p)}-d{list(d)}"


def windows(case: tuple[Any, ...]) -> tuple[int, int]:
    _, _, out, k, s, p, d = case
    h, w = ((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, ss, pp, dd in zip(out, k, s, p, d))
    return h, w


def columns(rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> Array:
    b, c, _, k, *_ = case
    h, w = windows(case)
    return random_array(rng, (b, c * k[0] * k[1], h * w), dtype)


def fold(cols: Array, case: tuple[Any, ...]) -> Array:
    """Window by window: column ``(channel, i, j)`` of window ``(y, x)`` adds to the sample
    ``(y * stride + i * dilation, x * stride + j * dilation)`` of the padded output, then the padding goes."""
    b, c, out, k, s, p, d = case
    h, w = windows(case)
    padded = np.zeros((b, c, out[0] + 2 * p[0], out[1] + 2 * p[1]))
    values = cols.astype(np.float64).reshape(b, c, k[0], k[1], h, w)
    for i, j, y, x in itertools.product(range(k[0]), range(k[1]), range(h), range(w)):
        padded[:, :, y * s[0] + i * d[0], x * s[1] + j * d[1]] += values[:, :, i, j, y, x]
    result: Array = padded[:, :, p[0] : p[0] + out[0], p[1] : p[1] + out[1]]
    return result


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fold4d(device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType) -> None:
    _, _, out, k, s, p, d = case
    cols = columns(rng, case, dtype)
    result = module.fold4d(make(cols, device), out, k, UnfoldOptions(s, p, d))
    check(result, fold(cols, case), dtype, scale=4)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fold4d_default(
    device: Device, rng: np.random.Generator, case: tuple[Any, ...], dtype: DType
) -> None:
    _, _, out, k, s, p, d = case
    cols = columns(rng, case, dtype)
    result = ModuleOps.fold4d(device.backend, make(cols, device)._primitive, out, k, UnfoldOptions(s, p, d))
    check(Tensor.from_primitive(result, device), fold(cols, case), dtype, scale=4)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fold4d_of_unfold4d(device: Device, rng: np.random.Generator, case: tuple[Any, ...]) -> None:
    b, c, out, k, s, p, d = case
    x = random_array(rng, (b, c, *out), DType.F64)
    options = UnfoldOptions(s, p, d)
    # every sample comes back once per window (and kernel offset) that covers it
    covers = fold(np.ones(columns(rng, case, DType.F64).shape), case)
    unfolded = module.unfold4d(make(x, device), k, options)
    check(module.fold4d(unfolded, out, k, options), x * covers, DType.F64)
    assert covers.min() >= 0
    cols = columns(rng, case, DType.F64)  # and fold is unfold's adjoint: <unfold(x), cols> = <x, fold(cols)>
    ref.check_adjoint(
        ref.unfold(x, k, s, p, d), cols, x, module.fold4d(make(cols, device), out, k, options), 1e-12
    )


def test_fold4d_defaults_and_low_precision(device: Device, rng: np.random.Generator) -> None:
    cols = random_array(rng, (2, 8, 16), DType.F32)  # ints for sizes; stride 1, no padding, no dilation
    expected = fold(cols, (2, 2, (5, 5), (2, 2), (1, 1), (0, 0), (1, 1)))
    check(module.fold4d(make(cols, device), 5, 2), expected, DType.F32)
    ones = module.fold4d(make(np.ones((1, 4, 4)), device), (3, 3), 2)
    check(ones, np.array([[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]], dtype=np.float64), DType.F64)
    case = CASES[1]
    for dtype in (DType.F16, DType.BF16):
        require_dtype(device, dtype)
        low = columns(rng, case, dtype)
        _, _, out, k, s, p, d = case
        check(
            module.fold4d(make(low, device), out, k, UnfoldOptions(s, p, d)), fold(low, case), dtype, scale=4
        )


def test_fold4d_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    for case in CASES:
        _, _, out, k, s, p, d = case
        cols = columns(rng, case, DType.F64)
        expected = torch.nn.functional.fold(torch.tensor(cols), out, k, d, p, s)
        check(module.fold4d(make(cols, device), out, k, UnfoldOptions(s, p, d)), expected.numpy(), DType.F64)


def test_fold4d_errors(device: Device) -> None:
    cols = make(np.zeros((1, 8, 16)), device)
    with pytest.raises(
        ValueError, match=r"fold4d: x must have rank 3 \(\[batch, channels \* kh \* kw, windows\]\)"
    ):
        module.fold4d(make(np.zeros((8, 16)), device), 5, 2)
    with pytest.raises(TypeError, match=r"fold4d: x must be a Float tensor"):
        module.fold4d(make(np.zeros((1, 8, 16), dtype=np.int64), device), 5, 2)
    with pytest.raises(
        ValueError, match=r"fold4d: dim 1 of x \(shape \[1, 8, 16\]\) must be a positive multiple of"
    ):
        module.fold4d(cols, 5, 3)
    with pytest.raises(
        ValueError, match=r"fold4d: x of shape \[1, 8, 16\] has 16 windows, but an output of size"
    ):
        module.fold4d(cols, 6, 2)
    with pytest.raises(ValueError, match=r"fold4d: the kernel \[2, 2\] \(dilation \[4, 4\]\) is larger than"):
        module.fold4d(cols, 3, 2, UnfoldOptions(dilation=(4, 4)))
    with pytest.raises(ValueError, match=r"fold4d: output_size must be >= 1"):
        module.fold4d(cols, (0, 5), 2)
    with pytest.raises(ValueError, match=r"fold4d: stride must be >= 1"):
        module.fold4d(cols, 5, 2, UnfoldOptions(stride=(0, 1)))
    with pytest.raises(ValueError, match=r"fold4d: kernel_size must be an int or 2 ints"):
        module.fold4d(cols, 5, (2, 2, 2))
