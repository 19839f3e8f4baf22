"""How a reduce block runs along its rows: the passes a compiler renders into a kernel.

A ``ReduceBlock`` seen through ``ReduceBlock.row_layout`` is a set of rows (every index but the reduced
dim's), each of ``D`` values. Its steps become, per row, a straight-line program: loads of the inputs that
do not span the row, steps on reduced values, and loops over the row's values that compute the values of
the full shape, fold them into reductions, and write them. A loop ends where a step needs a reduction that
it accumulates; a value of the full shape that a later loop reads is read back from the output it was
written to, or kept in a scratch row. NdArray's and Cuda's compilers render the same program, one into
numba and one into CUDA C.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._fusion_ir import REDUCE_OPS, ReduceBlock, ReduceStep

RowItem = tuple[Any, ...]
"""One instruction of a loop's body or of the row program; see ``RowLoop`` and ``RowProgram``."""


@dataclass
class RowLoop:
    """One pass over the values of a row.

    Attributes:
        reductions: ``(k, kind, ref)``: value ``k`` is the ``kind`` (``"sum"``, ``"mean"``, ``"max"``) of
            value ``ref`` over the row; accumulate from the start of the loop, final after it.
        body: for each position ``j`` of the row, in order: ``("input", j)`` read input ``j`` (it spans
            the row); ``("reload", ref, o)`` read value ``ref`` that an earlier loop wrote, from output
            ``o`` (``None``: from its scratch row); ``("step", k)`` compute element-wise step value ``k``;
            ``("fold", k, ref)`` fold value ``ref`` into reduction ``k``; ``("output", o, ref)`` write
            value ``ref`` to output ``o``; ``("keep", ref)`` write value ``ref`` to its scratch row.
    """

    reductions: list[tuple[int, str, int]] = field(default_factory=list)
    body: list[RowItem] = field(default_factory=list)


@dataclass
class RowProgram:
    """What each row runs, in order: ``("input", j)`` (an input that does not span the row, read once),
    ``("step", k)`` (a step on reduced values), a ``RowLoop``, and at the end ``("output", o, ref)`` for
    the outputs of the reduced shape.

    Attributes:
        items: the program.
        kept: the values kept in scratch rows (read by a later loop, not an output).
    """

    items: list[RowItem | RowLoop]
    kept: list[int]


def row_program(block: ReduceBlock, views: list[tuple[int, int, int]], D: int) -> RowProgram:
    """The row program of ``block``, whose inputs have ``views`` on its ``(A, D, B)`` frame (as
    ``ReduceBlock.row_layout`` gives them)."""
    n_in = len(block.inputs)
    values = block.values
    full = values[next(s.args[0] for s in block.steps if isinstance(s, ReduceStep))].shape
    spans: dict[int, bool] = {j: views[j][1] == D for j in range(n_in)}
    for s, step in enumerate(block.steps):
        spans[n_in + s] = not isinstance(step, ReduceStep) and values[n_in + s].shape == full
    users: dict[int, list[int]] = {}
    for s, step in enumerate(block.steps):
        for ref in step.args:
            users.setdefault(ref, []).append(n_in + s)
    out_of: dict[int, list[int]] = {}
    for o, ref in enumerate(block.outputs):
        out_of.setdefault(ref, []).append(o)

    items: list[RowItem | RowLoop] = [("input", j) for j in range(n_in) if not spans[j]]
    written: dict[int, int | None] = {}  # value -> the output it was written to (None: its scratch row)
    kept: list[int] = []
    loop: RowLoop | None = None
    inside: set[int] = set()  # values of the open loop: made or loaded in it
    made: list[int] = []  # values of the full shape the open loop makes
    pending: set[int] = set()  # reductions the open loop accumulates

    def load(ref: int) -> None:
        assert loop is not None
        if not spans[ref] or ref in inside:
            return
        inside.add(ref)
        loop.body.append(("input", ref) if ref < n_in else ("reload", ref, written[ref]))

    def close() -> None:
        assert loop is not None
        for ref in made:
            if ref in out_of:
                loop.body += [("output", o, ref) for o in out_of[ref]]
                written[ref] = out_of[ref][0]
            elif any(k not in inside for k in users.get(ref, [])):
                loop.body.append(("keep", ref))
                written[ref] = None
                kept.append(ref)
        items.append(loop)

    for s, step in enumerate(block.steps):
        k = n_in + s
        if isinstance(step, ReduceStep):
            (ref,) = step.args
            if loop is None:
                loop, inside, made, pending = RowLoop(), set(), [], set()
            load(ref)
            loop.reductions.append((k, REDUCE_OPS[step.op], ref))
            loop.body.append(("fold", k, ref))
            inside.add(k)
            pending.add(k)
            continue
        if loop is not None and pending.intersection(step.args):
            close()
            loop = None
        if spans[k]:
            if loop is None:
                loop, inside, made, pending = RowLoop(), set(), [], set()
            for ref in step.args:
                load(ref)
            loop.body.append(("step", k))
            inside.add(k)
            made.append(k)
        else:  # a step on reduced values: before the open loop, which it does not depend on
            items.append(("step", k))
    if loop is not None:
        close()
    items += [("output", o, ref) for ref, outs in out_of.items() if not spans[ref] for o in outs]
    return RowProgram(items, kept)
