"""The intermediate representation of an ONNX model: graphs of nodes over named values.

The IR holds no ``onnx`` objects: attributes are plain Python values (ints, floats, strings, lists,
NumPy arrays for tensors, ``Graph`` for subgraphs), initializers and constants are NumPy arrays, and
each value carries the type and shape that inference found for it (``ValueType``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from burn_backend import DType

__all__ = ["Dim", "Graph", "Node", "ValueType"]

Dim = int | str | None
"""A dimension: a size, a symbolic name, or unknown."""


@dataclass
class ValueType:
    """The type of a value: a tensor (``kind="tensor"``), a sequence of tensors or an optional.

    Attributes:
        kind: ``"tensor"``, ``"sequence"``, ``"optional"`` or ``"unknown"``.
        elem_type: the ONNX element type number (``onnx.TensorProto.FLOAT`` is 1), 0 if unknown.
        shape: the dims, or ``None`` where the rank is unknown.
        inner: the element's type, for sequences and optionals.
    """

    kind: str = "unknown"
    elem_type: int = 0
    shape: tuple[Dim, ...] | None = None
    inner: ValueType | None = None

    @property
    def dtype(self) -> DType | None:
        """The burn dtype of a tensor's elements, ``None`` where unknown or not one of ours."""
        from ._dtypes import dtype_of

        return dtype_of(self.elem_type) if self.kind == "tensor" else None

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        """The shape when every dim is a known size, else ``None``."""
        if self.shape is None or not all(isinstance(d, int) and d >= 0 for d in self.shape):
            return None
        return tuple(int(d) for d in self.shape)  # type: ignore[arg-type]

    def describe(self) -> str:
        """A short text such as ``tensor(float)[1, 3, 'N']``."""
        from ._dtypes import elem_type_name

        if self.kind == "tensor":
            dims = "?" if self.shape is None else str(list(self.shape))
            return f"tensor({elem_type_name(self.elem_type)}){dims}"
        if self.inner is not None:
            return f"{self.kind}({self.inner.describe()})"
        return self.kind


@dataclass
class Node:
    """One operation: ``outputs = op_type(inputs, **attrs)``; an empty input name is a missing
    optional input.

    Attributes:
        name: the node's name (made unique when the model had none).
        op_type: the ONNX operator, such as ``"Conv"``.
        domain: ``""`` for the default ONNX domain.
        opset: the version of ``domain`` the node is interpreted in.
        inputs, outputs: value names.
        attrs: attribute values (subgraphs as ``Graph``).
    """

    name: str
    op_type: str
    domain: str
    opset: int
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """``node 'conv1' (Conv, opset 17)``: how errors name a node."""
        domain = f"{self.domain}." if self.domain not in ("", "ai.onnx") else ""
        return f"node {self.name!r} ({domain}{self.op_type}, opset {self.opset})"

    def subgraphs(self) -> list[Graph]:
        """The graphs among the attributes (the branches of ``If``, bodies of ``Loop`` and ``Scan``)."""
        found: list[Graph] = []
        for value in self.attrs.values():
            if isinstance(value, Graph):
                found.append(value)
            elif isinstance(value, list):
                found.extend(v for v in value if isinstance(v, Graph))
        return found


@dataclass
class Graph:
    """A graph: inputs, nodes in topological order, outputs.

    Attributes:
        name: the graph's name.
        inputs: the names of the values the caller provides (initializers are not among them).
        outputs: the names of the results.
        nodes: the operations, each after the nodes that make its inputs.
        initializers: named weights, as arrays; ``params`` says which become trainable ``Param``s.
        constants: named constant arrays (from ``Constant`` nodes, folding and non-float initializers).
        params: the names of the initializers that become parameters.
        types: the type of each value inference knew.
        opsets: the opset version of each domain the model imports.
    """

    name: str
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]
    initializers: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    constants: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    types: dict[str, ValueType] = field(default_factory=dict)
    opsets: dict[str, int] = field(default_factory=dict)

    def walk(self) -> list[tuple[Graph, Node]]:
        """Every node of this graph and of its subgraphs, with the graph holding it."""
        found: list[tuple[Graph, Node]] = []
        for node in self.nodes:
            found.append((self, node))
            for sub in node.subgraphs():
                found.extend(sub.walk())
        return found

    def type_of(self, name: str) -> ValueType:
        """The inferred type of value ``name`` (``kind="unknown"`` when inference found none)."""
        return self.types.get(name, ValueType())

    def summary(self) -> str:
        """A listing of the graph, one node a line, for reading and debugging."""
        lines = [f"graph {self.name!r}: inputs {self.inputs} -> outputs {self.outputs}"]
        for name in self.params:
            lines.append(f"  param {name}: {list(self.initializers[name].shape)}")
        for node in self.nodes:
            lines.append(f"  {node.outputs} = {node.op_type}({node.inputs}) {node.name}")
        return "\n".join(lines)
