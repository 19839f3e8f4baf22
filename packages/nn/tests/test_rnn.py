"""Recurrent layers (Rnn, Lstm, Gru and their bidirectional forms) against PyTorch's nn.RNN/LSTM/GRU."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_ndarray import NdArray
from burn_nn import (
    BiGru,
    BiGruConfig,
    BiLstm,
    BiLstmConfig,
    BiRnn,
    BiRnnConfig,
    GateController,
    GruConfig,
    Initializer,
    Lstm,
    LstmConfig,
    LstmState,
    Param,
    Rnn,
    RnnConfig,
    RnnState,
)

BATCH, SEQ, D_INPUT, D_HIDDEN = 2, 4, 3, 5


# -- helpers --------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """PyTorch's recurrent kernels spend ~0.2 s per call spinning threads on a busy 2-core machine."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _numpy(tensor: Tensor) -> np.ndarray[Any, Any]:
    return tensor.to_data().to_numpy()


def _torch_gate_order(kind: str, layer: Any) -> list[GateController]:
    """Our gates in the order PyTorch stacks them in ``weight_ih_l0`` and friends."""
    if kind == "rnn":
        return [layer.gate]
    if kind == "lstm":
        return [layer.input_gate, layer.forget_gate, layer.cell_gate, layer.output_gate]
    return [layer.reset_gate, layer.update_gate, layer.new_gate]


def _directions(layer: Any) -> list[tuple[Any, str]]:
    """Each direction of ``layer`` with the suffix of PyTorch's matching parameter names."""
    if isinstance(layer, (BiRnn, BiLstm, BiGru)):
        return [(layer.forward_direction, ""), (layer.reverse_direction, "_reverse")]
    return [(layer, "")]


def _param_pairs(kind: str, layer: Any, torch_layer: Any) -> list[tuple[Param, Any, slice, bool]]:
    """(our parameter, PyTorch parameter, rows of it, whether ours is the transpose) per parameter."""
    pairs = []
    for direction, suffix in _directions(layer):
        for k, gate in enumerate(_torch_gate_order(kind, direction)):
            rows = slice(k * D_HIDDEN, (k + 1) * D_HIDDEN)
            for linear, which in ((gate.input_transform, "ih"), (gate.hidden_transform, "hh")):
                pairs.append((linear.weight, getattr(torch_layer, f"weight_{which}_l0{suffix}"), rows, True))
                if linear.bias is not None:
                    pairs.append((linear.bias, getattr(torch_layer, f"bias_{which}_l0{suffix}"), rows, False))
    return pairs


def _copy_into_torch(ref: Any, pairs: list[tuple[Param, Any, slice, bool]]) -> None:
    with ref.torch.no_grad():
        for ours, theirs, rows, transposed in pairs:
            value = ref.tensor(ours.val())
            theirs[rows] = value.T if transposed else value


def _torch_layer(ref: Any, kind: str, **kwargs: Any) -> Any:
    nn = ref.torch.nn
    return {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[kind](D_INPUT, D_HIDDEN, **kwargs)


CONFIGS = {
    ("rnn", False): RnnConfig,
    ("rnn", True): BiRnnConfig,
    ("lstm", False): LstmConfig,
    ("lstm", True): BiLstmConfig,
    ("gru", False): GruConfig,
    ("gru", True): BiGruConfig,
}


def _compare_with_torch(
    ref: Any,
    device: Any,
    rng: np.random.Generator,
    kind: str,
    bidirectional: bool,
    with_state: bool,
    *,
    bias: bool = True,
    batch_first: bool = True,
    config: dict[str, Any] | None = None,
    torch_options: dict[str, Any] | None = None,
) -> None:
    """Runs our layer and PyTorch's on the same weights, inputs and initial state; compares outputs,
    final states and the gradients of a random weighting of them with respect to the input, the
    initial state and every weight and bias."""
    settings = dict(config or {})
    if kind != "gru" or bidirectional:
        settings["batch_first"] = batch_first
    layer = CONFIGS[kind, bidirectional](D_INPUT, D_HIDDEN, bias, **settings).init(device)
    torch_layer = _torch_layer(
        ref, kind, bias=bias, batch_first=batch_first, bidirectional=bidirectional, **(torch_options or {})
    )
    dtype = np.dtype(device.backend.float_dtype.numpy)
    if dtype == np.float64:
        torch_layer = torch_layer.double()
    pairs = _param_pairs(kind, layer, torch_layer)
    assert len(pairs) == len(layer.params())
    _copy_into_torch(ref, pairs)

    directions = 2 if bidirectional else 1
    input_shape = [BATCH, SEQ, D_INPUT] if batch_first else [SEQ, BATCH, D_INPUT]
    x_np = rng.standard_normal(input_shape).astype(dtype)
    states_np = {
        name: rng.standard_normal([directions, BATCH, D_HIDDEN]).astype(dtype)
        for name in (("h", "c") if kind == "lstm" else ("h",))
    }

    def ours_state(name: str) -> Tensor:
        value = states_np[name] if bidirectional else states_np[name][0]
        return Tensor.from_data(value, device).require_grad()

    x = Tensor.from_data(x_np, device).require_grad()
    initial = {name: ours_state(name) for name in states_np}
    state: Any = None
    if with_state:
        if kind == "lstm":
            state = LstmState(initial["c"], initial["h"])
        elif kind == "rnn":
            state = RnnState(initial["h"])
        else:
            state = initial["h"]
    result = layer(x, state)
    finals: dict[str, Tensor] = {}
    if kind == "lstm":
        output, final = result
        finals = {"h": final.hidden, "c": final.cell}
    elif kind == "rnn":
        output, final = result
        finals = {"h": final.hidden}
    elif bidirectional:
        output, finals["h"] = result
    else:
        output = result  # as Burn's, Gru returns the outputs only

    xt = ref.tensor(x_np, requires_grad=True)
    initial_t = {name: ref.tensor(value, requires_grad=True) for name, value in states_np.items()}
    if kind == "lstm":
        output_t, (h_t, c_t) = torch_layer(xt, (initial_t["h"], initial_t["c"]) if with_state else None)
        finals_t = {"h": h_t, "c": c_t}
    else:
        output_t, h_t = torch_layer(xt, initial_t["h"] if with_state else None)
        finals_t = {"h": h_t}

    ref.close(output, output_t, 2.0)
    if kind == "gru" and not bidirectional:
        last = output if batch_first else output.swap_dims(0, 1)
        ref.close(last.narrow(1, SEQ - 1, 1).squeeze_dim(1), h_t[0], 2.0)
    for name, value in finals.items():
        ref.close(value, finals_t[name] if bidirectional else finals_t[name][0], 2.0)

    weight_np = rng.standard_normal(output.dims()).astype(dtype)
    loss = (output * Tensor.from_data(weight_np, device)).sum()
    loss_t = (output_t * ref.tensor(weight_np)).sum()
    for name, value in finals.items():
        weight_np = rng.standard_normal(value.dims()).astype(dtype)
        loss = loss + (value * Tensor.from_data(weight_np, device)).sum()
        theirs = finals_t[name] if bidirectional else finals_t[name][0]
        loss_t = loss_t + (theirs * ref.tensor(weight_np)).sum()
    grads = loss.backward()
    loss_t.backward()

    ref.close(x.grad(grads), xt.grad, 2.0)
    if with_state:
        for name, value in initial.items():
            theirs = initial_t[name].grad
            ref.close(value.grad(grads), theirs if bidirectional else theirs[0], 2.0)
    for ours, theirs, rows, transposed in pairs:
        expected = theirs.grad[rows]
        ref.close(ours.val().grad(grads), expected.T if transposed else expected, 2.0)


# -- against PyTorch ------------------------------------------------------------------------------
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "initial-state"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_matches_torch(ref, device, rng, kind, bidirectional, with_state) -> None:
    _compare_with_torch(ref, device, rng, kind, bidirectional, with_state)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_rnn_relu_matches_torch(ref, device, rng, bidirectional) -> None:
    _compare_with_torch(
        ref,
        device,
        rng,
        "rnn",
        bidirectional,
        True,
        config={"hidden_activation": "relu"},
        torch_options={"nonlinearity": "relu"},
    )


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_without_bias_matches_torch(ref, device, rng, kind) -> None:
    _compare_with_torch(ref, device, rng, kind, True, True, bias=False)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_sequence_first_layout_matches_torch(ref, device, rng, kind) -> None:
    _compare_with_torch(ref, device, rng, kind, True, True, batch_first=False)
    if kind != "gru":
        _compare_with_torch(ref, device, rng, kind, False, True, batch_first=False)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_float64_matches_torch(ref, rng, kind) -> None:
    device = Autodiff(NdArray("f64")).device()
    device.seed(0)
    _compare_with_torch(ref, device, rng, kind, True, True)


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
def test_reverse_runs_the_sequence_backwards(ref, device, rng, kind) -> None:
    """A reversed layer on ``x`` is PyTorch's forward layer on ``x`` flipped in time, flipped back."""
    layer = CONFIGS[kind, False](D_INPUT, D_HIDDEN, True, reverse=True).init(device)
    torch_layer = _torch_layer(ref, kind, batch_first=True)
    _copy_into_torch(ref, _param_pairs(kind, layer, torch_layer))
    x_np = rng.standard_normal([BATCH, SEQ, D_INPUT]).astype(np.float32)
    output, final = layer(Tensor.from_data(x_np, device))
    output_t, final_t = torch_layer(ref.tensor(np.ascontiguousarray(x_np[:, ::-1])))
    ref.close(output, output_t.flip(1), 2.0)
    hidden_t = final_t[0] if kind == "lstm" else final_t
    ref.close(final.hidden, hidden_t[0], 2.0)
    # the reversed layer's last step is the sequence's first time step
    ref.close(output.narrow(1, 0, 1).squeeze_dim(1), hidden_t[0], 2.0)


# -- variants PyTorch lacks, against a reference loop written in PyTorch ops ----------------------
def _weights(ref: Any, gate: GateController) -> tuple[Any, Any, Any, Any]:
    """PyTorch copies of a gate's weights and biases (bias 0 when absent)."""

    def tensors(linear: Any) -> tuple[Any, Any]:
        bias = linear.bias.val() if linear.bias is not None else None
        weight = ref.tensor(linear.weight.val(), requires_grad=True)
        bias_t = ref.tensor(bias, requires_grad=True) if bias is not None else ref.torch.zeros(D_HIDDEN)
        return weight, bias_t

    return (*tensors(gate.input_transform), *tensors(gate.hidden_transform))


def test_gru_reset_before_matches_reference(ref, device, rng) -> None:
    """``reset_after=False``: n = tanh(x W_in + b_in + (r * h) W_hn + b_hn)."""
    torch = ref.torch
    layer = GruConfig(D_INPUT, D_HIDDEN, True, reset_after=False).init(device)
    x_np = rng.standard_normal([BATCH, SEQ, D_INPUT]).astype(np.float32)
    h_np = rng.standard_normal([BATCH, D_HIDDEN]).astype(np.float32)
    x, h0 = Tensor.from_data(x_np, device).require_grad(), Tensor.from_data(h_np, device).require_grad()
    output = layer(x, h0)

    z_w = _weights(ref, layer.update_gate)
    r_w = _weights(ref, layer.reset_gate)
    n_w = _weights(ref, layer.new_gate)
    xt, h = ref.tensor(x_np, requires_grad=True), ref.tensor(h_np, requires_grad=True)
    hidden, steps = h, []
    for t in range(SEQ):
        x_t = xt[:, t]
        z = torch.sigmoid(x_t @ z_w[0] + z_w[1] + hidden @ z_w[2] + z_w[3])
        r = torch.sigmoid(x_t @ r_w[0] + r_w[1] + hidden @ r_w[2] + r_w[3])
        n = torch.tanh(x_t @ n_w[0] + n_w[1] + (r * hidden) @ n_w[2] + n_w[3])
        hidden = (1 - z) * n + z * hidden
        steps.append(hidden)
    output_t = torch.stack(steps, 1)
    ref.close(output, output_t, 2.0)
    # and it differs from the reset-after form on the same weights
    assert not np.allclose(_numpy(output), _numpy(GruConfig(D_INPUT, D_HIDDEN, True).init(device)(x, h0)))

    weight_np = rng.standard_normal(output.dims()).astype(np.float32)
    grads = (output * Tensor.from_data(weight_np, device)).sum().backward()
    (output_t * ref.tensor(weight_np)).sum().backward()
    ref.close(x.grad(grads), xt.grad, 2.0)
    ref.close(h0.grad(grads), h.grad, 2.0)
    ref.close(layer.new_gate.hidden_transform.weight.val().grad(grads), n_w[2].grad, 2.0)
    ref.close(layer.reset_gate.hidden_transform.bias.val().grad(grads), r_w[3].grad, 2.0)


def test_lstm_input_forget_and_clip_match_reference(ref, device, rng) -> None:
    """``input_forget``: f = 1 - i and no forget gate; ``clip``: the cell clamped after each step."""
    torch = ref.torch
    clip = 0.3
    layer = LstmConfig(D_INPUT, D_HIDDEN, True, input_forget=True, clip=clip).init(device)
    assert layer.forget_gate is None
    assert layer.num_params() == 3 * (D_INPUT * D_HIDDEN + D_HIDDEN * D_HIDDEN + 2 * D_HIDDEN)
    x_np = 2 * rng.standard_normal([BATCH, SEQ, D_INPUT]).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    output, final = layer(x)

    i_w, o_w, g_w = (_weights(ref, gate) for gate in (layer.input_gate, layer.output_gate, layer.cell_gate))
    xt = ref.tensor(x_np, requires_grad=True)
    cell = hidden = torch.zeros(BATCH, D_HIDDEN)
    steps = []
    for t in range(SEQ):
        x_t = xt[:, t]
        i = torch.sigmoid(x_t @ i_w[0] + i_w[1] + hidden @ i_w[2] + i_w[3])
        o = torch.sigmoid(x_t @ o_w[0] + o_w[1] + hidden @ o_w[2] + o_w[3])
        g = torch.tanh(x_t @ g_w[0] + g_w[1] + hidden @ g_w[2] + g_w[3])
        cell = ((1 - i) * cell + i * g).clamp(-clip, clip)
        hidden = o * torch.tanh(cell)
        steps.append(hidden)
    output_t = torch.stack(steps, 1)
    ref.close(output, output_t, 2.0)
    ref.close(final.cell, cell, 2.0)
    assert np.abs(_numpy(final.cell)).max() == pytest.approx(clip)  # the clip did act

    grads = (output.sum() + final.cell.sum()).backward()
    (output_t.sum() + cell.sum()).backward()
    ref.close(x.grad(grads), xt.grad, 2.0)
    ref.close(layer.input_gate.hidden_transform.weight.val().grad(grads), i_w[2].grad, 2.0)


@pytest.mark.parametrize("kind", ["rnn", "gru"])
def test_hidden_clip_bounds_the_state(device, rng, kind) -> None:
    layer = CONFIGS[kind, False](D_INPUT, D_HIDDEN, True, clip=0.05).init(device)
    unclipped = CONFIGS[kind, False](D_INPUT, D_HIDDEN, True).init(device)
    x = Tensor.from_data(3 * rng.standard_normal([BATCH, SEQ, D_INPUT]).astype(np.float32), device)
    result = layer(x)
    output = result[0] if isinstance(result, tuple) else result
    assert np.abs(_numpy(output)).max() == pytest.approx(0.05)
    result = unclipped(x)
    assert np.abs(_numpy(result[0] if isinstance(result, tuple) else result)).max() > 0.05


# -- initialization -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "config", [RnnConfig(16, 64, True), LstmConfig(16, 64, True), GruConfig(16, 64, True)]
)
def test_default_initialization_is_torch_rule(device, config) -> None:
    """Every weight and bias uniform on ±1/sqrt(d_hidden), as PyTorch's recurrent layers."""
    layer = config.init(device)
    bound = 1 / math.sqrt(64)
    values = np.concatenate([_numpy(param.val()).ravel() for param in layer.params()])
    assert values.size == layer.num_params()
    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.99 * bound
    assert abs(values.mean()) < 0.02 * bound
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.03)
    shapes = {name: param.shape for name, param in layer.named_params()}
    gate = "gate" if isinstance(layer, Rnn) else ("input_gate" if isinstance(layer, Lstm) else "new_gate")
    assert list(shapes[f"{gate}.input_transform.weight"]) == [16, 64]
    assert list(shapes[f"{gate}.hidden_transform.weight"]) == [64, 64]
    assert list(shapes[f"{gate}.hidden_transform.bias"]) == [64]


def test_explicit_initializer_uses_each_transform_fans(device) -> None:
    """An explicit initializer sees Burn's fans: d_input for input transforms, d_hidden for hidden."""
    layer = LstmConfig(4, 100, False, initializer=Initializer.KaimingUniform(gain=1.0)).init(device)
    input_weights = _numpy(layer.cell_gate.input_transform.weight.val())
    hidden_weights = _numpy(layer.cell_gate.hidden_transform.weight.val())
    assert np.abs(input_weights).max() == pytest.approx(math.sqrt(3 / 4), rel=0.05)
    assert np.abs(hidden_weights).max() == pytest.approx(math.sqrt(3 / 100), rel=0.05)
    assert layer.cell_gate.input_transform.bias is None
    constant = BiGruConfig(2, 3, True, initializer=Initializer.Constant(0.25)).init(device)
    assert all(np.all(_numpy(param.val()) == 0.25) for param in constant.params())


def test_parameter_counts_match_torch(ref) -> None:
    device = NdArray().device()
    for kind in ("rnn", "lstm", "gru"):
        for bidirectional in (False, True):
            ours = CONFIGS[kind, bidirectional](D_INPUT, D_HIDDEN, True).init(device).num_params()
            theirs = sum(p.numel() for p in _torch_layer(ref, kind, bidirectional=bidirectional).parameters())
            assert ours == theirs, (kind, bidirectional)


def test_configs_round_trip_through_json() -> None:
    config = BiLstmConfig(3, 4, False, initializer=Initializer.XavierNormal(1.0), batch_first=False, clip=2.0)
    assert BiLstmConfig.from_json(config.to_json()) == config
    config = RnnConfig(3, 4, True, hidden_activation="relu")
    assert RnnConfig.from_json(config.to_json()) == config
    assert GruConfig.from_json(GruConfig(3, 4, True).to_json()).initializer is None


# -- behaviour --------------------------------------------------------------------------------------
def test_valid_copy_evaluates_on_the_inner_backend(device, rng) -> None:
    layer = BiLstmConfig(D_INPUT, D_HIDDEN, True).init(device)
    x_np = rng.standard_normal([BATCH, SEQ, D_INPUT]).astype(np.float32)
    output, state = layer(Tensor.from_data(x_np, device))
    evaluated = layer.valid()
    output_valid, state_valid = evaluated(Tensor.from_data(x_np, NdArray().device()))
    assert not output_valid.device.backend.ad_enabled()
    np.testing.assert_allclose(_numpy(output_valid), _numpy(output), rtol=1e-6)
    np.testing.assert_allclose(_numpy(state_valid.cell), _numpy(state.cell), rtol=1e-6)


def test_bidirectional_halves_are_the_two_directions(device, rng) -> None:
    """The first half of a BiRnn's output is its forward direction run alone; the last step of the
    reverse half is the reverse direction's state after the whole sequence."""
    layer = BiRnnConfig(D_INPUT, D_HIDDEN, True).init(device)
    x = Tensor.from_data(rng.standard_normal([BATCH, SEQ, D_INPUT]).astype(np.float32), device)
    output, state = layer(x)
    forward_output, forward_state = layer.forward_direction(x)
    np.testing.assert_allclose(_numpy(output)[..., :D_HIDDEN], _numpy(forward_output), rtol=1e-6)
    np.testing.assert_allclose(_numpy(state.hidden)[0], _numpy(forward_state.hidden), rtol=1e-6)
    np.testing.assert_allclose(_numpy(state.hidden)[1], _numpy(output)[:, 0, D_HIDDEN:], rtol=1e-6)


def test_lstm_state_helpers(device) -> None:
    state = LstmState.initial([2, 3], device)
    assert state.shape == [2, 3]
    assert np.all(_numpy(state.cell) == 0)
    cell, hidden = state.map_state(lambda t: t + 1).unpack()
    assert np.all(_numpy(cell) == 1)
    assert np.all(_numpy(hidden) == 1)
    stacked = LstmState.stack([state, state.map_state(lambda t: t + 2)], 0)
    assert stacked.shape == [2, 2, 3]
    assert np.all(_numpy(stacked.hidden)[1] == 2)


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_input_errors(device, kind, bidirectional) -> None:
    layer = CONFIGS[kind, bidirectional](D_INPUT, D_HIDDEN, True).init(device)
    with pytest.raises(
        ValueError, match=r"input must have rank 3 \(\[batch, seq, d_input\]\), got shape \[2, 3\]"
    ):
        layer(Tensor.zeros([2, 3], device))
    with pytest.raises(ValueError, match=r"input has 4 features .* expected d_input = 3"):
        layer(Tensor.zeros([2, 5, 4], device))
    with pytest.raises(ValueError, match="empty sequence"):
        layer(Tensor.zeros([2, 0, 3], device))
    with pytest.raises(TypeError, match="input must be a Tensor"):
        layer(np.zeros([2, 5, 3], dtype=np.float32))


def test_state_shape_errors(device) -> None:
    x = Tensor.zeros([2, 4, D_INPUT], device)
    wrong = Tensor.zeros([3, D_HIDDEN], device)
    right = Tensor.zeros([2, D_HIDDEN], device)
    with pytest.raises(ValueError, match=r"Rnn.forward: state.hidden has shape \[3, 5\], expected \[2, 5\]"):
        RnnConfig(D_INPUT, D_HIDDEN, True).init(device)(x, RnnState(wrong))
    with pytest.raises(ValueError, match=r"Lstm.forward: state.cell has shape \[2, 5, 1\]"):
        LstmConfig(D_INPUT, D_HIDDEN, True).init(device)(
            x, LstmState(right.unsqueeze_dim(2), right.unsqueeze_dim(2))
        )
    with pytest.raises(ValueError, match=r"Gru.forward: state has shape \[3, 5\]"):
        GruConfig(D_INPUT, D_HIDDEN, True).init(device)(x, wrong)
    with pytest.raises(ValueError, match=r"BiGru.forward: state has shape \[2, 5\], expected \[2, 2, 5\]"):
        BiGruConfig(D_INPUT, D_HIDDEN, True).init(device)(x, right)
    with pytest.raises(ValueError, match=r"BiLstm.forward: state.cell has shape .*2 directions"):
        BiLstmConfig(D_INPUT, D_HIDDEN, True).init(device)(x, LstmState(right, right))
    with pytest.raises(ValueError, match="LstmState: cell has shape"):
        LstmState(right, wrong)


def test_config_errors(device) -> None:
    with pytest.raises(ValueError, match="Lstm: d_input and d_hidden must be positive, got 3 and 0"):
        LstmConfig(3, 0, True).init(device)
    with pytest.raises(ValueError, match="Rnn: hidden_activation must be 'tanh' or 'relu', got 'gelu'"):
        RnnConfig(3, 4, True, hidden_activation="gelu").init(device)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Gru: clip must be positive \(or None\), got -1.0"):
        GruConfig(3, 4, True, clip=-1.0).init(device)
