"""Convolutions through cuDNN: forward, input gradient and weight gradient as cuDNN graphs.

The three operators serve every convolution op of the backend: a convolution's forward is cuDNN's
forward (``conv_fprop``), its input gradient is cuDNN's data gradient (``conv_dgrad``), its weight
gradient cuDNN's filter gradient (``conv_wgrad``); a transposed convolution's forward is the data
gradient (plus its bias), its input gradient the forward and its weight gradient the filter gradient
with the roles of its input and its output's gradient swapped. 1-d convolutions run as 2-d ones with a
unit height; 3-d ones natively. Groups are read by cuDNN from the channel counts.

Each function returns ``None`` where cuDNN does not serve the case (a dtype other than f32, f16 or bf16,
an empty operand, no frontend, a case its engines refuse, a failure): the caller then runs burn-cuda's
own kernels. Operands are contiguous NCHW (NCDHW) arrays; every tensor of a graph, outputs included,
is given its dims and strides (left to itself the frontend may choose another layout for an output).

Numerics: f32 convolutions compute in f32 with TF32 off unless the backend's setting allows it (engines
that carry cuDNN's ``TENSOR_CORE`` note are excluded for f32 otherwise, as PyTorch excludes them);
f16 and bf16 convolutions read and write their dtype and accumulate in f32. Engines that convert their
inputs down or reduce in reduced precision are excluded for every dtype. A bias is fused into the
graph where cuDNN offers an engine for it; otherwise it is added after the convolution (in f32, then
rounded, for f16 and bf16: the convolution is rounded once before it, as in PyTorch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .._cupy import contiguous, cp
from .._ops._conv import add_bias
from . import _autotune, _library
from ._plans import PlanCache, Unsupported

Array = Any
Sizes = Sequence[int]

FORWARD, INPUT_GRAD, WEIGHT_GRAD = "forward", "input gradient", "weight gradient"
_ALIGNMENT = 16  # bytes: what cuDNN's vectorized engines assume of every operand's address


class ConvKey(NamedTuple):
    """Everything a convolution plan depends on (a tuple: made and hashed at every call, for the least
    host time); also its description in the log. ``a`` and ``b`` are
    the operand shapes (forward: input and weight; input gradient: output gradient and weight; weight
    gradient: input and output gradient) and ``out`` the result's, all of rank 4 or 5."""

    op: str
    dtype: str
    a: tuple[int, ...]
    b: tuple[int, ...]
    out: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    bias: bool
    tf32: bool
    device: int

    def __str__(self) -> str:
        bias = ", bias fused" if self.bias else ""
        tf32 = "on" if self.tf32 else "off"
        return (
            f"{self.op} {self.dtype} {list(self.a)} with {list(self.b)} -> {list(self.out)} (stride "
            f"{self.stride}, padding {self.padding}, dilation {self.dilation}{bias}, TF32 {tf32}, GPU "
            f"{self.device})"
        )


@dataclass
class ConvPlan:
    """A built cuDNN graph, its operands in execution order (``a``, ``b``, bias if any, result) and
    their uids, its workspace bytes, and the direct way to run it (``_direct``), if any; with autotune,
    the engines to time at its first run."""

    graph: Any
    operands: list[Any]
    uids: list[int]
    workspace: int
    direct: tuple[Any, int] | None
    candidates: list[tuple[str, tuple[int, int]]] = field(default_factory=list)
    """Engines still to be timed against each other (name, then native index and workspace bytes) at
    the plan's first run, where autotune is on (``_autotune``); empty once chosen."""
    description: str = ""


DIRECT = True
"""Whether plans run through ``_direct`` where the frontend offers it (a switch for measuring)."""


PLANS: PlanCache[ConvPlan] = PlanCache("convolution")
"""Plans by ``ConvKey``; a refused case is logged once and runs burn-cuda's kernels."""
FUSED: PlanCache[ConvPlan] = PlanCache("convolution with its bias", quiet=True)
"""Plans with the bias fused: a refusal is not logged, the convolution then runs from ``PLANS``."""


def _strides(dims: Sizes) -> list[int]:
    strides, step = [], 1
    for size in reversed(dims):
        strides.append(step)
        step *= size
    return strides[::-1]


def _build(key: ConvKey) -> ConvPlan:
    cudnn = _library.module()
    if cudnn is None:
        raise Unsupported("no cuDNN frontend")
    io = _library.data_type(np.dtype(key.dtype))
    f32 = cudnn.data_type.FLOAT
    graph = cudnn.pygraph(
        io_data_type=io, intermediate_data_type=f32, compute_data_type=f32, handle=_library.handle()
    )
    a = graph.tensor(name="a", dim=list(key.a), stride=_strides(key.a), data_type=io)
    b = graph.tensor(name="b", dim=list(key.b), stride=_strides(key.b), data_type=io)
    geometry = {
        "padding": list(key.padding),
        "stride": list(key.stride),
        "dilation": list(key.dilation),
        "compute_data_type": f32,
    }
    if key.op == FORWARD:
        result = graph.conv_fprop(image=a, weight=b, **geometry)
    elif key.op == INPUT_GRAD:
        result = graph.conv_dgrad(loss=a, filter=b, **geometry)
    else:
        result = graph.conv_wgrad(image=a, loss=b, **geometry)
    result.set_dim(list(key.out)).set_stride(_strides(key.out))
    operands = [a, b]
    if key.bias:
        result.set_data_type(f32)
        shape = [1, key.out[1]] + [1] * (len(key.out) - 2)
        bias = graph.tensor(name="bias", dim=shape, stride=_strides(shape), data_type=io)
        result = graph.bias(input=result, bias=bias, compute_data_type=f32)
        result.set_dim(list(key.out)).set_stride(_strides(key.out))
        operands.append(bias)
    result.set_output(True).set_data_type(io)
    operands.append(result)
    graph.validate()
    graph.build_operation_graph()
    notes = cudnn.numerical_note
    excluded = [notes.DOWN_CONVERT_INPUTS, notes.REDUCED_PRECISION_REDUCTION]
    if key.dtype == "float32" and not key.tf32:
        excluded.append(notes.TENSOR_CORE)
    graph.deselect_numeric_notes(excluded)
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    # the first plan, in the heuristics' order, that builds (an excluded one refuses to); with autotune,
    # every one that builds, up to a bound, timed at the first run
    tune = _autotune.enabled()
    refusals, built = [], []
    for index in range(graph.get_execution_plan_count()):
        try:
            graph.build_plan_at_index(index)
        except Exception as error:
            refusals.append(f"{type(error).__name__}: {str(error).strip()[:200]}")
            continue
        built.append(index)
        if not tune or len(built) == _autotune.CANDIDATES:
            break
    if not built:
        raise Unsupported(f"no plan builds ({len(refusals)} proposed: {'; '.join(refusals[:3]) or 'none'})")
    uids = [int(tensor.uid) for tensor in operands]
    candidates = _candidates(graph, built) if len(built) > 1 else []
    if candidates:
        graph.select_plan(built[0])
    description = str(key).replace(f", GPU {key.device})", ")")
    plan = ConvPlan(graph, operands, uids, 0, None, candidates, description)
    plan.workspace = int(graph.get_workspace_size_plan_at_index(built[0]))
    plan.direct = _direct(graph)
    return plan


def _candidates(graph: Any, built: list[int]) -> list[tuple[str, tuple[int, int]]]:
    """Each built plan's engine name, native index and workspace bytes, or none where this frontend
    cannot run a plan by its native index (then the heuristics' first plan is used)."""
    plans = vars(graph).get("_plans")
    if not plans or not hasattr(vars(graph).get("_lowered_graph"), "_execute_plan_at_index"):
        return []
    found = []
    for index in built:
        native = getattr(plans[index], "cpp_index", None)
        if native is None:
            return []
        name = str(graph.get_plan_name_at_index(index))
        found.append((name, (int(native), int(graph.get_workspace_size_plan_at_index(index)))))
    return found


def _direct(graph: Any) -> tuple[Any, int] | None:
    """The frontend's lowered (C++) graph and the built plan's index in it, where this frontend has
    them (1.32's ``pygraph`` does), else ``None``. Running the plan there with its operands' uids and
    addresses skips ``pygraph.execute``'s description of every operand at every call: 130 to 190 us
    of host time a convolution on an H200's host, as long as a small convolution's GPU time."""
    state = vars(graph)
    lowered, plans, index = state.get("_lowered_graph"), state.get("_plans"), state.get("_plan_index")
    if lowered is None or not plans or not isinstance(index, int):
        return None
    native_index = getattr(plans[index], "cpp_index", None)
    if native_index is None or not hasattr(lowered, "_execute_plan_at_index"):
        return None
    return lowered, int(native_index)


def _execute(plan: ConvPlan, arrays: Sequence[Array]) -> bool:
    if plan.candidates:
        candidates, plan.candidates = plan.candidates, []
        native, plan.workspace = _autotune.choose(
            plan.description, candidates, lambda candidate: _execute_native(plan, arrays, *candidate)
        )
        plan.direct = (vars(plan.graph)["_lowered_graph"], native)
    if plan.direct is not None and DIRECT:
        _execute_native(plan, arrays, plan.direct[1], plan.workspace)
    else:
        space = _library.workspace(plan.workspace)
        space_pointer = 0 if space is None else int(space.data.ptr)
        operands = {tensor: int(array.data.ptr) for tensor, array in zip(plan.operands, arrays)}
        plan.graph.execute(operands, space_pointer, handle=_library.handle())
    return True


def _execute_native(plan: ConvPlan, arrays: Sequence[Array], native: int, workspace: int) -> None:
    """Run the graph's plan of native index ``native`` (``_direct``) with a workspace of its size."""
    space = _library.workspace(workspace)
    space_pointer = 0 if space is None else int(space.data.ptr)
    handle = _library.handle()
    pointers = {uid: int(array.data.ptr) for uid, array in zip(plan.uids, arrays)}
    raw = getattr(handle, "backend_handle", handle)
    vars(plan.graph)["_lowered_graph"]._execute_plan_at_index(
        pointers, space_pointer, native, raw, None, None, None
    )


def _not_capturing() -> bool:
    return not cp.cuda.get_current_stream().is_capturing()


def _operand(array: Array) -> Array:
    """``array`` contiguous and aligned for cuDNN (a view whose address is not is copied)."""
    array = contiguous(array)
    return array if array.data.ptr % _ALIGNMENT == 0 else array.copy()


def _lift(shape: Sizes) -> tuple[int, ...]:
    """A 1-d convolution's shape ``[n, c, length]`` as ``[n, c, 1, length]``; others as they are."""
    shape = tuple(int(size) for size in shape)
    return (*shape[:2], 1, shape[2]) if len(shape) == 3 else shape


def _geometry(values: Sizes, unit: int) -> tuple[int, ...]:
    values = tuple(int(value) for value in values)
    return (unit, *values) if len(values) == 1 else values


def _run(
    op: str, a: Array, b: Array, bias: Array | None, out: tuple[int, ...], stride: Sizes, padding: Sizes,
    dilation: Sizes,
) -> Array | None:  # fmt: skip
    """``op`` of operands ``a`` and ``b`` (plus ``bias`` per output channel) into a new ``out`` array, or
    ``None`` where cuDNN does not serve it."""
    dtype = a.dtype
    if b.dtype != dtype or (bias is not None and bias.dtype != dtype) or not 3 <= a.ndim <= 5:
        return None
    if a.size == 0 or b.size == 0 or math.prod(out) == 0:
        return None
    if _library.module() is None or _library.data_type(dtype) is None:
        return None
    key = ConvKey(
        op, dtype.name, _lift(a.shape), _lift(b.shape), _lift(out), _geometry(stride, 1),
        _geometry(padding, 0), _geometry(dilation, 1), False, _library.TF32, cp.cuda.runtime.getDevice(),
    )  # fmt: skip
    result = cp.empty(out, dtype=dtype)
    operands = [_operand(a), _operand(b), result]
    if bias is not None:
        fused = key._replace(bias=True)
        with_bias = [*operands[:2], _operand(bias), result]
        if FUSED.run(fused, lambda: _build(fused), lambda plan: _execute(plan, with_bias), _not_capturing):
            return result
    if not PLANS.run(key, lambda: _build(key), lambda plan: _execute(plan, operands), _not_capturing):
        return None
    if bias is None:
        return result
    if dtype == np.float32:
        return add_bias(result, bias)
    wide = result.astype(np.float32)
    return add_bias(wide, bias.astype(np.float32)).astype(dtype)


def convolve(
    x: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes, out: Sizes
) -> Array | None:
    """The convolution of ``x [batch, channels, *spatial]`` with ``weight [out channels, channels /
    groups, *kernel]`` plus ``bias``, of spatial size ``out``, or ``None`` where cuDNN does not serve it."""
    shape = (x.shape[0], weight.shape[0], *out)
    return _run(FORWARD, x, weight, bias, shape, stride, padding, dilation)


def convolve_adjoint(
    grad: Array, weight: Array, bias: Array | None, stride: Sizes, padding: Sizes, dilation: Sizes,
    groups: int, out: Sizes,
) -> Array | None:  # fmt: skip
    """The input gradient of a convolution for its output's gradient ``grad`` (also the transposed
    convolution of ``grad``, plus ``bias``): ``[batch, groups * weight.shape[1], *out]``, or ``None``."""
    shape = (grad.shape[0], groups * weight.shape[1], *out)
    return _run(INPUT_GRAD, grad, weight, bias, shape, stride, padding, dilation)


def convolve_weight_grad(
    x: Array, grad: Array, kernel: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, groups: int
) -> Array | None:
    """The weight gradient ``[grad channels, x channels / groups, *kernel]`` of a convolution of ``x``
    whose output's gradient is ``grad``, or ``None`` where cuDNN does not serve it."""
    shape = (grad.shape[1], x.shape[1] // groups, *kernel)
    return _run(WEIGHT_GRAD, x, grad, None, shape, stride, padding, dilation)
