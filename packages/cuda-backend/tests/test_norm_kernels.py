"""Cuda's normalization kernels (``burn_cuda._ops.norm``) against PyTorch CPU in float64: layer, RMS,
group and batch norm, forward and every gradient, on f16, f32 and f64, odd sizes, one-element sets,
parameters present or not, sets held in registers and sets read again per pass, non-contiguous inputs;
the cases the kernels leave to the shared code give the shared code's results (on a GPU). The
conformance suite checks the ops themselves on every Cuda stack."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import DType
from burn_backend.array import ArrayModuleOps
from burn_cuda import Cuda
from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")

EPS = 1e-5
TOLERANCE = {np.float16: 2e-2, np.float32: 2e-4, np.float64: 1e-10}
Arrays = dict[str, Any]


class _KernelsOnly:
    """Stands for the shared code where a case must run the kernels: any fallback fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} fell back to the shared code")


@pytest.fixture
def kernels_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from burn_cuda._ops import norm

    monkeypatch.setattr(norm, "_SHARED", _KernelsOnly())


def _torch() -> Any:
    torch = pytest.importorskip("torch")
    return torch


def _inputs(shape: tuple[int, ...], features: int, dtype: Any, seed: int, offset: float = 0.0) -> Arrays:
    rng = np.random.default_rng(seed)
    return {
        "x": (rng.standard_normal(shape) * 2.0 + offset).astype(dtype),
        "dy": rng.standard_normal(shape).astype(dtype),
        "gamma": rng.standard_normal(features).astype(dtype),
        "beta": rng.standard_normal(features).astype(dtype),
    }


def _reference(name: str, arrays: Arrays, params: tuple[str, ...], **kw: Any) -> dict[str, Any]:
    """``y`` and the gradients of ``sum(y * dy)`` in float64 by PyTorch's autograd."""
    torch = _torch()
    F = torch.nn.functional
    t = {k: torch.tensor(v.astype(np.float64), requires_grad=k != "dy") for k, v in arrays.items()}
    gamma = t["gamma"] if "gamma" in params else None
    beta = t["beta"] if "beta" in params else None
    if gamma is None and beta is not None:  # (PyTorch's group norm backward needs a weight with a bias)
        gamma = torch.ones_like(t["gamma"])
    x = t["x"]
    if name == "layer_norm":
        y = F.layer_norm(x, x.shape[-1:], gamma, beta, EPS)
    elif name == "rms_norm":
        y = F.rms_norm(x, x.shape[-1:], gamma, EPS)
    elif name == "group_norm":
        y = F.group_norm(x, kw["groups"], gamma, beta, EPS)
    else:  # batch norm: training (batch statistics) or frozen (running ones)
        y = F.batch_norm(x, kw.get("mean"), kw.get("var"), gamma, beta, kw["training"], 0.1, EPS)
    (y * t["dy"]).sum().backward()
    out = {"y": y.detach().numpy(), "x": x.grad.numpy()}
    for k in params:
        out[k] = t[k].grad.numpy()
    return out


def _close(actual: Any, expected: Any, dtype: Any, what: str) -> None:
    assert actual.dtype == dtype, what
    tol = TOLERANCE[dtype]
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(
        actual.get().astype(np.float64), expected, rtol=tol, atol=tol * scale, err_msg=what
    )


def _gpu(arrays: Arrays, params: tuple[str, ...]) -> tuple[Any, Any | None, Any | None, Any]:
    x, dy = cp.asarray(arrays["x"]), cp.asarray(arrays["dy"])
    gamma = cp.asarray(arrays["gamma"]) if "gamma" in params else None
    beta = cp.asarray(arrays["beta"]) if "beta" in params else None
    return x, gamma, beta, dy


def _check_grads(grads: Any, ref: dict[str, Any], params: tuple[str, ...], dtype: Any, what: str) -> None:
    _close(grads.x_grad, ref["x"], dtype, f"{what}: x_grad")
    for name, grad in (("gamma", grads.gamma_grad), ("beta", grads.beta_grad)):
        if name in params:
            _close(grad, ref[name], dtype, f"{what}: {name}_grad")
        else:
            assert grad is None, what


DTYPES = [np.float16, np.float32, np.float64]
PARAMS = [("gamma", "beta"), ("gamma",), ("beta",), ()]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [(7, 13), (3, 5, 1000), (4, 1), (2, 12000)],  # one warp; 8 per thread; one-element rows; 16 per thread
)
@pytest.mark.parametrize("params", PARAMS)
def test_layer_and_rms_norm(kernels_only: None, dtype: Any, shape: tuple[int, ...], params: Any) -> None:
    if dtype is np.float16 and shape[-1] > 1000:
        pytest.skip("f16 sums over long rows are the f32 cases' kernels")
    backend = Cuda()
    arrays = _inputs(shape, shape[-1], dtype, seed=sum(shape), offset=3.0)
    x, gamma, beta, dy = _gpu(arrays, params)
    ref = _reference("layer_norm", arrays, params)
    _close(backend.layer_norm(x, gamma, beta, EPS), ref["y"], dtype, "layer_norm")
    _check_grads(backend.layer_norm_backward(x, gamma, beta, EPS, dy), ref, params, dtype, "layer_norm")
    rms_params = tuple(p for p in params if p == "gamma")
    ref = _reference("rms_norm", arrays, rms_params)
    _close(backend.rms_norm(x, gamma, EPS), ref["y"], dtype, "rms_norm")
    grads = backend.rms_norm_backward(x, gamma, EPS, dy)
    _check_grads(grads, ref, rms_params, dtype, "rms_norm")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "groups"),
    [
        ((2, 6, 7, 13), 3),
        ((3, 4), 2),
        ((2, 3, 1), 3),
        ((1, 8, 5), 1),
        ((2, 4, 64, 64), 2),
        ((2, 4, 100, 100), 2),
    ],
)
@pytest.mark.parametrize("params", PARAMS)
def test_group_norm(kernels_only: None, dtype: Any, shape: tuple[int, ...], groups: int, params: Any) -> None:
    # groups of 8192 elements: one block of 1024 threads each; of 20000: split over blocks
    if dtype is np.float16 and shape[-1] == 100:
        pytest.skip("f16 sums over long sets are the f32 cases' kernels")
    backend = Cuda()
    arrays = _inputs(shape, shape[1], dtype, seed=sum(shape) + groups, offset=-2.0)
    x, gamma, beta, dy = _gpu(arrays, params)
    ref = _reference("group_norm", arrays, params, groups=groups)
    _close(backend.group_norm(x, gamma, beta, groups, EPS), ref["y"], dtype, "group_norm")
    grads = backend.group_norm_backward(x, gamma, beta, groups, EPS, dy)
    _check_grads(grads, ref, params, dtype, "group_norm")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3, 7, 5), (5, 7), (2, 3, 1), (3, 5, 3000)])
@pytest.mark.parametrize("params", PARAMS)
def test_batch_norm(kernels_only: None, dtype: Any, shape: tuple[int, ...], params: Any) -> None:
    torch = _torch()
    backend = Cuda()
    channels = shape[1]
    # the mean well off zero (not in f16, whose saved statistics are rounded to f16 as the interface's)
    offset = 0.0 if dtype is np.float16 else 50.0
    arrays = _inputs(shape, channels, dtype, seed=sum(shape), offset=offset)
    x, gamma, beta, dy = _gpu(arrays, params)
    rng = np.random.default_rng(7)
    running_mean = (rng.standard_normal(channels) + offset).astype(dtype)
    running_var = (rng.random(channels) + 0.5).astype(dtype)
    # training: batch statistics, running statistics updated with the unbiased variance
    t_mean, t_var = (torch.tensor(a.astype(np.float64)) for a in (running_mean, running_var))
    ref = _reference("batch_norm", arrays, params, mean=t_mean, var=t_var, training=True)
    out = backend.batch_norm_training(
        x, gamma, beta, cp.asarray(running_mean), cp.asarray(running_var), 0.1, EPS
    )
    _close(out.output, ref["y"], dtype, "batch_norm_training")
    _close(out.running_mean, t_mean.numpy(), dtype, "running_mean")
    _close(out.running_var, t_var.numpy(), dtype, "running_var")
    x64 = arrays["x"].astype(np.float64).reshape(shape[0], channels, -1)
    mean, var = x64.mean(axis=(0, 2)), x64.var(axis=(0, 2))
    _close(out.mean, mean, dtype, "mean")
    _close(out.invstd, 1 / np.sqrt(var + EPS), dtype, "invstd")
    grads = backend.batch_norm_backward(x, gamma, beta, out.mean, out.invstd, True, dy)
    _check_grads(grads, ref, params, dtype, "batch_norm training backward")
    # inference: the running statistics, frozen
    t_mean, t_var = (torch.tensor(a.astype(np.float64)) for a in (running_mean, running_var))
    ref = _reference("batch_norm", arrays, params, mean=t_mean, var=t_var, training=False)
    y = backend.batch_norm(x, gamma, beta, cp.asarray(running_mean), cp.asarray(running_var), EPS)
    _close(y, ref["y"], dtype, "batch_norm")
    invstd = cp.asarray((1 / np.sqrt(running_var.astype(np.float64) + EPS)).astype(dtype))
    grads = backend.batch_norm_backward(x, gamma, beta, cp.asarray(running_mean), invstd, False, dy)
    _check_grads(grads, ref, params, np.dtype(dtype).type, "batch_norm frozen backward")


def test_sets_read_again_per_pass(kernels_only: None) -> None:
    """Groups of 33800 elements (split over blocks) and rows of 40000 (the forward reads them per pass)."""
    backend = Cuda()
    arrays = _inputs((2, 4, 130, 130), 4, np.float32, seed=3, offset=1.0)
    x, gamma, beta, dy = _gpu(arrays, ("gamma", "beta"))
    ref = _reference("group_norm", arrays, ("gamma", "beta"), groups=2)
    _close(backend.group_norm(x, gamma, beta, 2, EPS), ref["y"], np.float32, "group_norm")
    grads = backend.group_norm_backward(x, gamma, beta, 2, EPS, dy)
    _check_grads(grads, ref, ("gamma", "beta"), np.float32, "group_norm")
    arrays = _inputs((3, 40000), 40000, np.float32, seed=4)
    x, gamma, beta, _ = _gpu(arrays, ("gamma", "beta"))
    ref = _reference("layer_norm", arrays, ("gamma", "beta"))
    _close(backend.layer_norm(x, gamma, beta, EPS), ref["y"], np.float32, "layer_norm")


def test_non_contiguous_inputs_and_repeatable_gradients(kernels_only: None) -> None:
    backend = Cuda()
    arrays = _inputs((13, 33), 13, np.float32, seed=5)
    x = cp.asarray(arrays["x"]).T  # [33, 13], strided
    dy = cp.asarray(arrays["dy"]).T
    gamma, beta = cp.asarray(arrays["gamma"]), cp.asarray(arrays["beta"])
    transposed = {"x": arrays["x"].T, "dy": arrays["dy"].T, "gamma": arrays["gamma"], "beta": arrays["beta"]}
    ref = _reference("layer_norm", transposed, ("gamma", "beta"))
    _close(backend.layer_norm(x, gamma, beta, EPS), ref["y"], np.float32, "layer_norm")
    first = backend.layer_norm_backward(x, gamma, beta, EPS, dy)
    _check_grads(first, ref, ("gamma", "beta"), np.float32, "layer_norm")
    again = backend.layer_norm_backward(x, gamma, beta, EPS, dy)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.get(), b.get())
    big = cp.asarray(np.random.default_rng(6).standard_normal((16, 8, 64, 64)).astype(np.float32))
    grad = cp.ones_like(big)
    params = cp.ones(8, dtype=cp.float32)
    one = backend.batch_norm_backward(big, params, params, cp.zeros(8, cp.float32), params, True, grad)
    two = backend.batch_norm_backward(big, params, params, cp.zeros(8, cp.float32), params, True, grad)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a.get(), b.get())


def test_bf16_and_what_the_kernels_leave_to_the_shared_code() -> None:
    backend = Cuda()
    rng = np.random.default_rng(8)
    x32 = rng.standard_normal((6, 40)).astype(np.float32)
    # bf16 computes in f32 (in_f32) and matches the shared code to bf16's precision
    xb = backend.float_cast(cp.asarray(x32), DType.BF16)
    ours = backend.layer_norm(xb, None, None, EPS)
    shared = ArrayModuleOps.layer_norm(backend, xb, None, None, EPS)
    assert ours.dtype == xb.dtype
    np.testing.assert_allclose(
        backend.float_cast(ours, DType.F32).get(), backend.float_cast(shared, DType.F32).get(), atol=2e-2
    )
    # parameters of another dtype, and rows past the backward's register budget, take the shared code
    x = cp.asarray(x32)
    gamma64 = cp.asarray(rng.standard_normal(40))
    np.testing.assert_allclose(
        backend.layer_norm(x, gamma64, None, EPS).get(),
        ArrayModuleOps.layer_norm(backend, x, gamma64, None, EPS).get(),
        rtol=1e-6,
    )
    long_rows = _inputs((2, 20000), 20000, np.float32, seed=9)
    lx, lg, lb, ldy = _gpu(long_rows, ("gamma", "beta"))
    ref = _reference("layer_norm", long_rows, ("gamma", "beta"))
    _check_grads(
        backend.layer_norm_backward(lx, lg, lb, EPS, ldy), ref, ("gamma", "beta"), np.float32, "long rows"
    )
