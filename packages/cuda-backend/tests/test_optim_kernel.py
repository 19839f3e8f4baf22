"""The multi-tensor Adam and SGD kernels: their generated CUDA C (checked everywhere), and their updates
equal to the interface's default compositions bit for bit (on a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import AdamOptions, OptimizerOps, SgdOptions
from burn_cuda import Cuda
from burn_cuda._cupy import unavailable_reason
from burn_cuda._ops import _optim

REASON = unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")

OPTIONS = {
    "adam": AdamOptions(lr=1e-3, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=3),
    "l2": AdamOptions(lr=1e-2, beta_1=0.8, beta_2=0.99, epsilon=1e-5, time=4, weight_decay=0.1),
    "adamw": AdamOptions(
        lr=1e-2, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=9, weight_decay=0.3, decoupled=True
    ),
}


def test_the_kernel_picks_each_block_s_tensor_and_rounds_every_operation() -> None:
    source = _optim._ADAM_UPDATE.source(3, np.dtype(np.float32))
    assert "void burn_adam_3_f(" in source
    for k in range(3):
        assert f"const float* __restrict__ p{k}" in source
        assert f"float* __restrict__ out_v{k}" in source
    assert "if (b < end0) {" in source
    assert "} else if (b < end2) {" in source
    assert "start = (b - end1) * 4096LL;" in source
    # no bare arithmetic operator that the compiler could contract into a fused multiply-add
    body = source[source.index("const float x = p[i];") :]
    for operator in (" * ", " + ", " / "):
        assert operator not in body
    assert "sqrtf(moment_2)" in source
    assert "sqrt(moment_2)" in _optim._ADAM_UPDATE.source(1, np.dtype(np.float64))
    for update in (_optim._SGD_UPDATE, _optim._SGD_MOMENTUM_UPDATE):
        sgd = update.source(2, np.dtype(np.float32))
        body = sgd[sgd.index("const float x = p[i];") :]
        for operator in (" * ", " + ", " / ", " - "):
            assert operator not in body


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("setting", sorted(OPTIONS))
def test_the_kernel_gives_the_default_bit_for_bit(dtype: type[np.generic], setting: str) -> None:
    import cupy as cp

    backend = Cuda()
    options = OPTIONS[setting]
    rng = np.random.default_rng(0)
    # 40 tensors (two launches), sizes across chunk boundaries, an empty one, a transposed (strided) one;
    # the first five at their first step (no moments)
    shapes = [(int(n),) for n in rng.integers(1, 20_000, 37)] + [(0,), (4096,), (9, 700)]
    arrays = [[cp.asarray(rng.standard_normal(shape).astype(dtype)) for shape in shapes] for _ in range(4)]
    params, grads, moments_1, moments_2 = arrays
    params[-1] = cp.ascontiguousarray(params[-1].T).T
    moments_2 = [cp.abs(v) for v in moments_2]
    m1: list[object] = [None if i < 5 else m for i, m in enumerate(moments_1)]
    m2: list[object] = [None if i < 5 else v for i, v in enumerate(moments_2)]
    kernel = backend.float_adam_step(params, grads, m1, m2, options)
    default = OptimizerOps.float_adam_step(backend, params, grads, m1, m2, options)
    for got_list, want_list in zip(kernel, default):
        assert len(got_list) == len(shapes)
        for got, want in zip(got_list, want_list):
            assert got.shape == want.shape
            np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))


SGD_OPTIONS = {
    "plain": SgdOptions(lr=0.1),
    "decay": SgdOptions(lr=0.05, weight_decay=0.01),
    "momentum": SgdOptions(lr=0.1, momentum=0.9),
    "dampened": SgdOptions(lr=0.1, momentum=0.8, dampening=0.3, weight_decay=0.02),
    "nesterov": SgdOptions(lr=0.2, momentum=0.9, nesterov=True, weight_decay=0.1),
}


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("setting", sorted(SGD_OPTIONS))
def test_the_sgd_kernel_gives_the_default_bit_for_bit(dtype: type[np.generic], setting: str) -> None:
    import cupy as cp

    backend = Cuda()
    options = SGD_OPTIONS[setting]
    rng = np.random.default_rng(1)
    # 40 tensors (two launches), an empty one, a strided one; the first five without a velocity
    shapes = [(int(n),) for n in rng.integers(1, 20_000, 37)] + [(0,), (4096,), (9, 700)]
    arrays = [[cp.asarray(rng.standard_normal(shape).astype(dtype)) for shape in shapes] for _ in range(3)]
    params, grads, velocities = arrays
    params[-1] = cp.ascontiguousarray(params[-1].T).T
    v: list[object] = [None if i < 5 else a for i, a in enumerate(velocities)]
    kernel = backend.float_sgd_step(params, grads, v, options)
    default = OptimizerOps.float_sgd_step(backend, params, grads, v, options)
    for got_list, want_list in zip(kernel, default):
        assert len(got_list) == len(shapes)
        for got, want in zip(got_list, want_list):
            if want is None:
                assert got is None
                continue
            np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))
