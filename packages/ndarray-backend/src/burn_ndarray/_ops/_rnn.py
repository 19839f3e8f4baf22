"""NdArray's LSTM and GRU: the recurrence through time in one numba kernel per direction and pass.

The input projection (``x @ weight_ih + biases`` for every step) is one GEMM before the kernel; the
kernel runs the steps, each a small GEMM (``np.dot``, BLAS) and the gates in a loop, keeping the gate
activations for the backward pass. The backward kernel runs through time producing every step's gate
gradients and the initial states' gradients; the weight gradients and the input gradient are then one
GEMM each. Inside, arrays are time-major (``[seq, batch, n]``) so that a step is contiguous; the
``[batch, seq, n]`` results the interface names are views of them. f32 and f64 only (the caller falls
back to the composed default for other dtypes).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from burn_backend import RnnBackward, RnnForward

Array = Any


@numba.njit(cache=True, inline="always")
def _sigmoid(value: float) -> float:  # pragma: no cover - compiled
    return 1.0 / (1.0 + math.exp(-value))


@numba.njit(cache=True)
def _lstm_forward(
    projected: Array, h0: Array, c0: Array, weight_hh: Array, reverse: bool, states: Array, gates: Array
) -> None:  # pragma: no cover - compiled
    seq, batch, width = projected.shape
    size = width // 4
    hidden = h0.copy()
    cell = c0.copy()
    for k in range(seq):
        t = seq - 1 - k if reverse else k
        summed = np.dot(hidden, weight_hh)
        for b in range(batch):
            for j in range(size):
                i = _sigmoid(summed[b, j] + projected[t, b, j])
                f = _sigmoid(summed[b, size + j] + projected[t, b, size + j])
                g = math.tanh(summed[b, 2 * size + j] + projected[t, b, 2 * size + j])
                o = _sigmoid(summed[b, 3 * size + j] + projected[t, b, 3 * size + j])
                c = f * cell[b, j] + i * g
                h = o * math.tanh(c)
                cell[b, j] = c
                hidden[b, j] = h
                states[t, b, j] = h
                states[t, b, size + j] = c
                gates[t, b, j] = i
                gates[t, b, size + j] = f
                gates[t, b, 2 * size + j] = g
                gates[t, b, 3 * size + j] = o


@numba.njit(cache=True)
def _lstm_backward(
    grad: Array, states: Array, gates: Array, c0: Array, weight_hh_t: Array, reverse: bool, gate_grads: Array
) -> tuple[Array, Array]:  # pragma: no cover - compiled
    seq, batch, width = gates.shape
    size = width // 4
    hidden_grad = np.zeros((batch, size), gates.dtype)
    cell_grad = np.zeros((batch, size), gates.dtype)
    step = np.empty((batch, width), gates.dtype)
    for k in range(seq - 1, -1, -1):
        t = seq - 1 - k if reverse else k
        before = t + 1 if reverse else t - 1
        for b in range(batch):
            for j in range(size):
                dh = grad[t, b, j] + hidden_grad[b, j]
                dc = grad[t, b, size + j] + cell_grad[b, j]
                i = gates[t, b, j]
                f = gates[t, b, size + j]
                g = gates[t, b, 2 * size + j]
                o = gates[t, b, 3 * size + j]
                squashed = math.tanh(states[t, b, size + j])
                dc += dh * o * (1.0 - squashed * squashed)
                previous = c0[b, j] if k == 0 else states[before, b, size + j]
                step[b, j] = dc * g * i * (1.0 - i)
                step[b, size + j] = dc * previous * f * (1.0 - f)
                step[b, 2 * size + j] = dc * i * (1.0 - g * g)
                step[b, 3 * size + j] = dh * squashed * o * (1.0 - o)
                cell_grad[b, j] = dc * f
        gate_grads[t] = step
        hidden_grad = np.dot(step, weight_hh_t)
    return hidden_grad, cell_grad


@numba.njit(cache=True)
def _gru_forward(
    projected: Array, h0: Array, weight_hh: Array, bias_hh: Array, reverse: bool, states: Array, saved: Array
) -> None:  # pragma: no cover - compiled
    seq, batch, width = projected.shape
    size = width // 3
    hidden = h0.copy()
    for k in range(seq):
        t = seq - 1 - k if reverse else k
        recurrent = np.dot(hidden, weight_hh)
        for b in range(batch):
            for j in range(size):
                r = _sigmoid(projected[t, b, j] + recurrent[b, j] + bias_hh[j])
                z = _sigmoid(projected[t, b, size + j] + recurrent[b, size + j] + bias_hh[size + j])
                hidden_new = recurrent[b, 2 * size + j] + bias_hh[2 * size + j]
                n = math.tanh(projected[t, b, 2 * size + j] + r * hidden_new)
                h = n + z * (hidden[b, j] - n)
                hidden[b, j] = h
                states[t, b, j] = h
                saved[t, b, j] = r
                saved[t, b, size + j] = z
                saved[t, b, 2 * size + j] = n
                saved[t, b, 3 * size + j] = hidden_new


@numba.njit(cache=True)
def _gru_backward(
    grad: Array,
    states: Array,
    saved: Array,
    h0: Array,
    weight_hh_t: Array,
    reverse: bool,
    input_grads: Array,
    hidden_grads: Array,
) -> Array:  # pragma: no cover - compiled
    seq, batch, width = saved.shape
    size = width // 4
    hidden_grad = np.zeros((batch, size), saved.dtype)
    step = np.empty((batch, 3 * size), saved.dtype)
    for k in range(seq - 1, -1, -1):
        t = seq - 1 - k if reverse else k
        before = t + 1 if reverse else t - 1
        for b in range(batch):
            for j in range(size):
                dh = grad[t, b, j] + hidden_grad[b, j]
                r = saved[t, b, j]
                z = saved[t, b, size + j]
                n = saved[t, b, 2 * size + j]
                previous = h0[b, j] if k == 0 else states[before, b, j]
                dn = dh * (1.0 - z) * (1.0 - n * n)
                dz = dh * (previous - n) * z * (1.0 - z)
                dr = dn * saved[t, b, 3 * size + j] * r * (1.0 - r)
                input_grads[t, b, j] = dr
                input_grads[t, b, size + j] = dz
                input_grads[t, b, 2 * size + j] = dn
                step[b, j] = dr
                step[b, size + j] = dz
                step[b, 2 * size + j] = dn * r
                hidden_grad[b, j] = dh * z
        hidden_grads[t] = step
        hidden_grad = hidden_grad + np.dot(step, weight_hh_t)
    return hidden_grad


# -- the ops ---------------------------------------------------------------------------------------------
def supported(*arrays: Array | None) -> bool:
    """Whether the kernels take these operands: all f32, or all f64."""
    dtypes = {array.dtype for array in arrays if array is not None}
    return len(dtypes) == 1 and dtypes.pop() in (np.float32, np.float64)


def _time_major(array: Array) -> Array:
    return np.ascontiguousarray(np.swapaxes(array, 0, 1))


def _project(x: Array, weight: Array, *biases: Array | None) -> Array:
    """``x [batch, seq, d]`` times ``weight`` plus ``biases``, time-major: ``[seq, batch, n]``."""
    seq_first = _time_major(x)
    projected = (seq_first.reshape(-1, x.shape[2]) @ weight).reshape((*seq_first.shape[:2], weight.shape[1]))
    for bias in biases:
        if bias is not None:
            projected += bias
    return projected


def _previous(outputs: Array, first: Array, reverse: bool) -> Array:
    """Each step's previous state, time-major ``[seq, batch, n]``: ``first`` for the first step run."""
    shifted = np.empty_like(outputs)
    if reverse:
        shifted[:-1], shifted[-1] = outputs[1:], first
    else:
        shifted[1:], shifted[0] = outputs[:-1], first
    return shifted


def _weight_grads(
    x: Array, previous: Array, input_grads: Array, hidden_grads: Array, has_ih: bool, has_hh: bool
) -> tuple[Array, Array, Array | None, Array | None]:
    """One GEMM each over all steps (time-major operands): ``x^T d_in``, ``h_prev^T d_hid``, sums."""
    flat_in = input_grads.reshape(-1, input_grads.shape[2])
    flat_hid = hidden_grads.reshape(-1, hidden_grads.shape[2])
    weight_ih = _time_major(x).reshape(-1, x.shape[2]).T @ flat_in
    weight_hh = previous.reshape(-1, previous.shape[2]).T @ flat_hid
    bias_ih = flat_in.sum(0) if has_ih else None
    bias_hh = flat_hid.sum(0) if has_hh else None
    return weight_ih, weight_hh, bias_ih, bias_hh


def _input_grad(x: Array, input_grads: Array, weight_ih: Array) -> Array:
    flat = input_grads.reshape(-1, input_grads.shape[2]) @ weight_ih.T
    return np.swapaxes(flat.reshape(x.shape[1], x.shape[0], x.shape[2]), 0, 1)


def lstm(
    x: Array, h0: Array, c0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
    bias_hh: Array | None, reverse: bool,
) -> RnnForward:  # fmt: skip
    """``ModuleOps.lstm`` through the kernel; the results are ``[batch, seq, n]`` views of time-major
    arrays."""
    projected = _project(x, weight_ih, bias_ih, bias_hh)
    seq, batch, width = projected.shape
    states = np.empty((seq, batch, width // 2), x.dtype)
    gates = np.empty_like(projected)
    _lstm_forward(projected, np.ascontiguousarray(h0), np.ascontiguousarray(c0),
                  np.ascontiguousarray(weight_hh), reverse, states, gates)  # fmt: skip
    return RnnForward(np.swapaxes(states, 0, 1), np.swapaxes(gates, 0, 1))


def lstm_backward(
    x: Array, h0: Array, c0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
    bias_hh: Array | None, reverse: bool, states: Array, workspace: Array, grad: Array,
) -> RnnBackward:  # fmt: skip
    """``ModuleOps.lstm_backward`` through the kernel and four GEMMs."""
    states_t, gates_t = _time_major(states), _time_major(workspace)
    gate_grads = np.empty_like(gates_t)
    weight_hh_t = np.ascontiguousarray(weight_hh.T)
    hidden_grad, cell_grad = _lstm_backward(
        _time_major(grad), states_t, gates_t, np.ascontiguousarray(c0), weight_hh_t, reverse, gate_grads
    )
    size = h0.shape[1]
    previous = _previous(states_t[:, :, :size], h0, reverse)
    grads = _weight_grads(x, previous, gate_grads, gate_grads, bias_ih is not None, bias_hh is not None)
    return RnnBackward(_input_grad(x, gate_grads, weight_ih), hidden_grad, cell_grad, *grads)


def gru(
    x: Array, h0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None, bias_hh: Array | None,
    reverse: bool,
) -> RnnForward:  # fmt: skip
    """``ModuleOps.gru`` through the kernel."""
    projected = _project(x, weight_ih, bias_ih)
    seq, batch, width = projected.shape
    size = width // 3
    states = np.empty((seq, batch, size), x.dtype)
    saved = np.empty((seq, batch, 4 * size), x.dtype)
    hidden_bias = np.zeros(width, x.dtype) if bias_hh is None else np.ascontiguousarray(bias_hh)
    _gru_forward(projected, np.ascontiguousarray(h0), np.ascontiguousarray(weight_hh), hidden_bias,
                 reverse, states, saved)  # fmt: skip
    return RnnForward(np.swapaxes(states, 0, 1), np.swapaxes(saved, 0, 1))


def gru_backward(
    x: Array, h0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None, bias_hh: Array | None,
    reverse: bool, states: Array, workspace: Array, grad: Array,
) -> RnnBackward:  # fmt: skip
    """``ModuleOps.gru_backward`` through the kernel and four GEMMs."""
    states_t, saved_t = _time_major(states), _time_major(workspace)
    seq, batch, width = saved_t.shape
    input_grads = np.empty((seq, batch, 3 * (width // 4)), x.dtype)
    hidden_grads = np.empty_like(input_grads)
    weight_hh_t = np.ascontiguousarray(weight_hh.T)
    hidden_grad = _gru_backward(
        _time_major(grad), states_t, saved_t, np.ascontiguousarray(h0), weight_hh_t, reverse,
        input_grads, hidden_grads,
    )  # fmt: skip
    previous = _previous(states_t, h0, reverse)
    grads = _weight_grads(x, previous, input_grads, hidden_grads, bias_ih is not None, bias_hh is not None)
    return RnnBackward(_input_grad(x, input_grads, weight_ih), hidden_grad, None, *grads)
