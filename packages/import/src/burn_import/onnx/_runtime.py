"""Running the IR: ``OnnxModel``, a ``Module`` whose parameters are the model's float initializers and
whose ``forward`` interprets the graph with burn tensors on any backend."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from burn_backend import Device, Tensor, default_device
from burn_nn import Module, Param

from ._errors import OnnxImportError
from ._ir import Graph
from ._limits import OnnxLimits
from ._reader import read_model
from .ops._registry import Context, OptionalValue, Value, lookup, to_tensor

__all__ = ["OnnxModel", "load"]


def load(model: Any, device: Device | None = None, *, limits: OnnxLimits | None = None) -> OnnxModel:
    """An ONNX model as a ``Module`` that runs on ``device`` (by default the default device).

    Args:
        model: a path to a ``.onnx`` file, its bytes, an ``onnx.ModelProto`` or an IR ``Graph``.
        device: where the parameters live and the model runs.
        limits: the bounds on sizes, node counts and nesting while reading (``OnnxLimits()``).

    Returns:
        An ``OnnxModel``: call it with one tensor (or NumPy array) per graph input, in order or by
        name; it returns a tensor, or a tuple of them for several outputs. Its float initializers are
        ``Param``s, so it trains, records and moves between devices as any module.

    Raises:
        UnsupportedModelError: the model uses operators, attributes or dtypes this importer does not
            support (every one is listed, with node name, op type and opset).
        OnnxImportError: the file is malformed or over a limit of ``limits`` (the message names the
            file and what is wrong).

    Example:
        >>> model = burn_import.onnx.load("model.onnx", device)  # doctest: +SKIP
        >>> y = model(Tensor.random([1, 3, 224, 224], device=device))  # doctest: +SKIP
    """
    graph = model if isinstance(model, Graph) else read_model(model, limits=limits)
    return OnnxModel(graph, device or default_device())


def param_field(name: str) -> str:
    """The field name of an initializer in the module's record (dots and other separators become
    underscores, so record paths stay unambiguous)."""
    field = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return field if field and not field[0].isdigit() else f"p_{field}"


class OnnxModel(Module):
    """An ONNX graph run with burn tensors.

    Attributes:
        weights: the float initializers as ``Param``s, by field name (``param_field`` of the ONNX name).
        graph: the IR (a constant of the module).
    """

    def __init__(self, graph: Graph, device: Device) -> None:
        self.graph = graph
        self.param_names = {param_field(name): name for name in graph.params}
        if len(self.param_names) != len(graph.params):
            self.param_names = {f"p{i}_{param_field(n)}": n for i, n in enumerate(graph.params)}
        self.weights: dict[str, Param] = {
            field: Param.initialized(to_tensor(graph.initializers[name], device))
            for field, name in self.param_names.items()
        }
        # the parameters of control-flow subgraphs (branches, loop bodies), in ``_subgraphs`` order:
        # fields named by the subgraph's name and the initializer's, unique across the model
        self.subgraph_params: list[dict[str, str]] = []
        taken = set(self.weights)
        for sub in _subgraphs(graph):
            fields: dict[str, str] = {}
            for name in sub.params:
                field = base = param_field(f"{sub.name}.{name}")
                count = 1
                while field in taken:
                    field, count = f"{base}_{count}", count + 1
                taken.add(field)
                fields[field] = name
                self.weights[field] = Param.initialized(to_tensor(sub.initializers[name], device))
            self.subgraph_params.append(fields)
        # every numeric constant on the device once (small ones too: a scalar an op takes as a tensor
        # would otherwise be copied to the device on every call); the host array stays in the scope
        # for shape arithmetic
        self.constants: dict[str, Tensor] = {}
        for name, array in _all_constants(graph).items():
            if array.dtype.kind in "fiub":
                try:
                    self.constants[name] = to_tensor(array, device)
                except OnnxImportError:
                    continue

    @property
    def input_names(self) -> list[str]:
        """The names of the graph's inputs, in call order."""
        return list(self.graph.inputs)

    @property
    def output_names(self) -> list[str]:
        """The names of the graph's outputs, in return order."""
        return list(self.graph.outputs)

    def device(self) -> Device:
        """The device of the parameters (the default device when there are none)."""
        for param in self.weights.values():  # not ``devices()``: that walks the whole module per call
            return param.device
        devices = self.devices()
        return devices[0] if devices else default_device()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the graph: inputs positionally (in ``input_names`` order) or by name; returns one tensor,
        or a tuple for several outputs (sequences as lists, optionals as their value or ``None``)."""
        outputs = self.run(*args, **kwargs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def run(self, *args: Any, **kwargs: Any) -> list[Any]:
        """As ``forward``, always returning the list of outputs."""
        graph = self.graph
        if len(args) > len(graph.inputs):
            raise OnnxImportError(
                f"{graph.name}: {len(args)} inputs given, the graph takes {len(graph.inputs)}: {graph.inputs}"
            )
        device = self.device()
        env: dict[str, Value] = {}
        for name, value in zip(graph.inputs, args):
            env[name] = _input(name, value, device)
        for name, value in kwargs.items():
            if name not in graph.inputs:
                raise OnnxImportError(f"{graph.name}: no input named {name!r}; inputs are {graph.inputs}")
            env[name] = _input(name, value, device)
        missing = [name for name in graph.inputs if name not in env]
        if missing:
            raise OnnxImportError(f"{graph.name}: inputs {missing} not given")
        for field, name in self.param_names.items():
            env[name] = self.weights[field].val()
        local: dict[int, dict[str, Tensor]] = {}
        if any(self.subgraph_params):
            for sub, fields in zip(_subgraphs(graph), self.subgraph_params):
                local[id(sub)] = {name: self.weights[field].val() for field, name in fields.items()}
        executor = _Executor(device, self.constants, local)
        outputs = executor.run(graph, env, top=True)
        return [_output(value, device) for value in outputs]


def _subgraphs(graph: Graph) -> list[Graph]:
    """Every subgraph of ``graph``, nested ones included, in a fixed order."""
    return [sub for _, node in graph.walk() for sub in node.subgraphs()]


def _all_constants(graph: Graph) -> dict[str, np.ndarray[Any, Any]]:
    found = dict(graph.constants)
    for _, node in graph.walk():
        for sub in node.subgraphs():
            found.update(sub.constants)
    return found


def _input(name: str, value: Any, device: Device) -> Value:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (list, tuple)):
        return [_input(name, v, device) for v in value]
    if value is None:
        return OptionalValue(None)
    return to_tensor(np.asarray(value), device)


def _output(value: Value, device: Device) -> Any:
    if isinstance(value, np.ndarray):
        return to_tensor(value, device)
    if isinstance(value, list):
        return [_output(v, device) for v in value]
    if isinstance(value, OptionalValue):
        return None if value.value is None else _output(value.value, device)
    return value


class _Executor:
    """Interprets graphs node by node, freeing each value after its last reader."""

    def __init__(
        self, device: Device, constants: dict[str, Tensor], params: dict[int, dict[str, Tensor]] | None = None
    ) -> None:
        self.device = device
        self.by_name = constants
        self.params = params or {}
        self.cache: dict[int, Tensor] = {}

    def run(self, graph: Graph, env: dict[str, Value], top: bool = False) -> list[Value]:
        """Run ``graph`` with ``env`` holding its inputs (and, for subgraphs, the outer scope)."""
        scope = dict(env)
        scope.update(self.params.get(id(graph), ()))
        for name, array in graph.constants.items():
            scope[name] = array
            tensor = self.by_name.get(name)
            if tensor is not None:
                self.cache[id(array)] = tensor
        last_use = _last_uses(graph) if top else None
        for index, node in enumerate(graph.nodes):
            spec = lookup(node.domain, node.op_type)
            if spec is None:
                raise OnnxImportError(f"{node.describe()}: unsupported operator")
            try:
                args = [scope[name] if name else None for name in node.inputs]
            except KeyError as error:
                raise OnnxImportError(f"{node.describe()}: input {error.args[0]!r} has no value") from None
            ctx = Context(node, self.device, self.cache, scope, self.run)
            try:
                if spec.host is not None and _all_host(args):
                    result = spec.host(ctx, *args)
                else:
                    result = spec.run(ctx, *args)
            except OnnxImportError:
                raise
            except Exception as error:
                shapes = ", ".join(_describe(a) for a in args)
                raise OnnxImportError(
                    f"{node.describe()} failed on inputs ({shapes}): {type(error).__name__}: {error}"
                ) from error
            outputs = list(result) if isinstance(result, tuple) else [result]
            for name, value in zip(node.outputs, outputs):
                if name:
                    scope[name] = value
            if last_use is not None:
                for name in last_use.get(index, ()):
                    scope.pop(name, None)
        try:
            return [scope[name] for name in graph.outputs]
        except KeyError as error:
            raise OnnxImportError(f"graph {graph.name!r}: output {error.args[0]!r} has no value") from None


def _all_host(args: list[Value]) -> bool:
    return all(a is None or isinstance(a, np.ndarray) for a in args)


def _describe(value: Value) -> str:
    if isinstance(value, Tensor):
        return f"{value.dtype} {value.dims()}"
    if isinstance(value, np.ndarray):
        return f"host {value.dtype} {list(value.shape)}"
    if isinstance(value, list):
        return f"sequence of {len(value)}"
    return type(value).__name__


def _last_uses(graph: Graph) -> dict[int, list[str]]:
    """For each node index, the values no later node (nor the outputs) reads."""
    from ._fold import used_names

    last: dict[str, int] = {}
    for index, node in enumerate(graph.nodes):
        for name in node.inputs:
            last[name] = index
        for sub in node.subgraphs():
            for name in used_names(sub):
                last[name] = index
    keep = set(graph.outputs)
    out: dict[int, list[str]] = {}
    for name, index in last.items():
        if name and name not in keep:
            out.setdefault(index, []).append(name)
    return out


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def run_op(
    op_type: str, *inputs: Any, domain: str = "", opset: int = 22, outputs: int = 1, **attrs: Any
) -> Any:
    """Run one ONNX operator on tensors (or host arrays): what generated code calls for each node.

    Args:
        op_type: the operator (``"Conv"``).
        inputs: its inputs, ``None`` for a missing optional one.
        domain: its domain (``""`` for the default).
        opset: the version of the domain it is interpreted in.
        outputs: how many outputs the node has.
        attrs: its attributes.

    Returns:
        The output, or a tuple of the first ``outputs`` outputs when ``outputs > 1``: an operator
        with more results than the node declares (an ``LSTM`` naming only ``Y``, an ``Attention``
        without its optional outputs) gives only the declared ones.

    Example:
        >>> y = run_op("Relu", x)  # doctest: +SKIP
    """
    from ._ir import Node

    spec = lookup(domain, op_type)
    node = Node(
        op_type,
        op_type,
        domain,
        opset,
        [f"i{k}" for k in range(len(inputs))],
        [f"o{k}" for k in range(outputs)],
        attrs,
    )
    if spec is None:
        raise OnnxImportError(f"{node.describe()}: unsupported operator")
    device = next((x.device for x in inputs if isinstance(x, Tensor)), None) or default_device()
    ctx = Context(node, device, {}, {}, _no_subgraphs)
    if spec.host is not None and _all_host(list(inputs)):
        result = spec.host(ctx, *inputs)
    else:
        result = spec.run(ctx, *inputs)
    return declared_outputs(result, outputs)


def declared_outputs(result: Any, outputs: int) -> Any:
    """An operator's ``result`` cut to the ``outputs`` a node declares: the value itself for one, a
    tuple of the first ``outputs`` for several (a list is one ONNX sequence, not several outputs)."""
    if not isinstance(result, tuple):
        return result
    if outputs <= 1:
        return result[0]
    return tuple(result[:outputs])


def _no_subgraphs(graph: Graph, env: dict[str, Value]) -> list[Value]:
    raise OnnxImportError("run_op: operators with subgraphs run through burn_import.onnx.load")
