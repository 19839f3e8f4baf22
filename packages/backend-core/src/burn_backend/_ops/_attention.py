"""Scaled dot-product attention in ``ModuleOps``: the forward op and its backward op.

The defaults are written over float, int and bool ops and compute f16 and bf16 in f32 (``in_f32``).
The backward recomputes the softmax weights ``P`` from the inputs and takes the forward's ``output``
``O`` for the flash-attention form of the softmax gradient: ``dV = P^T dO``, ``dP = dO V^T``,
``dS = P * (dP - rowsum(dO * O))`` (``rowsum(dO * O) = rowsum(P * dP)``), then through the softcap's
``tanh`` and the scale to ``dQ = dS' K`` and ``dK = dS'^T Q``. Masked keys and fully masked rows have
``P = 0``, so they pass no gradient; key and value heads shared by several query heads sum theirs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from .._dtype import DType
from ._low_precision import in_f32

if TYPE_CHECKING:
    from .._options import AttentionOptions

P = Any  # a primitive of the backend

_FINITE_MIN = {DType.F64: -1.7976931348623157e308, DType.F32: -3.4028234663852886e38, DType.F16: -65504.0}
_FINITE_MIN[DType.BF16] = -3.3895313892515355e38
_TINY = {DType.F64: 2.2250738585072014e-308, DType.F32: 1.1754943508222875e-38, DType.F16: 6.103515625e-05}
_TINY[DType.BF16] = 1.1754943508222875e-38


class AttentionBackward(NamedTuple):
    """The gradients ``ModuleOps.attention_backward`` returns, each of its input's shape (key and value
    with their own, possibly fewer, heads); ``attn_bias_grad`` is ``None`` where the forward had no
    bias."""

    query_grad: Any
    key_grad: Any
    value_grad: Any
    attn_bias_grad: Any | None


def _repeat_heads(b: Any, tensor: P, heads: int) -> P:
    """``tensor [batch, kv_heads, seq, dim]`` with each head repeated to ``heads`` heads (in order)."""
    batch, kv_heads, seq, dim = tensor.shape
    if kv_heads == heads:
        return tensor
    group = heads // kv_heads
    grown = b.float_expand(
        b.float_reshape(tensor, (batch, kv_heads, 1, seq, dim)), (batch, kv_heads, group, seq, dim)
    )
    return b.float_reshape(grown, (batch, heads, seq, dim))


def _sum_heads(b: Any, grad: P, kv_heads: int) -> P:
    """The inverse of ``_repeat_heads`` for gradients: the heads of each group summed."""
    batch, heads, seq, dim = grad.shape
    if kv_heads == heads:
        return grad
    grouped = b.float_reshape(grad, (batch, kv_heads, heads // kv_heads, seq, dim))
    return b.float_reshape(b.float_sum_dim(grouped, 2), (batch, kv_heads, seq, dim))


def _scale(options: AttentionOptions, head_dim: int) -> float:
    return options.scale if options.scale is not None else 1.0 / math.sqrt(head_dim)


def _weights(
    b: Any, query: P, key: P, mask: P | None, attn_bias: P | None, options: AttentionOptions
) -> tuple[P, P | None]:
    """The softmax weights ``[batch, heads, seq_q, seq_k]`` (zeros on a fully masked row) and, with a
    softcap, ``tanh(raw scores / softcap)`` for the backward."""
    batch, heads, seq_q, head_dim = query.shape
    seq_k = key.shape[2]
    scores = b.float_mul_scalar(b.float_matmul(query, b.float_transpose(key)), _scale(options, head_dim))
    capped = None
    if options.softcap is not None:
        capped = b.float_tanh(b.float_div_scalar(scores, options.softcap))
        scores = b.float_mul_scalar(capped, options.softcap)
    full = (batch, heads, seq_q, seq_k)
    if mask is not None:
        scores = b.float_mask_fill(scores, b.bool_expand(mask, full), -math.inf)
    if options.is_causal:
        device = b.float_device(query)
        rows = b.int_reshape(b.int_arange(0, seq_q, device, b.int_dtype), (seq_q, 1))
        columns = b.int_reshape(b.int_arange(0, seq_k, device, b.int_dtype), (1, seq_k))
        future = b.bool_reshape(b.int_lower(rows, columns), (1, 1, seq_q, seq_k))
        scores = b.float_mask_fill(scores, b.bool_expand(future, full), -math.inf)
    if attn_bias is not None:
        scores = b.float_add(scores, attn_bias)
    dtype = DType.of(scores.dtype)
    # a row with every key masked has max -inf: clamping keeps exp() at 0 instead of NaN
    peak = b.float_clamp_min(b.float_max_dim(scores, 3), _FINITE_MIN[dtype])
    weights = b.float_exp(b.float_sub(scores, peak))
    total = b.float_clamp_min(b.float_sum_dim(weights, 3), _TINY[dtype])
    return b.float_div(weights, total), capped


def _reduce_to(b: Any, grad: P, shape: tuple[int, ...]) -> P:
    """``grad`` (rank 4) summed over the dims where ``shape`` (rank 4) broadcasts."""
    for dim, size in enumerate(shape):
        if size == 1 and grad.shape[dim] != 1:
            grad = b.float_sum_dim(grad, dim)
    return grad


@in_f32
def attention(
    self: Any,
    query: P,
    key: P,
    value: P,
    mask: P | None,
    attn_bias: P | None,
    options: AttentionOptions,
) -> P:
    """Scaled dot-product attention on ``[batch, heads, seq, dim]``: ``softmax(scores) @ value``.

    ``scores = query @ key^T * scale``, then softcapped, then masked (``mask`` true and, if causal,
    keys after the query position: ``-inf``), then ``attn_bias`` added. Rows with every key masked
    give zeros. ``key``/``value`` may have fewer heads than ``query`` (grouped-query attention: query
    head ``h`` reads key head ``h // (heads / kv_heads)``). ``mask`` and ``attn_bias`` broadcast to
    ``[batch, heads, seq_q, seq_k]``. There is no dropout (as Burn's op).
    """
    b: Any = self
    heads = query.shape[1]
    weights, _ = _weights(b, query, _repeat_heads(b, key, heads), mask, attn_bias, options)
    return b.float_matmul(weights, _repeat_heads(b, value, heads))


@in_f32
def attention_backward(
    self: Any,
    query: P,
    key: P,
    value: P,
    mask: P | None,
    attn_bias: P | None,
    options: AttentionOptions,
    output: P,
    output_grad: P,
) -> AttentionBackward:
    """The gradients of ``attention`` given its ``output`` and ``output_grad`` (both ``[batch, heads,
    seq_q, value_dim]``), as an ``AttentionBackward``; ``attn_bias_grad`` has ``attn_bias``'s
    (broadcasting) shape. The weights are recomputed (see the module docstring for the form)."""
    b: Any = self
    heads, kv_heads = query.shape[1], key.shape[1]
    key_full, value_full = _repeat_heads(b, key, heads), _repeat_heads(b, value, heads)
    weights, capped = _weights(b, query, key_full, mask, attn_bias, options)
    value_grad = b.float_matmul(b.float_transpose(weights), output_grad)
    weights_grad = b.float_matmul(output_grad, b.float_transpose(value_full))
    row = b.float_sum_dim(b.float_mul(output_grad, output), 3)
    scores_grad = b.float_mul(weights, b.float_sub(weights_grad, row))
    bias_grad = None if attn_bias is None else _reduce_to(b, scores_grad, tuple(attn_bias.shape))
    if capped is not None:
        # d(softcap * tanh(s / softcap)) / ds = 1 - tanh^2
        scores_grad = b.float_mul(
            scores_grad, b.float_neg(b.float_add_scalar(b.float_mul(capped, capped), -1.0))
        )
    scores_grad = b.float_mul_scalar(scores_grad, _scale(options, query.shape[3]))
    query_grad = b.float_matmul(scores_grad, key_full)
    key_grad = b.float_matmul(b.float_transpose(scores_grad), query)
    return AttentionBackward(
        query_grad, _sum_heads(b, key_grad, kv_heads), _sum_heads(b, value_grad, kv_heads), bias_grad
    )
