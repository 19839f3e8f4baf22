"""Router: device numbering, specs, dispatch, moves between inner backends and gradients across them.

The whole conformance suite also runs through router stacks (``router[ndarray,ndarray]``,
``autodiff-router[ndarray,ndarray]``); these tests cover what needs several inner backends.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import Backend, Device, DType, Kind, Tensor, Transaction, parse_device
from burn_backend.kit import (
    BackendDecorator,
    Deferred,
    ElementwiseBlock,
    ElementwisePlan,
    ElementwiseStep,
    TensorSpec,
)
from burn_ndarray import NdArray
from burn_router import Routed, Router

torch = pytest.importorskip("torch")

ALL_DTYPES = [DType.F64, DType.F32, DType.F16, DType.BF16, DType.I64, DType.I32, DType.I16, DType.I8]
ALL_DTYPES += [DType.U64, DType.U32, DType.U16, DType.U8, DType.BOOL]


class NoDLPack(BackendDecorator):
    """An inner backend that declines DLPack imports, so moves to it go through host memory."""

    name = "nodlpack"
    declined = 0

    def from_dlpack(self, source: Any, device: Device) -> Any | None:
        type(self).declined += 1
        return None


def values(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...] = (3, 4)) -> np.ndarray[Any, Any]:
    if dtype is DType.BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind is Kind.INT:
        low = 0 if dtype.name.startswith("U") else -100
        return rng.integers(low, 100, shape).astype(dtype.numpy)
    return rng.uniform(-10, 10, shape).astype(dtype.numpy)


# -- devices and specs ----------------------------------------------------------------------------------
def test_devices_are_numbered_across_the_inner_backends_in_order() -> None:
    cpu32, cpu64 = NdArray(), NdArray(float_dtype="f64")
    router = Router(cpu32, cpu64)
    assert router.device_count() == 2
    assert router.backends == (cpu32, cpu64)
    assert router.inner_device(router.device(0)) == cpu32.device(0)
    assert router.inner_device(router.device(1)) == cpu64.device(0)
    assert router.device(0, on=1) == router.device(1)
    assert router.device(0, on=cpu64) == router.device(1)
    assert router.outer_device(cpu64.device(0)) == router.device(1)


def test_bad_devices_and_inner_backends_are_named_in_the_error() -> None:
    router = Router(NdArray(), NdArray(float_dtype="f64"))
    with pytest.raises(ValueError, match="no device 2; this backend has 2"):
        router.device(2)
    with pytest.raises(ValueError, match=r"on=2 is not the position of an inner backend \(0 to 1\)"):
        router.device(0, on=2)
    with pytest.raises(ValueError, match="ndarray has no device 1"):
        router.device(1, on=0)
    with pytest.raises(ValueError, match="is not one of its inner backends"):
        router.device(0, on=NdArray(float_dtype="f16"))
    with pytest.raises(ValueError, match="is not a device of this router"):
        router.inner_device(NdArray().device())
    with pytest.raises(ValueError, match="at least one inner backend"):
        Router()
    with pytest.raises(TypeError, match="must be a Backend, got 'ndarray'"):
        Router("ndarray")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"mix autodiff and plain backends.*Autodiff\(Router\(\.\.\.\)\)"):
        Router(Autodiff(NdArray()), NdArray())


def test_device_specs_name_router_stacks_and_round_trip() -> None:
    device = parse_device("router[ndarray,ndarray]:1")
    assert isinstance(device.backend, Router)
    assert str(device) == "router[ndarray,ndarray]:1"
    assert parse_device(str(device)) is device
    tracked = parse_device("autodiff-router[ndarray,ndarray]:1")
    assert isinstance(tracked.backend, Autodiff)
    assert tracked.backend.inner == device.backend
    assert str(tracked) == "autodiff-router[ndarray,ndarray]:1"
    nested = parse_device("router[autodiff-ndarray,autodiff-ndarray]")
    assert nested.backend.ad_enabled()
    assert str(nested) == "router[autodiff-ndarray,autodiff-ndarray]:0"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("router[ndarray", "unbalanced brackets"),
        ("router[ndarray]]", "unbalanced brackets"),
        ("router[ndarray,]", "an empty backend name"),
        ("router[ndarray]-ndarray", "'router\\[ndarray\\]' lists inner backends, so it must come last"),
        ("router[nothere]", "no installed backend is named 'nothere'"),
        ("router[ndarray]x", r"expected 'name\[stack,...\]'"),
    ],
)
def test_malformed_router_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"device spec {re.escape(repr(spec))}: {message}"):
        parse_device(spec)


# -- dispatch and moves ------------------------------------------------------------------------------
def test_ops_run_on_the_inner_backend_of_their_tensors() -> None:
    cpu32, cpu64 = NdArray(), NdArray(float_dtype="f64")
    router = Router(cpu32, cpu64)
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], router.device(1), DType.F64)
    y = (x.matmul(x) + 1.0).exp().sum_dim(1)
    assert isinstance(y.primitive, Routed)
    assert y.primitive.route.backend is cpu64
    expected = np.exp(np.array([[1.0, 2.0], [3.0, 4.0]]) @ np.array([[1.0, 2.0], [3.0, 4.0]]) + 1.0).sum(1)
    np.testing.assert_allclose(y.to_numpy()[:, 0], expected, rtol=1e-12)
    assert y.device == router.device(1)
    # tensors made without a dtype take the router's defaults, the first inner backend's
    assert Tensor.ones([2], router.device(1)).dtype is DType.F32
    assert Tensor.arange(0, 3, device=router.device(1)).dtype is DType.I64


def test_an_op_mixing_two_inner_backends_is_a_device_error() -> None:
    router = Router(NdArray(), NdArray(float_dtype="f64"))
    a = Tensor.ones([2], router.device(0))
    b = Tensor.ones([2], router.device(1))
    with pytest.raises(
        ValueError, match=r"add: tensors are on different devices, router\[ndarray,ndarray\]:0 and"
    ):
        a + b
    with pytest.raises(ValueError, match="float_add: tensors on two inner backends"):
        router.float_add(a.primitive, b.primitive)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("through", ["dlpack", "host"])
def test_to_device_between_inner_backends_keeps_every_kind_and_dtype(through: str, dtype: DType) -> None:
    inner: Backend = NdArray(float_dtype="f64") if through == "dlpack" else NoDLPack(NdArray())
    router = Router(NdArray(), inner)
    array = values(np.random.default_rng(7), dtype)
    declined_before = NoDLPack.declined
    source = Tensor.from_numpy(array, router.device(0))
    moved = source.to_device(router.device(1))
    assert moved.device == router.device(1)
    assert moved.dtype is dtype
    assert moved.primitive.route.backend is inner
    np.testing.assert_array_equal(moved.to_numpy(), array)
    back = moved.to_device(router.device(0))
    np.testing.assert_array_equal(back.to_numpy(), array)
    if through == "dlpack" and dtype is not DType.BF16:  # NumPy's DLPack has no bf16: that one copies
        assert np.shares_memory(moved.primitive.primitive, source.primitive.primitive)
    if through == "host":
        assert NoDLPack.declined > declined_before


def test_a_transaction_reads_tensors_of_every_inner_backend_in_order() -> None:
    router = Router(NdArray(), NdArray(float_dtype="f64"))
    a = Tensor.from_data([1.0, 2.0], router.device(0))
    b = Tensor.from_data([3, 4], router.device(1), DType.I32)
    c = Tensor.from_data([5.0], router.device(1))
    d = Tensor.from_data([True], router.device(0))
    read = Transaction().register(a).register(b).register(c).register(d).execute()
    assert [r.tolist() for r in read] == [[1.0, 2.0], [3, 4], [5.0], [True]]


@pytest.mark.parametrize("stack", ["plain", "autodiff"])
def test_tensors_of_two_equal_routers_meet_as_their_devices_compare_equal(stack: str) -> None:
    # two instances of one stack (a model made on BURN_DEVICE's router, data on one built by hand):
    # their devices are equal, so ops, moves and reads take tensors of both, as every backend's do
    def make() -> Backend:
        router = Router(NdArray(), NdArray())
        return Autodiff(router) if stack == "autodiff" else router

    first, second = make(), make()
    assert first is not second
    assert first.device(1) == second.device(1)
    a = Tensor.from_data([1.0, 2.0], first.device(1))
    b = Tensor.from_data([3.0, 5.0], second.device(1))
    np.testing.assert_array_equal((a * b + a).to_numpy(), [4.0, 12.0])
    np.testing.assert_array_equal(Tensor.cat([a, b], 0).to_numpy(), [1.0, 2.0, 3.0, 5.0])
    np.testing.assert_array_equal(b.to_device(first.device(1)).add(a).to_numpy(), [4.0, 7.0])
    read = Transaction().register(a).register(b).execute()
    assert [r.tolist() for r in read] == [[1.0, 2.0], [3.0, 5.0]]
    with pytest.raises(ValueError, match="different devices"):
        a + Tensor.from_data([1.0, 1.0], second.device(0))


# -- gradients ---------------------------------------------------------------------------------------
def test_gradients_flow_across_a_move_between_inner_backends() -> None:
    # a model split across two backends: the first layer on one, the second on the other
    rng = np.random.default_rng(0)
    x_np, w1_np, w2_np = rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    backend = Autodiff(Router(NdArray(float_dtype="f64"), NoDLPack(NdArray(float_dtype="f64"))))
    first, second = backend.device(0), backend.device(1)
    x = Tensor.from_numpy(x_np, first)
    w1 = Tensor.from_numpy(w1_np, first).require_grad()
    w2 = Tensor.from_numpy(w2_np, second).require_grad()
    hidden = x.matmul(w1).tanh().to_device(second)
    loss = (hidden.matmul(w2) ** 2).mean()
    grads = loss.backward()

    tx, tw1, tw2 = (torch.tensor(a, requires_grad=True) for a in (x_np, w1_np, w2_np))
    ((torch.tanh(tx @ tw1) @ tw2) ** 2).mean().backward()
    g1, g2 = w1.grad(grads), w2.grad(grads)
    assert g1 is not None
    assert g2 is not None
    assert g1.device == backend.inner.device(0)
    assert g2.device == backend.inner.device(1)
    np.testing.assert_allclose(g1.to_numpy(), tw1.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(g2.to_numpy(), tw2.grad.numpy(), rtol=1e-10)


def test_a_router_of_autodiff_backends_keeps_each_graph_on_its_backend() -> None:
    router = Router(Autodiff(NdArray()), Autodiff(NdArray(float_dtype="f64")))
    assert router.ad_enabled()
    x = Tensor.from_data([1.0, 2.0, 3.0], router.device(1)).require_grad()
    grads = (x * x).sum().backward()
    gradient = x.grad(grads)
    assert gradient is not None
    assert gradient.tolist() == [2.0, 4.0, 6.0]
    assert gradient.device == router.inner.device(1)
    with pytest.raises(ValueError, match=r"detach it first, or put Autodiff outside the router"):
        (x * 2).to_device(router.device(0))
    assert x.detach().to_device(router.device(0)).tolist() == [1.0, 2.0, 3.0]


def test_readme_examples_run() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # our own documentation


def test_a_routed_plan_routes_the_primitive_of_a_deferred_output() -> None:
    # a compile hook's output may be a Deferred of the route's backend: the Router routes its primitive
    class Held(Deferred):
        def __init__(self, value: Any) -> None:
            self.value = value

        def resolve(self) -> Any:
            return self.value

    class Deferring(NdArray):
        def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
            return lambda inputs, scalars: [Held(np.exp(inputs[0]))]

    router = Router(Deferring(), NdArray())
    device = router.device(0)
    block = ElementwiseBlock((TensorSpec(DType.F32, (3,)),), (ElementwiseStep("float_exp", (0,)),), (1,))
    plan = router.compile_elementwise(block, device)
    assert plan is not None
    x = Tensor.from_data([0.0, 1.0, 2.0], device, DType.F32)
    (output,) = plan([x.primitive], ())
    assert isinstance(output, Routed)
    assert isinstance(output.primitive, np.ndarray)
    np.testing.assert_allclose(output.primitive, np.exp([0.0, 1.0, 2.0]), rtol=1e-6)
