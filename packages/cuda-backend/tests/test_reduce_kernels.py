"""The reduction kernels (``burn_cuda._ops._reduce_kernels``, Cuda's ``ReduceOps``) against NumPy in
float64: every op along each dim and over the whole tensor, f16/bf16/f32/f64 and i32/i64, odd sizes,
splits of the reduced dim across blocks, non-contiguous inputs, NaN, ties and empty tensors (on a
GPU). The launch planning and the kernel source are checked everywhere."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import DType, Tensor
from burn_backend.array import ArrayFloatOps
from burn_cuda._cupy import cp, unavailable_reason
from burn_cuda._ops import _reduce_kernels as kernels

REASON = unavailable_reason()
on_gpu = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")
BF16 = DType.BF16.numpy
FLOATS = [np.float16, BF16, np.float32, np.float64]
# the rounding of one result in its dtype, and of an f32 (f64) accumulation, relative
ROUNDING = {"float16": 2**-10, "bfloat16": 2**-7, "float32": 2**-23, "float64": 2**-52}
VALUE_OPS = ["sum", "mean", "prod", "max", "min"]
FILL = 132 * kernels.BLOCKS_PER_SM  # an H100 / H200's blocks


# -- without a GPU: launch planning and source ---------------------------------------------------------
@pytest.mark.parametrize(
    ("outputs", "reduced", "inner"),
    [
        (1, 64 << 20, 1),
        (512, 131072, 512),
        (8192, 512, 1),
        (10**6, 3, 1),
        (7, 1, 7),
        (1, 1, 1),
        (64, 5000, 64),
    ],
)
def test_a_plan_covers_the_reduced_dim_once(outputs: int, reduced: int, inner: int) -> None:
    plan = kernels.plan(outputs, reduced, inner, FILL)
    assert plan.rows == (inner == 1)
    by = 1 << plan.lb
    assert plan.blocks * (kernels.THREADS // by) >= outputs > (plan.blocks - 1) * (kernels.THREADS // by)
    assert plan.splits * plan.chunk >= reduced > (plan.splits - 1) * plan.chunk
    assert 1 <= plan.splits <= kernels.MAX_SPLITS
    if not plan.rows:
        assert by <= 8  # 32 neighbouring outputs a warp at least: coalesced along inner
    if plan.splits > 1:
        assert plan.chunk >= by * kernels.MIN_PER_LANE  # no split leaves lanes nearly idle
        assert plan.blocks < FILL  # splits only where the outputs alone do not fill the GPU


def test_few_outputs_split_the_reduced_dim_and_many_do_not() -> None:
    # the bias gradient's shape: 512 outputs of 131072 rows take a part of the GPU each
    assert kernels.plan(512, 131072, 512, FILL).splits > 16
    assert kernels.plan(1, 64 << 20, 1, FILL).splits == FILL  # a whole tensor: one block per slot
    assert kernels.plan(1 << 20, 512, 1, FILL).splits == 1


@pytest.mark.parametrize("op", list(kernels._OPS))
def test_the_source_folds_with_the_ops_rule(op: str) -> None:
    source = kernels.source(op, "float16", "long long", rows=True)
    assert "__half2float(x[k])" in source
    assert "out[j] = __float2half_rn(v);" in source
    assert "typedef int pos_t;" in source
    if op.startswith("arg"):
        assert "bi < ai" in source
        assert "__shfl_xor_sync(0xffffffffu, ai, offset)" in source
        assert "partial_index[blockIdx.y * outputs + j] = ai;" in source
    else:
        assert "const pos_t bi = 0;" in source
    assert ("a / (acc_t)reduced" in source) == (op == "mean")
    wide = kernels.source(op, "bfloat16", "int", rows=False, wide=True)
    assert "typedef long long pos_t;" in wide
    assert "out[j] = burn_to_bf16(v);" in wide
    assert "#define BURN_ROWS false" in wide


def test_what_the_kernels_take() -> None:
    assert kernels.supports(np.dtype(np.float16), "prod")
    assert kernels.supports(BF16, "argmin")
    assert kernels.supports(np.dtype(np.int32), "sum")
    assert not kernels.supports(np.dtype(np.int32), "mean")
    assert not kernels.supports(np.dtype(np.int8), "sum")
    assert not kernels.supports(np.dtype(bool), "max")


# -- on a GPU ------------------------------------------------------------------------------------------
def _backend(**options: Any) -> Any:
    from burn_cuda import Cuda

    return Cuda(**options)


def _gpu(a: np.ndarray[Any, Any]) -> Any:
    if a.dtype == BF16:
        return cp.asarray(a.view(np.uint16)).view(BF16)
    return cp.asarray(a)


def _host(x: Any) -> np.ndarray[Any, Any]:
    if x.dtype == BF16:
        return cp.asnumpy(x.view(np.uint16)).view(BF16)  # type: ignore[no-any-return]
    return cp.asnumpy(x)  # type: ignore[no-any-return]


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, op: str) -> np.ndarray[Any, Any]:
    low, high = (0.995, 1.005) if op == "prod" else (-2.0, 2.0)  # products of thousands stay in range
    return rng.uniform(low, high, shape).astype(dtype)


def _reference(a: np.ndarray[Any, Any], axis: int | None, op: str) -> np.ndarray[Any, Any]:
    wide = a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == BF16 else a.astype(np.int64)
    result = np.asarray(getattr(np, op)(wide, axis=axis, keepdims=axis is not None))
    return result.reshape((1,) if axis is None else result.shape)


def _check(result: Any, a: np.ndarray[Any, Any], axis: int | None, op: str) -> None:
    expected = _reference(a, axis, op)
    got = _host(result)
    assert got.shape == expected.shape
    if op in ("argmax", "argmin", "max", "min"):
        # picks, not arithmetic: exactly NumPy's (ties and NaN included)
        np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))
        return
    wide = a.astype(np.float64)
    count = a.size if axis is None else a.shape[axis]
    rounding = ROUNDING[a.dtype.name]
    acc = ROUNDING["float64" if a.dtype == np.float64 else "float32"]
    if op == "prod":
        atol = (acc * count * 4 + rounding) * np.abs(expected)
    else:
        magnitude = np.abs(wide).sum(axis=axis, keepdims=axis is not None).reshape(expected.shape)
        magnitude = magnitude / count if op == "mean" else magnitude
        atol = acc * 4 * magnitude + rounding * np.abs(expected)
    assert np.all(np.abs(got.astype(np.float64) - expected) <= atol + 1e-300), (op, a.dtype, axis)


def _run(backend: Any, op: str, x: Any, axis: int | None) -> Any:
    if axis is None:
        return getattr(backend, f"float_{op}")(x)
    if op in ("argmax", "argmin"):
        return getattr(backend, f"float_{op}")(x, axis)
    return getattr(backend, f"float_{op}_dim")(x, axis)


@on_gpu
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", [*VALUE_OPS, "argmax", "argmin"])
def test_each_dim_and_the_whole_tensor_match_numpy(op: str, dtype: Any) -> None:
    rng = np.random.default_rng(7)
    backend = _backend()
    a = _random(rng, (3, 37, 129), dtype, op)
    x = _gpu(a)
    for axis in (0, 1, 2, -1) if op.startswith("arg") else (0, 1, 2, -1, None):
        result = _run(backend, op, x, axis)
        assert result.dtype == (np.int64 if op.startswith("arg") else a.dtype)
        _check(result, a, axis, op)


@on_gpu
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    ("shape", "axis"),
    [((300_001,), None), ((20_000, 64), 0), ((4, 70_001), 1), ((1500, 3, 70), 0), ((9, 2000, 5), 1)],
    ids=str,
)
def test_split_reductions_match_numpy(dtype: Any, shape: tuple[int, ...], axis: int | None) -> None:
    # few outputs of long reductions: the reduced dim is split across blocks and reduced again
    reduced = int(np.prod(shape)) if axis is None else shape[axis]
    inner = 1 if axis is None else int(np.prod(shape[axis + 1 :]))
    assert kernels.plan(int(np.prod(shape)) // reduced, reduced, inner, FILL).splits > 1
    rng = np.random.default_rng(11)
    backend = _backend()
    for op in ("sum", "mean", "max") if axis is None else ("sum", "mean", "max", "argmin"):
        a = _random(rng, shape, dtype, op)
        x = _gpu(a)
        result = _run(backend, op, x, axis)
        _check(result, a, axis, op)
        # the parts are folded in a fixed order whichever block finishes last: the same bits again (the
        # arrival counters were left zeroed for this launch)
        np.testing.assert_array_equal(_host(_run(backend, op, x, axis)), _host(result))


@on_gpu
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32], ids=lambda d: np.dtype(d).name)
def test_nan_and_ties_follow_the_shared_op(op: str, dtype: Any) -> None:
    rng = np.random.default_rng(3)
    backend = _backend()
    # few distinct values: ties everywhere, across lanes and splits; NaN at scattered places, twice in
    # some rows (the first one's index is the arg-reductions' answer)
    a = rng.integers(-3, 4, (6, 50_003)).astype(dtype)
    a[1, [7, 40_000]] = np.nan
    a[3, [45_000, 20]] = np.nan
    a[4, 49_999] = np.nan
    x = _gpu(a)
    for axis in (1, 0, None):
        if op.startswith("arg") and axis is None:
            continue
        result = _run(backend, op, x, axis)
        _check(result, a, axis, op)
        shared = _run_shared(backend, op, x, axis)
        np.testing.assert_array_equal(_host(result).astype(np.float64), _host(shared).astype(np.float64))


def _run_shared(backend: Any, op: str, x: Any, axis: int | None) -> Any:
    name = f"float_{op}" if axis is None or op.startswith("arg") else f"float_{op}_dim"
    method = getattr(ArrayFloatOps, name)
    return method(backend, x) if axis is None else method(backend, x, axis)


@on_gpu
def test_with_indices_gives_the_extremes_and_their_first_index() -> None:
    backend = _backend(int_dtype=DType.I32)
    a = np.random.default_rng(5).integers(-5, 5, (17, 2001)).astype(np.float32)
    a[2, 1500] = np.nan
    for name, pick in (("max", np.argmax), ("min", np.argmin)):
        values, indices = getattr(backend, f"float_{name}_dim_with_indices")(_gpu(a), 1)
        assert indices.dtype == np.int32
        assert indices.shape == (17, 1)
        expected = pick(a, axis=1, keepdims=True)
        np.testing.assert_array_equal(_host(indices), expected)
        np.testing.assert_array_equal(_host(values), np.take_along_axis(a, expected, axis=1))


@on_gpu
def test_non_contiguous_inputs() -> None:
    rng = np.random.default_rng(9)
    backend = _backend()
    base = rng.uniform(-2, 2, (40, 300)).astype(np.float32)
    x = _gpu(base)
    for view, host in ((x.T, base.T), (x[::3, 5:250:2], base[::3, 5:250:2])):
        for op in ("sum", "argmax", "max"):
            for axis in (0, 1, None):
                if op == "argmax" and axis is None:
                    continue
                _check(_run(backend, op, view, axis), np.ascontiguousarray(host), axis, op)
    half = rng.uniform(-2, 2, (33, 65)).astype(BF16)
    _check(_run(backend, "sum", _gpu(half)[:, ::2], 0), np.ascontiguousarray(half[:, ::2]), 0, "sum")


@on_gpu
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_reductions(dtype: Any) -> None:
    rng = np.random.default_rng(4)
    backend = _backend()
    a = rng.integers(-(2**30), 2**30, (5, 30_001), dtype=np.int64).astype(dtype)
    x = _gpu(a)
    for axis in (0, 1, None):
        got = backend.int_sum(x) if axis is None else backend.int_sum_dim(x, axis)
        # the sum in the tensor's dtype, wrapping around as the shared op's does
        assert got.dtype == dtype
        np.testing.assert_array_equal(
            _host(got), np.sum(a, axis=axis, keepdims=axis is not None, dtype=dtype).reshape(got.shape)
        )
        for op in ("max", "min"):
            got = (
                getattr(backend, f"int_{op}")(x)
                if axis is None
                else getattr(backend, f"int_{op}_dim")(x, axis)
            )
            np.testing.assert_array_equal(_host(got), _reference(a, axis, op).astype(dtype))
    ties = _gpu(rng.integers(0, 3, (40, 999)).astype(dtype))
    for op in ("argmax", "argmin"):
        got = getattr(backend, f"int_{op}")(ties, 1)
        np.testing.assert_array_equal(_host(got), getattr(np, op)(_host(ties), axis=1, keepdims=True))


@on_gpu
def test_empty_tensors_take_the_shared_op() -> None:
    backend = _backend()
    empty_rows = cp.zeros((0, 3), dtype=np.float32)
    np.testing.assert_array_equal(_host(backend.float_sum_dim(empty_rows, 0)), np.zeros((1, 3)))
    assert np.isnan(_host(backend.float_mean_dim(empty_rows, 0))).all()
    assert backend.float_argmax(empty_rows, 1).shape == (0, 1)
    assert np.isnan(_host(backend.float_mean(cp.zeros((0,), dtype=np.float16)))).all()
    assert backend.float_sum(cp.ones((), dtype=np.float32)).shape == (1,)


@on_gpu
def test_autodiff_sums_a_broadcast_gradient_with_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    autodiff = pytest.importorskip("burn_autodiff")
    calls: list[tuple[tuple[int, ...], int | None, str]] = []
    reduce = kernels.reduce

    def spy(tensor: Any, axis: int | None, op: str, *args: Any, **kwargs: Any) -> Any:
        calls.append((tuple(tensor.shape), axis, op))
        return reduce(tensor, axis, op, *args, **kwargs)

    monkeypatch.setattr(kernels, "reduce", spy)
    rng = np.random.default_rng(1)
    device = autodiff.Autodiff(_backend()).device(0)
    x = rng.standard_normal((8, 33, 64)).astype(np.float32)
    bias = Tensor.from_data(rng.standard_normal(64).astype(np.float32), device).require_grad()
    y = Tensor.from_data(x, device) + bias
    grads = (y * y).sum().backward()
    expected = (2 * (x.astype(np.float64) + bias.to_numpy())).sum(axis=(0, 1))
    grad = bias.grad(grads)
    assert grad is not None
    np.testing.assert_allclose(grad.to_numpy(), expected, rtol=1e-5, atol=1e-3)
    assert ((8, 33, 64), 0, "sum") in calls  # the broadcast's gradient, summed back by the kernel
