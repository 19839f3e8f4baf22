"""Attention operators: ``Attention`` (opset 23+: grouped heads, past keys and values, masks, causal
and sliding windows, softcap), ``RotaryEmbedding``, and the losses built on log-softmax
(``NegativeLogLikelihoodLoss``, ``SoftmaxCrossEntropyLoss``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import DType, Kind, Tensor
from burn_backend import activation as A

from .._ir import Node
from ._linalg import matmul
from ._registry import Context, Value, register, to_tensor
from ._util import target_dtype

__all__: list[str] = []

Array = np.ndarray[Any, Any]


def _heads(t: Tensor, heads: int) -> Tensor:
    b, s, hidden = t.dims()
    return t.reshape([b, s, heads, hidden // heads]).swap_dims(1, 2)


def _window(q: int, kv: int, offset: Array | int, left: int, right: int, causal: bool) -> Array:
    """Where each query may attend each key: ``[q, kv]`` or ``[batch, 1, q, kv]`` for per-batch
    offsets."""
    i = np.arange(q).reshape(q, 1)
    j = np.arange(kv).reshape(1, kv)
    per_batch = np.ndim(offset) > 0
    position = i + (np.reshape(offset, (-1, 1, 1)) if per_batch else int(offset))
    allowed = np.ones(np.broadcast_shapes(position.shape, j.shape), dtype=bool)
    if causal:
        allowed &= j <= position
    diff = position - j
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return allowed.reshape(-1, 1, q, kv) if per_batch else allowed


_ATTENTION_ATTRS = (
    "is_causal",
    "kv_num_heads",
    "q_num_heads",
    "qk_matmul_output_mode",
    "scale",
    "softcap",
    "softmax_precision",
    "left_window_size",
    "right_window_size",
)


@register("Attention", attrs=_ATTENTION_ATTRS)
def attention(
    ctx: Context,
    q_in: Value,
    k_in: Value,
    v_in: Value,
    mask_in: Value = None,
    past_key: Value = None,
    past_value: Value = None,
    nonpad: Value = None,
) -> Any:
    q, k, v = ctx.tensor(q_in), ctx.tensor(k_in), ctx.tensor(v_in)
    three_d = q.rank == 3
    if three_d:
        q = _heads(q, int(ctx.attr("q_num_heads")))
        k = _heads(k, int(ctx.attr("kv_num_heads")))
        v = _heads(v, int(ctx.attr("kv_num_heads")))
    dtype = q.dtype
    scale = ctx.attr("scale")
    scale = 1 / math.sqrt(q.dims()[3]) if scale is None else float(scale)
    root = float(np.asarray(math.sqrt(scale), dtype=dtype.numpy if dtype != DType.BF16 else np.float32))
    if past_key is not None:
        k = Tensor.cat([ctx.tensor(past_key), k], 2)
        v = Tensor.cat([ctx.tensor(past_value), v], 2)
    present_k, present_v = k, v
    n_q, n_kv = q.dims()[2], k.dims()[2]
    bias = Tensor.zeros([n_q, n_kv], ctx.device, dtype)
    if mask_in is not None:
        mask = ctx.tensor(mask_in)
        pad = n_kv - mask.dims()[-1]
        if mask.kind is Kind.BOOL:
            mask = Tensor.zeros(mask.dims(), ctx.device, dtype).mask_fill(mask.bool_not(), -math.inf)
        elif mask.dtype != dtype:
            mask = mask.cast(dtype)
        if pad > 0:
            filler = Tensor.full([*mask.dims()[:-1], pad], -math.inf, ctx.device, dtype)
            mask = Tensor.cat([mask, filler], mask.rank - 1)
        bias = bias.add(mask)
    causal = bool(int(ctx.attr("is_causal", 0)))
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    lengths = None if nonpad is None else ctx.array(nonpad).reshape(-1).astype(np.int64)
    if causal or left >= 0 or right >= 0:
        if past_key is None and lengths is not None:
            offset: Array | int = lengths - n_q
        else:
            offset = ctx.tensor(past_key).dims()[2] if past_key is not None else 0
        allowed = _window(n_q, n_kv, offset, left, right, causal)
        window = np.where(allowed, 0.0, -np.inf).astype(dtype.numpy)
        bias = bias.add(to_tensor(window, ctx.device))
    if lengths is not None:
        padding = np.arange(n_kv)[None, :] < lengths[:, None]
        padding = np.where(padding, 0.0, -np.inf).astype(dtype.numpy).reshape(-1, 1, 1, n_kv)
        bias = bias.add(to_tensor(padding, ctx.device))
    heads_q, heads_k = q.dims()[1], k.dims()[1]
    if heads_q != heads_k and heads_q % heads_k == 0:
        reps = heads_q // heads_k
        k = k.unsqueeze_dim(2).repeat_dim(2, reps).flatten(1, 2)
        v = v.unsqueeze_dim(2).repeat_dim(2, reps).flatten(1, 2)
    scores = matmul(q.mul_scalar(root), k.swap_dims(2, 3).mul_scalar(root))
    softcap = ctx.attr("softcap")
    if softcap is not None and float(softcap) > 0:
        scores = scores.div_scalar(float(softcap)).tanh().mul_scalar(float(softcap))
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    with_bias = scores.add(bias)
    qk_out = with_bias if mode == 2 else scores
    precision = ctx.attr("softmax_precision")
    work = with_bias if precision is None else with_bias.cast(target_dtype(ctx, precision))
    peak = work.max_dim(work.rank - 1)
    peak = peak.mask_fill(peak.is_inf(), 0.0)
    exp = work.sub(peak).exp()
    total = exp.sum_dim(exp.rank - 1)
    probs = exp.div(total.mask_fill(total.equal_elem(0), 1.0))
    masked_rows = bias.max_dim(bias.rank - 1).is_inf()
    probs = probs.mask_fill(masked_rows, 0.0) if masked_rows.rank <= probs.rank else probs
    if mode == 3:
        qk_out = probs
    probs = probs.cast(dtype)
    out = matmul(probs, v)
    if three_d:
        out = out.swap_dims(1, 2)
        out = out.reshape([out.dims()[0], out.dims()[1], -1])
    return out, present_k, present_v, qk_out.cast(dtype)


@register("RotaryEmbedding", attrs=("interleaved", "num_heads", "rotary_embedding_dim"))
def rotary_embedding(
    ctx: Context, x: Value, cos_cache: Value, sin_cache: Value, position_ids: Value = None
) -> Tensor:
    t = ctx.tensor(x)
    original = t.dims()
    if t.rank == 4:
        t = t.swap_dims(1, 2)
    else:
        b, s, hidden = original
        heads = int(ctx.attr("num_heads"))
        t = t.reshape([b, s, heads, hidden // heads])
    head = t.dims()[3]
    dim = int(ctx.attr("rotary_embedding_dim", 0)) or head
    cos, sin = ctx.tensor(cos_cache), ctx.tensor(sin_cache)
    if position_ids is not None:
        ids = ctx.tensor(position_ids).int("i64")
        shape = [*ids.dims(), cos.dims()[-1]]
        cos = cos.select(0, ids.reshape([-1])).reshape(shape)
        sin = sin.select(0, ids.reshape([-1])).reshape(shape)
    cos, sin = cos.unsqueeze_dim(2), sin.unsqueeze_dim(2)
    rotate, keep = t.narrow(3, 0, dim), t.narrow(3, dim, head - dim)
    interleaved = int(ctx.attr("interleaved", 0))
    if interleaved:
        pairs = rotate.reshape([*rotate.dims()[:3], dim // 2, 2])
        x1, x2 = pairs.narrow(4, 0, 1).squeeze_dim(4), pairs.narrow(4, 1, 1).squeeze_dim(4)
    else:
        x1, x2 = rotate.narrow(3, 0, dim // 2), rotate.narrow(3, dim // 2, dim // 2)
    real = cos.mul(x1).sub(sin.mul(x2))
    imag = sin.mul(x1).add(cos.mul(x2))
    if interleaved:
        rotated = Tensor.stack([real, imag], 4).reshape(rotate.dims())
    else:
        rotated = Tensor.cat([real, imag], 3)
    out = Tensor.cat([rotated, keep], 3) if head > dim else rotated
    if len(original) == 3:
        return out.reshape(original)
    return out.swap_dims(1, 2)


# -- losses ---------------------------------------------------------------------------------------
def _check_reduction(node: Node) -> str | None:
    value = node.attrs.get("reduction", "mean")
    return None if value in ("none", "sum", "mean") else f"reduction {value!r} is not supported"


def nll(ctx: Context, log_prob: Tensor, target: Tensor, weight: Tensor | None) -> Tensor:
    """ONNX's ``NegativeLogLikelihoodLoss`` of ``log_prob [N, C, ...]`` and int ``target [N, ...]``."""
    target = target.int("i64")
    ignore = ctx.attr("ignore_index")
    keep = target.ones_like().bool() if ignore is None else target.not_equal_elem(int(ignore))
    safe = target.mask_fill(keep.bool_not(), 0)
    picked = log_prob.gather(1, safe.unsqueeze_dim(1)).squeeze_dim(1).neg()
    if weight is not None:
        w = weight.select(0, safe.reshape([-1])).reshape(safe.dims())
    else:
        w = Tensor.ones(safe.dims(), ctx.device, log_prob.dtype)
    w = w.mask_fill(keep.bool_not(), 0.0)
    loss = picked.mul(w)
    reduction = ctx.attr("reduction", "mean")
    if reduction == "none":
        return loss
    total = loss.sum().reshape([])
    if reduction == "sum":
        return total
    return total.div(w.sum().reshape([]))


@register("NegativeLogLikelihoodLoss", attrs=("ignore_index", "reduction"), check=_check_reduction)
def negative_log_likelihood_loss(ctx: Context, x: Value, target: Value, weight: Value = None) -> Tensor:
    w = None if weight is None else ctx.tensor(weight)
    return nll(ctx, ctx.tensor(x), ctx.tensor(target), w)


@register("SoftmaxCrossEntropyLoss", attrs=("ignore_index", "reduction"), check=_check_reduction)
def softmax_cross_entropy_loss(ctx: Context, scores: Value, labels: Value, weights: Value = None) -> Any:
    log_prob = A.log_softmax(ctx.tensor(scores), 1)
    w = None if weights is None else ctx.tensor(weights)
    loss = nll(ctx, log_prob, ctx.tensor(labels), w)
    return (loss, log_prob) if ctx.wants(1) else loss
