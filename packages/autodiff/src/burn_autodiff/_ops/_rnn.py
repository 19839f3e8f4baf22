"""The graph specs of the recurrent layers: an LSTM's or GRU's gradients are one call of the inner
backend's ``lstm_backward`` or ``gru_backward``, so a backend with a kernel through time runs it both
ways.

The recorded inputs are ``(x, h0[, c0], weight_ih, weight_hh[, bias_ih][, bias_hh])`` (absent biases
are no inputs at all); the args are ``(reverse, workspace)``, the workspace being what the forward op
saved for the backward op (a constant of the graph). Backward reads every input and the output (every
step's states).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burn_backend import Backend

from .._graph import OpSpec

P = Any  # a primitive of the inner backend
Grads = Sequence[P | None]


def _rnn_spec(name: str, with_cell: bool, with_bias_ih: bool, with_bias_hh: bool) -> OpSpec:
    """The spec of ``lstm`` (``with_cell``) or ``gru`` with the biases present as flagged."""

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        reverse, workspace = args
        rest = iter(xs)
        x, h0 = next(rest), next(rest)
        states = (h0, next(rest)) if with_cell else (h0,)
        weight_ih, weight_hh = next(rest), next(rest)
        bias_ih = next(rest) if with_bias_ih else None
        bias_hh = next(rest) if with_bias_hh else None
        params = (x, *states, weight_ih, weight_hh, bias_ih, bias_hh, reverse, out, workspace, g)
        grads = getattr(b, f"{name}_backward")(*params)
        present = (True, True, with_cell, True, True, with_bias_ih, with_bias_hh)
        return tuple(grad for grad, keep in zip(grads, present) if keep)

    count = 4 + with_cell + with_bias_ih + with_bias_hh
    return OpSpec(name, backward, keeps_inputs=tuple(range(count)), keeps_output=True)


RNNS = {
    (name, with_bias_ih, with_bias_hh): _rnn_spec(name, name == "lstm", with_bias_ih, with_bias_hh)
    for name in ("lstm", "gru")
    for with_bias_ih in (False, True)
    for with_bias_hh in (False, True)
}
