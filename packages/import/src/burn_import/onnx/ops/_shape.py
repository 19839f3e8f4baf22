"""Shape operators: constants, ``Shape``/``Size``, reshaping, transposing, concatenation, splitting,
slicing, broadcasting, tiling, padding and ranges. Most have a NumPy form for shape arithmetic."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn_backend import Tensor

from .._ir import Node
from ._registry import Context, Value, register, to_tensor
from ._util import axis as norm_axis
from ._util import full, host_dtype, np_result, pad_constant, target_dtype

__all__: list[str] = []

Array = np.ndarray[Any, Any]


def _shape(value: Value) -> list[int]:
    if isinstance(value, Tensor):
        return value.dims()
    return list(np.shape(value))


# -- constants ------------------------------------------------------------------------------------
def _check_constant(node: Node) -> str | None:
    if "value_string" in node.attrs or "value_strings" in node.attrs:
        return "string constants are not supported (unsupported dtype)"
    return None


def _constant(ctx: Context) -> Array:
    attrs = ctx.node.attrs
    if "value" in attrs:
        return np.asarray(attrs["value"])
    if "sparse_value" in attrs:
        return np.asarray(attrs["sparse_value"])
    if "value_float" in attrs:
        return np.array(attrs["value_float"], dtype=np.float32)
    if "value_floats" in attrs:
        return np.array(attrs["value_floats"], dtype=np.float32)
    if "value_int" in attrs:
        return np.array(attrs["value_int"], dtype=np.int64)
    if "value_ints" in attrs:
        return np.array(attrs["value_ints"], dtype=np.int64)
    raise ctx.error("Constant has no value attribute")


_CONSTANT_ATTRS = (
    "value",
    "sparse_value",
    "value_float",
    "value_floats",
    "value_int",
    "value_ints",
    "value_string",
    "value_strings",
)


@register("Constant", attrs=_CONSTANT_ATTRS, host=_constant, check=_check_constant)
def constant(ctx: Context) -> Array:
    return _constant(ctx)


def _constant_of_shape(ctx: Context, shape: Value) -> Array:
    value = ctx.attr("value")
    fill = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
    return np.full(ctx.ints(shape), fill[0], dtype=fill.dtype)


@register("ConstantOfShape", attrs=("value",), host=_constant_of_shape)
def constant_of_shape(ctx: Context, shape: Value) -> Tensor:
    value = ctx.attr("value")
    fill = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
    dims = ctx.ints(shape)
    return full(dims, fill[0].item(), target_dtype(ctx, _elem(fill.dtype)), ctx)


def _elem(dtype: np.dtype[Any]) -> int:
    from .._dtypes import elem_type_of

    return elem_type_of(dtype)


@register("Identity", host=lambda ctx, x: x)
def identity(ctx: Context, x: Value) -> Value:
    return x


# -- shape queries --------------------------------------------------------------------------------
def _shape_op(ctx: Context, x: Value) -> Array:
    dims = _shape(x)
    rank = len(dims)
    start = int(ctx.attr("start", 0))
    end = ctx.attr("end")
    start = min(max(start + rank if start < 0 else start, 0), rank)
    stop = rank if end is None else int(end)
    stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
    return np.array(dims[start:stop], dtype=np.int64)


register("Shape", attrs=("start", "end"), host=_shape_op)(_shape_op)


def _size(ctx: Context, x: Value) -> Array:
    return np.array(math.prod(_shape(x)), dtype=np.int64)


register("Size", host=_size)(_size)


# -- reshaping ------------------------------------------------------------------------------------
def _reshape_dims(ctx: Context, dims: list[int], target: list[int]) -> list[int]:
    out = list(target)
    if not int(ctx.attr("allowzero", 0)):
        out = [dims[i] if s == 0 and i < len(dims) else s for i, s in enumerate(out)]
    if -1 in out:
        known = math.prod(s for s in out if s != -1)
        total = math.prod(dims)
        out[out.index(-1)] = total // known if known else 0
    if math.prod(out) != math.prod(dims):
        raise ctx.error(f"cannot reshape shape {dims} into {target} (resolved {out})")
    return out


def _host_reshape(ctx: Context, x: Array, shape: Array | None = None) -> Array:
    target = ctx.ints(shape) if shape is not None else list(ctx.attr("shape", []))
    return x.reshape(_reshape_dims(ctx, list(x.shape), target))


@register("Reshape", attrs=("allowzero", "shape"), host=_host_reshape)
def reshape(ctx: Context, x: Value, shape: Value = None) -> Value:
    t = ctx.tensor(x)
    target = ctx.ints(shape) if shape is not None else list(ctx.attr("shape", []))
    return t.reshape(_reshape_dims(ctx, t.dims(), target))


def _flatten_dims(ctx: Context, dims: list[int]) -> list[int]:
    ax = int(ctx.attr("axis", 1))
    ax = ax + len(dims) if ax < 0 else ax
    return [math.prod(dims[:ax]), math.prod(dims[ax:])]


@register("Flatten", attrs=("axis",), host=lambda ctx, x: x.reshape(_flatten_dims(ctx, list(x.shape))))
def flatten(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    return t.reshape(_flatten_dims(ctx, t.dims()))


def _squeeze_axes(ctx: Context, dims: list[int], axes: Value) -> list[int]:
    given = ctx.attr("axes") if axes is None else ctx.ints(axes)
    if given is None:
        return [i for i, d in enumerate(dims) if d == 1]
    return sorted(norm_axis(ctx, int(a), len(dims)) for a in given)


def _host_squeeze(ctx: Context, x: Array, axes: Array | None = None) -> Array:
    return np.squeeze(x, axis=tuple(_squeeze_axes(ctx, list(x.shape), axes)))


@register("Squeeze", attrs=("axes",), host=_host_squeeze)
def squeeze(ctx: Context, x: Value, axes: Value = None) -> Tensor:
    t = ctx.tensor(x)
    dims = t.dims()
    drop = set(_squeeze_axes(ctx, dims, axes))
    return t.reshape([d for i, d in enumerate(dims) if i not in drop])


def _unsqueezed(ctx: Context, dims: list[int], axes: Value) -> list[int]:
    given = ctx.attr("axes") if axes is None else ctx.ints(axes)
    rank = len(dims) + len(given)
    where = sorted(norm_axis(ctx, int(a), rank) for a in given)
    out = list(dims)
    for a in where:
        out.insert(a, 1)
    return out


@register(
    "Unsqueeze",
    attrs=("axes",),
    host=lambda ctx, x, axes=None: x.reshape(_unsqueezed(ctx, list(x.shape), axes)),
)
def unsqueeze(ctx: Context, x: Value, axes: Value = None) -> Tensor:
    t = ctx.tensor(x)
    return t.reshape(_unsqueezed(ctx, t.dims(), axes))


def _perm(ctx: Context, rank: int) -> list[int]:
    perm = ctx.attr("perm")
    return list(range(rank))[::-1] if perm is None else [norm_axis(ctx, int(p), rank) for p in perm]


@register("Transpose", attrs=("perm",), host=lambda ctx, x: np.transpose(x, _perm(ctx, x.ndim)))
def transpose(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    return t.permute(_perm(ctx, t.rank))


# -- joining and splitting ------------------------------------------------------------------------
def _host_concat(ctx: Context, *xs: Array) -> Array:
    arrays = [x for x in xs if x is not None]
    return np.concatenate(arrays, axis=norm_axis(ctx, int(ctx.attr("axis")), arrays[0].ndim))


@register("Concat", attrs=("axis",), host=_host_concat)
def concat(ctx: Context, *xs: Value) -> Tensor:
    tensors = [ctx.tensor(x) for x in xs if x is not None]
    dim = norm_axis(ctx, int(ctx.attr("axis")), tensors[0].rank)
    dtype = next((t.dtype for t in tensors if isinstance(t, Tensor)), None)
    tensors = [t if t.dtype == dtype else t.cast(dtype) for t in tensors]  # type: ignore[arg-type]
    nonempty = [t for t in tensors if t.num_elements() > 0]
    if len(nonempty) == 1 and all(t.dims()[dim] == 0 or t is nonempty[0] for t in tensors):
        return nonempty[0]
    return Tensor.cat(tensors, dim)


def _split_sizes(ctx: Context, size: int, split: Value) -> list[int]:
    if split is not None:
        return ctx.ints(split)
    if ctx.attr("split") is not None:
        return [int(s) for s in ctx.attr("split")]
    parts = int(ctx.attr("num_outputs", ctx.n_outputs))
    chunk = -(-size // parts)
    sizes = [chunk] * (size // chunk) if chunk else []
    if size - sum(sizes):
        sizes.append(size - sum(sizes))
    while len(sizes) < parts:
        sizes.append(0)
    return sizes


def _host_split(ctx: Context, x: Array, split: Array | None = None) -> tuple[Array, ...]:
    dim = norm_axis(ctx, int(ctx.attr("axis", 0)), x.ndim)
    sizes = _split_sizes(ctx, x.shape[dim], split)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))


@register("Split", attrs=("axis", "split", "num_outputs"), host=_host_split)
def split(ctx: Context, x: Value, split: Value = None) -> tuple[Tensor, ...]:
    t = ctx.tensor(x)
    dim = norm_axis(ctx, int(ctx.attr("axis", 0)), t.rank)
    sizes = _split_sizes(ctx, t.dims()[dim], split)
    out = []
    start = 0
    for size in sizes:
        out.append(t.narrow(dim, start, size) if size else _empty_like(t, dim))
        start += size
    return tuple(out)


def _empty_like(t: Tensor, dim: int) -> Tensor:
    dims = t.dims()
    dims[dim] = 0
    return Tensor.empty(dims, t.device, t.dtype)


# -- slicing --------------------------------------------------------------------------------------
def _slices(
    ctx: Context, dims: list[int], starts: Value, ends: Value, axes: Value, steps: Value
) -> list[slice]:
    if ctx.opset < 10:
        s, e = list(ctx.attr("starts")), list(ctx.attr("ends"))
        a = ctx.attr("axes")
        a = list(range(len(s))) if a is None else list(a)
        st = [1] * len(s)
    else:
        s, e = ctx.ints(starts), ctx.ints(ends)
        a = list(range(len(s))) if axes is None else ctx.ints(axes)
        st = [1] * len(s) if steps is None else ctx.ints(steps)
    out = [slice(None)] * len(dims)
    for start, end, ax, step in zip(s, e, a, st):
        if step == 0:
            raise ctx.error("Slice: a step of 0")
        d = norm_axis(ctx, int(ax), len(dims))
        out[d] = slice(*slice(int(start), int(end), int(step)).indices(dims[d]))
    return out


def _host_slice(
    ctx: Context, x: Array, starts: Any = None, ends: Any = None, axes: Any = None, steps: Any = None
) -> Array:
    return x[tuple(_slices(ctx, list(x.shape), starts, ends, axes, steps))]


@register("Slice", attrs=("starts", "ends", "axes"), host=_host_slice)
def slice_(
    ctx: Context, x: Value, starts: Value = None, ends: Value = None, axes: Value = None, steps: Value = None
) -> Tensor:
    t = ctx.tensor(x)
    slices = _slices(ctx, t.dims(), starts, ends, axes, steps)
    sizes = [len(range(*s.indices(d))) for s, d in zip(slices, t.dims())]
    if 0 in sizes:
        return Tensor.empty(sizes, t.device, t.dtype)
    fixed = [s if s.stop is None or s.stop >= 0 else slice(s.start, None, s.step) for s in slices]
    return t.slice(fixed)


# -- broadcasting and tiling ----------------------------------------------------------------------
def _expanded(ctx: Context, dims: list[int], shape: Value) -> list[int]:
    target = ctx.ints(shape)
    return list(np.broadcast_shapes(tuple(dims), tuple(target)))


@register(
    "Expand",
    host=lambda ctx, x, shape: np.array(np.broadcast_to(x, _expanded(ctx, list(x.shape), shape))),
)
def expand(ctx: Context, x: Value, shape: Value) -> Tensor:
    t = ctx.tensor(x)
    out = _expanded(ctx, t.dims(), shape)
    if 0 in out:
        return Tensor.empty(out, t.device, t.dtype)
    return t.unsqueeze(rank=len(out)).expand(out) if t.rank < len(out) else t.expand(out)


@register("Tile", host=lambda ctx, x, reps: np.tile(x, ctx.ints(reps)))
def tile(ctx: Context, x: Value, repeats: Value) -> Tensor:
    t = ctx.tensor(x)
    return t.repeat(ctx.ints(repeats))


# -- padding --------------------------------------------------------------------------------------
def _check_pad(node: Node) -> str | None:
    mode = node.attrs.get("mode", "constant")
    return None if mode in ("constant", "reflect", "edge", "wrap") else f"pad mode {mode!r} is not supported"


@register("Pad", attrs=("mode", "pads", "value"), check=_check_pad)
def pad(ctx: Context, x: Value, pads: Value = None, value: Value = None, axes: Value = None) -> Tensor:
    t = ctx.tensor(x)
    rank = t.rank
    amounts = list(ctx.attr("pads")) if pads is None else ctx.ints(pads)
    fill = ctx.attr("value", 0.0) if ctx.opset < 11 else (0 if value is None else ctx.scalar(value))
    which = list(range(rank)) if axes is None else [norm_axis(ctx, a, rank) for a in ctx.ints(axes)]
    begins, ends = [0] * rank, [0] * rank
    n = len(which)
    for i, d in enumerate(which):
        begins[d], ends[d] = int(amounts[i]), int(amounts[i + n])
    mode = ctx.attr("mode", "constant")
    if mode == "constant":
        return pad_constant(t, begins, ends, fill, ctx)
    out = t
    for d in range(rank):
        if begins[d] == 0 and ends[d] == 0:
            continue
        size = out.dims()[d]
        index = np.arange(-begins[d], size + ends[d])
        if mode == "edge":
            index = np.clip(index, 0, size - 1)
        elif mode == "wrap":
            index = np.mod(index, size)
        else:  # reflect
            period = 2 * (size - 1) if size > 1 else 1
            index = np.abs(np.mod(index, period))
            index = np.where(index >= size, period - index, index)
        out = out.select(d, to_tensor(index.astype(np.int64), ctx.device))
    return out


# -- ranges and generated tensors -----------------------------------------------------------------
def _host_range(ctx: Context, start: Array, limit: Array, delta: Array) -> Array:
    s, l_, d = start.reshape(()).item(), limit.reshape(()).item(), delta.reshape(()).item()
    count = max(math.ceil((l_ - s) / d), 0)
    return np_result(np.asarray(s, dtype=start.dtype) + np.arange(count).astype(start.dtype) * d, start.dtype)


@register("Range", host=_host_range)
def range_(ctx: Context, start: Value, limit: Value, delta: Value) -> Tensor:
    arrays = [ctx.array(v) for v in (start, limit, delta)]
    return to_tensor(_host_range(ctx, *arrays), ctx.device)


@register("EyeLike", attrs=("dtype", "k"))
def eye_like(ctx: Context, x: Value) -> Tensor:
    dims = _shape(x)
    dtype = host_dtype(ctx, ctx.attr("dtype")) if ctx.attr("dtype") is not None else None
    if dtype is None:
        dtype = x.dtype.numpy if isinstance(x, Tensor) else np.asarray(x).dtype
    return to_tensor(np.eye(dims[0], dims[1], k=int(ctx.attr("k", 0)), dtype=dtype), ctx.device)


@register("Trilu", attrs=("upper",))
def trilu(ctx: Context, x: Value, k: Value = None) -> Tensor:
    t = ctx.tensor(x)
    diagonal = 0 if k is None else int(ctx.scalar(k))
    if t.num_elements() == 0:
        return t
    return t.triu(diagonal) if int(ctx.attr("upper", 1)) else t.tril(diagonal)


# -- depth and space ------------------------------------------------------------------------------
@register("DepthToSpace", attrs=("blocksize", "mode"))
def depth_to_space(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    b = int(ctx.attr("blocksize"))
    n, c, h, w = t.dims()
    if ctx.attr("mode", "DCR") == "DCR":
        t = t.reshape([n, b, b, c // (b * b), h, w]).permute([0, 3, 4, 1, 5, 2])
    else:
        t = t.reshape([n, c // (b * b), b, b, h, w]).permute([0, 1, 4, 2, 5, 3])
    return t.reshape([n, c // (b * b), h * b, w * b])


@register("SpaceToDepth", attrs=("blocksize", "mode"))
def space_to_depth(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    b = int(ctx.attr("blocksize"))
    n, c, h, w = t.dims()
    perm = [0, 3, 5, 1, 2, 4] if ctx.attr("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4]
    t = t.reshape([n, c, h // b, b, w // b, b]).permute(perm)
    return t.reshape([n, c * b * b, h // b, w // b])


@register("CenterCropPad", attrs=("axes",))
def center_crop_pad(ctx: Context, x: Value, shape: Value) -> Tensor:
    t = ctx.tensor(x)
    rank = t.rank
    sizes = ctx.ints(shape)
    axes = ctx.attr("axes")
    which = list(range(rank)) if axes is None else [norm_axis(ctx, int(a), rank) for a in axes]
    begins, ends = [0] * rank, [0] * rank
    for d, want in zip(which, sizes):
        have = t.dims()[d]
        if want < have:  # crop
            start = (have - want) // 2
            begins[d], ends[d] = -start, -(have - want - start)
        elif want > have:  # pad
            start = (want - have) // 2
            begins[d], ends[d] = start, want - have - start
    return pad_constant(t, begins, ends, 0, ctx)
