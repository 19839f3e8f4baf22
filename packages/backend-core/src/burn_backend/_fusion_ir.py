"""The IR of the fusion compile hook (``Backend.compile_elementwise``): a block of element-wise ops.

A decorator that defers ops (Fusion) cuts its op stream into blocks and hands each block to the inner
backend to compile. A block is plain, frozen, hashable data: the dtypes and shapes of its inputs, its
steps (each an entry of the element-wise op table applied to earlier values and scalars) and which
values leave it. Values are numbered: the inputs first (``0 .. len(inputs) - 1``), then one per step,
in order, so a step's ``args`` always refer backward and a block is a straight-line program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._dtype import DType, Kind
from ._elementwise import ELEMENTWISE_OPS, ElementwiseOp

if TYPE_CHECKING:
    from ._backend import Backend

Scalar = float | int | bool
ElementwisePlan = Callable[[Sequence[Any], Sequence[Scalar]], Sequence[Any]]
"""A compiled block: ``plan(inputs, scalars)`` takes the input primitives (in ``block.inputs``
order) and the scalar values (in ``block.scalars`` order) and returns the output primitives (in
``block.outputs`` order)."""


@dataclass(frozen=True)
class TensorSpec:
    """What a block knows of a tensor: its dtype and shape.

    Example:
        >>> TensorSpec(DType.F32, (2, 3)).kind
        Float
    """

    dtype: DType
    shape: tuple[int, ...]

    @property
    def kind(self) -> Kind:
        """The tensor's kind."""
        return self.dtype.kind


@dataclass(frozen=True)
class ElementwiseStep:
    """One op of a block.

    Attributes:
        op: the name of an ``ELEMENTWISE_OPS`` entry (``"float_mul_scalar"``).
        args: the values it reads (``op.arity`` of them), by number.
        scalars: its scalar operands (``op.scalars`` of them), after the tensors as in the interface.

    Example:
        >>> ElementwiseStep("float_mul_scalar", (0,), (2.0,)).entry.expression
        '{0} * {1}'
    """

    op: str
    args: tuple[int, ...]
    scalars: tuple[Scalar, ...] = ()

    @property
    def entry(self) -> ElementwiseOp:
        """The op's table entry."""
        return ELEMENTWISE_OPS[self.op]


@dataclass(frozen=True)
class ElementwiseBlock:
    """A straight-line program of element-wise ops: what a decorator hands its inner backend to
    compile through ``Backend.compile_elementwise``.

    Binary ops broadcast as the interface's do (operands of one rank whose dims are equal or 1), those
    whose entry says so (``broadcasts``). The
    block is checked when made: every op is in the table, takes the values and scalars it declares,
    of its kind and of one dtype, and refers only to values made before it.

    Attributes:
        inputs: the dtype and shape of each input tensor (values ``0 .. len(inputs) - 1``).
        steps: the ops, in order; step ``i`` makes value ``len(inputs) + i``.
        outputs: the values the block returns, by number.

    Raises:
        ValueError: the block breaks one of the rules above.

    Example:
        ``x * y + 1`` for two f32 tensors of shape ``[4]``:

        >>> x = TensorSpec(DType.F32, (4,))
        >>> mul, add = ElementwiseStep("float_mul", (0, 1)), ElementwiseStep("float_add_scalar", (2,), (1.0,))
        >>> block = ElementwiseBlock(inputs=(x, x), steps=(mul, add), outputs=(3,))
        >>> block.values[3], block.scalars
        (TensorSpec(dtype=DType.F32, shape=(4,)), (1.0,))
    """

    inputs: tuple[TensorSpec, ...]
    steps: tuple[ElementwiseStep, ...]
    outputs: tuple[int, ...]
    values: tuple[TensorSpec, ...] = field(init=False, repr=False, compare=False)
    """The dtype and shape of every value: the inputs, then one per step."""

    def __post_init__(self) -> None:
        values = list(self.inputs)
        for index, step in enumerate(self.steps):
            values.append(_result(step, values, f"step {index} ({step.op})"))
        if not self.outputs:
            raise ValueError("an element-wise block returns at least one value")
        for ref in self.outputs:
            if not 0 <= ref < len(values):
                raise ValueError(f"output {ref}: the block has values 0 .. {len(values) - 1}")
        object.__setattr__(self, "values", tuple(values))

    @property
    def scalars(self) -> tuple[Scalar, ...]:
        """Every step's scalars, in step order: what a plan receives as ``scalars``."""
        return tuple(value for step in self.steps for value in step.scalars)

    @property
    def key(self) -> tuple[Any, ...]:
        """The block with its scalar values left out: plans read scalars when called, so one plan
        serves every block of the same key (a cache of compiled plans is keyed by it)."""
        steps = tuple((step.op, step.args, len(step.scalars)) for step in self.steps)
        return (self.inputs, steps, self.outputs)


def run_op_by_op(
    backend: Backend, block: ElementwiseBlock, inputs: Sequence[Any], scalars: Sequence[Scalar]
) -> list[Any]:
    """Run ``block`` one op at a time on ``backend``: what a decorator does where the compile hook gave
    no plan, and what a plan must compute.

    Args:
        backend: the backend whose primitives ``inputs`` are.
        block: the ops.
        inputs: a primitive per block input.
        scalars: the scalar values, in ``block.scalars`` order.

    Returns:
        The primitives of ``block.outputs``, in order.
    """
    values = list(inputs)
    given = iter(scalars)
    for step in block.steps:
        operands = [values[ref] for ref in step.args] + [next(given) for _ in step.scalars]
        values.append(getattr(backend, step.op)(*operands))
    return [values[ref] for ref in block.outputs]


def _result(step: ElementwiseStep, values: list[TensorSpec], where: str) -> TensorSpec:
    """The spec of ``step``'s result, or a ValueError naming what is wrong."""
    op = ELEMENTWISE_OPS.get(step.op)
    if op is None:
        raise ValueError(f"{where}: not an op of ELEMENTWISE_OPS")
    if len(step.args) != op.arity or len(step.scalars) != op.scalars:
        raise ValueError(
            f"{where}: takes {op.arity} values and {op.scalars} scalars, "
            f"got {len(step.args)} and {len(step.scalars)}"
        )
    for ref in step.args:
        if not 0 <= ref < len(values):
            raise ValueError(f"{where}: value {ref} is not made before it (values 0 .. {len(values) - 1})")
    for value in step.scalars:
        if not isinstance(value, (int, float)):
            raise ValueError(f"{where}: scalar {value!r} is not a number")
    operands = [values[ref] for ref in step.args]
    if any(spec.kind is not op.kind for spec in operands):
        raise ValueError(f"{where}: takes {op.kind!r} tensors, got {[spec.dtype for spec in operands]}")
    if len({spec.dtype for spec in operands}) != 1:
        raise ValueError(f"{where}: operands of different dtypes {[spec.dtype for spec in operands]}")
    if len({len(spec.shape) for spec in operands}) != 1:
        raise ValueError(f"{where}: operands of different ranks {[spec.shape for spec in operands]}")
    if not op.broadcasts and len({spec.shape for spec in operands}) != 1:
        raise ValueError(f"{where}: takes operands of one shape, got {[spec.shape for spec in operands]}")
    shape = []
    for sizes in zip(*(spec.shape for spec in operands)):
        grown = {size for size in sizes if size != 1}
        if len(grown) > 1:
            raise ValueError(f"{where}: shapes {[spec.shape for spec in operands]} do not broadcast")
        shape.append(grown.pop() if grown else 1)
    return TensorSpec(DType.BOOL if op.bool_result else operands[0].dtype, tuple(shape))
