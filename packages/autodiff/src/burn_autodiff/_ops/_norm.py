"""The graph specs of attention and the normalizations: each gradient is one call of the inner
backend's backward op (``attention_backward``, ``layer_norm_backward``, ``rms_norm_backward``,
``group_norm_backward``, ``batch_norm_backward``), so a backend with fused kernels runs them both ways.

Absent parameters are no inputs at all (a kept input must be a tensor); the backward ops return
``None`` for them, and the specs hand back one gradient per recorded input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burn_backend import Backend

from .._graph import OpSpec

P = Any  # a primitive of the inner backend
Grads = Sequence[P | None]


def _picked(grads: Sequence[P | None], present: Sequence[bool]) -> tuple[P | None, ...]:
    return tuple(grad for grad, keep in zip(grads, present) if keep)


def _attention_spec(with_bias: bool) -> OpSpec:
    """``attention``: inputs ``(query, key, value[, attn_bias])``, args ``(mask, options)``; backward
    reads the inputs and the output."""

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        mask, options = args
        bias = xs[3] if with_bias else None
        grads = b.attention_backward(xs[0], xs[1], xs[2], mask, bias, options, out, g)
        return _picked(grads, (True, True, True, with_bias))

    return OpSpec("attention", backward, keeps_inputs=tuple(range(3 + with_bias)), keeps_output=True)


ATTENTION = {with_bias: _attention_spec(with_bias) for with_bias in (False, True)}


def _norm_spec(name: str, with_gamma: bool, with_beta: bool) -> OpSpec:
    """``layer_norm``, ``rms_norm`` or ``group_norm``: inputs ``(x[, gamma][, beta])``, args the op's
    arguments after its parameters (``(epsilon,)`` or ``(num_groups, epsilon)``). Being memory-bound,
    the op is recomputed under balanced checkpointing rather than kept."""
    has_beta = name != "rms_norm"  # RMS norm's signature has no beta

    def params(xs: Sequence[Any]) -> tuple[P | None, ...]:
        rest = iter(xs[1:])
        gamma = next(rest) if with_gamma else None
        beta = next(rest) if with_beta else None
        return (xs[0], gamma, beta) if has_beta else (xs[0], gamma)

    def forward(b: Backend, xs: Sequence[Any], args: Any) -> P:
        return getattr(b, name)(*params(xs), *args)

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        grads = getattr(b, f"{name}_backward")(*params(xs), *args, g)
        return _picked(grads, (True, with_gamma, with_beta))

    kept = tuple(range(1 + with_gamma + with_beta))
    return OpSpec(name, backward, forward, keeps_inputs=kept)


NORMS = {
    (name, with_gamma, with_beta): _norm_spec(name, with_gamma, with_beta)
    for name in ("layer_norm", "rms_norm", "group_norm")
    for with_gamma in (False, True)
    for with_beta in (False, True)
    if name != "rms_norm" or not with_beta
}


def _batch_norm_spec(with_gamma: bool, with_beta: bool) -> OpSpec:
    """``batch_norm`` (either form): inputs ``(x[, gamma][, beta])``, args ``(mean, invstd, training)``
    with the statistics the forward normalized by (the batch's, or the running ones as constants)."""

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        mean, invstd, training = args
        rest = iter(xs[1:])
        gamma = next(rest) if with_gamma else None
        beta = next(rest) if with_beta else None
        grads = b.batch_norm_backward(xs[0], gamma, beta, mean, invstd, training, g)
        return _picked(grads, (True, with_gamma, with_beta))

    return OpSpec("batch_norm", backward, keeps_inputs=tuple(range(1 + with_gamma + with_beta)))


BATCH_NORM = {
    (with_gamma, with_beta): _batch_norm_spec(with_gamma, with_beta)
    for with_gamma in (False, True)
    for with_beta in (False, True)
}
