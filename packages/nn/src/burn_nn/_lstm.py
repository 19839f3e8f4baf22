"""Long short-term memory layers: ``Lstm`` and ``BiLstm``, with their ``LstmState``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from burn_backend import Device, DType, Tensor
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

__all__ = ["BiLstm", "BiLstmConfig", "Lstm", "LstmConfig", "LstmState"]


@dataclass(frozen=True, eq=False)
class LstmState:
    """The cell and hidden states of an LSTM, of one shape: ``[batch, d_hidden]`` for ``Lstm``,
    ``[2, batch, d_hidden]`` for ``BiLstm`` (forward direction first).

    Args:
        cell: the cell state (PyTorch's ``c``).
        hidden: the hidden state (PyTorch's ``h``).

    Raises:
        ValueError: the two shapes differ.
    """

    cell: Tensor
    hidden: Tensor

    def __post_init__(self) -> None:
        if self.cell.dims() != self.hidden.dims():
            raise ValueError(
                f"LstmState: cell has shape {self.cell.dims()} but hidden has {self.hidden.dims()}; "
                "they must match"
            )

    @classmethod
    def initial(cls, shape: Sequence[int], device: Device, dtype: DType | None = None) -> LstmState:
        """A state of zeros of ``shape`` on ``device`` (``dtype``: the device's float dtype by
        default)."""
        zeros = Tensor.zeros(list(shape), device, dtype)
        return cls(zeros, zeros)

    @property
    def shape(self) -> list[int]:
        """The shape of both states."""
        return self.cell.dims()

    @property
    def device(self) -> Device:
        """The device of the states."""
        return self.cell.device

    def unpack(self) -> tuple[Tensor, Tensor]:
        """``(cell, hidden)``."""
        return self.cell, self.hidden

    def map_state(self, function: Callable[[Tensor], Tensor]) -> LstmState:
        """``function`` applied to both states."""
        return LstmState(function(self.cell), function(self.hidden))

    @staticmethod
    def stack(states: Sequence[LstmState], dim: int) -> LstmState:
        """``states`` (of one shape) stacked along a new dim ``dim``."""
        return LstmState(
            Tensor.stack([state.cell for state in states], dim),
            Tensor.stack([state.hidden for state in states], dim),
        )


class LstmConfig(Config):
    """Settings of an ``Lstm``.

    Args:
        d_input: the size of the input features.
        d_hidden: the size of the hidden and cell states.
        bias: whether the gates' input and hidden transforms add learned biases.
        initializer: how the weights and biases are drawn; ``None`` (the default) is PyTorch's rule,
            uniform on ``±1/sqrt(d_hidden)`` for every weight and bias (Burn's default is
            ``XavierNormal(1.0)``).
        batch_first: whether inputs and outputs are ``[batch, seq, features]`` (else ``[seq, batch,
            features]``).
        reverse: whether to run the sequence from its last step to its first.
        clip: if set, the cell state is clamped to ``[-clip, clip]`` after each step.
        input_forget: couple the input and forget gates, ``f_t = 1 - i_t`` (no forget gate weights).
    """

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer | None = None
    batch_first: bool = True
    reverse: bool = False
    clip: float | None = None
    input_forget: bool = False

    def init(self, device: Device) -> Lstm:
        """An ``Lstm`` on ``device``."""
        return Lstm(self, device)


class Lstm(Module):
    """A single-layer LSTM, as PyTorch's ``nn.LSTM`` (one layer, one direction)::

        i = sigmoid(x W_ii + b_ii + h W_hi + b_hi)      (input gate)
        f = sigmoid(x W_if + b_if + h W_hf + b_hf)      (forget gate)
        g = tanh(x W_ig + b_ig + h W_hg + b_hg)         (cell gate)
        o = sigmoid(x W_io + b_io + h W_ho + b_ho)      (output gate)
        c' = f * c + i * g,   h' = o * tanh(c')

    Each gate is a ``GateController`` (``input_gate``, ``forget_gate``, ``output_gate``, ``cell_gate``;
    ``forget_gate`` is ``None`` with ``input_forget``); the gates are computed together, with one
    matrix product per step.

    Example:
        >>> lstm = LstmConfig(4, 8, True).init(device)
        >>> output, state = lstm(Tensor.ones([2, 5, 4], device))
        >>> output.dims(), state.cell.dims()
        ([2, 5, 8], [2, 8])
    """

    def __init__(self, config: LstmConfig, device: Device) -> None:
        _check_sizes("Lstm", config.d_input, config.d_hidden)
        initializer = _default_initializer(config.initializer, config.d_hidden)

        def gate() -> GateController:
            return GateController(config.d_input, config.d_hidden, config.bias, initializer, device)

        self.input_gate: GateController = gate()
        self.forget_gate: GateController | None = None if config.input_forget else gate()
        self.output_gate: GateController = gate()
        self.cell_gate: GateController = gate()
        self.d_input = config.d_input
        self.d_hidden = config.d_hidden
        self.batch_first = config.batch_first
        self.reverse = config.reverse
        self.clip = _check_clip("Lstm", config.clip)
        self.input_forget = config.input_forget

    def forward(self, input: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Runs the sequence.

        Args:
            input: ``[batch, seq, d_input]`` (``[seq, batch, d_input]`` unless ``batch_first``).
            state: the initial cell and hidden states, each ``[batch, d_hidden]``; zeros when
                ``None``.

        Returns:
            The hidden state of every step, ``[batch, seq, d_hidden]`` (``[seq, batch, d_hidden]``
            unless ``batch_first``), and the final ``LstmState`` (each ``[batch, d_hidden]``).

        Raises:
            ValueError: the input is not rank 3 with ``d_input`` features, or the state's shape is
                wrong.
        """
        return _run_one(self, "Lstm.forward", input, state, self.batch_first, self.reverse)

    def _gates(self) -> list[GateController]:
        """The gates in the order they are computed: the sigmoid ones, then the cell gate."""
        sigmoid_gates = [self.input_gate, self.output_gate]
        if self.forget_gate is not None:
            sigmoid_gates.insert(1, self.forget_gate)
        return [*sigmoid_gates, self.cell_gate]

    def _run(
        self, batched: Tensor, state: LstmState | None, reverse: bool, op: str
    ) -> tuple[Tensor, LstmState]:
        """The recurrence over ``batched`` (``[batch, seq, d_input]``): outputs and final state."""
        cell = _initial_state(op, "state.cell", None if state is None else state.cell, batched, self.d_hidden)
        hidden = _initial_state(
            op, "state.hidden", None if state is None else state.hidden, batched, self.d_hidden
        )
        if self.forget_gate is not None and self.clip is None:
            # PyTorch's cell: the backend's op, one kernel through time where the backend has one
            ordered = [self.input_gate, self.forget_gate, self.cell_gate, self.output_gate]
            weight_ih, bias_ih = _stacked([gate.input_transform for gate in ordered])
            weight_hh, bias_hh = _stacked([gate.hidden_transform for gate in ordered])
            output, hidden, cell = F.lstm(
                batched, hidden, cell, weight_ih, weight_hh, bias_ih, bias_hh, reverse
            )
            return output, LstmState(cell, hidden)
        gates = self._gates()
        weight_hidden, bias_hidden = _stacked([gate.hidden_transform for gate in gates])
        projected = _input_projection(batched, gates)
        size = self.d_hidden
        sigmoid_size = (len(gates) - 1) * size
        coupled = self.forget_gate is None
        clip = self.clip

        def step(projected_t: Tensor, state: tuple[Tensor, Tensor]) -> tuple[tuple[Tensor, Tensor], Tensor]:
            cell, hidden = state
            summed = projected_t + F.linear(hidden, weight_hidden, bias_hidden)
            opened = A.sigmoid(summed.narrow(1, 0, sigmoid_size))
            candidate = summed.narrow(1, sigmoid_size, size).tanh()
            input_values = opened.narrow(1, 0, size)
            if coupled:
                forget_values = 1.0 - input_values
                output_values = opened.narrow(1, size, size)
            else:
                forget_values = opened.narrow(1, size, size)
                output_values = opened.narrow(1, 2 * size, size)
            cell = forget_values * cell + input_values * candidate
            if clip is not None:
                cell = cell.clamp(-clip, clip)
            hidden = output_values * cell.tanh()
            return (cell, hidden), hidden

        output, (cell, hidden) = _scan(projected, (cell, hidden), step, reverse)
        return output, LstmState(cell, hidden)


class BiLstmConfig(Config):
    """Settings of a ``BiLstm``: as ``LstmConfig`` (without ``reverse``); both directions get the
    same settings."""

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer | None = None
    batch_first: bool = True
    clip: float | None = None
    input_forget: bool = False

    def init(self, device: Device) -> BiLstm:
        """A ``BiLstm`` on ``device``."""
        return BiLstm(self, device)


class BiLstm(_Bidirectional[Lstm]):
    """A bidirectional single-layer LSTM, as PyTorch's ``nn.LSTM(bidirectional=True)``.

    ``forward_direction`` reads the sequence first to last and ``reverse_direction`` last to first
    (Burn names these fields ``forward`` and ``reverse``, which in Python would hide the ``forward``
    method). Their outputs are joined along the features: ``[batch, seq, 2 * d_hidden]``, the forward
    direction's first.
    """

    def __init__(self, config: BiLstmConfig, device: Device) -> None:
        super().__init__(config, LstmConfig, device)

    def forward(self, input: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Runs the sequence in both directions.

        Args:
            input: ``[batch, seq, d_input]`` (``[seq, batch, d_input]`` unless ``batch_first``).
            state: the initial cell and hidden states, each ``[2, batch, d_hidden]`` (forward
                direction first, as PyTorch's ``(h_0, c_0)``); zeros when ``None``.

        Returns:
            ``[batch, seq, 2 * d_hidden]`` (``[seq, batch, 2 * d_hidden]`` unless ``batch_first``) and
            the final ``LstmState``, each state ``[2, batch, d_hidden]``.

        Raises:
            ValueError: the input is not rank 3 with ``d_input`` features, or the state's shape is
                wrong.
        """
        states = [] if state is None else [("state.cell", state.cell), ("state.hidden", state.hidden)]
        output, forward_final, reverse_final = self._run_both("BiLstm.forward", input, states, LstmState)
        return output, LstmState.stack([forward_final, reverse_final], 0)
