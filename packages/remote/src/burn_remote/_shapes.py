"""The shape and dtype of an op's result, worked out on the client so that streaming never waits.

The Tensor API reads a primitive's ``shape`` and ``dtype`` at nearly every op (broadcasting, checks,
error messages), so a handle whose shape only the server knew would cost a round trip per op. Backend-core
has no meta backend to run an op's shape logic on, so the client works the result out where the rule
is certain and cheap: every op of the element-wise table (broadcast operands, Bool for comparisons),
every op given its result's shape or dtype as an argument (creation, reshape, expand, casts, from_data),
and the structural ops below (reductions, matmul, transposes, slices, concatenation, ...). For any other
op (convolutions, pooling, data-dependent shapes such as ``mask_select``) ``infer`` returns ``None`` and
the server sends the result's shape and dtype with its next answer: reading the handle's ``shape`` sends
the pending frame and waits for it.

A client made with ``check_shapes=True`` asks the server for every result's shape and compares (the test
suite runs so, which checks these rules on every conformance test).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from burn_backend import DType, Shape, TensorData
from burn_backend._elementwise import ELEMENTWISE_OPS

Meta = tuple[tuple[int, ...], DType]
"""A result's shape and dtype."""


def _broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        size = 1
        for shape in shapes:
            j = i - rank + len(shape)
            if j < 0:
                continue
            dim = shape[j]
            if dim != 1:
                if size not in (1, dim):
                    return None  # the server's error will say why
                size = dim
        out.append(size)
    return tuple(out)


def _keep(dim: int, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    if not -len(shape) <= dim < len(shape):
        return None
    out = list(shape)
    out[dim] = 1
    return tuple(out)


def _set(shape: tuple[int, ...], dim: int, size: int) -> tuple[int, ...] | None:
    if not -len(shape) <= dim < len(shape) or size < 0:
        return None
    out = list(shape)
    out[dim] = size
    return tuple(out)


def _matmul(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return None
    batch = _broadcast([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else ()
    return None if batch is None else (*batch, a[-2], b[-1])


def _swap(shape: tuple[int, ...], i: int, j: int) -> tuple[int, ...] | None:
    if not (-len(shape) <= i < len(shape) and -len(shape) <= j < len(shape)):
        return None
    out = list(shape)
    out[i], out[j] = out[j], out[i]
    return tuple(out)


def _permute(shape: tuple[int, ...], axes: Sequence[int]) -> tuple[int, ...] | None:
    if sorted(a % len(shape) if len(shape) else a for a in axes) != list(range(len(shape))):
        return None
    return tuple(shape[a] for a in axes)


def _slice(shape: tuple[int, ...], slices: Sequence[slice]) -> tuple[int, ...] | None:
    if len(slices) > len(shape):
        return None
    sized = [len(range(*s.indices(d))) for s, d in zip(slices, shape)]
    return (*sized, *shape[len(slices) :])


def _cat(shapes: Sequence[tuple[int, ...]], dim: int) -> tuple[int, ...] | None:
    first = shapes[0]
    if not -len(first) <= dim < len(first) or any(len(s) != len(first) for s in shapes):
        return None
    return _set(first, dim, sum(s[dim] for s in shapes))


_SAME = {
    "to_device", "detach", "set_require_grad", "cumsum", "cumprod", "cummin", "cummax", "sort", "flip",
    "scatter", "scatter_nd", "scatter_add", "select_add", "slice_assign",
    "softmax", "log_softmax", "clamp", "clamp_min", "clamp_max", "neg", "not",
}  # fmt: skip
_BROADCAST = {"mask_where", "mask_fill", "powi"}
_FULL = {"sum", "mean", "prod", "max", "min", "max_abs"}
_DIM = {"sum_dim", "mean_dim", "prod_dim", "max_dim", "min_dim", "max_abs_dim"}


def _kind_op(op: str, args: Sequence[Any], int_dtype: DType) -> Meta | None:
    """The rules of the structural ops, by the name after the kind prefix."""
    first: Any = args[0] if args else None
    if not hasattr(first, "shape"):
        if op == "cat" and args and isinstance(first, (list, tuple)) and first:
            joined = _cat([tuple(t.shape) for t in first], args[1])
            return None if joined is None else (joined, first[0].dtype)
        return None
    shape: tuple[int, ...] | None = tuple(first.shape)
    dtype: DType = first.dtype
    if op in _SAME:
        pass
    elif op in _BROADCAST:
        shape = _broadcast([tuple(first.shape), *(tuple(a.shape) for a in args[1:] if hasattr(a, "shape"))])
    elif op in _FULL:
        shape = (1,)
    elif op in _DIM:
        shape = _keep(args[1], shape)  # type: ignore[arg-type]
    elif op in ("argmax", "argmin"):
        shape, dtype = _keep(args[1], shape), int_dtype  # type: ignore[arg-type]
    elif op in ("any", "all"):
        shape, dtype = (1,), DType.BOOL
    elif op in ("any_dim", "all_dim"):
        shape, dtype = _keep(args[1], shape), DType.BOOL  # type: ignore[arg-type]
    elif op == "argsort":
        dtype = int_dtype
    elif op == "matmul":
        shape = _matmul(shape, tuple(args[1].shape))  # type: ignore[arg-type]
    elif op == "transpose":
        shape = _swap(shape, -1, -2) if len(shape) >= 2 else shape  # type: ignore[arg-type]
    elif op == "swap_dims":
        shape = _swap(shape, args[1], args[2])  # type: ignore[arg-type]
    elif op == "permute":
        shape = _permute(shape, args[1])  # type: ignore[arg-type]
    elif op == "repeat_dim":
        if not -len(shape) <= args[1] < len(shape):  # type: ignore[arg-type]
            return None
        shape = _set(shape, args[1], shape[args[1]] * args[2])  # type: ignore[arg-type,index]
    elif op == "slice":
        shape = _slice(shape, args[1])  # type: ignore[arg-type]
    elif op in ("gather", "take_along_dim"):
        shape = tuple(args[2].shape) if op == "gather" else None
    elif op == "select":
        shape = _set(shape, args[1], math.prod(args[2].shape))  # type: ignore[arg-type]
    elif op == "topk":
        shape = _set(shape, args[1], args[2])  # type: ignore[arg-type]
    elif op == "argtopk":
        shape, dtype = _set(shape, args[1], args[2]), int_dtype  # type: ignore[arg-type]
    else:
        return None
    return None if shape is None else (shape, dtype)


def _arange(args: Sequence[Any]) -> Meta | None:
    start, end = args[0], args[1]
    step = args[2] if len(args) == 5 else 1
    if step == 0:
        return None
    return ((len(range(start, end, step)),), args[-1])


_SPECIAL: dict[str, Callable[[Sequence[Any]], Meta | None]] = {
    "int_arange": _arange,
    "int_arange_step": _arange,
}


def infer(name: str, kinds: Sequence[str], args: Sequence[Any], int_dtype: DType) -> Meta | None:
    """The shape and dtype of the one result of op ``name`` called with ``args`` (handles with
    ``shape`` and ``dtype``, and plain values), or ``None`` where the server must say.

    Args:
        name: the interface op.
        kinds: its parameters' annotations (``OpSpec.kinds``).
        args: the arguments, as the op got them.
        int_dtype: the dtype of the indices the server's backend returns (``argmax``, ``argsort``).

    Returns:
        ``(shape, dtype)`` or ``None``.

    Example:
        >>> from types import SimpleNamespace as T
        >>> x = T(shape=(2, 3), dtype=DType.F32)
        >>> infer("float_sum_dim", ("P", "int"), (x, 1), DType.I64)
        ((2, 1), DType.F32)
    """
    entry = ELEMENTWISE_OPS.get(name)
    try:
        if entry is not None:
            tensors = args[: entry.arity]
            shape = (
                _broadcast([tuple(t.shape) for t in tensors]) if entry.arity > 1 else tuple(tensors[0].shape)
            )
            if shape is None:
                return None
            return shape, DType.BOOL if entry.bool_result else tensors[0].dtype
        special = _SPECIAL.get(name)
        if special is not None:
            return special(args)
        if "TensorData" in kinds:
            data: TensorData = args[kinds.index("TensorData")]
            return tuple(data.shape), data.dtype
        if "Shape" in kinds:
            shape = tuple(Shape(args[kinds.index("Shape")]))
            dtype = args[kinds.index("DType")] if "DType" in kinds else args[0].dtype
            return shape, DType.of(dtype)
        if "DType" in kinds and kinds[0] == "P":  # casts
            return tuple(args[0].shape), DType.of(args[kinds.index("DType")])
        kind, _, op = name.partition("_")
        if kind in ("float", "int", "bool"):
            return _kind_op(op, args, int_dtype)
        if name in ("softmax", "log_softmax"):
            return tuple(args[0].shape), args[0].dtype
    except (TypeError, ValueError, IndexError, AttributeError):
        return None  # arguments the server's backend will refuse; it names the problem
    return None
