"""NumPy float64 references of the module ops, written from their definitions (window by window), and
helpers to call backend kernels that have no public function (the backward kernels)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from burn_backend import Device, ModuleOps, Tensor

Array = np.ndarray[Any, Any]


def at(*parts: Any) -> tuple[Any, ...]:
    """An index tuple (``a[at(slice(None), *offsets)]``: star-unpacking in a subscript needs 3.11)."""
    return parts


# -- calling kernels -----------------------------------------------------------------------------------
def _unwrap(value: Any) -> Any:
    return value._primitive if isinstance(value, Tensor) else value


def _wrap(device: Device, value: Any) -> Any:
    if value is None or isinstance(value, bool):  # an absent gradient, or a flag
        return value
    if isinstance(value, tuple):
        return tuple(_wrap(device, v) for v in value)
    return Tensor.from_primitive(value, device)


def kernel(device: Device, name: str, *args: Any) -> Any:
    """The backend's ``name`` kernel on the primitives of ``args``, wrapped back into tensors."""
    return _wrap(device, getattr(device.backend, name)(*(_unwrap(a) for a in args)))


def default(device: Device, name: str, *args: Any) -> Any:
    """The interface's default implementation of ``name`` run on ``device``'s backend."""
    method = getattr(ModuleOps, name)
    return _wrap(device, method(device.backend, *(_unwrap(a) for a in args)))


def as_f64(tensor: Tensor) -> Array:
    return np.asarray(tensor.to_numpy(), dtype=np.float64)


def check_adjoint(forward: Array, grad: Array, inputs: Array, input_grad: Any, tolerance: float) -> None:
    """``<forward, grad> == <inputs, input_grad>``: a backward kernel is the adjoint of a linear op.

    Both sides are compared relative to the sum of absolute products, so the check scales with size.
    """
    backward = as_f64(input_grad) if isinstance(input_grad, Tensor) else np.asarray(input_grad, np.float64)
    assert backward.shape == inputs.shape, f"shape: got {list(backward.shape)}, expected {list(inputs.shape)}"
    lhs = float(np.sum(forward * grad))
    rhs = float(np.sum(inputs * backward))
    magnitude = float(np.sum(np.abs(forward * grad))) + float(np.sum(np.abs(inputs * backward))) + 1e-30
    assert abs(lhs - rhs) <= tolerance * magnitude, f"<y, g> = {lhs} but <x, grad> = {rhs}"


# -- convolution ---------------------------------------------------------------------------------------
def _spans(
    offsets: Sequence[int], dilation: Sequence[int], out: Sequence[int], stride: Sequence[int]
) -> tuple[Any, ...]:
    return (
        slice(None),
        slice(None),
        *(slice(i * d, i * d + (o - 1) * s + 1, s) for i, d, o, s in zip(offsets, dilation, out, stride)),
    )


def conv(
    x: Array,
    w: Array,
    bias: Array | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """PyTorch's convolution (cross-correlation), one kernel offset at a time."""
    n = x.ndim - 2
    padded = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    kernel = w.shape[2:]
    out = [(padded.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    out_channels, per_group = w.shape[:2]
    per_group_out = out_channels // groups
    y = np.zeros((x.shape[0], out_channels, *out))
    for offsets in itertools.product(*(range(k) for k in kernel)):
        window = padded[_spans(offsets, dilation, out, stride)]
        for g in range(groups):
            part = window[:, g * per_group : (g + 1) * per_group]
            weights = w[at(slice(g * per_group_out, (g + 1) * per_group_out), slice(None), *offsets)]
            y[:, g * per_group_out : (g + 1) * per_group_out] += np.einsum("bc...,oc->bo...", part, weights)
    if bias is not None:
        y += bias.reshape((-1,) + (1,) * n)
    return y


def conv_weight_grad(
    x: Array,
    grad: Array,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """``d(sum(conv(x, w) * grad)) / dw``: each weight sees the window it multiplies."""
    padded = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out = grad.shape[2:]
    out_channels = grad.shape[1]
    per_group = x.shape[1] // groups
    per_group_out = out_channels // groups
    result = np.zeros((out_channels, per_group, *kernel))
    for offsets in itertools.product(*(range(k) for k in kernel)):
        window = padded[_spans(offsets, dilation, out, stride)]
        for g in range(groups):
            part = window[:, g * per_group : (g + 1) * per_group]
            gpart = grad[:, g * per_group_out : (g + 1) * per_group_out]
            batch = x.shape[0]
            result[at(slice(g * per_group_out, (g + 1) * per_group_out), slice(None), *offsets)] = np.einsum(
                "bcl,bol->oc", part.reshape(batch, per_group, -1), gpart.reshape(batch, per_group_out, -1)
            )
    return result


def conv_transpose(
    x: Array,
    w: Array,
    bias: Array | None,
    stride: Sequence[int],
    padding: Sequence[int],
    padding_out: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """PyTorch's transposed convolution by its definition: every input sample scatters ``x * w``."""
    n = x.ndim - 2
    sizes = x.shape[2:]
    kernel = w.shape[2:]
    in_channels, per_group_out = w.shape[:2]
    per_group_in = in_channels // groups
    full = [(sizes[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + padding_out[i] for i in range(n)]
    y = np.zeros((x.shape[0], per_group_out * groups, *full))
    for offsets in itertools.product(*(range(k) for k in kernel)):
        target = _spans(offsets, dilation, sizes, stride)
        for g in range(groups):
            part = x[:, g * per_group_in : (g + 1) * per_group_in]
            weights = w[at(slice(g * per_group_in, (g + 1) * per_group_in), slice(None), *offsets)]
            region = (target[0], slice(g * per_group_out, (g + 1) * per_group_out), *target[2:])
            y[region] += np.einsum("bi...,io->bo...", part, weights)
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    result: Array = y[at(slice(None), slice(None), *crop)]
    if bias is not None:
        result = result + bias.reshape((-1,) + (1,) * n)
    return result


def unfold(
    x: Array, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
) -> Array:
    """PyTorch's ``F.unfold``: ``[b, c * kh * kw, windows]``."""
    padded = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out = [(padded.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    batch, channels = x.shape[:2]
    columns = np.zeros((batch, channels, kernel[0], kernel[1], out[0] * out[1]))
    for i, j in itertools.product(range(kernel[0]), range(kernel[1])):
        columns[:, :, i, j] = padded[_spans((i, j), dilation, out, stride)].reshape(batch, channels, -1)
    return columns.reshape(batch, channels * kernel[0] * kernel[1], -1)


# -- pooling -------------------------------------------------------------------------------------------
def pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    numerator = size + 2 * p - d * (k - 1) - 1
    out = (math.ceil(numerator / s) if ceil_mode else numerator // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _avg_windows(
    sizes: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    include: bool,
    ceil_mode: bool,
) -> list[tuple[tuple[int, ...], tuple[slice, ...], int]]:
    """Each output of an average pool: its index, its window inside x, its divisor (PyTorch's rules)."""
    outs = [pool_out(n, k, s, p, 1, ceil_mode) for n, k, s, p in zip(sizes, kernel, stride, padding)]
    result = []
    for index in itertools.product(*(range(o) for o in outs)):
        region, divisor = [], 1
        for o, n, k, s, p in zip(index, sizes, kernel, stride, padding):
            start = o * s - p
            end = min(start + k, n + p)
            padded_count = end - start
            start, end = max(start, 0), min(end, n)
            region.append(slice(start, end))
            divisor *= padded_count if include else end - start
        result.append((index, tuple(region), divisor))
    return result


def avg_pool(
    x: Array,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    include: bool,
    ceil_mode: bool,
) -> Array:
    windows = _avg_windows(x.shape[2:], kernel, stride, padding, include, ceil_mode)
    outs = [max(w[0][i] for w in windows) + 1 for i in range(len(kernel))]
    y = np.zeros((*x.shape[:2], *outs))
    for index, region, divisor in windows:
        y[at(slice(None), slice(None), *index)] = (
            x[at(slice(None), slice(None), *region)].sum(axis=tuple(range(2, x.ndim))) / divisor
        )
    return y


def avg_pool_backward(
    x: Array,
    grad: Array,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    include: bool,
    ceil_mode: bool,
) -> Array:
    result = np.zeros(x.shape)
    for index, region, divisor in _avg_windows(x.shape[2:], kernel, stride, padding, include, ceil_mode):
        value = grad[at(slice(None), slice(None), *index)] / divisor
        result[at(slice(None), slice(None), *region)] += value.reshape(value.shape + (1,) * len(kernel))
    return result


def max_pool(
    x: Array,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> tuple[Array, Array]:
    """Values and flat indices: each window scanned row-major, the first maximum kept (padding skipped)."""
    sizes = x.shape[2:]
    outs = [
        pool_out(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)
    ]
    planes = x.reshape(-1, *sizes)
    values = np.zeros((planes.shape[0], *outs))
    indices = np.zeros((planes.shape[0], *outs), dtype=np.int64)
    for index in itertools.product(*(range(o) for o in outs)):
        positions = [
            [o * s - p + j * d for j in range(k) if 0 <= o * s - p + j * d < n]
            for o, s, p, d, k, n in zip(index, stride, padding, dilation, kernel, sizes)
        ]
        candidates = list(itertools.product(*positions))
        flat = [sum(c * math.prod(sizes[i + 1 :]) for i, c in enumerate(combo)) for combo in candidates]
        samples = np.stack([planes[at(slice(None), *combo)] for combo in candidates], axis=1)
        best = np.argmax(samples, axis=1)
        values[at(slice(None), *index)] = samples[np.arange(len(best)), best]
        indices[at(slice(None), *index)] = np.asarray(flat)[best]
    return values.reshape(*x.shape[:2], *outs), indices.reshape(*x.shape[:2], *outs)


def adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    return [(math.floor(i * size / out), math.ceil((i + 1) * size / out)) for i in range(out)]


def adaptive_avg_pool(x: Array, outs: Sequence[int]) -> Array:
    per_dim = [adaptive_windows(n, o) for n, o in zip(x.shape[2:], outs)]
    y = np.zeros((*x.shape[:2], *outs))
    for index in itertools.product(*(range(o) for o in outs)):
        region = tuple(slice(*per_dim[i][o]) for i, o in enumerate(index))
        y[at(slice(None), slice(None), *index)] = x[at(slice(None), slice(None), *region)].mean(
            axis=tuple(range(2, x.ndim))
        )
    return y


# -- interpolation -------------------------------------------------------------------------------------
def _cubic(t: Array) -> list[Array]:
    a = -0.75

    def near(v: Array) -> Array:
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Array) -> Array:
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _resample_axis(x: Array, axis: int, out: int, mode: str) -> Array:
    size = x.shape[axis]
    moved = np.moveaxis(x, axis, -1)
    if mode == "nearest":
        scale = np.float32(size) / np.float32(out)
        index = np.minimum(np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64), size - 1)
        return np.moveaxis(moved[..., index], -1, axis)
    source = np.arange(out) * ((size - 1) / (out - 1) if out > 1 else 0.0)
    base = np.floor(source).astype(np.int64)
    t = source - base
    if mode == "bilinear":
        low = np.minimum(base, size - 1)
        high = np.minimum(low + 1, size - 1)
        y = moved[..., low] * (1 - t) + moved[..., high] * t
    else:
        y = np.zeros((*moved.shape[:-1], out))
        for i, weight in enumerate(_cubic(t)):
            y += moved[..., np.clip(base - 1 + i, 0, size - 1)] * weight
    return np.moveaxis(y, -1, axis)


def interpolate(x: Array, outs: Sequence[int], mode: str) -> Array:
    """Resampling along height then width (separable, corners aligned for bilinear and bicubic)."""
    return _resample_axis(_resample_axis(x, 2, outs[0], mode), 3, outs[1], mode)


# -- attention and normalization -----------------------------------------------------------------------
def attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Array | None,
    bias: Array | None,
    scale: float | None,
    softcap: float | None,
    causal: bool,
) -> Array:
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if softcap is not None:
        scores = softcap * np.tanh(scores / softcap)
    hidden = np.zeros(scores.shape, dtype=bool)
    if mask is not None:
        hidden |= mask
    if causal:
        hidden |= np.triu(np.ones(scores.shape[-2:], dtype=bool), 1)
    scores = np.where(hidden, -np.inf, scores)
    if bias is not None:
        scores = scores + bias
    peak = scores.max(axis=-1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    weights = np.exp(scores - peak)
    total = weights.sum(axis=-1, keepdims=True)
    result: Array = (weights / np.where(total == 0, 1.0, total)) @ v
    return result


def layer_norm(x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y: Array = (x - mean) / np.sqrt(variance + epsilon)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y
