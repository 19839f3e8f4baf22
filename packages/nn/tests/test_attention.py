"""MultiHeadAttention against torch.nn.MultiheadAttention (batch_first) on the same weights: outputs,
attention weights and gradients, with and without masks; the autoregressive cache against the causal
forward (Burn's test); masks; initialization; errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import DType, Tensor
from burn_ndarray import NdArray
from burn_nn import (
    MhaCache,
    MhaInput,
    MultiHeadAttention,
    MultiHeadAttentionConfig,
    SeqLengthOption,
    generate_autoregressive_mask,
    generate_padding_mask,
)

D_MODEL, N_HEADS, BATCH, SEQ_Q, SEQ_K = 8, 2, 2, 3, 5


def _torch_mha(ref, mha: MultiHeadAttention):
    """torch.nn.MultiheadAttention holding ``mha``'s weights (torch packs q/k/v as [3d, d], [out, in])."""
    d = mha.d_model
    theirs = ref.torch.nn.MultiheadAttention(d, mha.n_heads, batch_first=True, dtype=ref.torch.float64)
    theirs = theirs.to(ref.tensor(mha.query.weight.val()).dtype)
    with ref.torch.no_grad():
        weights = [ref.tensor(layer.weight.val()).T for layer in (mha.query, mha.key, mha.value)]
        theirs.in_proj_weight.copy_(ref.torch.cat(weights))
        theirs.in_proj_bias.copy_(
            ref.torch.cat([ref.tensor(layer.bias.val()) for layer in (mha.query, mha.key, mha.value)])
        )
        theirs.out_proj.weight.copy_(ref.tensor(mha.output.weight.val()).T)
        theirs.out_proj.bias.copy_(ref.tensor(mha.output.bias.val()))
    return theirs


def _masks(rng, device):
    """A padding mask [batch, seq_k] and an attention mask [batch, seq_q, seq_k] leaving every query at
    least one key (a fully masked row differs by design: Burn fills -1e4, torch -inf)."""
    pad = np.zeros([BATCH, SEQ_K], dtype=bool)
    pad[0, -2:] = True
    pad[1, -1] = True
    attn = rng.random([BATCH, SEQ_Q, SEQ_K]) < 0.4
    attn[:, :, 0] = False
    return pad, attn


@pytest.mark.parametrize("masks", ["none", "pad", "attn", "both"])
def test_mha_matches_torch_with_gradients(masks, device, ref, rng) -> None:
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, dropout=0.0).init(device)
    theirs = _torch_mha(ref, mha)
    q_np = rng.standard_normal([BATCH, SEQ_Q, D_MODEL]).astype(np.float32)
    k_np = rng.standard_normal([BATCH, SEQ_K, D_MODEL]).astype(np.float32)
    v_np = rng.standard_normal([BATCH, SEQ_K, D_MODEL]).astype(np.float32)
    q, k, v = (Tensor.from_data(a, device).require_grad() for a in (q_np, k_np, v_np))
    tq, tk, tv = (ref.tensor(a, requires_grad=True) for a in (q_np, k_np, v_np))

    pad, attn = _masks(rng, device)
    input = MhaInput(q, k, v)
    kwargs = {}
    if masks in ("pad", "both"):
        input = input.mask_pad(Tensor.from_data(pad, device))
        kwargs["key_padding_mask"] = ref.torch.tensor(pad)
    if masks in ("attn", "both"):
        input = input.mask_attn(Tensor.from_data(attn, device))
        kwargs["attn_mask"] = ref.torch.tensor(attn).repeat_interleave(N_HEADS, dim=0)

    out = mha(input)
    context, weights = theirs(tq, tk, tv, need_weights=True, average_attn_weights=False, **kwargs)
    assert out.context.dims() == [BATCH, SEQ_Q, D_MODEL]
    assert out.weights.dims() == [BATCH, N_HEADS, SEQ_Q, SEQ_K]
    ref.close(out.context, context, scale=2)
    ref.close(out.weights, weights, scale=2)
    if masks != "none":
        masked = np.broadcast_to((pad[:, None, None, :] if masks != "attn" else attn[:, None]), weights.shape)
        assert np.all(out.weights.to_data().to_numpy()[masked] == 0.0)

    grads = ref.backward(out.context, context, rng)
    for ours, theirs_input in ((q, tq), (k, tk), (v, tv)):
        ref.close(ours.grad(grads), theirs_input.grad, scale=2)
    d = D_MODEL
    for index, layer in enumerate((mha.query, mha.key, mha.value)):
        rows = slice(index * d, (index + 1) * d)
        ref.close(layer.weight.val().grad(grads), theirs.in_proj_weight.grad[rows].T, scale=2)
        ref.close(layer.bias.val().grad(grads), theirs.in_proj_bias.grad[rows], scale=2)
    ref.close(mha.output.weight.val().grad(grads), theirs.out_proj.weight.grad.T, scale=2)
    ref.close(mha.output.bias.val().grad(grads), theirs.out_proj.bias.grad, scale=2)


def test_mha_in_float64_matches_torch(ref, rng) -> None:
    device = Autodiff(NdArray(float_dtype=DType.F64)).device()
    mha = MultiHeadAttentionConfig(D_MODEL, 4, dropout=0.0).init(device)
    assert mha.query.weight.dtype == DType.F64
    theirs = _torch_mha(ref, mha)
    x_np = rng.standard_normal([BATCH, SEQ_Q, D_MODEL])
    x = Tensor.from_data(x_np, device).require_grad()
    tx = ref.tensor(x_np, requires_grad=True)
    causal = generate_autoregressive_mask(BATCH, SEQ_Q, device)
    out = mha(MhaInput.self_attn(x).mask_attn(causal))
    assert out.context.dtype == DType.F64
    expected, _ = theirs(tx, tx, tx, attn_mask=ref.torch.triu(ref.torch.ones(SEQ_Q, SEQ_Q, dtype=bool), 1))
    ref.close(out.context, expected)
    grads = out.context.sum().backward()
    expected.sum().backward()
    ref.close(x.grad(grads), tx.grad)
    ref.close(mha.value.weight.val().grad(grads), theirs.in_proj_weight.grad[2 * D_MODEL :].T)


def test_quiet_softmax_matches_reference(inner_device, ref, rng) -> None:
    mha = MultiHeadAttentionConfig(D_MODEL, N_HEADS, quiet_softmax=True).init(inner_device)
    x_np = rng.standard_normal([BATCH, SEQ_Q, D_MODEL]).astype(np.float32)
    pad = np.array([[False, False, True], [False, False, False]])
    out = mha(
        MhaInput.self_attn(Tensor.from_data(x_np, inner_device)).mask_pad(Tensor.from_data(pad, inner_device))
    )

    torch = ref.torch
    x = torch.tensor(x_np)

    def project(layer):
        return x @ ref.tensor(layer.weight.val()) + ref.tensor(layer.bias.val())

    def heads(t):
        return t.reshape(BATCH, SEQ_Q, N_HEADS, -1).transpose(1, 2)

    q, k, v = heads(project(mha.query)), heads(project(mha.key)), heads(project(mha.value))
    scores = q @ k.transpose(2, 3) / math.sqrt(D_MODEL // N_HEADS)
    scores = scores.masked_fill(torch.tensor(pad)[:, None, None, :], -1.0e4)
    exps = scores.exp()
    weights = exps / (1 + exps.sum(-1, keepdim=True))
    context = (weights @ v).transpose(1, 2).reshape(BATCH, SEQ_Q, D_MODEL)
    expected = context @ ref.tensor(mha.output.weight.val()) + ref.tensor(mha.output.bias.val())
    ref.close(out.weights, weights, scale=2)
    ref.close(out.context, expected, scale=2)
    # the quiet softmax lets a row sum to less than one
    assert np.all(out.weights.to_data().to_numpy().sum(-1) < 1.0)


def test_padding_mask_hides_the_padded_values(inner_device) -> None:
    """Burn's test: changing the padded positions leaves the other outputs as they were."""
    batch, seq, d_model, padded = 3, 6, 16, 2
    mha = MultiHeadAttentionConfig(d_model, 2).init(inner_device)
    mask = Tensor.from_data(np.arange(seq)[None, :].repeat(batch, 0) >= seq - padded, inner_device)
    first = Tensor.random([batch, seq, d_model], device=inner_device)
    second = first.slice_assign(
        [slice(None), slice(seq - padded, seq)], Tensor.random([batch, padded, d_model], device=inner_device)
    )
    out_1 = mha(MhaInput.self_attn(first).mask_pad(mask)).context.to_data().to_numpy()
    out_2 = mha(MhaInput.self_attn(second).mask_pad(mask)).context.to_data().to_numpy()
    np.testing.assert_allclose(out_1[:, : seq - padded], out_2[:, : seq - padded], rtol=1e-5, atol=1e-6)
    assert not np.allclose(out_1[:, seq - padded :], out_2[:, seq - padded :])


def test_autoregressive_cache_matches_the_causal_forward(inner_device) -> None:
    """Burn's test: decoding token by token with the cache gives the causal-masked forward."""
    batch, seq, d_model = 3, 4, 12
    mha = MultiHeadAttentionConfig(d_model, 2).init(inner_device)
    tensor = Tensor.random([batch, seq, d_model], device=inner_device)
    causal = generate_autoregressive_mask(batch, seq, inner_device)
    expected = mha(MhaInput.self_attn(tensor).mask_attn(causal)).context.to_data().to_numpy()

    cache = MhaCache.autoregressive()
    steps = []
    for i in range(1, seq + 1):
        context = mha.forward_cache(MhaInput.self_attn(tensor.narrow(1, 0, i)), cache).context
        assert context.dims() == [batch, i, d_model]
        steps.append(context.narrow(1, i - 1, 1).to_data().to_numpy())
    np.testing.assert_allclose(np.concatenate(steps, axis=1), expected, rtol=1e-5, atol=1e-6)
    unmasked = mha(MhaInput.self_attn(tensor)).context.to_data().to_numpy()
    assert not np.allclose(unmasked[:, 0], expected[:, 0], atol=1e-4)


def test_cross_attention_cache_projects_the_memory_once(inner_device) -> None:
    batch, seq, memory_length, d_model = 2, 3, 5, 8
    mha = MultiHeadAttentionConfig(d_model, 2).init(inner_device)
    target = Tensor.random([batch, seq, d_model], device=inner_device)
    memory = Tensor.random([batch, memory_length, d_model], device=inner_device)
    expected = mha(MhaInput(target, memory, memory)).context.to_data().to_numpy()
    cache = MhaCache.autoregressive_cross_attention()
    other_memory = memory * 3.0  # ignored after the first step: the cache holds the projected memory
    for i in range(1, seq + 1):
        step_memory = memory if i == 1 else other_memory
        context = mha.forward_cache(MhaInput(target.narrow(1, 0, i), step_memory, step_memory), cache).context
    np.testing.assert_allclose(context.to_data().to_numpy(), expected, rtol=1e-5, atol=1e-6)


def test_cache_rejects_an_input_that_does_not_grow_by_one(inner_device) -> None:
    mha = MultiHeadAttentionConfig(8, 2).init(inner_device)
    cache = MhaCache.autoregressive()
    x = Tensor.random([1, 4, 8], device=inner_device)
    mha.forward_cache(MhaInput.self_attn(x.narrow(1, 0, 2)), cache)
    with pytest.raises(
        ValueError, match=r"the cache holds 2 positions, so the input must have 3; got shape \[1, 4, 8\]"
    ):
        mha.forward_cache(MhaInput.self_attn(x), cache)


def test_dropout_zeroes_weights_after_the_softmax(device) -> None:
    """As PyTorch: while training, each weight is 0 or the evaluation weight scaled by 1 / (1 - p)."""
    mha = MultiHeadAttentionConfig(16, 4, dropout=0.5).init(device)
    x = Tensor.random([4, 6, 16], device=device)
    trained = mha(MhaInput.self_attn(x)).weights.to_data().to_numpy()
    evaluated = mha.valid()(MhaInput.self_attn(x.inner())).weights.to_data().to_numpy()
    np.testing.assert_allclose(evaluated.sum(-1), 1.0, rtol=1e-5)
    dropped = trained == 0.0
    assert 0.3 < dropped.mean() < 0.7
    np.testing.assert_allclose(trained[~dropped], 2.0 * evaluated[~dropped], rtol=1e-5)


def test_default_initialization_is_pytorch_linear_rule(device) -> None:
    d_model = 64
    mha = MultiHeadAttentionConfig(d_model, 4).init(device)
    bound = 1 / math.sqrt(d_model)
    for name, param in mha.named_params():
        values = param.val().to_data().to_numpy()
        assert np.abs(values).max() <= bound, name
        if values.ndim == 2:
            assert param.shape == (d_model, d_model)
            assert np.abs(values).max() > 0.95 * bound
            assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert mha.num_params() == 4 * (d_model * d_model + d_model)
    assert [name for name, _ in mha.named_params()] == [
        f"{layer}.{kind}" for layer in ("query", "key", "value", "output") for kind in ("weight", "bias")
    ]


def test_config_defaults_biases_and_json(device) -> None:
    config = MultiHeadAttentionConfig(8, 2)
    assert (config.dropout, config.min_float, config.quiet_softmax) == (0.1, -1.0e4, False)
    assert MultiHeadAttentionConfig.from_json(config.to_json()) == config
    mha = MultiHeadAttentionConfig(8, 2, enable_key_bias=False, enable_output_bias=False).init(device)
    assert mha.key.bias is None
    assert mha.output.bias is None
    assert mha.query.bias is not None
    assert (mha.d_k, mha.dropout.prob) == (4, 0.1)
    assert mha.num_params() == 4 * 64 + 2 * 8


def test_errors(device) -> None:
    with pytest.raises(ValueError, match=r"n_heads \(3\) must divide d_model \(8\)"):
        MultiHeadAttentionConfig(8, 3).init(device)
    with pytest.raises(ValueError, match="d_model and n_heads must be positive"):
        MultiHeadAttentionConfig(0, 1).init(device)
    with pytest.raises(ValueError, match=r"Dropout: prob must be a number in \[0, 1\]"):
        MultiHeadAttentionConfig(8, 2, dropout=1.5).init(device)
    mha = MultiHeadAttentionConfig(8, 2).init(device)
    x = Tensor.zeros([2, 3, 8], device)
    with pytest.raises(ValueError, match=r"query must have shape \[batch, seq, d_model=8\], got \[2, 3, 6\]"):
        mha(MhaInput.self_attn(Tensor.zeros([2, 3, 6], device)))
    with pytest.raises(ValueError, match="must share the batch size, and key and value the length"):
        mha(MhaInput(x, Tensor.zeros([2, 4, 8], device), Tensor.zeros([2, 5, 8], device)))
    with pytest.raises(TypeError, match="mask_pad must be a Bool tensor, got a tensor of dtype f32"):
        mha(MhaInput.self_attn(x).mask_pad(Tensor.zeros([2, 3], device)))
    with pytest.raises(ValueError, match=r"mask_attn must have shape \[batch, seq_q, seq_k\] = \[2, 3, 3\]"):
        mha(MhaInput.self_attn(x).mask_attn(Tensor.from_data(np.zeros([2, 3, 4], dtype=bool), device)))
    with pytest.raises(TypeError, match="expected an MhaInput, got Tensor"):
        mha(x)


def test_generate_autoregressive_mask(device) -> None:
    mask = generate_autoregressive_mask(2, 3, device)
    assert mask.dtype == DType.BOOL
    expected = [[False, True, True], [False, False, True], [False, False, False]]
    assert mask.to_data().tolist() == [expected, expected]


def test_generate_padding_mask(device) -> None:
    """Burn's test, and the sequence-length options."""
    tokens = [[3, 3, 3], [3, 3, 3], [3, 3, 3, 4], [3, 3, 3, 4, 10, 15]]
    result = generate_padding_mask(0, tokens, None, device)
    assert result.mask.to_data().tolist() == [
        [False, False, False, True, True, True],
        [False, False, False, True, True, True],
        [False, False, False, False, True, True],
        [False, False, False, False, False, False],
    ]
    assert result.tensor.to_data().tolist()[2] == [3, 3, 3, 4, 0, 0]
    assert result.tensor.kind.name == "INT"

    limited = generate_padding_mask(0, tokens, 4, device)
    assert limited.tensor.to_data().tolist() == [[3, 3, 3, 0], [3, 3, 3, 0], [3, 3, 3, 4], [3, 3, 3, 4]]
    assert generate_padding_mask(0, tokens, 10, device).tensor.dims() == [4, 6]
    fixed = generate_padding_mask(9, [[1], [2, 3]], SeqLengthOption.Fixed(3), device)
    assert fixed.tensor.to_data().tolist() == [[1, 9, 9], [2, 3, 9]]
    assert fixed.mask.to_data().tolist() == [[False, True, True], [False, False, True]]
    assert generate_padding_mask(0, [[1, 2]], SeqLengthOption.Max(1), device).tensor.dims() == [1, 1]
    with pytest.raises(TypeError, match="seq_length must be a SeqLengthOption, an int or None, got str"):
        generate_padding_mask(0, tokens, "4", device)
