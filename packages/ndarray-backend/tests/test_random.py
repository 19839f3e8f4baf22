"""NdArray's random floats: drawn in their own dtype (f32 never through f64), one stream per settings."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from burn_backend import Distribution, DType, Tensor
from burn_ndarray import NdArray


# the draws that need no temporary of their size: an f64 draw would take 8 bytes a value on its own
@pytest.mark.parametrize("distribution", [Distribution.default(), Distribution.bernoulli(0.3)], ids=str)
def test_an_f32_draw_allocates_no_f64(distribution: Distribution) -> None:
    device = NdArray().device()
    count = 1_000_000
    Tensor.random([8], distribution, device)  # the generator and its first buffers exist before tracing
    tracemalloc.start()
    try:
        tensor = Tensor.random([count], distribution, device)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tensor.dtype is DType.F32
    assert peak < 8 * count, f"drawing {count} f32 values peaked at {peak} bytes"


def test_f32_values_are_numpys_f32_stream() -> None:
    device = NdArray().device()
    device.seed(11)
    drawn = Tensor.random([1000], device=device).to_numpy()
    np.testing.assert_array_equal(drawn, np.random.default_rng(11).random(1000, dtype=np.float32))


def test_seeding_another_float_dtype_leaves_the_f32_stream_alone() -> None:
    f32, f64 = NdArray().device(), NdArray(float_dtype="f64").device()
    f32.seed(5)
    expected = Tensor.random([64], device=f32).to_numpy().copy()
    f32.seed(5)
    f64.seed(6)
    Tensor.random([64], device=f64)
    assert Tensor.random([64], device=f64).dtype is DType.F64
    np.testing.assert_array_equal(Tensor.random([64], device=f32).to_numpy(), expected)
