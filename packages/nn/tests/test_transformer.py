"""Transformers against PyTorch on the same weights: PositionWiseFeedForward against Linear-activation-
Linear, encoder layers against torch.nn.TransformerEncoderLayer and decoder layers against
torch.nn.TransformerDecoderLayer (batch_first, dropout 0, gelu/relu, pre- and post-norm), outputs and
gradients; the autoregressive caches against the causal forward (Burn's tests); configs and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import (
    ActivationConfig,
    MultiHeadAttention,
    Param,
    PositionWiseFeedForwardConfig,
    TransformerDecoder,
    TransformerDecoderConfig,
    TransformerDecoderInput,
    TransformerDecoderLayer,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    TransformerEncoderLayer,
    generate_autoregressive_mask,
)

D_MODEL, D_FF, N_HEADS, BATCH, SEQ, MEMORY = 8, 16, 2, 2, 4, 5


def _copy_linear(ref, ours, theirs) -> None:
    theirs.weight.copy_(ref.tensor(ours.weight.val()).T)
    theirs.bias.copy_(ref.tensor(ours.bias.val()))


def _copy_mha(ref, ours: MultiHeadAttention, theirs) -> None:
    layers = (ours.query, ours.key, ours.value)
    theirs.in_proj_weight.copy_(ref.torch.cat([ref.tensor(layer.weight.val()).T for layer in layers]))
    theirs.in_proj_bias.copy_(ref.torch.cat([ref.tensor(layer.bias.val()) for layer in layers]))
    _copy_linear(ref, ours.output, theirs.out_proj)


def _randomize_norms(layer, device, rng) -> None:
    """Give the layer norms random scales and shifts, so that a swapped norm cannot go unnoticed."""
    for name in ("norm_1", "norm_2", "norm_3"):
        norm = getattr(layer, name, None)
        if norm is not None:
            norm.gamma = Param.initialized(
                Tensor.from_data(rng.uniform(0.5, 1.5, D_MODEL).astype(np.float32), device)
            )
            norm.beta = Param.initialized(
                Tensor.from_data(rng.normal(0, 0.5, D_MODEL).astype(np.float32), device)
            )


def _copy_norm(ref, ours, theirs) -> None:
    theirs.weight.copy_(ref.tensor(ours.gamma.val()))
    theirs.bias.copy_(ref.tensor(ours.beta.val()))


#: our activation config for each torch activation name the tests use
ACTIVATIONS = {"gelu": ActivationConfig.Gelu(), "relu": ActivationConfig.Relu()}


def _torch_settings(ref, layer, activation: str) -> dict:
    """The arguments of torch's transformer layers matching ``layer`` (dropout off, its dtype)."""
    return {
        "d_model": D_MODEL,
        "nhead": N_HEADS,
        "dim_feedforward": D_FF,
        "dropout": 0.0,
        "activation": activation,
        "batch_first": True,
        "norm_first": layer.norm_first,
        "dtype": ref.tensor(layer.norm_1.gamma.val()).dtype,
    }


def _torch_encoder_layer(ref, layer: TransformerEncoderLayer, activation: str):
    theirs = ref.torch.nn.TransformerEncoderLayer(**_torch_settings(ref, layer, activation))
    # Burn names the attention block's norm norm_2 in pre-norm and norm_1 in post-norm
    attention_norm, ffn_norm = (
        (layer.norm_2, layer.norm_1) if layer.norm_first else (layer.norm_1, layer.norm_2)
    )
    with ref.torch.no_grad():
        _copy_mha(ref, layer.mha, theirs.self_attn)
        _copy_linear(ref, layer.pwff.linear_inner, theirs.linear1)
        _copy_linear(ref, layer.pwff.linear_outer, theirs.linear2)
        _copy_norm(ref, attention_norm, theirs.norm1)
        _copy_norm(ref, ffn_norm, theirs.norm2)
    return theirs


def _torch_decoder_layer(ref, layer: TransformerDecoderLayer, activation: str):
    theirs = ref.torch.nn.TransformerDecoderLayer(**_torch_settings(ref, layer, activation))
    if layer.norm_first:
        norms = (layer.norm_3, layer.norm_1, layer.norm_2)
    else:
        norms = (layer.norm_1, layer.norm_2, layer.norm_3)
    with ref.torch.no_grad():
        _copy_mha(ref, layer.self_attn, theirs.self_attn)
        _copy_mha(ref, layer.cross_attn, theirs.multihead_attn)
        _copy_linear(ref, layer.pwff.linear_inner, theirs.linear1)
        _copy_linear(ref, layer.pwff.linear_outer, theirs.linear2)
        for ours, their_norm in zip(norms, (theirs.norm1, theirs.norm2, theirs.norm3)):
            _copy_norm(ref, ours, their_norm)
    return theirs


_LAYERS = {
    "encoder": (TransformerEncoderConfig, TransformerEncoderLayer, _torch_encoder_layer),
    "decoder": (TransformerDecoderConfig, TransformerDecoderLayer, _torch_decoder_layer),
}


def _layer_and_torch(kind: str, norm_first, activation, device, ref, rng):
    """One of our ``kind`` of layers with random norms, and the torch layer with its weights."""
    config_type, layer_type, to_torch = _LAYERS[kind]
    config = config_type(
        D_MODEL, D_FF, N_HEADS, 1, dropout=0.0, norm_first=norm_first, activation=ACTIVATIONS[activation]
    )
    layer = layer_type(config, device)
    _randomize_norms(layer, device, rng)
    return layer, to_torch(ref, layer, activation)


def _inputs(shape, device, ref, rng):
    """The same random input as our graph leaf and as torch's."""
    return ref.inputs(rng.standard_normal(shape).astype(np.float32), device)


def _check_param_grads(ref, ours_and_theirs, grads, scale: float) -> None:
    for ours, theirs in ours_and_theirs:
        ref.close(ours.val().grad(grads), theirs, scale=scale)


def _linear_pairs(ours, theirs):
    return [(ours.weight, theirs.weight.grad.T), (ours.bias, theirs.bias.grad)]


def _mha_pairs(ours: MultiHeadAttention, theirs):
    d = ours.d_model
    pairs = []
    for index, layer in enumerate((ours.query, ours.key, ours.value)):
        rows = slice(index * d, (index + 1) * d)
        pairs += [
            (layer.weight, theirs.in_proj_weight.grad[rows].T),
            (layer.bias, theirs.in_proj_bias.grad[rows]),
        ]
    return pairs + _linear_pairs(ours.output, theirs.out_proj)


def _norm_pairs(ours, theirs):
    return [(ours.gamma, theirs.weight.grad), (ours.beta, theirs.bias.grad)]


# -- position-wise feed-forward ---------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_position_wise_feed_forward_matches_torch(activation, device, ref, rng) -> None:
    config = PositionWiseFeedForwardConfig(D_MODEL, D_FF, dropout=0.0, activation=ACTIVATIONS[activation])
    ffn = config.init(device)
    torch = ref.torch
    inner, outer = torch.nn.Linear(D_MODEL, D_FF), torch.nn.Linear(D_FF, D_MODEL)
    with torch.no_grad():
        _copy_linear(ref, ffn.linear_inner, inner)
        _copy_linear(ref, ffn.linear_outer, outer)
    theirs = torch.nn.Sequential(inner, torch.nn.GELU() if activation == "gelu" else torch.nn.ReLU(), outer)
    x, tx = _inputs([BATCH, SEQ, D_MODEL], device, ref, rng)
    out, expected = ffn(x), theirs(tx)
    ref.close(out, expected, scale=2)
    grads = ref.backward(out, expected, rng)
    ref.close(x.grad(grads), tx.grad, scale=2)
    _check_param_grads(
        ref, _linear_pairs(ffn.linear_inner, inner) + _linear_pairs(ffn.linear_outer, outer), grads, 2
    )


def test_position_wise_feed_forward_defaults_and_errors(device) -> None:
    config = PositionWiseFeedForwardConfig(4, 8)
    assert (config.dropout, config.activation) == (0.1, ActivationConfig.Gelu())
    ffn = config.init(device)
    assert ffn.num_params() == 4 * 8 + 8 + 8 * 4 + 4
    bound = 1 / math.sqrt(4)
    assert np.abs(ffn.linear_inner.weight.val().to_data().to_numpy()).max() <= bound
    message = r"PositionWiseFeedForwardConfig: activation must be an ActivationConfig, got 'swish'"
    with pytest.raises(TypeError, match=message):
        PositionWiseFeedForwardConfig(4, 8, activation="swish").init(device)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="d_model and d_ff must be positive, got 4 and 0"):
        PositionWiseFeedForwardConfig(4, 0).init(device)


# -- encoder ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_encoder_layer_matches_torch_with_gradients(norm_first, activation, device, ref, rng) -> None:
    layer, theirs = _layer_and_torch("encoder", norm_first, activation, device, ref, rng)
    x, tx = _inputs([BATCH, SEQ, D_MODEL], device, ref, rng)
    pad = np.zeros([BATCH, SEQ], dtype=bool)
    pad[1, -1] = True
    out = layer(x, mask_pad=Tensor.from_data(pad, device))
    expected = theirs(tx, src_key_padding_mask=ref.torch.tensor(pad))
    ref.close(out, expected, scale=2)

    grads = ref.backward(out, expected, rng)
    ref.close(x.grad(grads), tx.grad, scale=2)
    attention_norm, ffn_norm = (layer.norm_2, layer.norm_1) if norm_first else (layer.norm_1, layer.norm_2)
    pairs = (
        _mha_pairs(layer.mha, theirs.self_attn)
        + _linear_pairs(layer.pwff.linear_inner, theirs.linear1)
        + _linear_pairs(layer.pwff.linear_outer, theirs.linear2)
        + _norm_pairs(attention_norm, theirs.norm1)
        + _norm_pairs(ffn_norm, theirs.norm2)
    )
    _check_param_grads(ref, pairs, grads, 2)


def test_encoder_stacks_layers_like_torch_with_a_causal_mask(device, ref, rng) -> None:
    config = TransformerEncoderConfig(D_MODEL, D_FF, N_HEADS, 2, dropout=0.0)
    encoder = config.init(device)
    assert len(encoder.layers) == 2
    theirs = [_torch_encoder_layer(ref, layer, "gelu") for layer in encoder.layers]
    x, tx = _inputs([BATCH, SEQ, D_MODEL], device, ref, rng)
    causal = generate_autoregressive_mask(BATCH, SEQ, device)
    out = encoder(TransformerEncoderInput(x).mask_attn(causal))
    expected = tx
    for layer in theirs:
        expected = layer(expected, src_mask=ref.torch.triu(ref.torch.ones(SEQ, SEQ, dtype=bool), 1))
    ref.close(out, expected, scale=2)
    grads = out.sum().backward()
    expected.sum().backward()
    ref.close(x.grad(grads), tx.grad, scale=2)
    _check_param_grads(ref, _mha_pairs(encoder.layers[0].mha, theirs[0].self_attn), grads, 2)


def test_encoder_layer_count_and_params_match_torch(device, ref) -> None:
    encoder = TransformerEncoderConfig(D_MODEL, D_FF, N_HEADS, 3).init(device)
    theirs = ref.torch.nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, batch_first=True)
    assert encoder.num_params() == 3 * sum(p.numel() for p in theirs.parameters())
    assert (encoder.d_model, encoder.d_ff, encoder.n_heads, encoder.n_layers) == (D_MODEL, D_FF, N_HEADS, 3)
    assert (encoder.dropout, encoder.norm_first, encoder.quiet_softmax) == (0.1, False, False)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_autoregressive_inference_matches_the_causal_forward(norm_first, inner_device) -> None:
    """Burn's test: token-by-token inference with the cache equals the causal-masked forward."""
    config = TransformerEncoderConfig(12, 24, 2, 3, norm_first=norm_first)
    encoder = config.init(inner_device)
    batch, seq = 3, 4
    tensor = Tensor.random([batch, seq, 12], device=inner_device)
    causal = generate_autoregressive_mask(batch, seq, inner_device)
    expected = encoder(TransformerEncoderInput(tensor).mask_attn(causal)).to_data().to_numpy()

    cache = encoder.new_autoregressive_cache()
    steps = [
        encoder.forward_autoregressive_inference(TransformerEncoderInput(tensor.narrow(1, 0, i)), cache)
        .narrow(1, i - 1, 1)
        .to_data()
        .to_numpy()
        for i in range(1, seq + 1)
    ]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), expected, rtol=1e-4, atol=1e-5)


def test_encoder_stage_dropouts_and_errors(device) -> None:
    config = TransformerEncoderConfig(8, 16, 2, 1, dropout=0.2, attention_dropout=0.0, ffn_dropout=0.3)
    layer = config.init(device).layers[0]
    assert (layer.mha.dropout.prob, layer.pwff.dropout.prob, layer.dropout.prob) == (0.0, 0.3, 0.2)
    assert layer.norm_1.epsilon == 1e-5
    assert (
        TransformerEncoderConfig(8, 16, 2, 1, layer_norm_eps=1e-6).init(device).layers[0].norm_2.epsilon
        == 1e-6
    )
    assert TransformerEncoderConfig.from_json(config.to_json()) == config
    with pytest.raises(ValueError, match=r"n_heads \(3\) must divide d_model \(8\)"):
        TransformerEncoderConfig(8, 16, 3, 1).init(device)
    with pytest.raises(TypeError, match="TransformerEncoderConfig: activation must be an ActivationConfig"):
        TransformerEncoderConfig(8, 16, 2, 1, activation="elu").init(device)  # type: ignore[arg-type]
    relu = TransformerEncoderConfig(8, 16, 2, 1, activation=ActivationConfig.Relu())
    assert TransformerEncoderConfig.from_json(relu.to_json()) == relu
    with pytest.raises(
        ValueError, match="n_layers non-negative, got d_model=8, d_ff=16, n_heads=2, n_layers=-1"
    ):
        TransformerEncoderConfig(8, 16, 2, -1).init(device)
    encoder = TransformerEncoderConfig(8, 16, 2, 2).init(device)
    other = TransformerEncoderConfig(8, 16, 2, 1).init(device).new_autoregressive_cache()
    with pytest.raises(ValueError, match="the cache has 1 layers, the encoder 2"):
        encoder.forward_autoregressive_inference(
            TransformerEncoderInput(Tensor.zeros([1, 1, 8], device)), other
        )


# -- decoder ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_decoder_layer_matches_torch_with_gradients(norm_first, activation, device, ref, rng) -> None:
    layer, theirs = _layer_and_torch("decoder", norm_first, activation, device, ref, rng)
    target, t_target = _inputs([BATCH, SEQ, D_MODEL], device, ref, rng)
    memory, t_memory = _inputs([BATCH, MEMORY, D_MODEL], device, ref, rng)
    memory_pad = np.zeros([BATCH, MEMORY], dtype=bool)
    memory_pad[0, -2:] = True

    input = (
        TransformerDecoderInput(target, memory)
        .target_mask_attn(generate_autoregressive_mask(BATCH, SEQ, device))
        .memory_mask_pad(Tensor.from_data(memory_pad, device))
    )
    out = layer(input).target
    expected = theirs(
        t_target,
        t_memory,
        tgt_mask=ref.torch.triu(ref.torch.ones(SEQ, SEQ, dtype=bool), 1),
        memory_key_padding_mask=ref.torch.tensor(memory_pad),
    )
    ref.close(out, expected, scale=2)

    grads = ref.backward(out, expected, rng)
    ref.close(target.grad(grads), t_target.grad, scale=2)
    ref.close(memory.grad(grads), t_memory.grad, scale=2)
    norms = (
        (layer.norm_3, layer.norm_1, layer.norm_2)
        if norm_first
        else (layer.norm_1, layer.norm_2, layer.norm_3)
    )
    pairs = (
        _mha_pairs(layer.self_attn, theirs.self_attn)
        + _mha_pairs(layer.cross_attn, theirs.multihead_attn)
        + _linear_pairs(layer.pwff.linear_inner, theirs.linear1)
        + _linear_pairs(layer.pwff.linear_outer, theirs.linear2)
    )
    for ours, their_norm in zip(norms, (theirs.norm1, theirs.norm2, theirs.norm3)):
        pairs += _norm_pairs(ours, their_norm)
    _check_param_grads(ref, pairs, grads, 2)


def test_decoder_in_float64_matches_torch(ref, rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    decoder: TransformerDecoder = TransformerDecoderConfig(D_MODEL, D_FF, N_HEADS, 1, dropout=0.0).init(
        device
    )
    layer = decoder.layers[0]
    assert layer.self_attn.query.weight.dtype == DType.F64
    theirs = _torch_decoder_layer(ref, layer, "gelu")
    target_np = rng.standard_normal([BATCH, SEQ, D_MODEL])
    memory_np = rng.standard_normal([BATCH, MEMORY, D_MODEL])
    out = decoder(
        TransformerDecoderInput(Tensor.from_data(target_np, device), Tensor.from_data(memory_np, device))
    )
    assert out.dtype == DType.F64
    ref.close(out, theirs(ref.tensor(target_np), ref.tensor(memory_np)), scale=2)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_autoregressive_inference_matches_the_causal_forward(norm_first, inner_device) -> None:
    """Burn's test: decoding with the cache (and a causal mask per step) equals the full causal forward."""
    config = TransformerDecoderConfig(12, 24, 2, 3, norm_first=norm_first)
    decoder = config.init(inner_device)
    batch, seq, memory_length = 3, 4, 5
    target = Tensor.random([batch, seq, 12], device=inner_device)
    memory = Tensor.random([batch, memory_length, 12], device=inner_device)
    causal = generate_autoregressive_mask(batch, seq, inner_device)
    expected = decoder(TransformerDecoderInput(target, memory).target_mask_attn(causal)).to_data().to_numpy()

    cache = decoder.new_autoregressive_cache()
    steps = []
    for i in range(1, seq + 1):
        input = TransformerDecoderInput(target.narrow(1, 0, i), memory).target_mask_attn(
            generate_autoregressive_mask(batch, i, inner_device)
        )
        out = decoder.forward_autoregressive_inference(input, cache)
        steps.append(out.narrow(1, i - 1, 1).to_data().to_numpy())
    np.testing.assert_allclose(np.concatenate(steps, axis=1), expected, rtol=1e-4, atol=1e-5)


def test_decoder_input_builders_and_params(device, ref) -> None:
    target, memory = Tensor.zeros([1, 2, 8], device), Tensor.zeros([1, 3, 8], device)
    mask = Tensor.from_data(np.zeros([1, 3], dtype=bool), device)
    input = TransformerDecoderInput(target, memory).memory_mask_pad(mask)
    assert input.memory_padding_mask is mask
    assert input.target_padding_mask is None
    assert input.with_target(memory).target is memory
    assert input.with_target(memory).memory_padding_mask is mask
    decoder = TransformerDecoderConfig(8, 16, 2, 2).init(device)
    theirs = ref.torch.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
    assert decoder.num_params() == 2 * sum(p.numel() for p in theirs.parameters())
    with pytest.raises(ValueError, match="the cache has 2 layers, the decoder 1"):
        TransformerDecoderConfig(8, 16, 2, 1).init(device).forward_autoregressive_inference(
            input, decoder.new_autoregressive_cache()
        )
