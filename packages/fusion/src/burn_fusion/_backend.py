"""``Fusion(inner)``: the backend decorator that records ops lazily and fuses element-wise chains."""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Sequence
from threading import get_ident
from typing import Any, ClassVar

from burn_backend import (
    ActivationOps,
    AdamOptions,
    AutodiffBackend,
    Backend,
    Device,
    DType,
    OptimizerOps,
    SgdOptions,
)
from burn_backend.kit import CAST_OPS, ELEMENTWISE_OPS, BackendDecorator, ElementwiseOp, interface_methods
from burn_backend.quantization import is_quantized

from ._executor import Executor, compile_after_default
from ._stream import PendingOp, Stream
from ._tensor import FusionTensor, Node

# the casts recorded lazily (float -> int is not: out-of-range values convert differently in a kernel)
_CASTS = {name: kinds for name, kinds in CAST_OPS.items() if name != "float_into_int"}

# scalar operands the interface rejects when the op is called: such calls run at once, so the inner
# backend's error is raised by the call, not by a later read
_REJECTED_SCALARS: dict[str, Callable[[tuple[Any, ...]], bool]] = {
    "int_powi_scalar": lambda scalars: scalars[0] < 0,
}


class Fusion(BackendDecorator):
    """Lazy op streams and fused kernels over any backend.

    Every element-wise op of the table (``burn_backend.kit.ELEMENTWISE_OPS``: arithmetic, math,
    comparisons, activations and their backward ops, with broadcasting and scalar forms) is recorded in
    a stream, one per device and per thread, and returns at once a ``FusionTensor`` whose shape and
    dtype are known. The stream runs when a value is read (any op that is not deferred reads its
    inputs), when a tensor is used by another thread's stream, when it is full, or on ``sync``. Casts,
    ``sum_dim`` / ``mean_dim`` / ``max_dim``, ``matmul`` and the softmax family are recorded too. The
    executor groups the needed ops into element-wise, reduce and matmul blocks compiled by the inner
    backend's ``compile_elementwise`` / ``compile_fused`` (numba on NdArray), cached by relative
    signature; results that no tensor references any more are never written, and inputs read for the
    last time may be overwritten. Every other op runs on the inner backend as it comes.

    Args:
        inner: the backend that computes (not an autodiff backend: ``Autodiff(Fusion(inner))``).
        compile_after: how many times an op chain's signature is seen before it is fused (default 2,
            or ``BURN_FUSION_COMPILE_AFTER``); chains seen fewer times run op by op.

    Example:
        >>> from burn_backend import Tensor
        >>> from burn_ndarray import NdArray
        >>> device = Fusion(NdArray()).device()
        >>> x = Tensor.from_data([-1.0, 0.0, 2.0], device)
        >>> y = (x * 0.5 + 1).exp()  # recorded, not run
        >>> y.dims(), [round(v, 4) for v in y.tolist()]  # read: run
        ([3], [1.6487, 2.7183, 7.3891])
    """

    name: ClassVar[str] = "fusion"

    def __init__(self, inner: Backend, compile_after: int | None = None) -> None:
        if isinstance(inner, AutodiffBackend):
            raise TypeError(
                "Fusion: the inner backend computes gradients; wrap it the other way: Autodiff(Fusion(...))"
            )
        super().__init__(inner)
        self.compile_after = compile_after_default() if compile_after is None else max(1, compile_after)
        self.executor = Executor(inner, self.compile_after)
        self._local = threading.local()
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        self._streams_lock = threading.Lock()

    def settings(self) -> tuple[Any, ...]:
        return (self._inner, self.compile_after)

    # -- primitives -------------------------------------------------------------------------------
    def wrap(self, primitive: Any) -> Any:
        """A computed ``FusionTensor`` around an inner primitive (a quantized one passes as it is: quantized
        ops run eagerly on the inner backend)."""
        if is_quantized(primitive):
            return primitive
        return FusionTensor(Node(tuple(primitive.shape), DType.of(primitive.dtype), primitive, None), None)

    def unwrap(self, value: Any) -> Any:
        """The inner primitive of a ``FusionTensor`` (running its stream first if it is pending)."""
        if type(value) is FusionTensor:
            return value.materialize()
        return value

    def device_of(self, tensor: FusionTensor) -> Device:
        """The device of ``tensor``: its stream's, or asked of the inner backend once."""
        device = tensor._device
        if device is None:
            node = tensor.node
            if node.value is None and isinstance(node.stream, Stream):
                device = node.stream.device
            else:
                inner = self._inner
                kind = tensor.dtype.kind.prefix
                device = self.outer_device(getattr(inner, kind + "device")(tensor.materialize()))
            tensor._device = device
        return device

    def float_device(self, tensor: Any) -> Device:
        return self.device_of(tensor)

    def int_device(self, tensor: Any) -> Device:
        return self.device_of(tensor)

    def bool_device(self, tensor: Any) -> Device:
        return self.device_of(tensor)

    # -- streams ----------------------------------------------------------------------------------
    def stream(self, device: Device) -> Stream:
        """This thread's stream on ``device``."""
        streams: dict[int, Stream] | None = getattr(self._local, "streams", None)
        if streams is None:
            streams = self._local.streams = {}
        stream = streams.get(device.index)
        if stream is None:
            stream = streams[device.index] = Stream(self.executor, device, self.inner_device(device))
            with self._streams_lock:
                self._streams.add(stream)
        return stream

    def streams(self, device: Device) -> list[Stream]:
        """Every thread's stream on ``device``."""
        with self._streams_lock:
            return [stream for stream in self._streams if stream.device.index == device.index]

    def sync(self, device: Device) -> None:
        for stream in self.streams(device):
            stream.execute()
        super().sync(device)

    def flush(self, device: Device) -> None:
        self.stream(device).execute()
        super().flush(device)

    def _record(self, op: ElementwiseOp, tensors: tuple[Any, ...], scalars: tuple[Any, ...]) -> Any:
        """Record ``op`` on ``tensors`` in this thread's stream and return its pending result; where it
        cannot be deferred (operands that do not broadcast, not of this backend), run it now."""
        first = tensors[0]
        if type(first) is not FusionTensor:
            return self._eager(op.name, tensors, scalars)
        if scalars:
            rejected = _REJECTED_SCALARS.get(op.name)
            if rejected is not None and rejected(scalars):
                return self._eager(op.name, tensors, scalars)
        stream = first.node.stream
        if type(stream) is not Stream or stream.thread != get_ident() or stream.executor is not self.executor:
            stream = self.stream(self.device_of(first))
        shape = first.shape
        nodes = []
        for tensor in tensors:
            if type(tensor) is not FusionTensor:
                return self._eager(op.name, tensors, scalars)
            node = tensor.node
            if node.stream is not stream:
                _claim(node, tensor, stream)
            other = tensor.shape
            if other != shape:
                if len(other) != len(shape) or not op.broadcasts:
                    return self._eager(op.name, tensors, scalars)
                merged = []
                for a, b in zip(shape, other):
                    if a != b and a != 1 and b != 1:
                        return self._eager(op.name, tensors, scalars)
                    merged.append(b if a == 1 else a)
                shape = tuple(merged)
            nodes.append(node)
        dtype = DType.BOOL if op.bool_result else first.dtype
        out = Node(shape, dtype, None, stream)
        result = FusionTensor(out, stream.device)
        stream.record(PendingOp(op.name, tuple(nodes), scalars, out))
        return result

    def _pending(
        self,
        name: str,
        tensors: tuple[FusionTensor, ...],
        scalars: tuple[Any, ...],
        shape: tuple[int, ...],
        key: Any,
        dtype: DType | None = None,
    ) -> Any:
        """Record a reduction, a matmul or a cast (of tensors of this backend, checked by the caller)."""
        first = tensors[0]
        stream = first.node.stream
        if type(stream) is not Stream or stream.thread != get_ident() or stream.executor is not self.executor:
            stream = self.stream(self.device_of(first))
        nodes = []
        for tensor in tensors:
            node = tensor.node
            if node.stream is not stream:
                _claim(node, tensor, stream)
            nodes.append(node)
        out = Node(shape, first.dtype if dtype is None else dtype, None, stream)
        result = FusionTensor(out, stream.device)
        stream.record(PendingOp(name, tuple(nodes), scalars, out, key))
        return result

    def _reduce(self, name: str, tensor: Any, dim: int) -> Any:
        if type(tensor) is not FusionTensor or not tensor.dtype.is_float or isinstance(dim, bool):
            return self._eager(name, (tensor,), (dim,))
        shape = tensor.shape
        rank = len(shape)
        if not -rank <= dim < rank or 0 in shape:
            return self._eager(name, (tensor,), (dim,))
        dim = int(dim) % rank
        return self._pending(name, (tensor,), (dim,), (*shape[:dim], 1, *shape[dim + 1 :]), (dim,))

    def float_sum_dim(self, tensor: Any, dim: int) -> Any:
        return self._reduce("float_sum_dim", tensor, dim)

    def float_mean_dim(self, tensor: Any, dim: int) -> Any:
        return self._reduce("float_mean_dim", tensor, dim)

    def float_max_dim(self, tensor: Any, dim: int) -> Any:
        return self._reduce("float_max_dim", tensor, dim)

    def float_matmul(self, lhs: Any, rhs: Any) -> Any:
        if type(lhs) is FusionTensor and type(rhs) is FusionTensor:
            a, b = lhs.shape, rhs.shape
            if (
                lhs.dtype == rhs.dtype
                and lhs.dtype.is_float
                and len(a) == len(b) >= 2
                and a[:-2] == b[:-2]
                and a[-1] == b[-2]
            ):
                return self._pending("float_matmul", (lhs, rhs), (), (*a[:-1], b[-1]), 0)
        return self._eager("float_matmul", (lhs, rhs), ())

    def _cast(self, name: str, tensor: Any, dtype: DType) -> Any:
        kinds = _CASTS[name]
        if (
            type(tensor) is FusionTensor
            and isinstance(dtype, DType)
            and tensor.dtype.kind is kinds[0]
            and dtype.kind is kinds[1]
        ):
            return self._pending(name, (tensor,), (dtype,), tensor.shape, ("cast", dtype), dtype)
        return self._eager(name, (tensor,), (dtype,))

    def float_cast(self, tensor: Any, dtype: DType) -> Any:
        return self._cast("float_cast", tensor, dtype)

    def int_cast(self, tensor: Any, dtype: DType) -> Any:
        return self._cast("int_cast", tensor, dtype)

    def int_into_float(self, tensor: Any, dtype: DType) -> Any:
        return self._cast("int_into_float", tensor, dtype)

    def bool_into_float(self, tensor: Any, dtype: DType) -> Any:
        return self._cast("bool_into_float", tensor, dtype)

    def bool_into_int(self, tensor: Any, dtype: DType) -> Any:
        return self._cast("bool_into_int", tensor, dtype)

    # frequent ops that run at once, without the generic delegation's argument walk
    def float_into_data(self, tensor: Any) -> Any:
        return self._inner.float_into_data(self.unwrap(tensor))

    def float_transpose(self, tensor: Any) -> Any:
        return self.wrap(self._inner.float_transpose(self.unwrap(tensor)))

    def float_swap_dims(self, tensor: Any, dim1: int, dim2: int) -> Any:
        return self.wrap(self._inner.float_swap_dims(self.unwrap(tensor), dim1, dim2))

    def float_adam_step(
        self,
        tensors: Sequence[Any],
        grads: Sequence[Any],
        moments_1: Sequence[Any | None],
        moments_2: Sequence[Any | None],
        options: AdamOptions,
    ) -> tuple[list[Any], list[Any], list[Any]]:
        """The inner backend's kernel where it has one (one pass per parameter on NdArray, one launch on
        Cuda: fewer ops to record than the update's eleven a parameter); else those element-wise ops,
        recorded and fused like any chain."""
        if getattr(type(self._inner), "float_adam_step", None) is OptimizerOps.float_adam_step:
            recorded: tuple[list[Any], list[Any], list[Any]]
            recorded = OptimizerOps.float_adam_step(self, tensors, grads, moments_1, moments_2, options)
            return recorded
        unwrap, wrap = self.unwrap, self.wrap
        new_tensors, new_moments_1, new_moments_2 = self._inner.float_adam_step(
            [unwrap(t) for t in tensors],
            [unwrap(g) for g in grads],
            [None if m is None else unwrap(m) for m in moments_1],
            [None if v is None else unwrap(v) for v in moments_2],
            options,
        )
        return (
            [wrap(t) for t in new_tensors],
            [wrap(m) for m in new_moments_1],
            [wrap(v) for v in new_moments_2],
        )

    def float_sgd_step(
        self,
        tensors: Sequence[Any],
        grads: Sequence[Any],
        velocities: Sequence[Any | None],
        options: SgdOptions,
    ) -> tuple[list[Any], list[Any | None]]:
        """The inner backend's kernel where it has one (one launch on Cuda); else the update's
        element-wise ops, recorded and fused like any chain (as ``float_adam_step``)."""
        if getattr(type(self._inner), "float_sgd_step", None) is OptimizerOps.float_sgd_step:
            recorded: tuple[list[Any], list[Any | None]]
            recorded = OptimizerOps.float_sgd_step(self, tensors, grads, velocities, options)
            return recorded
        unwrap, wrap = self.unwrap, self.wrap
        new_tensors, new_velocities = self._inner.float_sgd_step(
            [unwrap(t) for t in tensors],
            [unwrap(g) for g in grads],
            [None if v is None else unwrap(v) for v in velocities],
            options,
        )
        return [wrap(t) for t in new_tensors], [None if v is None else wrap(v) for v in new_velocities]

    def _eager(self, name: str, tensors: tuple[Any, ...], scalars: tuple[Any, ...]) -> Any:
        unwrap = self.unwrap
        return self.wrap(getattr(self._inner, name)(*(unwrap(t) for t in tensors), *scalars))


def _claim(node: Node, tensor: FusionTensor, stream: Stream) -> None:
    """``tensor`` (not of ``stream``) is read by an op of ``stream``: a computed value nobody's stream
    claimed becomes this stream's; a value of another stream is computed there first and marked
    shared (no stream may then overwrite it in place)."""
    if node.stream is None:
        node.stream = stream
    else:
        node.shared = True
        if node.value is None:
            tensor.materialize()


def _deferred(op: ElementwiseOp, interface: Callable[..., Any]) -> Callable[..., Any]:
    arity = op.arity
    # the common forms without slicing: these calls are a tiny op's whole host cost
    if op.scalars == 0:

        def method(self: Fusion, *args: Any) -> Any:
            return self._record(op, args, ())

    elif arity == 1:

        def method(self: Fusion, *args: Any) -> Any:
            return self._record(op, args[:1], args[1:])

    else:

        def method(self: Fusion, *args: Any) -> Any:
            return self._record(op, args[:arity], args[arity:])

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = interface.__doc__
    method.__signature__ = inspect.signature(interface)  # type: ignore[attr-defined]
    return method


for _name, _interface in interface_methods().items():
    _entry = ELEMENTWISE_OPS.get(_name)
    if _entry is not None:
        setattr(Fusion, _name, _deferred(_entry, _interface))


# the softmax family as the interface composes it (max, sub, exp, sum, div): recorded op by op, fused
# into one reduce block, where the inner backend's own would run at once
Fusion.softmax = ActivationOps.softmax  # type: ignore[method-assign]
Fusion.log_softmax = ActivationOps.log_softmax  # type: ignore[method-assign]
