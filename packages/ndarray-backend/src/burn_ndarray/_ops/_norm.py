"""NdArray's layer, RMS, group and batch norm as numba kernels, forward and backward.

One mechanism serves the four: ``x`` is viewed ``[N, C, M]`` and cut into *sets*, each normalized by
its own statistics: a set covers ``nb`` consecutive samples (1, or all of them for batch norm) times
``cb`` consecutive channels (a group, one channel, or all of them) times the ``M`` trailing elements.
Layer and RMS norm view ``[rows, 1, d]`` with one set per row and their parameters indexed along
``M``; group norm views ``[N, C, M]`` with one set per sample and group; batch norm one set per
channel over the whole batch. The parameters (``gamma``, ``beta``) are per channel, or per element of
``M`` (``per_m``).

Each kernel reads its input once or twice: the statistics in one pass (sums of ``x - shift`` and its
squares in f64, the shift being the set's first element, so that the variance does not cancel where
the mean is large against the spread), the output in a second. The backward recomputes the statistics
where the interface gives none (layer, RMS, group), then one pass for the two sums of the closed form and
one for the input gradient, ``gamma``'s and ``beta``'s (summed per chunk of sets, then over the
chunks). f32 and f64 compute in f64 and round once; f16 and bf16 are widened to f32 first. Large inputs
are split over the numba threads the thread policy grants (``_threads``), in one chunk of sets per
thread.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit, prange

from burn_backend import BatchNormTraining, NormBackward

from .. import _kernels, _numba, _threads

Array = Any
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# how the input gradient treats the statistics: through mean and variance (layer, group, batch norm in
# training), through the mean square alone (RMS norm), or as constants (batch norm's running ones)
CENTER, SCALE, FROZEN = 0, 1, 2
_FAST = {"reassoc", "contract"}  # the sums vectorize; NaN and inf still propagate


@njit(cache=True, inline="always")
def _origin(s: int, nb: int, cb: int, cblocks: int) -> tuple[int, int]:  # pragma: no cover - compiled
    """The first sample and channel of set ``s``."""
    return (s // cblocks) * nb, (s % cblocks) * cb


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _stats(
    x: Array, nb: int, cb: int, center: bool, eps: float, first: int, last: int,
    mean: Array, var: Array, invstd: Array,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    """Mean, biased variance (the mean square where not ``center``) and ``1 / sqrt(var + eps)`` of the
    sets ``first`` to ``last``."""
    cblocks = x.shape[1] // cb
    size = x.shape[2]
    count = nb * cb * size
    for s in range(first, last):
        n0, c0 = _origin(s, nb, cb, cblocks)
        shift = np.float64(x[n0, c0, 0]) if center else 0.0
        total = 0.0
        squares = 0.0
        for n in range(nb):
            block = x[n0 + n, c0 : c0 + cb]
            for c in range(cb):
                row = block[c]
                for m in range(size):
                    d = np.float64(row[m]) - shift
                    total += d
                    squares += d * d
        mu = total / count
        variance = max(squares / count - mu * mu, 0.0) if center else squares / count
        mean[s] = shift + mu if center else 0.0
        var[s] = variance
        invstd[s] = 1.0 / math.sqrt(variance + eps)


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _apply(
    x: Array, gamma: Array, beta: Array, nb: int, cb: int, per_m: bool, first: int, last: int,
    mean: Array, invstd: Array, out: Array,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    """``(x - mean) * invstd * gamma + beta`` over the sets ``first`` to ``last``."""
    cblocks = x.shape[1] // cb
    size = x.shape[2]
    for s in range(first, last):
        n0, c0 = _origin(s, nb, cb, cblocks)
        mu = mean[s]
        inv = invstd[s]
        for n in range(nb):
            block = x[n0 + n, c0 : c0 + cb]
            target = out[n0 + n, c0 : c0 + cb]
            for c in range(cb):
                row = block[c]
                written = target[c]
                if per_m:
                    for m in range(size):
                        written[m] = (np.float64(row[m]) - mu) * (inv * gamma[m]) + beta[m]
                else:
                    scale = inv * gamma[c0 + c]
                    shifted = beta[c0 + c]
                    for m in range(size):
                        written[m] = (np.float64(row[m]) - mu) * scale + shifted


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _gradients(
    x: Array, grad: Array, gamma: Array, nb: int, cb: int, per_m: bool, mode: int, first: int, last: int,
    mean: Array, invstd: Array, x_grad: Array, gamma_grad: Array, beta_grad: Array,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    """The closed-form gradients over the sets ``first`` to ``last``: ``x_grad`` written, and this
    chunk's sums of ``grad * x^`` and ``grad`` per parameter added to ``gamma_grad`` and ``beta_grad``."""
    cblocks = x.shape[1] // cb
    size = x.shape[2]
    count = nb * cb * size
    for s in range(first, last):
        n0, c0 = _origin(s, nb, cb, cblocks)
        mu = mean[s]
        inv = invstd[s]
        mean_gy = 0.0
        mean_gy_xhat = 0.0
        if mode != FROZEN:
            sum_gy = 0.0
            sum_gy_xhat = 0.0
            for n in range(nb):
                block = x[n0 + n, c0 : c0 + cb]
                grads = grad[n0 + n, c0 : c0 + cb]
                for c in range(cb):
                    row = block[c]
                    g_row = grads[c]
                    for m in range(size):
                        gy = np.float64(g_row[m]) * gamma[m if per_m else c0 + c]
                        sum_gy += gy
                        sum_gy_xhat += gy * (np.float64(row[m]) - mu) * inv
            mean_gy = sum_gy / count if mode == CENTER else 0.0
            mean_gy_xhat = sum_gy_xhat / count
        for n in range(nb):
            block = x[n0 + n, c0 : c0 + cb]
            grads = grad[n0 + n, c0 : c0 + cb]
            target = x_grad[n0 + n, c0 : c0 + cb]
            for c in range(cb):
                row = block[c]
                g_row = grads[c]
                written = target[c]
                if per_m:
                    for m in range(size):
                        g = np.float64(g_row[m])
                        xhat = (np.float64(row[m]) - mu) * inv
                        gamma_grad[m] += g * xhat
                        beta_grad[m] += g
                        gy = g * gamma[m]
                        if mode == FROZEN:
                            written[m] = gy * inv
                        else:
                            written[m] = (gy - mean_gy - xhat * mean_gy_xhat) * inv
                else:
                    weight = gamma[c0 + c]
                    sum_g_xhat = 0.0
                    sum_g = 0.0
                    for m in range(size):
                        g = np.float64(g_row[m])
                        xhat = (np.float64(row[m]) - mu) * inv
                        sum_g_xhat += g * xhat
                        sum_g += g
                        if mode == FROZEN:
                            written[m] = g * weight * inv
                        else:
                            written[m] = (g * weight - mean_gy - xhat * mean_gy_xhat) * inv
                    gamma_grad[c0 + c] += sum_g_xhat
                    beta_grad[c0 + c] += sum_g


@njit(cache=True, error_model="numpy", parallel=True)
def _stats_parallel(
    x: Array, nb: int, cb: int, center: bool, eps: float, chunks: int,
    mean: Array, var: Array, invstd: Array,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    sets = mean.shape[0]
    for t in prange(chunks):
        _stats(x, nb, cb, center, eps, t * sets // chunks, (t + 1) * sets // chunks, mean, var, invstd)


@njit(cache=True, error_model="numpy", parallel=True)
def _apply_parallel(
    x: Array, gamma: Array, beta: Array, nb: int, cb: int, per_m: bool, chunks: int,
    mean: Array, invstd: Array, out: Array,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    sets = mean.shape[0]
    for t in prange(chunks):
        first, last = t * sets // chunks, (t + 1) * sets // chunks
        _apply(x, gamma, beta, nb, cb, per_m, first, last, mean, invstd, out)


@njit(cache=True, error_model="numpy", parallel=True)
def _gradients_parallel(
    x: Array, grad: Array, gamma: Array, nb: int, cb: int, per_m: bool, mode: int, chunks: int,
    mean: Array, invstd: Array, x_grad: Array, gamma_grad: Array, beta_grad: Array,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    sets = mean.shape[0]
    for t in prange(chunks):
        first, last = t * sets // chunks, (t + 1) * sets // chunks
        _gradients(
            x, grad, gamma, nb, cb, per_m, mode, first, last, mean, invstd,
            x_grad, gamma_grad[t], beta_grad[t],
        )  # fmt: skip


# -- the drivers: a view, its sets, serial or one chunk of sets per thread ------------------------------
class _Layout:
    """``x`` widened to f32 or f64 and viewed ``[N, C, M]``, cut into sets of ``nb`` samples by ``cb``
    channels, with parameters per channel or per element of ``M`` (``per_m``)."""

    def __init__(self, x: Array, view: tuple[int, int, int], nb: int, cb: int, per_m: bool) -> None:
        work = x if x.dtype in _KERNEL_DTYPES else x.astype(np.float32)
        self.x = np.ascontiguousarray(work).reshape(view)
        self.nb, self.cb, self.per_m = nb, cb, per_m
        self.sets = (view[0] // nb) * (view[1] // cb)
        self.params = view[2] if per_m else view[1]
        self.chunks = _chunks(self.x.size, self.sets)

    def param(self, value: Array | None, default: float) -> Array:
        """A parameter as f64 ``[params]`` (``default`` everywhere where absent)."""
        if value is None:
            return np.full(self.params, default)
        return np.asarray(value, dtype=np.float64).reshape(self.params)

    def stats(self, center: bool, eps: float) -> tuple[Array, Array, Array]:
        """Each set's mean, variance and ``invstd``, f64 ``[sets]``."""
        mean, var, invstd = (np.empty(self.sets) for _ in range(3))
        args = (self.x, self.nb, self.cb, center, float(eps))
        if self.chunks > 1:
            _stats_parallel(*args, self.chunks, mean, var, invstd)
        else:
            _stats(*args, 0, self.sets, mean, var, invstd)
        return mean, var, invstd

    def apply(self, gamma: Array | None, beta: Array | None, mean: Array, invstd: Array) -> Array:
        """The normalized output, in the work dtype and the view's shape."""
        out = np.empty_like(self.x)
        args = (self.x, self.param(gamma, 1.0), self.param(beta, 0.0), self.nb, self.cb, self.per_m)
        if self.chunks > 1:
            _apply_parallel(*args, self.chunks, mean, invstd, out)
        else:
            _apply(*args, 0, self.sets, mean, invstd, out)
        return out

    def gradients(
        self, grad: Array, gamma: Array | None, mode: int, mean: Array, invstd: Array
    ) -> tuple[Array, Array, Array]:
        """``x``'s gradient (work dtype, the view's shape) and the f64 sums for ``gamma`` and ``beta``."""
        grad = np.ascontiguousarray(grad, dtype=self.x.dtype).reshape(self.x.shape)
        x_grad = np.empty_like(self.x)
        sums = np.zeros((2, self.chunks, self.params))
        args = (self.x, grad, self.param(gamma, 1.0), self.nb, self.cb, self.per_m, mode)
        if self.chunks > 1:
            _gradients_parallel(*args, self.chunks, mean, invstd, x_grad, sums[0], sums[1])
        else:
            _gradients(*args, 0, self.sets, mean, invstd, x_grad, sums[0, 0], sums[1, 0])
        return x_grad, sums[0].sum(axis=0), sums[1].sum(axis=0)


def _chunks(size: int, sets: int) -> int:
    """One chunk of sets per numba thread for inputs the policy splits (``_kernels.parallel``), else 1."""
    if sets < 2 or not _kernels.parallel(size):
        return 1
    return min(sets, _threads.numba_threads())


def _rows(x: Array) -> _Layout:
    """Layer and RMS norm: one set per row of the last dim, parameters along it."""
    width = x.shape[-1]
    return _Layout(x, (x.size // width, 1, width), 1, 1, True)


def _groups(x: Array, num_groups: int) -> _Layout:
    batch, channels = x.shape[0], x.shape[1]
    return _Layout(x, (batch, channels, math.prod(x.shape[2:])), 1, channels // num_groups, False)


def _per_channel(x: Array) -> _Layout:
    batch, channels = x.shape[0], x.shape[1]
    return _Layout(x, (batch, channels, math.prod(x.shape[2:])), batch, 1, False)


def _result(x: Array, out: Array) -> Array:
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def _backward(
    x: Array, layout: _Layout, grads: tuple[Array, Array, Array], gamma: Array | None, beta: Array | None
) -> NormBackward:
    x_grad, gamma_grad, beta_grad = grads
    return NormBackward(
        _result(x, x_grad),
        None if gamma is None else gamma_grad.astype(x.dtype),
        None if beta is None else beta_grad.astype(x.dtype),
    )


# -- the ops ------------------------------------------------------------------------------------------
_F = TypeVar("_F", bound=Callable[..., Any])


def _silent(op: _F) -> _F:
    """``op`` with NumPy's floating-point warnings off: inf and NaN propagate as IEEE says (a negative
    running variance, a value past f16's range), as the composed ops let them."""

    @functools.wraps(op)
    def wrapper(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            return op(*args)

    return wrapper  # type: ignore[return-value]


@_silent
def layer_norm(x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
    """Layer norm over the last dim of ``x`` (f32, f64, f16 or bf16), as ``ModuleOps.layer_norm``."""
    layout = _rows(x)
    mean, _, invstd = layout.stats(True, epsilon)
    return _result(x, layout.apply(gamma, beta, mean, invstd))


@_silent
def layer_norm_backward(
    x: Array, gamma: Array | None, beta: Array | None, epsilon: float, output_grad: Array
) -> NormBackward:
    """The gradients of ``layer_norm``, the statistics recomputed from ``x``."""
    layout = _rows(x)
    mean, _, invstd = layout.stats(True, epsilon)
    return _backward(x, layout, layout.gradients(output_grad, gamma, CENTER, mean, invstd), gamma, beta)


@_silent
def rms_norm(x: Array, gamma: Array | None, epsilon: float) -> Array:
    """RMS norm over the last dim of ``x``, as ``ModuleOps.rms_norm``."""
    layout = _rows(x)
    mean, _, invstd = layout.stats(False, epsilon)
    return _result(x, layout.apply(gamma, None, mean, invstd))


@_silent
def rms_norm_backward(x: Array, gamma: Array | None, epsilon: float, output_grad: Array) -> NormBackward:
    """The gradients of ``rms_norm`` (``beta_grad`` is ``None``)."""
    layout = _rows(x)
    mean, _, invstd = layout.stats(False, epsilon)
    return _backward(x, layout, layout.gradients(output_grad, gamma, SCALE, mean, invstd), gamma, None)


@_silent
def group_norm(x: Array, gamma: Array | None, beta: Array | None, num_groups: int, epsilon: float) -> Array:
    """Group norm of ``x [N, C, *]`` (``C`` a multiple of ``num_groups``), as ``ModuleOps.group_norm``."""
    layout = _groups(x, num_groups)
    mean, _, invstd = layout.stats(True, epsilon)
    return _result(x, layout.apply(gamma, beta, mean, invstd))


@_silent
def group_norm_backward(
    x: Array, gamma: Array | None, beta: Array | None, num_groups: int, epsilon: float, output_grad: Array
) -> NormBackward:
    """The gradients of ``group_norm``, the statistics recomputed from ``x``."""
    layout = _groups(x, num_groups)
    mean, _, invstd = layout.stats(True, epsilon)
    return _backward(x, layout, layout.gradients(output_grad, gamma, CENTER, mean, invstd), gamma, beta)


@_silent
def batch_norm(
    x: Array, gamma: Array | None, beta: Array | None, running_mean: Array, running_var: Array, epsilon: float
) -> Array:
    """Batch norm of ``x [N, C, *]`` by its running statistics (``[C]``), as ``ModuleOps.batch_norm``."""
    layout = _per_channel(x)
    mean = np.asarray(running_mean, dtype=np.float64).reshape(layout.sets)
    invstd = 1.0 / np.sqrt(np.asarray(running_var, dtype=np.float64).reshape(layout.sets) + epsilon)
    return _result(x, layout.apply(gamma, beta, mean, invstd))


@_silent
def batch_norm_training(
    x: Array,
    gamma: Array | None,
    beta: Array | None,
    running_mean: Array | None,
    running_var: Array | None,
    momentum: float,
    epsilon: float,
) -> BatchNormTraining:
    """Batch norm of ``x [N, C, *]`` by the batch's statistics, with the running ones updated (the
    unbiased variance for ``running_var``), as ``ModuleOps.batch_norm_training``."""
    layout = _per_channel(x)
    mean, var, invstd = layout.stats(True, epsilon)
    output = _result(x, layout.apply(gamma, beta, mean, invstd))
    count = layout.x.size // x.shape[1]
    new_mean = new_var = None
    if running_mean is not None:
        running = np.asarray(running_mean, dtype=np.float64)
        new_mean = (running * (1.0 - momentum) + mean * momentum).astype(x.dtype)
    if running_var is not None:
        unbiased = momentum * count / max(count - 1, 1)
        new_var = (np.asarray(running_var, dtype=np.float64) * (1.0 - momentum) + var * unbiased).astype(
            x.dtype
        )
    return BatchNormTraining(output, new_mean, new_var, mean.astype(x.dtype), invstd.astype(x.dtype))


@_silent
def batch_norm_backward(
    x: Array,
    gamma: Array | None,
    beta: Array | None,
    mean: Array,
    invstd: Array,
    training: bool,
    output_grad: Array,
) -> NormBackward:
    """The gradients of batch norm from the statistics it normalized with (``[C]``): the batch's
    (``training``) or the running ones as constants, as ``ModuleOps.batch_norm_backward``."""
    layout = _per_channel(x)
    saved = (np.asarray(a, dtype=np.float64).reshape(layout.sets) for a in (mean, invstd))
    grads = layout.gradients(output_grad, gamma, CENTER if training else FROZEN, *saved)
    return _backward(x, layout, grads, gamma, beta)


# -- the binding: NdArray's ops, the composed array code where the kernels do not apply ----------------
_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)})


def _fits(x: Array, least_rank: int) -> bool:
    """Whether the kernels take ``x``: a float of at least ``least_rank`` dims with elements, and numba
    available (``BURN_NDARRAY_NUMBA=0`` or a failed kernel leave it to the array code)."""
    dtype = x.dtype
    return (
        (dtype in _DTYPES or dtype.name == "bfloat16")
        and x.ndim >= least_rank
        and x.size > 0
        and _numba.kernels() is not None
    )


def _grouped(x: Array, num_groups: int) -> bool:
    return _fits(x, 2) and num_groups > 0 and x.shape[1] % num_groups == 0


class NormOps:
    """NdArray's normalization ops as the kernels above; the composed array code (``burn_backend.array``,
    after this class in NdArray's MRO) for what they do not take, and its errors for bad arguments."""

    def _norm_op(self, name: str, fits: bool, *args: Any) -> Any:
        """The kernel ``name`` of this module on ``args`` where it ``fits``, else (or where it failed,
        numba then off for the process) the next class's op of that name."""
        if fits:
            try:
                return globals()[name](*args)
            except Exception as error:
                _numba.disable(error)
        return getattr(super(), name)(*args)

    def layer_norm(self, x: Array, gamma: Array | None, beta: Array | None, epsilon: float) -> Array:
        return self._norm_op("layer_norm", _fits(x, 1), x, gamma, beta, epsilon)

    def layer_norm_backward(
        self, x: Array, gamma: Array | None, beta: Array | None, epsilon: float, output_grad: Array
    ) -> NormBackward:
        return cast(
            NormBackward,
            self._norm_op("layer_norm_backward", _fits(x, 1), x, gamma, beta, epsilon, output_grad),
        )

    def rms_norm(self, x: Array, gamma: Array | None, epsilon: float) -> Array:
        return self._norm_op("rms_norm", _fits(x, 1), x, gamma, epsilon)

    def rms_norm_backward(
        self, x: Array, gamma: Array | None, epsilon: float, output_grad: Array
    ) -> NormBackward:
        return cast(
            NormBackward, self._norm_op("rms_norm_backward", _fits(x, 1), x, gamma, epsilon, output_grad)
        )

    def group_norm(
        self, x: Array, gamma: Array | None, beta: Array | None, num_groups: int, epsilon: float
    ) -> Array:
        return self._norm_op("group_norm", _grouped(x, num_groups), x, gamma, beta, num_groups, epsilon)

    def group_norm_backward(
        self, x: Array, gamma: Array | None, beta: Array | None, num_groups: int, epsilon: float,
        output_grad: Array,
    ) -> NormBackward:  # fmt: skip
        args = (x, gamma, beta, num_groups, epsilon, output_grad)
        return cast(NormBackward, self._norm_op("group_norm_backward", _grouped(x, num_groups), *args))

    def batch_norm(
        self, x: Array, gamma: Array | None, beta: Array | None, running_mean: Array, running_var: Array,
        epsilon: float,
    ) -> Array:  # fmt: skip
        args = (x, gamma, beta, running_mean, running_var, epsilon)
        return self._norm_op("batch_norm", _fits(x, 2), *args)

    def batch_norm_training(
        self, x: Array, gamma: Array | None, beta: Array | None, running_mean: Array | None,
        running_var: Array | None, momentum: float, epsilon: float,
    ) -> BatchNormTraining:  # fmt: skip
        args = (x, gamma, beta, running_mean, running_var, momentum, epsilon)
        return cast(BatchNormTraining, self._norm_op("batch_norm_training", _fits(x, 2), *args))

    def batch_norm_backward(
        self, x: Array, gamma: Array | None, beta: Array | None, mean: Array, invstd: Array, training: bool,
        output_grad: Array,
    ) -> NormBackward:  # fmt: skip
        args = (x, gamma, beta, mean, invstd, training, output_grad)
        return cast(NormBackward, self._norm_op("batch_norm_backward", _fits(x, 2), *args))
