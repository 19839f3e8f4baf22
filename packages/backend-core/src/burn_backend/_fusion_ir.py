"""The IR of the fusion compile hook (``Backend.compile_elementwise``): a block of element-wise ops.

A decorator that defers ops (Fusion) cuts its op stream into blocks and hands each block to the inner
backend to compile. A block is plain, frozen, hashable data: the dtypes and shapes of its inputs, its
steps (each an entry of the element-wise op table applied to earlier values and scalars) and which
values leave it. Values are numbered: the inputs first (``0 .. len(inputs) - 1``), then one per step,
in order, so a step's ``args`` always refer backward and a block is a straight-line program.

An optional extension, for compilers that define the second hook ``compile_fused`` (``FUSED_HOOK``):
``ReduceBlock`` (element-wise steps and ``ReduceStep``s along one dim: softmax, layer norm),
``MatmulBlock`` (a matmul and an element-wise epilogue) and ``CastStep`` (a cast inside a block; an
element-wise block holding one goes to ``compile_fused`` too). ``run_fused_op_by_op`` runs any of them
op by op. Backends without the hook never see them.
"""

from __future__ import annotations

import math
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
``block.outputs`` order). An output may be a ``Deferred`` standing for its primitive; an input may then
be one of the ``Deferred`` values the same backend's plans returned."""


class Deferred:
    """A plan's output whose primitive is made only when something reads it.

    A compiler whose primitives cost the host more to make than its kernels take (a CuPy array per
    output of a tiny fused block) may return these instead: the caller (Fusion) keeps them, hands them
    back to the same backend's plans as they are, and calls ``resolve()`` wherever anything else reads
    the value (the backend's other ops, a user's read). Outputs nothing reads are never made into
    primitives at all.

    Example:
        >>> class Boxed(Deferred):
        ...     def __init__(self, value):
        ...         self.value = value
        ...
        ...     def resolve(self):
        ...         return self.value
        >>> Boxed(3).resolve()
        3
    """

    __slots__ = ()

    def resolve(self) -> Any:
        """The primitive this value stands for (the same object at every call)."""
        raise NotImplementedError(f"{type(self).__name__}.resolve")


def resolved(values: Sequence[Any]) -> list[Any]:
    """``values`` with every ``Deferred`` replaced by its primitive (what a plan-less caller passes
    to the backend's ops)."""
    return [value.resolve() if isinstance(value, Deferred) else value for value in values]


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
class CastStep(ElementwiseStep):
    """A cast of one value to ``dtype`` (``getattr(backend, op)(value, dtype)``): a step of a block
    that is no entry of the table.

    A block holding one is handed to the ``compile_fused`` hook (see ``FUSED_HOOK``), never to
    ``compile_elementwise``, so compilers written before casts existed never see one.

    Attributes:
        op: a name of ``CAST_OPS``.
        args: the value it converts, by number (one).
        dtype: the dtype of the result.

    Example:
        >>> CastStep("float_cast", (0,), dtype=DType.F64).dtype
        DType.F64
    """

    dtype: DType = DType.F32

    @property
    def entry(self) -> ElementwiseOp:
        """A cast has no table entry."""
        raise ValueError(f"{self.op} is a cast, not an entry of ELEMENTWISE_OPS")


CAST_OPS: dict[str, tuple[Kind, Kind]] = {
    "float_cast": (Kind.FLOAT, Kind.FLOAT),
    "float_into_int": (Kind.FLOAT, Kind.INT),
    "int_cast": (Kind.INT, Kind.INT),
    "int_into_float": (Kind.INT, Kind.FLOAT),
    "bool_into_float": (Kind.BOOL, Kind.FLOAT),
    "bool_into_int": (Kind.BOOL, Kind.INT),
}
"""The casts a block may hold (interface name -> the kinds it converts between)."""


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

    @property
    def has_casts(self) -> bool:
        """Whether a step is a ``CastStep`` (the block then goes to the ``compile_fused`` hook)."""
        return any(isinstance(step, CastStep) for step in self.steps)

    def __post_init__(self) -> None:
        values = list(self.inputs)
        for index, step in enumerate(self.steps):
            values.append(_result(step, values, f"step {index} ({step.op})"))
        _set_values(self, values)

    @property
    def scalars(self) -> tuple[Scalar, ...]:
        """Every step's scalars, in step order: what a plan receives as ``scalars``."""
        return tuple(value for step in self.steps for value in step.scalars)

    @property
    def key(self) -> tuple[Any, ...]:
        """The block with its scalar values left out: plans read scalars when called, so one plan
        serves every block of the same key (a cache of compiled plans is keyed by it)."""
        steps = tuple(
            (step.op, step.args, step.dtype if isinstance(step, CastStep) else len(step.scalars))
            for step in self.steps
        )
        return (self.inputs, steps, self.outputs)

    def loop_layout(self) -> tuple[tuple[int, ...], list[tuple[bool, ...]]] | None:
        """How a compiler walks the outputs: their shape with size-1 dims dropped and neighbouring dims
        of the same broadcast pattern merged (at least one dim), and for each input whether it spans each
        of those dims (False: it is broadcast along it). ``None`` where the outputs differ in shape.

        Example:
            A ``[64, 128, 28, 28]`` chain with a per-channel ``[1, 128, 1, 1]`` operand is a loop over
            ``[64, 128, 784]``:

            >>> x, c = TensorSpec(DType.F32, (64, 128, 28, 28)), TensorSpec(DType.F32, (1, 128, 1, 1))
            >>> ElementwiseBlock((x, c), (ElementwiseStep("float_mul", (0, 1)),), (2,)).loop_layout()
            ((64, 128, 784), [(True, True, True), (False, True, False)])
        """
        shapes = {self.values[ref].shape for ref in self.outputs}
        if len(shapes) != 1:
            return None
        (shape,) = shapes
        sizes: list[int] = []
        patterns: list[tuple[bool, ...]] = []
        for d, size in enumerate(shape):
            if size == 1:
                continue
            pattern = tuple(spec.shape[d] != 1 for spec in self.inputs)
            if patterns and patterns[-1] == pattern:
                sizes[-1] *= size
            else:
                sizes.append(size)
                patterns.append(pattern)
        if not sizes:
            sizes, patterns = [1], [tuple(True for _ in self.inputs)]
        return tuple(sizes), [tuple(pattern[i] for pattern in patterns) for i in range(len(self.inputs))]


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
    values = resolved(inputs)
    given = iter(scalars)
    for step in block.steps:
        if isinstance(step, CastStep):
            values.append(getattr(backend, step.op)(values[step.args[0]], step.dtype))
            continue
        operands = [values[ref] for ref in step.args] + [next(given) for _ in step.scalars]
        values.append(getattr(backend, step.op)(*operands))
    return [values[ref] for ref in block.outputs]


def _set_values(block: ElementwiseBlock | ReduceBlock, values: list[TensorSpec]) -> None:
    """Check a block's outputs against its values (inputs, then one per step) and store the values."""
    if not block.outputs:
        raise ValueError(f"a {type(block).__name__} returns at least one value")
    for ref in block.outputs:
        if not 0 <= ref < len(values):
            raise ValueError(f"output {ref}: the block has values 0 .. {len(values) - 1}")
    object.__setattr__(block, "values", tuple(values))


def _result(step: ElementwiseStep, values: list[TensorSpec], where: str) -> TensorSpec:
    """The spec of ``step``'s result, or a ValueError naming what is wrong."""
    if isinstance(step, CastStep):
        kinds = CAST_OPS.get(step.op)
        if kinds is None or len(step.args) != 1 or step.scalars:
            raise ValueError(f"{where}: not a cast of CAST_OPS on one value")
        if not 0 <= step.args[0] < len(values):
            raise ValueError(f"{where}: value {step.args[0]} is not made before it")
        spec = values[step.args[0]]
        if spec.kind is not kinds[0] or step.dtype.kind is not kinds[1]:
            raise ValueError(
                f"{where}: converts {kinds[0]!r} to {kinds[1]!r}, got {spec.dtype} to {step.dtype}"
            )
        return TensorSpec(step.dtype, spec.shape)
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


# -- blocks around an anchor: reductions and matmuls ------------------------------------------------
# An extension of the IR, used only by compilers that ask for it: a backend that compiles these blocks
# defines ``compile_fused(block, device)`` (the name in ``FUSED_HOOK``), beside ``compile_elementwise``,
# with the same contract (a plan, or ``None``: run the block op by op with ``run_fused_op_by_op``).
# Backends without it are never handed such a block, so existing compilers are unaffected.


class GivenUp(list[Any]):
    """The inputs of a plan call whose caller gives them up: ``plan(GivenUp(inputs), scalars)``.

    A plan may write its outputs into an input array of such a list that nothing else references (the
    caller keeps no other reference to it, and the list is not read after the call). Called with a
    plain list (or any other sequence), a plan never overwrites its inputs.
    """


FUSED_HOOK = "compile_fused"
"""The name of the optional compile hook for ``ReduceBlock`` and ``MatmulBlock``."""

FUSED_BLOCK_KINDS = frozenset({"elementwise", "int", "cast", "reduce", "matmul"})
"""The kinds of block a compiler may take on: float element-wise chains, chains of int or bool values,
chains with casts, reduce blocks, matmul blocks. A backend with the ``compile_fused`` hook that compiles
only some of them (and gives ``None`` for the rest, which then run op by op) names those in a class
attribute ``fused_block_kinds``; without one it is taken to compile them all. The conformance suite's
fusion section expects the fusion counters of the kinds a backend names to advance."""

REDUCE_OPS: dict[str, str] = {"float_sum_dim": "sum", "float_mean_dim": "mean", "float_max_dim": "max"}
"""The reductions a ``ReduceBlock`` may hold (interface name -> what it computes along the block's dim)."""


@dataclass(frozen=True)
class ReduceStep:
    """A reduction of one value along the block's ``dim`` (kept with size 1).

    Attributes:
        op: a name of ``REDUCE_OPS`` (``"float_sum_dim"``).
        args: the value it reduces, by number (one).
    """

    op: str
    args: tuple[int, ...]
    scalars: tuple[Scalar, ...] = ()
    """Always empty (the dim is the block's): here so that every step has the same attributes."""


@dataclass(frozen=True)
class ReduceBlock:
    """A straight-line program of element-wise ops and reductions along one dim: softmax, log-softmax,
    layer norm, or any reduction with an element-wise prologue and epilogue.

    Every value is either of the block's full shape ``F`` (the shape of what is reduced) or of ``F``
    with ``dim`` of size 1 (a reduced value); inputs broadcast to one of those.

    Attributes:
        inputs: the dtype and shape of each input tensor.
        steps: ``ElementwiseStep`` or ``ReduceStep``, in order; step ``i`` makes value
            ``len(inputs) + i``.
        outputs: the values the block returns, by number.
        dim: the dim every ``ReduceStep`` reduces.

    Raises:
        ValueError: a step breaks the rules of ``ElementwiseBlock``, or a reduction is not of
            ``REDUCE_OPS``, not of a float value, or its dim is out of range.
    """

    inputs: tuple[TensorSpec, ...]
    steps: tuple[ElementwiseStep | ReduceStep, ...]
    outputs: tuple[int, ...]
    dim: int
    values: tuple[TensorSpec, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        values = list(self.inputs)
        for index, step in enumerate(self.steps):
            where = f"step {index} ({step.op})"
            if isinstance(step, ReduceStep):
                if step.op not in REDUCE_OPS or len(step.args) != 1 or step.scalars:
                    raise ValueError(f"{where}: not a reduction of REDUCE_OPS on one value")
                if not 0 <= step.args[0] < len(values):
                    raise ValueError(f"{where}: value {step.args[0]} is not made before it")
                spec = values[step.args[0]]
                if spec.kind is not Kind.FLOAT or not 0 <= self.dim < len(spec.shape):
                    raise ValueError(f"{where}: reduces a float value along one of its dims, got {spec}")
                shape = list(spec.shape)
                shape[self.dim] = 1
                values.append(TensorSpec(spec.dtype, tuple(shape)))
            else:
                values.append(_result(step, values, where))
        _set_values(self, values)

    @property
    def scalars(self) -> tuple[Scalar, ...]:
        """Every step's scalars, in step order: what a plan receives as ``scalars``."""
        return tuple(value for step in self.steps for value in step.scalars)

    @property
    def key(self) -> tuple[Any, ...]:
        """The block without its scalar values (see ``ElementwiseBlock.key``)."""
        steps = tuple(
            (type(step).__name__, step.op, step.args, getattr(step, "dtype", None), len(step.scalars))
            for step in self.steps
        )
        return ("reduce", self.inputs, steps, self.outputs, self.dim)

    def row_layout(self) -> tuple[int, int, int, list[tuple[int, int, int]]] | None:
        """How a compiler walks the block: the full shape as ``(A, D, B)``, the product of the dims
        before the reduced one, its size, and the product of those after (a row is one ``(a, b)``, its
        ``D`` values the reduction's), and each input's view on it (``A``, ``D``, ``B`` or 1 where it is
        broadcast). ``None`` where the block does not fit that frame: reductions of values of different
        shapes, a value of neither the full nor the reduced shape, an input broadcast along only part of
        the dims before (or after) the reduced one, an output that is an input, or an empty shape.

        Example:
            Layer norm over the last dim of ``[8, 16, 32]``, with a weight of ``[1, 1, 32]``:

            >>> x, w = TensorSpec(DType.F32, (8, 16, 32)), TensorSpec(DType.F32, (1, 1, 32))
            >>> steps = (ReduceStep("float_mean_dim", (0,)), ElementwiseStep("float_sub", (0, 2)),
            ...          ElementwiseStep("float_mul", (3, 1)))
            >>> ReduceBlock((x, w), steps, (4,), 2).row_layout()
            (128, 32, 1, [(128, 32, 1), (1, 32, 1)])
        """
        reduced = [self.values[step.args[0]].shape for step in self.steps if isinstance(step, ReduceStep)]
        if not reduced or len(set(reduced)) != 1:
            return None
        full = reduced[0]
        d = self.dim
        narrow = (*full[:d], 1, *full[d + 1 :])
        n_in = len(self.inputs)
        if any(spec.shape not in (full, narrow) for spec in self.values[n_in:]):
            return None
        if any(self.values[ref].shape not in (full, narrow) or ref < n_in for ref in self.outputs):
            return None
        if 0 in full:
            return None
        A, D, B = math.prod(full[:d]), full[d], math.prod(full[d + 1 :])
        views = []
        for spec in self.inputs:
            if len(spec.shape) != len(full):
                return None
            view = []
            for dims, size in ((range(d), A), (range(d, d + 1), D), (range(d + 1, len(full)), B)):
                spans = {spec.shape[i] != 1 for i in dims if full[i] != 1}
                if len(spans) > 1:
                    return None
                view.append(size if spans == {True} else 1)
            views.append((view[0], view[1], view[2]))
        return A, D, B, views


@dataclass(frozen=True)
class MatmulBlock:
    """A matrix product with an element-wise epilogue (a bias, an activation).

    The plan's inputs are ``lhs``, ``rhs``, then the epilogue's inputs after its first (value 0 of the
    epilogue is the product); its scalars are the epilogue's.

    Attributes:
        lhs, rhs: the operands (float, one dtype, one rank of at least 2).
        epilogue: the element-wise ops on the product.

    Raises:
        ValueError: the operands do not multiply, or the epilogue's first input is not the product.
    """

    lhs: TensorSpec
    rhs: TensorSpec
    epilogue: ElementwiseBlock

    def __post_init__(self) -> None:
        lhs, rhs = self.lhs, self.rhs
        if (
            lhs.dtype != rhs.dtype
            or lhs.kind is not Kind.FLOAT
            or len(lhs.shape) != len(rhs.shape)
            or len(lhs.shape) < 2
            or lhs.shape[-1] != rhs.shape[-2]
            or lhs.shape[:-2] != rhs.shape[:-2]
        ):
            raise ValueError(f"matmul of {lhs} and {rhs}: not float operands of one dtype that multiply")
        product = TensorSpec(lhs.dtype, (*lhs.shape[:-1], rhs.shape[-1]))
        if not self.epilogue.inputs or self.epilogue.inputs[0] != product:
            raise ValueError(f"the epilogue's first input must be the product {product}")

    @property
    def scalars(self) -> tuple[Scalar, ...]:
        """The epilogue's scalars."""
        return self.epilogue.scalars

    @property
    def key(self) -> tuple[Any, ...]:
        """The block without its scalar values (see ``ElementwiseBlock.key``)."""
        return ("matmul", self.lhs, self.rhs, self.epilogue.key)


FusedBlock = ElementwiseBlock | ReduceBlock | MatmulBlock


def run_fused_op_by_op(
    backend: Backend, block: FusedBlock, inputs: Sequence[Any], scalars: Sequence[Scalar]
) -> list[Any]:
    """Run any block one op at a time on ``backend`` (``run_op_by_op`` for every kind of block)."""
    values = resolved(inputs)
    if isinstance(block, MatmulBlock):
        product = backend.float_matmul(values[0], values[1])
        return run_op_by_op(backend, block.epilogue, [product, *values[2:]], scalars)
    if isinstance(block, ElementwiseBlock):
        return run_op_by_op(backend, block, values, scalars)
    given = iter(scalars)
    for step in block.steps:
        if isinstance(step, ReduceStep):
            values.append(getattr(backend, step.op)(values[step.args[0]], block.dim))
        elif isinstance(step, CastStep):
            values.append(getattr(backend, step.op)(values[step.args[0]], step.dtype))
        else:
            operands = [values[ref] for ref in step.args] + [next(given) for _ in step.scalars]
            values.append(getattr(backend, step.op)(*operands))
    return [values[ref] for ref in block.outputs]
