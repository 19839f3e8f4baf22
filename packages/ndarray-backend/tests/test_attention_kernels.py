"""NdArray's attention kernels (``burn_ndarray._ops._attention``) against PyTorch CPU in float64: values
and gradients, causal (with more keys than queries), masked, grouped key and value heads, in one block
of query rows and in several (the causal blocks skipping keys), serial and split over threads; fully
masked rows; and NdArray's ops running through them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from burn_backend import AttentionOptions
from burn_ndarray import NdArray
from burn_ndarray._ops import _attention

torch = pytest.importorskip("torch")

TOLERANCE = {np.float64: 1e-10, np.float32: 3e-5}


@pytest.fixture(params=["one-block", "blocks", "blocks-parallel"])
def split(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with every query row in one block (as NdArray picks for these sizes), in blocks of 3
    rows, and in blocks split over two chunks of rows."""
    if request.param != "one-block":
        monkeypatch.setattr(_attention, "_block_rows", lambda *args: 3)
    if request.param == "blocks-parallel":
        monkeypatch.setattr(_attention, "_chunks", lambda size, rows: min(rows, 2))
    return str(request.param)


def _reference(q: Any, k: Any, v: Any, mask: Any, causal: bool, scale: float) -> Any:
    heads = q.shape[1]
    k = k.repeat_interleave(heads // k.shape[1], dim=1)
    v = v.repeat_interleave(heads // v.shape[1], dim=1)
    scores = q @ k.transpose(2, 3) * scale
    hidden = torch.zeros(scores.shape[-2:], dtype=torch.bool)
    if causal:
        hidden = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
    if mask is not None:
        hidden = hidden | torch.from_numpy(mask)
    return torch.softmax(scores.masked_fill(hidden, -torch.inf), dim=-1) @ v


CASES = [  # query shape, key heads, key length, causal, masked, scale
    ((2, 3, 7, 5), 3, 9, True, False, None),
    ((1, 4, 8, 6), 2, 8, False, True, 0.3),
    ((2, 2, 10, 4), 1, 10, True, True, None),
]


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention_matches_pytorch(split: str, dtype: Any, case: tuple[Any, ...]) -> None:
    shape, kv_heads, keys, causal, masked, scale = case
    batch, _, seq, dim = shape
    rng = np.random.default_rng(len(split) + keys)
    q = rng.standard_normal(shape).astype(dtype)
    k, v = (rng.standard_normal((batch, kv_heads, keys, dim)).astype(dtype) for _ in range(2))
    grad = rng.standard_normal(shape).astype(dtype)
    mask = None
    if masked:  # [seq, keys] broadcast over batch and heads; no row fully hidden (key 0 stays visible)
        mask = rng.random((seq, keys)) < 0.4
        mask[:, 0] = False
    options = AttentionOptions(scale=scale, is_causal=causal)
    tq, tk, tv = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (q, k, v))
    expected = _reference(tq, tk, tv, mask, causal, scale if scale is not None else 1.0 / np.sqrt(dim))
    expected.backward(torch.from_numpy(grad.astype(np.float64)))
    output = _attention.attention(q, k, v, mask, options)
    got = _attention.attention_backward(q, k, v, mask, options, output, grad)
    tolerance = TOLERANCE[dtype]
    pairs = [(output, expected.detach()), *zip(got[:3], (tq.grad, tk.grad, tv.grad), strict=True)]
    for actual, reference in pairs:
        assert actual.dtype == np.dtype(dtype)
        assert actual.shape == reference.shape
        np.testing.assert_allclose(actual, reference.numpy(), rtol=0, atol=tolerance)
    assert got.attn_bias_grad is None


def test_fully_masked_rows_give_zeros_and_no_gradient(split: str) -> None:
    rng = np.random.default_rng(3)
    q, k, v, grad = (rng.standard_normal((1, 2, 4, 3)) for _ in range(4))
    mask = np.zeros((4, 4), bool)
    mask[2] = True  # query 2 sees no key
    options = AttentionOptions()
    output = _attention.attention(q, k, v, mask, options)
    np.testing.assert_array_equal(output[:, :, 2], 0.0)
    assert np.isfinite(output).all()
    got = _attention.attention_backward(q, k, v, mask, options, output, grad)
    np.testing.assert_array_equal(got.query_grad[:, :, 2], 0.0)
    assert all(np.isfinite(g).all() for g in got[:3])


def test_ndarray_runs_the_kernels_and_leaves_the_rest_to_the_array_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = NdArray()
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 2, 5, 3)).astype(np.float32)
    calls: list[str] = []
    for name in ("attention", "attention_backward"):
        original = getattr(_attention, name)
        monkeypatch.setattr(_attention, name, lambda *a, _o=original, _n=name: calls.append(_n) or _o(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a kernel that failed would warn and fall back
        output = backend.attention(q, q, q, None, None, AttentionOptions(is_causal=True))
        backend.attention_backward(q, q, q, None, None, AttentionOptions(is_causal=True), output, q)
        capped = AttentionOptions(softcap=5.0)  # a softcap: the array code
        backend.attention(q, q, q, None, None, capped)
        backend.attention(q, q, q, None, np.zeros((5, 5), np.float32), AttentionOptions())  # a bias: too
    assert calls == ["attention", "attention_backward"]
