"""Cuda's normalization ops (layer, RMS, group and batch norm, forward and backward) as CUDA C kernels.

Layer and RMS norm, and group norm over sets of up to 8192 elements, run the *set* kernels of
``_norm_kernels``: one block per normalized set (a row; a sample's group of channels), held in
registers, so that the forward reads ``x`` once and the backward ``x`` and ``dy`` once, for the
statistics and the result alike; the parameters' gradients are partial sums per block (or per set and
channel) that a second stage sums. Batch norm, and group norm over larger sets, run the *channel*
kernels: partial sums per channel (per channel of each sample for group norm) split over blocks, the
per-channel coefficients from them, then one element-wise pass. Statistics are computed in f32 (f64
for f64); f16 computes natively in f32 and rounds once; bf16 is widened to f32 and rounded back
(``_low_in_f32``). What the kernels do not take (another dtype, parameters of another dtype or shape,
empty inputs, layer and RMS norm backward over rows longer than 16384) runs ``burn_backend.array``'s
shared code, so results do not depend on the path.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from burn_backend import BatchNormTraining, NormBackward
from burn_backend.array import ArrayModuleOps

from .._cupy import contiguous, cp
from . import _norm_kernels as kernels

Array = Any
_SHARED: Any = ArrayModuleOps  # the shared code, for what the kernels do not take
_CACHED = 16  # elements per thread held in registers: x's at most, dy's at most half as many
_PER_ELEMENT_MAX = 16  # per-element parameter sums in registers too (layer and RMS norm's backward)
_SET_MAX = 8 * 1024  # group norm's sets up to this size: one block each, else split over blocks
_BACKWARD_ROW_MAX = _PER_ELEMENT_MAX * 1024  # layer and RMS norm's backward: rows up to this long


F = TypeVar("F", bound=Callable[..., Any])
_NATIVE = kernels.KERNEL_DTYPES | {None}  # (None: not an array)


def _low_in_f32(method: F) -> F:
    """``method`` with its operands of a float dtype the kernels do not take (bf16) widened to f32 by
    the runtime, and its f32 results (arrays, or a named tuple of them) rounded back once."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any) -> Any:
        runtime = self.runtime
        wide = [a if getattr(a, "dtype", None) in _NATIVE else runtime.widen(a) for a in args]
        low = next((a.dtype for a, w in zip(args, wide, strict=True) if w is not a), None)
        if low is None:
            return method(self, *args)
        result = method(self, *wide)

        def narrow(value: Any) -> Any:
            return value if value is None or value.dtype != np.float32 else runtime.narrow(value, low)

        if isinstance(result, tuple):
            return type(result)(*(narrow(r) for r in result))
        return narrow(result)

    return wrapper  # type: ignore[return-value]


@functools.cache
def _sm_count(device: int) -> int:
    return int(cp.cuda.Device(device).attributes["MultiProcessorCount"])


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _layout(size: int) -> tuple[int, int]:
    """The block size and elements per thread for a set of ``size``: eight per thread up to a block of
    1024 threads, then more per thread."""
    block = 1024 if size > 8 * 1024 else max(32, _pow2(-(-size // 8)))
    return block, _pow2(-(-size // block))


def _grid(function: Any, block: int, sets: int, waves: int = 1) -> int:
    """``waves`` times as many blocks as fit on the device at once, at most one per set (a
    grid-stride loop takes the other sets)."""
    per_sm = 2048 // block
    regs = int(getattr(function, "num_regs", 0))
    if regs:
        per_sm = min(per_sm, 65536 // (regs * block))
    return max(1, min(sets, _sm_count(cp.cuda.runtime.getDevice()) * max(1, per_sm) * waves))


def _param_ok(param: Array | None, x: Array, size: int) -> bool:
    return param is None or (param.dtype == x.dtype and param.shape == (size,))


def _same(x: Array, grad: Array) -> bool:
    return bool(grad.shape == x.shape and grad.dtype == x.dtype)


def _fits(x: Array, *params: Array | None, size: int) -> bool:
    """Whether the kernels take ``x`` (the parameters being ``[size]`` or ``None``)."""
    return (
        x.dtype in kernels.KERNEL_DTYPES
        and x.size > 0
        and size > 0
        and all(_param_ok(p, x, size) for p in params)
    )


def _sets_forward(
    x: Array, gamma: Array | None, beta: Array | None, sets: int, size: int, m: int, cb: int, g: int,
    epsilon: float, center: bool,
) -> Array:  # fmt: skip
    block, k = _layout(size)
    cached = k <= _CACHED
    function = kernels.sets_kernel(x.dtype, "forward", k, cached, False, g == 1 and m == 1)
    y = cp.empty(x.shape, dtype=x.dtype)
    eps = kernels.accumulation(x.dtype).type(epsilon)
    args = (x, gamma, beta, y, np.int64(sets), np.int32(size), np.int32(m), np.int32(cb), np.int32(g))
    function((_grid(function, block, sets, 4),), (block,), (*args, eps, np.int32(center), np.int32(k)))
    return y


def _sets_backward(
    x: Array, gamma: Array | None, want_params: bool, dy: Array, sets: int, size: int, m: int, cb: int,
    g: int, epsilon: float, center: bool,
) -> tuple[Array, Array | None, Array | None]:  # fmt: skip
    """``dx`` and, where ``want_params``, the parameters' gradients (of ``x``'s dtype) summed per
    element of the set (layer and RMS norm) or per channel (group norm)."""
    block, k = _layout(size)
    per_element = g == 1 and m == 1 and k <= _CACHED  # (else per channel: one reduction each)
    function = kernels.sets_kernel(x.dtype, "backward", k, k <= _CACHED, k <= _CACHED // 2, per_element)
    grid = _grid(function, block, sets)
    accumulate = kernels.accumulation(x.dtype)
    dx = cp.empty(x.shape, dtype=x.dtype)
    partial_g = partial_b = None
    if want_params:
        rows = grid if per_element else sets
        partial_g = cp.empty((rows, size if per_element else cb), dtype=accumulate)
        partial_b = cp.empty((rows, size if per_element else cb), dtype=accumulate)
    args = (x, gamma, dy, dx, partial_g, partial_b, np.int64(sets), np.int32(size), np.int32(m))
    rest = (np.int32(cb), np.int32(g), accumulate.type(epsilon), np.int32(center), np.int32(k))
    function((grid,), (block,), (*args, *rest))
    if partial_g is None or partial_b is None:
        return dx, None, None
    if not per_element:  # [N * G, cb]: one row of C channels per sample
        partial_g, partial_b = (p.reshape(sets // g, g * cb) for p in (partial_g, partial_b))
    return (
        dx,
        partial_g.sum(axis=0).astype(x.dtype, copy=False),
        partial_b.sum(axis=0).astype(x.dtype, copy=False),
    )


def _channel_partials(
    x: Array, dy: Array | None, shift: Array | None, view: tuple[int, int, int], cb: int = 1
) -> tuple[list[Any], int]:
    """The partial sums of ``burn_norm_channels_partial`` over ``x`` viewed ``view`` (``[N, C, M]``),
    ``[C, splits]`` each (the last two ``None`` without ``dy``), and ``splits``."""
    n, c, m = view
    count = n * m
    target = _sm_count(cp.cuda.runtime.getDevice()) * 16
    splits = max(1, min(-(-count // 2048), -(-target // c)))
    chunk = -(-count // splits)
    splits = -(-count // chunk)
    accumulate = kernels.accumulation(x.dtype)
    partials: list[Any] = [cp.empty((c, splits), dtype=accumulate) for _ in range(2)]
    partials += [cp.empty((c, splits), dtype=accumulate) if dy is not None else None for _ in range(2)]
    function = kernels.channels_kernel(x.dtype, "channels_partial")
    sizes = (np.int64(n), np.int64(c), np.int64(m), np.int64(cb), np.int64(splits), np.int64(chunk))
    function((c * splits,), (256,), (x, dy, shift, *partials, *sizes))
    return partials, splits


def _channel_apply(
    u: Array, v: Array | None, a: Array, b: Array | None, d: Array, channels: int, size: int
) -> Array:
    """``a[c] * u + b[c] * v + d[c]`` over ``u`` viewed ``[N, channels, size]`` (no ``v`` term where
    ``v`` is ``None``)."""
    out = cp.empty(u.shape, dtype=u.dtype)
    total = u.size
    blocks = -(-total // (8 * 256))  # (eight elements a thread)
    function = kernels.channels_kernel(u.dtype, "channels_apply")
    function((blocks,), (256,), (u, v, a, b, d, out, np.int64(total), np.int64(channels), np.int64(size)))
    return out


def _groups(
    x: Array, gamma: Array | None, beta: Array | None, dy: Array | None, num_groups: int, epsilon: float
) -> tuple[Array, Array | None, Array | None]:
    """Group norm over sets too large for one block: the partial sums of each channel of each sample
    (split over blocks), the per-row coefficients from them, and one element-wise pass. Gives the
    output without ``dy``, else ``dx`` and the parameters' gradients."""
    n, c, m = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    rows, cb = n * c, c // num_groups
    accumulate = kernels.accumulation(x.dtype)
    partials, splits = _channel_partials(x, dy, None, (1, rows, m), cb)
    coefficients = [cp.empty(rows, dtype=accumulate) for _ in range(3)]
    want = dy is not None and (gamma is not None or beta is not None)
    sums: list[Any] = [cp.empty(rows, dtype=accumulate) if want else None for _ in range(2)]
    function = kernels.channels_kernel(x.dtype, "groups_coefficients")
    sizes = (np.int64(rows), np.int64(c), np.int64(m), np.int64(cb), np.int64(splits))
    args = (x, gamma, beta, *partials, *coefficients, *sums, *sizes, accumulate.type(epsilon))
    function((-(-rows // 256),), (256,), args)
    a, b, d = coefficients
    if dy is None:
        return _channel_apply(x, None, a, None, d, rows, m), None, None
    dx = _channel_apply(dy, x, a, b, d, rows, m)
    if sums[0] is None or sums[1] is None:
        return dx, None, None
    gamma_grad, beta_grad = (s.reshape(n, c).sum(axis=0).astype(x.dtype, copy=False) for s in sums)
    return dx, gamma_grad, beta_grad


class NormOps:
    """Cuda's overrides of the normalization ops of ``ModuleOps``: CUDA C kernels (see the module's
    docstring) where they take the case, else ``burn_backend.array``'s shared code."""

    @_low_in_f32
    def layer_norm(self, x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
        """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last dim (biased variance)."""
        size = x.shape[-1] if x.ndim else 0
        if not _fits(x, gamma, beta, size=size):
            return _SHARED.layer_norm(self, x, gamma, beta, epsilon)
        x = contiguous(x)
        return _sets_forward(x, gamma, beta, x.size // size, size, 1, size, 1, epsilon, True)

    @_low_in_f32
    def layer_norm_backward(
        self, x: Array, gamma: Array | None, beta: Array | None, epsilon: float, output_grad: Array
    ) -> NormBackward:
        """The gradients of ``layer_norm`` given ``output_grad`` (statistics recomputed from ``x``)."""
        size = x.shape[-1] if x.ndim else 0
        if not _fits(x, gamma, beta, size=size) or not _same(x, output_grad) or size > _BACKWARD_ROW_MAX:
            return NormBackward(*_SHARED.layer_norm_backward(self, x, gamma, beta, epsilon, output_grad))
        x, dy = contiguous(x), contiguous(output_grad)
        want = gamma is not None or beta is not None
        dx, dg, db = _sets_backward(x, gamma, want, dy, x.size // size, size, 1, size, 1, epsilon, True)
        return NormBackward(dx, None if gamma is None else dg, None if beta is None else db)

    @_low_in_f32
    def rms_norm(self, x: Array, gamma: Array | None, epsilon: float) -> Array:
        """``x / sqrt(mean(x^2) + epsilon) * gamma`` over the last dim."""
        size = x.shape[-1] if x.ndim else 0
        if not _fits(x, gamma, size=size):
            return _SHARED.rms_norm(self, x, gamma, epsilon)
        x = contiguous(x)
        return _sets_forward(x, gamma, None, x.size // size, size, 1, size, 1, epsilon, False)

    @_low_in_f32
    def rms_norm_backward(
        self, x: Array, gamma: Array | None, epsilon: float, output_grad: Array
    ) -> NormBackward:
        """The gradients of ``rms_norm`` given ``output_grad`` (``beta_grad`` is ``None``)."""
        size = x.shape[-1] if x.ndim else 0
        if not _fits(x, gamma, size=size) or not _same(x, output_grad) or size > _BACKWARD_ROW_MAX:
            return NormBackward(*_SHARED.rms_norm_backward(self, x, gamma, epsilon, output_grad))
        x, dy = contiguous(x), contiguous(output_grad)
        dx, dg, _ = _sets_backward(
            x, gamma, gamma is not None, dy, x.size // size, size, 1, size, 1, epsilon, False
        )
        return NormBackward(dx, dg, None)

    @_low_in_f32
    def group_norm(
        self, x: Array, gamma: Array | None, beta: Array | None, num_groups: int, epsilon: float
    ) -> Array:
        """Group normalization of ``x [N, C, *]``: each group of ``C / num_groups`` channels of each
        sample normalized by its mean and biased variance, then ``gamma`` and ``beta`` per channel."""
        if not _group_fits(x, num_groups, gamma, beta):
            return _SHARED.group_norm(self, x, gamma, beta, num_groups, epsilon)
        x = contiguous(x)
        n, c, m = x.shape[0], x.shape[1], math.prod(x.shape[2:])
        cb = c // num_groups
        if cb * m > _SET_MAX:
            return _groups(x, gamma, beta, None, num_groups, epsilon)[0]
        return _sets_forward(x, gamma, beta, n * num_groups, cb * m, m, cb, num_groups, epsilon, True)

    @_low_in_f32
    def group_norm_backward(
        self,
        x: Array,
        gamma: Array | None,
        beta: Array | None,
        num_groups: int,
        epsilon: float,
        output_grad: Array,
    ) -> NormBackward:
        """The gradients of ``group_norm`` given ``output_grad`` (statistics recomputed)."""
        if not _group_fits(x, num_groups, gamma, beta) or not _same(x, output_grad):
            return NormBackward(
                *_SHARED.group_norm_backward(self, x, gamma, beta, num_groups, epsilon, output_grad)
            )
        x, dy = contiguous(x), contiguous(output_grad)
        n, c, m = x.shape[0], x.shape[1], math.prod(x.shape[2:])
        cb = c // num_groups
        want = gamma is not None or beta is not None
        if cb * m > _SET_MAX:
            dx, dg, db = _groups(x, gamma, beta, dy, num_groups, epsilon)
            return NormBackward(dx, None if gamma is None else dg, None if beta is None else db)
        dx, dg, db = _sets_backward(
            x, gamma, want, dy, n * num_groups, cb * m, m, cb, num_groups, epsilon, True
        )
        return NormBackward(dx, None if gamma is None else dg, None if beta is None else db)

    @_low_in_f32
    def batch_norm(
        self,
        x: Array,
        gamma: Array | None,
        beta: Array | None,
        running_mean: Array,
        running_var: Array,
        epsilon: float,
    ) -> Array:
        """Batch normalization of ``x [N, C, *]`` by the running statistics (inference form)."""
        if not _channels_fit(x, gamma, beta, running_mean, running_var):
            return _SHARED.batch_norm(self, x, gamma, beta, running_mean, running_var, epsilon)
        accumulate = kernels.accumulation(x.dtype)
        scale = 1.0 / cp.sqrt(running_var.astype(accumulate, copy=False) + accumulate.type(epsilon))
        a = scale if gamma is None else scale * gamma.astype(accumulate, copy=False)
        d = -running_mean.astype(accumulate, copy=False) * a
        if beta is not None:
            d += beta.astype(accumulate, copy=False)
        return _channel_apply(contiguous(x), None, a, None, d, x.shape[1], math.prod(x.shape[2:]))

    @_low_in_f32
    def batch_norm_training(
        self,
        x: Array,
        gamma: Array | None,
        beta: Array | None,
        running_mean: Array | None,
        running_var: Array | None,
        momentum: float,
        epsilon: float,
    ) -> BatchNormTraining:
        """Batch normalization of ``x [N, C, *]`` by the batch's statistics, with the running ones
        updated (unbiased variance); see ``BatchNormTraining``."""
        if not _channels_fit(x, gamma, beta, running_mean, running_var):
            return BatchNormTraining(
                *_SHARED.batch_norm_training(
                    self, x, gamma, beta, running_mean, running_var, momentum, epsilon
                )
            )
        x = contiguous(x)
        accumulate = kernels.accumulation(x.dtype)
        view = (x.shape[0], x.shape[1], math.prod(x.shape[2:]))
        count = view[0] * view[2]
        shift = cp.ascontiguousarray(x.reshape(view)[0, :, 0].astype(accumulate, copy=False))
        (sums, squares, _, _), _ = _channel_partials(x, None, shift, view)
        sums, squares = sums.sum(axis=1), squares.sum(axis=1)
        offset = sums / count
        variance = cp.maximum(squares / count - offset * offset, 0)
        mean = shift + offset
        invstd = 1.0 / cp.sqrt(variance + accumulate.type(epsilon))
        a = invstd if gamma is None else invstd * gamma.astype(accumulate, copy=False)
        d = -mean * a
        if beta is not None:
            d += beta.astype(accumulate, copy=False)
        output = _channel_apply(x, None, a, None, d, view[1], view[2])
        new_mean = new_var = None
        if running_mean is not None:
            updated = running_mean.astype(accumulate, copy=False) * (1.0 - momentum) + mean * momentum
            new_mean = updated.astype(x.dtype, copy=False)
        if running_var is not None:
            unbiased = momentum * count / max(count - 1, 1)
            new_var = (
                running_var.astype(accumulate, copy=False) * (1.0 - momentum) + variance * unbiased
            ).astype(x.dtype)
        return BatchNormTraining(
            output, new_mean, new_var, mean.astype(x.dtype, copy=False), invstd.astype(x.dtype, copy=False)
        )

    @_low_in_f32
    def batch_norm_backward(
        self,
        x: Array,
        gamma: Array | None,
        beta: Array | None,
        mean: Array,
        invstd: Array,
        training: bool,
        output_grad: Array,
    ) -> NormBackward:
        """The gradients of batch normalization given ``output_grad``, from the statistics the
        forward normalized with: the batch's (``training``) or the frozen running ones."""
        if not _channels_fit(x, gamma, beta, mean, invstd) or not _same(x, output_grad):
            return NormBackward(
                *_SHARED.batch_norm_backward(self, x, gamma, beta, mean, invstd, training, output_grad)
            )
        x, dy = contiguous(x), contiguous(output_grad)
        accumulate = kernels.accumulation(x.dtype)
        view = (x.shape[0], x.shape[1], math.prod(x.shape[2:]))
        count = view[0] * view[2]
        mean_a, invstd_a = mean.astype(accumulate, copy=False), invstd.astype(accumulate, copy=False)
        a = invstd_a if gamma is None else invstd_a * gamma.astype(accumulate, copy=False)
        grad_sum = centered_sum = None
        if training or gamma is not None or beta is not None:
            (_, _, grad_sum, centered_sum), _ = _channel_partials(x, dy, cp.ascontiguousarray(mean_a), view)
            grad_sum, centered_sum = grad_sum.sum(axis=1), centered_sum.sum(axis=1)
        if training and grad_sum is not None and centered_sum is not None:
            k = invstd_a * invstd_a * centered_sum / count
            dx = _channel_apply(dy, x, a, -a * k, a * (k * mean_a - grad_sum / count), view[1], view[2])
        else:
            dx = _channel_apply(dy, None, a, None, cp.zeros_like(a), view[1], view[2])
        gamma_grad = (
            None
            if gamma is None or centered_sum is None
            else (invstd_a * centered_sum).astype(x.dtype, copy=False)
        )
        beta_grad = None if beta is None or grad_sum is None else grad_sum.astype(x.dtype, copy=False)
        return NormBackward(dx, gamma_grad, beta_grad)


def _group_fits(x: Array, num_groups: int, gamma: Array | None, beta: Array | None) -> bool:
    if x.ndim < 2 or num_groups <= 0 or x.shape[1] % num_groups:
        return False
    size = x.size // (x.shape[0] * num_groups) if x.shape[0] else 0
    return _fits(x, gamma, beta, size=x.shape[1]) and 0 < size < 2**31


def _channels_fit(x: Array, *params: Array | None) -> bool:
    """Whether the channel kernels take ``x [N, C, *]`` with per-channel ``params`` (or ``None``)."""
    return x.ndim >= 2 and x.shape[1] > 0 and _fits(x, *params, size=x.shape[1])
