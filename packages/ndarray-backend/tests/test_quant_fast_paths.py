"""NdArray's quantized matmul fast paths against NumPy float64 on the dequantized values."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Tensor
from burn_backend.quantization import QuantScheme, QuantStore, QuantValue
from burn_ndarray import NdArray
from burn_ndarray._ops import _quant
from burn_ndarray._ops._quant import EXACT_K, gemm_i8


def test_int8_gemm_accumulates_exactly_in_int32() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (37, 300), dtype=np.int8)
    b = rng.integers(-128, 128, (300, 19), dtype=np.int8)
    out = gemm_i8(a, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))


def test_int8_gemm_is_exact_at_the_extremes() -> None:
    # the float32 BLAS route is exact while a chunk's sums stay within 2**24: -128 * -128 summed EXACT_K
    # times is exactly 2**24, and +-1 next to it would be lost to rounding if a chunk were one longer
    assert EXACT_K * 128 * 128 == 2**24
    for k in (EXACT_K, EXACT_K + 1, 3 * EXACT_K + 5):
        a = np.full((3, k), -128, dtype=np.int8)
        a[1, ::2] = 127
        a[2, -1] = 1  # an odd term after the extreme ones
        b = np.full((k, 4), -128, dtype=np.int8)
        b[:, 1] = 127
        b[0, 2] = 1
        b[-1, 3] = 1
        out = gemm_i8(a, b)
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
    assert (
        int(gemm_i8(np.full((1, EXACT_K), -128, np.int8), np.full((EXACT_K, 1), -128, np.int8))[0, 0])
        == 2**24
    )
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (5, 2 * EXACT_K + 300), dtype=np.int8)
    b = rng.integers(-128, 128, (2 * EXACT_K + 300, 7), dtype=np.int8)
    np.testing.assert_array_equal(gemm_i8(a, b), a.astype(np.int64) @ b.astype(np.int64))


def test_block_matmul_in_several_tiles_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_quant, "_TILE_VALUES", 3 * 32)  # tiles of 3 rows: 22 rows make 8, the last short
    device = NdArray().device()
    rng = np.random.default_rng(3)
    lhs = Tensor.from_data(rng.standard_normal((5, 22)).astype(np.float32), device)
    rhs = Tensor.from_data(rng.standard_normal((22, 32)).astype(np.float32), device)
    q4 = rhs.quantize_dynamic(QuantScheme(value=QuantValue.Q4S, block_size=16, store=QuantStore.PACKED_U32))
    expected = lhs.to_numpy().astype(np.float64) @ q4.dequantize().to_numpy().astype(np.float64)
    np.testing.assert_allclose(lhs.matmul(q4).to_numpy(), expected, rtol=1e-4, atol=1e-4)


def test_int8_and_block_matmul_match_numpy() -> None:
    device = NdArray().device()
    rng = np.random.default_rng(1)
    lhs = Tensor.from_data(rng.standard_normal((9, 64)).astype(np.float32), device)
    rhs = Tensor.from_data(rng.standard_normal((64, 32)).astype(np.float32), device)
    ql, qr = lhs.quantize_dynamic(QuantScheme()), rhs.quantize_dynamic(QuantScheme())
    dl = ql.dequantize().to_numpy().astype(np.float64)
    dr = qr.dequantize().to_numpy().astype(np.float64)
    np.testing.assert_allclose(ql.matmul(qr).to_numpy(), dl @ dr, rtol=1e-5, atol=1e-5)
    # a float operand against a per-tensor int8 weight (a quantized Linear's forward): fewer rows than
    # the weight (the scale multiplies the product) and more (it multiplies the weight)
    for rows in (lhs, Tensor.from_data(rng.standard_normal((200, 64)).astype(np.float32), device)):
        expected = rows.to_numpy().astype(np.float64) @ dr
        np.testing.assert_allclose(rows.matmul(qr).to_numpy(), expected, rtol=1e-5, atol=1e-5)
    scheme = QuantScheme(value=QuantValue.Q4S, block_size=16, store=QuantStore.PACKED_U32)
    q4 = rhs.quantize_dynamic(scheme)
    d4 = q4.dequantize().to_numpy().astype(np.float64)
    expected = lhs.to_numpy().astype(np.float64) @ d4
    np.testing.assert_allclose(lhs.matmul(q4).to_numpy(), expected, rtol=1e-4, atol=1e-4)
