"""The normalization functions of ``burn_backend.module`` beyond ``layer_norm``: ``rms_norm``,
``group_norm``, ``batch_norm`` and ``batch_norm_training``. Each checks its inputs (Float tensors of one
dtype and device, ranks, per-feature parameter sizes, groups, epsilon, momentum) and raises an error
naming the function, the shapes and dtypes and what was expected; then it runs the backend's op
(``ModuleOps.rms_norm``, ...), whose gradient on an autodiff backend is the backend's backward op."""

from __future__ import annotations

import math
from typing import Any

from ._dtype import Kind
from ._tensor import Tensor


def _float(op: str, name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if value.kind is not Kind.FLOAT:
        raise TypeError(f"{op}: {name} must be a Float tensor, got shape {value.dims()} of {value.dtype}")
    return value


def _input(op: str, x: object, min_rank: int, layout: str) -> Tensor:
    x = _float(op, "x", x)
    if x.rank < min_rank:
        raise ValueError(f"{op}: x must have shape {layout} (rank >= {min_rank}), got {x.dims()}")
    return x


def _feature(op: str, name: str, value: object, x: Tensor, size: int, what: str) -> Any:
    """The primitive of ``value`` (``None``, or a Float ``[size]`` tensor of ``x``'s dtype and device)."""
    if value is None:
        return None
    tensor = _float(op, name, value)
    if tensor.dtype is not x.dtype:
        raise TypeError(f"{op}: {name} has dtype {tensor.dtype}, x has {x.dtype}; cast one with .cast(...)")
    x._check_device_of(op, tensor)
    if tensor.dims() != [size]:
        raise ValueError(
            f"{op}: {name} must have shape [{size}] ({what} of x {x.dims()}), got {tensor.dims()}"
        )
    return tensor.primitive


def _epsilon(op: str, epsilon: float) -> float:
    value = float(epsilon)
    if not value >= 0:
        raise ValueError(f"{op}: epsilon must be >= 0, got {epsilon!r}")
    return value


def rms_norm(x: Tensor, gamma: Tensor | None = None, epsilon: float = 1e-5) -> Tensor:
    """Root-mean-square normalization over the last dim, ``x / sqrt(mean(x^2) + epsilon) * gamma``, as
    PyTorch's ``rms_norm``; f16 and bf16 are computed in f32 and rounded once.

    Args:
        x: a Float tensor ``[..., d]`` (rank >= 1).
        gamma: the scale ``[d]``, or ``None``.
        epsilon: added to the mean square, ``>= 0``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Example:
        >>> from burn_backend import Tensor, module
        >>> y = module.rms_norm(Tensor.from_data([[3.0, 4.0]]), epsilon=0.0)  # rms = sqrt(12.5)
        >>> [round(v, 4) for v in y.to_data().tolist()[0]]
        [0.8485, 1.1314]
    """
    op = "rms_norm"
    x = _input(op, x, 1, "[..., d]")
    d = x.dims()[-1]
    gamma_primitive = _feature(op, "gamma", gamma, x, d, "the last dim")
    primitive = x.backend.rms_norm(x.primitive, gamma_primitive, _epsilon(op, epsilon))
    return Tensor.from_primitive(primitive, x.device)


def group_norm(
    x: Tensor,
    num_groups: int,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    epsilon: float = 1e-5,
) -> Tensor:
    """Group normalization (Wu and He, 2018) of ``x [N, C, *]``, as PyTorch's ``group_norm``: the
    channels are split into ``num_groups`` groups of consecutive channels and each group of each sample
    is normalized by its mean and biased variance (over its channels and the spatial dims); then
    ``gamma`` scales and ``beta`` shifts each channel.

    Args:
        x: a Float tensor ``[N, C, *]`` (rank >= 2).
        num_groups: a positive int dividing ``C``.
        gamma: the per-channel scale ``[C]``, or ``None``.
        beta: the per-channel shift ``[C]``, or ``None``.
        epsilon: added to the variance, ``>= 0``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Example:
        >>> from burn_backend import Tensor, module
        >>> module.group_norm(Tensor.ones([2, 6, 5]), 3).dims()
        [2, 6, 5]
    """
    op = "group_norm"
    x = _input(op, x, 2, "[batch, channels, ...]")
    channels = x.dims()[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups <= 0:
        raise ValueError(f"{op}: num_groups must be a positive int, got {num_groups!r}")
    if channels % num_groups:
        raise ValueError(
            f"{op}: the {channels} channels of x {x.dims()} do not split into {num_groups} groups"
        )
    gamma_p = _feature(op, "gamma", gamma, x, channels, "one per channel")
    beta_p = _feature(op, "beta", beta, x, channels, "one per channel")
    primitive = x.backend.group_norm(x.primitive, gamma_p, beta_p, num_groups, _epsilon(op, epsilon))
    return Tensor.from_primitive(primitive, x.device)


def _batch_args(
    op: str, x: object, gamma: object, beta: object, running_mean: object, running_var: object
) -> tuple[Tensor, list[Any]]:
    x = _input(op, x, 2, "[batch, channels, ...]")
    channels = x.dims()[1]
    named = (("gamma", gamma), ("beta", beta), ("running_mean", running_mean), ("running_var", running_var))
    return x, [_feature(op, name, value, x, channels, "one per channel") for name, value in named]


def batch_norm(
    x: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    epsilon: float = 1e-5,
) -> Tensor:
    """Batch normalization of ``x [N, C, *]`` in inference form, as PyTorch's ``batch_norm`` with
    ``training=False``: ``(x - running_mean) / sqrt(running_var + epsilon) * gamma + beta`` per channel.
    On an autodiff backend the running statistics get no gradient.

    Args:
        x: a Float tensor ``[N, C, *]`` (rank >= 2).
        running_mean: the per-channel means ``[C]``.
        running_var: the per-channel variances ``[C]``.
        gamma: the per-channel scale ``[C]``, or ``None``.
        beta: the per-channel shift ``[C]``, or ``None``.
        epsilon: added to the variance, ``>= 0``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Example:
        >>> from burn_backend import Tensor, module
        >>> mean, var = Tensor.zeros([3]), Tensor.ones([3])
        >>> module.batch_norm(Tensor.ones([2, 3]), mean, var, epsilon=0.0).to_data().tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    op = "batch_norm"
    x, (gamma_p, beta_p, mean_p, var_p) = _batch_args(op, x, gamma, beta, running_mean, running_var)
    if mean_p is None or var_p is None:
        raise ValueError(f"{op}: the inference form normalizes with running_mean and running_var; give both")
    primitive = x.backend.batch_norm(x.primitive, gamma_p, beta_p, mean_p, var_p, _epsilon(op, epsilon))
    return Tensor.from_primitive(primitive, x.device)


def batch_norm_training(
    x: Tensor,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    momentum: float = 0.1,
    epsilon: float = 1e-5,
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """Batch normalization of ``x [N, C, *]`` in training form, as PyTorch's ``batch_norm`` with
    ``training=True``: each channel normalized by the batch's mean and biased variance (over every dim
    but 1), then ``gamma`` and ``beta``. The running statistics are not changed (tensors are immutable):
    their updates ``(1 - momentum) * running + momentum * batch`` (the *unbiased* batch variance for
    ``running_var``) are returned, detached, ``None`` where none was given.

    Args:
        x: a Float tensor ``[N, C, *]`` with more than one value per channel.
        gamma: the per-channel scale ``[C]``, or ``None``.
        beta: the per-channel shift ``[C]``, or ``None``.
        running_mean: the per-channel running means ``[C]``, or ``None``.
        running_var: the per-channel running variances ``[C]``, or ``None``.
        momentum: the weight of the batch in the update, in ``[0, 1]``.
        epsilon: added to the variance, ``>= 0``.

    Returns:
        ``(output, new_running_mean, new_running_var)``.

    Example:
        >>> from burn_backend import Tensor, module
        >>> x = Tensor.from_data([[1.0, 2.0], [3.0, 6.0]])
        >>> y, mean, var = module.batch_norm_training(x, running_mean=Tensor.zeros([2]), momentum=1.0)
        >>> mean.to_data().tolist(), var is None
        ([2.0, 4.0], True)
    """
    op = "batch_norm_training"
    x, (gamma_p, beta_p, mean_p, var_p) = _batch_args(op, x, gamma, beta, running_mean, running_var)
    momentum = float(momentum)
    if not 0.0 <= momentum <= 1.0:
        raise ValueError(f"{op}: momentum must be in [0, 1], got {momentum!r}")
    dims = x.dims()
    if dims[1] and math.prod(dims) // dims[1] < 2:
        raise ValueError(
            f"{op}: expected more than 1 value per channel when training, got input shape {dims}"
        )
    result = x.backend.batch_norm_training(
        x.primitive, gamma_p, beta_p, mean_p, var_p, momentum, _epsilon(op, epsilon)
    )
    device = x.device
    output, new_mean, new_var = result[0], result[1], result[2]
    return (
        Tensor.from_primitive(output, device),
        None if new_mean is None else Tensor.from_primitive(new_mean, device),
        None if new_var is None else Tensor.from_primitive(new_var, device),
    )
