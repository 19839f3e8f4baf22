"""``attention`` and ``attention_backward`` against PyTorch: values and gradients (through autodiff,
and the backward op called directly) of ``F.scaled_dot_product_attention`` with masks, causal masking,
odd sizes and grouped-query heads, and of attention composed in torch float64 with an additive bias
and a softcap; f32, f16 and bf16 inputs; fully masked rows pass no gradient."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import AttentionOptions, Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module._reference import kernel

Array = np.ndarray[Any, Any]
LOW = [DType.F32, DType.F16, DType.BF16]
PLAIN = AttentionOptions()


@dataclass(frozen=True)
class Case:
    """Shapes ``[batch, heads, seq_q, dim]``, ``kv_heads``, ``seq_k``, ``value_dim``, and what to add."""

    name: str
    query: tuple[int, int, int, int]
    kv_heads: int
    seq_k: int
    value_dim: int
    options: AttentionOptions = PLAIN
    mask: bool = False
    bias: bool = False

    def __str__(self) -> str:
        return self.name


CASES = [
    Case("plain", (2, 2, 3, 4), 2, 3, 4),
    Case("mask-odd", (1, 3, 5, 3), 3, 7, 5, mask=True),
    Case("causal", (2, 2, 6, 4), 2, 6, 3, AttentionOptions(is_causal=True)),
    Case("gqa-causal-mask", (1, 4, 5, 2), 2, 7, 3, AttentionOptions(scale=0.6, is_causal=True), mask=True),
    Case("bias-softcap", (2, 2, 4, 3), 1, 5, 2, AttentionOptions(softcap=1.5), mask=True, bias=True),
]


def torch_module() -> Any:
    return pytest.importorskip("torch")


def build(rng: np.random.Generator, case: Case, dtype: DType) -> dict[str, Any]:
    """Random inputs of ``dtype`` (a mask leaving every query a key; ``grad`` for the output)."""
    batch, heads, seq_q, dim = case.query
    arrays: dict[str, Any] = {
        "q": random_array(rng, case.query, dtype),
        "k": random_array(rng, (batch, case.kv_heads, case.seq_k, dim), dtype),
        "v": random_array(rng, (batch, case.kv_heads, case.seq_k, case.value_dim), dtype),
        "grad": random_array(rng, (batch, heads, seq_q, case.value_dim), dtype),
        "mask": None,
        "bias": None,
    }
    if case.mask:
        mask = rng.random((batch, 1, seq_q, case.seq_k)) < 0.3
        mask[..., 0] = False  # key 0 is never masked (nor in the future): no fully masked row
        arrays["mask"] = mask
    if case.bias:
        arrays["bias"] = random_array(rng, (1, heads, seq_q, case.seq_k), dtype)
    return arrays


def torch_reference(case: Case, arrays: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The output (float64) and the gradients of ``sum(output * grad)`` by torch.autograd: SDPA where
    it applies (no softcap), else attention composed of torch ops."""
    torch = torch_module()
    names = ["q", "k", "v"] + (["bias"] if case.bias else [])
    leaves = {n: torch.tensor(arrays[n].astype(np.float64), requires_grad=True) for n in names}
    q, k, v = leaves["q"], leaves["k"], leaves["v"]
    heads = case.query[1]
    k, v = (t.repeat_interleave(heads // case.kv_heads, 1) for t in (k, v))
    seq_q = case.query[2]
    hidden = torch.zeros((1, 1, seq_q, case.seq_k), dtype=torch.bool)
    if arrays["mask"] is not None:
        hidden = hidden | torch.tensor(arrays["mask"])
    if case.options.is_causal:
        hidden = hidden | torch.ones((seq_q, case.seq_k), dtype=torch.bool).triu(1)
    additive = torch.zeros(hidden.shape, dtype=torch.float64).masked_fill(hidden, -math.inf)
    if case.options.softcap is None:
        if case.bias:
            additive = additive + leaves["bias"]
        functional = torch.nn.functional
        output = functional.scaled_dot_product_attention(
            q, k, v, attn_mask=additive, scale=case.options.scale
        )
    else:
        scale = case.options.scale if case.options.scale is not None else 1.0 / math.sqrt(q.shape[-1])
        scores = case.options.softcap * torch.tanh(q @ k.transpose(-1, -2) * scale / case.options.softcap)
        scores = scores + additive
        if case.bias:
            scores = scores + leaves["bias"]
        output = torch.softmax(scores, -1) @ v
    (output * torch.tensor(arrays["grad"].astype(np.float64))).sum().backward()
    return output.detach().numpy(), {n: leaf.grad.numpy() for n, leaf in leaves.items()}


def ours(device: Device, arrays: dict[str, Any], case: Case, track: bool = False) -> tuple[Any, ...]:
    """Our attention of ``arrays`` and its tensor inputs ``(output, q, k, v, bias or None)``."""
    tensors: dict[str, Any] = {
        n: None if arrays[n] is None else make(arrays[n], device) for n in ("q", "k", "v", "bias")
    }
    if track:
        tensors = {n: None if t is None else t.require_grad() for n, t in tensors.items()}
    mask = None if arrays["mask"] is None else make(arrays["mask"], device)
    output = module.attention(tensors["q"], tensors["k"], tensors["v"], mask, tensors["bias"], case.options)
    return output, *(tensors[n] for n in ("q", "k", "v", "bias"))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention_values(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    require_dtype(device, dtype)
    arrays = build(rng, case, dtype)
    expected, _ = torch_reference(case, arrays)
    check(ours(device, arrays, case)[0], expected, dtype, scale=10)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention_gradients(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    if not device.backend.ad_enabled():
        pytest.skip(f"{device.backend.stack_name} computes no gradients")
    require_dtype(device, dtype)
    arrays = build(rng, case, dtype)
    _, expected = torch_reference(case, arrays)
    output, *inputs = ours(device, arrays, case, track=True)
    grads = (output * make(arrays["grad"], device)).sum().backward()
    for name, tensor in zip(("q", "k", "v", "bias"), inputs):
        if tensor is not None:
            check(tensor.grad(grads), expected[name], dtype, scale=20)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention_backward_op(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    require_dtype(device, dtype)
    arrays = build(rng, case, dtype)
    _, expected = torch_reference(case, arrays)
    output = ours(device, arrays, case)[0]
    mask = None if arrays["mask"] is None else make(arrays["mask"], device)
    tensors = [None if arrays[n] is None else make(arrays[n], device) for n in ("q", "k", "v", "bias")]
    q, k, v, bias = tensors
    grads = kernel(
        device, "attention_backward", q, k, v, mask, bias, case.options, output, make(arrays["grad"], device)
    )
    assert len(grads) == 4
    for name, grad in zip(("q", "k", "v", "bias"), grads):
        if name == "bias" and not case.bias:
            assert grad is None
            continue
        check(grad, expected[name], dtype, scale=20)


def test_attention_fully_masked_rows_pass_no_gradient(device: Device, rng: np.random.Generator) -> None:
    q = make(random_array(rng, (1, 2, 3, 4), DType.F32), device)
    k = make(random_array(rng, (1, 2, 5, 4), DType.F32), device)
    v = make(random_array(rng, (1, 2, 5, 3), DType.F32), device)
    hidden = np.zeros((1, 1, 3, 5), dtype=bool)
    hidden[..., 1, :] = True  # query 1 sees no key
    mask = make(hidden, device)
    output = module.attention(q, k, v, mask)
    grad = make(random_array(rng, (1, 2, 3, 3), DType.F32), device)
    q_grad, k_grad, v_grad, _ = kernel(
        device, "attention_backward", q, k, v, mask, None, AttentionOptions(), output, grad
    )
    q_grad = q_grad.to_numpy()
    assert np.all(np.isfinite(q_grad))
    assert np.all(np.isfinite(k_grad.to_numpy()))
    np.testing.assert_array_equal(q_grad[:, :, 1], 0.0)
    assert np.any(q_grad[:, :, 0] != 0.0)
    # the value gradient is P^T dO, which the masked row adds nothing to: it equals that of rows 0 and 2
    keep = np.array([0, 2])

    def rows(tensor: Tensor) -> Tensor:
        return make(tensor.to_numpy()[:, :, keep], device)

    partial = kernel(
        device,
        "attention_backward",
        rows(q),
        k,
        v,
        rows(mask),
        None,
        AttentionOptions(),
        rows(output),
        rows(grad),
    )
    check(v_grad, partial[2].to_numpy().astype(np.float64), DType.F32, scale=10)


def test_attention_errors(device: Device) -> None:
    q = Tensor.zeros([1, 4, 3, 8], device=device)
    with pytest.raises(ValueError, match=r"attention: key/value heads \(3\) must divide query heads \(4\)"):
        module.attention(
            q, Tensor.zeros([1, 3, 5, 8], device=device), Tensor.zeros([1, 3, 5, 2], device=device)
        )
    with pytest.raises(
        ValueError, match=r"attention: incompatible shapes query \[1, 4, 3, 8\], key \[1, 2, 5, 6\]"
    ):
        module.attention(
            q, Tensor.zeros([1, 2, 5, 6], device=device), Tensor.zeros([1, 2, 5, 2], device=device)
        )
    with pytest.raises(ValueError, match=r"attention: key must have rank 4"):
        module.attention(q, Tensor.zeros([2, 5, 8], device=device), Tensor.zeros([1, 2, 5, 2], device=device))
