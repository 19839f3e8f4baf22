"""NdArray-specific behaviour: settings, equality, seeding, and its own erf against math.erf."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn_backend import DType, Tensor
from burn_ndarray import NdArray


def erf(x: np.ndarray) -> np.ndarray:
    """NdArray's erf (``burn_backend.array``'s, over NumPy)."""
    result: np.ndarray = NdArray().float_erf(x)
    return result


def test_defaults_are_f32_and_i64() -> None:
    backend = NdArray()
    assert (backend.float_dtype, backend.int_dtype) == (DType.F32, DType.I64)
    device = backend.device()
    assert Tensor.zeros([2], device).dtype is DType.F32
    assert Tensor.arange(3, device=device).dtype is DType.I64


def test_dtype_settings_apply_to_new_tensors() -> None:
    device = NdArray(float_dtype="f64", int_dtype=DType.I32).device()
    assert Tensor.from_data([1.5], device).dtype is DType.F64
    assert Tensor.from_data([1], device).dtype is DType.I32
    assert Tensor.from_data([[1.0, 2.0]], device).argmax(1).dtype is DType.I32


def test_backends_are_values() -> None:
    assert NdArray() == NdArray()
    assert hash(NdArray()) == hash(NdArray())
    assert NdArray(float_dtype="f64") != NdArray()
    assert NdArray().device() == NdArray().device()


@pytest.mark.parametrize(
    ("setting", "value"), [("float_dtype", "i32"), ("int_dtype", "f32"), ("int_dtype", "bool")]
)
def test_settings_of_the_wrong_kind_are_rejected(setting: str, value: str) -> None:
    with pytest.raises(ValueError, match=setting):
        NdArray(**{setting: value})


def test_only_device_zero_exists() -> None:
    with pytest.raises(ValueError, match="no device 1"):
        NdArray().device(1)


def test_seeding_makes_random_tensors_repeat() -> None:
    device = NdArray().device()
    device.seed(42)
    first = Tensor.random([64]).to_numpy().copy(), Tensor.random([8], dtype=DType.I32).to_numpy().copy()
    device.seed(42)
    second = Tensor.random([64]).to_numpy(), Tensor.random([8], dtype=DType.I32).to_numpy()
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    device.seed(43)
    assert not np.array_equal(first[0], Tensor.random([64]).to_numpy())


def test_erf_matches_math_erf_in_f64() -> None:
    x = np.concatenate([np.linspace(-7.0, 7.0, 20_001), [0.0, -0.0, 1e-300, 2.4999999, 2.5, 30.0, -30.0]])
    expected = np.array([math.erf(v) for v in x])
    got = erf(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=4e-15, atol=1e-300)
    assert math.copysign(1.0, erf(np.array([-0.0]))[0]) == -1.0


def test_erf_handles_infinities_and_nan() -> None:
    got = erf(np.array([np.inf, -np.inf, np.nan]))
    assert got[0] == 1.0
    assert got[1] == -1.0
    assert np.isnan(got[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_erf_keeps_lower_precisions_within_their_epsilon(dtype: type) -> None:
    x = np.linspace(-5.0, 5.0, 4001).astype(dtype)
    expected = np.array([math.erf(float(v)) for v in x])
    got = erf(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=2 * np.finfo(dtype).eps, atol=1e-7)
