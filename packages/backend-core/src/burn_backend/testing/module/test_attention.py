"""``module.attention`` (scaled dot-product attention): values against a NumPy float64 reference with
masks, additive bias, softcap, causal masking, grouped-query heads and fully masked rows, PyTorch's SDPA
where installed, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import AttentionOptions, Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref

OPTIONS = [
    AttentionOptions(),
    AttentionOptions(scale=0.3),
    AttentionOptions(softcap=1.5),
    AttentionOptions(is_causal=True),
    AttentionOptions(scale=0.8, softcap=2.0, is_causal=True),
]


def option_id(options: AttentionOptions) -> str:
    return f"scale{options.scale}-cap{options.softcap}{'-causal' if options.is_causal else ''}"


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize("options", OPTIONS, ids=option_id)
@pytest.mark.parametrize("extras", ["plain", "mask", "bias", "mask+bias"])
def test_attention(
    device: Device, rng: np.random.Generator, extras: str, options: AttentionOptions, dtype: DType
) -> None:
    q = random_array(rng, (2, 3, 5, 4), dtype)
    k = random_array(rng, (2, 3, 6, 4), dtype)
    v = random_array(rng, (2, 3, 6, 3), dtype)
    mask = rng.random((2, 1, 5, 6)) < 0.3 if "mask" in extras else None
    bias = random_array(rng, (1, 3, 5, 6), dtype) if "bias" in extras else None
    result = module.attention(
        make(q, device),
        make(k, device),
        make(v, device),
        None if mask is None else make(mask, device),
        None if bias is None else make(bias, device),
        options,
    )
    expected = ref.attention(
        q.astype(np.float64),
        k.astype(np.float64),
        v.astype(np.float64),
        mask,
        None if bias is None else bias.astype(np.float64),
        options.scale,
        options.softcap,
        options.is_causal,
    )
    check(result, expected, dtype, scale=10)


def test_attention_grouped_query_heads(device: Device, rng: np.random.Generator) -> None:
    q = random_array(rng, (1, 4, 3, 2), DType.F64)
    k = random_array(rng, (1, 2, 5, 2), DType.F64)
    v = random_array(rng, (1, 2, 5, 6), DType.F64)
    result = module.attention(make(q, device), make(k, device), make(v, device))
    check(result, ref.attention(q, k, v, None, None, None, None, False), DType.F64)


def test_attention_fully_masked_rows_are_zero(device: Device, rng: np.random.Generator) -> None:
    q = random_array(rng, (1, 1, 3, 2), DType.F32)
    k = random_array(rng, (1, 1, 4, 2), DType.F32)
    v = random_array(rng, (1, 1, 4, 2), DType.F32)
    mask = np.zeros((3, 4), dtype=bool)
    mask[1] = True
    result = module.attention(
        make(q, device), make(k, device), make(v, device), make(mask, device)
    ).to_numpy()
    assert np.all(np.isfinite(result))
    np.testing.assert_array_equal(result[0, 0, 1], [0.0, 0.0])
    expected = ref.attention(
        q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), mask, None, None, None, False
    )
    check(Tensor.from_numpy(result, device), expected, DType.F32)


def test_attention_broadcasts_lower_rank_mask_and_bias(device: Device, rng: np.random.Generator) -> None:
    q = random_array(rng, (2, 2, 3, 4), DType.F32)
    k = random_array(rng, (2, 2, 5, 4), DType.F32)
    v = random_array(rng, (2, 2, 5, 4), DType.F32)
    mask = rng.random((3, 5)) < 0.3
    bias = random_array(rng, (2, 1, 5), DType.F32)
    result = module.attention(
        make(q, device), make(k, device), make(v, device), make(mask, device), make(bias, device)
    )
    f = np.float64
    expected = ref.attention(
        q.astype(f), k.astype(f), v.astype(f), mask, bias.astype(f)[None], None, None, False
    )
    check(result, expected, DType.F32, scale=10)


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16], ids=str)
def test_attention_low_precision(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    q = random_array(rng, (1, 2, 4, 8), dtype, -1.0, 1.0)
    k = random_array(rng, (1, 2, 6, 8), dtype, -1.0, 1.0)
    v = random_array(rng, (1, 2, 6, 4), dtype, -1.0, 1.0)
    result = module.attention(
        make(q, device), make(k, device), make(v, device), options=AttentionOptions(is_causal=True)
    )
    f = np.float64
    check(
        result,
        ref.attention(q.astype(f), k.astype(f), v.astype(f), None, None, None, None, True),
        dtype,
        scale=4,
    )


def test_attention_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    q = random_array(rng, (2, 2, 5, 4), DType.F64)
    k = random_array(rng, (2, 2, 7, 4), DType.F64)
    v = random_array(rng, (2, 2, 7, 3), DType.F64)
    mask = rng.random((2, 2, 5, 7)) < 0.3
    mask[..., 0] = False
    sdpa = torch.nn.functional.scaled_dot_product_attention
    expected = sdpa(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), attn_mask=torch.tensor(~mask), scale=0.7
    )
    result = module.attention(
        make(q, device),
        make(k, device),
        make(v, device),
        make(mask, device),
        None,
        AttentionOptions(scale=0.7),
    )
    check(result, expected.numpy(), DType.F64)
    causal = sdpa(torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=True)
    ours = module.attention(
        make(q, device), make(k, device), make(v, device), options=AttentionOptions(is_causal=True)
    )
    check(ours, causal.numpy(), DType.F64)


def test_attention_errors(device: Device) -> None:
    own = device.backend.float_dtype  # the tensors below have the backend's default float dtype
    other = DType.F32 if own is DType.F64 else DType.F64
    q = Tensor.zeros([1, 4, 3, 2], device=device)
    k = Tensor.zeros([1, 2, 5, 2], device=device)
    v = Tensor.zeros([1, 2, 5, 6], device=device)
    with pytest.raises(ValueError, match=r"attention: query must have rank 4"):
        module.attention(Tensor.zeros([4, 3, 2], device=device), k, v)
    with pytest.raises(
        ValueError, match=r"attention: incompatible shapes query \[1, 4, 3, 2\], key \[1, 2, 5, 3\]"
    ):
        module.attention(q, Tensor.zeros([1, 2, 5, 3], device=device), v)
    with pytest.raises(ValueError, match=r"attention: incompatible shapes"):
        module.attention(q, k, Tensor.zeros([1, 2, 4, 6], device=device))
    with pytest.raises(ValueError, match=r"attention: key/value heads \(3\) must divide query heads \(4\)"):
        module.attention(
            q, Tensor.zeros([1, 3, 5, 2], device=device), Tensor.zeros([1, 3, 5, 6], device=device)
        )
    with pytest.raises(TypeError, match=r"attention: mask must be a Bool tensor"):
        module.attention(q, k, v, Tensor.zeros([1, 4, 3, 5], device=device))
    with pytest.raises(ValueError, match=r"attention: mask of shape \[1, 4, 3, 4\] does not broadcast"):
        module.attention(q, k, v, Tensor.zeros([1, 4, 3, 4], device=device, dtype=DType.BOOL))
    with pytest.raises(TypeError, match=rf"attention: attn_bias has dtype {other}, query has {own}"):
        module.attention(q, k, v, None, Tensor.zeros([1, 4, 3, 5], device=device, dtype=other))
    with pytest.raises(ValueError, match=r"attention: softcap must be positive"):
        module.attention(q, k, v, options=AttentionOptions(softcap=0.0))
    with pytest.raises(TypeError, match=rf"attention: value has dtype {other}"):
        module.attention(q, k, Tensor.zeros([1, 2, 5, 6], device=device, dtype=other))
