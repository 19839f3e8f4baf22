"""A client's session on the server: its own table of tensors, the checks of every frame it sends, and
the ops run on the server's backend."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from burn_backend import Backend, DType, Shape

from ._errors import ProtocolError, error_kind
from ._protocol import ANSWER_IDS, ENUM_CLASSES, OPS, OPTION_CLASSES, OpSpec, Results
from ._shapes import infer
from ._wire import DeviceIndex, Handle, tensor_data, tensor_fields


@dataclasses.dataclass(frozen=True)
class Limits:
    """The server's size limits, checked before anything of that size is allocated.

    Attributes:
        frame_bytes: the largest frame a client may send (the WebSocket layer refuses a larger one
            from its header, before reading it).
        tensor_bytes: the largest tensor a client may upload or create by shape.
        session_bytes: the most bytes of tensors one session may hold at once.
        sessions: the most sessions at once; a client beyond them is refused.

    Example:
        >>> Limits(tensor_bytes=1 << 20).session_bytes == Limits().session_bytes
        True
    """

    frame_bytes: int = (1 << 30) + (1 << 20)
    tensor_bytes: int = 1 << 30
    session_bytes: int = 8 << 30
    sessions: int = 64


class OpFailed(Exception):
    """An op's failure. The ids of its results hold it, and so do the results of every op that takes
    one of them: a read of any of those raises it on the client, as does the next ``sync``; the session
    goes on."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _nbytes(shape: Any, dtype: Any) -> int:
    return int(math.prod(shape)) * DType.of(dtype).size


class ServerSession:
    """The tensors of one client and the execution of its frames.

    Args:
        backend: the server's backend.
        limits: the size limits.
    """

    def __init__(self, backend: Backend, limits: Limits) -> None:
        self.backend = backend
        self.limits = limits
        self.tensors: dict[int, Any] = {}
        self.sizes: dict[int, int] = {}
        self.held = 0
        self.max_id = 0
        self.metas: list[list[Any]] = []
        self.bodies: list[Any] = []  # the bytes of large reads, sent after the answer
        self.error: OpFailed | None = None
        self._devices = [backend.device(i) for i in range(backend.device_count())]
        self._convert: dict[str, Callable[[Any, str], Any]] = {
            "P": self._primitive,
            "P | None": lambda v, what: None if v is None else self._primitive(v, what),
            "Sequence[P]": lambda v, what: [self._primitive(t, what) for t in _list(v, what)],
            "Sequence[P | None]": lambda v, what: [
                None if t is None else self._primitive(t, what) for t in _list(v, what)
            ],
            "int": _int,
            "float": _float,
            "bool": _bool,
            "tuple[int, int]": _pair,
            "Sequence[int]": lambda v, what: tuple(_int(i, what) for i in _list(v, what)),
            "Sequence[slice]": _slices,
            "Shape": self._shape,
            "DType": _dtype,
            "Device": self._device,
            "TensorData": lambda v, what: tensor_data(v, limits.tensor_bytes),
            **{name: _instance(cls) for name, cls in {**OPTION_CLASSES, **ENUM_CLASSES}.items()},
        }

    # -- argument checks --------------------------------------------------------------------------
    def _primitive(self, value: Any, what: str) -> Any:
        if type(value) is not Handle:
            raise ProtocolError(f"{what}: expected a tensor handle, got {type(value).__name__}")
        try:
            primitive = self.tensors[value.id]
        except KeyError:
            raise ProtocolError(f"{what}: no tensor {value.id} in this session") from None
        if type(primitive) is OpFailed:
            raise primitive
        return primitive

    def _shape(self, value: Any, what: str) -> Shape:
        dims = tuple(_int(d, what) for d in _list(value, what))
        if any(d < 0 for d in dims) or len(dims) > 64:
            raise ProtocolError(f"{what}: a shape is at most 64 non-negative dims")
        return Shape(dims)

    def _device(self, value: Any, what: str) -> Any:
        if type(value) is not DeviceIndex or value.index >= len(self._devices):
            raise ProtocolError(f"{what}: expected one of the server's {len(self._devices)} device(s)")
        return self._devices[value.index]

    # -- frames -----------------------------------------------------------------------------------
    def run(self, frame: Any) -> list[Any] | None:
        """Run a decoded frame; return the answer, or None where the frame asks for none.

        Raises:
            ProtocolError: the frame breaks the format (the session must close).
        """
        if not (isinstance(frame, list) and len(frame) == 4 and frame[0] == "f"):
            raise ProtocolError("expected a frame ['f', ops, frees, request]")
        _, ops, frees, request = frame
        for op in _list(ops, "ops"):
            self._op(op, answer=False)
        for id in _list(frees, "frees"):
            self._free(_int(id, "frees"))
        if request is None:
            return None
        failure = None
        try:
            value = self._request(request)
        except OpFailed as error:
            failure, value = error, None
        metas, self.metas = self.metas, []
        if failure is not None:
            return ["err", metas, failure.kind, str(failure)]
        return ["ok", metas, value, None]

    def _request(self, request: Any) -> Any:
        kind = request[0] if isinstance(request, list) and request else None
        if kind == "meta" and len(request) == 1:
            return None
        if kind == "read" and len(request) == 2:
            return self._reads(_list(request[1], "read"))
        if kind == "call" and len(request) == 2:
            return self._op(request[1], answer=True)
        if kind == "backend" and len(request) == 3:
            return self._backend_call(request[1], _list(request[2], "backend"))
        raise ProtocolError("unknown request")

    def _reads(self, handles: list[Any]) -> list[Any]:
        primitives = [self._primitive(h, "read") for h in handles]
        groups: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        order = []
        for primitive in primitives:
            kind = DType.of(primitive.dtype)
            group = 0 if kind.is_float else 2 if kind is DType.BOOL else 1
            order.append((group, len(groups[group])))
            groups[group].append(primitive)
        try:
            floats, ints, bools = self.backend.tr_execute(*groups)
        except Exception as error:
            raise OpFailed(error_kind(error), f"read: {error}") from None
        data = (floats, ints, bools)
        return [tensor_fields(data[g][i], self.bodies) for g, i in order]

    def _backend_call(self, what: Any, args: list[Any]) -> Any:
        if not args:
            raise ProtocolError("a backend call names a device")
        device = self._device(DeviceIndex(_int(args[0], "backend")), "backend")
        backend = self.backend
        if what == "seed" and len(args) == 2:
            backend.seed(device, _int(args[1], "seed"))
        elif what == "sync" and len(args) == 1:
            backend.sync(device)
            if self.error is not None:
                error, self.error = self.error, None
                raise error
        elif what == "memory_cleanup" and len(args) == 1:
            backend.memory_cleanup(device)
        elif what == "dtype_usage" and len(args) == 2:
            return sorted(u.value for u in backend.dtype_usage(device, _dtype(args[1], "dtype_usage")))
        else:
            raise ProtocolError("unknown backend call")
        return None

    def _free(self, id: int) -> None:
        if self.tensors.pop(id, None) is not None:
            self.held -= self.sizes.pop(id, 0)

    # -- ops --------------------------------------------------------------------------------------
    def _op(self, op: Any, answer: bool) -> Any:
        if not (isinstance(op, list) and len(op) == 4 and isinstance(op[0], str)):
            raise ProtocolError("an op must be [name, id, args, want_meta]")
        name, base, args, want = op
        spec = OPS.get(name)
        if spec is None:
            raise ProtocolError(f"unknown op {name[:60]!r}")
        if answer != (spec.results is Results.ANSWER) or spec.results in (Results.READ, Results.LOCAL):
            raise ProtocolError(f"{spec.name} is not sent this way")
        base = _int(base, spec.name)
        if base <= self.max_id:
            raise ProtocolError(f"{spec.name}: result id {base} is not above the last one ({self.max_id})")
        count = ANSWER_IDS if answer else 2 if spec.results is Results.TWO else 1
        self.max_id = base + count - 1
        if not isinstance(args, list) or len(args) != len(spec.kinds):
            raise ProtocolError(f"{spec.name} takes {len(spec.kinds)} arguments")
        try:
            result = self._execute(spec, args)
        except OpFailed as failure:
            for k in range(1 if answer else count):
                self.tensors[base + k] = failure
                if want:
                    self.metas.append([base + k, None, failure.kind, str(failure)])
            self.error = self.error or failure
            if answer:
                raise
            return None
        if answer:
            ids = iter(range(base, base + ANSWER_IDS))
            return self._structure(result, ids)
        results = result if count == 2 else (result,)
        for k, primitive in enumerate(results):
            self._store(base + k, primitive, spec.name, want)
        return None

    def _execute(self, spec: OpSpec, args: list[Any]) -> Any:
        convert = self._convert
        values = [convert[kind](value, spec.name) for kind, value in zip(spec.kinds, args)]
        meta = infer(spec.name, spec.kinds, values, self.backend.int_dtype)
        if meta is not None:
            self._check_room(spec.name, _nbytes(*meta))
        try:
            return getattr(self.backend, spec.name)(*values)
        except Exception as error:
            raise OpFailed(error_kind(error), f"{spec.name}: {error}") from None

    def _check_room(self, name: str, size: int) -> None:
        if size > self.limits.tensor_bytes:
            raise OpFailed(
                "MemoryError",
                f"{name}: a result of {size} bytes is over the tensor limit of {self.limits.tensor_bytes}",
            )
        if self.held + size > self.limits.session_bytes:
            raise OpFailed(
                "MemoryError",
                f"{name}: a result of {size} bytes would take the session to {self.held + size} bytes, over "
                f"its limit of {self.limits.session_bytes}",
            )

    def _store(self, id: int, primitive: Any, name: str, want: bool) -> None:
        size = _nbytes(primitive.shape, primitive.dtype)
        try:
            self._check_room(name, size)
        except OpFailed as failure:
            self.tensors[id] = failure
            self.error = self.error or failure
            if want:
                self.metas.append([id, None, failure.kind, str(failure)])
            return
        self.tensors[id] = primitive
        self.sizes[id] = size
        self.held += size
        if want:
            self.metas.append([id, list(primitive.shape), DType.of(primitive.dtype).value, None])

    def _structure(self, value: Any, ids: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if hasattr(value, "_fields"):  # the interface's named tuples
            return ["named", type(value).__name__, [self._structure(v, ids) for v in value]]
        if isinstance(value, (list, tuple)):
            return ["list" if isinstance(value, list) else "tuple", [self._structure(v, ids) for v in value]]
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            id = next(ids, None)
            if id is None:
                raise OpFailed("Error", f"more than {ANSWER_IDS} results")
            self._store(id, value, "answer", want=False)
            return ["h", id, list(value.shape), DType.of(value.dtype).value]
        raise OpFailed("Error", f"a result of type {type(value).__name__} cannot travel")

    def close(self) -> None:
        """Free every tensor of the session."""
        self.tensors.clear()
        self.sizes.clear()
        self.held = 0


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ProtocolError(f"{what}: expected a list, got {type(value).__name__}")
    return value


def _int(value: Any, what: str) -> int:
    if type(value) is not int:
        raise ProtocolError(f"{what}: expected an int, got {type(value).__name__}")
    return value


def _float(value: Any, what: str) -> float:
    if type(value) not in (int, float):
        raise ProtocolError(f"{what}: expected a number, got {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def _bool(value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise ProtocolError(f"{what}: expected a bool, got {type(value).__name__}")
    return value


def _pair(value: Any, what: str) -> tuple[int, int]:
    items = _list(value, what)
    if len(items) != 2:
        raise ProtocolError(f"{what}: expected two ints")
    return (_int(items[0], what), _int(items[1], what))


def _slices(value: Any, what: str) -> list[slice]:
    items = _list(value, what)
    if not all(type(s) is slice for s in items):
        raise ProtocolError(f"{what}: expected slices")
    return items


def _dtype(value: Any, what: str) -> DType:
    if type(value) is not DType:
        raise ProtocolError(f"{what}: expected a dtype")
    return value


def _instance(cls: type[Any]) -> Callable[[Any, str], Any]:
    def check(value: Any, what: str) -> Any:
        if type(value) is not cls:
            raise ProtocolError(f"{what}: expected {cls.__name__}, got {type(value).__name__}")
        return value

    return check
