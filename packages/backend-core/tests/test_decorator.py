"""``BackendDecorator``: a pass-through decorator is a few lines and passes the conformance suite; what
a decorator forwards, delegates, wraps and unwraps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from burn_backend import Backend, ConvOptions, Device, Distribution, DType, Tensor, module
from burn_backend.kit import (
    BackendDecorator,
    Deferred,
    ElementwiseBlock,
    ElementwisePlan,
    ElementwiseStep,
    TensorSpec,
    interface_methods,
)
from burn_ndarray import NdArray

RunKit = Callable[..., Any]


class Identity(BackendDecorator):
    """The pass-through decorator: every op runs on the inner backend as it is."""

    name: ClassVar[str] = "identity"


class Boxed:
    """A primitive of ``Boxing``: an inner primitive in a box."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.shape = inner.shape
        self.dtype = inner.dtype


class Boxing(BackendDecorator):
    """A decorator whose primitives differ from the inner backend's, as Fusion's and Router's will."""

    name: ClassVar[str] = "boxing"

    def wrap(self, primitive: Any) -> Any:
        return Boxed(primitive)

    def unwrap(self, value: Any) -> Any:
        return value.inner if isinstance(value, Boxed) else value


class Compiling(NdArray):
    """NdArray with a compile hook that counts its calls and gives a plan adding 1 to the block's result
    (wrong on purpose: the tests see whose plan ran)."""

    blocks: ClassVar[list[ElementwiseBlock]] = []

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        Compiling.blocks.append(block)

        def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
            assert all(isinstance(t, np.ndarray) for t in inputs), "the plan got the decorator's primitives"
            return [np.exp(inputs[0]) + 1]

        return plan


EXP = ElementwiseBlock((TensorSpec(DType.F32, (3,)),), (ElementwiseStep("float_exp", (0,)),), (1,))


@pytest.mark.slow
def test_a_pass_through_decorator_passes_the_conformance_suite(run_kit: RunKit) -> None:
    """The whole suite, its coverage check included: every interface method reached through Identity."""
    run = run_kit("--pyargs", "burn_backend.testing", "--backend", "test_decorator:Identity(NdArray())")
    assert run.returncode == 0, run.output[-3000:]
    assert run.count("failed") == 0
    assert run.count("passed") > 5000


def test_stack_name_devices_and_values() -> None:
    inner = NdArray(float_dtype="f64")
    backend = Identity(inner)
    assert backend.inner is inner
    assert backend.stack_name == "identity-ndarray"
    assert Identity(Identity(NdArray())).stack_name == "identity-identity-ndarray"
    assert backend.is_decorator
    assert backend.float_dtype is DType.F64
    assert backend.int_dtype is inner.int_dtype
    assert backend == Identity(NdArray(float_dtype="f64"))
    assert backend != Identity(NdArray())
    assert hash(backend) == hash(Identity(NdArray(float_dtype="f64")))
    assert repr(backend) == f"Identity({inner!r})"
    assert backend.device_count() == inner.device_count()
    device = backend.device()
    assert backend.inner_device(device) is inner.device()
    assert backend.outer_device(inner.device()) is device
    with pytest.raises(ValueError, match="not a device of this backend"):
        backend.inner_device(inner.device())


def test_the_inner_backend_must_be_a_backend() -> None:
    with pytest.raises(TypeError, match="Identity: the inner backend must be a Backend"):
        Identity("ndarray")  # type: ignore[arg-type]


def test_capabilities_and_exclusions_are_the_inner_backends() -> None:
    class Asynchronous(NdArray):
        validates_index_values: ClassVar[bool] = False
        conformance_exclusions: ClassVar[dict[str, str]] = {"float/test_math.py::test_erf*": "no erf"}

    assert Identity(NdArray()).validates_index_values is True
    assert Identity(Asynchronous()).validates_index_values is False
    assert Identity(Asynchronous()).conformance_exclusions == Asynchronous.conformance_exclusions
    assert Identity(NdArray()).conformance_exclusions == NdArray.conformance_exclusions


def test_device_methods_reach_the_inner_backend_with_its_device() -> None:
    seen: list[tuple[str, Device]] = []

    class Recording(NdArray):
        def seed(self, device: Device, seed: int) -> None:
            seen.append(("seed", device))

        def sync(self, device: Device) -> None:
            seen.append(("sync", device))

        def flush(self, device: Device) -> None:
            seen.append(("flush", device))

        def memory_cleanup(self, device: Device) -> None:
            seen.append(("memory_cleanup", device))

        def supports_dtype(self, device: Device, dtype: DType) -> bool:
            seen.append(("supports_dtype", device))
            return dtype is not DType.F16

    inner = Recording()
    backend = Identity(inner)
    device = backend.device()
    backend.seed(device, 1)
    backend.sync(device)
    backend.flush(device)
    backend.memory_cleanup(device)
    assert backend.supports_dtype(device, DType.F32)
    assert not backend.supports_dtype(device, DType.F16)
    assert backend.dtype_usage(device, DType.F16) == frozenset()
    names = ["seed", "sync", "flush", "memory_cleanup", "supports_dtype", "supports_dtype", "supports_dtype"]
    assert seen == [(name, inner.device()) for name in names]


def test_every_method_is_delegated_or_forwarded() -> None:
    for name, function in interface_methods().items():
        if name != "ad_enabled":  # whether the decorator itself records gradients: its own answer
            assert getattr(Identity, name) is not function, f"{name} is not delegated"
    assert not Identity.__abstractmethods__  # type: ignore[attr-defined]
    assert Identity(NdArray()).ad_enabled() is False


def test_delegates_unwrap_arguments_and_wrap_results() -> None:
    backend = Boxing(NdArray())
    device = backend.device()
    x = Tensor.from_data([[1.0, -2.0], [3.0, 4.0]], device)
    assert isinstance(x.primitive, Boxed)
    assert isinstance(x.primitive.inner, np.ndarray)
    values, indices = x.max_dim_with_indices(1)  # a tuple of primitives comes back wrapped
    assert isinstance(values.primitive, Boxed)
    assert isinstance(indices.primitive, Boxed)
    assert values.tolist() == [[1.0], [4.0]]
    assert indices.tolist() == [[0], [1]]
    assert Tensor.cat([x, x], 0).dims() == [4, 2]  # a list of primitives goes in unwrapped
    assert x.device is device  # the inner backend's device comes back as ours
    assert (x > 0).tolist() == [[True, False], [True, True]]


def test_delegates_handle_each_argument_as_its_annotation_says() -> None:
    from burn_backend._decorator import _DEVICE, _PASS, _SEQUENCE, _UNWRAP, _WALK, _role

    # the interface's annotations: primitives, devices and sequences of primitives are translated, plain
    # values passed as they are; an annotation that names a primitive otherwise falls back to the walk
    assert [_role(a) for a in ("P", "P | None", "Device", "Sequence[P]", "Sequence[P | None]")] == [
        _UNWRAP, _UNWRAP, _DEVICE, _SEQUENCE, _SEQUENCE,
    ]  # fmt: skip
    assert [_role(a) for a in ("int", "Shape", "DType", "ConvOptions", "tuple[int, int]")] == [_PASS] * 5
    assert [_role(a) for a in ("list[P]", "dict[str, P]", "Any", "", "Device | None", int)] == [_WALK] * 6
    backend = Boxing(NdArray())
    device = backend.device()
    drawn = backend.float_random((2, 3), Distribution.default(), device, DType.F32)  # shape, device
    assert isinstance(drawn, Boxed)
    assert drawn.shape == (2, 3)
    x = Tensor.from_data(np.ones((1, 1, 3, 3), np.float32), device)
    weight = Tensor.from_data(np.ones((2, 1, 2, 2), np.float32), device)
    y = module.conv2d(x, weight, None, ConvOptions([1, 1], [0, 0], [1, 1], 1))  # a None for ``P | None``
    assert isinstance(y.primitive, Boxed)
    assert y.tolist() == [[[[4.0, 4.0], [4.0, 4.0]]] * 2]


def test_transactions_read_the_inner_primitives() -> None:
    backend = Boxing(NdArray())
    device = backend.device()
    floats = [Tensor.from_data([1.0, 2.0], device).primitive]
    ints = [Tensor.from_data([3], device).primitive]
    (f,), (i,), bools = backend.tr_execute(floats, ints, [])
    assert f.to_numpy().tolist() == [1.0, 2.0]
    assert i.to_numpy().tolist() == [3]
    assert bools == []


def test_delegates_narrowed_by_the_subclass_keep_the_interface_defaults() -> None:
    calls: list[str] = []

    class OnlyInts(BackendDecorator):
        name: ClassVar[str] = "only-ints"

        @classmethod
        def delegates(cls, name: str) -> bool:
            return not name.startswith("float_")

        def float_from_data(self, data: Any, device: Device) -> Any:
            return self._inner.float_from_data(data, self.inner_device(device))

        def float_mul_scalar(self, lhs: Any, rhs: float) -> Any:
            calls.append("float_mul_scalar")
            return self._inner.float_mul_scalar(lhs, rhs)

    assert OnlyInts.int_add is not interface_methods()["int_add"]
    assert OnlyInts.float_neg is interface_methods()["float_neg"]  # the default, from float_mul_scalar
    assert "float_add" in OnlyInts.__abstractmethods__  # type: ignore[attr-defined]

    class Complete(OnlyInts):
        @classmethod
        def delegates(cls, name: str) -> bool:
            return name != "float_neg"

    backend = Complete(NdArray())
    device = backend.device()
    x = Tensor.from_data([1.0, -2.0], device)
    assert (-x).tolist() == [-1.0, 2.0]
    assert calls == ["float_mul_scalar"]


# -- the fusion compile hook -----------------------------------------------------------------------
class Uncompiled(NdArray):
    """NdArray without its fusion compiler: the interface's default hook."""

    compile_elementwise = Backend.compile_elementwise


def test_the_default_compile_hook_gives_no_plan() -> None:
    for backend in (Uncompiled(), Identity(Uncompiled())):
        assert backend.compile_elementwise(EXP, backend.device()) is None
    assert Backend.compile_elementwise is interface_methods()["compile_elementwise"]


def test_the_compile_hook_is_delegated_with_the_inner_device_and_primitives() -> None:
    Compiling.blocks.clear()
    inner = Compiling()
    backend = Boxing(inner)
    device = backend.device()
    plan = backend.compile_elementwise(EXP, device)
    assert plan is not None
    assert Compiling.blocks == [EXP]
    x = Tensor.from_data([0.0, 1.0, 2.0], device, DType.F32)
    (output,) = plan([x.primitive], EXP.scalars)
    assert isinstance(output, Boxed)
    np.testing.assert_allclose(output.inner, np.exp([0.0, 1.0, 2.0]) + 1, rtol=1e-6)


class Held(Deferred):
    """A plan output standing for an inner array (``Deferred``)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def resolve(self) -> Any:
        return self.value


class Deferring(NdArray):
    """NdArray whose plan returns its outputs as ``Deferred`` values."""

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
            return [Held(np.exp(inputs[0]))]

        return plan


def test_a_decorators_plan_wraps_the_primitive_of_a_deferred_output() -> None:
    # the decorator's own primitive must stand for the value: a Deferred of the inner backend is resolved
    backend = Boxing(Deferring())
    device = backend.device()
    plan = backend.compile_elementwise(EXP, device)
    assert plan is not None
    x = Tensor.from_data([0.0, 1.0, 2.0], device, DType.F32)
    (output,) = plan([x.primitive], EXP.scalars)
    assert isinstance(output, Boxed)
    assert isinstance(output.inner, np.ndarray)
    np.testing.assert_allclose(output.inner, np.exp([0.0, 1.0, 2.0]), rtol=1e-6)
