"""Constant folding and dead-code elimination over the IR.

A node folds when every input it reads is a constant and its operator has a host (NumPy)
implementation; ``Shape`` and ``Size`` fold when inference knows the static shape of their input.
Folded outputs become constants of the graph; nodes whose outputs nobody reads are removed, and so are
constants and parameters nobody reads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._ir import Graph, Node

__all__ = ["eliminate_dead_code", "fold_constants", "folded_bound", "used_names"]

_NEVER_FOLD = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def fold_constants(
    graph: Graph, outer: dict[str, np.ndarray[Any, Any]] | None = None, *, max_bytes: int = 64 * 2**20
) -> int:
    """Fold what can be folded, in place; returns the number of nodes folded (subgraphs included).

    A node whose outputs could take more than ``max_bytes`` (``folded_bound``, worked out from its
    inputs before anything is computed) is left to run when the model is called.
    """
    from .ops._registry import Context, lookup

    known: dict[str, np.ndarray[Any, Any]] = dict(outer or {})
    known.update(graph.constants)
    kept: list[Node] = []
    folded = 0
    for node in graph.nodes:
        for sub in node.subgraphs():
            folded += fold_constants(sub, known, max_bytes=max_bytes)
        outputs = _fold_shape(graph, node)
        spec = lookup(node.domain, node.op_type)
        if (
            outputs is None
            and spec is not None
            and spec.host is not None
            and node.op_type not in _NEVER_FOLD
            and all(not name or name in known for name in node.inputs)
            and folded_bound(node, [known[name] if name else None for name in node.inputs]) <= max_bytes
        ):
            args = [known[name] if name else None for name in node.inputs]
            ctx = Context(node, None, {}, {}, _no_graphs)  # type: ignore[arg-type]
            try:
                result = spec.host(ctx, *args)
            except Exception:  # left to the runtime, which reports errors with the values it has
                result = None
            if result is not None:
                outputs = list(result) if isinstance(result, tuple) else [result]
        if outputs is None or not all(isinstance(o, np.ndarray) for o in outputs):
            kept.append(node)
            continue
        for name, value in zip(node.outputs, outputs):
            if name:
                graph.constants[name] = value
                known[name] = value
        folded += 1
    graph.nodes = kept
    return folded


_ITEM_BOUND = 8  # bytes of the widest element a folded value can have
# operators whose outputs together hold no more elements than their first input
_NO_LARGER = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Slice", "Split", "CastLike", "Identity"})


def folded_bound(node: Node, args: list[np.ndarray[Any, Any] | None]) -> float:
    """An upper bound of the bytes a folded ``node`` outputs, from its constant inputs: exact sizes for
    the operators whose output size depends on input values (``ConstantOfShape``, ``Expand``,
    ``Tile``, ``Range``), the first input's size for those that only move or cut it (``Reshape``,
    ``Slice``...), and for the others a bound by the inputs' sizes (the product of their sizes
    plus one, times the largest rank: above any broadcast, product, gather, concatenation or
    ``NonZero``). ``inf`` where no bound can be given."""
    arrays = [a for a in args if a is not None]
    try:
        if node.op_type == "ConstantOfShape":
            count = math.prod(_ints(args[0])) if args and args[0] is not None else 1
        elif node.op_type == "Expand":
            data, shape = np.asarray(args[0]).shape, _ints(args[1])
            rank = max(len(data), len(shape))
            padded = [1] * (rank - len(data)) + list(data), [1] * (rank - len(shape)) + shape
            count = math.prod(max(a, b) for a, b in zip(*padded))
        elif node.op_type == "Tile":
            count = int(np.asarray(args[0]).size) * math.prod(_ints(args[1]))
        elif node.op_type in _NO_LARGER:
            count = int(np.asarray(args[0]).size)
        elif node.op_type == "Range":
            start, limit, delta = (float(np.asarray(a).reshape(-1)[0]) for a in args[:3])
            count = max(math.ceil((limit - start) / delta), 0)
        else:
            rank = max([a.ndim for a in arrays] + [1])
            count = math.prod(int(a.size) + 1 for a in arrays) * rank
    except Exception:  # a malformed input (no value, not numeric, a zero delta): not folded
        return math.inf
    return float(count) * _ITEM_BOUND


def _ints(value: np.ndarray[Any, Any] | None) -> list[int]:
    array = np.asarray(value)
    if array.dtype.kind not in "iu" or array.size > 64:
        raise ValueError("not a shape")
    return [max(int(v), 0) for v in array.reshape(-1)]


def _no_graphs(graph: Graph, env: dict[str, Any]) -> list[Any]:
    raise RuntimeError("no subgraphs while folding")


def _fold_shape(graph: Graph, node: Node) -> list[np.ndarray[Any, Any]] | None:
    """``Shape``/``Size`` of a value of known static shape, as constants."""
    if node.op_type not in ("Shape", "Size") or node.domain != "":
        return None
    shape = graph.type_of(node.inputs[0]).static_shape
    if shape is None:
        return None
    if node.op_type == "Size":
        return [np.array(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)]
    rank = len(shape)
    start = int(node.attrs.get("start", 0))
    end = node.attrs.get("end")
    start = min(max(start + rank if start < 0 else start, 0), rank)
    stop = rank if end is None else int(end)
    stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
    return [np.array(shape[start:stop], dtype=np.int64)]


def used_names(graph: Graph) -> set[str]:
    """Every value name read by the nodes of ``graph`` and its subgraphs, and their outputs."""
    names: set[str] = set(graph.outputs)
    for node in graph.nodes:
        names.update(node.inputs)
        for sub in node.subgraphs():
            names.update(used_names(sub))
    return names


def eliminate_dead_code(graph: Graph) -> int:
    """Remove, in place, the nodes whose outputs nobody reads (last to first) and the constants and
    parameters nobody reads; returns the number of nodes removed."""
    needed: set[str] = set(graph.outputs)
    kept: list[Node] = []
    for node in reversed(graph.nodes):
        if any(name and name in needed for name in node.outputs) or _has_effects(node):
            kept.append(node)
            needed.update(node.inputs)
            for sub in node.subgraphs():
                needed.update(used_names(sub))
                eliminate_dead_code(sub)
    removed = len(graph.nodes) - len(kept)
    graph.nodes = kept[::-1]
    for name in list(graph.constants):
        if name not in needed:
            del graph.constants[name]
    graph.params = [name for name in graph.params if name in needed]
    for name in list(graph.initializers):
        if name not in graph.params:
            del graph.initializers[name]
    return removed


def _has_effects(node: Node) -> bool:
    return False
