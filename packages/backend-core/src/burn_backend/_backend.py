"""``Backend``: the interface every backend implements, and ``AutodiffBackend`` for the ones that
compute gradients."""

from __future__ import annotations

import abc
import contextlib
import enum
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ._data import TensorData
from ._device import Device
from ._dtype import DType, Kind
from ._ops.activation import ActivationOps
from ._ops.bool import BoolTensorOps
from ._ops.distributed import DistributedOps
from ._ops.float import FloatTensorOps
from ._ops.int import IntTensorOps
from ._ops.module import ModuleOps
from ._ops.optim import OptimizerOps
from ._transaction import PendingRead
from .quantization._ops import QTensorOps

if TYPE_CHECKING:
    from ._fusion_ir import ElementwiseBlock, ElementwisePlan


class DTypeUsage(enum.Enum):
    """A way a backend can use a dtype (``Backend.dtype_usage``)."""

    STORAGE = "storage"
    ARITHMETIC = "arithmetic"
    ACCELERATED = "accelerated"


class Backend(
    FloatTensorOps,
    IntTensorOps,
    BoolTensorOps,
    ModuleOps,
    ActivationOps,
    DistributedOps,
    OptimizerOps,
    QTensorOps,
    abc.ABC,
):
    """A backend: the op groups plus backend-level methods.

    Subclasses implement the abstract methods of the op groups, set ``name`` and ``is_cpu``, and
    implement ``device_count``, ``seed`` and ``sync``. A backend object is a value: two backends are
    equal when they are of the same class with the same settings (``settings()``).

    Args:
        float_dtype: the default float dtype of tensors made on this backend's devices.
        int_dtype: the default int dtype (also the dtype of indices the backend returns).
    """

    name: ClassVar[str] = "backend"
    """The short name used in device specs (``BURN_DEVICE=name:index``)."""
    is_cpu: ClassVar[bool] = False
    """Whether the backend computes on the host CPU (a candidate for the default device)."""
    is_autodiff: ClassVar[bool] = False
    """Whether the backend records operations for gradients (an ``AutodiffBackend``)."""
    is_decorator: ClassVar[bool] = False
    """Whether the backend wraps another one (Autodiff, Fusion, Router)."""
    validates_index_values: ClassVar[bool] = True
    """Whether the Tensor API reads index values to check them (the bounds of the indices of
    ``gather``, ``scatter``, ``select``, ``select_assign``, ``embedding``, ``gather_nd`` and
    ``scatter_nd``, ``one_hot``'s classes, Int divisors that are zero) and raises a clear error.
    Asynchronous device backends set it to False: the read would wait for the device, so those checks
    are skipped, and an index out of range gives unspecified values (never an access outside the
    tensor's memory)."""
    conformance_exclusions: ClassVar[Mapping[str, str]] = {}
    """Conformance tests this backend cannot pass: test-id pattern (``"float/test_math.py::test_erf*"``)
    to the reason. They run as strict expected failures. A pattern matches a test's id, or its id
    without the ``[parameters]``, character for character with ``*`` as the only wildcard; one that
    matches no test is an error. A key ``"implementation-defined:<group>"`` declares that the backend
    gives its own values in a group of ``burn_backend.testing.IMPLEMENTATION_DEFINED`` (an int division
    by zero, signed overflow, shifts outside ``[0, bits)``): the tests of that group skip."""

    def __init__(self, float_dtype: DType | str = DType.F32, int_dtype: DType | str = DType.I64) -> None:
        float_dtype = DType.of(float_dtype)
        int_dtype = DType.of(int_dtype)
        if not float_dtype.is_float:
            raise ValueError(f"{type(self).__name__}: float_dtype must be a float dtype, got {float_dtype}")
        if not int_dtype.is_int:
            raise ValueError(f"{type(self).__name__}: int_dtype must be an int dtype, got {int_dtype}")
        self.float_dtype = float_dtype
        self.int_dtype = int_dtype
        self._devices: dict[int, Device] = {}

    def settings(self) -> tuple[Any, ...]:
        """What makes two backends of this class different; the base of equality and hashing."""
        return (self.float_dtype, self.int_dtype)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        return self.settings() == other.settings()

    def __hash__(self) -> int:
        return hash((type(self), self.settings()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(float_dtype={self.float_dtype}, int_dtype={self.int_dtype})"

    def device(self, index: int = 0) -> Device:
        """The handle of device ``index`` of this backend.

        Raises:
            ValueError: there is no such device.
        """
        device = self._devices.get(index)
        if device is None:
            count = self.device_count()
            if not 0 <= index < count:
                raise ValueError(f"{self.name}: no device {index}; this backend has {count} device(s)")
            device = self._devices[index] = Device(self, index)
        return device

    @property
    def stack_name(self) -> str:
        """The name of this backend's stack in device specs: ``"ndarray"``, ``"autodiff-cuda"``."""
        return self.name

    def default_dtype(self, kind: Kind) -> DType:
        """The dtype tensors of ``kind`` get when none is asked for."""
        if kind is Kind.FLOAT:
            return self.float_dtype
        if kind is Kind.INT:
            return self.int_dtype
        return DType.BOOL

    @abc.abstractmethod
    def device_count(self) -> int:
        """How many devices this backend can use."""

    @abc.abstractmethod
    def seed(self, device: Device, seed: int) -> None:
        """Seed the random generator of ``device``."""

    @abc.abstractmethod
    def sync(self, device: Device) -> None:
        """Wait for every queued operation on ``device`` to finish."""

    def supports_dtype(self, device: Device, dtype: DType) -> bool:
        """Whether tensors of ``dtype`` can be stored and computed with on ``device``."""
        return True

    def dtype_usage(self, device: Device, dtype: DType) -> frozenset[DTypeUsage]:
        """How ``dtype`` can be used on ``device``: stored, computed with, and whether it is accelerated
        (by default: stored and computed with when supported, never claimed accelerated)."""
        if not self.supports_dtype(device, dtype):
            return frozenset()
        return frozenset({DTypeUsage.STORAGE, DTypeUsage.ARITHMETIC})

    def ad_enabled(self) -> bool:
        """Whether this backend records operations for gradients."""
        return self.is_autodiff

    def flush(self, device: Device) -> None:
        """Submit queued work on ``device`` without waiting for it (eager backends have none)."""

    def memory_cleanup(self, device: Device) -> None:
        """Give cached, unused memory of ``device`` back where the backend keeps a pool (default: none)."""

    def tr_execute(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> tuple[list[TensorData], list[TensorData], list[TensorData]]:
        """Read many tensors at once (a transaction): asynchronous backends override this to wait for
        the device only once. Returns the data of each group in order."""
        return (
            [self.float_into_data(t) for t in floats],
            [self.int_into_data(t) for t in ints],
            [self.bool_into_data(t) for t in bools],
        )

    def tr_execute_async(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> PendingRead[tuple[list[TensorData], list[TensorData], list[TensorData]]]:
        """Start the reads of ``tr_execute`` and return what ``wait()`` completes. A backend whose
        device runs behind the host overrides it to queue the copies to host memory and return at
        once: work queued after this call does not delay the read, and the host waits only when it
        asks for the data. The default reads now.

        Example:
            >>> from burn_ndarray import NdArray  # doctest: +SKIP
            >>> backend = NdArray()  # doctest: +SKIP
            >>> floats, _, _ = backend.tr_execute_async([primitive], [], []).wait()  # doctest: +SKIP
        """
        return PendingRead.ready(self.tr_execute(floats, ints, bools))

    def from_dlpack(self, source: Any, device: Device) -> Any | None:
        """A primitive on ``device`` made from ``source`` (an object with ``__dlpack__``, such as another
        backend's primitive), sharing its memory where the two allow it; ``None`` (the default) when this
        backend cannot take it, and the caller copies through host memory instead (``*_into_data``,
        ``*_from_data``). Burn's primitives are never written to, so sharing is safe.

        Example:
            ``Router`` moves a tensor between its inner backends with it::

                moved = target.from_dlpack(primitive, device)
                if moved is None:
                    moved = target.float_from_data(source.float_into_data(primitive), device)
        """
        return None

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        """Compile a block of element-wise ops into one callable: the fusion compile hook.

        A decorator that defers ops (Fusion) hands each block of element-wise ops it claims to its inner
        backend here, and caches what comes back by ``block.key``. A backend with a compiler returns a
        plan; the default returns ``None``, and the decorator then runs the block op by op, so every
        backend works under Fusion, compiler or not. A compiler reads each step's table entry
        (``step.entry.render(...)`` gives its expression as code).

        Args:
            block: the ops (entries of ``ELEMENTWISE_OPS``), the dtypes and shapes of their inputs,
                and which values leave the block.
            device: the device the plan computes on.

        Returns:
            ``None`` (run the block op by op), or a plan: ``plan(inputs, scalars)`` takes the input
            primitives (``block.inputs`` order, of those dtypes and shapes, on ``device``) and the
            scalar values (``block.scalars`` order: read them there, not from ``block``, so that one
            plan serves every block of its key) and returns the output primitives (``block.outputs``
            order), as the ops one by one would.

        Example:
            What a decorator does with a block it claimed::

                plan = inner.compile_elementwise(block, inner_device)
                if plan is None:
                    outputs = run_op_by_op(block, inputs)
                else:
                    outputs = plan(inputs, block.scalars)
        """
        return None


BACKEND_METHODS = (
    "device_count", "seed", "sync", "supports_dtype", "dtype_usage", "ad_enabled", "flush", "memory_cleanup",
    "tr_execute", "tr_execute_async", "compile_elementwise", "from_dlpack",
)  # fmt: skip


def interface_methods() -> dict[str, Any]:
    """Every method of the backend interface, by name, as the interface defines it: the op groups'
    methods and the backend-level ones. Decorators use it to cover the whole surface; the conformance
    suite's spy and signature checks use it to cover every method."""
    methods: dict[str, Any] = {}
    for group in Backend.__bases__:  # the op groups (and abc.ABC, which defines no method)
        for name, value in vars(group).items():
            if not name.startswith("_") and inspect.isfunction(value):
                methods[name] = value
    for name in BACKEND_METHODS:
        methods[name] = getattr(Backend, name)
    return methods


class Gradients(abc.ABC):
    """The gradients one ``backward`` computed: a container keyed by tensor, never stored on tensors."""

    @abc.abstractmethod
    def get(self, tensor: Any) -> Any:
        """The gradient primitive of an autodiff float primitive, or ``None``."""

    @abc.abstractmethod
    def remove(self, tensor: Any) -> Any:
        """Remove and return the gradient of ``tensor`` (``None`` if it had none)."""

    @abc.abstractmethod
    def replace(self, tensor: Any, gradient: Any) -> None:
        """Set the gradient of ``tensor``."""


class AutodiffBackend(Backend):
    """A backend that records float ops and computes gradients of them (implemented by burn-autodiff)."""

    is_autodiff: ClassVar[bool] = True

    @property
    @abc.abstractmethod
    def inner(self) -> Backend:
        """The backend that computes the values."""

    @abc.abstractmethod
    def backward(self, tensor: Any) -> Gradients:
        """Gradients of ``tensor`` (seeded with ones) with respect to every tracked leaf."""

    def watch_gradients(
        self, tensors: Sequence[Any], callback: Callable[[int, Any], None]
    ) -> contextlib.AbstractContextManager[None]:
        """A context in which each ``backward`` of this thread calls ``callback(i, gradient)`` (an inner
        primitive) as soon as the gradient of ``tensors[i]`` is complete, before the pass ends.

        Data-parallel training sends gradients while the rest of backward runs. Only tracked leaves
        are reported, each once per pass that reaches it. This default reports nothing, so callers
        must still read the returned ``Gradients``; a backend overrides it to report early.
        """
        return contextlib.nullcontext()

    @abc.abstractmethod
    def grad(self, tensor: Any, grads: Gradients) -> Any:
        """The gradient of ``tensor`` in ``grads`` as an inner primitive, or ``None``."""

    @abc.abstractmethod
    def grad_remove(self, tensor: Any, grads: Gradients) -> Any:
        """Remove and return the gradient of ``tensor`` from ``grads``."""

    @abc.abstractmethod
    def grad_replace(self, tensor: Any, grads: Gradients, gradient: Any) -> None:
        """Replace the gradient of ``tensor`` in ``grads`` by an inner primitive."""

    @abc.abstractmethod
    def float_inner(self, tensor: Any) -> Any:
        """The inner backend's primitive of an autodiff float primitive."""

    @abc.abstractmethod
    def float_from_inner(self, tensor: Any) -> Any:
        """An untracked autodiff float primitive around an inner one."""

    def int_inner(self, tensor: Any) -> Any:
        """Int primitives are shared with the inner backend."""
        return tensor

    def int_from_inner(self, tensor: Any) -> Any:
        """Int primitives are shared with the inner backend."""
        return tensor

    def bool_inner(self, tensor: Any) -> Any:
        """Bool primitives are shared with the inner backend."""
        return tensor

    def bool_from_inner(self, tensor: Any) -> Any:
        """Bool primitives are shared with the inner backend."""
        return tensor
