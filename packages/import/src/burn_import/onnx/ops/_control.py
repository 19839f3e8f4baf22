"""Control flow (``If``, ``Loop``, ``Scan``), sequences and optionals."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import Tensor

from .._ir import Graph
from ._registry import Context, OptionalValue, Value, register
from ._util import axis as norm_axis

__all__: list[str] = []


def _truth(ctx: Context, value: Value) -> bool:
    return bool(ctx.scalar(value))


@register("If", attrs=("then_branch", "else_branch"))
def if_(ctx: Context, cond: Value) -> Any:
    branch: Graph = ctx.attr("then_branch") if _truth(ctx, cond) else ctx.attr("else_branch")
    outputs = ctx.run_graph(branch, ctx.env)
    return tuple(outputs) if len(outputs) != 1 else outputs[0]


def _stack(ctx: Context, values: list[Value], like: Graph, index: int) -> Tensor:
    if not values:
        return Tensor.empty([0], ctx.device, "f32")
    tensors = [ctx.tensor(v) for v in values]
    return Tensor.stack(tensors, 0)


@register("Loop", attrs=("body",))
def loop(ctx: Context, max_trips: Value = None, cond: Value = None, *initial: Value) -> Any:
    body: Graph = ctx.attr("body")
    trips = None if max_trips is None else int(ctx.scalar(max_trips))
    keep_going = True if cond is None else _truth(ctx, cond)
    carried = list(initial)
    n_carried = len(carried)
    scans: list[list[Value]] = [[] for _ in range(len(body.outputs) - 1 - n_carried)]
    i = 0
    while keep_going and (trips is None or i < trips):
        env = dict(ctx.env)
        env[body.inputs[0]] = np.array(i, dtype=np.int64)
        env[body.inputs[1]] = np.array(keep_going)
        for name, value in zip(body.inputs[2:], carried):
            env[name] = value
        outputs = ctx.run_graph(body, env)
        keep_going = _truth(ctx, outputs[0])
        carried = outputs[1 : 1 + n_carried]
        for store, value in zip(scans, outputs[1 + n_carried :]):
            store.append(value)
        i += 1
    results = carried + [_stack(ctx, s, body, k) for k, s in enumerate(scans)]
    return tuple(results) if len(results) != 1 else results[0]


@register(
    "Scan",
    attrs=(
        "body",
        "num_scan_inputs",
        "scan_input_axes",
        "scan_input_directions",
        "scan_output_axes",
        "scan_output_directions",
        "directions",
    ),
)
def scan(ctx: Context, *inputs: Value) -> Any:
    body: Graph = ctx.attr("body")
    n_scan = int(ctx.attr("num_scan_inputs"))
    batched = ctx.opset < 9
    if batched:
        inputs = inputs[1:]  # sequence_lens (opset 8): the whole sequence is used
    n_state = len(inputs) - n_scan
    state = list(inputs[:n_state])
    sequences = [ctx.tensor(v) for v in inputs[n_state:]]
    if batched:
        outs = [_scan_once(ctx, body, [ctx.tensor(s).narrow(0, b, 1).squeeze_dim(0) for s in state],
                           [q.narrow(0, b, 1).squeeze_dim(0) for q in sequences], n_scan, axis_base=0)
                for b in range(sequences[0].dims()[0])]  # fmt: skip
        merged = [Tensor.stack([ctx.tensor(o[k]) for o in outs], 0) for k in range(len(outs[0]))]
        return tuple(merged) if len(merged) != 1 else merged[0]
    results = _scan_once(ctx, body, state, sequences, n_scan, axis_base=0)
    return tuple(results) if len(results) != 1 else results[0]


def _scan_once(
    ctx: Context, body: Graph, state: list[Value], sequences: list[Tensor], n_scan: int, axis_base: int
) -> list[Value]:
    in_axes = list(ctx.attr("scan_input_axes") or [0] * n_scan)
    in_dirs = list(ctx.attr("scan_input_directions") or ctx.attr("directions") or [0] * n_scan)
    n_state = len(state)
    n_out = len(body.outputs) - n_state
    out_axes = list(ctx.attr("scan_output_axes") or [0] * n_out)
    out_dirs = list(ctx.attr("scan_output_directions") or [0] * n_out)
    axes = [norm_axis(ctx, int(a), s.rank) for a, s in zip(in_axes, sequences)]
    length = sequences[0].dims()[axes[0]] if sequences else 0
    collected: list[list[Value]] = [[] for _ in range(n_out)]
    for step in range(length):
        env = dict(ctx.env)
        for name, value in zip(body.inputs[:n_state], state):
            env[name] = value
        for name, seq, ax, direction in zip(body.inputs[n_state:], sequences, axes, in_dirs):
            at = length - 1 - step if int(direction) else step
            env[name] = seq.narrow(ax, at, 1).squeeze_dim(ax)
        outputs = ctx.run_graph(body, env)
        state = outputs[:n_state]
        for store, value in zip(collected, outputs[n_state:]):
            store.append(value)
    results = list(state)
    for k, store in enumerate(collected):
        if int(out_dirs[k]) if k < len(out_dirs) else 0:
            store = store[::-1]
        stacked = Tensor.stack([ctx.tensor(v) for v in store], 0)
        ax = norm_axis(ctx, int(out_axes[k]) if k < len(out_axes) else 0, stacked.rank)
        if ax:
            perm = list(range(1, stacked.rank))
            perm.insert(ax, 0)
            stacked = stacked.permute(perm)
        results.append(stacked)
    return results


# -- sequences ------------------------------------------------------------------------------------
@register("SequenceConstruct")
def sequence_construct(ctx: Context, *values: Value) -> list[Value]:
    return list(values)


@register("SequenceEmpty", attrs=("dtype",))
def sequence_empty(ctx: Context) -> list[Value]:
    return []


def _position(ctx: Context, seq: list[Value], position: Value, insert: bool = False) -> int:
    if position is None:
        return len(seq) if insert else len(seq) - 1
    p = int(ctx.scalar(position))
    return p + len(seq) if p < 0 else p


@register("SequenceInsert")
def sequence_insert(ctx: Context, seq: list[Value], value: Value, position: Value = None) -> list[Value]:
    out = list(seq)
    out.insert(_position(ctx, seq, position, insert=True), value)
    return out


@register("SequenceErase")
def sequence_erase(ctx: Context, seq: list[Value], position: Value = None) -> list[Value]:
    out = list(seq)
    del out[_position(ctx, seq, position)]
    return out


@register("SequenceAt")
def sequence_at(ctx: Context, seq: list[Value], position: Value) -> Value:
    return seq[_position(ctx, seq, position)]


@register("SequenceLength")
def sequence_length(ctx: Context, seq: list[Value]) -> np.ndarray[Any, Any]:
    return np.array(len(seq), dtype=np.int64)


@register("SplitToSequence", attrs=("axis", "keepdims"))
def split_to_sequence(ctx: Context, x: Value, split: Value = None) -> list[Value]:
    t = ctx.tensor(x)
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), t.rank)
    size = t.dims()[ax]
    if split is None:
        parts = [t.narrow(ax, i, 1) for i in range(size)]
        return parts if int(ctx.attr("keepdims", 1)) else [p.squeeze_dim(ax) for p in parts]
    sizes = ctx.ints(split)
    if len(sizes) == 1 and np.ndim(ctx.array(split)) == 0:
        chunk = sizes[0]
        sizes = [chunk] * (size // chunk) + ([size % chunk] if size % chunk else [])
    out, start = [], 0
    for s in sizes:
        out.append(t.narrow(ax, start, s))
        start += s
    return out


@register("ConcatFromSequence", attrs=("axis", "new_axis"))
def concat_from_sequence(ctx: Context, seq: list[Value]) -> Tensor:
    tensors = [ctx.tensor(v) for v in seq]
    if int(ctx.attr("new_axis", 0)):
        ax = norm_axis(ctx, int(ctx.attr("axis")), tensors[0].rank + 1)
        return Tensor.stack(tensors, ax)
    return Tensor.cat(tensors, norm_axis(ctx, int(ctx.attr("axis")), tensors[0].rank))


@register("SequenceMap", attrs=("body",))
def sequence_map(ctx: Context, seq: list[Value], *extra: Value) -> Any:
    body: Graph = ctx.attr("body")
    count = len(seq)
    results: list[list[Value]] = [[] for _ in body.outputs]
    for i in range(count):
        env = dict(ctx.env)
        env[body.inputs[0]] = seq[i]
        for name, value in zip(body.inputs[1:], extra):
            env[name] = value[i] if isinstance(value, list) else value
        for store, value in zip(results, ctx.run_graph(body, env)):
            store.append(value)
    return tuple(results) if len(results) != 1 else results[0]


# -- optionals ------------------------------------------------------------------------------------
@register("Optional", attrs=("type",))
def optional(ctx: Context, value: Value = None) -> OptionalValue:
    return OptionalValue(value)


@register("OptionalHasElement")
def optional_has_element(ctx: Context, value: Value = None) -> np.ndarray[Any, Any]:
    if isinstance(value, OptionalValue):
        return np.array(value.value is not None)
    return np.array(value is not None)


@register("OptionalGetElement")
def optional_get_element(ctx: Context, value: Value) -> Value:
    if isinstance(value, OptionalValue):
        if value.value is None:
            raise ctx.error("OptionalGetElement of an empty optional")
        return value.value
    return value
