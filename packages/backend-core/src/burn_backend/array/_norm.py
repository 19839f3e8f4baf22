"""Layer, RMS, group and batch normalization over an array namespace, forward and backward (the
closed forms of ``burn_backend._ops._norm``, on arrays). Each op views ``x`` so that its normalized set
is one or two axes; f16 and bf16 compute in f32 and round once."""

from __future__ import annotations

import math
from typing import Any

from .._ops._norm import BatchNormTraining, NormBackward

Array = Any
Axes = tuple[int, ...]


def _invstd(xp: Any, variance: Array, epsilon: float) -> Array:
    return 1.0 / xp.sqrt(variance + epsilon)


def _moments(xp: Any, work: Array, axes: Axes, epsilon: float) -> tuple[Array, Array]:
    """``work`` centered over ``axes``, and ``1 / sqrt(var + epsilon)`` (biased variance, axes kept)."""
    centered = work - xp.mean(work, axis=axes, keepdims=True)
    return centered, _invstd(xp, xp.mean(centered * centered, axis=axes, keepdims=True), epsilon)


def _affine(self: Any, y: Array, gamma: Array | None, beta: Array | None, shape: Axes) -> Array:
    xp: Any = self.xp
    if gamma is not None:
        y = y * xp.reshape(self.runtime.widen(gamma), shape)
    if beta is not None:
        y = y + xp.reshape(self.runtime.widen(beta), shape)
    return y


def _backward(
    self: Any,
    normalized: Array,
    invstd: Array,
    gamma: Array | None,
    beta: Array | None,
    grad: Array,
    shape: Axes,
    axes: Axes,
    mode: str,
) -> tuple[Array, Array | None, Array | None]:
    """The gradients of ``normalized * gamma + beta`` (``gamma`` and ``beta`` shaped ``shape``) through
    the normalization over ``axes``: ``mode`` "center" (mean and variance), "scale" (RMS), or "frozen"
    (constant statistics)."""
    xp: Any = self.xp
    per_feature = tuple(d for d, n in enumerate(shape) if n == 1)
    size = math.prod(shape)
    gamma_grad = beta_grad = None
    if gamma is not None:
        gamma_grad = xp.reshape(xp.sum(grad * normalized, axis=per_feature), (size,))
    if beta is not None:
        beta_grad = xp.reshape(xp.sum(grad, axis=per_feature), (size,))
    gy = grad if gamma is None else grad * xp.reshape(self.runtime.widen(gamma), shape)
    if mode == "frozen":
        return gy * invstd, gamma_grad, beta_grad
    inner = gy - normalized * xp.mean(gy * normalized, axis=axes, keepdims=True)
    if mode == "center":
        inner = inner - xp.mean(gy, axis=axes, keepdims=True)
    return inner * invstd, gamma_grad, beta_grad


def _narrowed(
    self: Any, grads: tuple[Array, Array | None, Array | None], x: Array, shape: Axes
) -> NormBackward:
    narrow, xp = self.runtime.narrow, self.xp
    x_grad, gamma_grad, beta_grad = grads
    return NormBackward(
        narrow(xp.reshape(x_grad, shape), x.dtype),
        None if gamma_grad is None else narrow(gamma_grad, x.dtype),
        None if beta_grad is None else narrow(beta_grad, x.dtype),
    )


def _last_axis(x: Array) -> Axes:
    rank: int = x.ndim
    size: int = x.shape[-1]
    return (1,) * (rank - 1) + (size,)


# -- layer and RMS norm: the last axis -----------------------------------------------------------------
def layer_norm(self: Any, x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
    centered, invstd = _moments(self.xp, self.runtime.widen(x), (-1,), epsilon)
    return self.runtime.narrow(_affine(self, centered * invstd, gamma, beta, _last_axis(x)), x.dtype)


def layer_norm_backward(
    self: Any, x: Array, gamma: Array | None, beta: Array | None, epsilon: float, output_grad: Array
) -> NormBackward:
    centered, invstd = _moments(self.xp, self.runtime.widen(x), (-1,), epsilon)
    grad = self.runtime.widen(output_grad)
    grads = _backward(self, centered * invstd, invstd, gamma, beta, grad, _last_axis(x), (-1,), "center")
    return _narrowed(self, grads, x, x.shape)


def _rms_invstd(xp: Any, work: Array, epsilon: float) -> Array:
    return _invstd(xp, xp.mean(work * work, axis=-1, keepdims=True), epsilon)


def rms_norm(self: Any, x: Array, gamma: Array | None, epsilon: float) -> Array:
    work = self.runtime.widen(x)
    y = _affine(self, work * _rms_invstd(self.xp, work, epsilon), gamma, None, _last_axis(x))
    return self.runtime.narrow(y, x.dtype)


def rms_norm_backward(
    self: Any, x: Array, gamma: Array | None, epsilon: float, output_grad: Array
) -> NormBackward:
    work, grad = self.runtime.widen(x), self.runtime.widen(output_grad)
    invstd = _rms_invstd(self.xp, work, epsilon)
    grads = _backward(self, work * invstd, invstd, gamma, None, grad, _last_axis(x), (-1,), "scale")
    return _narrowed(self, grads, x, x.shape)


# -- group and batch norm: [N, C, *] viewed as [N, C, M] or [N, G, C / G, M] ------------------------------
def _grouped(self: Any, x: Array, num_groups: int, epsilon: float) -> tuple[Array, Array, Axes]:
    """``x`` normalized per sample and group, viewed ``[N, G, C / G, M]``, with its ``invstd`` and the
    view's shape."""
    batch, channels = x.shape[0], x.shape[1]
    view = (batch, num_groups, channels // num_groups, math.prod(x.shape[2:]))
    centered, invstd = _moments(self.xp, self.xp.reshape(self.runtime.widen(x), view), (2, 3), epsilon)
    return centered * invstd, invstd, view


def group_norm(
    self: Any, x: Array, gamma: Array | None, beta: Array | None, num_groups: int, epsilon: float
) -> Array:
    normalized, _, view = _grouped(self, x, num_groups, epsilon)
    y = _affine(self, normalized, gamma, beta, (1, num_groups, view[2], 1))
    return self.runtime.narrow(self.xp.reshape(y, x.shape), x.dtype)


def group_norm_backward(
    self: Any,
    x: Array,
    gamma: Array | None,
    beta: Array | None,
    num_groups: int,
    epsilon: float,
    output_grad: Array,
) -> NormBackward:
    normalized, invstd, view = _grouped(self, x, num_groups, epsilon)
    grad = self.xp.reshape(self.runtime.widen(output_grad), view)
    shape = (1, num_groups, view[2], 1)
    return _narrowed(
        self, _backward(self, normalized, invstd, gamma, beta, grad, shape, (2, 3), "center"), x, x.shape
    )


def _channels(self: Any, x: Array) -> tuple[Array, Axes]:
    """``x`` widened and viewed ``[N, C, M]``, and the shape of a per-channel array over it."""
    view = (x.shape[0], x.shape[1], math.prod(x.shape[2:]))
    return self.xp.reshape(self.runtime.widen(x), view), (1, x.shape[1], 1)


def batch_norm(
    self: Any,
    x: Array,
    gamma: Array | None,
    beta: Array | None,
    running_mean: Array,
    running_var: Array,
    epsilon: float,
) -> Array:
    xp: Any = self.xp
    work, shape = _channels(self, x)
    widen = self.runtime.widen
    invstd = _invstd(xp, xp.reshape(widen(running_var), shape), epsilon)
    y = _affine(self, (work - xp.reshape(widen(running_mean), shape)) * invstd, gamma, beta, shape)
    return self.runtime.narrow(xp.reshape(y, x.shape), x.dtype)


def batch_norm_training(
    self: Any,
    x: Array,
    gamma: Array | None,
    beta: Array | None,
    running_mean: Array | None,
    running_var: Array | None,
    momentum: float,
    epsilon: float,
) -> BatchNormTraining:
    xp: Any = self.xp
    widen, narrow = self.runtime.widen, self.runtime.narrow
    work, shape = _channels(self, x)
    channels = shape[1]
    mean = xp.mean(work, axis=(0, 2), keepdims=True)
    centered = work - mean
    variance = xp.mean(centered * centered, axis=(0, 2), keepdims=True)
    invstd = _invstd(xp, variance, epsilon)
    y = _affine(self, centered * invstd, gamma, beta, shape)
    mean, variance, invstd = (xp.reshape(a, (channels,)) for a in (mean, variance, invstd))
    count = work.shape[0] * work.shape[2]
    new_mean = new_var = None
    if running_mean is not None:
        new_mean = narrow(widen(running_mean) * (1.0 - momentum) + mean * momentum, x.dtype)
    if running_var is not None:
        unbiased = momentum * count / max(count - 1, 1)
        new_var = narrow(widen(running_var) * (1.0 - momentum) + variance * unbiased, x.dtype)
    output = narrow(xp.reshape(y, x.shape), x.dtype)
    return BatchNormTraining(output, new_mean, new_var, narrow(mean, x.dtype), narrow(invstd, x.dtype))


def batch_norm_backward(
    self: Any,
    x: Array,
    gamma: Array | None,
    beta: Array | None,
    mean: Array,
    invstd: Array,
    training: bool,
    output_grad: Array,
) -> NormBackward:
    xp: Any = self.xp
    widen = self.runtime.widen
    work, shape = _channels(self, x)
    scale = xp.reshape(widen(invstd), shape)
    normalized = (work - xp.reshape(widen(mean), shape)) * scale
    grad = xp.reshape(widen(output_grad), work.shape)
    mode = "center" if training else "frozen"
    return _narrowed(
        self, _backward(self, normalized, scale, gamma, beta, grad, shape, (0, 2), mode), x, x.shape
    )
