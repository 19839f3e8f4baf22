"""Gated recurrent units: ``Gru`` and ``BiGru``."""

from __future__ import annotations

from burn_backend import Device, Tensor
from burn_backend import activation as A
from burn_backend import module as F

from ._config import Config
from ._initializer import Initializer
from ._module import Module
from ._rnn import (
    GateController,
    _Bidirectional,
    _check_clip,
    _check_sizes,
    _default_initializer,
    _initial_state,
    _input_projection,
    _run_one,
    _scan,
    _stacked,
)

__all__ = ["BiGru", "BiGruConfig", "Gru", "GruConfig"]


class GruConfig(Config):
    """Settings of a ``Gru``.

    Args:
        d_input: the size of the input features.
        d_hidden: the size of the hidden state.
        bias: whether the gates' input and hidden transforms add learned biases.
        reset_after: where the reset gate applies. ``True`` (the default, as PyTorch and the first
            version of Cho et al., 2014): to the hidden transform's result, ``r * (h W_hn + b_hn)``.
            ``False`` (the paper's later versions): to the hidden state before it, ``(r * h) W_hn +
            b_hn``.
        initializer: how the weights and biases are drawn; ``None`` (the default) is PyTorch's rule,
            uniform on ``±1/sqrt(d_hidden)`` for every weight and bias (Burn's default is
            ``XavierNormal(1.0)``).
        clip: if set, the hidden state is clamped to ``[-clip, clip]`` after each step.
    """

    d_input: int
    d_hidden: int
    bias: bool
    reset_after: bool = True
    initializer: Initializer | None = None
    clip: float | None = None

    def init(self, device: Device) -> Gru:
        """A ``Gru`` on ``device``."""
        return Gru(self, device)


class Gru(Module):
    """A single-layer gated recurrent unit, as PyTorch's ``nn.GRU`` (one layer, one direction)::

        z = sigmoid(x W_iz + b_iz + h W_hz + b_hz)          (update gate)
        r = sigmoid(x W_ir + b_ir + h W_hr + b_hr)          (reset gate)
        n = tanh(x W_in + b_in + r * (h W_hn + b_hn))       (new gate, with reset_after)
        h' = (1 - z) * n + z * h

    Each gate is a ``GateController`` (``update_gate``, ``reset_gate``, ``new_gate``); the gates are
    computed together, with one matrix product per step (two without ``reset_after``). As Burn's,
    inputs are ``[batch, seq, d_input]`` and ``forward`` returns the hidden state of every step (the
    final state is its last step).

    Example:
        >>> gru = GruConfig(4, 8, True).init(device)
        >>> gru(Tensor.ones([2, 5, 4], device)).dims()
        [2, 5, 8]
    """

    def __init__(self, config: GruConfig, device: Device) -> None:
        _check_sizes("Gru", config.d_input, config.d_hidden)
        initializer = _default_initializer(config.initializer, config.d_hidden)

        def gate() -> GateController:
            return GateController(config.d_input, config.d_hidden, config.bias, initializer, device)

        self.update_gate: GateController = gate()
        self.reset_gate: GateController = gate()
        self.new_gate: GateController = gate()
        self.d_input = config.d_input
        self.d_hidden = config.d_hidden
        self.reset_after = config.reset_after
        self.clip = _check_clip("Gru", config.clip)

    def forward(self, input: Tensor, state: Tensor | None = None) -> Tensor:
        """Runs the sequence.

        Args:
            input: ``[batch, seq, d_input]``.
            state: the initial hidden state ``[batch, d_hidden]``; zeros when ``None``.

        Returns:
            The hidden state of every step, ``[batch, seq, d_hidden]``.

        Raises:
            ValueError: the input is not rank 3 with ``d_input`` features, or the state's shape is
                wrong.
        """
        output: Tensor = _run_one(self, "Gru.forward", input, state, True, False)[0]
        return output

    def _run(self, batched: Tensor, state: Tensor | None, reverse: bool, op: str) -> tuple[Tensor, Tensor]:
        """The recurrence over ``batched`` (``[batch, seq, d_input]``): outputs and final hidden."""
        hidden = _initial_state(op, "state", state, batched, self.d_hidden)
        if self.reset_after and self.clip is None:
            # PyTorch's cell: the backend's op, one kernel through time where the backend has one
            ordered = [self.reset_gate, self.update_gate, self.new_gate]
            weight_ih, bias_ih = _stacked([gate.input_transform for gate in ordered])
            weight_hh, bias_hh = _stacked([gate.hidden_transform for gate in ordered])
            return F.gru(batched, hidden, weight_ih, weight_hh, bias_ih, bias_hh, reverse)
        gates = [self.update_gate, self.reset_gate, self.new_gate]
        projected = _input_projection(batched, gates)
        size = self.d_hidden
        clip = self.clip

        if self.reset_after:
            weight_hidden, bias_hidden = _stacked([gate.hidden_transform for gate in gates])

            def candidate_and_gates(projected_t: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor]:
                hidden_part = F.linear(hidden, weight_hidden, bias_hidden)
                opened = A.sigmoid(projected_t.narrow(1, 0, 2 * size) + hidden_part.narrow(1, 0, 2 * size))
                reset_values = opened.narrow(1, size, size)
                candidate = (
                    projected_t.narrow(1, 2 * size, size)
                    + reset_values * hidden_part.narrow(1, 2 * size, size)
                ).tanh()
                return candidate, opened.narrow(1, 0, size)

        else:
            weight_gates, bias_gates = _stacked(
                [self.update_gate.hidden_transform, self.reset_gate.hidden_transform]
            )
            weight_new, bias_new = _stacked([self.new_gate.hidden_transform])

            def candidate_and_gates(projected_t: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor]:
                opened = A.sigmoid(
                    projected_t.narrow(1, 0, 2 * size) + F.linear(hidden, weight_gates, bias_gates)
                )
                reset_values = opened.narrow(1, size, size)
                candidate = (
                    projected_t.narrow(1, 2 * size, size)
                    + F.linear(reset_values * hidden, weight_new, bias_new)
                ).tanh()
                return candidate, opened.narrow(1, 0, size)

        def step(projected_t: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor]:
            candidate, update_values = candidate_and_gates(projected_t, hidden)
            # (1 - z) * n + z * h, with one product fewer
            hidden = candidate + update_values * (hidden - candidate)
            if clip is not None:
                hidden = hidden.clamp(-clip, clip)
            return hidden, hidden

        return _scan(projected, hidden, step, reverse)


class BiGruConfig(Config):
    """Settings of a ``BiGru``: as ``GruConfig``, plus ``batch_first`` (whether inputs and outputs are
    ``[batch, seq, features]``, else ``[seq, batch, features]``); both directions get the same
    settings."""

    d_input: int
    d_hidden: int
    bias: bool
    reset_after: bool = True
    initializer: Initializer | None = None
    batch_first: bool = True
    clip: float | None = None

    def init(self, device: Device) -> BiGru:
        """A ``BiGru`` on ``device``."""
        return BiGru(self, device)


class BiGru(_Bidirectional[Gru]):
    """A bidirectional single-layer GRU, as PyTorch's ``nn.GRU(bidirectional=True)``.

    ``forward_direction`` reads the sequence first to last and ``reverse_direction`` last to first
    (Burn names these fields ``forward`` and ``reverse``, which in Python would hide the ``forward``
    method). Their outputs are joined along the features: ``[batch, seq, 2 * d_hidden]``, the forward
    direction's first.
    """

    def __init__(self, config: BiGruConfig, device: Device) -> None:
        super().__init__(config, GruConfig, device)

    def forward(self, input: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Runs the sequence in both directions.

        Args:
            input: ``[batch, seq, d_input]`` (``[seq, batch, d_input]`` unless ``batch_first``).
            state: the initial hidden states ``[2, batch, d_hidden]`` (forward direction first, as
                PyTorch's ``h_0``); zeros when ``None``.

        Returns:
            ``[batch, seq, 2 * d_hidden]`` (``[seq, batch, 2 * d_hidden]`` unless ``batch_first``) and
            the final hidden states ``[2, batch, d_hidden]``.

        Raises:
            ValueError: the input is not rank 3 with ``d_input`` features, or the state's shape is
                wrong.
        """
        states = [] if state is None else [("state", state)]
        output, forward_hidden, reverse_hidden = self._run_both("BiGru.forward", input, states)
        return output, Tensor.stack([forward_hidden, reverse_hidden], 0)
