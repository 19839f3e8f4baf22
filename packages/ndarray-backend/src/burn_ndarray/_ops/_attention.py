"""NdArray's scaled dot-product attention: BLAS products and numba passes over blocks of query rows,
forward and backward.

The array code (``burn_backend.array``) makes about ten NumPy passes over the ``[batch, heads, seq_q,
seq_k]`` scores between its two products (scale, causal mask, max, subtract, exp, sum, divide), and the
backward as many again. Here the scores of a block of query rows come from one batched GEMM; one numba
pass per row scales them, hides the future keys (causal) and subtracts the row's maximum, NumPy's
vectorized ``exp`` follows (numba's is scalar), and a second pass divides by the rows' sums, in place.
The backward turns ``dO V^T`` into the scores' gradient ``P * (dP - rowsum(dO * O)) * scale`` in one
more pass. Blocks of query rows hold at most ``BLOCK_ELEMENTS`` scores instead of the whole ``[b, h, s,
s]`` twice, and causal blocks stop at the key of their last row (about half the products' work on long
sequences). A ``mask`` is applied with NumPy before the kernel (the scores then scaled there too); a
softcap or an ``attn_bias``, and dtypes other than f32 and f64, take the array code.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
from numba import njit, prange

from burn_backend import AttentionBackward, AttentionOptions

from .. import _kernels, _numba, _threads

Array = Any
BLOCK_ELEMENTS = 1 << 20
"""Scores per block of query rows (4 MB in f32): past this, the rows are taken in blocks."""
CAUSAL_ROWS = 64
"""The fewest query rows a causal block takes: smaller GEMMs lose more speed than the skipped keys save."""
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@njit(cache=True, error_model="numpy")
def _shift_rows(
    scores: Array, scale: Any, causal: bool, row0: int, first: int, last: int
) -> None:  # pragma: no cover - compiled
    """Rows ``first`` to ``last`` of ``scores [matrices, rows, keys]`` (flattened over the first two
    dims) scaled, causally masked (query ``row0 + r`` sees keys up to itself) and shifted by their
    maximum in place, ready for ``exp``; a row with every key hidden becomes ``-inf`` (weights 0)."""
    rows, keys = scores.shape[1], scores.shape[2]
    for index in range(first, last):
        row = scores[index // rows, index % rows]
        visible = min(keys, row0 + index % rows + 1) if causal else keys
        peak = -math.inf
        for j in range(visible):
            value = row[j] * scale
            row[j] = value
            peak = max(peak, value)
        if peak == -math.inf:  # every key hidden (or -inf): exp gives 0 everywhere, not NaN
            visible = 0
        for j in range(visible):
            row[j] = row[j] - peak
        for j in range(visible, keys):
            row[j] = -math.inf


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _normalize_rows(weights: Array, first: int, last: int) -> None:  # pragma: no cover - compiled
    """Rows ``first`` to ``last`` of ``exp``'d scores divided by their sums (rows of zeros stay)."""
    rows, keys = weights.shape[1], weights.shape[2]
    for index in range(first, last):
        row = weights[index // rows, index % rows]
        total = 0.0
        for j in range(keys):
            total += row[j]
        if total > 0.0:
            inverse = 1.0 / total
            for j in range(keys):
                row[j] = row[j] * inverse


@njit(cache=True, error_model="numpy", parallel=True)
def _shift_parallel(
    scores: Array, scale: Any, causal: bool, row0: int, chunks: int
) -> None:  # pragma: no cover - compiled
    total = scores.shape[0] * scores.shape[1]
    for t in prange(chunks):
        _shift_rows(scores, scale, causal, row0, t * total // chunks, (t + 1) * total // chunks)


@njit(cache=True, error_model="numpy", parallel=True)
def _normalize_parallel(weights: Array, chunks: int) -> None:  # pragma: no cover - compiled
    total = weights.shape[0] * weights.shape[1]
    for t in prange(chunks):
        _normalize_rows(weights, t * total // chunks, (t + 1) * total // chunks)


@njit(cache=True, error_model="numpy")
def _scores_grad_rows(
    grad: Array, weights: Array, delta: Array, scale: float, first: int, last: int
) -> None:  # pragma: no cover - compiled
    """``grad`` (``dO V^T``) becomes ``weights * (grad - delta) * scale`` in place, rows ``first`` to
    ``last``."""
    rows, keys = grad.shape[1], grad.shape[2]
    for index in range(first, last):
        m, r = index // rows, index % rows
        row, p = grad[m, r], weights[m, r]
        shift = delta[m, r]
        for j in range(keys):
            row[j] = p[j] * (row[j] - shift) * scale


@njit(cache=True, error_model="numpy", parallel=True)
def _scores_grad_parallel(
    grad: Array, weights: Array, delta: Array, scale: float, chunks: int
) -> None:  # pragma: no cover - compiled
    total = grad.shape[0] * grad.shape[1]
    for t in prange(chunks):
        _scores_grad_rows(grad, weights, delta, scale, t * total // chunks, (t + 1) * total // chunks)


def _chunks(size: int, rows: int) -> int:
    if rows < 2 or not _kernels.parallel(size):
        return 1
    return min(rows, _threads.numba_threads())


def _repeat_heads(array: Array, heads: int) -> Array:
    kv_heads = array.shape[1]
    return array if kv_heads == heads else np.repeat(array, heads // kv_heads, axis=1)


def _sum_heads(grad: Array, kv_heads: int) -> Array:
    batch, heads, seq, dim = grad.shape
    if kv_heads == heads:
        return grad
    return grad.reshape(batch, kv_heads, heads // kv_heads, seq, dim).sum(axis=2)


def _block_rows(batch: int, heads: int, seq_q: int, seq_k: int, causal: bool) -> int:
    """Query rows per block: the scores of a block within ``BLOCK_ELEMENTS``; causally, at most an
    eighth of the rows (from ``CAUSAL_ROWS`` on), so that the blocks skip the keys after their last row."""
    rows = max(1, min(seq_q, BLOCK_ELEMENTS // max(1, batch * heads * seq_k)))
    if causal:
        rows = min(rows, max(CAUSAL_ROWS, -(-seq_q // 8)))
    return rows


class _Attention:
    """The operands of one call, widened where needed, heads repeated, and the block of rows each
    pass takes."""

    def __init__(self, query: Array, key: Array, value: Array, mask: Array | None, options: AttentionOptions):
        self.q, self.heads, self.kv_heads = query, query.shape[1], key.shape[1]
        self.k, self.v = _repeat_heads(key, self.heads), _repeat_heads(value, self.heads)
        self.kt = np.swapaxes(self.k, 2, 3)
        self.mask = None if mask is None else mask.reshape((1,) * (4 - mask.ndim) + mask.shape)
        self.causal = options.is_causal
        self.scale = options.scale if options.scale is not None else 1.0 / math.sqrt(query.shape[-1])
        batch, self.seq_q, self.seq_k = int(query.shape[0]), int(query.shape[2]), int(key.shape[2])
        self.block = _block_rows(batch, self.heads, self.seq_q, self.seq_k, self.causal)

    def keys(self, stop: int) -> int:
        """The keys a block of query rows ending at ``stop`` sees: causally, none past its last row."""
        return min(self.seq_k, stop) if self.causal else self.seq_k

    def weights(self, start: int, stop: int) -> Array:
        """The softmax weights of query rows ``start`` to ``stop`` over their ``keys(stop)`` keys,
        ``[batch, heads, rows, keys]``."""
        keys = self.keys(stop)
        scores = np.matmul(self.q[:, :, start:stop], self.kt[..., :keys])
        scale = self.scale
        if self.mask is not None:
            rows = self.mask if self.mask.shape[2] == 1 else self.mask[:, :, start:stop]
            scores *= scale
            hidden = rows[..., :keys] if rows.shape[3] > 1 else rows
            np.copyto(scores, -math.inf, where=hidden)  # broadcast: 3.5x a boolean index's speed
            scale = 1.0
        flat = scores.reshape(-1, stop - start, keys)
        chunks = _chunks(flat.size, flat.shape[0] * flat.shape[1])
        scale = flat.dtype.type(scale)
        if chunks > 1:
            _shift_parallel(flat, scale, self.causal, start, chunks)
        else:
            _shift_rows(flat, scale, self.causal, start, 0, flat.shape[0] * flat.shape[1])
        np.exp(flat, out=flat)  # NumPy's vectorized exp: numba's is scalar
        if chunks > 1:
            _normalize_parallel(flat, chunks)
        else:
            _normalize_rows(flat, 0, flat.shape[0] * flat.shape[1])
        return scores

    def blocks(self) -> list[tuple[int, int]]:
        return [(s, min(s + self.block, self.seq_q)) for s in range(0, self.seq_q, self.block)]


def attention(query: Array, key: Array, value: Array, mask: Array | None, options: AttentionOptions) -> Array:
    """``softmax(query @ key^T * scale, masked) @ value`` of f32 or f64 operands, as
    ``ModuleOps.attention`` without a softcap or an ``attn_bias``."""
    op = _Attention(query, key, value, mask, options)
    out = np.empty((*query.shape[:3], value.shape[-1]), dtype=query.dtype)
    for start, stop in op.blocks():
        np.matmul(op.weights(start, stop), op.v[:, :, : op.keys(stop)], out=out[:, :, start:stop])
    return out


def attention_backward(
    query: Array,
    key: Array,
    value: Array,
    mask: Array | None,
    options: AttentionOptions,
    output: Array,
    output_grad: Array,
) -> AttentionBackward:
    """The gradients of ``attention`` (the weights recomputed block by block, ``rowsum(dO * O)`` for
    the softmax's), as ``ModuleOps.attention_backward`` without a softcap or an ``attn_bias``."""
    op = _Attention(query, key, value, mask, options)
    delta = np.einsum("bhsd,bhsd->bhs", output_grad, output)
    query_grad = np.empty_like(query)
    key_grad = np.zeros(op.k.shape, dtype=query.dtype)
    value_grad = np.zeros(op.v.shape, dtype=query.dtype)
    vt = np.swapaxes(op.v, 2, 3)
    for start, stop in op.blocks():
        keys = op.keys(stop)
        weights = op.weights(start, stop)
        grad = output_grad[:, :, start:stop]
        value_grad[:, :, :keys] += np.matmul(np.swapaxes(weights, 2, 3), grad)
        scores_grad = np.matmul(grad, vt[..., :keys])
        flat = scores_grad.reshape(-1, stop - start, keys)
        rows = delta[:, :, start:stop].reshape(flat.shape[:2])
        chunks = _chunks(flat.size, flat.shape[0] * flat.shape[1])
        args = (flat, weights.reshape(flat.shape), np.ascontiguousarray(rows), flat.dtype.type(op.scale))
        if chunks > 1:
            _scores_grad_parallel(*args, chunks)
        else:
            _scores_grad_rows(*args, 0, flat.shape[0] * flat.shape[1])
        np.matmul(scores_grad, op.k[:, :, :keys], out=query_grad[:, :, start:stop])
        key_grad[:, :, :keys] += np.matmul(np.swapaxes(scores_grad, 2, 3), query[:, :, start:stop])
    return AttentionBackward(
        query_grad, _sum_heads(key_grad, op.kv_heads), _sum_heads(value_grad, op.kv_heads), None
    )


def _fits(query: Array, key: Array, value: Array, attn_bias: Array | None, options: AttentionOptions) -> bool:
    """Whether the kernels take the call: f32 or f64 operands of one dtype with elements, no softcap and
    no ``attn_bias``, and numba available."""
    dtype = query.dtype
    return (
        dtype in _DTYPES
        and key.dtype == dtype
        and value.dtype == dtype
        and query.ndim == 4
        and query.size > 0
        and key.size > 0
        and attn_bias is None
        and options.softcap is None
        and _numba.kernels() is not None
    )


class AttentionOps:
    """NdArray's attention ops as the kernels above; the array code (after this class in NdArray's MRO)
    for what they do not take."""

    def attention(
        self, query: Array, key: Array, value: Array, mask: Array | None, attn_bias: Array | None,
        options: AttentionOptions,
    ) -> Array:  # fmt: skip
        if _fits(query, key, value, attn_bias, options):
            try:
                with np.errstate(all="ignore"):
                    return attention(query, key, value, mask, options)
            except Exception as error:
                _numba.disable(error)
        return cast(Any, super()).attention(query, key, value, mask, attn_bias, options)

    def attention_backward(
        self, query: Array, key: Array, value: Array, mask: Array | None, attn_bias: Array | None,
        options: AttentionOptions, output: Array, output_grad: Array,
    ) -> AttentionBackward:  # fmt: skip
        if _fits(query, key, value, attn_bias, options) and output_grad.dtype == query.dtype:
            try:
                with np.errstate(all="ignore"):
                    return attention_backward(query, key, value, mask, options, output, output_grad)
            except Exception as error:
                _numba.disable(error)
        args = (query, key, value, mask, attn_bias, options, output, output_grad)
        return cast(AttentionBackward, cast(Any, super()).attention_backward(*args))
