"""Reading ONNX models (with the ``onnx`` package) into the IR: types and shapes from ONNX's inference,
attributes as Python values, local and schema functions expanded where no native implementation
exists, then validation (every unsupported operator, attribute or dtype reported at once), constant
folding and dead-code elimination."""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ._dtypes import dtype_of, elem_type_name
from ._errors import OnnxImportError, UnsupportedModelError
from ._fold import eliminate_dead_code, fold_constants
from ._ir import Dim, Graph, Node, ValueType
from ._limits import OnnxLimits, check_tensor, load_external_data
from .ops import REGISTRY
from .ops._registry import lookup

__all__ = ["check_structure", "read_model"]

_SKIP_DOMAINS = {"ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training"}


def _onnx() -> Any:
    try:
        import onnx
    except ModuleNotFoundError as error:  # pragma: no cover - depends on the environment
        raise ModuleNotFoundError(
            "reading ONNX models needs the onnx package: pip install 'burn-import[onnx]'"
        ) from error
    return onnx


def read_model(model: Any, *, fold: bool = True, limits: OnnxLimits | None = None) -> Graph:
    """The IR of an ONNX model.

    Args:
        model: a path to a ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
        fold: whether to fold constants and eliminate dead code.
        limits: the bounds on sizes, node counts and nesting (``OnnxLimits()`` by default).

    Returns:
        The ``Graph``, validated (and folded when ``fold``).

    Raises:
        UnsupportedModelError: listing every unsupported operator, attribute or dtype (node name, op
            type and opset).
        OnnxImportError: the model is malformed or over a limit; the message names the file (or says
            the model came as bytes or a proto) and what is wrong.

    Example:
        >>> graph = read_model("model.onnx")  # doctest: +SKIP
        >>> print(graph.summary())  # doctest: +SKIP
    """
    onnx = _onnx()
    limits = limits or OnnxLimits()
    where = _where(model)
    try:
        return _read(onnx, model, fold, limits)
    except UnsupportedModelError:
        raise
    except OnnxImportError as error:
        raise OnnxImportError(f"{where}: {error}") from error
    except Exception as error:  # the net under the checks: a decode error, or one no check foresaw
        raise OnnxImportError(f"{where}: malformed model: {type(error).__name__}: {error}") from error


def _where(model: Any) -> str:
    """How errors name the model read."""
    if isinstance(model, (str, os.PathLike)):
        return f"ONNX file {str(model)!r}"
    if isinstance(model, (bytes, bytearray, memoryview)):
        return f"ONNX model ({len(model)} bytes)"
    return "ONNX model"


def _read(onnx: Any, model: Any, fold: bool, limits: OnnxLimits) -> Graph:
    folder: Path | None = None
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise OnnxImportError("no such file")
        proto = onnx.load(str(path), load_external_data=False)
        folder = path.parent
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto = onnx.load_from_string(bytes(model))
    elif isinstance(model, onnx.ModelProto):
        proto = model
    else:
        raise OnnxImportError(
            f"expected a path, the file's bytes or an onnx.ModelProto, got {type(model).__name__}"
        )
    load_external_data(onnx, proto, folder, limits)
    check_structure(proto, limits)  # before inference, which expands functions itself
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False, data_prop=True)
    except Exception:  # inference is best effort: a model it rejects may still run
        inferred = proto
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version) for o in proto.opset_import}
    reader = _Reader(onnx, opsets, {(f.domain, f.name): f for f in proto.functions}, limits)
    graph = reader.graph(inferred.graph, top=True)
    graph.opsets = opsets
    problems = validate(graph)
    if problems:
        raise UnsupportedModelError(problems)
    if fold:
        fold_constants(graph, max_bytes=limits.max_folded_bytes)
        eliminate_dead_code(graph)
    return graph


def check_structure(proto: Any, limits: OnnxLimits) -> None:
    """Refuse, before anything is expanded, a model whose nodes (model-local functions expanded at each
    call, subgraphs included) outnumber ``limits.max_nodes``, that nests subgraphs or function calls
    deeper than ``limits.max_depth``, or whose functions call themselves.

    Raises:
        OnnxImportError: naming the function or the limit.
    """
    functions = {(f.domain, f.name): f for f in proto.functions}
    sizes: dict[tuple[str, str], int] = {}
    active: list[tuple[str, str]] = []

    def nodes_of(node_list: Any, depth: int) -> int:
        if depth > limits.max_depth:
            raise OnnxImportError(
                f"subgraphs and function calls nest deeper than {limits.max_depth} (OnnxLimits.max_depth)"
            )
        total = 0
        for node in node_list:
            key = (node.domain, node.op_type)
            total += function_size(key, depth) if key in functions else 1
            for attr in node.attribute:
                for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    total += nodes_of(graph.node, depth + 1)
            if total > limits.max_nodes:
                raise OnnxImportError(
                    f"the model expands to more than {limits.max_nodes} nodes (OnnxLimits.max_nodes)"
                )
        return total

    def function_size(key: tuple[str, str], depth: int) -> int:
        if key in active:
            chain = " -> ".join(f"{d + '.' if d else ''}{n}" for d, n in [*active[active.index(key) :], key])
            raise OnnxImportError(f"recursive ONNX function: {chain} (functions may not call themselves)")
        if key not in sizes:
            active.append(key)
            sizes[key] = nodes_of(functions[key].node, depth + 1)
            active.pop()
        return sizes[key]

    nodes_of(proto.graph.node, 0)


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
    def __init__(
        self, onnx: Any, opsets: dict[str, int], functions: dict[tuple[str, str], Any], limits: OnnxLimits
    ) -> None:
        self.onnx = onnx
        self.opsets = opsets
        self.functions = functions
        self.limits = limits
        self.counter = itertools.count()
        self.names: set[str] = set()
        self.made = 0  # nodes made, schema functions' expansions included
        self.depth = 0  # subgraphs and function calls entered
        self.schemas: dict[tuple[str, str, int], Any] = {}

    def enter(self, what: str) -> None:
        self.depth += 1
        if self.depth > self.limits.max_depth:
            raise OnnxImportError(
                f"{what}: subgraphs and function calls nest deeper than {self.limits.max_depth} "
                "(OnnxLimits.max_depth)"
            )

    # -- graphs -------------------------------------------------------------------------------------
    def graph(self, proto: Any, top: bool = False, opsets: dict[str, int] | None = None) -> Graph:
        self.enter(f"graph {proto.name!r}")
        try:
            return self.graph_body(proto, top, opsets)
        finally:
            self.depth -= 1

    def graph_body(self, proto: Any, top: bool, opsets: dict[str, int] | None) -> Graph:
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
        readers = _readers(graph, initializers, self.schema)
        for name, array in initializers.items():
            # float initializers are the trainable parameters when some node reads them as a weight
            # (``_readers``; in a subgraph, of a control-flow op's branch or body, only those of more
            # than one element: its scalars stay constants, as loop increments and thresholds are);
            # the rest are constants
            weight = array.size > 0 if top else array.ndim >= 1 and array.size > 1
            weight = weight and readers.get(name, True)
            if weight and array.dtype.kind == "f" and dtype_of(_elem_of(onnx, array)):
                graph.initializers[name] = array
                graph.params.append(name)
            else:
                graph.constants[name] = array
        return graph

    def schema(self, node: Node) -> Any:
        """The ONNX schema of a node's operator (cached), ``None`` where ONNX has none."""
        key = (node.domain, node.op_type, node.opset)
        if key not in self.schemas:
            try:
                self.schemas[key] = self.onnx.defs.get_schema(node.op_type, node.opset, node.domain)
            except Exception:
                self.schemas[key] = None
        return self.schemas[key]

    def array(self, tensor: Any) -> np.ndarray[Any, Any]:
        from onnx import numpy_helper

        check_tensor(self.onnx, tensor, self.limits)
        try:
            return np.asarray(numpy_helper.to_array(tensor))
        except Exception as error:
            raise OnnxImportError(f"tensor {tensor.name!r} cannot be read: {error}") from error

    def sparse(self, sparse: Any) -> np.ndarray[Any, Any]:
        values = self.array(sparse.values)
        indices = self.array(sparse.indices)
        dims = [int(d) for d in sparse.dims]
        what = f"sparse tensor {sparse.values.name!r} (dims {dims})"
        count = math.prod(dims)
        if any(d < 0 for d in dims) or count * values.dtype.itemsize > self.limits.max_tensor_bytes:
            raise OnnxImportError(
                f"{what}: dense size {count} x {values.dtype.itemsize} bytes is negative or over the "
                f"limit of {self.limits.max_tensor_bytes} (OnnxLimits.max_tensor_bytes)"
            )
        nnz = values.shape[0] if values.ndim == 1 else -1
        if indices.dtype.kind not in "iu" or indices.shape not in ((nnz,), (nnz, len(dims))):
            raise OnnxImportError(
                f"{what}: {list(values.shape)} values and {indices.dtype} indices of shape "
                f"{list(indices.shape)}; expected 1-d values and integer indices of shape [nnz] or "
                "[nnz, rank]"
            )
        bounds = [count] if indices.ndim == 1 else dims
        if indices.size and (indices.min() < 0 or (indices >= np.array(bounds)).any()):
            raise OnnxImportError(f"{what}: an index is out of range")
        dense = np.zeros(tuple(dims), dtype=values.dtype)
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
        self.made += 1
        if self.made > self.limits.max_nodes:
            raise OnnxImportError(
                f"the model expands to more than {self.limits.max_nodes} nodes (OnnxLimits.max_nodes)"
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
        self.enter(f"function {function.name!r}")
        try:
            return self.expand_body(proto, function, opsets, types, schema_defaults)
        finally:
            self.depth -= 1

    def expand_body(
        self,
        proto: Any,
        function: Any,
        opsets: dict[str, int],
        types: dict[str, ValueType],
        schema_defaults: dict[str, Any] | None,
    ) -> list[Node]:
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


# operators that broadcast an operand against the others: a one-element operand is a scalar of the
# arithmetic (``x * 0.5``, ``x ** 2``, a ``Clip`` bound), not a weight
_SCALAR_OPERANDS = frozenset(
    {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Sum", "Mean", "Where", "Clip"}
    | {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}
)
# inputs that are running state, not weights: batch norm's running mean and variance
_STATE_INPUTS = frozenset({("BatchNormalization", 3), ("BatchNormalization", 4)})


def _readers(graph: Graph, initializers: dict[str, np.ndarray[Any, Any]], schema: Any) -> dict[str, bool]:
    """For each initializer some node reads (subgraphs' nodes included), whether one of them reads it
    as a weight: not as a one-element operand of broadcasting arithmetic (``_SCALAR_OPERANDS``), not as
    running state (``_STATE_INPUTS``), not as an input the operator's ONNX schema calls
    non-differentiable (a shape, an index, a ``Clip`` bound)."""
    found: dict[str, bool] = {}
    for _, node in graph.walk():
        formal = None
        for index, name in enumerate(node.inputs):
            if name not in initializers:
                continue
            scalar = node.op_type in _SCALAR_OPERANDS and initializers[name].size == 1
            if node.domain == "" and (scalar or (node.op_type, index) in _STATE_INPUTS):
                role = False
            else:
                if formal is None:
                    spec = schema(node)
                    formal = list(spec.inputs) if spec is not None else []
                role = True
                if formal:
                    param = formal[min(index, len(formal) - 1)]
                    role = "NonDifferentiable" not in str(param.differentiation_category)
            found[name] = found.get(name, False) or role
    return found


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
