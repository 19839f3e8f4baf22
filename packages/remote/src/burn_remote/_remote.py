"""``Remote``: the client backend, whose ops run on a server over WebSocket."""

from __future__ import annotations

import abc
import inspect
import ssl as ssl_module
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import burn_backend
from burn_backend import Backend, Device, DType, DTypeUsage, TensorData
from burn_backend._backend import interface_methods

from ._connection import RemoteTensor, Session
from ._protocol import ANSWER_IDS, OPS, REFUSED, OpSpec, Results
from ._shapes import infer
from ._wire import tensor_data


class Remote(Backend):
    """A backend whose tensors live on a server (``python -m burn_remote serve``) and whose ops run
    there: Burn's remote backend.

    Ops are streamed: each becomes a record (op name, operand ids, scalars, shapes, dtypes, options)
    in a pending frame, the client names the result's id itself and returns at once; the frame goes
    out when it holds ``frame_ops`` ops or a read needs an answer. Only reads (``into_data``,
    ``into_scalar``, a transaction) and the rare op whose result's shape the client cannot work out
    wait. The devices are the server backend's devices; a tensor freed on the client is freed on the
    server with the next frame. Compose it as any backend: ``Autodiff(Remote(url))``,
    ``Router(NdArray(), Remote(url))``.

    An op that fails on the server raises at the next read (a ``RemoteOpError`` naming the op, also
    a ``ValueError`` etc. where the server's error was one). A server that dies, closes the session or
    does not answer within ``timeout`` gives a ``RemoteConnectionError`` naming the server and the last
    op, at the next op that sends or the next read; the session is then over (a new ``Remote`` starts
    a fresh one).

    Args:
        url: the server, ``ws://host:port`` (``wss://`` for TLS).
        token: the server's shared secret, where it asks for one.
        timeout: seconds to wait for the connection and for each answer.
        ssl: the TLS context of a ``wss://`` server (default: the system's, verifying the certificate).
        frame_ops: how many ops a frame holds before it is sent.
        check_shapes: ask the server for every result's shape and dtype and check them against the ones
            the client worked out (for tests: it makes every read carry them).
        max_read_bytes: the largest answer the client accepts (a read of that many bytes).

    Raises:
        RemoteConnectionError: the server cannot be reached or refuses the session (a wrong token).

    Example:
        >>> from burn_remote import Server, Remote
        >>> from burn_ndarray import NdArray
        >>> with Server(NdArray(), port=0) as server:
        ...     device = Remote(server.url).device(0)
        ...     x = burn_backend.Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device)
        ...     (x @ x + 1).tolist()
        [[8.0, 11.0], [16.0, 23.0]]
    """

    name: ClassVar[str] = "remote"
    is_cpu: ClassVar[bool] = False

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        ssl: ssl_module.SSLContext | None = None,
        frame_ops: int = 1024,
        check_shapes: bool = False,
        max_read_bytes: int = 1 << 33,
    ) -> None:
        if frame_ops < 1:
            raise ValueError(f"Remote: frame_ops must be at least 1, got {frame_ops}")
        session = Session(url, token, timeout, ssl, frame_ops, max_read_bytes)
        info = session.info
        super().__init__(DType.of(info["float_dtype"]), DType.of(info["int_dtype"]))
        self._session = session
        self._check = check_shapes
        self._server_stack: str = info["stack"]
        self._device_count: int = info["devices"]
        self._validates: bool = info["validates"]
        self._exclusions: dict[str, str] = {**info["exclusions"], **EXCLUSIONS}
        self._usage: dict[tuple[int, DType], frozenset[DTypeUsage]] = {}

    # -- what the backend is ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The server's address."""
        return self._session.url

    @property
    def server_stack(self) -> str:
        """The stack name of the server's backend (``"ndarray"``, ``"autodiff-cuda"``)."""
        return self._server_stack

    @property
    def validates_index_values(self) -> bool:  # type: ignore[override]
        return self._validates

    @property
    def conformance_exclusions(self) -> Mapping[str, str]:  # type: ignore[override]
        return self._exclusions

    def settings(self) -> tuple[Any, ...]:
        # each Remote is its own session: tensors of two sessions never mix, even on one server
        return (self._session.url, id(self._session))

    def __repr__(self) -> str:
        return f"Remote({self._session.url!r}, server={self._server_stack!r})"

    def close(self) -> None:
        """End the session: the server frees its tensors; further ops raise ``RemoteConnectionError``."""
        self._session.close()

    # -- backend-level methods --------------------------------------------------------------------
    def device_count(self) -> int:
        return self._device_count

    def _index(self, device: Device) -> int:
        if device.backend is not self:
            raise ValueError(f"{self.stack_name}: {device} is not a device of this backend ({self!r})")
        return device.index

    def seed(self, device: Device, seed: int) -> None:
        self._session.request(["backend", "seed", [self._index(device), seed]])

    def sync(self, device: Device) -> None:
        self._session.request(["backend", "sync", [self._index(device)]])

    def flush(self, device: Device) -> None:
        self._session.request(["meta"])

    def memory_cleanup(self, device: Device) -> None:
        self._session.request(["backend", "memory_cleanup", [self._index(device)]])

    def dtype_usage(self, device: Device, dtype: DType) -> frozenset[DTypeUsage]:
        key = (self._index(device), dtype)
        usage = self._usage.get(key)
        if usage is None:
            names = self._session.request(["backend", "dtype_usage", [key[0], dtype]])
            usage = self._usage[key] = frozenset(DTypeUsage(n) for n in names)
        return usage

    def supports_dtype(self, device: Device, dtype: DType) -> bool:
        return DTypeUsage.STORAGE in self.dtype_usage(device, dtype)

    def tr_execute(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> tuple[list[TensorData], list[TensorData], list[TensorData]]:
        everything = [*floats, *ints, *bools]
        values = self._read(everything)
        a, b = len(floats), len(floats) + len(ints)
        return values[:a], values[a:b], values[b:]

    def _read(self, tensors: Sequence[Any]) -> list[TensorData]:
        for tensor in tensors:
            self._own(tensor)
        answer = self._session.request(["read", list(tensors)])
        return [tensor_data(value, 1 << 62) for value in answer]

    def _own(self, tensor: Any) -> RemoteTensor:
        if type(tensor) is not RemoteTensor or tensor._session is not self._session:
            raise ValueError(f"{self.stack_name}: {tensor!r} is not a tensor of this session ({self!r})")
        return tensor


_QUANTIZED = "quantized tensors do not travel: QuantScheme is not in the wire format yet"
EXCLUSIONS: dict[str, str] = {
    "core/test_distributed.py::test_a_process_group_of_one_gives_the_values_back": (
        "a process group is a local object: collectives over processes do not run remotely"
    ),
    "core/test_errors.py::test_int_powi_refuses_negative_exponents": (
        "the error is the server backend's, raised at the read of the result (ops are streamed), "
        "not at the op"
    ),
    "test_zz_coverage.py::test_every_interface_method_was_called": (
        "the quantized ops and the process-group collective are never called: they do not travel"
    ),
    **{
        f"quantization/test_quantization.py::{test}": _QUANTIZED
        for test in (
            "test_every_default_is_the_float_op_on_dequantized_values",
            "test_quantize_dynamic_round_trip",
            "test_quantize_with_given_scales",
            "test_float8_round_trip",
            "test_quantized_tensors_are_constants",
            "test_matmul_against_numpy",
            "test_layout_ops_move_the_values",
            "test_host_data_round_trip",
            "test_errors",
            "test_arithmetic_through_the_defaults",
        )
    },
}
"""The conformance tests the remote backend cannot pass, with the reason (added to the server's)."""

_NAMED_RESULTS: dict[str, Any] = {
    name: getattr(burn_backend, name)
    for name in ("NormBackward", "AttentionBackward", "BatchNormTraining", "DeformConv2dBackward")
}


def _method(spec: OpSpec) -> Callable[..., Any]:
    name, kinds, results = spec.name, spec.kinds, spec.results
    # where the op's arguments are primitives and devices, checked as this session's
    handles = tuple(i for i, k in enumerate(kinds) if k in ("P", "P | None"))
    sequences = tuple(i for i, k in enumerate(kinds) if k in ("Sequence[P]", "Sequence[P | None]"))
    devices = tuple(i for i, k in enumerate(kinds) if k == "Device")
    data_at = kinds.index("TensorData") if "TensorData" in kinds else -1
    count = len(kinds)

    def prepare(self: Remote, args: tuple[Any, ...]) -> int:
        """Check the arguments; return the device index of the results."""
        if len(args) != count:
            raise TypeError(f"{name}() takes {count} arguments ({len(args)} given)")
        index = -1
        session = self._session
        for i in devices:
            index = self._index(args[i])
        for i in handles:
            tensor = args[i]
            if tensor is not None:
                if type(tensor) is not RemoteTensor or tensor._session is not session:
                    self._own(tensor)
                if index < 0:
                    index = tensor.device_index
        for i in sequences:
            for tensor in args[i]:
                if tensor is not None:
                    self._own(tensor)
                    if index < 0:
                        index = tensor.device_index
        return max(index, 0)

    if results is Results.ONE:

        def method(self: Remote, *args: Any) -> Any:
            index = prepare(self, args)
            session = self._session
            meta = infer(name, kinds, args, self.int_dtype)
            base = session.new_id()
            tensor = RemoteTensor(base, index, meta, session)
            if meta is None or self._check:
                session.expect_meta(tensor, name)
            size = args[data_at].num_elements() * args[data_at].dtype.size if data_at >= 0 else 0
            session.record(name, base, args, meta is None or self._check, size)
            return tensor

    elif results is Results.TWO:

        def method(self: Remote, *args: Any) -> Any:
            index = prepare(self, args)
            session = self._session
            meta = None
            if name.endswith("_with_indices"):
                meta = infer(name[: -len("_with_indices")], kinds, args, self.int_dtype)
            metas = (None, None) if meta is None else (meta, (meta[0], self.int_dtype))
            base = session.new_id(2)
            pair = tuple(RemoteTensor(base + k, index, metas[k], session) for k in range(2))
            if meta is None or self._check:
                for tensor in pair:
                    session.expect_meta(tensor, name)
            session.record(name, base, args, meta is None or self._check)
            return pair

    elif results is Results.READ:

        def method(self: Remote, *args: Any) -> Any:
            return self._read(args)[0]

    elif results is Results.LOCAL:

        def method(self: Remote, *args: Any) -> Any:
            return self.device(self._own(args[0]).device_index)

    else:
        annotation = spec.name

        def method(self: Remote, *args: Any) -> Any:
            index = prepare(self, args)
            session = self._session
            base = session.new_id(ANSWER_IDS)
            answer = session.request(["call", [name, base, args, True]])
            return _rebuild(answer, index, session, annotation)

    _describe(method, name)
    return method


def _describe(method: Callable[..., Any], name: str) -> None:
    # the interface's signature and docstring, as the conformance suite's signature checks read them
    interface = interface_methods()[name]
    method.__name__ = method.__qualname__ = name
    method.__doc__ = interface.__doc__
    method.__signature__ = inspect.signature(interface)  # type: ignore[attr-defined]


def _rebuild(answer: Any, index: int, session: Session, name: str) -> Any:
    # a structure the server sent: ["h", id, shape, dtype], ["list" | "tuple", items],
    # ["named", class, items] (a class of _NAMED_RESULTS), or a plain value
    if not isinstance(answer, list):
        return answer
    tag = answer[0]
    if tag == "h":
        _, id, shape, dtype = answer
        return RemoteTensor(id, index, (tuple(shape), DType.of(dtype)), session)
    items = [_rebuild(item, index, session, name) for item in answer[-1]]
    if tag == "list":
        return items
    if tag == "named" and answer[1] in _NAMED_RESULTS:
        return _NAMED_RESULTS[answer[1]](*items)
    return tuple(items)


def _unsupported(name: str, reason: str) -> Callable[..., Any]:
    def method(self: Remote, *args: Any) -> Any:
        raise NotImplementedError(f"{self.stack_name}: {name} does not run remotely: {reason}")

    _describe(method, name)
    return method


for _spec in OPS.values():
    setattr(Remote, _spec.name, _method(_spec))
for _name, _reason in REFUSED.items():
    setattr(Remote, _name, _unsupported(_name, _reason))
abc.update_abstractmethods(Remote)  # type: ignore[type-abstract]  # the ops are set above
