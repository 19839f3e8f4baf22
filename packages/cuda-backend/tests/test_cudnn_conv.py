"""Convolutions through cuDNN against PyTorch on the CPU in float64: every convolution op (forward with
bias, input gradient, weight gradient; transposed too) in 1-d, 2-d and 3-d, odd sizes, strides,
padding, dilation, groups, depthwise, batch 1, in f32 (TF32 off: an f32 error, far under TF32's), f16
and bf16; burn-cuda's own kernels (``Cuda(cudnn=False)``) on the same cases; a forced cuDNN failure
falls back to them, logged once; plans are reused. Skips without a GPU, CuPy, the cuDNN frontend or
PyTorch."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import ConvOptions, ConvTransposeOptions, DType
from burn_cuda import Cuda
from burn_cuda._cupy import cp, unavailable_reason

torch = pytest.importorskip("torch")
REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


def _needs_cudnn() -> None:
    from burn_cuda._cudnn import unavailable_reason as cudnn_reason

    reason = cudnn_reason()
    if reason is not None:
        pytest.skip(f"needs the cuDNN frontend: {reason}")


@dataclass(frozen=True)
class Case:
    name: str
    batch: int
    channels: int
    out_channels: int
    size: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    padding_out: tuple[int, ...] | None = None  # of the transposed convolution


CASES = [
    Case("2d 3x3", 2, 3, 5, (9, 11), (3, 3), (1, 1), (1, 1), (1, 1)),
    Case("2d strided padded dilated", 2, 3, 4, (13, 10), (3, 2), (2, 3), (2, 1), (2, 1), 1, (1, 2)),
    Case("2d grouped", 2, 6, 9, (8, 7), (3, 3), (1, 2), (1, 0), (1, 1), 3, (0, 1)),
    Case("2d depthwise", 2, 8, 8, (12, 12), (5, 5), (1, 1), (2, 2), (1, 1), 8),
    Case("2d pointwise batch 1", 1, 7, 3, (5, 6), (1, 1), (1, 1), (0, 0), (1, 1)),
    Case("1d", 3, 4, 5, (17,), (4,), (2,), (1,), (3,), 1, (1,)),
    Case("3d grouped", 2, 4, 4, (5, 6, 7), (3, 2, 3), (1, 2, 1), (1, 0, 1), (1, 1, 2), 2, (0, 1, 0)),
]
DTYPES = {"f32": (DType.F32, 1e-5), "f16": (DType.F16, 3e-3), "bf16": (DType.BF16, 2e-2)}
"""Each dtype's bound on ||ours - reference|| / ||reference|| (f32's is far under TF32's ~5e-4)."""


def _functional(case: Case, transposed: bool) -> Any:
    rank = len(case.size)
    name = f"conv_transpose{rank}d" if transposed else f"conv{rank}d"
    return getattr(torch.nn.functional, name)


def _reference(case: Case, transposed: bool, arrays: dict[str, np.ndarray[Any, Any]]) -> dict[str, Any]:
    """The op's output and its input and weight gradients for output gradient ``g``, in float64."""
    x, w, b = (torch.tensor(arrays[k].astype(np.float64), requires_grad=True) for k in "xwb")
    if transposed:
        y = _functional(case, True)(
            x, w, b, case.stride, case.padding, case.padding_out or 0, case.groups, case.dilation
        )
    else:
        y = _functional(case, False)(x, w, b, case.stride, case.padding, case.dilation, case.groups)
    g = torch.tensor(arrays["g"].astype(np.float64)) if "g" in arrays else torch.ones_like(y)
    dx, dw = torch.autograd.grad(y, (x, w), g)
    return {"y": y.detach().numpy(), "dx": dx.numpy(), "dw": dw.numpy()}


def _draw(case: Case, transposed: bool, dtype: DType, seed: int) -> dict[str, np.ndarray[Any, Any]]:
    """Random operands, rounded to ``dtype`` (then read back as float64 for the reference)."""
    rng = np.random.default_rng(seed)
    per_group = case.channels // case.groups
    if transposed:  # [in channels, out channels / groups, *kernel]
        w_shape = (case.channels, case.out_channels // case.groups, *case.kernel)
        b_size = case.out_channels
    else:
        w_shape = (case.out_channels, per_group, *case.kernel)
        b_size = case.out_channels
    arrays = {
        "x": rng.standard_normal((case.batch, case.channels, *case.size)),
        "w": rng.standard_normal(w_shape) / np.sqrt(per_group * np.prod(case.kernel)),
        "b": rng.standard_normal(b_size),
    }
    out_shape = _reference(case, transposed, arrays)["y"].shape
    arrays["g"] = rng.standard_normal(out_shape)
    return {k: v.astype(dtype.numpy).astype(np.float64) for k, v in arrays.items()}


def _ours(
    backend: Cuda, case: Case, transposed: bool, arrays: dict[str, Any], dtype: DType
) -> dict[str, Any]:
    x, w, b, g = (cp.asarray(arrays[k].astype(dtype.numpy)) for k in "xwbg")
    rank = len(case.size)
    if transposed:
        padding_out = case.padding_out or (0,) * rank
        transposed_options = ConvTransposeOptions(
            case.stride, case.padding, padding_out, case.dilation, case.groups
        )
        forward = getattr(backend, f"conv_transpose{rank}d")
        x_grad = getattr(backend, f"conv_transpose{rank}d_x_backward")
        w_grad = getattr(backend, f"conv_transpose{rank}d_weight_backward")
        results = {
            "y": forward(x, w, b, transposed_options),
            "dx": x_grad(w, g, transposed_options),
            "dw": w_grad(x, w, g, transposed_options),
        }
    else:
        options = ConvOptions(case.stride, case.padding, case.dilation, case.groups)
        forward = getattr(backend, f"conv{rank}d")
        x_grad = getattr(backend, f"conv{rank}d_x_backward")
        w_grad = getattr(backend, f"conv{rank}d_weight_backward")
        results = {
            "y": forward(x, w, b, options),
            "dx": x_grad(x, w, g, options),
            "dw": w_grad(x, w, g, options),
        }
    for name, value in results.items():
        assert value.dtype == dtype.numpy, name
    return {name: cp.asnumpy(value).astype(np.float64) for name, value in results.items()}


def _check(case: Case, transposed: bool, dtype_name: str, cudnn: bool) -> None:
    dtype, bound = DTYPES[dtype_name]
    arrays = _draw(case, transposed, dtype, seed=len(case.name) + 7 * transposed)
    expected = _reference(case, transposed, arrays)
    got = _ours(Cuda(cudnn=cudnn), case, transposed, arrays, dtype)
    for name, reference in expected.items():
        assert got[name].shape == reference.shape, name
        assert np.isfinite(got[name]).all(), name
        error = np.linalg.norm(got[name] - reference) / np.linalg.norm(reference)
        assert error < bound, (
            f"{case.name} {'transposed ' if transposed else ''}{name}: relative error {error:.2e}"
        )


@pytest.mark.gpu
@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "transposed"])
@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_cudnn_convolutions_against_pytorch(case: Case, dtype_name: str, transposed: bool) -> None:
    _needs_cudnn()
    from burn_cuda._cudnn import PLANS

    failures = PLANS.failures
    _check(case, transposed, dtype_name, cudnn=True)
    assert PLANS.failures == failures, "cuDNN refused a case (see the log): burn-cuda's kernels ran"


@pytest.mark.gpu
@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "transposed"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_own_kernels_against_pytorch(case: Case, transposed: bool) -> None:
    _check(case, transposed, "f32", cudnn=False)


@pytest.mark.gpu
def test_a_cudnn_failure_falls_back_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _needs_cudnn()
    from burn_cuda._cudnn import PLANS, _conv

    def broken(plan: Any, arrays: Any) -> bool:
        raise RuntimeError("forced failure")

    monkeypatch.setattr(_conv, "_execute", broken)
    case = Case("fallback", 2, 3, 4, (10, 9), (3, 3), (1, 1), (1, 1), (1, 1))  # a shape of its own
    with caplog.at_level(logging.INFO, logger="burn_cuda.cudnn"):
        _check(case, False, "f32", cudnn=True)
        _check(case, False, "f32", cudnn=True)
    messages = [r.getMessage() for r in caplog.records if "forced failure" in r.getMessage()]
    assert len(messages) == 3  # forward, input gradient, weight gradient: once each
    assert all("own kernels run instead" in m for m in messages)
    assert PLANS.failures >= 3


@pytest.mark.gpu
def test_plans_are_built_once_per_shape() -> None:
    _needs_cudnn()
    from burn_cuda._cudnn import PLANS

    backend = Cuda(cudnn=True)
    options = ConvOptions((1, 1), (1, 1), (1, 1), 1)
    x = cp.asarray(np.random.default_rng(0).standard_normal((3, 5, 11, 13)), dtype=np.float32)
    w = cp.asarray(np.random.default_rng(1).standard_normal((6, 5, 3, 3)), dtype=np.float32)
    builds = PLANS.builds
    first = backend.conv2d(x, w, None, options)
    assert PLANS.builds == builds + 1
    second = backend.conv2d(x, w, None, options)
    assert PLANS.builds == builds + 1  # the same key: its plan again
    cp.testing.assert_array_equal(first, second)
    backend.conv2d(x[:2], w, None, options)
    assert PLANS.builds == builds + 2  # another batch size, another plan


@pytest.mark.gpu
def test_plans_run_directly_with_the_values_of_the_public_execute(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_cudnn()
    from burn_cuda._cudnn import PLANS, _conv

    backend = Cuda(cudnn=True)
    options = ConvOptions((2, 1), (1, 2), (1, 1), 1)
    rng = np.random.default_rng(2)
    x = cp.asarray(rng.standard_normal((2, 3, 9, 10)), dtype=np.float32)
    w = cp.asarray(rng.standard_normal((4, 3, 3, 5)), dtype=np.float32)
    direct = backend.conv2d(x, w, None, options)
    plans = [plan for plan in PLANS._entries.values() if isinstance(plan, _conv.ConvPlan)]
    assert plans
    assert all(plan.direct is not None for plan in plans)  # the frontend this was written for has it
    monkeypatch.setattr(_conv, "DIRECT", False)
    cp.testing.assert_array_equal(backend.conv2d(x, w, None, options), direct)
