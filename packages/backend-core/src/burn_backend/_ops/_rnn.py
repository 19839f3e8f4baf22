"""The recurrent ops of ``ModuleOps``: one LSTM or GRU layer in one direction, forward and backward.

Shapes: ``x [batch, seq, d_input]``, states ``[batch, hidden]``, weights in Burn's layout (``weight_ih
[d_input, G * hidden]``, ``weight_hh [hidden, G * hidden]``, biases ``[G * hidden]`` or ``None``) with
PyTorch's gate order: ``i, f, g, o`` for the LSTM (``G = 4``), ``r, z, n`` for the GRU (``G = 3``, the
reset gate applied to the hidden transform's result, as PyTorch). ``reverse`` runs the sequence from its
last step to its first.

The forward op returns ``RnnForward``: ``states``, what the layer outputs (the LSTM's ``[batch, seq, 2 *
hidden]``, each step's hidden state then its cell state; the GRU's ``[batch, seq, hidden]``), and
``workspace``, what the backward op reads (the LSTM's four gate activations, the GRU's ``r, z, n`` and
``h W_hn + b_hn``, each ``[batch, seq, 4 * hidden]``). The gradient of every step's state is one tensor
of ``states``' shape, so a caller that reads the last state and the outputs needs one op, not three.

The defaults are written over float ops: the input projection is one matrix product for all the steps,
the recurrence a loop of per-step products, and the backward a loop through time collecting each step's
gate gradients, after which the weight gradients are one product each. f16 and bf16 compute in f32.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._low_precision import in_f32

P = Any  # a primitive of the backend


class RnnForward(NamedTuple):
    """What ``ModuleOps.lstm`` and ``ModuleOps.gru`` return: every step's ``states`` (``[batch, seq, 2 *
    hidden]``, hidden then cell, for the LSTM; ``[batch, seq, hidden]`` for the GRU) and the
    ``workspace`` the backward op reads (``[batch, seq, 4 * hidden]``)."""

    states: Any
    workspace: Any


class RnnBackward(NamedTuple):
    """The gradients ``ModuleOps.lstm_backward`` and ``ModuleOps.gru_backward`` return, each of its
    input's shape; ``c0_grad`` is ``None`` for the GRU, a bias gradient ``None`` where there was no
    bias."""

    x_grad: Any
    h0_grad: Any
    c0_grad: Any | None
    weight_ih_grad: Any
    weight_hh_grad: Any
    bias_ih_grad: Any | None
    bias_hh_grad: Any | None


# -- building blocks over float ops ------------------------------------------------------------------
def _cols(b: Any, tensor: P, start: int, size: int) -> P:
    """Columns ``start : start + size`` of the last dim of a rank-2 ``tensor``."""
    return b.float_slice(tensor, [slice(0, tensor.shape[0]), slice(start, start + size)])


def _step(b: Any, tensor: P, t: int) -> P:
    """Step ``t`` of ``tensor [batch, seq, n]`` as ``[batch, n]``."""
    batch, _, n = tensor.shape
    return b.float_reshape(b.float_slice(tensor, [slice(0, batch), slice(t, t + 1), slice(0, n)]), (batch, n))


def _order(seq: int, reverse: bool) -> range:
    return range(seq - 1, -1, -1) if reverse else range(seq)


def _stacked_steps(b: Any, steps: dict[int, P]) -> P:
    """Per-step ``[batch, n]`` tensors keyed by their step, stacked to ``[batch, seq, n]``."""
    ordered = [steps[t] for t in range(len(steps))]
    batch, n = ordered[0].shape
    return b.float_cat([b.float_reshape(step, (batch, 1, n)) for step in ordered], 1)


def _projection(b: Any, x: P, weight: P, bias: P | None) -> P:
    """``x [batch, seq, d] @ weight + bias`` as one product for every step: ``[batch, seq, n]``."""
    batch, seq, d = x.shape
    projected = b.float_matmul(b.float_reshape(x, (batch * seq, d)), weight)
    if bias is not None:
        projected = b.float_add(projected, b.float_reshape(bias, (1, bias.shape[0])))
    return b.float_reshape(projected, (batch, seq, weight.shape[1]))


def _one_minus(b: Any, tensor: P) -> P:
    return b.float_add_scalar(b.float_neg(tensor), 1.0)


def _previous(b: Any, outputs: P, first: P, reverse: bool) -> P:
    """Each step's previous state ``[batch, seq, n]``: ``first`` for the first step run, else the
    output of the step run before it."""
    batch, seq, n = outputs.shape
    first = b.float_reshape(first, (batch, 1, n))
    if seq == 1:
        return first
    if reverse:
        return b.float_cat([b.float_slice(outputs, [slice(0, batch), slice(1, seq), slice(0, n)]), first], 1)
    return b.float_cat([first, b.float_slice(outputs, [slice(0, batch), slice(0, seq - 1), slice(0, n)])], 1)


def _weight_grads(
    b: Any, x: P, previous: P, input_grads: P, hidden_grads: P, has_ih: bool, has_hh: bool
) -> tuple[P, P, P | None, P | None]:
    """The weight and bias gradients, one product each over all the steps: ``x^T @ d(input
    projection)``, ``h_prev^T @ d(hidden projection)`` and the column sums."""
    batch, seq, d = x.shape
    rows = batch * seq
    flat_in = b.float_reshape(input_grads, (rows, input_grads.shape[2]))
    flat_hid = b.float_reshape(hidden_grads, (rows, hidden_grads.shape[2]))
    weight_ih = b.float_matmul(b.float_transpose(b.float_reshape(x, (rows, d))), flat_in)
    prev = b.float_reshape(previous, (rows, previous.shape[2]))
    weight_hh = b.float_matmul(b.float_transpose(prev), flat_hid)
    bias_ih = b.float_reshape(b.float_sum_dim(flat_in, 0), (flat_in.shape[1],)) if has_ih else None
    bias_hh = b.float_reshape(b.float_sum_dim(flat_hid, 0), (flat_hid.shape[1],)) if has_hh else None
    return weight_ih, weight_hh, bias_ih, bias_hh


def _input_grad(b: Any, x: P, input_grads: P, weight_ih: P) -> P:
    batch, seq, d = x.shape
    flat = b.float_reshape(input_grads, (batch * seq, input_grads.shape[2]))
    return b.float_reshape(b.float_matmul(flat, b.float_transpose(weight_ih)), (batch, seq, d))


# -- LSTM ------------------------------------------------------------------------------------------------
@in_f32
def lstm(
    self: Any,
    x: P,
    h0: P,
    c0: P,
    weight_ih: P,
    weight_hh: P,
    bias_ih: P | None,
    bias_hh: P | None,
    reverse: bool,
) -> RnnForward:
    """One LSTM layer over ``x`` in one direction, as PyTorch's ``nn.LSTM``: per step ``a = x_t W_ih +
    b_ih + h W_hh + b_hh``, ``i, f, o = sigmoid(a_i, a_f, a_o)``, ``g = tanh(a_g)``, ``c = f * c + i *
    g``, ``h = o * tanh(c)``. Returns ``RnnForward``: the states ``[batch, seq, 2 * hidden]`` (hidden,
    cell) and the gate activations ``[batch, seq, 4 * hidden]``."""
    b = self
    size = h0.shape[1]
    projected = _projection(b, x, weight_ih, bias_ih)
    hidden, cell = h0, c0
    states: dict[int, P] = {}
    gates: dict[int, P] = {}
    for t in _order(x.shape[1], reverse):
        summed = b.float_add(_step(b, projected, t), b.float_matmul(hidden, weight_hh))
        if bias_hh is not None:
            summed = b.float_add(summed, b.float_reshape(bias_hh, (1, 4 * size)))
        opened = b.sigmoid(_cols(b, summed, 0, 2 * size))
        candidate = b.float_tanh(_cols(b, summed, 2 * size, size))
        output_gate = b.sigmoid(_cols(b, summed, 3 * size, size))
        input_gate, forget_gate = _cols(b, opened, 0, size), _cols(b, opened, size, size)
        cell = b.float_add(b.float_mul(forget_gate, cell), b.float_mul(input_gate, candidate))
        hidden = b.float_mul(output_gate, b.float_tanh(cell))
        states[t] = b.float_cat([hidden, cell], 1)
        gates[t] = b.float_cat([opened, candidate, output_gate], 1)
    return RnnForward(_stacked_steps(b, states), _stacked_steps(b, gates))


@in_f32
def lstm_backward(
    self: Any,
    x: P,
    h0: P,
    c0: P,
    weight_ih: P,
    weight_hh: P,
    bias_ih: P | None,
    bias_hh: P | None,
    reverse: bool,
    states: P,
    workspace: P,
    grad: P,
) -> RnnBackward:
    """The gradients of ``lstm`` given ``grad`` of its ``states`` (and the ``states`` and ``workspace``
    it returned): back through time, each step's gate gradients kept, then the weight gradients as one
    product each."""
    b = self
    size = h0.shape[1]
    batch, seq = x.shape[0], x.shape[1]
    weight_hh_t = b.float_transpose(weight_hh)
    hidden_grad: P | None = None
    cell_grad: P | None = None
    gate_grads: dict[int, P] = {}
    order = list(_order(seq, reverse))
    for k in range(seq - 1, -1, -1):
        t = order[k]
        step_grad = _step(b, grad, t)
        dh = _cols(b, step_grad, 0, size)
        dc = _cols(b, step_grad, size, size)
        if hidden_grad is not None:
            dh = b.float_add(dh, hidden_grad)
        if cell_grad is not None:
            dc = b.float_add(dc, cell_grad)
        step_gates = _step(b, workspace, t)
        i, f = _cols(b, step_gates, 0, size), _cols(b, step_gates, size, size)
        g, o = _cols(b, step_gates, 2 * size, size), _cols(b, step_gates, 3 * size, size)
        squashed = b.float_tanh(_cols(b, _step(b, states, t), size, size))
        output_grad = b.float_mul(dh, squashed)
        dc = b.float_add(dc, b.float_mul(b.float_mul(dh, o), _one_minus(b, b.float_mul(squashed, squashed))))
        previous_cell = c0 if k == 0 else _cols(b, _step(b, states, order[k - 1]), size, size)
        da = b.float_cat(
            [
                b.float_mul(b.float_mul(dc, g), b.float_mul(i, _one_minus(b, i))),
                b.float_mul(b.float_mul(dc, previous_cell), b.float_mul(f, _one_minus(b, f))),
                b.float_mul(b.float_mul(dc, i), _one_minus(b, b.float_mul(g, g))),
                b.float_mul(output_grad, b.float_mul(o, _one_minus(b, o))),
            ],
            1,
        )
        gate_grads[t] = da
        hidden_grad = b.float_matmul(da, weight_hh_t)
        cell_grad = b.float_mul(dc, f)
    input_grads = _stacked_steps(b, gate_grads)
    hiddens = b.float_slice(states, [slice(0, batch), slice(0, seq), slice(0, size)])
    previous = _previous(b, hiddens, h0, reverse)
    grads = _weight_grads(b, x, previous, input_grads, input_grads, bias_ih is not None, bias_hh is not None)
    x_grad = _input_grad(b, x, input_grads, weight_ih)
    return RnnBackward(x_grad, hidden_grad, cell_grad, *grads)


# -- GRU -------------------------------------------------------------------------------------------------
@in_f32
def gru(
    self: Any,
    x: P,
    h0: P,
    weight_ih: P,
    weight_hh: P,
    bias_ih: P | None,
    bias_hh: P | None,
    reverse: bool,
) -> RnnForward:
    """One GRU layer over ``x`` in one direction, as PyTorch's ``nn.GRU``: per step ``p = x_t W_ih +
    b_ih``, ``q = h W_hh + b_hh``, ``r, z = sigmoid(p_rz + q_rz)``, ``n = tanh(p_n + r * q_n)``, ``h =
    (1 - z) * n + z * h``. Returns ``RnnForward``: the states ``[batch, seq, hidden]`` and ``r, z, n,
    q_n`` ``[batch, seq, 4 * hidden]``."""
    b = self
    size = h0.shape[1]
    projected = _projection(b, x, weight_ih, bias_ih)
    hidden = h0
    states: dict[int, P] = {}
    saved: dict[int, P] = {}
    for t in _order(x.shape[1], reverse):
        step_in = _step(b, projected, t)
        recurrent = b.float_matmul(hidden, weight_hh)
        if bias_hh is not None:
            recurrent = b.float_add(recurrent, b.float_reshape(bias_hh, (1, 3 * size)))
        opened = b.sigmoid(b.float_add(_cols(b, step_in, 0, 2 * size), _cols(b, recurrent, 0, 2 * size)))
        reset, update = _cols(b, opened, 0, size), _cols(b, opened, size, size)
        hidden_new = _cols(b, recurrent, 2 * size, size)
        candidate = b.float_tanh(
            b.float_add(_cols(b, step_in, 2 * size, size), b.float_mul(reset, hidden_new))
        )
        hidden = b.float_add(candidate, b.float_mul(update, b.float_sub(hidden, candidate)))
        states[t] = hidden
        saved[t] = b.float_cat([opened, candidate, hidden_new], 1)
    return RnnForward(_stacked_steps(b, states), _stacked_steps(b, saved))


@in_f32
def gru_backward(
    self: Any,
    x: P,
    h0: P,
    weight_ih: P,
    weight_hh: P,
    bias_ih: P | None,
    bias_hh: P | None,
    reverse: bool,
    states: P,
    workspace: P,
    grad: P,
) -> RnnBackward:
    """The gradients of ``gru`` given ``grad`` of its ``states`` (and the ``states`` and ``workspace``
    it returned); ``c0_grad`` is ``None``."""
    b = self
    size = h0.shape[1]
    seq = x.shape[1]
    weight_hh_t = b.float_transpose(weight_hh)
    hidden_grad: P | None = None
    input_steps: dict[int, P] = {}
    hidden_steps: dict[int, P] = {}
    order = list(_order(seq, reverse))
    for k in range(seq - 1, -1, -1):
        t = order[k]
        dh = _step(b, grad, t)
        if hidden_grad is not None:
            dh = b.float_add(dh, hidden_grad)
        saved = _step(b, workspace, t)
        r, z = _cols(b, saved, 0, size), _cols(b, saved, size, size)
        n, hidden_new = _cols(b, saved, 2 * size, size), _cols(b, saved, 3 * size, size)
        previous = h0 if k == 0 else _step(b, states, order[k - 1])
        dn = b.float_mul(b.float_mul(dh, _one_minus(b, z)), _one_minus(b, b.float_mul(n, n)))
        dz = b.float_mul(b.float_mul(dh, b.float_sub(previous, n)), b.float_mul(z, _one_minus(b, z)))
        dr = b.float_mul(b.float_mul(dn, hidden_new), b.float_mul(r, _one_minus(b, r)))
        input_steps[t] = b.float_cat([dr, dz, dn], 1)
        hidden_steps[t] = b.float_cat([dr, dz, b.float_mul(dn, r)], 1)
        hidden_grad = b.float_add(b.float_mul(dh, z), b.float_matmul(hidden_steps[t], weight_hh_t))
    input_grads = _stacked_steps(b, input_steps)
    hidden_grads = _stacked_steps(b, hidden_steps)
    previous_all = _previous(b, states, h0, reverse)
    grads = _weight_grads(
        b, x, previous_all, input_grads, hidden_grads, bias_ih is not None, bias_hh is not None
    )
    return RnnBackward(_input_grad(b, x, input_grads, weight_ih), hidden_grad, None, *grads)
