"""NdArray's quantized fast paths: an exact int8 GEMM (int32 result) on the float32 BLAS, a float matmul
against a per-tensor int8 weight that scales the product instead of the weight, and a matmul against a
block-quantized weight that dequantizes one tile of rows at a time."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend.array import ArrayBackend
from burn_backend.quantization import QuantStore, _codec, is_quantized

_TILE_VALUES = 1 << 21
"""The most values of a block-quantized right operand dequantized at once (8 MB of float32): a whole
d-512 projection in one piece, so one GEMM; tiles of 64 rows (one GEMM each) ran the 4-bit transformer's
forward at 0.8x the float one."""


EXACT_K = 1024
"""The longest inner dim whose int8 products a float32 GEMM sums exactly (see ``gemm_i8``)."""


def gemm_i8(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of int8 matrices ``[m, k]`` and ``[k, n]``, the exact int32 result.

    It runs on the float32 BLAS, which is exact here: an int8 value is exact in float32, a product of two
    has ``|x * y| <= 128 * 128 = 2**14``, so any partial sum of at most ``EXACT_K = 1024`` of them is an
    integer of magnitude at most ``2**24``, which float32 holds exactly whatever order (or fused
    multiply-adds) the BLAS sums in. The inner dim is cut into chunks of ``EXACT_K``; each chunk's float32
    product is converted to int32 and the chunks are summed in int32 (which wraps, as int32 accumulation
    does, only past ``k = 2**17`` products of extreme values). A numba kernel accumulating in int32 ran at
    0.6x of NumPy's float32 ``@`` on the same machine; the BLAS route runs at the float32 GEMM's speed.

    Args:
        a: int8 ``[m, k]``.
        b: int8 ``[k, n]``.

    Returns:
        int32 ``[m, n]``.

    Example:
        >>> x = np.array([[-128, 127]], dtype=np.int8)
        >>> gemm_i8(x, x.T.copy()).tolist()
        [[32513]]
    """
    k = a.shape[1]
    out: np.ndarray | None = None
    for start in range(0, max(k, 1), EXACT_K):
        stop = min(start + EXACT_K, k)
        product = _exact_f32(a[:, start:stop], b[start:stop])
        chunk = product.astype(np.int32)
        if out is None:
            out = chunk
        else:
            out += chunk
    assert out is not None
    return out


def _exact_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of int8 operands with an inner dim of at most ``EXACT_K``, in float32: exact integers."""
    product: np.ndarray = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return product


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
            if lhs.shape[1] <= EXACT_K:  # the float32 product is the exact integer one already
                product = _exact_f32(lhs.values, rhs.values)
            else:
                product = gemm_i8(lhs.values, rhs.values).astype(np.float32)
            product *= scale
            return product.astype(self.float_dtype.numpy, copy=False)
        if not is_quantized(lhs) and is_quantized(rhs) and _int8_per_tensor(rhs) and len(lhs.shape) == 2:
            # one scale for the whole weight factors out of the sum: it multiplies whichever is smaller,
            # the weight [k, n] or the product [m, n] (a batch of activations usually has m > k)
            scale = np.float32(rhs.scales.reshape(()))
            weight = rhs.values.astype(np.float32)
            if lhs.shape[0] > rhs.shape[0]:
                weight *= scale
            product = np.matmul(lhs.astype(np.float32, copy=False), weight)
            if lhs.shape[0] <= rhs.shape[0]:
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
        """``lhs @ dequantize(rhs)``, dequantizing at most ``_TILE_VALUES`` values of ``rhs`` at a time."""
        k, n = rhs.shape
        out: np.ndarray | None = None
        scheme = rhs.dtype
        stored = rhs.values
        if scheme.store is QuantStore.PACKED_U32:
            stored = _codec.unpack(_codec.NUMPY, stored, scheme, rhs.shape)
        scales = rhs.scales.astype(np.float32)
        block = scheme.block_size
        lhs32 = lhs.astype(np.float32, copy=False)
        tile = max(1, _TILE_VALUES // max(n, 1))
        for start in range(0, k, tile):
            stop = min(start + tile, k)
            rows = stored[start:stop].astype(np.float32).reshape(stop - start, n // block, block)
            weight = (rows * scales[start:stop, :, None]).reshape(stop - start, n)
            product = lhs32[:, start:stop] @ weight
            if out is None:
                out = product
            else:
                out += product
        if out is None:  # an inner dim of 0
            out = np.zeros((lhs.shape[0], n), dtype=np.float32)
        return out.astype(self.float_dtype.numpy, copy=False)
