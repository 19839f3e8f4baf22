"""NdArray's numba normalization kernels (``burn_ndarray._ops._norm``) against PyTorch CPU in float64:
layer, RMS (composed in float64), group and batch norm, forward and backward, on odd sizes, f32, f64 and
f16, serial and split over threads; and NdArray's ops running through them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from burn_ndarray import NdArray
from burn_ndarray._ops import _norm

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOLERANCE = {np.float64: 1e-10, np.float32: 2e-5, np.float16: 1e-2}
DTYPES = list(TOLERANCE)
EPS = 1e-5


@pytest.fixture(params=["serial", "parallel"])
def split(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test as NdArray picks for these small sizes (one chunk), and with the sets split over two
    chunks whatever the size (an odd number of sets, so the chunks differ)."""
    if request.param == "parallel":
        monkeypatch.setattr(_norm, "_chunks", lambda size, sets: min(sets, 2))
    return str(request.param)


def _t(a: Any) -> Any:
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def _close(actual: Any, expected: Any, dtype: Any) -> None:
    assert actual.dtype == np.dtype(dtype)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=0, atol=TOLERANCE[dtype] * scale)


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, offset: float = 0.0) -> Any:
    return (rng.standard_normal(shape) * 2.0 + offset).astype(dtype)


def _grads(output: Any, grad: Any, *leaves: Any) -> list[Any]:
    output.backward(torch.tensor(grad.astype(np.float64)))
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5, 7), (13, 1), (1, 129)])
def test_layer_norm(split: str, dtype: Any, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    x, grad = _data(rng, shape, dtype, offset=3.0), _data(rng, shape, dtype)
    gamma, beta = _data(rng, shape[-1:], dtype), _data(rng, shape[-1:], dtype)
    tx, tg, tb = _t(x), _t(gamma), _t(beta)
    expected = F.layer_norm(tx, shape[-1:], tg, tb, EPS)
    _close(_norm.layer_norm(x, gamma, beta, EPS), expected.detach().numpy(), dtype)
    got = _norm.layer_norm_backward(x, gamma, beta, EPS, grad)
    for actual, reference in zip(got, _grads(expected, grad, tx, tg, tb), strict=True):
        _close(actual, reference, dtype)
    plain = _norm.layer_norm_backward(x, None, None, EPS, grad)
    assert plain.gamma_grad is None
    assert plain.beta_grad is None
    tx = _t(x)
    (reference,) = _grads(F.layer_norm(tx, shape[-1:], None, None, EPS), grad, tx)
    _close(plain.x_grad, reference, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm(split: str, dtype: Any) -> None:
    rng = np.random.default_rng(2)
    shape = (5, 3, 11)
    x, grad, gamma = _data(rng, shape, dtype), _data(rng, shape, dtype), _data(rng, (11,), dtype)
    tx, tg = _t(x), _t(gamma)
    expected = tx / torch.sqrt((tx * tx).mean(-1, keepdim=True) + EPS) * tg
    _close(_norm.rms_norm(x, gamma, EPS), expected.detach().numpy(), dtype)
    got = _norm.rms_norm_backward(x, gamma, EPS, grad)
    assert got.beta_grad is None
    for actual, reference in zip(got[:2], _grads(expected, grad, tx, tg), strict=True):
        _close(actual, reference, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "groups"), [((3, 6, 5), 3), ((2, 4, 3, 5), 1), ((5, 4), 4)])
def test_group_norm(split: str, dtype: Any, shape: tuple[int, ...], groups: int) -> None:
    rng = np.random.default_rng(3)
    x, grad = _data(rng, shape, dtype, offset=-2.0), _data(rng, shape, dtype)
    gamma, beta = _data(rng, shape[1:2], dtype), _data(rng, shape[1:2], dtype)
    tx, tg, tb = _t(x), _t(gamma), _t(beta)
    expected = F.group_norm(tx, groups, tg, tb, EPS)
    _close(_norm.group_norm(x, gamma, beta, groups, EPS), expected.detach().numpy(), dtype)
    got = _norm.group_norm_backward(x, gamma, beta, groups, EPS, grad)
    for actual, reference in zip(got, _grads(expected, grad, tx, tg, tb), strict=True):
        _close(actual, reference, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3, 5), (7, 2), (3, 5, 2, 3)])
def test_batch_norm_training(split: str, dtype: Any, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(4)
    channels = shape[1]
    x, grad = _data(rng, shape, dtype, offset=5.0), _data(rng, shape, dtype)
    gamma, beta = _data(rng, (channels,), dtype), _data(rng, (channels,), dtype)
    running_mean = _data(rng, (channels,), dtype)
    running_var = (rng.random(channels) + 0.5).astype(dtype)
    tx, tg, tb = _t(x), _t(gamma), _t(beta)
    t_mean, t_var = (torch.tensor(a.astype(np.float64)) for a in (running_mean, running_var))
    expected = F.batch_norm(tx, t_mean, t_var, tg, tb, True, 0.2, EPS)
    got = _norm.batch_norm_training(x, gamma, beta, running_mean, running_var, 0.2, EPS)
    _close(got.output, expected.detach().numpy(), dtype)
    _close(got.running_mean, t_mean.numpy(), dtype)
    _close(got.running_var, t_var.numpy(), dtype)
    axes = (0, *range(2, len(shape)))
    batch_mean = x.astype(np.float64).mean(axis=axes)
    _close(got.mean, batch_mean, dtype)
    _close(got.invstd, 1.0 / np.sqrt(x.astype(np.float64).var(axis=axes) + EPS), dtype)
    back = _norm.batch_norm_backward(x, gamma, beta, got.mean, got.invstd, True, grad)
    for actual, reference in zip(back, _grads(expected, grad, tx, tg, tb), strict=True):
        _close(actual, reference, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_inference(split: str, dtype: Any) -> None:
    rng = np.random.default_rng(5)
    shape = (3, 5, 7)
    x, grad = _data(rng, shape, dtype), _data(rng, shape, dtype)
    gamma, beta, running_mean = (_data(rng, (5,), dtype) for _ in range(3))
    running_var = (rng.random(5) + 0.5).astype(dtype)
    tx, tg, tb = _t(x), _t(gamma), _t(beta)
    t_mean, t_var = (torch.tensor(a.astype(np.float64)) for a in (running_mean, running_var))
    expected = F.batch_norm(tx, t_mean, t_var, tg, tb, False, 0.1, EPS)
    _close(_norm.batch_norm(x, gamma, beta, running_mean, running_var, EPS), expected.detach().numpy(), dtype)
    invstd = (1.0 / np.sqrt(running_var.astype(np.float64) + EPS)).astype(dtype)
    back = _norm.batch_norm_backward(x, gamma, beta, running_mean, invstd, False, grad)
    for actual, reference in zip(back, _grads(expected, grad, tx, tg, tb), strict=True):
        _close(actual, reference, dtype)


def test_statistics_keep_their_digits_far_from_zero() -> None:
    # a mean 1e4 times the spread: the sums of x - shift do not cancel as sums of x and x^2 would in f32
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((4, 256)) + 1e4).astype(np.float32)
    expected = F.layer_norm(torch.tensor(x.astype(np.float64)), (256,), eps=EPS).numpy()
    _close(_norm.layer_norm(x, None, None, EPS), expected, np.float32)


def test_ndarray_runs_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = NdArray()
    rng = np.random.default_rng(7)
    x = _data(rng, (2, 4, 3), np.float32)
    calls: list[str] = []
    for name in ("layer_norm", "group_norm_backward", "batch_norm_training"):
        original = getattr(_norm, name)
        monkeypatch.setattr(_norm, name, lambda *a, _o=original, _n=name: calls.append(_n) or _o(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a kernel that failed would warn and fall back
        backend.layer_norm(x, None, None, EPS)
        backend.group_norm_backward(x, None, None, 2, EPS, x)
        backend.batch_norm_training(x, None, None, None, None, 0.1, EPS)
    assert calls == ["layer_norm", "group_norm_backward", "batch_norm_training"]


def test_ndarray_leaves_what_the_kernels_do_not_take_to_the_array_code() -> None:
    # channels that are no multiple of the groups: the array code's error, not a kernel's
    backend = NdArray()
    x = np.ones((2, 5, 3), np.float32)
    with pytest.raises(Exception) as kernel_path:
        backend.group_norm(x, None, None, 2, EPS)
    assert "numba" not in str(kernel_path.value)
    empty = np.ones((0, 4), np.float32)
    assert backend.layer_norm(empty, None, None, EPS).shape == (0, 4)
