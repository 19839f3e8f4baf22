"""Optimizer updates of many tensors in one call, over the backend's ``OptimizerOps``: a backend with a
kernel for them (NdArray, Cuda) updates every parameter in one pass over its memory, or one launch.

burn-nn's ``Adam`` and ``AdamW`` call ``adam_step``, and its ``Sgd`` ``sgd_step``, once per device and dtype
each step; call them directly to write a training loop without burn-nn.

Example:
    >>> from burn_backend import AdamOptions, Tensor
    >>> from burn_backend.optim import adam_step
    >>> weight, grad = Tensor.from_data([1.0, -2.0]), Tensor.from_data([0.5, 0.5])
    >>> options = AdamOptions(lr=0.1, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=1)
    >>> (new,), (moment_1,), (moment_2,) = adam_step([weight], [grad], [None], [None], options)
    >>> [round(v, 4) for v in new.tolist()]
    [0.9, -2.1]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._dtype import Kind
from ._options import AdamOptions, SgdOptions
from ._tensor import Tensor

__all__ = ["AdamOptions", "SgdOptions", "adam_step", "sgd_step"]


def adam_step(
    tensors: Sequence[Tensor],
    grads: Sequence[Tensor],
    moments_1: Sequence[Tensor | None],
    moments_2: Sequence[Tensor | None],
    options: AdamOptions,
) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
    """One Adam or AdamW update of several tensors (``Backend.float_adam_step`` documents the formula).

    Args:
        tensors: Float tensors on one device, of one dtype (the parameters, without autodiff tracking:
            a tracked tensor's ``inner()``).
        grads: one gradient per tensor, of its shape and dtype, on its device.
        moments_1, moments_2: each tensor's moments from its previous step, or ``None`` at its first.
        options: the learning rate, decays, step number and weight decay.

    Returns:
        The updated tensors, their first moments and their second moments, in the order given.

    Raises:
        ValueError: lists of different lengths, or a gradient or moment whose shape, dtype or device
            differs from its tensor's, or tensors on several devices or of several dtypes.
        TypeError: a value that is not a Float tensor, or ``options`` not ``AdamOptions``.
    """
    tensors, grads, moments_1, moments_2 = list(tensors), list(grads), list(moments_1), list(moments_2)
    if not isinstance(options, AdamOptions):
        raise TypeError(f"adam_step: expected AdamOptions, got {type(options).__name__}")
    count = len(tensors)
    if not len(grads) == len(moments_1) == len(moments_2) == count:
        raise ValueError(
            f"adam_step: expected one gradient and two moments per tensor; got {count} tensors, "
            f"{len(grads)} gradients, {len(moments_1)} and {len(moments_2)} moments"
        )
    if not count:
        return [], [], []
    _check_group(
        "adam_step",
        tensors,
        {"gradient": grads, "first moment": moments_1, "second moment": moments_2},
    )
    first = tensors[0]
    backend = first.device.backend
    new_tensors, new_moments_1, new_moments_2 = backend.float_adam_step(
        [t.primitive for t in tensors],
        [g.primitive for g in grads],
        [None if m is None else m.primitive for m in moments_1],
        [None if v is None else v.primitive for v in moments_2],
        options,
    )
    return (
        [t._new(p) for t, p in zip(tensors, new_tensors)],
        [t._new(p) for t, p in zip(tensors, new_moments_1)],
        [t._new(p) for t, p in zip(tensors, new_moments_2)],
    )


def sgd_step(
    tensors: Sequence[Tensor],
    grads: Sequence[Tensor],
    velocities: Sequence[Tensor | None],
    options: SgdOptions,
) -> tuple[list[Tensor], list[Tensor | None]]:
    """One SGD update of several tensors, with momentum, Nesterov's look-ahead and weight decay as
    ``torch.optim.SGD`` (``Backend.float_sgd_step`` documents the formula).

    Args:
        tensors: Float tensors on one device, of one dtype (the parameters, without autodiff tracking).
        grads: one gradient per tensor, of its shape and dtype, on its device.
        velocities: each tensor's velocity from its previous step, or ``None`` at its first (or
            without momentum).
        options: the learning rate, momentum, dampening, Nesterov flag and weight decay.

    Returns:
        The updated tensors and their velocities (``None`` each without momentum), in the order given.

    Raises:
        ValueError: lists of different lengths, or a gradient or velocity whose shape, dtype or device
            differs from its tensor's, or tensors on several devices or of several dtypes.
        TypeError: a value that is not a Float tensor, or ``options`` not ``SgdOptions``.

    Example:
        >>> from burn_backend import SgdOptions
        >>> weight, grad = Tensor.from_data([1.0, -2.0]), Tensor.from_data([0.5, 0.5])
        >>> (new,), (velocity,) = sgd_step([weight], [grad], [None], SgdOptions(lr=0.1, momentum=0.9))
        >>> [round(v, 4) for v in new.tolist()]
        [0.95, -2.05]
    """
    tensors, grads, velocities = list(tensors), list(grads), list(velocities)
    if not isinstance(options, SgdOptions):
        raise TypeError(f"sgd_step: expected SgdOptions, got {type(options).__name__}")
    count = len(tensors)
    if not len(grads) == len(velocities) == count:
        raise ValueError(
            f"sgd_step: expected one gradient and one velocity (or None) per tensor; got {count} tensors, "
            f"{len(grads)} gradients and {len(velocities)} velocities"
        )
    if not count:
        return [], []
    _check_group("sgd_step", tensors, {"gradient": grads, "velocity": velocities})
    new_tensors, new_velocities = tensors[0].device.backend.float_sgd_step(
        [t.primitive for t in tensors],
        [g.primitive for g in grads],
        [None if v is None else v.primitive for v in velocities],
        options,
    )
    return (
        [t._new(p) for t, p in zip(tensors, new_tensors)],
        [None if p is None else t._new(p) for t, p in zip(tensors, new_velocities)],
    )


def _check_group(op: str, tensors: list[Tensor], companions: Mapping[str, Sequence[Tensor | None]]) -> None:
    """Raise unless every tensor is a Float tensor of the first one's device and dtype, and each of its
    companions (a gradient, which must be there, moments or velocities, which may be ``None``) a Float
    tensor of its shape, dtype and device."""
    first = tensors[0]
    _check_float(op, "tensor", 0, first)
    device, dtype = first._device, first.dtype
    for i, tensor in enumerate(tensors):
        _check_float(op, "tensor", i, tensor)
        if tensor.dtype is not dtype or (tensor._device is not device and tensor._device != device):
            raise ValueError(
                f"{op}: every tensor must be on one device with one dtype; tensor 0 is "
                f"{first.dtype} on {first.device}, tensor {i} {tensor.dtype} on {tensor.device}"
            )
        shape = tensor._primitive.shape
        for what, values in companions.items():
            value = values[i]
            if value is None and what != "gradient":
                continue
            _check_float(op, what, i, value)
            assert value is not None
            if (
                value._primitive.shape != shape
                or value.dtype is not dtype
                or (value._device is not device and value._device != device)
            ):
                raise ValueError(
                    f"{op}: the {what} of tensor {i} is {value.dims()} {value.dtype} on {value.device}; "
                    f"the tensor is {tensor.dims()} {tensor.dtype} on {tensor.device}"
                )


def _check_float(op: str, what: str, index: int, value: object) -> None:
    # the message is built only on failure: an optimizer checks every value at every step
    if not isinstance(value, Tensor) or value.kind is not Kind.FLOAT:
        got = f"a {value.dtype} tensor" if isinstance(value, Tensor) else type(value).__name__
        raise TypeError(f"{op}: {what} {index} must be a Float tensor, got {got}")
