"""The operator table: each ONNX operator's implementation over burn tensors, the attributes it
understands, and (for shape arithmetic and constant folding) an optional NumPy implementation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from burn_backend import Device, DType, Kind, Tensor

from .._errors import OnnxImportError
from .._ir import Graph, Node

__all__ = [
    "REGISTRY",
    "Context",
    "OpSpec",
    "OptionalValue",
    "Value",
    "register",
]

Value = Any
"""A runtime value: a ``Tensor`` on the device, a NumPy array (constants and shape arithmetic, kept
on the host), a list of values (an ONNX sequence), an ``OptionalValue`` or ``None`` (a missing
optional input)."""


class OptionalValue:
    """An ONNX optional: holds a value or nothing."""

    __slots__ = ("value",)

    def __init__(self, value: Value | None) -> None:
        self.value = value


OpFn = Callable[..., Any]
CheckFn = Callable[[Node], "str | None"]


@dataclass(frozen=True)
class OpSpec:
    """One operator.

    Attributes:
        op_type, domain: its name.
        run: ``run(ctx, *inputs)`` returns the output value, or a tuple/list of them.
        attrs: the attribute names it understands (any other is rejected when a model is read).
        host: an implementation over NumPy arrays, used when every input is on the host (constant
            folding, shape arithmetic); ``None`` when there is none.
        check: returns why a node cannot run (an unsupported attribute value), or ``None``.
        since: the lowest opset it implements.
    """

    op_type: str
    domain: str
    run: OpFn
    attrs: frozenset[str]
    host: OpFn | None = None
    check: CheckFn | None = None
    since: int = 1


REGISTRY: dict[tuple[str, str], OpSpec] = {}
"""Every implemented operator by ``(domain, op_type)``; the default domain is ``""``."""


def register(
    *op_types: str,
    attrs: Sequence[str] = (),
    host: OpFn | None = None,
    check: CheckFn | None = None,
    domain: str = "",
    since: int = 1,
) -> Callable[[OpFn], OpFn]:
    """Decorator: register ``fn`` as the implementation of ``op_types``."""

    def wrap(fn: OpFn) -> OpFn:
        for op_type in op_types:
            REGISTRY[(domain, op_type)] = OpSpec(op_type, domain, fn, frozenset(attrs), host, check, since)
        return fn

    return wrap


def lookup(domain: str, op_type: str) -> OpSpec | None:
    """The spec of an operator, ``None`` where it is not implemented (``ai.onnx`` is ``""``)."""
    return REGISTRY.get(("" if domain == "ai.onnx" else domain, op_type))


class Context:
    """What an operator implementation sees of the node it runs: attributes, the device, helpers to
    turn values into tensors or host integers, and a way to run subgraphs."""

    __slots__ = ("constants", "device", "env", "node", "run_graph")

    def __init__(
        self,
        node: Node,
        device: Device,
        constants: dict[int, Tensor],
        env: dict[str, Value],
        run_graph: Callable[[Graph, dict[str, Value]], list[Value]],
    ) -> None:
        self.node = node
        self.device = device
        self.constants = constants
        self.env = env
        self.run_graph = run_graph

    # -- attributes ---------------------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The value of attribute ``name``, or ``default``."""
        return self.node.attrs.get(name, default)

    @property
    def opset(self) -> int:
        """The opset version the node is interpreted in."""
        return self.node.opset

    @property
    def n_outputs(self) -> int:
        """How many outputs the node names (trailing optional ones may be ``""``)."""
        return len(self.node.outputs)

    def wants(self, index: int) -> bool:
        """Whether output ``index`` is named (so has to be computed)."""
        return index < len(self.node.outputs) and self.node.outputs[index] != ""

    def error(self, message: str) -> OnnxImportError:
        """An error naming this node."""
        return OnnxImportError(f"{self.node.describe()}: {message}")

    # -- values -------------------------------------------------------------------------------------
    def tensor(self, value: Value, what: str = "input") -> Tensor:
        """``value`` as a tensor on the device (host arrays are copied there once for constants)."""
        if isinstance(value, Tensor):
            return value
        if isinstance(value, np.ndarray):
            cached = self.constants.get(id(value))
            if cached is not None:
                return cached
            return to_tensor(value, self.device, self)
        if isinstance(value, (np.generic, int, float, bool)):
            return to_tensor(np.asarray(value), self.device, self)
        raise self.error(f"{what} must be a tensor, got {type(value).__name__}")

    def ints(self, value: Value, what: str = "input") -> list[int]:
        """``value`` (a 0-d or 1-d integer tensor, such as a shape) as a list of Python ints."""
        array = self.array(value, what)
        return [int(v) for v in array.reshape(-1).tolist()]

    def array(self, value: Value, what: str = "input") -> np.ndarray[Any, Any]:
        """``value`` as a host NumPy array (reading a device tensor back)."""
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, Tensor):
            return value.to_numpy()
        if value is None:
            raise self.error(f"{what} is missing")
        return np.asarray(value)

    def scalar(self, value: Value, what: str = "input") -> Any:
        """``value`` (a tensor of one element) as a Python number."""
        array = self.array(value, what)
        if array.size != 1:
            raise self.error(f"{what} must hold one value, got shape {list(array.shape)}")
        return array.reshape(()).item()


_BACKEND_DTYPES = {
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.float16),
    np.dtype(np.int64),
    np.dtype(np.int32),
    np.dtype(np.int16),
    np.dtype(np.int8),
    np.dtype(np.uint64),
    np.dtype(np.uint32),
    np.dtype(np.uint16),
    np.dtype(np.uint8),
    np.dtype(np.bool_),
}


def to_tensor(array: np.ndarray[Any, Any], device: Device, ctx: Context | None = None) -> Tensor:
    """A host array as a tensor on ``device``, keeping its dtype."""
    if array.dtype not in _BACKEND_DTYPES:
        try:
            DType.of(array.dtype)
        except TypeError:
            where = f"{ctx.node.describe()}: " if ctx is not None else ""
            raise OnnxImportError(
                f"{where}a value of dtype {array.dtype} has no burn dtype (strings, complex numbers and "
                "8-, 4- and 2-bit types are not supported)"
            ) from None
    return Tensor.from_numpy(array if array.flags.c_contiguous else array.copy(order="C"), device)


def kind_of(value: Tensor | np.ndarray[Any, Any]) -> Kind:
    """The kind of a tensor or host array."""
    if isinstance(value, Tensor):
        return value.kind
    return DType.of(value.dtype).kind
