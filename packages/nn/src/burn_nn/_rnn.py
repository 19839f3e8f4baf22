"""Recurrent layers: the gate controller they share, and the plain (Elman) ``Rnn`` and ``BiRnn``."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from burn_backend import Device, Tensor
from burn_backend import activation as A
from burn_backend import module as F

from ._config import Config
from ._initializer import Initializer
from ._linear import Linear, LinearConfig
from ._module import Module

__all__ = ["BiRnn", "BiRnnConfig", "GateController", "Rnn", "RnnConfig", "RnnState"]

S = TypeVar("S")

RnnActivation = Literal["tanh", "relu"]


class GateController(Module):
    """One gate of a recurrent cell: an affine map of the input and one of the hidden state, summed.

    ``input_transform`` is a ``Linear`` from ``d_input`` to ``d_output`` and ``hidden_transform`` one
    from ``d_output`` to ``d_output`` (Burn's layout, ``weight`` ``[d_in, d_out]``: the transpose of
    the matching block of PyTorch's ``weight_ih_l0``/``weight_hh_l0``; the two biases are PyTorch's
    ``bias_ih_l0`` and ``bias_hh_l0`` blocks).

    Args:
        d_input: the size of the input features.
        d_output: the size of the hidden state (and of the gate's output).
        bias: whether both transforms add a learned bias.
        initializer: how the weights and biases are drawn (each transform's fans are its own sizes).
        device: where the parameters live.
    """

    def __init__(
        self, d_input: int, d_output: int, bias: bool, initializer: Initializer, device: Device
    ) -> None:
        self.input_transform: Linear = LinearConfig(d_input, d_output, bias, initializer).init(device)
        self.hidden_transform: Linear = LinearConfig(d_output, d_output, bias, initializer).init(device)

    def gate_product(self, input: Tensor, hidden: Tensor) -> Tensor:
        """``input @ W_input + b_input + hidden @ W_hidden + b_hidden``.

        Args:
            input: ``[batch, d_input]``.
            hidden: ``[batch, d_output]``.

        Returns:
            ``[batch, d_output]``, before the gate's activation.
        """
        return self.input_transform.forward(input) + self.hidden_transform.forward(hidden)


@dataclass(frozen=True, eq=False)
class RnnState:
    """The state of an ``Rnn`` (``hidden`` of shape ``[batch, d_hidden]``) or ``BiRnn`` (``[2, batch,
    d_hidden]``: forward direction first)."""

    hidden: Tensor


# -- shared machinery of Rnn, Lstm and Gru ----------------------------------------------------------
def _default_initializer(initializer: Initializer | None, d_hidden: int) -> Initializer:
    """``initializer``, or PyTorch's rule for recurrent layers: every weight and bias uniform on
    ``±1/sqrt(d_hidden)``."""
    if initializer is not None:
        return initializer
    bound = 1.0 / math.sqrt(d_hidden)
    return Initializer.Uniform(-bound, bound)


def _check_sizes(layer: str, d_input: int, d_hidden: int) -> None:
    if d_input <= 0 or d_hidden <= 0:
        raise ValueError(f"{layer}: d_input and d_hidden must be positive, got {d_input} and {d_hidden}")


def _check_clip(layer: str, clip: float | None) -> float | None:
    if clip is None:
        return None
    if not clip > 0:
        raise ValueError(f"{layer}: clip must be positive (or None), got {clip}")
    return float(clip)


def _stacked(linears: Sequence[Linear]) -> tuple[Tensor, Tensor | None]:
    """The weights of ``linears`` side by side (``[d_in, sum of d_out]``) and their biases joined, so
    that one matrix product computes every gate."""
    weights = [linear.weight.val() for linear in linears]
    biases = [linear.bias.val() for linear in linears if linear.bias is not None]
    weight = weights[0] if len(weights) == 1 else Tensor.cat(weights, 1)
    if not biases:
        return weight, None
    return weight, biases[0] if len(biases) == 1 else Tensor.cat(biases, 0)


def _batch_first_input(op: str, input: Tensor, d_input: int, batch_first: bool) -> Tensor:
    """``input`` checked (rank 3, ``d_input`` features, a non-empty sequence) and laid out
    ``[batch, seq, d_input]``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    layout = "[batch, seq, d_input]" if batch_first else "[seq, batch, d_input]"
    if input.rank != 3:
        raise ValueError(f"{op}: input must have rank 3 ({layout}), got shape {input.dims()}")
    if input.dims()[2] != d_input:
        raise ValueError(
            f"{op}: input has {input.dims()[2]} features (shape {input.dims()}, layout {layout}), "
            f"expected d_input = {d_input}"
        )
    batched = input if batch_first else input.swap_dims(0, 1)
    if batched.dims()[1] == 0:
        raise ValueError(f"{op}: input has an empty sequence (shape {input.dims()}, layout {layout})")
    return batched


def _initial_state(op: str, name: str, state: Tensor | None, batched: Tensor, d_hidden: int) -> Tensor:
    """The initial ``[batch, d_hidden]`` state of a run over ``batched``: ``state`` checked, or zeros."""
    if state is None:
        return Tensor.zeros([batched.dims()[0], d_hidden], batched.device, batched.dtype)
    if not isinstance(state, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(state).__name__}")
    expected = [batched.dims()[0], d_hidden]
    if state.dims() != expected:
        raise ValueError(f"{op}: {name} has shape {state.dims()}, expected {expected} ([batch, d_hidden])")
    return state


def _bi_state(op: str, name: str, state: Tensor, batch: int, d_hidden: int) -> tuple[Tensor, Tensor]:
    """A bidirectional state ``[2, batch, d_hidden]`` split into its forward and reverse halves."""
    if not isinstance(state, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(state).__name__}")
    if state.dims() != [2, batch, d_hidden]:
        raise ValueError(
            f"{op}: {name} has shape {state.dims()}, expected {[2, batch, d_hidden]} "
            "([2 directions, batch, d_hidden])"
        )
    return state.narrow(0, 0, 1).squeeze_dim(0), state.narrow(0, 1, 1).squeeze_dim(0)


def _input_projection(batched: Tensor, gates: Sequence[GateController]) -> Tensor:
    """``batched`` ``[batch, seq, d_input]`` through the input transforms of ``gates``, side by side."""
    weight, bias = _stacked([gate.input_transform for gate in gates])
    return F.linear(batched, weight, bias)


def _scan(
    projected: Tensor,
    state: S,
    step: Callable[[Tensor, S], tuple[S, Tensor]],
    reverse: bool,
) -> tuple[Tensor, S]:
    """Runs ``step`` over the time steps of ``projected`` (``[batch, seq, ...]``, each step's input
    already multiplied by the input weights), last to first when ``reverse``.

    ``step(projected_t, state)`` returns the new state and the hidden output ``[batch, d_hidden]``;
    the outputs are stacked at their time step's position into ``[batch, seq, d_hidden]``.
    """
    steps = projected.split(1, 1)
    outputs: list[Tensor] = []
    for projected_t in reversed(steps) if reverse else steps:
        state, hidden = step(projected_t.squeeze_dim(1), state)
        outputs.append(hidden)
    if reverse:
        outputs.reverse()
    return Tensor.stack(outputs, 1), state


class _Direction(Protocol):
    """A one-direction recurrent layer: ``Rnn``, ``Lstm`` or ``Gru``."""

    d_input: int
    d_hidden: int

    def _run(self, batched: Tensor, state: Any, reverse: bool, op: str) -> tuple[Tensor, Any]:
        """The recurrence over ``batched`` (``[batch, seq, d_input]``): outputs and final state."""


D = TypeVar("D", bound=_Direction)
D_co = TypeVar("D_co", bound=_Direction, covariant=True)


class _DirectionConfig(Protocol[D_co]):
    """The config of a one-direction layer."""

    def init(self, device: Device) -> D_co:
        """The layer on ``device``."""


def _run_one(
    layer: _Direction, op: str, input: Tensor, state: Any, batch_first: bool, reverse: bool
) -> tuple[Tensor, Any]:
    """``layer``'s outputs over ``input`` (laid out as ``batch_first`` says) and its final state."""
    batched = _batch_first_input(op, input, layer.d_input, batch_first)
    output, final = layer._run(batched, state, reverse, op)
    return (output if batch_first else output.swap_dims(0, 1)), final


class _Bidirectional(Module, Generic[D]):
    """What ``BiRnn``, ``BiLstm`` and ``BiGru`` share: a layer per direction, both run over the input,
    their outputs joined along the features."""

    def __init__(self, config: Any, direction: Callable[..., _DirectionConfig[D]], device: Device) -> None:
        """Both directions made by the ``direction`` config with ``config``'s settings but ``batch_first``
        (each direction runs on batch-first inputs)."""
        settings = {
            field.name: getattr(config, field.name)
            for field in dataclasses.fields(config)
            if field.name != "batch_first"
        }
        one_direction = direction(**settings)
        self.forward_direction: D = one_direction.init(device)
        self.reverse_direction: D = one_direction.init(device)
        self.d_input = config.d_input
        self.d_hidden = config.d_hidden
        self.batch_first = config.batch_first

    def _run_both(
        self,
        op: str,
        input: Tensor,
        states: Sequence[tuple[str, Tensor]],
        pack: Callable[..., Any] = lambda state: state,
    ) -> tuple[Tensor, Any, Any]:
        """The joined outputs (``[batch, seq, 2 * d_hidden]``, laid out as ``batch_first`` says) and the
        final states of the forward and reverse directions.

        ``states`` are the named initial state tensors ``[2, batch, d_hidden]`` (none: zeros); ``pack``
        makes one direction's state of its halves of them.
        """
        batched = _batch_first_input(op, input, self.d_input, self.batch_first)
        halves = [_bi_state(op, name, state, batched.dims()[0], self.d_hidden) for name, state in states]
        forward_state = pack(*(half[0] for half in halves)) if halves else None
        reverse_state = pack(*(half[1] for half in halves)) if halves else None
        forward_output, forward_final = self.forward_direction._run(batched, forward_state, False, op)
        reverse_output, reverse_final = self.reverse_direction._run(batched, reverse_state, True, op)
        output = Tensor.cat([forward_output, reverse_output], 2)
        return (output if self.batch_first else output.swap_dims(0, 1)), forward_final, reverse_final


# -- Rnn ----------------------------------------------------------------------------------------------
class RnnConfig(Config):
    """Settings of an ``Rnn``.

    Args:
        d_input: the size of the input features.
        d_hidden: the size of the hidden state.
        bias: whether the input and hidden transforms add learned biases.
        initializer: how the weights and biases are drawn; ``None`` (the default) is PyTorch's rule,
            uniform on ``±1/sqrt(d_hidden)`` for every weight and bias (Burn's default is
            ``XavierNormal(1.0)``).
        batch_first: whether inputs and outputs are ``[batch, seq, features]`` (else ``[seq, batch,
            features]``).
        reverse: whether to run the sequence from its last step to its first.
        clip: if set, the hidden state is clamped to ``[-clip, clip]`` after each step.
        hidden_activation: ``"tanh"`` (PyTorch's and Burn's default) or ``"relu"``.
    """

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer | None = None
    batch_first: bool = True
    reverse: bool = False
    clip: float | None = None
    hidden_activation: RnnActivation = "tanh"

    def init(self, device: Device) -> Rnn:
        """An ``Rnn`` on ``device``."""
        return Rnn(self, device)


class Rnn(Module):
    """A single-layer Elman recurrent network: ``h_t = act(x_t @ W_input + b_input + h_{t-1} @
    W_hidden + b_hidden)``, as PyTorch's ``nn.RNN`` (one layer, one direction).

    ``gate`` holds the weights (see ``GateController``). ``forward`` returns every step's hidden state
    and the final state.

    Example:
        >>> rnn = RnnConfig(4, 8, True).init(device)
        >>> output, state = rnn(Tensor.ones([2, 5, 4], device))
        >>> output.dims(), state.hidden.dims()
        ([2, 5, 8], [2, 8])
    """

    def __init__(self, config: RnnConfig, device: Device) -> None:
        _check_sizes("Rnn", config.d_input, config.d_hidden)
        if config.hidden_activation not in ("tanh", "relu"):
            raise ValueError(
                f"Rnn: hidden_activation must be 'tanh' or 'relu', got {config.hidden_activation!r}"
            )
        initializer = _default_initializer(config.initializer, config.d_hidden)
        self.gate: GateController = GateController(
            config.d_input, config.d_hidden, config.bias, initializer, device
        )
        self.d_input = config.d_input
        self.d_hidden = config.d_hidden
        self.batch_first = config.batch_first
        self.reverse = config.reverse
        self.clip = _check_clip("Rnn", config.clip)
        self.hidden_activation: RnnActivation = config.hidden_activation

    def forward(self, input: Tensor, state: RnnState | None = None) -> tuple[Tensor, RnnState]:
        """Runs the sequence.

        Args:
            input: ``[batch, seq, d_input]`` (``[seq, batch, d_input]`` unless ``batch_first``).
            state: the initial hidden state ``[batch, d_hidden]``; zeros when ``None``.

        Returns:
            The hidden state of every step, ``[batch, seq, d_hidden]`` (``[seq, batch, d_hidden]``
            unless ``batch_first``), and the final ``RnnState`` (``hidden`` ``[batch, d_hidden]``).

        Raises:
            ValueError: the input is not rank 3 with ``d_input`` features, or the state's shape is
                wrong.
        """
        output, hidden = _run_one(self, "Rnn.forward", input, state, self.batch_first, self.reverse)
        return output, RnnState(hidden)

    def _run(
        self, batched: Tensor, state: RnnState | Tensor | None, reverse: bool, op: str
    ) -> tuple[Tensor, Tensor]:
        """The recurrence over ``batched`` (``[batch, seq, d_input]``): outputs and final hidden."""
        if isinstance(state, RnnState):
            state = state.hidden
        hidden = _initial_state(op, "state.hidden", state, batched, self.d_hidden)
        weight_hidden, bias_hidden = _stacked([self.gate.hidden_transform])
        projected = _input_projection(batched, [self.gate])
        activation = A.relu if self.hidden_activation == "relu" else A.tanh
        clip = self.clip

        def step(projected_t: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor]:
            hidden = activation(projected_t + F.linear(hidden, weight_hidden, bias_hidden))
            if clip is not None:
                hidden = hidden.clamp(-clip, clip)
            return hidden, hidden

        return _scan(projected, hidden, step, reverse)


# -- BiRnn --------------------------------------------------------------------------------------------
class BiRnnConfig(Config):
    """Settings of a ``BiRnn``: as ``RnnConfig`` (without ``reverse``); both directions get the same
    settings."""

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer | None = None
    batch_first: bool = True
    clip: float | None = None
    hidden_activation: RnnActivation = "tanh"

    def init(self, device: Device) -> BiRnn:
        """A ``BiRnn`` on ``device``."""
        return BiRnn(self, device)


class BiRnn(_Bidirectional[Rnn]):
    """A bidirectional single-layer Elman network, as PyTorch's ``nn.RNN(bidirectional=True)``.

    ``forward_direction`` reads the sequence first to last and ``reverse_direction`` last to first
    (Burn names these fields ``forward`` and ``reverse``, which in Python would hide the ``forward``
    method). Their outputs are joined along the features: ``[batch, seq, 2 * d_hidden]``, the forward
    direction's first.
    """

    def __init__(self, config: BiRnnConfig, device: Device) -> None:
        super().__init__(config, RnnConfig, device)

    def forward(self, input: Tensor, state: RnnState | None = None) -> tuple[Tensor, RnnState]:
        """Runs the sequence in both directions.

        Args:
            input: ``[batch, seq, d_input]`` (``[seq, batch, d_input]`` unless ``batch_first``).
            state: the initial hidden states ``[2, batch, d_hidden]`` (forward direction first, as
                PyTorch's ``h_0``); zeros when ``None``.

        Returns:
            ``[batch, seq, 2 * d_hidden]`` (``[seq, batch, 2 * d_hidden]`` unless ``batch_first``) and
            the final ``RnnState`` with ``hidden`` ``[2, batch, d_hidden]``.

        Raises:
            ValueError: the input is not rank 3 with ``d_input`` features, or the state's shape is
                wrong.
        """
        states = [] if state is None else [("state.hidden", state.hidden)]
        output, forward_hidden, reverse_hidden = self._run_both("BiRnn.forward", input, states)
        return output, RnnState(Tensor.stack([forward_hidden, reverse_hidden], 0))
