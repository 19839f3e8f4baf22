"""``custom_op``: a Tensor-level function from a forward kernel and an ``OpSpec``, differentiable on
autodiff backends through the same mechanism the built-in ops use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn_backend import Backend, Kind, Tensor

from ._backend import Autodiff
from ._graph import OpSpec


def custom_op(spec: OpSpec, forward: Callable[..., Any]) -> Callable[..., Tensor]:
    """Make an op from ``forward(backend, *primitives, args)`` and the backward in ``spec``.

    On a plain backend the op runs ``forward`` on the tensors' primitives. On an ``Autodiff`` backend
    it runs ``forward`` on the inner backend and records ``spec`` (its ``backward`` receives the inner
    backend, the output's gradient, the kept inputs and output, and ``args``), as every built-in op does.

    Args:
        spec: the op's backward and what it keeps.
        forward: the kernel: the backend, the inputs' primitives, then the non-tensor ``args``.

    Returns:
        ``op(*tensors, args=None) -> Tensor``.

    Example:
        >>> def backward(inner, grad, inputs, output, args):
        ...     return (inner.float_mul_scalar(grad, 2.0),)
        >>> double = custom_op(OpSpec("double", backward), lambda b, x, args: b.float_mul_scalar(x, 2.0))
    """

    def op(*tensors: Tensor, args: Any = None) -> Tensor:
        if not tensors:
            raise ValueError(f"{spec.name}: expected at least one tensor")
        device = tensors[0].device
        backend: Backend = device.backend
        if isinstance(backend, Autodiff):
            primitives = [t.primitive for t in tensors]
            inner = [p.primitive if t.kind is Kind.FLOAT else p for t, p in zip(tensors, primitives)]
            output = forward(backend.inner, *inner, args)
            return Tensor.from_primitive(backend.track(spec, primitives, output, args), device)
        return Tensor.from_primitive(forward(backend, *[t.primitive for t in tensors], args), device)

    op.__name__ = op.__qualname__ = spec.name
    return op
