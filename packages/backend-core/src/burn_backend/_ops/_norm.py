"""The normalization ops of ``ModuleOps``: layer, RMS, group and batch norm, forward and backward.

Each op normalizes ``x`` over a set of its elements (the last dim; the last dim again; a group of
channels and the spatial dims of one sample; one channel over the batch and the spatial dims), then
scales by ``gamma`` and shifts by ``beta`` where given. The backward ops are the closed forms: with
``x^ = (x - mean) * invstd`` and ``gy = output_grad * gamma``, the input gradient is
``invstd * (gy - mean(gy) - x^ * mean(gy * x^))`` (means over the normalized set; RMS norm has no
``mean(gy)`` term), and ``gamma``'s and ``beta``'s are ``output_grad * x^`` and ``output_grad`` summed
per feature. The defaults are written over float ops (``b.float_*``) on a view of ``x`` whose normalized
set is one or two dims, and compute f16 and bf16 in f32 (``in_f32``).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ._low_precision import in_f32

P = Any  # a primitive of the backend


class NormBackward(NamedTuple):
    """The gradients a normalization's backward op returns: ``x_grad`` of ``x``'s shape, ``gamma_grad``
    and ``beta_grad`` of their parameters' shape, or ``None`` where the forward had no such parameter."""

    x_grad: Any
    gamma_grad: Any | None
    beta_grad: Any | None


class BatchNormTraining(NamedTuple):
    """What ``ModuleOps.batch_norm_training`` returns: the normalized ``output``; the updated
    ``running_mean`` and ``running_var`` (``None`` where none was given); the batch's ``mean`` and
    ``invstd`` (``1 / sqrt(var + epsilon)``, biased variance), each ``[channels]``, which
    ``batch_norm_backward`` reads."""

    output: Any
    running_mean: Any | None
    running_var: Any | None
    mean: Any
    invstd: Any


# -- building blocks over float ops ------------------------------------------------------------------
def _mean_over(b: Any, tensor: P, dims: tuple[int, ...]) -> P:
    """The mean of ``tensor`` over ``dims``, each kept (size 1)."""
    for dim in dims:
        tensor = b.float_mean_dim(tensor, dim)
    return tensor


def _sum_to(b: Any, tensor: P, dims: tuple[int, ...], size: int) -> P:
    """``tensor`` summed over ``dims`` and flattened to ``[size]`` (a parameter's gradient)."""
    for dim in dims:
        tensor = b.float_sum_dim(tensor, dim)
    return b.float_reshape(tensor, (size,))


def _invstd(b: Any, variance: P, epsilon: float) -> P:
    return b.float_recip(b.float_sqrt(b.float_add_scalar(variance, epsilon)))


def _affine(b: Any, y: P, gamma: P | None, beta: P | None, shape: tuple[int, ...]) -> P:
    """``y * gamma + beta`` with the parameters reshaped to ``shape`` (either may be absent)."""
    if gamma is not None:
        y = b.float_mul(y, b.float_reshape(gamma, shape))
    if beta is not None:
        y = b.float_add(y, b.float_reshape(beta, shape))
    return y


def _input_grad(b: Any, gy: P, normalized: P, invstd: P, dims: tuple[int, ...], centered: bool) -> P:
    """``invstd * (gy - mean(gy) - x^ * mean(gy * x^))`` over ``dims`` (no ``mean(gy)`` where the
    normalization does not center, as RMS norm)."""
    inner = b.float_sub(gy, b.float_mul(normalized, _mean_over(b, b.float_mul(gy, normalized), dims)))
    if centered:
        inner = b.float_sub(inner, _mean_over(b, gy, dims))
    return b.float_mul(inner, invstd)


def _norm_backward(
    b: Any,
    view: P,
    gamma: P | None,
    beta: P | None,
    grad: P,
    param_shape: tuple[int, ...],
    dims: tuple[int, ...],
    statistics: tuple[P, P] | None,
    epsilon: float,
    centered: bool = True,
    frozen: bool = False,
) -> tuple[P, P | None, P | None]:
    """The closed-form gradients of a normalization of ``view`` over ``dims`` with parameters shaped
    ``param_shape`` (broadcasting over ``view``); ``statistics`` are the saved ``(mean, invstd)``
    broadcasting to ``view``, or ``None`` to recompute them from ``view``. ``frozen`` statistics are
    constants (batch norm's running ones), so the input gradient is ``gy * invstd``."""
    if statistics is None:
        shifted = b.float_sub(view, _mean_over(b, view, dims)) if centered else view
        invstd = _invstd(b, _mean_over(b, b.float_mul(shifted, shifted), dims), epsilon)
    else:
        shifted = b.float_sub(view, statistics[0])
        invstd = statistics[1]
    normalized = b.float_mul(shifted, invstd)
    size = math.prod(param_shape)
    others = tuple(d for d, n in enumerate(param_shape) if n == 1 and view.shape[d] != 1)
    gamma_grad = None if gamma is None else _sum_to(b, b.float_mul(grad, normalized), others, size)
    beta_grad = None if beta is None else _sum_to(b, grad, others, size)
    gy = grad if gamma is None else b.float_mul(grad, b.float_reshape(gamma, param_shape))
    if frozen:
        return b.float_mul(gy, invstd), gamma_grad, beta_grad
    return _input_grad(b, gy, normalized, invstd, dims, centered), gamma_grad, beta_grad


def _channels_view(x: P) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``x [N, C, *]`` as ``[N, C, M]`` and the shape of a per-channel parameter over it."""
    batch, channels = x.shape[0], x.shape[1]
    return (batch, channels, math.prod(x.shape[2:])), (1, channels, 1)


@in_f32
def layer_norm(self: Any, x: P, gamma: P | None, beta: P | None, epsilon: float) -> P:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last dim (biased variance);
    ``gamma`` and ``beta`` are ``[d]`` or ``None``."""
    b: Any = self
    last = len(x.shape) - 1
    centered = b.float_sub(x, b.float_mean_dim(x, last))
    invstd = _invstd(b, b.float_mean_dim(b.float_mul(centered, centered), last), epsilon)
    return _affine(b, b.float_mul(centered, invstd), gamma, beta, (1,) * last + (x.shape[last],))


@in_f32
def layer_norm_backward(
    self: Any, x: P, gamma: P | None, beta: P | None, epsilon: float, output_grad: P
) -> NormBackward:
    """The gradients of ``layer_norm`` (``x``'s, ``gamma``'s and ``beta``'s) given ``output_grad``;
    the statistics are recomputed from ``x``."""
    last = len(x.shape) - 1
    shape = (1,) * last + (x.shape[last],)
    return NormBackward(*_norm_backward(self, x, gamma, beta, output_grad, shape, (last,), None, epsilon))


@in_f32
def rms_norm(self: Any, x: P, gamma: P | None, epsilon: float) -> P:
    """``x / sqrt(mean(x^2) + epsilon) * gamma`` over the last dim (PyTorch's ``rms_norm``);
    ``gamma`` is ``[d]`` or ``None``."""
    b: Any = self
    last = len(x.shape) - 1
    invstd = _invstd(b, b.float_mean_dim(b.float_mul(x, x), last), epsilon)
    return _affine(b, b.float_mul(x, invstd), gamma, None, (1,) * last + (x.shape[last],))


@in_f32
def rms_norm_backward(self: Any, x: P, gamma: P | None, epsilon: float, output_grad: P) -> NormBackward:
    """The gradients of ``rms_norm`` (``beta_grad`` is ``None``) given ``output_grad``."""
    last = len(x.shape) - 1
    shape = (1,) * last + (x.shape[last],)
    grads = _norm_backward(self, x, gamma, None, output_grad, shape, (last,), None, epsilon, False)
    return NormBackward(*grads)


@in_f32
def group_norm(self: Any, x: P, gamma: P | None, beta: P | None, num_groups: int, epsilon: float) -> P:
    """Group normalization of ``x [N, C, *]`` (PyTorch's ``group_norm``): each of ``num_groups``
    groups of consecutive channels of each sample normalized by its mean and biased variance, then
    ``gamma`` and ``beta`` (``[C]`` or ``None``) per channel."""
    b: Any = self
    batch, channels = x.shape[0], x.shape[1]
    spatial = math.prod(x.shape[2:])
    grouped = b.float_reshape(x, (batch, num_groups, channels // num_groups * spatial))
    centered = b.float_sub(grouped, b.float_mean_dim(grouped, 2))
    invstd = _invstd(b, b.float_mean_dim(b.float_mul(centered, centered), 2), epsilon)
    y = b.float_reshape(b.float_mul(centered, invstd), (batch, channels, spatial))
    return b.float_reshape(_affine(b, y, gamma, beta, (1, channels, 1)), tuple(x.shape))


@in_f32
def group_norm_backward(
    self: Any, x: P, gamma: P | None, beta: P | None, num_groups: int, epsilon: float, output_grad: P
) -> NormBackward:
    """The gradients of ``group_norm`` given ``output_grad``; the statistics are recomputed."""
    b: Any = self
    view, param_shape = _channels_view(x)
    batch, channels, spatial = view
    grad = b.float_reshape(output_grad, view)
    # the per-channel parameters act on [N, C, M]; the statistics on [N, G, C / G * M]
    per_group = (batch, num_groups, channels // num_groups * spatial)
    grouped = b.float_reshape(x, per_group)
    centered = b.float_sub(grouped, b.float_mean_dim(grouped, 2))
    invstd = _invstd(b, b.float_mean_dim(b.float_mul(centered, centered), 2), epsilon)
    normalized = b.float_reshape(b.float_mul(centered, invstd), view)
    gamma_grad = None if gamma is None else _sum_to(b, b.float_mul(grad, normalized), (0, 2), channels)
    beta_grad = None if beta is None else _sum_to(b, grad, (0, 2), channels)
    gy = grad if gamma is None else b.float_mul(grad, b.float_reshape(gamma, param_shape))
    x_grad = _input_grad(
        b, b.float_reshape(gy, per_group), b.float_reshape(normalized, per_group), invstd, (2,), True
    )
    return NormBackward(b.float_reshape(x_grad, tuple(x.shape)), gamma_grad, beta_grad)


@in_f32
def batch_norm(
    self: Any, x: P, gamma: P | None, beta: P | None, running_mean: P, running_var: P, epsilon: float
) -> P:
    """Batch normalization of ``x [N, C, *]`` in inference form: each channel normalized by its
    running statistics (``[C]``), ``(x - running_mean) / sqrt(running_var + epsilon)``, then
    ``gamma`` and ``beta`` (``[C]`` or ``None``)."""
    b: Any = self
    view, param_shape = _channels_view(x)
    shifted = b.float_sub(b.float_reshape(x, view), b.float_reshape(running_mean, param_shape))
    y = b.float_mul(shifted, b.float_reshape(_invstd(b, running_var, epsilon), param_shape))
    return b.float_reshape(_affine(b, y, gamma, beta, param_shape), tuple(x.shape))


@in_f32
def batch_norm_training(
    self: Any,
    x: P,
    gamma: P | None,
    beta: P | None,
    running_mean: P | None,
    running_var: P | None,
    momentum: float,
    epsilon: float,
) -> BatchNormTraining:
    """Batch normalization of ``x [N, C, *]`` in training form (PyTorch's ``native_batch_norm``
    with ``training=True``): each channel normalized by the batch's mean and biased variance (over
    every dim but 1), then ``gamma`` and ``beta``. The running statistics come back updated,
    ``(1 - momentum) * running + momentum * batch``, with the *unbiased* batch variance for
    ``running_var``; see ``BatchNormTraining`` for the saved statistics."""
    b: Any = self
    view, param_shape = _channels_view(x)
    batch, channels, spatial = view
    work = b.float_reshape(x, view)
    mean = _mean_over(b, work, (0, 2))
    centered = b.float_sub(work, mean)
    variance = _mean_over(b, b.float_mul(centered, centered), (0, 2))
    invstd = _invstd(b, variance, epsilon)
    y = _affine(b, b.float_mul(centered, invstd), gamma, beta, param_shape)
    mean, variance, invstd = (b.float_reshape(t, (channels,)) for t in (mean, variance, invstd))
    count = batch * spatial
    new_mean = new_var = None
    if running_mean is not None:
        new_mean = b.float_add(
            b.float_mul_scalar(running_mean, 1.0 - momentum), b.float_mul_scalar(mean, momentum)
        )
    if running_var is not None:
        unbiased = momentum * count / max(count - 1, 1)
        new_var = b.float_add(
            b.float_mul_scalar(running_var, 1.0 - momentum), b.float_mul_scalar(variance, unbiased)
        )
    return BatchNormTraining(b.float_reshape(y, tuple(x.shape)), new_mean, new_var, mean, invstd)


@in_f32
def batch_norm_backward(
    self: Any,
    x: P,
    gamma: P | None,
    beta: P | None,
    mean: P,
    invstd: P,
    training: bool,
    output_grad: P,
) -> NormBackward:
    """The gradients of batch normalization given ``output_grad``, from the statistics the forward
    normalized with (``[C]``): the batch's ``mean`` and ``invstd`` of ``batch_norm_training``
    (``training``), or the constants ``running_mean`` and ``1 / sqrt(running_var + epsilon)`` of
    ``batch_norm`` (not ``training``: the input gradient is then ``output_grad * gamma * invstd``)."""
    b: Any = self
    view, param_shape = _channels_view(x)
    work, grad = b.float_reshape(x, view), b.float_reshape(output_grad, view)
    statistics = (b.float_reshape(mean, param_shape), b.float_reshape(invstd, param_shape))
    x_grad, gamma_grad, beta_grad = _norm_backward(
        b, work, gamma, beta, grad, param_shape, (0, 2), statistics, 0.0, frozen=not training
    )
    return NormBackward(b.float_reshape(x_grad, tuple(x.shape)), gamma_grad, beta_grad)
