"""Cuda's scaled dot-product attention (forward and backward) against NumPy in float64: causal, boolean
masks broadcast over heads, biases of broadcasting shapes, softcap and scale, grouped-query attention,
fully masked rows, seq_q != seq_k, odd sizes, non-contiguous operands, in f32 and f64 (the GEMM path),
f16 and bf16 (cuDNN's flash attention where it serves, else the GEMM path in f32), with cuDNN off too,
and key sequences past the row kernel's limit (the shared version). The kernel's source, its launch
shape and which cases the GEMM path takes are checked without a GPU; the rest skips without one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import AttentionOptions, DType
from burn_backend.array import ArrayModuleOps
from burn_cuda._cupy import cp, unavailable_reason
from burn_cuda._ops import _attention_kernels

REASON = unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


@dataclass(frozen=True)
class Case:
    name: str
    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_k: int
    dim: int
    value_dim: int
    causal: bool = False
    mask: tuple[int, ...] | None = None  # its broadcasting shape
    bias: tuple[int, ...] | None = None
    softcap: float | None = None
    scale: float | None = None
    strided: bool = False  # query, key and value as transposed views of [batch, seq, heads, dim]
    masked_row: bool = False  # one row with every key masked


CASES = [
    Case("causal", 2, 4, 4, 33, 33, 64, 64, causal=True),
    Case(
        "mask over heads, a fully masked row", 2, 3, 3, 17, 23, 16, 16, mask=(2, 1, 17, 23), masked_row=True
    ),
    Case("bias over batch", 2, 2, 2, 7, 130, 80, 80, bias=(1, 2, 7, 130)),
    Case("full bias, scale", 1, 2, 2, 9, 9, 16, 16, bias=(1, 2, 9, 9), scale=0.3),
    Case("softcap", 1, 2, 2, 130, 7, 16, 16, softcap=2.0, scale=0.9),
    Case("gqa causal mask bias", 2, 8, 2, 9, 12, 64, 32, True, (1, 1, 9, 12), (2, 1, 1, 12)),
    Case("gqa", 1, 6, 3, 24, 40, 64, 64),
    Case("seq 1", 3, 2, 1, 1, 1, 16, 16),
    Case("causal seq_q > seq_k", 1, 2, 2, 12, 5, 16, 16, causal=True),
    Case("strided operands", 2, 4, 2, 10, 10, 32, 32, causal=True, strided=True),
    Case("causal tiles, mask", 1, 2, 2, 260, 300, 32, 24, causal=True, mask=(1, 1, 260, 300)),
]
CUDNN_CASES = {"causal", "gqa", "strided operands"}
"""The cases cuDNN's flash attention must serve in f16 and bf16 (others it may refuse: GEMM path)."""
BOUNDS = {"f64": 1e-12, "f32": 2e-5, "f16": 1e-2, "bf16": 4e-2}
"""Each dtype's bound on ||ours - reference|| / ||reference|| (f32's well under TF32's)."""
DTYPES = {"f64": DType.F64, "f32": DType.F32, "f16": DType.F16, "bf16": DType.BF16}


def _reference(case: Case, a: dict[str, Any]) -> dict[str, Any]:
    """Output and gradients in float64, heads repeated for the keys (an independent formulation)."""
    group = case.heads // case.kv_heads
    q, g = a["q"], a["g"]
    k, v = np.repeat(a["k"], group, axis=1), np.repeat(a["v"], group, axis=1)
    scale = case.scale if case.scale is not None else 1.0 / np.sqrt(case.dim)
    scores = q @ np.swapaxes(k, -1, -2) * scale
    capped = None
    if case.softcap is not None:
        capped = np.tanh(scores / case.softcap)
        scores = capped * case.softcap
    hidden = np.zeros(scores.shape, dtype=bool)
    if case.mask is not None:
        hidden |= a["mask"]
    if case.causal:
        hidden |= np.triu(np.ones((case.seq_q, case.seq_k), dtype=bool), 1)
    scores = np.where(hidden, -np.inf, scores)
    if case.bias is not None:
        scores = scores + a["bias"]
    peak = scores.max(-1, keepdims=True)
    weights = np.exp(scores - np.where(np.isfinite(peak), peak, 0.0))
    total = weights.sum(-1, keepdims=True)
    weights = weights / np.where(total == 0, 1.0, total)
    out = weights @ v
    dv = np.swapaxes(weights, -1, -2) @ g
    ds = weights * (g @ np.swapaxes(v, -1, -2) - (g * out).sum(-1, keepdims=True))
    result = {"out": out}
    if case.bias is not None:
        axes = tuple(d for d in range(4) if case.bias[d] == 1)
        result["dbias"] = ds.sum(axis=axes, keepdims=True)
    if capped is not None:
        ds = ds * (1.0 - capped**2)
    ds = ds * scale
    dq, dk = ds @ k, np.swapaxes(ds, -1, -2) @ q

    def summed(grad: Any) -> Any:
        return grad.reshape(case.batch, case.kv_heads, group, *grad.shape[2:]).sum(2)

    result.update(dq=dq, dk=summed(dk), dv=summed(dv))
    return result


def _draw(case: Case, dtype: DType, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    shapes = {
        "q": (case.batch, case.heads, case.seq_q, case.dim),
        "k": (case.batch, case.kv_heads, case.seq_k, case.dim),
        "v": (case.batch, case.kv_heads, case.seq_k, case.value_dim),
        "g": (case.batch, case.heads, case.seq_q, case.value_dim),
    }
    arrays: dict[str, Any] = {
        name: rng.standard_normal(shape).astype(dtype.numpy).astype(np.float64)
        for name, shape in shapes.items()
    }
    if case.bias is not None:
        arrays["bias"] = rng.standard_normal(case.bias).astype(dtype.numpy).astype(np.float64)
    if case.mask is not None:
        mask = rng.random(case.mask) < 0.3
        if case.masked_row:
            mask[0, 0, 5, :] = True
        arrays["mask"] = mask
    return arrays


def _device(array: Any, dtype: DType, strided: bool) -> Any:
    host = array.astype(dtype.numpy)
    if not strided:
        return cp.asarray(host)
    # the same values as a [batch, heads, seq, dim] view of a [batch, seq, heads, dim] array
    return cp.asarray(np.ascontiguousarray(host.transpose(0, 2, 1, 3))).transpose(0, 2, 1, 3)


def _ours(backend: Any, case: Case, a: dict[str, Any], dtype: DType) -> dict[str, Any]:
    q, k, v = (_device(a[n], dtype, case.strided) for n in "qkv")
    g = cp.asarray(a["g"].astype(dtype.numpy))
    mask = cp.asarray(a["mask"]) if case.mask is not None else None
    bias = cp.asarray(a["bias"].astype(dtype.numpy)) if case.bias is not None else None
    options = AttentionOptions(case.scale, case.softcap, case.causal)
    out = backend.attention(q, k, v, mask, bias, options)
    grads = backend.attention_backward(q, k, v, mask, bias, options, out, g)
    found = {"out": out, "dq": grads.query_grad, "dk": grads.key_grad, "dv": grads.value_grad}
    if case.bias is not None:
        found["dbias"] = grads.attn_bias_grad
    else:
        assert grads.attn_bias_grad is None
    for name, value in found.items():
        assert value.dtype == dtype.numpy, name
    return {name: cp.asnumpy(value).astype(np.float64) for name, value in found.items()}


def _compare(case: Case, got: dict[str, Any], expected: dict[str, Any], bound: float) -> None:
    assert got.keys() == expected.keys()
    for name, reference in expected.items():
        assert got[name].shape == reference.shape, name
        # relative to the reference, or to values of size 1 where it is about 0 (with one key, the
        # query's gradient is 0 up to rounding)
        scale = max(np.linalg.norm(reference), np.sqrt(reference.size))
        error = np.linalg.norm(got[name] - reference) / scale
        assert error <= bound, f"{case.name}: {name} relative error {error:.2e} > {bound:.0e}"
    if case.masked_row:  # every key masked: zeros, exactly, in the output and the query's gradient
        assert not got["out"][0, :, 5].any()
        assert not got["dq"][0, :, 5].any()


def _no_shared_version(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the shared version ran")

    monkeypatch.setattr(ArrayModuleOps, "attention", refuse)
    monkeypatch.setattr(ArrayModuleOps, "attention_backward", refuse)


def _cudnn_loaded() -> bool:
    from burn_cuda import _cudnn

    return _cudnn.unavailable_reason() is None


@needs_gpu
@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_attention_matches_float64(case: Case, dtype_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from burn_cuda import Cuda, _cudnn

    dtype = DTYPES[dtype_name]
    arrays = _draw(case, dtype)
    _no_shared_version(monkeypatch)
    plans = _cudnn.ATTENTION_PLANS
    failures = plans.failures
    got = _ours(Cuda(), case, arrays, dtype)
    _compare(case, got, _reference(case, arrays), BOUNDS[dtype_name])
    if dtype in (DType.F16, DType.BF16) and case.name in CUDNN_CASES and _cudnn_loaded():
        assert plans.failures == failures, "cuDNN refused a case it should serve (see the log)"


@needs_gpu
@pytest.mark.parametrize("dtype_name", ["f16", "bf16"])
def test_half_precision_without_cudnn_takes_the_gemm_path(
    dtype_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from burn_cuda import Cuda

    case, dtype = CASES[0], DTYPES[dtype_name]
    arrays = _draw(case, dtype, seed=3)
    _no_shared_version(monkeypatch)
    _compare(
        case, _ours(Cuda(cudnn=False), case, arrays, dtype), _reference(case, arrays), BOUNDS[dtype_name]
    )


@needs_gpu
@pytest.mark.parametrize("dtype_name", ["f64", "f32"])
@pytest.mark.parametrize(
    "case", [c for c in CASES if c.causal and c.kv_heads == c.heads], ids=lambda c: c.name
)
def test_causal_tiles_match_float64(case: Case, dtype_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from burn_cuda import Cuda

    # tiles of a few rows, so that the small cases split (the last tile shorter where it does not divide)
    monkeypatch.setattr(_attention_kernels, "MIN_TILE", 4)
    assert _attention_kernels.causal_tiles(case.seq_q, case.seq_k) is not None or case.seq_q < 8
    dtype = DTYPES[dtype_name]
    arrays = _draw(case, dtype, seed=11)
    _no_shared_version(monkeypatch)
    got = _ours(Cuda(cudnn=False), case, arrays, dtype)
    _compare(case, got, _reference(case, arrays), BOUNDS[dtype_name])


def test_causal_tiles_cover_the_queries_and_skip_only_masked_keys() -> None:
    assert _attention_kernels.causal_tiles(200, 200) is None  # too few rows to split
    for seq_q, seq_k in ((1024, 1024), (260, 300), (1000, 700), (4096, 64)):
        tiles = _attention_kernels.causal_tiles(seq_q, seq_k)
        assert tiles is not None
        assert len(tiles) <= _attention_kernels.MAX_TILES
        assert tiles[0][0] == 0
        assert tiles[-1][1] == seq_q
        for (start, end, keys), following in zip(tiles, [*tiles[1:], None]):
            assert end - start >= _attention_kernels.MIN_TILE or following is None
            assert keys == min(seq_k, end)  # query end - 1 sees keys up to end - 1
            if following is not None:
                assert following[0] == end


@needs_gpu
def test_keys_past_the_row_kernel_run_the_shared_version() -> None:
    from burn_cuda import Cuda

    case = Case(
        "long keys",
        1,
        1,
        1,
        3,
        _attention_kernels.MAX_KEYS + 5,
        8,
        8,
        mask=(1, 1, 1, _attention_kernels.MAX_KEYS + 5),
    )
    arrays = _draw(case, DType.F32, seed=5)
    _compare(case, _ours(Cuda(), case, arrays, DType.F32), _reference(case, arrays), BOUNDS["f32"])


@needs_gpu
def test_cudnn_plans_are_reused() -> None:
    from burn_cuda import Cuda, _cudnn

    if not _cudnn_loaded():
        pytest.skip("needs the cuDNN frontend")
    case = Case("reuse", 1, 2, 2, 16, 16, 64, 64, causal=True)
    arrays = _draw(case, DType.F16, seed=9)
    _ours(Cuda(), case, arrays, DType.F16)
    builds = _cudnn.ATTENTION_PLANS.builds
    _compare(case, _ours(Cuda(), case, arrays, DType.F16), _reference(case, arrays), BOUNDS["f16"])
    assert _cudnn.ATTENTION_PLANS.builds == builds


def test_launch_shape_covers_each_row_with_few_variants() -> None:
    for seq_k in (1, 7, 31, 32, 33, 130, 256, 257, 1024, 1025, _attention_kernels.MAX_KEYS):
        block, items = _attention_kernels.launch_shape(seq_k)
        assert 32 <= block <= _attention_kernels.MAX_BLOCK
        assert block % 32 == 0
        assert block * items >= seq_k
        assert items & (items - 1) == 0
        assert items <= _attention_kernels.MAX_ITEMS
    assert _attention_kernels.launch_shape(1024) == (128, 8)
    assert _attention_kernels.launch_shape(7) == (32, 1)


def test_row_kernel_source_per_dtype_and_direction() -> None:
    forward, name = _attention_kernels.kernel_source(np.dtype(np.float32), 4, backward=False)
    assert name == "burn_attention_rows_f32_4"
    assert f"void {name}(" in forward
    assert "#define T float" in forward
    assert "#define BACKWARD 0" in forward
    assert "expf(" in forward
    backward, name = _attention_kernels.kernel_source(np.dtype(np.float64), 8, backward=True)
    assert name == "burn_attention_rows_f64_8_backward"
    assert "#define T double" in backward
    assert "#define ITEMS 8" in backward
    assert "#define BACKWARD 1" in backward
    assert "tanh(" in backward


def test_gemm_path_takes_broadcasting_masks_and_biases_only() -> None:
    def arrays(*shapes: tuple[int, ...], dtype: Any = np.float32) -> list[Any]:
        return [np.zeros(shape, dtype=dtype) for shape in shapes]

    q, k, v = arrays((2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 3))
    serves = _attention_kernels.serves
    assert serves(q, k, v, None, None)
    assert serves(q, k, v, np.zeros((1, 4, 1, 6), dtype=bool), np.zeros((2, 1, 5, 1), dtype=np.float16))
    assert not serves(q, k, v, np.zeros((1, 3, 1, 6), dtype=bool), None)  # does not broadcast
    assert not serves(q, k, v, np.zeros((4, 5, 6), dtype=bool), None)  # rank 3
    assert not serves(q, k, v, np.zeros((1, 1, 5, 6), dtype=np.float32), None)  # a float mask
    k3, v3 = arrays((2, 3, 6, 8), (2, 3, 6, 3))
    assert not serves(q, k3, v3, None, None)  # 4 heads over 3
    qi, ki, vi = arrays((2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 3), dtype=np.int32)
    assert not serves(qi, ki, vi, None, None)
    long_keys = _attention_kernels.MAX_KEYS + 1
    k_long, v_long = arrays((2, 2, long_keys, 8), (2, 2, long_keys, 3))
    assert not serves(q, k_long, v_long, None, None)
    assert not serves(np.zeros((2, 4, 0, 8), dtype=np.float32), k, v, None, None)
