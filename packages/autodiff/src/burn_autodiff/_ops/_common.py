"""Helpers shared by the differentiable op groups."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from burn_backend import Backend, Device, DType

from .._graph import AutodiffTensor, OpSpec, record

P = Any


LOW_PRECISION = (DType.F16, DType.BF16)


def widened(b: Backend, first: P, *rest: P | None) -> tuple[list[Any], DType | None]:
    """``tensors`` (``None`` kept) in f32 where the first is f16 or bf16, with that dtype to round back
    to; else as they are, with ``None``."""
    tensors = (first, *rest)
    dtype = DType.of(first.dtype)
    if dtype not in LOW_PRECISION:
        return list(tensors), None
    return [None if t is None else b.float_cast(t, DType.F32) for t in tensors], dtype


def narrowed(b: Backend, tensor: P | None, dtype: DType | None) -> Any:
    """``tensor`` (from ``widened``) back in ``dtype``; as it is where ``dtype`` is ``None``."""
    return tensor if dtype is None or tensor is None else b.float_cast(tensor, dtype)


def reduce_to(inner: Backend, grad: P, shape: Sequence[int]) -> P:
    """``grad`` summed over the dims that broadcasting grew, back to ``shape``."""
    shape = tuple(shape)
    grad_shape = tuple(grad.shape)
    if grad_shape == shape:
        return grad
    extra = len(grad_shape) - len(shape)
    if extra:
        # the grown leading dims as one, summed in one reduction (a bias's gradient from [B, T, D]: one
        # reduction over B * T rows rather than one per dim and an intermediate)
        if extra > 1:
            grad = inner.float_reshape(grad, (math.prod(grad_shape[:extra]), *grad_shape[extra:]))
        grad = inner.float_reshape(inner.float_sum_dim(grad, 0), grad_shape[extra:])
    for dim, size in enumerate(shape):
        if size == 1 and grad.shape[dim] != 1:
            grad = inner.float_sum_dim(grad, dim)
    return grad


def zeros_like(inner: Backend, tensor: P) -> P:
    """Zeros of ``tensor``'s shape, dtype and device, on the inner backend."""
    return inner.float_zeros(tuple(tensor.shape), inner.float_device(tensor), DType.of(tensor.dtype))


def shape_of(tensor: Any) -> tuple[int, ...]:
    return tuple(tensor.shape)


class Recorder:
    """The base of the differentiable op groups: the inner backend and ``track``."""

    _inner: Backend
    checkpointing: bool
    inner_device: Callable[[Device], Device]  # BackendDecorator's

    def track(self, spec: OpSpec, inputs: Sequence[Any], output: P, args: Any = None) -> AutodiffTensor:
        """Record ``output`` (an inner primitive) as the result of ``spec`` applied to ``inputs``."""
        return record(spec, inputs, output, args, self.checkpointing)
