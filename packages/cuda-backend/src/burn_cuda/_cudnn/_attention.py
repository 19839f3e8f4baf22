"""f16 and bf16 scaled dot-product attention through cuDNN's fused flash attention (``sdpa`` and
``sdpa_backward`` graphs of the cuDNN frontend).

Served: f16 or bf16 query, key and value of rank 4 (key and value may have fewer heads, a divisor of
the query's), a head dim that is a multiple of 8 and at most 128 for both, no boolean mask, no bias,
no softcap, causal or not (cuDNN's top-left causal mask is the op's: query ``i`` sees keys
``j <= i``, so no row is ever fully masked). cuDNN reads and writes the operands' dtype and computes
the softmax in f32. The backward needs the forward's softmax statistics (the log-sum-exp per row),
which the op's interface does not carry: ``attention_backward`` runs the forward graph again for them
(a fraction of the backward's cost) and hands the given ``output`` to ``sdpa_backward``.

Each function returns ``None`` where cuDNN does not serve the case (above, no frontend, a plan that
does not build or run: logged once per case by ``PlanCache``); the caller then runs burn-cuda's
GEMM path or the shared version.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from burn_backend import DType

from .._cupy import cp
from . import _library
from ._conv import ConvPlan, _direct, _execute, _not_capturing, _operand, _strides
from ._plans import PlanCache, Unsupported

Array = Any
FORWARD, BACKWARD = "forward", "backward"
_DTYPES = frozenset({np.dtype(np.float16), DType.BF16.numpy})
MAX_HEAD_DIM = 128


class AttentionKey(NamedTuple):
    """Everything an attention plan depends on; also its description in the log."""

    op: str
    dtype: str
    query: tuple[int, ...]
    key: tuple[int, ...]
    value: tuple[int, ...]
    scale: float
    causal: bool
    device: int

    def __str__(self) -> str:
        causal = ", causal" if self.causal else ""
        return (
            f"{self.op} {self.dtype} query {list(self.query)} key {list(self.key)} value "
            f"{list(self.value)} (scale {self.scale:g}{causal}, GPU {self.device})"
        )


ATTENTION_PLANS: PlanCache[ConvPlan] = PlanCache("attention")
"""Plans by ``AttentionKey``; a refused case is logged once and runs burn-cuda's GEMM path."""


def _build(key: AttentionKey) -> ConvPlan:
    cudnn = _library.module()
    if cudnn is None:
        raise Unsupported("no cuDNN frontend")
    io = _library.data_type(np.dtype(key.dtype))
    f32 = cudnn.data_type.FLOAT
    graph = cudnn.pygraph(
        io_data_type=io, intermediate_data_type=f32, compute_data_type=f32, handle=_library.handle()
    )

    def tensor(name: str, dims: tuple[int, ...], data_type: Any = io) -> Any:
        return graph.tensor(name=name, dim=list(dims), stride=_strides(dims), data_type=data_type)

    def output(node: Any, dims: tuple[int, ...], data_type: Any = io) -> Any:
        return node.set_output(True).set_dim(list(dims)).set_stride(_strides(dims)).set_data_type(data_type)

    out_dims = (*key.query[:3], key.value[3])
    stats_dims = (*key.query[:3], 1)
    q, k, v = tensor("q", key.query), tensor("k", key.key), tensor("v", key.value)
    common = {"attn_scale": key.scale, "use_causal_mask": key.causal}
    if key.op == FORWARD:
        o, stats = graph.sdpa(name="attention", q=q, k=k, v=v, generate_stats=True, **common)
        operands = [q, k, v, output(o, out_dims), output(stats, stats_dims, f32)]
    else:
        o, out_grad, stats = tensor("o", out_dims), tensor("dO", out_dims), tensor("stats", stats_dims, f32)
        dq, dk, dv = graph.sdpa_backward(
            name="attention_backward", q=q, k=k, v=v, o=o, dO=out_grad, stats=stats, **common
        )
        grads = [output(dq, key.query), output(dk, key.key), output(dv, key.value)]
        operands = [q, k, v, o, out_grad, stats, *grads]
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    refusals = []
    for index in range(graph.get_execution_plan_count()):
        try:
            graph.build_plan_at_index(index)
        except Exception as error:
            refusals.append(f"{type(error).__name__}: {str(error).strip()[:200]}")
            continue
        uids = [int(tensor.uid) for tensor in operands]
        return ConvPlan(graph, operands, uids, int(graph.get_workspace_size()), _direct(graph))
    raise Unsupported(f"no plan builds ({len(refusals)} proposed: {'; '.join(refusals[:3]) or 'none'})")


def attention_served(
    query: Array, key: Array, value: Array, mask: Array | None, attn_bias: Array | None, softcap: float | None
) -> bool:
    """Whether cuDNN may take the case (it may still refuse it when its plan is built)."""
    if mask is not None or attn_bias is not None or softcap is not None:
        return False
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4 or query.dtype not in _DTYPES:
        return False
    if not query.dtype == key.dtype == value.dtype or 0 in query.shape or 0 in key.shape or 0 in value.shape:
        return False
    batch, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    if key.shape[0] != batch or key.shape[3] != dim or value.shape[:3] != key.shape[:3] or heads % kv_heads:
        return False
    dims = (dim, value.shape[3])
    return all(size % 8 == 0 and size <= MAX_HEAD_DIM for size in dims) and _library.module() is not None


def _key(op: str, query: Array, key: Array, value: Array, scale: float, causal: bool) -> AttentionKey:
    q, k, v = (tuple(int(size) for size in array.shape) for array in (query, key, value))
    return AttentionKey(
        op, query.dtype.name, q, k, v, float(scale), bool(causal), cp.cuda.runtime.getDevice()
    )


def _forward(
    query: Array, key: Array, value: Array, scale: float, causal: bool
) -> tuple[Array, Array] | None:
    plan_key = _key(FORWARD, query, key, value, scale, causal)
    out = cp.empty((*query.shape[:3], value.shape[3]), dtype=query.dtype)
    stats = cp.empty((*query.shape[:3], 1), dtype=np.float32)
    operands = [_operand(query), _operand(key), _operand(value), out, stats]
    ran = ATTENTION_PLANS.run(
        plan_key, lambda: _build(plan_key), lambda plan: _execute(plan, operands), _not_capturing
    )
    return (out, stats) if ran else None


def attention(query: Array, key: Array, value: Array, scale: float, causal: bool) -> Array | None:
    """``softmax(query key^T * scale) value`` (causal or not) through cuDNN, or ``None``."""
    found = _forward(query, key, value, scale, causal)
    return None if found is None else found[0]


def attention_backward(
    query: Array, key: Array, value: Array, scale: float, causal: bool, output: Array, output_grad: Array
) -> tuple[Array, Array, Array] | None:
    """The gradients of ``attention`` for query, key and value (each of its operand's shape) through
    cuDNN, or ``None``. The forward runs again for its softmax statistics."""
    if output.shape != output_grad.shape or output.shape != (*query.shape[:3], value.shape[3]):
        return None
    if output.dtype != query.dtype or output_grad.dtype != query.dtype:
        return None
    found = _forward(query, key, value, scale, causal)
    if found is None:
        return None
    stats = found[1]
    plan_key = _key(BACKWARD, query, key, value, scale, causal)
    grads = [cp.empty(array.shape, dtype=array.dtype) for array in (query, key, value)]
    operands = [_operand(a) for a in (query, key, value, output, output_grad)] + [stats, *grads]
    ran = ATTENTION_PLANS.run(
        plan_key, lambda: _build(plan_key), lambda plan: _execute(plan, operands), _not_capturing
    )
    return (grads[0], grads[1], grads[2]) if ran else None
