"""NdArray's LSTM and GRU: the recurrence through time as a Python loop of a BLAS product and one fused
numba kernel per step.

The input projection (``x @ weight_ih + biases`` for every step) is one GEMM before the loop. Each step's
recurrent product (``h @ weight_hh``, ``[batch, hidden] @ [hidden, gates * hidden]``) goes through NumPy's
BLAS from Python, so that it follows NdArray's thread policy (``_threads``: a product inside numba calls
another BLAS with its own threads); the gates and the state update are then one numba kernel over the
step, in the operands' dtype (f32 stays f32: the constants are passed in as that dtype, since a Python
float literal would promote every gate to f64). The LSTM's three sigmoids and ``tanh(g)`` share one
``np.exp`` (NumPy's SIMD exponential, several times faster than numba's scalar ``expf``): the gate
columns and ``weight_hh`` are scaled by ``-1`` (``-2`` for ``g``) once, so each step's pre-activations
come out of the product ready for it, and ``tanh(a) = 2 * sigmoid(2a) - 1``. The backward loop runs one
kernel per step for the gate gradients and one BLAS product ``d_gates @ weight_hh^T``; the weight
gradients and the input gradient are then one GEMM each. Inside, arrays are time-major (``[seq, batch,
n]``) so that a step is contiguous; the ``[batch, seq, n]`` results the interface names are views of
them. f32 and f64 only (the caller falls back to the composed default for other dtypes).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from burn_backend import RnnBackward, RnnForward

Array = Any


@numba.njit(cache=True, inline="always", error_model="numpy")
def _sigmoid(value: Any, one: Any) -> Any:  # pragma: no cover - compiled
    return one / (one + math.exp(-value))


@numba.njit(cache=True, inline="always", error_model="numpy")
def _tanh(value: Any, one: Any) -> Any:  # pragma: no cover - compiled
    # 2 * sigmoid(2x) - 1: numba's math.tanh is a scalar libm call several times slower than expf
    return (one + one) / (one + math.exp(-(value + value))) - one


@numba.njit(cache=True, error_model="numpy")
def _lstm_gates(exps: Array, cell: Array, state: Array, gate: Array, one: Any) -> None:  # pragma: no cover
    """One LSTM step's gates from ``exps = exp(-a)`` (``exp(-2a)`` for ``g``) into ``gate``, and the new
    cell into ``cell`` and ``state``'s second half (``tanh(c)`` and ``h`` are NumPy's, after)."""
    batch, size = cell.shape
    two = one + one
    for b in range(batch):
        for j in range(size):
            i = one / (one + exps[b, j])
            f = one / (one + exps[b, size + j])
            g = two / (one + exps[b, 2 * size + j]) - one
            c = f * cell[b, j] + i * g
            cell[b, j] = c
            state[b, size + j] = c
            gate[b, j] = i
            gate[b, size + j] = f
            gate[b, 2 * size + j] = g
            gate[b, 3 * size + j] = one / (one + exps[b, 3 * size + j])


@numba.njit(cache=True, error_model="numpy")
def _lstm_step_backward(
    grad: Array, hidden_grad: Array, cell_grad: Array, gate: Array, squashed: Array, previous: Array,
    gate_grad: Array, one: Any,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    """One step back: ``gate_grad`` from the step's output gradient ``grad`` (``[dh, dc]``) plus the
    gradients carried from the step after (``hidden_grad``, ``cell_grad``, which becomes this step's)."""
    batch, size = cell_grad.shape
    for b in range(batch):
        for j in range(size):
            dh = grad[b, j] + hidden_grad[b, j]
            i = gate[b, j]
            f = gate[b, size + j]
            g = gate[b, 2 * size + j]
            o = gate[b, 3 * size + j]
            tanh_c = squashed[b, j]
            dc = grad[b, size + j] + cell_grad[b, j] + dh * o * (one - tanh_c * tanh_c)
            gate_grad[b, j] = dc * g * i * (one - i)
            gate_grad[b, size + j] = dc * previous[b, j] * f * (one - f)
            gate_grad[b, 2 * size + j] = dc * i * (one - g * g)
            gate_grad[b, 3 * size + j] = dh * tanh_c * o * (one - o)
            cell_grad[b, j] = dc * f


@numba.njit(cache=True, error_model="numpy")
def _gru_step(
    projected: Array, recurrent: Array, hidden: Array, state: Array, saved: Array, one: Any
) -> None:  # pragma: no cover - compiled
    """One GRU step from the input projection and ``recurrent = h @ weight_hh + bias_hh``: the new ``h``
    into ``hidden`` and ``state``, ``r, z, n`` and the recurrent part of ``n`` into ``saved``."""
    batch, size = hidden.shape
    for b in range(batch):
        for j in range(size):
            r = _sigmoid(projected[b, j] + recurrent[b, j], one)
            z = _sigmoid(projected[b, size + j] + recurrent[b, size + j], one)
            hidden_new = recurrent[b, 2 * size + j]
            n = _tanh(projected[b, 2 * size + j] + r * hidden_new, one)
            h = n + z * (hidden[b, j] - n)
            hidden[b, j] = h
            state[b, j] = h
            saved[b, j] = r
            saved[b, size + j] = z
            saved[b, 2 * size + j] = n
            saved[b, 3 * size + j] = hidden_new


@numba.njit(cache=True, error_model="numpy")
def _gru_step_backward(
    grad: Array, hidden_grad: Array, saved: Array, previous: Array, input_grad: Array, recurrent_grad: Array,
    one: Any,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    """One step back: the gradients of the input projection and of ``h @ weight_hh + bias_hh``; leaves
    in ``hidden_grad`` the part of the previous state's gradient that skips the recurrent product."""
    batch, size = hidden_grad.shape
    for b in range(batch):
        for j in range(size):
            dh = grad[b, j] + hidden_grad[b, j]
            r = saved[b, j]
            z = saved[b, size + j]
            n = saved[b, 2 * size + j]
            dn = dh * (one - z) * (one - n * n)
            dz = dh * (previous[b, j] - n) * z * (one - z)
            dr = dn * saved[b, 3 * size + j] * r * (one - r)
            input_grad[b, j] = dr
            input_grad[b, size + j] = dz
            input_grad[b, 2 * size + j] = dn
            recurrent_grad[b, j] = dr
            recurrent_grad[b, size + j] = dz
            recurrent_grad[b, 2 * size + j] = dn * r
            hidden_grad[b, j] = dh * z


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
    if not has_hh:
        bias_hh = None
    elif bias_ih is not None and hidden_grads is input_grads:  # the LSTM's two biases: one sum
        bias_hh = bias_ih.copy()
    else:
        bias_hh = flat_hid.sum(0)
    return weight_ih, weight_hh, bias_ih, bias_hh


def _input_grad(x: Array, input_grads: Array, weight_ih: Array) -> Array:
    flat = input_grads.reshape(-1, input_grads.shape[2]) @ weight_ih.T
    return np.swapaxes(flat.reshape(x.shape[1], x.shape[0], x.shape[2]), 0, 1)


def _steps(seq: int, reverse: bool) -> range:
    """The time indices in the order a direction runs them."""
    return range(seq - 1, -1, -1) if reverse else range(seq)


def _gate_scale(size: int, dtype: Any) -> Array:
    """Per gate column of an LSTM, what makes ``exp`` of the scaled pre-activation the kernel's input:
    ``-1`` for ``i, f, o`` (sigmoid), ``-2`` for ``g`` (``tanh(a) = 2 * sigmoid(2a) - 1``)."""
    scale = np.full(4 * size, -1.0, dtype)
    scale[2 * size : 3 * size] = -2.0
    return scale


def lstm(
    x: Array, h0: Array, c0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
    bias_hh: Array | None, reverse: bool,
) -> RnnForward:  # fmt: skip
    """``ModuleOps.lstm`` as a loop of a BLAS product and a fused kernel per step; the results are
    ``[batch, seq, n]`` views of time-major arrays."""
    scale = _gate_scale(weight_hh.shape[0], x.dtype)
    weight = weight_hh * scale
    biases = [None if bias is None else bias * scale for bias in (bias_ih, bias_hh)]
    gates = _project(x, weight_ih * scale, *biases)  # the scaled pre-activations, then the gates
    seq, batch, width = gates.shape
    states = np.empty((seq, batch, width // 2), x.dtype)
    hidden, cell = np.array(h0, order="C"), np.array(c0, order="C")
    exps = np.empty((batch, width), x.dtype)
    size = width // 4
    squashed = np.empty((batch, size), x.dtype)
    one = x.dtype.type(1)
    with np.errstate(over="ignore"):  # exp(-a) of a saturated gate is inf: its sigmoid is 0, as it should
        for t in _steps(seq, reverse):
            np.dot(hidden, weight, out=exps)
            np.add(exps, gates[t], out=exps)
            np.exp(exps, out=exps)
            _lstm_gates(exps, cell, states[t], gates[t], one)
            # tanh(c) by NumPy's SIMD tanh: in the kernel, one scalar expf per element took half its time
            np.tanh(cell, out=squashed)
            np.multiply(gates[t, :, 3 * size :], squashed, out=hidden)
            states[t, :, :size] = hidden
    return RnnForward(np.swapaxes(states, 0, 1), np.swapaxes(gates, 0, 1))


def lstm_backward(
    x: Array, h0: Array, c0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
    bias_hh: Array | None, reverse: bool, states: Array, workspace: Array, grad: Array,
) -> RnnBackward:  # fmt: skip
    """``ModuleOps.lstm_backward`` as a loop of a kernel and a BLAS product per step, then four GEMMs."""
    states_t, gates_t, grad_t = _time_major(states), _time_major(workspace), _time_major(grad)
    seq, batch, width = gates_t.shape
    size = width // 4
    squashed = np.tanh(states_t[:, :, size:])  # every step's tanh(c) in one SIMD pass
    gate_grads = np.empty_like(gates_t)
    weight_hh_t = np.ascontiguousarray(weight_hh.T)
    hidden_grad = np.zeros((batch, size), x.dtype)
    cell_grad = np.zeros((batch, size), x.dtype)
    first = np.ascontiguousarray(c0)
    one = x.dtype.type(1)
    order = _steps(seq, reverse)
    for k in range(seq - 1, -1, -1):
        t = order[k]
        previous = first if k == 0 else states_t[order[k - 1], :, size:]
        _lstm_step_backward(grad_t[t], hidden_grad, cell_grad, gates_t[t], squashed[t], previous,
                            gate_grads[t], one)  # fmt: skip
        np.dot(gate_grads[t], weight_hh_t, out=hidden_grad)
    previous_hidden = _previous(states_t[:, :, :size], h0, reverse)
    grads = _weight_grads(
        x, previous_hidden, gate_grads, gate_grads, bias_ih is not None, bias_hh is not None
    )
    return RnnBackward(_input_grad(x, gate_grads, weight_ih), hidden_grad, cell_grad, *grads)


def gru(
    x: Array, h0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None, bias_hh: Array | None,
    reverse: bool,
) -> RnnForward:  # fmt: skip
    """``ModuleOps.gru`` as a loop of a BLAS product and a fused kernel per step."""
    projected = _project(x, weight_ih, bias_ih)
    seq, batch, width = projected.shape
    size = width // 3
    states = np.empty((seq, batch, size), x.dtype)
    saved = np.empty((seq, batch, 4 * size), x.dtype)
    hidden = np.array(h0, order="C")
    weight = np.ascontiguousarray(weight_hh)
    recurrent = np.empty((batch, width), x.dtype)
    one = x.dtype.type(1)
    with np.errstate(over="ignore"):
        for t in _steps(seq, reverse):
            np.dot(hidden, weight, out=recurrent)
            if bias_hh is not None:
                recurrent += bias_hh
            _gru_step(projected[t], recurrent, hidden, states[t], saved[t], one)
    return RnnForward(np.swapaxes(states, 0, 1), np.swapaxes(saved, 0, 1))


def gru_backward(
    x: Array, h0: Array, weight_ih: Array, weight_hh: Array, bias_ih: Array | None, bias_hh: Array | None,
    reverse: bool, states: Array, workspace: Array, grad: Array,
) -> RnnBackward:  # fmt: skip
    """``ModuleOps.gru_backward`` as a loop of a kernel and a BLAS product per step, then four GEMMs."""
    states_t, saved_t, grad_t = _time_major(states), _time_major(workspace), _time_major(grad)
    seq, batch, width = saved_t.shape
    size = width // 4
    input_grads = np.empty((seq, batch, 3 * size), x.dtype)
    hidden_grads = np.empty_like(input_grads)
    weight_hh_t = np.ascontiguousarray(weight_hh.T)
    hidden_grad = np.zeros((batch, size), x.dtype)
    carried = np.empty_like(hidden_grad)
    first = np.ascontiguousarray(h0)
    one = x.dtype.type(1)
    order = _steps(seq, reverse)
    for k in range(seq - 1, -1, -1):
        t = order[k]
        previous = first if k == 0 else states_t[order[k - 1]]
        _gru_step_backward(grad_t[t], hidden_grad, saved_t[t], previous, input_grads[t], hidden_grads[t], one)
        hidden_grad += np.dot(hidden_grads[t], weight_hh_t, out=carried)
    previous_hidden = _previous(states_t, h0, reverse)
    grads = _weight_grads(
        x, previous_hidden, input_grads, hidden_grads, bias_ih is not None, bias_hh is not None
    )
    return RnnBackward(_input_grad(x, input_grads, weight_ih), hidden_grad, None, *grads)
