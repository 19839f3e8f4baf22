"""The autodiff graph: tensors, nodes, the recorded ops and the backward pass.

There is no global tape. A node is referenced only by the tensors that hold it and by its children, so
a graph whose outputs are all dropped is freed by Python like any other object; ``backward`` releases
what it traverses.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from burn_backend import Backend, Gradients

Primitive = Any  # a primitive of the inner backend
BackwardFn = Callable[[Backend, Primitive, Sequence[Any], Any, Any], Sequence[Primitive | None]]
ForwardFn = Callable[[Backend, Sequence[Any], Any], Primitive]

_ids = itertools.count()
_watchers = threading.local()  # this thread's watched leaves: a list of {node id: callbacks}


@dataclass(frozen=True)
class OpSpec:
    """How one kind of op is differentiated.

    Attributes:
        name: the op's name, for error messages and graph inspection.
        backward: ``backward(inner, grad, inputs, output, args)`` returns one gradient (an inner
            primitive, or ``None`` for no gradient) per input. ``inputs`` holds the inputs' inner
            primitives (``None`` for those the op did not ask to keep), ``output`` the op's output
            (``None`` unless kept), ``args`` the op's non-tensor arguments.
        forward: ``forward(inner, inputs, args)`` recomputes the output; given for memory-bound ops,
            which ``BalancedCheckpointing`` recomputes during backward instead of keeping.
        keeps_inputs: which inputs backward reads (by position).
        keeps_output: whether backward reads the output.
    """

    name: str
    backward: BackwardFn
    forward: ForwardFn | None = None
    keeps_inputs: tuple[int, ...] = ()
    keeps_output: bool = False


class Node:
    """One tracked tensor in the graph: a leaf that requires a gradient, or the output of an op."""

    __slots__ = ("__weakref__", "args", "id", "inputs", "output", "parents", "requires_grad", "spec")

    def __init__(
        self,
        spec: OpSpec | None,
        parents: tuple[Node | None, ...],
        inputs: tuple[Any, ...],
        output: Primitive | None,
        args: Any,
        requires_grad: bool = False,
    ) -> None:
        self.id = next(_ids)
        self.spec = spec
        self.parents = parents
        self.inputs = inputs
        self.output = output
        self.args = args
        self.requires_grad = requires_grad

    @property
    def is_leaf(self) -> bool:
        """Whether the node starts the graph (no op produced it)."""
        return self.spec is None

    def value(self, inner: Backend, cache: dict[int, Primitive]) -> Primitive:
        """This node's output: kept, or recomputed from its parents (balanced checkpointing).

        The ancestors that must be recomputed are found and computed in order, parents first, without
        recursion: a chain of thousands of recomputed ops is fine.
        """
        if self.output is not None:
            return self.output
        cached = cache.get(self.id)
        if cached is not None:
            return cached
        order = _topological_order(self, stop=lambda node: node.output is not None or node.id in cache)
        for node in order:
            spec = node.spec
            if spec is None or spec.forward is None or not node.parents:
                name = spec.name if spec is not None else "a leaf"
                raise RuntimeError(f"autodiff: the output of {name} was released")
        for node in order:
            spec = node.spec
            assert spec is not None
            assert spec.forward is not None
            inputs = []
            for kept, parent in zip(node.inputs, node.parents):
                if kept is None:
                    assert parent is not None
                    kept = parent.output if parent.output is not None else cache[parent.id]
                inputs.append(kept)
            cache[node.id] = spec.forward(inner, inputs, node.args)
        return cache[self.id]

    def input_values(self, inner: Backend, cache: dict[int, Primitive]) -> list[Any]:
        """The inputs backward needs: kept ones, or parents' values recomputed."""
        spec = self.spec
        assert spec is not None
        values = list(self.inputs)
        for position in spec.keeps_inputs:
            if values[position] is None:
                parent = self.parents[position]
                if parent is None:
                    raise RuntimeError(f"autodiff: an input of {spec.name} was released")
                values[position] = parent.value(inner, cache)
        return values

    def release(self) -> None:
        """Drop what this node keeps for backward: its graph is consumed."""
        if self.spec is not None:
            self.parents = ()
            self.inputs = ()
            self.output = None
            self.args = None


class AutodiffTensor:
    """A float primitive of an autodiff backend: the inner primitive and its graph node (``None`` when
    nothing it depends on requires a gradient). ``shape`` and ``dtype`` are the inner primitive's."""

    __slots__ = ("dtype", "node", "primitive", "shape")

    def __init__(self, primitive: Primitive, node: Node | None = None) -> None:
        self.primitive = primitive
        self.node = node
        self.shape: tuple[int, ...] = primitive.shape
        self.dtype: Any = primitive.dtype

    def __repr__(self) -> str:
        tracked = "tracked" if self.node is not None else "untracked"
        return f"AutodiffTensor({tracked}, shape={list(self.shape)})"


class AutodiffGradients(Gradients):
    """The gradients of one ``backward``: inner primitives keyed by the leaves' node ids.

    Nothing refers back to the graph, so the container can be handed to another thread.
    """

    def __init__(self, grads: dict[int, Primitive]) -> None:
        self._grads = grads

    @staticmethod
    def _key(tensor: Any) -> int | None:
        node = tensor.node if isinstance(tensor, AutodiffTensor) else None
        return None if node is None else node.id

    def get(self, tensor: Any) -> Primitive | None:
        key = self._key(tensor)
        return None if key is None else self._grads.get(key)

    def remove(self, tensor: Any) -> Primitive | None:
        key = self._key(tensor)
        return None if key is None else self._grads.pop(key, None)

    def replace(self, tensor: Any, gradient: Primitive) -> None:
        key = self._key(tensor)
        if key is None:
            raise ValueError("grad_replace: the tensor is not tracked (it does not require a gradient)")
        self._grads[key] = gradient

    def __len__(self) -> int:
        return len(self._grads)

    def __repr__(self) -> str:
        return f"Gradients({len(self._grads)} tensors)"


def _inner_value(value: Any) -> Any:
    """The inner primitive of an ``AutodiffTensor``; an int or bool primitive (the inner backend's own,
    which may have a ``primitive`` attribute of its own) as it is."""
    return value.primitive if value.__class__ is AutodiffTensor else value


def record(
    spec: OpSpec,
    inputs: Sequence[Any],
    output: Primitive,
    args: Any = None,
    checkpointing: bool = False,
) -> AutodiffTensor:
    """The output of an op, tracked if any input is: the one mechanism every differentiable op uses,
    built-in or custom.

    Args:
        spec: how the op is differentiated.
        inputs: the op's tensor inputs: ``AutodiffTensor`` for float tensors (tracked or not), inner
            primitives for int or bool tensors.
        output: the inner primitive the op computed.
        args: the op's non-tensor arguments, handed to ``spec.backward`` (and ``spec.forward``).
        checkpointing: whether balanced checkpointing applies (memory-bound ops then keep nothing).
    """
    parents = tuple([x.node if x.__class__ is AutodiffTensor else None for x in inputs])
    if parents.count(None) == len(parents):
        return AutodiffTensor(output)
    recompute = checkpointing and spec.forward is not None
    keeps = spec.keeps_inputs
    if recompute:
        # tracked inputs come back through their parents; constants cannot, so they stay
        kept = tuple([None if parent is not None else _inner_value(x) for x, parent in zip(inputs, parents)])
    elif keeps:
        kept = tuple([_inner_value(x) if i in keeps else None for i, x in enumerate(inputs)])
    else:
        kept = (None,) * len(inputs)
    # under checkpointing, compute-bound outputs are the checkpoints memory-bound ops recompute from
    keep_output = (spec.keeps_output or checkpointing) and not recompute
    node = Node(spec, parents, kept, output if keep_output else None, args)
    return AutodiffTensor(output, node)


def leaf(tensor: AutodiffTensor, requires_grad: bool) -> AutodiffTensor:
    """``tensor`` as a leaf that requires a gradient (or as an untracked tensor)."""
    if not requires_grad:
        return AutodiffTensor(tensor.primitive)
    return AutodiffTensor(tensor.primitive, Node(None, (), (), tensor.primitive, None, requires_grad=True))


def _topological_order(root: Node, stop: Callable[[Node], bool] | None = None) -> list[Node]:
    """Nodes reachable from ``root``, each after all of its parents; the search neither includes nor
    goes past the nodes ``stop`` holds for.

    A node is made after its parents, so their ids order the graph. Walked from the newest node,
    backward reaches each side branch (a bias's broadcast, say) right after its last use, where a
    depth-first order can leave it to the very end.
    """
    found: dict[int, Node] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.id in found or (stop is not None and stop(node)):
            continue
        found[node.id] = node
        stack.extend(parent for parent in node.parents if parent is not None and parent.id not in found)
    return [found[key] for key in sorted(found)]


@contextlib.contextmanager
def watching(callbacks: dict[int, list[Callable[[Primitive], None]]]) -> Iterator[None]:
    """While the block runs in this thread, ``backward`` calls ``callbacks[node id]`` with each watched
    leaf's gradient as soon as it is complete (nested blocks add up)."""
    stack: list[dict[int, list[Callable[[Primitive], None]]]] | None = getattr(_watchers, "stack", None)
    if stack is None:
        stack = _watchers.stack = []
    stack.append(callbacks)
    try:
        yield
    finally:
        stack.remove(callbacks)


def _watched() -> dict[int, list[Callable[[Primitive], None]]]:
    stack: list[dict[int, list[Callable[[Primitive], None]]]] | None = getattr(_watchers, "stack", None)
    if not stack:
        return {}
    if len(stack) == 1:
        return stack[0]
    merged: dict[int, list[Callable[[Primitive], None]]] = {}
    for callbacks in stack:
        for key, found in callbacks.items():
            merged.setdefault(key, []).extend(found)
    return merged


def backward(inner: Backend, root: AutodiffTensor, seed: Primitive) -> AutodiffGradients:
    """Gradients of ``root`` seeded with ``seed`` with respect to every leaf that requires one; the
    traversed graph is released.

    A watched leaf (``watching``) is reported as soon as the last op that uses it has added its part,
    not when the walk reaches the leaf, since data-parallel training sends each gradient as early as
    it can.
    """
    if root.node is None:
        return AutodiffGradients({})
    order = _topological_order(root.node)
    pending: dict[int, Primitive] = {root.node.id: seed}
    result: dict[int, Primitive] = {}
    cache: dict[int, Primitive] = {}
    watched = _watched()
    uses: dict[int, int] = {}  # watched leaf -> ops of the graph still to add to its gradient
    if watched:
        for node in order:
            for parent in node.parents:
                if parent is not None and parent.id in watched:
                    uses[parent.id] = uses.get(parent.id, 0) + 1

    def used(node: Node) -> None:
        for parent in node.parents:
            if parent is not None and parent.id in uses:
                uses[parent.id] -= 1
                gradient = pending.get(parent.id)
                if uses[parent.id] == 0 and gradient is not None:
                    for callback in watched[parent.id]:
                        callback(gradient)

    try:
        for node in reversed(order):
            grad = pending.pop(node.id, None)
            spec = node.spec
            if grad is None:
                if uses:
                    used(node)
                continue
            if spec is None:
                if node.requires_grad:
                    result[node.id] = grad
                    if node.id in watched and node.id not in uses:  # the root itself
                        for callback in watched[node.id]:
                            callback(grad)
                continue
            if not node.parents:
                raise RuntimeError(
                    f"autodiff: the graph through {spec.name} was released by an earlier backward pass; "
                    f"run the forward pass again to differentiate again"
                )
            inputs = node.input_values(inner, cache)
            output = node.value(inner, cache) if spec.keeps_output else None
            grads = spec.backward(inner, grad, inputs, output, node.args)
            for parent, parent_grad in zip(node.parents, grads):
                if parent is None or parent_grad is None:
                    continue
                current = pending.get(parent.id)
                pending[parent.id] = parent_grad if current is None else inner.float_add(current, parent_grad)
            if uses:
                used(node)
    finally:
        for node in order:
            node.release()
    return AutodiffGradients(result)
