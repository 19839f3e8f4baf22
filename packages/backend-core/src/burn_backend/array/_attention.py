"""Scaled dot-product attention over an array namespace, forward and backward (the interface's forms,
``burn_backend._ops._attention``, in a few array expressions). f16 and bf16 compute in f32."""

from __future__ import annotations

import math
from typing import Any

from .._dtype import DType
from .._ops._attention import AttentionBackward
from .._options import AttentionOptions

Array = Any


def _repeat_heads(xp: Any, array: Array, heads: int) -> Array:
    kv_heads = array.shape[1]
    return array if kv_heads == heads else xp.repeat(array, heads // kv_heads, axis=1)


def _sum_heads(xp: Any, grad: Array, kv_heads: int) -> Array:
    batch, heads, seq, dim = grad.shape
    if kv_heads == heads:
        return grad
    return xp.sum(xp.reshape(grad, (batch, kv_heads, heads // kv_heads, seq, dim)), axis=2)


def _weights(
    self: Any, q: Array, k: Array, mask: Array | None, attn_bias: Array | None, options: AttentionOptions
) -> tuple[Array, Array | None]:
    """The softmax weights of the widened ``q`` and ``k`` (heads repeated), zeros on fully masked rows,
    and ``tanh(raw / softcap)`` where there is a softcap."""
    xp: Any = self.xp
    scale = options.scale if options.scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = self.runtime.matmul(q, xp.permute_dims(k, (0, 1, 3, 2)))
    scores *= scale
    capped = None
    if options.softcap is not None:
        capped = xp.tanh(scores / options.softcap)
        scores = capped * options.softcap
    hidden = mask
    if options.is_causal:
        seq_q, seq_k = scores.shape[-2:]
        future = xp.triu(xp.ones((seq_q, seq_k), dtype=self.runtime.dtype(DType.BOOL)), k=1)
        hidden = future if hidden is None else hidden | future
    if hidden is not None:
        scores = xp.where(hidden, -math.inf, scores)
    if attn_bias is not None:
        scores = scores + self.runtime.widen(attn_bias)
    peak = xp.max(scores, axis=-1, keepdims=True)
    weights = xp.exp(scores - xp.where(xp.isfinite(peak), peak, 0.0))  # a fully masked row: zeros
    total = xp.sum(weights, axis=-1, keepdims=True)
    weights /= xp.where(total == 0.0, 1.0, total)
    return weights, capped


def attention(
    self: Any,
    query: Array,
    key: Array,
    value: Array,
    mask: Array | None,
    attn_bias: Array | None,
    options: AttentionOptions,
) -> Array:
    xp: Any = self.xp
    widen = self.runtime.widen
    heads = query.shape[1]
    k, v = _repeat_heads(xp, widen(key), heads), _repeat_heads(xp, widen(value), heads)
    weights, _ = _weights(self, widen(query), k, mask, attn_bias, options)
    return self.runtime.narrow(self.runtime.matmul(weights, v), query.dtype)


def attention_backward(
    self: Any,
    query: Array,
    key: Array,
    value: Array,
    mask: Array | None,
    attn_bias: Array | None,
    options: AttentionOptions,
    output: Array,
    output_grad: Array,
) -> AttentionBackward:
    xp: Any = self.xp
    widen, matmul = self.runtime.widen, self.runtime.matmul
    heads, kv_heads = query.shape[1], key.shape[1]
    q, grad = widen(query), widen(output_grad)
    k, v = _repeat_heads(xp, widen(key), heads), _repeat_heads(xp, widen(value), heads)
    weights, capped = _weights(self, q, k, mask, attn_bias, options)
    value_grad = matmul(xp.permute_dims(weights, (0, 1, 3, 2)), grad)
    scores_grad = matmul(grad, xp.permute_dims(v, (0, 1, 3, 2)))
    scores_grad -= xp.sum(grad * widen(output), axis=-1, keepdims=True)
    scores_grad *= weights
    bias_grad = None
    if attn_bias is not None:
        summed = tuple(d for d in range(4) if attn_bias.shape[d] == 1 and scores_grad.shape[d] != 1)
        bias_grad = xp.sum(scores_grad, axis=summed, keepdims=True) if summed else scores_grad
        bias_grad = self.runtime.narrow(bias_grad, attn_bias.dtype)
    # new arrays from here: the bias gradient may be scores_grad itself
    if capped is not None:
        scores_grad = scores_grad * (1.0 - capped * capped)
    scores_grad = scores_grad * (options.scale if options.scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    query_grad = matmul(scores_grad, k)
    key_grad = _sum_heads(xp, matmul(xp.permute_dims(scores_grad, (0, 1, 3, 2)), q), kv_heads)
    narrow = self.runtime.narrow
    return AttentionBackward(
        narrow(query_grad, query.dtype),
        narrow(key_grad, key.dtype),
        narrow(_sum_heads(xp, value_grad, kv_heads), value.dtype),
        bias_grad,
    )
