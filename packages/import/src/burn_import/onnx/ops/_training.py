"""Training operators of ``ai.onnx.preview.training`` (``Adam``, ``Adagrad``, ``Momentum``), the
stateful ``CausalConvWithState``, and ``Dropout``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from burn_backend import ConvOptions, Tensor
from burn_backend import activation as A
from burn_backend import module as F

from .._ir import Node
from ._registry import Context, Value, register, to_tensor

__all__: list[str] = []

_TRAINING = "ai.onnx.preview.training"

Update = Callable[..., tuple[Tensor, ...]]


def _grouped(ctx: Context, values: tuple[Value, ...], per: int, update: Update) -> tuple[Tensor, ...]:
    """Apply ``update(r, t, x, g, *state)`` to each of the ``n`` parameter groups laid out as ONNX's
    training ops take them (``R, T, X1..Xn, G1..Gn, S1..Sn, ...``)."""
    r, t = float(ctx.scalar(values[0])), int(ctx.scalar(values[1]))
    rest = [ctx.tensor(v) for v in values[2:]]
    n = len(rest) // per
    outputs: list[list[Tensor]] = [[] for _ in range(per - 1)]
    for i in range(n):
        group = [rest[k * n + i] for k in range(per)]
        for store, value in zip(outputs, update(r, t, *group)):
            store.append(value)
    return tuple(v for store in outputs for v in store)


@register(
    "Adam", attrs=("alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"), domain=_TRAINING
)
def adam(ctx: Context, *values: Value) -> tuple[Tensor, ...]:
    alpha, beta = float(ctx.attr("alpha", 0.9)), float(ctx.attr("beta", 0.999))
    eps = float(ctx.attr("epsilon", 1e-6))
    norm, post = float(ctx.attr("norm_coefficient", 0.0)), float(ctx.attr("norm_coefficient_post", 0.0))

    def update(r: float, t: int, x: Tensor, g: Tensor, v: Tensor, h: Tensor) -> tuple[Tensor, ...]:
        g = x.mul_scalar(norm).add(g)
        v = v.mul_scalar(alpha).add(g.mul_scalar(1 - alpha))
        h = h.mul_scalar(beta).add(g.mul(g).mul_scalar(1 - beta))
        rate = r * math.sqrt(1 - beta**t) / (1 - alpha**t) if t > 0 else r
        x = x.sub(v.div(h.sqrt().add_scalar(eps)).mul_scalar(rate)).mul_scalar(1 - post)
        return x, v, h

    return _grouped(ctx, values, 4, update)


@register("Adagrad", attrs=("decay_factor", "epsilon", "norm_coefficient"), domain=_TRAINING)
def adagrad(ctx: Context, *values: Value) -> tuple[Tensor, ...]:
    decay, eps = float(ctx.attr("decay_factor", 0.0)), float(ctx.attr("epsilon", 0.0))
    norm = float(ctx.attr("norm_coefficient", 0.0))

    def update(r: float, t: int, x: Tensor, g: Tensor, h: Tensor) -> tuple[Tensor, ...]:
        rate = r / (1 + t * decay)
        g = x.mul_scalar(norm).add(g)
        h = h.add(g.mul(g))
        return x.sub(g.div(h.sqrt().add_scalar(eps)).mul_scalar(rate)), h

    return _grouped(ctx, values, 3, update)


def _check_momentum(node: Node) -> str | None:
    mode = node.attrs.get("mode", "standard")
    return None if mode in ("standard", "nesterov") else f"mode {mode!r} is not supported"


@register(
    "Momentum", attrs=("alpha", "beta", "mode", "norm_coefficient"), domain=_TRAINING, check=_check_momentum
)
def momentum(ctx: Context, *values: Value) -> tuple[Tensor, ...]:
    alpha, beta = float(ctx.attr("alpha")), float(ctx.attr("beta"))
    norm = float(ctx.attr("norm_coefficient"))
    nesterov = ctx.attr("mode", "standard") == "nesterov"

    def update(r: float, t: int, x: Tensor, g: Tensor, v: Tensor) -> tuple[Tensor, ...]:
        g = x.mul_scalar(norm).add(g)
        v = v.mul_scalar(alpha).add(g.mul_scalar(beta if t > 0 else 1.0))
        step = g.add(v.mul_scalar(alpha)) if nesterov else v
        return x.sub(step.mul_scalar(r)), v

    return _grouped(ctx, values, 3, update)


def _check_activation(node: Node) -> str | None:
    value = node.attrs.get("activation", "none")
    return None if value in ("none", "silu", "swish") else f"activation {value!r} is not supported"


@register("CausalConvWithState", attrs=("activation",), check=_check_activation)
def causal_conv_with_state(
    ctx: Context, x: Value, w: Value, b: Value = None, past: Value = None
) -> tuple[Tensor, Tensor]:
    t, weight = ctx.tensor(x), ctx.tensor(w)
    batch, channels, _ = t.dims()
    k = weight.dims()[2]
    state = (
        ctx.tensor(past) if past is not None else Tensor.zeros([batch, channels, k - 1], ctx.device, t.dtype)
    )
    padded = Tensor.cat([state, t], 2) if k > 1 else t
    bias = None if b is None else ctx.tensor(b)
    out = F.conv1d(padded, weight, bias, ConvOptions((1,), (0,), (1,), channels))
    if ctx.attr("activation", "none") in ("silu", "swish"):
        out = A.silu(out)
    length = padded.dims()[2]
    present = padded.narrow(2, length - (k - 1), k - 1) if k > 1 else padded.narrow(2, length, 0)
    return out, present


def _training(ctx: Context, training: Value) -> bool:
    return training is not None and bool(ctx.scalar(training))


@register("Dropout", attrs=("ratio", "seed", "is_test"))
def dropout(ctx: Context, x: Value, ratio: Value = None, training: Value = None) -> Any:
    """Dropout: the identity in inference, or in training with a ratio of 0 (the mask all true);
    random masks are not supported."""
    rate = ctx.attr("ratio", 0.5) if ratio is None else float(ctx.scalar(ratio))
    if _training(ctx, training) and rate != 0:
        raise ctx.error("Dropout in training mode with a non-zero ratio draws random masks: not supported")
    if ctx.wants(1):
        t = ctx.tensor(x)
        return x, to_tensor(np.ones(t.dims(), dtype=bool), ctx.device)
    return x
