"""``Router(*backends)``: one backend over several.

A router device is one device of one inner backend. Devices are numbered across the inner backends in
the order they are given: ``Router(Cuda(), NdArray())`` on a machine with two GPUs has devices 0 and 1
on Cuda and device 2 on NdArray. ``router.device(0, on=1)`` names device 0 of the second inner backend
without counting, and ``router.inner_device(device)`` tells which inner device a router device is.

A router primitive is a ``Routed``: an inner primitive and the route (inner backend) it lives on. An op
runs on the inner backend of its tensor arguments (or of its device argument, for ops that make
tensors), unchanged; only ``*_to_device`` crosses from one inner backend to another, through DLPack
where the target can read the source's memory and through host memory otherwise.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from burn_backend import (
    AutodiffBackend,
    Backend,
    Device,
    DType,
    DTypeUsage,
    Gradients,
    PendingRead,
    TensorData,
)
from burn_backend.kit import BackendDecorator, resolved

if TYPE_CHECKING:
    from burn_backend.kit import ElementwiseBlock, ElementwisePlan

_KINDS = ("float", "int", "bool")


class Route:
    """One inner backend of a router: the router, the backend, its position among the inner backends
    and its first device's number among the router's devices."""

    __slots__ = ("backend", "offset", "position", "router")

    def __init__(self, router: Router, backend: Backend, position: int) -> None:
        self.router = router
        self.backend = backend
        self.position = position
        self.offset = 0

    def __repr__(self) -> str:
        return f"Route({self.backend!r}, position={self.position}, offset={self.offset})"

    def joins(self, other: Route) -> bool:
        """Whether tensors of ``other`` may meet tensors of this route in one op: the same route, or the
        same position of an equal router (two instances of one stack, whose devices compare equal)."""
        return self is other or (self.position == other.position and self.router == other.router)


class Routed:
    """A router primitive: the inner backend's primitive and the route it lives on.

    Attributes:
        route: the inner backend it belongs to.
        primitive: the inner backend's primitive.
    """

    __slots__ = ("primitive", "route")

    def __init__(self, route: Route, primitive: Any) -> None:
        self.route = route
        self.primitive = primitive

    @property
    def shape(self) -> Any:
        """The inner primitive's shape."""
        return self.primitive.shape

    @property
    def dtype(self) -> Any:
        """The inner primitive's dtype."""
        return self.primitive.dtype

    def __repr__(self) -> str:
        return f"Routed({self.route.backend.stack_name}, {self.primitive!r})"


_NOT_PRIMITIVES = (bool, int, float, str, frozenset)


# classes seen to be inner primitives: one set lookup per result on the hot path
_PRIMITIVE_CLASSES: set[type] = set()


def _out(route: Route, value: Any) -> Any:
    if value.__class__ in _PRIMITIVE_CLASSES:
        return Routed(route, value)
    if isinstance(value, TensorData):
        return value
    if hasattr(value, "dtype") and hasattr(value, "shape"):  # NumPy scalars too, before float
        _PRIMITIVE_CLASSES.add(value.__class__)
        return Routed(route, value)
    if value is None or isinstance(value, _NOT_PRIMITIVES):
        return value
    if isinstance(value, tuple):
        results = [_out(route, v) for v in value]
        return type(value)(*results) if hasattr(value, "_fields") else tuple(results)
    if isinstance(value, list):
        return [_out(route, v) for v in value]
    if isinstance(value, Device):
        return route.router.device(value.index, on=route.position)
    return value


def _routed(name: str, interface: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Router, *args: Any) -> Any:
        route: Route | None = None
        inner: list[Any] = []
        for arg in args:
            kind = type(arg)
            if kind is Routed:
                if route is None:
                    route = arg.route
                elif arg.route is not route and not route.joins(arg.route):
                    raise self._mixed(name, route, arg.route)
                inner.append(arg.primitive)
            elif kind is Device:
                found, device = self.route_of(arg)
                if route is None:
                    route = found
                elif found is not route and not route.joins(found):
                    raise self._mixed(name, route, found)
                inner.append(device)
            elif kind is list or kind is tuple:
                items = []
                for item in arg:
                    if type(item) is Routed:
                        if route is None:
                            route = item.route
                        elif item.route is not route and not route.joins(item.route):
                            raise self._mixed(name, route, item.route)
                        items.append(item.primitive)
                    else:
                        items.append(item)
                inner.append(kind(items))
            else:
                inner.append(arg)
        if route is None:
            raise TypeError(f"{name}: {self.stack_name} found no tensor or device among the arguments")
        return _out(route, getattr(route.backend, name)(*inner))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = interface.__doc__
    method.__signature__ = inspect.signature(interface)  # type: ignore[attr-defined]
    return method


class Router(BackendDecorator):
    """One backend over several: tensors live on one inner backend each and move between them with
    ``to_device``.

    Device ``i`` of the router is a device of one inner backend: the inner backends' devices are
    numbered one after the other, in the order the backends are given (``device(j, on=k)`` is device
    ``j`` of inner backend ``k``). An op runs on the inner backend its tensors live on; an op mixing
    tensors of two inner backends is the usual device error of the Tensor API. Tensors made without a
    dtype get the first inner backend's defaults (``float_dtype``, ``int_dtype``). Stack name:
    ``router[cuda,ndarray]`` (the inner stack names, as ``BURN_DEVICE`` and ``parse_device`` accept).

    Gradients across inner backends: wrap the router, ``Autodiff(Router(Cuda(), NdArray()))``; a
    ``to_device`` between the inner backends is then differentiable. A router of autodiff backends
    (``Router(Autodiff(Cuda()), Autodiff(NdArray()))``) is an autodiff backend whose graphs stay on one
    inner backend each: moving a tensor that is part of a graph to another inner backend is an error
    (detach it first, or put Autodiff outside the router).

    Args:
        *backends: the inner backends (at least one; all autodiff backends or none).

    Raises:
        TypeError: an argument is not a Backend.
        ValueError: no backend, or autodiff and plain backends mixed.

    Example:
        >>> from burn_backend import Tensor
        >>> from burn_ndarray import NdArray
        >>> router = Router(NdArray(), NdArray(float_dtype="f64"))
        >>> cpu32, cpu64 = router.device(0), router.device(0, on=1)
        >>> x = Tensor.from_data([1.0, 2.0], cpu32)
        >>> (x.to_device(cpu64) * 2).tolist(), str(cpu64)
        ([2.0, 4.0], 'router[ndarray,ndarray-f64]:1')
    """

    name: ClassVar[str] = "router"

    def __new__(cls, *backends: Backend) -> Router:
        if not backends:
            raise ValueError("Router: give at least one inner backend")
        for backend in backends:
            if not isinstance(backend, Backend):
                raise TypeError(f"Router: each inner backend must be a Backend, got {backend!r}")
        autodiff = [backend.ad_enabled() for backend in backends]
        if any(autodiff) and not all(autodiff):
            names = ", ".join(backend.stack_name for backend in backends)
            raise ValueError(
                f"Router: the inner backends ({names}) mix autodiff and plain backends; make them all "
                f"autodiff backends, or put Autodiff outside the router (Autodiff(Router(...)))"
            )
        chosen: Any = AutodiffRouter if cls is Router and all(autodiff) else cls
        return super().__new__(chosen)  # type: ignore[no-any-return]

    def __init__(self, *backends: Backend) -> None:
        super().__init__(backends[0])
        self.routes = tuple(Route(self, backend, position) for position, backend in enumerate(backends))
        self._table: list[tuple[Route, Device]] | None = None

    @classmethod
    def delegates(cls, name: str) -> bool:
        # a collective's tensors may sit on several inner backends: the interface's default composes it
        # from this router's own ops (to_device moves between inner backends)
        return name != "float_all_reduce"

    @classmethod
    def delegate(cls, name: str, interface: Callable[..., Any]) -> Callable[..., Any]:
        return _routed(name, interface)

    # -- devices ----------------------------------------------------------------------------------
    @property
    def backends(self) -> tuple[Backend, ...]:
        """The inner backends, in order."""
        return tuple(route.backend for route in self.routes)

    def _devices_table(self) -> list[tuple[Route, Device]]:
        table = self._table
        if table is None:
            table = []
            for route in self.routes:
                route.offset = len(table)
                table.extend((route, route.backend.device(i)) for i in range(route.backend.device_count()))
            self._table = table
        return table

    def device(self, index: int = 0, on: int | Backend | None = None) -> Device:
        """Device ``index`` of the router, or, with ``on``, device ``index`` of one inner backend.

        Args:
            index: the device's number (among all the router's devices, or the inner backend's).
            on: an inner backend, or its position among the inner backends.

        Raises:
            ValueError: there is no such device or inner backend.
        """
        if on is None:
            return super().device(index)
        route = self._route_named(on)
        count = route.backend.device_count()
        if not 0 <= index < count:
            raise ValueError(
                f"{self.stack_name}: {route.backend.stack_name} has no device {index} ({count} device(s))"
            )
        self._devices_table()
        return super().device(route.offset + index)

    def _route_named(self, on: int | Backend) -> Route:
        if isinstance(on, Backend):
            for route in self.routes:
                if route.backend == on:
                    return route
            raise ValueError(f"{self.stack_name}: {on!r} is not one of its inner backends")
        if isinstance(on, bool) or not isinstance(on, int) or not 0 <= on < len(self.routes):
            last = len(self.routes) - 1
            raise ValueError(
                f"{self.stack_name}: on={on!r} is not the position of an inner backend (0 to {last})"
            )
        return self.routes[on]

    def device_count(self) -> int:
        return len(self._devices_table())

    def route_of(self, device: Device) -> tuple[Route, Device]:
        """The route of a router device and the inner backend's device it is.

        Raises:
            ValueError: ``device`` is not a device of this router.
        """
        if device.backend is not self and device.backend != self:
            raise ValueError(f"{self.stack_name}: {device} is not a device of this router")
        table = self._devices_table()
        if not 0 <= device.index < len(table):
            raise ValueError(f"{self.stack_name}: no device {device.index}; the router has {len(table)}")
        return table[device.index]

    def inner_device(self, device: Device) -> Device:
        """The inner backend's device that ``device`` (one of the router's) is."""
        return self.route_of(device)[1]

    def outer_device(self, device: Device) -> Device:
        """The router's device in front of ``device``, a device of one of the inner backends."""
        for route in self.routes:
            if route.backend == device.backend:
                self._devices_table()
                return super().device(route.offset + device.index)
        raise ValueError(f"{self.stack_name}: {device} is not a device of an inner backend")

    def seed(self, device: Device, seed: int) -> None:
        route, inner = self.route_of(device)
        route.backend.seed(inner, seed)

    def sync(self, device: Device) -> None:
        route, inner = self.route_of(device)
        route.backend.sync(inner)

    def flush(self, device: Device) -> None:
        route, inner = self.route_of(device)
        route.backend.flush(inner)

    def memory_cleanup(self, device: Device) -> None:
        route, inner = self.route_of(device)
        route.backend.memory_cleanup(inner)

    def supports_dtype(self, device: Device, dtype: DType) -> bool:
        route, inner = self.route_of(device)
        return route.backend.supports_dtype(inner, dtype)

    def dtype_usage(self, device: Device, dtype: DType) -> frozenset[DTypeUsage]:
        route, inner = self.route_of(device)
        return route.backend.dtype_usage(inner, dtype)

    def from_dlpack(self, source: Any, device: Device) -> Any | None:
        route, inner = self.route_of(device)
        primitive = route.backend.from_dlpack(source, inner)
        return None if primitive is None else Routed(route, primitive)

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        route, inner = self.route_of(device)
        plan = route.backend.compile_elementwise(block, inner)
        if plan is None:
            return None
        inner_plan = plan

        def routed(inputs: Sequence[Any], scalars: Sequence[Any]) -> Sequence[Any]:
            # a Deferred output is the route's: made into its primitive before it is routed
            return [Routed(route, p) for p in resolved(inner_plan([t.primitive for t in inputs], scalars))]

        return routed

    def tr_execute(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> tuple[list[TensorData], list[TensorData], list[TensorData]]:
        return self.tr_execute_async(floats, ints, bools).wait()

    def tr_execute_async(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> PendingRead[tuple[list[TensorData], list[TensorData], list[TensorData]]]:
        # one transaction per inner backend, so each waits for its device once; all are started
        # before any is waited for
        groups = (list(floats), list(ints), list(bools))
        reads = []
        for route in self.routes:
            picked = [
                [(i, t.primitive) for i, t in enumerate(group) if route.joins(t.route)] for group in groups
            ]
            if any(picked):
                reads.append(
                    (picked, route.backend.tr_execute_async(*([p for _, p in part] for part in picked)))
                )

        def finish() -> tuple[list[TensorData], list[TensorData], list[TensorData]]:
            results: tuple[list[Any], ...] = tuple([None] * len(group) for group in groups)
            for picked, read in reads:
                for part, values, out in zip(picked, read.wait(), results):
                    for (i, _), value in zip(part, values):
                        out[i] = value
            return results[0], results[1], results[2]

        return PendingRead(finish)

    # -- what the inner backends share ------------------------------------------------------------
    @property
    def stack_name(self) -> str:
        return f"{self.name}[{','.join(route.backend.stack_name for route in self.routes)}]"

    @property
    def validates_index_values(self) -> bool:  # type: ignore[override]
        return all(route.backend.validates_index_values for route in self.routes)

    @property
    def conformance_exclusions(self) -> Mapping[str, str]:  # type: ignore[override]
        # the conformance suite runs on device 0, which is the first inner backend's
        return self.routes[0].backend.conformance_exclusions

    def settings(self) -> tuple[Any, ...]:
        return self.backends

    def has_ctc_loss_backward(self) -> bool:
        return all(route.backend.has_ctc_loss_backward() for route in self.routes)

    def __repr__(self) -> str:
        return f"Router({', '.join(repr(backend) for backend in self.backends)})"

    # -- moving between inner backends ------------------------------------------------------------
    def _to_device(self, kind: str, tensor: Routed, device: Device) -> Routed:
        route, inner = self.route_of(device)
        source = tensor.route
        if route.joins(source):
            return Routed(route, getattr(route.backend, f"{kind}_to_device")(tensor.primitive, inner))
        moved = None
        if hasattr(tensor.primitive, "__dlpack__"):
            moved = route.backend.from_dlpack(tensor.primitive, inner)
        if moved is None or moved.dtype != tensor.primitive.dtype:
            data = getattr(source.backend, f"{kind}_into_data")(tensor.primitive)
            moved = getattr(route.backend, f"{kind}_from_data")(data, inner)
        return Routed(route, moved)

    def float_to_device(self, tensor: Any, device: Device) -> Any:
        return self._to_device("float", tensor, device)

    def int_to_device(self, tensor: Any, device: Device) -> Any:
        return self._to_device("int", tensor, device)

    def bool_to_device(self, tensor: Any, device: Device) -> Any:
        return self._to_device("bool", tensor, device)

    def _mixed(self, name: str, first: Route, other: Route) -> ValueError:
        return ValueError(
            f"{name}: tensors on two inner backends of {self.stack_name} ({first.backend.stack_name} and "
            f"{other.backend.stack_name}); move one with .to_device(...)"
        )


class AutodiffRouter(Router, AutodiffBackend):
    """A router whose inner backends are all autodiff backends (``Router`` makes one when given such
    backends): ``backward`` runs on the inner backend of the tensor it starts from, and gradients live
    on the matching inner backend of ``inner``, a router over the inner backends' own inner backends
    with the same device numbers."""

    def __init__(self, *backends: Backend) -> None:
        super().__init__(*backends)
        self._plain: Router | None = None

    @property
    def inner(self) -> Router:
        """The router over the inner backends' inner backends (where gradients live)."""
        if self._plain is None:
            plain: Any = Router  # its ops are made when the class is defined, which mypy cannot see
            self._plain = plain(*(_autodiff(route).inner for route in self.routes))
        return self._plain

    def _plain_route(self, route: Route) -> Route:
        return self.inner.routes[route.position]

    def backward(self, tensor: Any) -> Gradients:
        grads: Gradients = _autodiff(tensor.route).backward(tensor.primitive)
        return grads

    def grad(self, tensor: Any, grads: Gradients) -> Any:
        gradient = _autodiff(tensor.route).grad(tensor.primitive, grads)
        return None if gradient is None else Routed(self._plain_route(tensor.route), gradient)

    def grad_remove(self, tensor: Any, grads: Gradients) -> Any:
        gradient = _autodiff(tensor.route).grad_remove(tensor.primitive, grads)
        return None if gradient is None else Routed(self._plain_route(tensor.route), gradient)

    def grad_replace(self, tensor: Any, grads: Gradients, gradient: Any) -> None:
        _autodiff(tensor.route).grad_replace(tensor.primitive, grads, gradient.primitive)

    def _inner_of(self, kind: str, tensor: Routed) -> Routed:
        primitive = getattr(_autodiff(tensor.route), f"{kind}_inner")(tensor.primitive)
        return Routed(self._plain_route(tensor.route), primitive)

    def _from_inner_of(self, kind: str, tensor: Routed) -> Routed:
        route = self.routes[tensor.route.position]
        return Routed(route, getattr(_autodiff(route), f"{kind}_from_inner")(tensor.primitive))

    def float_inner(self, tensor: Any) -> Any:
        return self._inner_of("float", tensor)

    def float_from_inner(self, tensor: Any) -> Any:
        return self._from_inner_of("float", tensor)

    def int_inner(self, tensor: Any) -> Any:
        return self._inner_of("int", tensor)

    def int_from_inner(self, tensor: Any) -> Any:
        return self._from_inner_of("int", tensor)

    def bool_inner(self, tensor: Any) -> Any:
        return self._inner_of("bool", tensor)

    def bool_from_inner(self, tensor: Any) -> Any:
        return self._from_inner_of("bool", tensor)

    def _to_device(self, kind: str, tensor: Routed, device: Device) -> Routed:
        target, _ = self.route_of(device)
        moves = not target.joins(tensor.route) and kind == "float"
        if moves and _autodiff(tensor.route).float_is_require_grad(tensor.primitive):
            raise ValueError(
                f"to_device: the tensor is part of a graph on {tensor.route.backend.stack_name}, and "
                f"the graphs of {self.stack_name} stay on one inner backend each; detach it first, "
                f"or put Autodiff outside the router (Autodiff(Router(...))) for gradients that "
                f"cross backends"
            )
        return super()._to_device(kind, tensor, device)


def _autodiff(route: Route) -> Any:
    """The route's backend, an autodiff backend in an ``AutodiffRouter``."""
    return route.backend
