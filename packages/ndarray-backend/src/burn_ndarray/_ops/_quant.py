"""NdArray's quantized fast paths: an int8 GEMM accumulating in int32 (numba), and a matmul against a
block-quantized weight that dequantizes one tile of rows at a time."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from burn_backend.array import ArrayBackend
from burn_backend.quantization import QuantStore, _codec, is_quantized

_TILE = 64  # rows of the right operand dequantized at once by the block path


@numba.njit(parallel=True, cache=True, fastmath=True)
def _gemm_i8(a: np.ndarray, bt: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    m, k = a.shape
    n = bt.shape[0]
    out = np.empty((m, n), dtype=np.int32)
    for i in numba.prange(m):
        row = a[i].astype(np.int16)
        for j in range(n):
            col = bt[j]
            acc = np.int32(0)
            for p in range(k):
                acc += np.int32(row[p] * np.int16(col[p]))
            out[i, j] = acc
    return out


def gemm_i8(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of int8 matrices, accumulated exactly in int32."""
    return _gemm_i8(np.ascontiguousarray(a), np.ascontiguousarray(b.T))


def _int8_per_tensor(tensor: Any) -> bool:
    scheme = tensor.dtype
    return (
        scheme.value.bits == 8
        and not scheme.value.is_float
        and scheme.block_size is None
        and scheme.store is QuantStore.NATIVE
        and len(tensor.shape) == 2
    )


class QuantOps(ArrayBackend):
    """``q_matmul`` fast paths on the CPU; everything else as ``burn_backend.array`` does it."""

    def q_matmul(self, lhs: Any, rhs: Any) -> Any:
        if is_quantized(lhs) and is_quantized(rhs) and _int8_per_tensor(lhs) and _int8_per_tensor(rhs):
            scale = np.float32(lhs.scales.reshape(())) * np.float32(rhs.scales.reshape(()))
            product = gemm_i8(lhs.values, rhs.values).astype(np.float32)
            product *= scale
            return product.astype(self.float_dtype.numpy, copy=False)
        if (
            not is_quantized(lhs)
            and is_quantized(rhs)
            and rhs.dtype.block_size is not None
            and len(rhs.shape) == 2
            and len(lhs.shape) == 2
        ):
            return self._block_matmul(lhs, rhs)
        return super().q_matmul(lhs, rhs)

    def _block_matmul(self, lhs: Any, rhs: Any) -> Any:
        """``lhs @ dequantize(rhs)`` without the whole dequantized weight: ``_TILE`` rows at a time."""
        k, n = rhs.shape
        out = np.zeros((lhs.shape[0], n), dtype=np.float32)
        scheme = rhs.dtype
        stored = rhs.values
        if scheme.store is QuantStore.PACKED_U32:
            stored = _codec.unpack(_codec.NUMPY, stored, scheme, rhs.shape)
        scales = rhs.scales.astype(np.float32)
        block = scheme.block_size
        lhs32 = lhs.astype(np.float32, copy=False)
        for start in range(0, k, _TILE):
            stop = min(start + _TILE, k)
            rows = stored[start:stop].astype(np.float32).reshape(stop - start, n // block, block)
            tile = rows * scales[start:stop, :, None]
            out += lhs32[:, start:stop] @ tile.reshape(stop - start, n)
        return out.astype(self.float_dtype.numpy, copy=False)
