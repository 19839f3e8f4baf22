"""NdArray's module ops: where NumPy does better than ``burn_backend.array``'s shared code."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from burn_backend.array import ArrayModuleOps

from .. import _numba
from . import _conv, _rnn

Array = Any
Sizes = Any


def _silent(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` with NumPy's floating-point warnings off: inf and NaN propagate as IEEE says."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(all="ignore"):
            return method(*args, **kwargs)

    return wrapper


class ModuleOps(ArrayModuleOps):
    """Overrides of ``burn_backend.array``'s module ops, each with its reason."""

    # convolutions: cache-blocked im2col and BLAS over a few threads (``_conv``), with the bias folded
    # into the GEMM, instead of the interface's slice-by-slice lowering; a BLAS matrix-vector product
    # for the bias gradient (NumPy's sum over dims 0, 2, ... runs on one thread)
    _convolve = staticmethod(_conv.convolve)
    _convolve_transpose = staticmethod(_conv.convolve_transpose)
    _convolve_weight_grad = staticmethod(_conv.weight_grad)
    _channel_sums = staticmethod(_conv.channel_sums)

    # ``bincount`` adds the gradients about 4x faster than ``np.add.at`` (the shared scatter)
    @_silent
    def _max_pool_backward(
        self, x: Array, kernel_size: Sizes, stride: Sizes, padding: Sizes, dilation: Sizes, ceil_mode: bool,
        output_grad: Array, indices: Array,
    ) -> Array:  # fmt: skip
        planes, plane = math.prod(x.shape[:2]), math.prod(x.shape[2:])
        flat = indices.reshape(planes, -1).astype(np.int64) + (np.arange(planes) * plane)[:, None]
        weights = np.asarray(output_grad, dtype=np.float64).ravel()
        sums = np.bincount(flat.ravel(), weights=weights, minlength=planes * plane)
        return sums.reshape(x.shape).astype(output_grad.dtype)

    max_pool1d_with_indices_backward = max_pool2d_with_indices_backward = _max_pool_backward

    # a numba loop over the indices adds each gradient row where the shared code's ``np.add.at`` takes
    # 2 ms for a GPT's 2048 x 128 (it dispatches per element); same order of additions, same sums. Low
    # precision, indices out of range and numba missing take the shared code (and its errors)
    def embedding_backward(self, weights: Array, output_grad: Array, indices: Array) -> Array:
        kernels = _numba.kernels()
        rows, dim = weights.shape
        flat = np.asarray(indices).reshape(-1)
        if (
            kernels is not None
            and output_grad.dtype in (np.float32, np.float64)
            and flat.size > 0
            and output_grad.size == flat.size * dim
            and int(flat.min()) >= 0
            and int(flat.max()) < rows
        ):
            out = np.zeros((rows, dim), dtype=output_grad.dtype)
            grad = np.ascontiguousarray(output_grad).reshape(-1, dim)
            try:
                kernels.add_rows(out, flat.astype(np.int64, copy=False), grad)
            except Exception as error:
                _numba.disable(error)
            else:
                return out
        return super().embedding_backward(weights, output_grad, indices)

    # LSTM and GRU: each step one BLAS product and one fused numba kernel for the gates (``_rnn``),
    # instead of a few ops per step dispatched through the interface; dtypes other than f32 and f64 take
    # the composed default
    def lstm(
        self, x: Array, h0: Array, c0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
        bias_hh: Array | None, reverse: bool,
    ) -> Any:  # fmt: skip
        args = (x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh, reverse)
        if _rnn.supported(x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh):
            return _rnn.lstm(*args)
        return super().lstm(*args)

    def lstm_backward(
        self, x: Array, h0: Array, c0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
        bias_hh: Array | None, reverse: bool, states: Array, workspace: Array, grad: Array,
    ) -> Any:  # fmt: skip
        args = (x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh, reverse, states, workspace, grad)
        if _rnn.supported(x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh):
            return _rnn.lstm_backward(*args)
        return super().lstm_backward(*args)

    def gru(
        self, x: Array, h0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
        bias_hh: Array | None, reverse: bool,
    ) -> Any:  # fmt: skip
        args = (x, h0, weight_ih, weight_hh, bias_ih, bias_hh, reverse)
        if _rnn.supported(x, h0, weight_ih, weight_hh, bias_ih, bias_hh):
            return _rnn.gru(*args)
        return super().gru(*args)

    def gru_backward(
        self, x: Array, h0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
        bias_hh: Array | None, reverse: bool, states: Array, workspace: Array, grad: Array,
    ) -> Any:  # fmt: skip
        args = (x, h0, weight_ih, weight_hh, bias_ih, bias_hh, reverse, states, workspace, grad)
        if _rnn.supported(x, h0, weight_ih, weight_hh, bias_ih, bias_hh):
            return _rnn.gru_backward(*args)
        return super().gru_backward(*args)
