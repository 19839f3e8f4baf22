"""``Autodiff(inner)``: the backend decorator that computes gradients."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from burn_backend import AutodiffBackend, Backend, DType, Gradients, Kind
from burn_backend.kit import BackendDecorator, kind_of
from burn_backend.quantization import is_quantized

from ._checkpoint import BalancedCheckpointing, CheckpointStrategy, NoCheckpointing
from ._graph import AutodiffTensor, backward, watching
from ._ops.activation import ActivationOps
from ._ops.float import FloatOps
from ._ops.module import ModuleOps

# float ops without a gradient: like the int and bool ops, they run on the inner backend as they are
_QUANTIZATION = frozenset({"quantize", "quantize_dynamic", "dequantize"})
_NOT_DIFFERENTIABLE = {
    "float_into_data", "float_device", "float_empty", "float_zeros", "float_ones", "float_full",
    "float_random", "float_into_int", "float_argmax", "float_argmin", "float_argsort", "float_argtopk",
    "float_is_nan", "float_is_inf", "float_any", "float_any_dim", "float_all", "float_all_dim",
    "float_equal", "float_equal_elem", "float_not_equal", "float_not_equal_elem", "float_greater",
    "float_greater_elem", "float_greater_equal", "float_greater_equal_elem", "float_lower",
    "float_lower_elem", "float_lower_equal", "float_lower_equal_elem",
}  # fmt: skip


class Autodiff(FloatOps, ModuleOps, ActivationOps, BackendDecorator, AutodiffBackend):
    """Reverse-mode automatic differentiation over any backend.

    Float tensors carry a graph node when something they depend on requires a gradient; every op
    computes on the inner backend and records its backward step. Int and bool tensors are the inner
    backend's own. ``backward`` returns a ``Gradients`` container; nothing is stored on tensors.

    Args:
        inner: the backend that computes the values.
        checkpointing: ``NoCheckpointing()`` (default: ops keep what their backward needs) or
            ``BalancedCheckpointing()`` (memory-bound ops keep nothing and are recomputed during
            backward from the outputs of compute-bound ops).

    Example:
        >>> from burn_backend import Tensor
        >>> from burn_ndarray import NdArray
        >>> device = Autodiff(NdArray()).device()
        >>> x = Tensor.from_data([1.0, 2.0], device).require_grad()
        >>> x.mul(x).sum().backward() and x.grad(_).tolist()  # doctest: +SKIP
    """

    name: ClassVar[str] = "autodiff"

    def __init__(self, inner: Backend, checkpointing: CheckpointStrategy | None = None) -> None:
        if isinstance(inner, AutodiffBackend):
            raise TypeError("Autodiff: the inner backend is already an autodiff backend")
        super().__init__(inner)
        self.strategy = NoCheckpointing() if checkpointing is None else checkpointing
        self.checkpointing = isinstance(self.strategy, BalancedCheckpointing)

    @classmethod
    def delegates(cls, name: str) -> bool:
        # the float ops Autodiff does not define keep the interface's defaults, built from its own
        # differentiable ops, so that they have gradients
        # quantized ops run on the inner backend: quantized tensors are constants, never tracked
        if name in _NOT_DIFFERENTIABLE or name in _QUANTIZATION:
            return True
        return name.startswith(("int_", "bool_", "bitwise_", "q_"))

    def wrap(self, primitive: Any) -> Any:
        """An untracked ``AutodiffTensor`` around an inner float primitive; int and bool ones are shared."""
        if is_quantized(primitive):  # a constant: shared with the inner backend, as int and bool ones
            return primitive
        return AutodiffTensor(primitive) if kind_of(primitive.dtype) is Kind.FLOAT else primitive

    def unwrap(self, value: Any) -> Any:
        """The inner primitive of an ``AutodiffTensor``; anything else as it is."""
        return value.primitive if isinstance(value, AutodiffTensor) else value

    def settings(self) -> tuple[Any, ...]:
        return (self._inner, type(self.strategy))

    def __repr__(self) -> str:
        return f"Autodiff({self._inner!r}, checkpointing={self.strategy!r})"

    # -- the autodiff interface -------------------------------------------------------------------
    def backward(self, tensor: Any) -> Gradients:
        if not isinstance(tensor, AutodiffTensor):
            raise TypeError(f"backward: expected a float tensor of this backend, got {type(tensor).__name__}")
        inner = self._inner
        seed = inner.float_ones(
            tuple(tensor.shape), inner.float_device(tensor.primitive), DType.of(tensor.dtype)
        )
        return backward(inner, tensor, seed)

    def watch_gradients(
        self, tensors: Sequence[Any], callback: Callable[[int, Any], None]
    ) -> contextlib.AbstractContextManager[None]:
        callbacks: dict[int, list[Callable[[Any], None]]] = {}
        for position, tensor in enumerate(tensors):
            node = tensor.node if isinstance(tensor, AutodiffTensor) else None
            if node is not None and node.is_leaf and node.requires_grad:
                callbacks.setdefault(node.id, []).append(functools.partial(callback, position))
        return watching(callbacks)

    def grad(self, tensor: Any, grads: Gradients) -> Any:
        return grads.get(tensor)

    def grad_remove(self, tensor: Any, grads: Gradients) -> Any:
        return grads.remove(tensor)

    def grad_replace(self, tensor: Any, grads: Gradients, gradient: Any) -> None:
        grads.replace(tensor, gradient)

    def float_inner(self, tensor: Any) -> Any:
        return tensor.primitive

    def float_from_inner(self, tensor: Any) -> Any:
        return AutodiffTensor(tensor)
