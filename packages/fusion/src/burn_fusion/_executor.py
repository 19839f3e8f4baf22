"""The executor: runs a stream's pending ops, fused once their relative signature has recurred.

The *relative signature* of a run of pending ops is what stays the same from one training step to the
next: each op's name, the values it reads renumbered from 0 in order of appearance (external inputs get
``~0, ~1, ...``, op results the op's position), its number of scalars (not their values), the dtype of
each external input and its shape with every size above 1 replaced by a placeholder (sizes that are
equal share one), and which results are still referenced (``Node.alive``). New data, new scalars and new
batch sizes give the same signature.

A signature seen fewer than ``compile_after`` times runs op by op on the inner backend (dead results
skipped); after that its ``StreamPlan`` is built once and cached: the live results grouped by shape,
each group the backward slice of its outputs (an ``ElementwiseBlock``), compiled by the inner backend's
``compile_elementwise`` once per set of concrete input shapes.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burn_backend.kit import (
    ElementwiseBlock,
    ElementwisePlan,
    ElementwiseStep,
    TensorSpec,
    run_op_by_op,
)

if TYPE_CHECKING:
    from burn_backend import Backend, Device

    from ._stream import PendingOp
    from ._tensor import Node

Signature = tuple[tuple[str, tuple[int, ...], int], ...]

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


class Group:
    """One block of a plan: the live results of one shape and the ops they need.

    Attributes:
        sources: where each block input comes from: ``~i`` the stream's external input ``i``, ``k`` the
            result of op ``k`` (made by an earlier group).
        steps: the ops of the block, by position in the stream, in order.
        args: each step's operands as block values (inputs first, then steps).
        outputs: the ops whose results leave the block (live ones), by position.
        compiled: per tuple of concrete input shapes, the block and the inner backend's plan for it
            (``None``: the inner backend has no compiler for it; the block runs op by op).
    """

    __slots__ = ("args", "compiled", "outputs", "sources", "steps")

    def __init__(
        self, sources: list[int], steps: list[int], args: list[tuple[int, ...]], outputs: list[int]
    ) -> None:
        self.sources = sources
        self.steps = steps
        self.args = args
        self.outputs = outputs
        self.compiled: dict[tuple[tuple[int, ...], ...], tuple[ElementwiseBlock, ElementwisePlan | None]] = {}


class StreamPlan:
    """How to run every stream of one relative signature: its groups, in dependency order.

    Args:
        ops: the pending ops of the first stream seen with this signature.
        signature: their relative signature.
        needed: the positions of the live results.
    """

    def __init__(self, ops: Sequence[PendingOp], signature: Signature, needed: tuple[int, ...]) -> None:
        by_shape: dict[tuple[int, ...], list[int]] = {}
        for k in needed:
            by_shape.setdefault(ops[k].out.shape, []).append(k)
        owner = {k: g for g, outputs in enumerate(by_shape.values()) for k in outputs}
        groups: list[Group] = []
        depends: list[set[int]] = []
        for g, outputs in enumerate(by_shape.values()):
            members: set[int] = set()
            pending = list(outputs)
            while pending:
                k = pending.pop()
                if k in members:
                    continue
                members.add(k)
                pending.extend(ref for ref in signature[k][1] if ref >= 0 and owner.get(ref, g) == g)
            steps = sorted(members)
            sources: list[int] = []
            numbers: dict[int, int] = {}
            for k in steps:
                for ref in signature[k][1]:
                    if (ref < 0 or ref not in members) and ref not in numbers:
                        numbers[ref] = len(sources)
                        sources.append(ref)
            for position, k in enumerate(steps):
                numbers[k] = len(sources) + position
            args = [tuple(numbers[ref] for ref in signature[k][1]) for k in steps]
            groups.append(Group(sources, steps, args, outputs))
            depends.append({owner[ref] for ref in sources if ref >= 0})
        self.groups: list[Group] = []
        done: set[int] = set()
        while len(done) < len(groups):
            for g, group in enumerate(groups):
                if g not in done and depends[g] <= done:
                    done.add(g)
                    self.groups.append(group)

    def run(
        self, executor: Executor, device: Device, ops: Sequence[PendingOp], externals: list[Node]
    ) -> None:
        """Compute every live result of ``ops`` (a stream of this plan's signature)."""
        inner = executor.inner
        produced: dict[int, Any] = {}
        for group in self.groups:
            sources = group.sources
            inputs = [externals[~s].value if s < 0 else produced[s] for s in sources]
            scalars = [value for k in group.steps for value in ops[k].scalars]
            if len(group.steps) == 1:
                operands = [inputs[a] for a in group.args[0]]
                outputs: Sequence[Any] = [getattr(inner, ops[group.steps[0]].name)(*operands, *scalars)]
            else:
                shapes = tuple(externals[~s].shape if s < 0 else ops[s].out.shape for s in sources)
                entry = group.compiled.get(shapes)
                if entry is None:
                    entry = group.compiled[shapes] = executor.compile(group, ops, externals, device)
                block, plan = entry
                if plan is None:
                    outputs = run_op_by_op(inner, block, inputs, scalars)
                else:
                    outputs = plan(inputs, scalars)
                    executor.stats["fused_blocks"] += 1
                    executor.stats["fused_ops"] += len(group.steps)
            for k, value in zip(group.outputs, outputs):
                produced[k] = value
                ops[k].out.value = value


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
        self._lock = threading.Lock()

    def run(self, ops: list[PendingOp], device: Device) -> None:
        """Compute every live result of ``ops`` on the inner backend's ``device``."""
        index: dict[Node, int] = {}
        externals: list[Node] = []
        signature = []
        for k, op in enumerate(ops):
            refs = []
            for node in op.args:
                ref = index.get(node)
                if ref is None:
                    ref = index[node] = ~len(externals)
                    externals.append(node)
                refs.append(ref)
            index[op.out] = k
            signature.append((op.name, tuple(refs), len(op.scalars)))
        needed = tuple(k for k, op in enumerate(ops) if op.out.alive())
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
                    plan = self.plans[key] = StreamPlan(ops, frozen, needed)
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
            args = [externals[~r].value if r < 0 else produced[r] for r in refs]
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
    ) -> tuple[ElementwiseBlock, ElementwisePlan | None]:
        """The block of ``group`` for the concrete shapes of this stream, and the inner backend's plan."""
        inputs = []
        for s in group.sources:
            node = externals[~s] if s < 0 else ops[s].out
            inputs.append(TensorSpec(node.dtype, node.shape))
        steps = tuple(
            ElementwiseStep(ops[k].name, args, tuple(_number(v) for v in ops[k].scalars))
            for k, args in zip(group.steps, group.args)
        )
        first = len(group.sources)
        position = {k: first + i for i, k in enumerate(group.steps)}
        block = ElementwiseBlock(tuple(inputs), steps, tuple(position[k] for k in group.outputs))
        self.stats["compiled"] += 1
        return block, self.inner.compile_elementwise(block, device)
