"""burn-cuda's ctypes cuBLAS GEMM (``burn_cuda._cublas``, capture-safe): ``matmul`` against NumPy in float64
over contiguous, transposed and broadcast operands, batches, f32, f64 and f16, and empty dims."""

from __future__ import annotations

import numpy as np
import pytest

from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")
TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 2e-3}


def check(lhs: np.ndarray, rhs: np.ndarray, make=lambda a: cp.asarray(a)) -> None:
    from burn_cuda._cublas import matmul

    out = cp.asnumpy(matmul(make(lhs), make(rhs)))
    expected = np.matmul(lhs.astype(np.float64), rhs.astype(np.float64))
    assert out.shape == expected.shape
    assert out.dtype == lhs.dtype
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(out, expected, atol=TOLERANCE[lhs.dtype.type] * scale * 4, rtol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((3, 5), (5, 4)),
        ((1, 7), (7, 1)),
        ((2, 3, 5), (2, 5, 4)),
        ((1, 3, 5), (4, 5, 2)),
        ((4, 1, 3, 5), (1, 2, 5, 6)),
        ((64, 65), (65, 130)),
    ],
)
def test_matmul_matches_numpy(a: tuple[int, ...], b: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(0)
    check(rng.standard_normal(a).astype(dtype), rng.standard_normal(b).astype(dtype))


def test_transposed_and_strided_operands() -> None:
    rng = np.random.default_rng(1)
    lhs = rng.standard_normal((2, 6, 5)).astype(np.float32)
    rhs = rng.standard_normal((2, 4, 6)).astype(np.float32)
    from burn_cuda._cublas import matmul

    for a, b in [
        (cp.asarray(lhs).transpose(0, 2, 1), cp.asarray(rhs).transpose(0, 2, 1)),  # transposed-contiguous
        (cp.asarray(lhs)[:, ::2].transpose(0, 2, 1), cp.asarray(rhs)[:, :3]),  # strided: copied
        (
            cp.broadcast_to(cp.asarray(lhs[:1]), (2, 6, 5)).transpose(0, 2, 1),
            cp.asarray(rhs).transpose(0, 2, 1),
        ),
    ]:
        expected = np.matmul(cp.asnumpy(a).astype(np.float64), cp.asnumpy(b).astype(np.float64))
        np.testing.assert_allclose(cp.asnumpy(matmul(a, b)), expected, atol=1e-4, rtol=0)


def test_empty_dims() -> None:
    from burn_cuda._cublas import matmul

    zero_k = matmul(cp.ones((3, 0), cp.float32), cp.ones((0, 4), cp.float32))
    assert zero_k.shape == (3, 4)
    assert float(zero_k.sum()) == 0.0
    assert matmul(cp.ones((0, 3), cp.float32), cp.ones((3, 4), cp.float32)).shape == (0, 4)
    assert matmul(cp.ones((2, 0, 3, 3), cp.float32), cp.ones((1, 1, 3, 4), cp.float32)).shape == (2, 0, 3, 4)
