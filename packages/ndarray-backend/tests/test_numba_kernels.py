"""NdArray's numba kernels and fusion compiler, and its fallback to NumPy without numba."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from burn_backend import AdamOptions, DType, OptimizerOps
from burn_backend.kit import ElementwiseBlock, ElementwiseStep, TensorSpec, run_op_by_op
from burn_ndarray import NdArray


@pytest.fixture(params=["serial", "parallel"])
def split(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each kernel test twice: as NdArray picks for these sizes (one thread), and with every kernel split
    over the cores in chunks (sizes that are no multiple of a chunk, so a partial one ends the loop)."""
    if request.param == "parallel":
        from burn_ndarray import _kernels

        monkeypatch.setattr(_kernels, "PARALLEL_MIN", 1)
    return str(request.param)


def test_erf_and_gelu_match_the_definitions(split: str) -> None:
    backend = NdArray()
    x = np.linspace(-6, 6, 40_001)
    erf = np.array([math.erf(v) for v in x])
    for dtype, tolerance in [(np.float32, 1e-6), (np.float64, 1e-13)]:
        values = x.astype(dtype)
        np.testing.assert_allclose(backend.float_erf(values), erf, atol=tolerance, rtol=tolerance)
        gelu = x * 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x])
        np.testing.assert_allclose(backend.gelu(values), gelu, atol=tolerance, rtol=10 * tolerance)


def test_gelu_and_its_gradient_keep_f32_accuracy_into_the_tails(split: str) -> None:
    # the f32 kernels compute erfc(-x / sqrt 2) as exp(-x^2 / 2) times a fitted polynomial: checked
    # against the definition in f64 down to where the GELU leaves f32's normal range (x = -12.9), where
    # an exponent rounded to f32 alone is 5e-6 off
    backend = NdArray()
    x = np.linspace(-12.9, 7, 100_003).astype(np.float32)
    grad = np.random.default_rng(0).uniform(0.5, 2.0, x.shape).astype(np.float32)
    wide = x.astype(np.float64)
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in wide])
    density = wide * np.exp(-0.5 * wide * wide) / math.sqrt(2 * math.pi)
    gelu = backend.gelu(x)
    assert gelu.dtype == np.float32
    want = wide * cdf
    normal = np.abs(want) > np.finfo(np.float32).tiny
    assert normal[0]
    np.testing.assert_allclose(gelu[normal], want[normal], rtol=1e-6, atol=0)
    got = backend.gelu_backward(x, grad)
    assert got.dtype == np.float32
    # cdf + density cancel near x = -0.75: the error is measured against the terms' size
    scale = (np.abs(cdf) + np.abs(density)) * grad
    error = np.abs(got - grad * (cdf + density)) / scale
    assert error[scale > 1e-36].max() < 1e-6


def test_gelu_keeps_its_special_values(split: str) -> None:
    backend = NdArray()
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30], dtype=np.float32)
    # x * cdf(x) as IEEE gives it: inf * 0 is NaN at -inf, and the density's inf * 0 at +inf
    gelu = backend.gelu(x)
    np.testing.assert_array_equal(gelu, np.array([np.inf, np.nan, np.nan, 0, 0, 1e30, 0], np.float32))
    assert list(np.signbit(gelu[3:])) == [False, True, False, True]
    grad = backend.gelu_backward(x, np.ones_like(x))
    np.testing.assert_array_equal(grad, [np.nan, np.nan, np.nan, 0.5, 0.5, 1.0, 0.0])


@pytest.mark.parametrize(
    ("shapes", "dtype"),
    [
        ([(5, 7), (5, 7)], DType.F32),
        ([(4, 1, 6), (1, 3, 6)], DType.F64),
        ([(2, 3, 1), (1, 1, 1)], DType.F32),
        ([(40_001,), (1,)], DType.F32),
        ([(3, 5, 4, 7), (3, 1, 4, 1)], DType.F32),
    ],
)
def test_a_compiled_block_equals_the_ops_one_by_one(
    shapes: list[tuple[int, ...]], dtype: DType, split: str
) -> None:
    backend = NdArray()
    inputs = tuple(TensorSpec(dtype, shape) for shape in shapes)
    steps = (
        ElementwiseStep("float_mul", (0, 1)),
        ElementwiseStep("float_add_scalar", (2,), (0.5,)),
        ElementwiseStep("float_erf" if dtype is DType.F32 else "float_exp", (3,)),  # f64 erf: op by op
        ElementwiseStep("float_greater_elem", (4,), (0.1,)),
        ElementwiseStep("relu_backward", (4, 3)),
    )
    block = ElementwiseBlock(inputs, steps, (4, 5, 6))
    plan = backend.compile_elementwise(block, backend.device())
    assert plan is not None
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=shape).astype(dtype.numpy) for shape in shapes]
    for got, want in zip(plan(arrays, [1.5, -0.2]), run_op_by_op(backend, block, arrays, [1.5, -0.2])):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_int_blocks_wrap_like_numpy() -> None:
    backend = NdArray()
    spec = TensorSpec(DType.I8, (10,))
    block = ElementwiseBlock(
        (spec,), (ElementwiseStep("int_mul_scalar", (0,), (3,)), ElementwiseStep("int_add", (1, 0))), (2,)
    )
    plan = backend.compile_elementwise(block, backend.device())
    assert plan is not None
    values = np.arange(-100, 100, 20, dtype=np.int8)
    (got,) = plan([values], [3])
    assert got.dtype == np.int8
    assert got.tolist() == run_op_by_op(backend, block, [values], [3])[0].tolist()


def test_low_precision_blocks_are_not_compiled() -> None:
    backend = NdArray()
    block = ElementwiseBlock(
        (TensorSpec(DType.F16, (3,)),),
        (ElementwiseStep("float_exp", (0,)), ElementwiseStep("float_neg", (1,))),
        (2,),
    )
    assert backend.compile_elementwise(block, backend.device()) is None


def test_without_numba_ndarray_computes_with_numpy() -> None:
    code = (
        "import numpy as np\n"
        "from burn_backend.kit import ElementwiseBlock, ElementwiseStep, TensorSpec\n"
        "from burn_backend import DType\n"
        "from burn_ndarray import NdArray\n"
        "b = NdArray()\n"
        "print(round(float(b.float_erf(np.array([0.5], np.float32))[0]), 5))\n"
        "s = TensorSpec(DType.F32, (2,))\n"
        "steps = (ElementwiseStep('float_exp', (0,)), ElementwiseStep('float_neg', (1,)))\n"
        "block = ElementwiseBlock((s,), steps, (2,))\n"
        "print(b.compile_elementwise(block, b.device()))\n"
    )
    env = {**os.environ, "BURN_NDARRAY_NUMBA": "0"}
    output = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert output.stdout.split() == [str(round(math.erf(0.5), 5)), "None"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "options",
    [
        AdamOptions(lr=1e-3, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=1),
        AdamOptions(lr=1e-2, beta_1=0.8, beta_2=0.99, epsilon=1e-5, time=4, weight_decay=0.1),
        AdamOptions(
            lr=1e-2, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=9, weight_decay=0.3, decoupled=True
        ),
    ],
    ids=["first", "l2", "adamw"],
)
def test_the_adam_kernel_gives_the_default_bit_for_bit(
    dtype: type[np.generic], options: AdamOptions, split: str
) -> None:
    backend = NdArray()
    rng = np.random.default_rng(0)
    shapes = [(4, 5), (40_001,)]
    params = [rng.standard_normal(shape).astype(dtype) for shape in shapes]
    grads = [rng.standard_normal(shape).astype(dtype) for shape in shapes]
    first = options.time == 1
    moments_1 = [None if first else rng.standard_normal(shape).astype(dtype) for shape in shapes]
    moments_2 = [None if first else rng.random(shape).astype(dtype) for shape in shapes]
    kernel = backend.float_adam_step(params, grads, moments_1, moments_2, options)
    default = OptimizerOps.float_adam_step(backend, params, grads, moments_1, moments_2, options)
    for got_list, want_list in zip(kernel, default):
        for got, want in zip(got_list, want_list):
            assert got.dtype == want.dtype
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_backward_adds_rows_in_a_kernel_with_np_add_at_sums(
    dtype: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    from burn_backend.array import ArrayModuleOps

    backend = NdArray()
    rng = np.random.default_rng(0)
    weights = np.zeros((11, 6), dtype=dtype)
    grad = rng.standard_normal((3, 40, 6)).astype(dtype)
    indices = rng.integers(0, 11, (3, 40))
    indices[0, :5] = 4  # duplicates in a row, and row 10 untouched
    indices[indices == 10] = 3
    shared = ArrayModuleOps.embedding_backward(backend, weights, grad, indices)  # np.add.at, in order
    want = np.zeros((11, 6))
    for index, row in zip(indices.ravel(), grad.reshape(-1, 6).astype(np.float64), strict=True):
        want[index] += row

    def refused(*args: object) -> None:
        raise AssertionError("the shared scatter ran")

    monkeypatch.setattr(ArrayModuleOps, "embedding_backward", refused)
    got = backend.embedding_backward(weights, grad, indices)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, shared)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    assert not got[10].any()


def test_embedding_backward_leaves_indices_out_of_range_to_the_shared_code() -> None:
    backend = NdArray()
    weights = np.zeros((4, 2), dtype=np.float32)
    grad = np.ones((3, 2), dtype=np.float32)
    with pytest.raises(IndexError):
        backend.embedding_backward(weights, grad, np.array([0, 4, 1]))
    # a negative index wraps there as NumPy's indexing does; the kernel would not
    got = backend.embedding_backward(weights, grad, np.array([0, -1, -1]))
    np.testing.assert_array_equal(got, [[1, 1], [0, 0], [0, 0], [2, 2]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_and_its_gradient_run_as_kernels_with_numpys_values(
    dtype: type, split: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from burn_backend.array import ArrayActivationOps
    from burn_ndarray._ops.activation import ActivationOps

    backend = NdArray()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 7, 11)).astype(dtype)
    x.flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40]
    grad = rng.standard_normal(x.shape).astype(dtype)
    grad.flat[6:10] = [np.inf, -np.inf, np.nan, np.inf]
    x.flat[9] = -1.0  # an infinite gradient where the output is not positive: 0, not NaN
    want = np.maximum(x, dtype(0))
    want_grad = np.where(x > 0, grad, dtype(0))

    def refused(*args: object) -> None:
        raise AssertionError("the NumPy fallback ran")

    monkeypatch.setattr(ArrayActivationOps, "relu", refused)
    monkeypatch.setattr(ActivationOps, "relu_backward", refused)
    got = backend.relu(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got).any()
    got_grad = backend.relu_backward(x, grad)
    assert got_grad.dtype == dtype
    np.testing.assert_array_equal(got_grad, want_grad)
    # a strided view is read as its values
    view = x[:, ::2].swapaxes(1, 3)
    np.testing.assert_array_equal(backend.relu(view), np.maximum(view, dtype(0)))
