"""The executor: runs a stream's pending ops, fused once their relative signature has recurred.

The *relative signature* of a run of pending ops is what stays the same from one training step to the
next: each op's name, the values it reads renumbered from 0 in order of appearance (external inputs get
``~0, ~1, ...``, op results the op's position), its number of scalars (not their values), the dtype of
each external input and its shape with every size above 1 replaced by a placeholder (sizes that are
equal share one), and which results are still referenced (``Node.alive``). New data, new scalars and new
batch sizes give the same signature.

A signature seen fewer than ``compile_after`` times runs op by op on the inner backend (dead results
skipped); after that its ``StreamPlan`` is built once and cached: the needed ops cut into element-wise,
reduce and matmul groups (see ``StreamPlan``), each compiled by the inner backend
(``compile_elementwise``, or ``compile_fused`` for reduce and matmul blocks and blocks with casts) once
per set of concrete input shapes. A reduction's dim and a cast's dtype are part of the signature.

A plan's outputs may be ``Deferred`` (``burn_backend.kit``): they stay so in their nodes and go to the
same backend's plans as they are; the inner backend's ops get them resolved, and so does whoever reads
a tensor (``FusionTensor.materialize``).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burn_backend.kit import (
    CAST_OPS,
    FUSED_HOOK,
    REDUCE_OPS,
    CastStep,
    ElementwiseBlock,
    ElementwisePlan,
    ElementwiseStep,
    FusedBlock,
    GivenUp,
    MatmulBlock,
    ReduceBlock,
    ReduceStep,
    TensorSpec,
    resolved,
    run_fused_op_by_op,
)

if TYPE_CHECKING:
    from burn_backend import Backend, Device

    from ._stream import PendingOp
    from ._tensor import Node

Signature = tuple[tuple[str, tuple[int, ...], Any], ...]

DEFAULT_COMPILE_AFTER = 2
"""How many times a signature must be seen before its plan is built and compiled (the second time, by
default): one-off op chains never wait for a compiler. ``BURN_FUSION_COMPILE_AFTER`` overrides it."""
_MAX_COUNTED = 4096  # signatures counted but not yet compiled; forgotten beyond that


def compile_after_default() -> int:
    """``BURN_FUSION_COMPILE_AFTER`` if set (at least 1), else ``DEFAULT_COMPILE_AFTER``."""
    value = os.environ.get("BURN_FUSION_COMPILE_AFTER")
    return max(1, int(value)) if value else DEFAULT_COMPILE_AFTER


def _number(value: Any) -> int | float:
    if isinstance(value, (int, float)):
        return value
    item = getattr(value, "item", None)
    return item() if item is not None else float(value)


_REDUCE = frozenset(REDUCE_OPS)
_STRUCTURAL = _REDUCE | frozenset(CAST_OPS) | {"float_matmul"}  # scalars that are no plan scalars
_MATMUL = "float_matmul"


class Group:
    """One block of a plan: ops of the stream run as one kernel.

    Kinds: ``"ew"`` element-wise ops of one shape; ``"reduce"`` element-wise ops and reductions along
    one dim (every value of the full shape or of it reduced); ``"matmul"`` a matmul (first step) and
    element-wise ops of the product's shape (its epilogue).

    Attributes:
        kind: one of the kinds above.
        sources: where each block input comes from: ``~i`` the stream's external input ``i``, ``k`` the
            result of op ``k`` (made by an earlier group). A matmul group's first two are its operands.
        steps: the ops of the block, by position in the stream, in order.
        args: each step's operands as block values (inputs first, then steps; see ``block``).
        outputs: the ops whose results leave the block (live ones, or read by a later group).
        scalar_steps: the steps whose scalars the plan receives (not a reduction's dim).
        compiled: per tuple of concrete input shapes, the block and the inner backend's plan for it
            (``None``: the inner backend has no compiler for it; the block runs op by op).
    """

    __slots__ = (
        "args", "compiled", "dim", "kind", "method", "outputs", "release", "scalar_steps", "single",
        "sources", "steps",
    )  # fmt: skip

    def __init__(
        self, kind: str, dim: int, sources: list[int], steps: list[int], signature: Signature
    ) -> None:
        self.kind = kind
        self.dim = dim
        self.sources = sources
        self.steps = steps
        self.outputs: list[int] = []
        self.single = len(steps) == 1
        self.method: Any = None  # a single op's method on the inner backend, once looked up
        self.release: list[int] = []
        """External inputs read for the last time here (``~i``): where no tensor refers to one any more
        and no other stream reads it, the stream gives up its value before the plan runs, so that the
        plan may write an output into it (``compile_elementwise`` plans check that nobody else holds
        it)."""
        numbers: dict[int, int] = {}
        if kind == "matmul":
            # the epilogue's values: the product, the other sources, then the steps after the matmul
            numbers[steps[0]] = 0
            for i, ref in enumerate(sources[2:]):
                numbers[ref] = 1 + i
            for position, k in enumerate(steps[1:]):
                numbers[k] = len(sources) - 1 + position
            self.args = [tuple(numbers[ref] for ref in signature[k][1]) for k in steps[1:]]
        else:
            for i, ref in enumerate(sources):
                numbers[ref] = i
            for position, k in enumerate(steps):
                numbers[k] = len(sources) + position
            self.args = [tuple(numbers[ref] for ref in signature[k][1]) for k in steps]
        self.scalar_steps = [k for k in steps if signature[k][0] not in _STRUCTURAL]
        self.compiled: dict[tuple[tuple[int, ...], ...], tuple[FusedBlock, ElementwisePlan | None]] = {}


class _Draft:
    """A group while the plan is made."""

    __slots__ = ("deps", "dim", "full", "kind", "members", "narrow", "shape")

    def __init__(self, kind: str, shape: tuple[int, ...], dim: int = -1) -> None:
        self.kind = kind
        self.shape = shape  # ew/matmul: every value's shape; reduce: the full shape
        self.dim = dim
        self.full = shape
        self.narrow = (*shape[:dim], 1, *shape[dim + 1 :]) if dim >= 0 else shape
        self.members: list[int] = []
        self.deps: set[int] = set()

    def reduce_along(self, dim: int) -> None:
        self.kind, self.dim = "reduce", dim
        self.narrow = (*self.full[:dim], 1, *self.full[dim + 1 :])


class StreamPlan:
    """How to run every stream of one relative signature: its groups, in dependency order.

    The needed ops (the backward slice of the live results) are taken in stream order; each joins the
    group of one of its operands (or the last element-wise group of its shape) where it fits (an
    element-wise op of the group's shape, of a reduce group's full or reduced shape, a reduction of an
    element-wise or reduce group's values along the group's dim) and where joining makes no cycle
    between groups; else it starts a group. Matmuls start a group; their epilogue joins it.

    Args:
        ops: the pending ops of the first stream seen with this signature.
        signature: their relative signature.
        needed: the positions of the live results.
        externals: the stream's external inputs (``~i``), for their shapes.
    """

    def __init__(
        self,
        ops: Sequence[PendingOp],
        signature: Signature,
        needed: tuple[int, ...],
        externals: Sequence[Node],
    ) -> None:
        def shape_of(ref: int) -> tuple[int, ...]:
            return externals[~ref].shape if ref < 0 else ops[ref].out.shape

        required: set[int] = set()
        stack = list(needed)
        while stack:
            k = stack.pop()
            if k not in required:
                required.add(k)
                stack.extend(ref for ref in signature[k][1] if ref >= 0)
        drafts: list[_Draft] = []
        member_of: dict[int, int] = {}
        last_by_shape: dict[tuple[int, ...], int] = {}

        def reaches(h: int, g: int) -> bool:  # whether group h depends on group g
            seen: set[int] = set()
            todo = [h]
            while todo:
                x = todo.pop()
                if x == g:
                    return True
                if x not in seen:
                    seen.add(x)
                    todo.extend(drafts[x].deps)
            return False

        for k in sorted(required):
            name, refs, _ = signature[k]
            shape = ops[k].out.shape
            arg_groups = list(dict.fromkeys(member_of[r] for r in reversed(refs) if r >= 0))
            candidates = list(arg_groups)
            if name in _REDUCE:
                kind, full, dim = "reduce", shape_of(refs[0]), int(ops[k].scalars[0])
            elif name == _MATMUL:
                kind, full, dim = "matmul", shape, -1
                candidates = []
            else:
                kind, full, dim = "ew", shape, -1
                last = last_by_shape.get(shape)
                if last is not None and last not in candidates:
                    candidates.append(last)
            chosen = None
            for g in candidates:
                draft = drafts[g]
                if kind == "reduce":
                    fits = draft.full == full and (
                        draft.kind == "ew" or (draft.kind == "reduce" and draft.dim == dim)
                    )
                elif draft.kind == "reduce":
                    fits = shape in (draft.full, draft.narrow)
                else:
                    fits = draft.shape == shape
                if fits and all(h == g or not reaches(h, g) for h in arg_groups):
                    chosen = g
                    break
            if chosen is None:
                chosen = len(drafts)
                drafts.append(_Draft(kind, full, dim))
            draft = drafts[chosen]
            if kind == "reduce" and draft.kind == "ew":
                draft.reduce_along(dim)
            draft.members.append(k)
            draft.deps.update(h for h in arg_groups if h != chosen)
            member_of[k] = chosen
            if draft.kind == "ew":
                last_by_shape[shape] = chosen
        order: list[int] = []
        placed: set[int] = set()
        while len(order) < len(drafts):
            for g, draft in enumerate(drafts):
                if g not in placed and draft.deps <= placed:
                    placed.add(g)
                    order.append(g)
        live = set(needed)
        read_by: dict[int, set[int]] = {}
        for k in required:
            for ref in signature[k][1]:
                if ref >= 0:
                    read_by.setdefault(ref, set()).add(member_of[k])
        self.groups: list[Group] = []
        for g in order:
            draft = drafts[g]
            members = draft.members
            inside = set(members)
            if draft.kind == "matmul":
                sources = list(signature[members[0]][1])
                rest = members[1:]
            else:
                sources, rest = [], members
            for k in rest:
                for ref in signature[k][1]:
                    if ref not in inside and ref not in sources[2 if draft.kind == "matmul" else 0 :]:
                        sources.append(ref)
            group = Group(draft.kind, draft.dim, sources, members, signature)
            group.outputs = [k for k in members if k in live or read_by.get(k, set()) - {g}]
            self.groups.append(group)
        # external inputs read for the last time by a compiled group: their values may be given up
        last_reader: dict[int, Group] = {}
        for group in self.groups:
            for ref in group.sources:
                if ref < 0:
                    last_reader[ref] = group
        for ref, group in last_reader.items():
            if len(group.steps) > 1:
                group.release.append(ref)

    def run(
        self, executor: Executor, device: Device, ops: Sequence[PendingOp], externals: list[Node]
    ) -> None:
        """Compute every live result of ``ops`` (a stream of this plan's signature)."""
        inner = executor.inner
        produced: dict[int, Any] = {}
        fused = fused_ops = 0
        for group in self.groups:
            sources = group.sources
            inputs: list[Any] = (list if group.single else GivenUp)(
                [externals[~s].value if s < 0 else produced[s] for s in sources]
            )
            for s in group.release:
                node = externals[~s]
                if not node.shared and not node.alive():
                    node.value = None
            if group.single:
                k = group.steps[0]
                op = ops[k]
                method = group.method
                if method is None:
                    method = group.method = getattr(inner, op.name)
                if group.kind != "matmul":
                    inputs = [inputs[a] for a in group.args[0]]
                produced[k] = op.out.value = method(*resolved(inputs), *op.scalars)
                continue
            scalars = [value for k in group.scalar_steps for value in ops[k].scalars]
            shapes = tuple(externals[~s].shape if s < 0 else ops[s].out.shape for s in sources)
            entry = group.compiled.get(shapes)
            if entry is None:
                entry = group.compiled[shapes] = executor.compile(group, ops, externals, device)
            block, plan = entry
            outputs: Sequence[Any]
            if plan is None:
                outputs = run_fused_op_by_op(inner, block, inputs, scalars)
            else:
                outputs = plan(inputs, scalars)  # GivenUp: inputs read for the last time may be reused
                fused += 1
                fused_ops += len(group.steps)
                if group.kind != "ew":
                    executor.stats[f"fused_{group.kind}"] += 1
            for k, value in zip(group.outputs, outputs):
                produced[k] = ops[k].out.value = value
        if fused:
            stats = executor.stats
            stats["fused_blocks"] += fused
            stats["fused_ops"] += fused_ops


class Executor:
    """Runs the pending ops of every stream of one ``Fusion`` backend, with its cache of plans.

    Args:
        inner: the backend that computes.
        compile_after: how many times a signature is seen before it is fused (see the module).

    Attributes:
        stats: counters: ``op_by_op`` (ops run one at a time), ``fused_blocks`` and ``fused_ops``
            (blocks run by a compiled plan, and the ops they held), ``plans`` (stream plans built),
            ``compiled`` (blocks handed to the compile hook).
    """

    def __init__(self, inner: Backend, compile_after: int) -> None:
        self.inner = inner
        self.compile_after = compile_after
        self.plans: dict[Any, StreamPlan] = {}
        self.counts: dict[Any, int] = {}
        self.stats: Counter[str] = Counter()
        self.trace: list[Any] | None = None
        """Where set (by ``replay``), each run appends its relative signature and its scalars."""
        self._lock = threading.Lock()

    def run(self, ops: list[PendingOp], device: Device) -> None:
        """Compute every live result of ``ops`` on the inner backend's ``device``."""
        index: dict[Node, int] = {}
        externals: list[Node] = []
        signature = []
        live = []
        # the per-op cost of a flush: kept to plain loads and stores (a tiny op's whole cost is host time)
        for k, op in enumerate(ops):
            refs = []
            for node in op.args:
                ref = index.get(node)
                if ref is None:
                    ref = index[node] = ~len(externals)
                    externals.append(node)
                refs.append(ref)
            out = op.out
            index[out] = k
            signature.append((op.name, tuple(refs), op.key))
            handle = out.handle  # Node.alive, inlined
            if handle is not None and handle() is not None:
                live.append(k)
        needed = tuple(live)
        if self.trace is not None:
            self.trace.append((signature, needed, [op.scalars for op in ops], [n.shape for n in externals]))
        if not needed:
            return
        sizes: dict[int, int] = {}
        specs = tuple(
            (node.dtype, tuple(d if d < 2 else sizes.setdefault(d, -2 - len(sizes)) for d in node.shape))
            for node in externals
        )
        frozen = tuple(signature)
        key = (frozen, specs, needed)
        plan = self.plans.get(key)
        if plan is None and len(ops) == 1:
            self.op_by_op(ops, externals, frozen, needed)
            return
        if plan is None:
            with self._lock:
                count = self.counts.get(key, 0) + 1
                if count < self.compile_after:
                    if len(self.counts) >= _MAX_COUNTED:
                        self.counts.clear()
                    self.counts[key] = count
                    plan = None
                else:
                    self.counts.pop(key, None)
                    plan = self.plans[key] = StreamPlan(ops, frozen, needed, externals)
                    self.stats["plans"] += 1
            if plan is None:
                self.op_by_op(ops, externals, frozen, needed)
                return
        plan.run(self, device, ops, externals)

    def op_by_op(
        self, ops: Sequence[PendingOp], externals: list[Node], signature: Signature, needed: tuple[int, ...]
    ) -> None:
        """Run the ops one at a time on the inner backend, skipping those no live result needs and
        releasing each intermediate after its last use."""
        inner = self.inner
        live = set(needed)
        last_use: dict[int, int] = {}
        for k in range(len(ops) - 1, -1, -1):
            if k in live:
                for ref in signature[k][1]:
                    if ref >= 0:
                        live.add(ref)
                        last_use.setdefault(ref, k)
        produced: dict[int, Any] = {}
        ran = 0
        for k, op in enumerate(ops):
            if k not in live:
                continue
            refs = signature[k][1]
            args = resolved([externals[~r].value if r < 0 else produced[r] for r in refs])
            value = getattr(inner, op.name)(*args, *op.scalars)
            ran += 1
            if op.out.alive():
                op.out.value = value
            if k in last_use:
                produced[k] = value
            for r in refs:
                if r >= 0 and last_use.get(r) == k:
                    produced.pop(r, None)
        self.stats["op_by_op"] += ran

    def compile(
        self, group: Group, ops: Sequence[PendingOp], externals: list[Node], device: Device
    ) -> tuple[FusedBlock, ElementwisePlan | None]:
        """The block of ``group`` for the concrete shapes of this stream, and the inner backend's plan."""
        specs = []
        for s in group.sources:
            node = externals[~s] if s < 0 else ops[s].out
            specs.append(TensorSpec(node.dtype, node.shape))
        self.stats["compiled"] += 1
        if group.kind == "matmul":
            product = ops[group.steps[0]].out
            epilogue_steps = group.steps[1:]
            inputs = (TensorSpec(product.dtype, product.shape), *specs[2:])
        else:
            epilogue_steps = group.steps
            inputs = tuple(specs)
        steps: list[ElementwiseStep | ReduceStep] = []
        for k, args in zip(epilogue_steps, group.args):
            name = ops[k].name
            if name in _REDUCE:
                steps.append(ReduceStep(name, args))
            elif name in CAST_OPS:
                steps.append(CastStep(name, args, dtype=ops[k].scalars[0]))
            else:
                steps.append(ElementwiseStep(name, args, tuple(_number(v) for v in ops[k].scalars)))
        first = len(inputs)
        position = {k: first + i for i, k in enumerate(epilogue_steps)}
        if group.kind == "matmul":
            position[group.steps[0]] = 0
        outputs = tuple(position[k] for k in group.outputs)
        block: FusedBlock
        hook = getattr(self.inner, FUSED_HOOK, None)
        if group.kind == "ew":
            elementwise = ElementwiseBlock(inputs, tuple(steps), outputs)  # type: ignore[arg-type]
            if elementwise.has_casts:  # only for compilers that know casts
                return elementwise, (None if hook is None else hook(elementwise, device))
            return elementwise, self.inner.compile_elementwise(elementwise, device)
        if group.kind == "reduce":
            block = ReduceBlock(inputs, tuple(steps), outputs, group.dim)
        else:
            epilogue = ElementwiseBlock(inputs, tuple(steps), outputs)  # type: ignore[arg-type]
            block = MatmulBlock(specs[0], specs[1], epilogue)
        return block, (None if hook is None else hook(block, device))
