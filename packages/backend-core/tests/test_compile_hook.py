"""The fusion compile hook: its IR (``ElementwiseBlock``) is checked when made, the default hook gives no
plan, and a backend's plan is what a decorator gets back and what the conformance suite checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from burn_backend import Backend, Device, DType, Kind, Tensor
from burn_backend.kit import (
    ELEMENTWISE_OPS,
    BackendDecorator,
    ElementwiseBlock,
    ElementwisePlan,
    ElementwiseStep,
    TensorSpec,
    run_op_by_op,
)
from burn_ndarray import NdArray

RunKit = Callable[..., Any]
F32 = DType.F32


def spec(shape: tuple[int, ...], dtype: DType = F32) -> TensorSpec:
    return TensorSpec(dtype, shape)


class Uncompiled(NdArray):
    """NdArray without its fusion compiler: the interface's default hook."""

    compile_elementwise = Backend.compile_elementwise


class Toy(NdArray):
    """NdArray with a compile hook that composes the element-wise op table's NumPy references."""

    compiled: ClassVar[list[ElementwiseBlock]] = []

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        Toy.compiled.append(block)

        def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
            values = [np.asarray(t, dtype=np.float64) if t.dtype.kind == "f" else t for t in inputs]
            given = iter(scalars)
            for step in block.steps:
                operands = [values[ref] for ref in step.args] + [next(given) for _ in step.scalars]
                values.append(step.entry.reference(*operands))
            return [np.asarray(values[ref]).astype(block.values[ref].dtype.numpy) for ref in block.outputs]

        return plan


class WrongToy(Toy):
    """A compiler whose plans read the block's scalars instead of the ones they are given."""

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        plan = super().compile_elementwise(block, device)
        assert plan is not None
        return lambda inputs, scalars: plan(inputs, block.scalars)


class Identity(BackendDecorator):
    name: ClassVar[str] = "identity"


# x * y + 1, then x * y + 1 > 2 (a Bool output)
BLOCK = ElementwiseBlock(
    inputs=(spec((2, 1)), spec((1, 3))),
    steps=(
        ElementwiseStep("float_mul", (0, 1)),
        ElementwiseStep("float_add_scalar", (2,), (1.0,)),
        ElementwiseStep("float_greater_elem", (3,), (2.0,)),
    ),
    outputs=(3, 4),
)


# -- the IR ----------------------------------------------------------------------------------------
def test_a_block_knows_its_values_scalars_and_key() -> None:
    assert BLOCK.values == (spec((2, 1)), spec((1, 3)), spec((2, 3)), spec((2, 3)), spec((2, 3), DType.BOOL))
    assert BLOCK.scalars == (1.0, 2.0)
    other = ElementwiseBlock(
        BLOCK.inputs,
        (BLOCK.steps[0], ElementwiseStep("float_add_scalar", (2,), (5.0,)), BLOCK.steps[2]),
        BLOCK.outputs,
    )
    assert other != BLOCK
    assert other.key == BLOCK.key
    assert hash(BLOCK) == hash(ElementwiseBlock(BLOCK.inputs, BLOCK.steps, BLOCK.outputs))
    with pytest.raises(AttributeError):
        BLOCK.outputs = (3,)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("inputs", "steps", "outputs", "message"),
    [
        ((spec((2,)),), (ElementwiseStep("float_matmul", (0, 0)),), (1,), "not an op of ELEMENTWISE_OPS"),
        ((spec((2,)),), (ElementwiseStep("float_add", (0,)),), (1,), "takes 2 values and 0 scalars"),
        ((spec((2,)),), (ElementwiseStep("float_add_scalar", (0,)),), (1,), "takes 1 values and 1 scalars"),
        ((spec((2,)),), (ElementwiseStep("float_exp", (1,)),), (1,), "value 1 is not made before it"),
        ((spec((2,), DType.I64),), (ElementwiseStep("float_exp", (0,)),), (1,), "takes Float tensors"),
        (
            (spec((2,)), spec((2,), DType.F64)),
            (ElementwiseStep("float_add", (0, 1)),),
            (2,),
            "different dtypes",
        ),
        ((spec((2,)), spec((1, 2))), (ElementwiseStep("float_add", (0, 1)),), (2,), "different ranks"),
        ((spec((2,)), spec((3,))), (ElementwiseStep("float_add", (0, 1)),), (2,), "do not broadcast"),
        (
            (spec((2,)), spec((1,))),
            (ElementwiseStep("relu_backward", (0, 1)),),
            (2,),
            "operands of one shape",
        ),
        ((spec((2,)),), (ElementwiseStep("float_add_scalar", (0,), ("1",)),), (1,), "is not a number"),  # type: ignore[arg-type]
        ((spec((2,)),), (ElementwiseStep("float_exp", (0,)),), (), "at least one value"),
        ((spec((2,)),), (ElementwiseStep("float_exp", (0,)),), (2,), "output 2"),
    ],
)
def test_a_block_that_breaks_the_rules_is_rejected(
    inputs: tuple[TensorSpec, ...], steps: tuple[ElementwiseStep, ...], outputs: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ElementwiseBlock(inputs, steps, outputs)


def test_broadcasting_and_bool_and_int_steps() -> None:
    block = ElementwiseBlock(
        inputs=(spec((4, 1), DType.I32), spec((1, 5), DType.I32)),
        steps=(ElementwiseStep("int_add", (0, 1)), ElementwiseStep("int_lower_elem", (2,), (3,)),
               ElementwiseStep("bool_not", (3,))),
        outputs=(4,),
    )  # fmt: skip
    assert block.values[2] == spec((4, 5), DType.I32)
    assert block.values[4] == spec((4, 5), DType.BOOL)


# -- the hook ---------------------------------------------------------------------------------------
def test_the_default_hook_gives_no_plan_and_the_block_runs_op_by_op() -> None:
    backend = Uncompiled()
    device = backend.device()
    assert backend.compile_elementwise(BLOCK, device) is None
    x, y = np.array([[1.0], [2.0]], np.float32), np.array([[0.0, 0.5, 1.0]], np.float32)
    summed, greater = run_op_by_op(backend, BLOCK, [x, y], BLOCK.scalars)
    np.testing.assert_array_equal(summed, x * y + 1)
    np.testing.assert_array_equal(greater, x * y + 1 > 2)


def test_a_decorator_gets_the_inner_backends_plan() -> None:
    Toy.compiled.clear()
    backend = Identity(Toy())
    device = backend.device()
    plan = backend.compile_elementwise(BLOCK, device)
    assert plan is not None
    assert Toy.compiled == [BLOCK]
    x = Tensor.from_data([[1.0], [2.0]], device, F32)
    y = Tensor.from_data([[0.0, 0.5, 1.0]], device, F32)
    summed, greater = plan([x.primitive, y.primitive], (3.0, 2.5))  # scalars given at the call
    assert Tensor.from_primitive(summed, device).tolist() == [[3.0, 3.5, 4.0], [3.0, 4.0, 5.0]]
    assert Tensor.from_primitive(greater, device).tolist() == [[True, True, True], [True, True, True]]
    assert summed.dtype == np.float32
    assert greater.dtype == np.bool_


def test_every_table_op_compiles_to_its_reference(rng: np.random.Generator) -> None:
    backend = Toy()
    device = backend.device()
    for name, op in ELEMENTWISE_OPS.items():
        if op.kind is not Kind.FLOAT or not op.broadcasts:
            continue
        low, high = op.domain[0]
        inputs = [rng.uniform(low, high, (3, 4)) for _ in range(op.arity)]
        scalars = tuple(
            float(np.mean(r)) if name != "float_powi_scalar" else 2 for r in op.domain[op.arity :]
        )
        block = ElementwiseBlock(
            tuple(spec((3, 4), DType.F64) for _ in inputs),
            (ElementwiseStep(name, tuple(range(op.arity)), scalars),),
            (op.arity,),
        )
        plan = backend.compile_elementwise(block, device)
        assert plan is not None
        (out,) = plan(inputs, scalars)
        (expected,) = run_op_by_op(backend, block, inputs, scalars)
        np.testing.assert_allclose(out, expected, rtol=1e-12, err_msg=name)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(11)


def test_the_conformance_suite_runs_a_backends_plans(run_kit: RunKit) -> None:
    hook = "burn_backend.testing.core.test_elementwise_table"
    passed = run_kit("--pyargs", hook, "--backend", "test_compile_hook:Toy()", "-k", "composed_references")
    assert passed.returncode == 0, passed.output[-3000:]
    assert passed.count("passed") == 4
    failed = run_kit(
        "--pyargs", hook, "--backend", "test_compile_hook:WrongToy()", "-k", "composed_references"
    )
    assert failed.count("failed") == 4, failed.output[-3000:]
