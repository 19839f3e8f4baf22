"""MultiHeadAttention through the backend's attention op: when it is taken (and when the composed path
is), its results against PyTorch and against the composed path, the zeros of a fully masked query, the
lazily computed weights and their gradients, on ``NdArray()`` and ``Autodiff(NdArray())``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import Device, Tensor
from burn_backend import module as M
from burn_ndarray import NdArray
from burn_nn import (
    MhaCache,
    MhaInput,
    MhaOutput,
    MultiHeadAttention,
    MultiHeadAttentionConfig,
    generate_autoregressive_mask,
)

D_MODEL, N_HEADS, BATCH, SEQ = 8, 2, 2, 5
D_K = D_MODEL // N_HEADS


@pytest.fixture(params=["ndarray", "autodiff"])
def any_device(request: pytest.FixtureRequest) -> Device:
    backend = NdArray() if request.param == "ndarray" else Autodiff(NdArray())
    device = backend.device()
    device.seed(0)
    return device


@pytest.fixture
def op_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the layer's calls of ``burn_backend.module.attention``."""
    calls: list[int] = []
    attention = M.attention

    def counted(*args: Any, **kwargs: Any) -> Tensor:
        calls.append(1)
        return attention(*args, **kwargs)

    monkeypatch.setattr(M, "attention", counted)
    return calls


def _torch_layer(ref: Any, mha: MultiHeadAttention) -> Any:
    """torch.nn.MultiheadAttention holding ``mha``'s weights (q/k/v packed as [3d, d], [out, in])."""
    theirs = ref.torch.nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True)
    with ref.torch.no_grad():
        layers = (mha.query, mha.key, mha.value)
        theirs.in_proj_weight.copy_(ref.torch.cat([ref.tensor(layer.weight.val()).T for layer in layers]))
        theirs.in_proj_bias.copy_(ref.torch.cat([ref.tensor(layer.bias.val()) for layer in layers]))
        theirs.out_proj.weight.copy_(ref.tensor(mha.output.weight.val()).T)
        theirs.out_proj.bias.copy_(ref.tensor(mha.output.bias.val()))
    return theirs


def _masks(kind: str, rng: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A padding mask [batch, seq] and an attention mask [batch, seq, seq] for ``kind``, each query
    keeping at least one key."""
    pad = np.zeros([BATCH, SEQ], dtype=bool)
    pad[0, -2:] = True
    pad[1, -1] = True
    causal = np.broadcast_to(np.triu(np.ones([SEQ, SEQ], dtype=bool), 1), [BATCH, SEQ, SEQ])
    random = rng.random([BATCH, SEQ, SEQ]) < 0.4
    random[:, :, 0] = False
    return {
        "none": (None, None),
        "pad": (pad, None),
        "attn": (None, random),
        "causal": (None, causal),
        "both": (pad, causal | random),
    }[kind]


def _input(x: Tensor, pad: np.ndarray | None, attn: np.ndarray | None, device: Device) -> MhaInput:
    input = MhaInput.self_attn(x)
    if pad is not None:
        input = input.mask_pad(Tensor.from_data(pad, device))
    if attn is not None:
        input = input.mask_attn(Tensor.from_data(attn, device))
    return input


@pytest.mark.parametrize("masks", ["none", "pad", "attn", "causal", "both"])
def test_fused_path_matches_torch_with_every_gradient(masks, any_device, op_calls, ref, rng) -> None:
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, dropout=0.0).init(any_device)
    theirs = _torch_layer(ref, mha)
    x_np = rng.standard_normal([BATCH, SEQ, D_MODEL]).astype(np.float32)
    training = any_device.backend.ad_enabled()
    x = Tensor.from_data(x_np, any_device)
    x = x.require_grad() if training else x
    tx = ref.tensor(x_np, requires_grad=True)
    pad, attn = _masks(masks, rng)
    if masks == "causal":
        causal = generate_autoregressive_mask(BATCH, SEQ, any_device)
        input = MhaInput.self_attn(x).mask_attn(causal)
    else:
        input = _input(x, pad, attn, any_device)
    kwargs: dict[str, Any] = {}
    if pad is not None:
        kwargs["key_padding_mask"] = ref.torch.tensor(pad)
    if attn is not None:
        kwargs["attn_mask"] = ref.torch.tensor(attn).repeat_interleave(N_HEADS, dim=0)

    out = mha(input)
    assert op_calls == [1]
    context, weights = theirs(tx, tx, tx, need_weights=True, average_attn_weights=False, **kwargs)
    ref.close(out.context, context, scale=2)
    ref.close(out.weights, weights, scale=2)
    if not training:
        return
    grads = ref.backward(out.context, context, rng)
    ref.close(x.grad(grads), tx.grad, scale=2)
    for index, layer in enumerate((mha.query, mha.key, mha.value)):
        rows = slice(index * D_MODEL, (index + 1) * D_MODEL)
        ref.close(layer.weight.val().grad(grads), theirs.in_proj_weight.grad[rows].T, scale=2)
        ref.close(layer.bias.val().grad(grads), theirs.in_proj_bias.grad[rows], scale=2)
    ref.close(mha.output.weight.val().grad(grads), theirs.out_proj.weight.grad.T, scale=2)
    ref.close(mha.output.bias.val().grad(grads), theirs.out_proj.bias.grad, scale=2)


def test_fused_path_equals_the_composed_path(any_device, monkeypatch, rng) -> None:
    """Where no query is fully masked, the op's context and weights are the composed ops' within f32
    rounding, and so are the gradients."""
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, dropout=0.0).init(any_device)
    pad, attn = _masks("both", rng)
    x = Tensor.from_data(rng.standard_normal([BATCH, SEQ, D_MODEL]).astype(np.float32), any_device)
    upstream = Tensor.from_data(rng.standard_normal([BATCH, SEQ, D_MODEL]).astype(np.float32), any_device)

    def run() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        out = mha(_input(x, pad, attn, any_device))
        values = out.context.to_data().to_numpy(), out.weights.to_data().to_numpy()
        if not any_device.backend.ad_enabled():
            return (*values, [])
        grads = (out.context * upstream).sum().backward()
        return (*values, [p.val().grad(grads).to_data().to_numpy() for _, p in mha.named_params()])

    fused = run()
    monkeypatch.setattr(MultiHeadAttention, "_attend", MultiHeadAttention._attend_composed)
    composed = run()
    np.testing.assert_allclose(fused[0], composed[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused[1], composed[1], rtol=1e-5, atol=1e-7)
    for ours, theirs in zip(fused[2], composed[2], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def _zero_row_reference(ref: Any, mha: MultiHeadAttention, x_np: np.ndarray, mask: np.ndarray) -> Any:
    """The layer in PyTorch with a fully masked query given zero weights (the op's convention); returns
    the context, the weights and the input leaf."""
    torch = ref.torch
    x = ref.tensor(x_np, requires_grad=True)

    def project(layer: Any, t: Any) -> Any:
        return t @ ref.tensor(layer.weight.val()) + ref.tensor(layer.bias.val())

    def heads(t: Any) -> Any:
        return t.reshape(BATCH, SEQ, N_HEADS, D_K).transpose(1, 2)

    q, k, v = (heads(project(layer, x)) for layer in (mha.query, mha.key, mha.value))
    hidden = torch.tensor(mask)[:, None]
    scores = (q @ k.transpose(2, 3) / np.sqrt(D_K)).masked_fill(hidden, -1.0e30)
    weights = torch.softmax(scores, -1).masked_fill(hidden, 0.0)
    context = (weights @ v).transpose(1, 2).reshape(BATCH, SEQ, D_MODEL)
    return project(mha.output, context), weights, x


def test_fully_masked_query_gets_zeros(any_device, op_calls, ref, rng) -> None:
    """The op gives a query whose every key is masked zero weights and a zero context (the output is
    then the output projection's bias), where the composed path's ``min_float`` gave a uniform average
    and PyTorch gives NaN; its gradients stay finite and match the zero-row reference."""
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, dropout=0.0).init(any_device)
    x_np = rng.standard_normal([BATCH, SEQ, D_MODEL]).astype(np.float32)
    pad, attn = _masks("both", rng)
    attn = attn.copy()
    attn[1, 2, :] = True  # batch 1, query 2: every key masked
    training = any_device.backend.ad_enabled()
    x = Tensor.from_data(x_np, any_device)
    x = x.require_grad() if training else x
    out = mha(_input(x, pad, attn, any_device))
    assert op_calls == [1]

    full = pad[:, None, :] | attn
    expected, weights, tx = _zero_row_reference(ref, mha, x_np, full)
    ref.close(out.context, expected, scale=2)
    ref.close(out.weights, weights, scale=2)
    context = out.context.to_data().to_numpy()
    bias = mha.output.bias.val().to_data().to_numpy()
    np.testing.assert_allclose(context[1, 2], bias, rtol=1e-6)
    assert np.all(out.weights.to_data().to_numpy()[1, :, 2] == 0.0)
    assert not np.allclose(context[1, 1], bias)
    if training:
        grads = ref.backward(out.context, expected, rng)
        ref.close(x.grad(grads), tx.grad, scale=2)
        assert np.all(np.isfinite(mha.key.weight.val().grad(grads).to_data().to_numpy()))


def test_weights_are_lazy_and_differentiable(device, op_calls, ref, rng) -> None:
    """The fused path keeps no weights until read; read, they are computed once, and gradients flow
    from them to the input and to the query and key projections (not to the value's)."""
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, dropout=0.0).init(device)
    theirs = _torch_layer(ref, mha)
    x_np = rng.standard_normal([BATCH, SEQ, D_MODEL]).astype(np.float32)
    x = Tensor.from_data(x_np, device).require_grad()
    tx = ref.tensor(x_np, requires_grad=True)
    causal = generate_autoregressive_mask(BATCH, SEQ, device)
    out = mha(MhaInput.self_attn(x).mask_attn(causal))
    assert out._weights is None
    assert "weights=<not computed>" in repr(out)
    weights = out.weights
    assert out.weights is weights
    assert out._compute is None
    assert op_calls == [1]

    _, expected = theirs(
        tx,
        tx,
        tx,
        attn_mask=ref.torch.triu(ref.torch.ones(SEQ, SEQ, dtype=bool), 1),
        need_weights=True,
        average_attn_weights=False,
    )
    ref.close(weights, expected, scale=2)
    grads = ref.backward(weights, expected, rng)
    ref.close(x.grad(grads), tx.grad, scale=4)
    for index, layer in enumerate((mha.query, mha.key)):
        rows = slice(index * D_MODEL, (index + 1) * D_MODEL)
        ref.close(layer.weight.val().grad(grads), theirs.in_proj_weight.grad[rows].T, scale=4)
    assert mha.value.weight.val().grad(grads) is None


def test_output_can_still_be_built_from_weights_and_context(inner_device) -> None:
    weights, context = Tensor.ones([1, 2, 3, 3], inner_device), Tensor.zeros([1, 3, 4], inner_device)
    output = MhaOutput(weights, context)
    assert output.weights is weights
    assert output.context is context
    assert repr(output).startswith("MhaOutput(weights=")


def test_dropout_while_training_takes_the_composed_path(device, op_calls) -> None:
    """With dropout in effect the op is not called: the weights hold the dropped zeros and the context
    is those weights applied to the projected values."""
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, dropout=0.5).init(device)
    x = Tensor.random([4, SEQ, D_MODEL], device=device)
    out = mha(MhaInput.self_attn(x))
    assert op_calls == []
    weights = out.weights.to_data().to_numpy()
    assert 0.3 < (weights == 0.0).mean() < 0.7
    value = mha.value(x).reshape([4, SEQ, N_HEADS, D_K]).swap_dims(1, 2).to_data().to_numpy()
    merged = np.swapaxes(weights @ value, 1, 2).reshape(4, SEQ, D_MODEL)
    output_weight = mha.output.weight.val().to_data().to_numpy()
    expected = merged @ output_weight + mha.output.bias.val().to_data().to_numpy()
    np.testing.assert_allclose(out.context.to_data().to_numpy(), expected, rtol=1e-5, atol=1e-6)
    # evaluating (a plain backend) the same layer takes the op
    mha.valid()(MhaInput.self_attn(x.inner()))
    assert op_calls == [1]


def test_quiet_softmax_takes_the_composed_path(inner_device, op_calls) -> None:
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, dropout=0.0, quiet_softmax=True).init(inner_device)
    out = mha(MhaInput.self_attn(Tensor.random([BATCH, SEQ, D_MODEL], device=inner_device)))
    assert op_calls == []
    assert np.all(out.weights.to_data().to_numpy().sum(-1) < 1.0)


def test_forward_cache_takes_the_op(inner_device, op_calls) -> None:
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS).init(inner_device)
    tensor = Tensor.random([BATCH, SEQ, D_MODEL], device=inner_device)
    causal = generate_autoregressive_mask(BATCH, SEQ, inner_device)
    expected = mha(MhaInput.self_attn(tensor).mask_attn(causal)).context.to_data().to_numpy()
    cache = MhaCache.autoregressive()
    for i in range(1, SEQ + 1):
        step = mha.forward_cache(MhaInput.self_attn(tensor.narrow(1, 0, i)), cache)
    assert len(op_calls) == 1 + SEQ
    np.testing.assert_allclose(
        step.context.to_data().to_numpy()[:, -1], expected[:, -1], rtol=1e-5, atol=1e-6
    )
