"""The functional forms of the normalization layers, ``batch_norm`` and ``group_norm`` (public in
``burn_nn.functional``), and the checks the layers of ``_norm`` share with them. Both check their
arguments as PyTorch's functions take them, then run the backend's ops (``burn_backend.module``'s
``batch_norm``, ``batch_norm_training`` and ``group_norm``), whose gradients are the backend's backward
ops."""

from __future__ import annotations

import math

from burn_backend import Kind, Tensor
from burn_backend import module as F

from ._param import RunningState

__all__ = ["batch_norm", "group_norm"]


def _positive_size(layer: str, name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{layer}: {name} must be a positive int, got {value!r}")


def _check_epsilon(layer: str, epsilon: float, *, strict: bool = False) -> float:
    value = float(epsilon)
    if math.isnan(value) or value < 0.0 or (strict and value == 0.0):
        expected = "positive" if strict else ">= 0"
        raise ValueError(f"{layer}: epsilon must be {expected}, got {epsilon!r}")
    return value


def _input(op: str, x: object) -> Tensor:
    """``x`` as a Float tensor ``[batch, channels, ...]``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if x.kind is not Kind.FLOAT:
        raise TypeError(f"{op}: x must be a Float tensor, got shape {x.dims()} of {x.dtype}")
    if x.rank < 2:
        raise ValueError(f"{op}: x must have shape [batch, channels, ...] (rank >= 2), got {x.dims()}")
    return x


def _per_channel(op: str, name: str, value: object, x: Tensor) -> Tensor | None:
    """``value`` (``None``, or a Float tensor of ``x``'s dtype and device) checked to be ``[channels]``."""
    if value is None:
        return None
    if isinstance(value, RunningState):
        value = value.value()
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor or None, got {type(value).__name__}")
    channels = x.dims()[1]
    if value.dims() != [channels]:
        raise ValueError(
            f"{op}: {name} must have shape [{channels}] (one per channel of x {x.dims()}), got {value.dims()}"
        )
    if value.dtype is not x.dtype:
        raise TypeError(f"{op}: {name} has dtype {value.dtype}, x has {x.dtype}; cast one with .cast(...)")
    return value


# -- the functions ------------------------------------------------------------------------------------
def batch_norm(
    x: Tensor,
    running_mean: Tensor | RunningState | None,
    running_var: Tensor | RunningState | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalization of ``x`` ``[batch, channels, ...]`` per channel, as
    ``torch.nn.functional.batch_norm``; the ``BatchNorm`` layer calls it.

    Where ``training``, each channel is normalized with the mean and biased variance of the batch (over
    every dim but 1), and running statistics given as ``RunningState`` are updated with the batch mean
    and *unbiased* variance: ``running = (1 - momentum) * running + momentum * batch``. Tensors are
    immutable, so statistics to update must be ``RunningState`` holders (PyTorch updates its buffers in
    place); ``None`` skips the update. Otherwise the running statistics normalize. Then ``weight``
    scales and ``bias`` shifts each channel.

    Args:
        x: a Float tensor ``[batch, channels, ...]``.
        running_mean: the running means ``[channels]`` (a ``Tensor``, or a ``RunningState`` to update
            while training), or ``None`` (training only).
        running_var: the running variances ``[channels]``, likewise.
        weight: the per-channel scale ``[channels]``, or ``None``.
        bias: the per-channel shift ``[channels]``, or ``None``.
        training: normalize with the batch's statistics (and update the running ones).
        momentum: the weight of the batch in the update, in ``[0, 1]``.
        eps: added to the variance, ``>= 0``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        ValueError: a shape does not fit, ``training`` with a single value per channel, or evaluation
            without running statistics.
        TypeError: statistics to update while training are plain tensors.

    Example:
        >>> mean, var = RunningState(Tensor.zeros([3])), RunningState(Tensor.ones([3]))
        >>> y = batch_norm(Tensor.random([8, 3, 4]), mean, var, training=True)
        >>> mean.value().dims()  # updated towards the batch's means
        [3]
    """
    op = "batch_norm"
    x = _input(op, x)
    momentum = float(momentum)
    if not 0.0 <= momentum <= 1.0:
        raise ValueError(f"{op}: momentum must be in [0, 1], got {momentum!r}")
    eps = _check_epsilon(op, eps)
    weight, bias = _per_channel(op, "weight", weight, x), _per_channel(op, "bias", bias, x)
    mean_now = _per_channel(op, "running_mean", running_mean, x)
    var_now = _per_channel(op, "running_var", running_var, x)
    if not training:
        if mean_now is None or var_now is None:
            raise ValueError(
                f"{op}: evaluation (training=False) normalizes with running_mean and running_var; give "
                "both, or training=True to use the batch's statistics"
            )
        return F.batch_norm(x, mean_now, var_now, weight, bias, eps)

    for name, state in (("running_mean", running_mean), ("running_var", running_var)):
        if isinstance(state, Tensor):
            raise TypeError(
                f"{op}: {name} is a Tensor, which training cannot update (tensors are immutable); pass a "
                "burn_nn.RunningState holding it to have it updated, or None"
            )
    if x.num_elements() // x.dims()[1] < 2:
        raise ValueError(
            f"{op}: expected more than 1 value per channel when training, got input shape {x.dims()}"
        )
    # the op returns the running statistics' updates (detached; PyTorch's running variance is the
    # unbiased estimate, while the batch is normalized with the biased one)
    output, new_mean, new_var = F.batch_norm_training(x, weight, bias, mean_now, var_now, momentum, eps)
    if isinstance(running_mean, RunningState) and new_mean is not None:
        running_mean.update(new_mean)
    if isinstance(running_var, RunningState) and new_var is not None:
        running_var.update(new_var)
    return output


def group_norm(
    x: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Group normalization (Wu and He, 2018) of ``x`` ``[batch, channels, ...]``, as
    ``torch.nn.functional.group_norm``: the channels are split into ``num_groups`` groups of consecutive
    channels, and each group of each sample is normalized with its own mean and biased variance (over
    its channels and the spatial dims); then ``weight`` scales and ``bias`` shifts each channel. The
    ``GroupNorm`` layer calls it, and ``InstanceNorm`` with one group per channel.

    Args:
        x: a Float tensor ``[batch, channels, ...]``.
        num_groups: the number of groups; it divides ``channels``.
        weight: the per-channel scale ``[channels]``, or ``None``.
        bias: the per-channel shift ``[channels]``, or ``None``.
        eps: added to the variance, ``>= 0``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Example:
        >>> group_norm(Tensor.random([2, 6, 5]), 3).dims()
        [2, 6, 5]
    """
    op = "group_norm"
    x = _input(op, x)
    channels = x.dims()[1]
    _positive_size(op, "num_groups", num_groups)
    if channels % num_groups:
        raise ValueError(
            f"{op}: the {channels} channels of x {x.dims()} do not split into {num_groups} groups"
        )
    eps = _check_epsilon(op, eps)
    weight, bias = _per_channel(op, "weight", weight, x), _per_channel(op, "bias", bias, x)
    return F.group_norm(x, num_groups, weight, bias, eps)
