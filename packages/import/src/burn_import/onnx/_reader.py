"""Reading ONNX models (with the ``onnx`` package) into the IR: types and shapes from ONNX's inference,
attributes as Python values, local and schema functions expanded where no native implementation
exists, then validation (every unsupported operator, attribute or dtype reported at once), constant
folding and dead-code elimination."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import numpy as np

from ._dtypes import dtype_of, elem_type_name
from ._errors import OnnxImportError, UnsupportedModelError
from ._fold import eliminate_dead_code, fold_constants
from ._ir import Dim, Graph, Node, ValueType
from .ops import REGISTRY
from .ops._registry import lookup

__all__ = ["read_model"]

_SKIP_DOMAINS = {"ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training"}


def _onnx() -> Any:
    try:
        import onnx
    except ModuleNotFoundError as error:  # pragma: no cover - depends on the environment
        raise ModuleNotFoundError(
            "reading ONNX models needs the onnx package: pip install 'burn-import[onnx]'"
        ) from error
    return onnx


def read_model(model: Any, *, fold: bool = True) -> Graph:
    """The IR of an ONNX model.

    Args:
        model: a path to a ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
        fold: whether to fold constants and eliminate dead code.

    Raises:
        UnsupportedModelError: listing every unsupported operator, attribute or dtype (node name, op
            type and opset).
        OnnxImportError: the model is malformed.
    """
    onnx = _onnx()
    if isinstance(model, (str, os.PathLike)):
        proto = onnx.load(str(Path(model)))
    elif isinstance(model, bytes):
        proto = onnx.load_from_string(model)
    else:
        proto = model
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False, data_prop=True)
    except Exception:  # inference is best effort: a model it rejects may still run
        inferred = proto
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version) for o in proto.opset_import}
    reader = _Reader(onnx, opsets, {(f.domain, f.name): f for f in proto.functions})
    graph = reader.graph(inferred.graph, top=True)
    graph.opsets = opsets
    problems = validate(graph)
    if problems:
        raise UnsupportedModelError(problems)
    if fold:
        fold_constants(graph)
        eliminate_dead_code(graph)
    return graph


def _type_of(onnx: Any, type_proto: Any) -> ValueType:
    which = type_proto.WhichOneof("value")
    if which == "tensor_type" or which == "sparse_tensor_type":
        tensor = getattr(type_proto, which)
        shape: tuple[Dim, ...] | None = None
        if tensor.HasField("shape"):
            dims: list[Dim] = []
            for d in tensor.shape.dim:
                if d.HasField("dim_value"):
                    dims.append(int(d.dim_value))
                elif d.HasField("dim_param"):
                    dims.append(str(d.dim_param))
                else:
                    dims.append(None)
            shape = tuple(dims)
        return ValueType("tensor", int(tensor.elem_type), shape)
    if which == "sequence_type":
        return ValueType("sequence", inner=_type_of(onnx, type_proto.sequence_type.elem_type))
    if which == "optional_type":
        return ValueType("optional", inner=_type_of(onnx, type_proto.optional_type.elem_type))
    if which == "map_type":
        return ValueType("map")
    return ValueType()


class _Reader:
    def __init__(self, onnx: Any, opsets: dict[str, int], functions: dict[tuple[str, str], Any]) -> None:
        self.onnx = onnx
        self.opsets = opsets
        self.functions = functions
        self.counter = itertools.count()
        self.names: set[str] = set()

    # -- graphs -------------------------------------------------------------------------------------
    def graph(self, proto: Any, top: bool = False, opsets: dict[str, int] | None = None) -> Graph:
        onnx = self.onnx
        opsets = opsets or self.opsets
        types: dict[str, ValueType] = {}
        for info in itertools.chain(proto.input, proto.output, proto.value_info):
            types[info.name] = _type_of(onnx, info.type)
        initializers: dict[str, np.ndarray[Any, Any]] = {}
        for tensor in proto.initializer:
            initializers[tensor.name] = self.array(tensor)
        for sparse in proto.sparse_initializer:
            initializers[sparse.values.name] = self.sparse(sparse)
        for name, array in initializers.items():
            types.setdefault(name, ValueType("tensor", _elem_of(onnx, array), tuple(array.shape)))
        inputs = [i.name for i in proto.input if i.name not in initializers]
        nodes: list[Node] = []
        for node_proto in proto.node:
            nodes.extend(self.node(node_proto, opsets, types))
        graph = Graph(
            name=proto.name or "graph",
            inputs=inputs,
            outputs=[o.name for o in proto.output],
            nodes=nodes,
            types=types,
        )
        for name, array in initializers.items():
            # float initializers are the trainable parameters (in a subgraph, of a control-flow op's
            # branch or body: those of more than one element; its scalars stay constants, as loop
            # increments and thresholds are); the rest are constants
            weight = array.size > 0 if top else array.ndim >= 1 and array.size > 1
            if weight and array.dtype.kind == "f" and dtype_of(_elem_of(onnx, array)):
                graph.initializers[name] = array
                graph.params.append(name)
            else:
                graph.constants[name] = array
        return graph

    def array(self, tensor: Any) -> np.ndarray[Any, Any]:
        from onnx import numpy_helper

        try:
            return np.asarray(numpy_helper.to_array(tensor))
        except Exception as error:
            raise OnnxImportError(f"tensor {tensor.name!r} cannot be read: {error}") from error

    def sparse(self, sparse: Any) -> np.ndarray[Any, Any]:
        values = self.array(sparse.values)
        indices = self.array(sparse.indices).astype(np.int64)
        dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
        if indices.ndim == 1:
            dense.reshape(-1)[indices] = values
        else:
            dense[tuple(indices.T)] = values
        return dense

    # -- nodes --------------------------------------------------------------------------------------
    def unique(self, base: str) -> str:
        name = base or "node"
        while name in self.names:
            name = f"{base or 'node'}_{next(self.counter)}"
        self.names.add(name)
        return name

    def attrs(self, proto: Any, opsets: dict[str, int]) -> dict[str, Any]:
        onnx = self.onnx
        out: dict[str, Any] = {}
        for attr in proto.attribute:
            value = onnx.helper.get_attribute_value(attr)
            out[attr.name] = self.attr_value(value, opsets)
        return out

    def attr_value(self, value: Any, opsets: dict[str, int]) -> Any:
        onnx = self.onnx
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace")
        if isinstance(value, onnx.TensorProto):
            return self.array(value)
        if isinstance(value, onnx.SparseTensorProto):
            return self.sparse(value)
        if isinstance(value, onnx.GraphProto):
            return self.graph(value, opsets=opsets)
        if isinstance(value, onnx.TypeProto):
            return _type_of(onnx, value)
        if isinstance(value, list):
            return [self.attr_value(v, opsets) for v in value]
        return value

    def node(self, proto: Any, opsets: dict[str, int], types: dict[str, ValueType]) -> list[Node]:
        domain = "" if proto.domain == "ai.onnx" else proto.domain
        opset = opsets.get(domain, opsets.get("", 1))
        local = self.functions.get((proto.domain, proto.op_type))
        if local is not None:
            return self.expand(proto, local, opsets, types)
        if lookup(domain, proto.op_type) is None and domain not in _SKIP_DOMAINS:
            function = self.schema_function(proto, domain, opset, types)
            if function is not None:
                return self.expand(
                    proto,
                    function,
                    opsets,
                    types,
                    _schema_defaults(onnx_schema(self.onnx, proto, domain, opset)),
                )
        node = Node(
            name=self.unique(proto.name or f"{proto.op_type}"),
            op_type=proto.op_type,
            domain=domain,
            opset=opset,
            inputs=list(proto.input),
            outputs=list(proto.output),
            attrs=self.attrs(proto, opsets),
        )
        return [node]

    def schema_function(self, proto: Any, domain: str, opset: int, types: dict[str, ValueType]) -> Any:
        onnx = self.onnx
        try:
            schema = onnx.defs.get_schema(proto.op_type, opset, domain)
        except Exception:
            return None
        if schema.has_function:
            body = schema.get_function_with_opset_version(opset) or schema.function_body
            if isinstance(body, bytes):
                parsed = onnx.FunctionProto()
                parsed.ParseFromString(body)
                body = parsed
            return body if len(body.node) else None
        if schema.has_context_dependent_function:
            input_types = []
            for name in proto.input:
                value_type = types.get(name)
                if value_type is None or value_type.kind != "tensor" or not value_type.elem_type:
                    return None
                input_types.append(
                    onnx.helper.make_tensor_type_proto(value_type.elem_type, None).SerializeToString()
                )
            try:
                data = schema.get_context_dependent_function(proto.SerializeToString(), input_types)
            except Exception:
                return None
            body = onnx.FunctionProto()
            body.ParseFromString(data)
            return body if len(body.node) else None
        return None

    def expand(
        self,
        proto: Any,
        function: Any,
        opsets: dict[str, int],
        types: dict[str, ValueType],
        schema_defaults: dict[str, Any] | None = None,
    ) -> list[Node]:
        """The nodes of ``function``'s body in place of the call ``proto``."""
        onnx = self.onnx
        prefix = f"{proto.name or proto.op_type}__{next(self.counter)}__"
        rename: dict[str, str] = {"": ""}
        for formal, actual in zip(function.input, proto.input):
            rename[formal] = actual
        for formal in function.input[len(proto.input) :]:
            rename[formal] = ""
        for formal, actual in zip(function.output, proto.output):
            rename[formal] = actual
        attrs = {a.name: a for a in proto.attribute}
        defaults = dict(schema_defaults or {})
        defaults.update({a.name: a for a in function.attribute_proto})
        inner_opsets = dict(opsets)
        for o in function.opset_import:
            inner_opsets["" if o.domain == "ai.onnx" else o.domain] = int(o.version)
        nodes: list[Node] = []
        for inner in function.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(inner)
            del copy.input[:]
            del copy.output[:]
            copy.input.extend(rename.setdefault(n, prefix + n) if n else "" for n in inner.input)
            copy.output.extend(rename.setdefault(n, prefix + n) if n else "" for n in inner.output)
            del copy.attribute[:]
            for attr in inner.attribute:
                if attr.ref_attr_name:
                    source = attrs.get(attr.ref_attr_name) or defaults.get(attr.ref_attr_name)
                    if source is None:
                        continue
                    resolved = onnx.AttributeProto()
                    resolved.CopyFrom(source)
                    resolved.name = attr.name
                    copy.attribute.append(resolved)
                else:
                    copy.attribute.append(attr)
            outer = lambda n: rename.setdefault(n, prefix + n) if n else ""  # noqa: E731
            for attr in copy.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    _rename_free(onnx, attr.g, outer, set())
                for sub in attr.graphs:
                    _rename_free(onnx, sub, outer, set())
            copy.name = prefix + (inner.name or inner.op_type)
            nodes.extend(self.node(copy, inner_opsets, types))
        return nodes


def _rename_free(onnx: Any, graph: Any, outer: Any, bound: set[str]) -> None:
    """Rename, in place, the names a subgraph reads from its enclosing scope (those it does not
    define itself) with ``outer``."""
    local = set(bound)
    local.update(i.name for i in graph.input)
    local.update(t.name for t in graph.initializer)
    for node in graph.node:
        local.update(node.output)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name and name not in local:
                node.input[i] = outer(name)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _rename_free(onnx, attr.g, outer, local)
            for sub in attr.graphs:
                _rename_free(onnx, sub, outer, local)
    for out in graph.output:
        if out.name not in local:
            out.name = outer(out.name)


def onnx_schema(onnx: Any, proto: Any, domain: str, opset: int) -> Any:
    """The schema of a node's operator, ``None`` if ONNX has none."""
    try:
        return onnx.defs.get_schema(proto.op_type, opset, domain)
    except Exception:
        return None


def _schema_defaults(schema: Any) -> dict[str, Any]:
    """The default value (an ``AttributeProto``) of each attribute of a schema that has one."""
    if schema is None:
        return {}
    found = {}
    for name, attribute in schema.attributes.items():
        default = attribute.default_value
        if default is not None and default.type != 0:
            found[name] = default
    return found


def _elem_of(onnx: Any, array: np.ndarray[Any, Any]) -> int:
    try:
        return int(onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
    except Exception:
        return 0


# -- validation -------------------------------------------------------------------------------------
def validate(graph: Graph) -> list[str]:
    """Every problem that would stop the graph from running: unsupported operators, attributes,
    attribute values and dtypes, one line each."""
    problems: list[str] = []
    for owner, node in graph.walk():
        spec = REGISTRY.get((node.domain, node.op_type))
        if spec is None:
            problems.append(f"{node.describe()}: unsupported operator")
            continue
        if node.opset < spec.since:
            problems.append(f"{node.describe()}: opset below {spec.since} is not supported")
            continue
        unknown = sorted(set(node.attrs) - spec.attrs)
        if unknown:
            problems.append(f"{node.describe()}: unsupported attribute(s) {unknown}")
            continue
        if spec.check is not None:
            reason = spec.check(node)
            if reason:
                problems.append(f"{node.describe()}: {reason}")
                continue
        for name in node.inputs + node.outputs:
            problem = _dtype_problem(owner.type_of(name))
            if problem and name:
                problems.append(f"{node.describe()}: value {name!r} is {problem}")
                break
    for name in graph.inputs + graph.outputs:
        problem = _dtype_problem(graph.type_of(name))
        if problem:
            problems.append(f"graph value {name!r} is {problem}")
    return problems


def _dtype_problem(value_type: ValueType) -> str | None:
    if value_type.kind in ("sequence", "optional") and value_type.inner is not None:
        return _dtype_problem(value_type.inner)
    if value_type.kind == "map":
        return "a map, which is not supported"
    if value_type.kind != "tensor" or value_type.elem_type == 0:
        return None
    if dtype_of(value_type.elem_type) is None:
        return (
            f"of element type {elem_type_name(value_type.elem_type)}, which our backends do not have "
            "(unsupported dtype)"
        )
    return None
