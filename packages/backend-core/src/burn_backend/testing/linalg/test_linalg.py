"""Linear algebra (``burn_backend.linalg``): determinants, LU and QR against NumPy in float64 (``lu``
against a partial-pivoting reference written here), diagonals, traces, products, vector norms and
cosine similarity, half-precision inputs, and the errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, linalg
from burn_backend.testing import check, make, random_array, require_dtype

Array = np.ndarray[Any, Any]
WIDE = [DType.F64, DType.F32]


def f64(array: Array) -> Array:
    return np.asarray(array, dtype=np.float64)


def reference_lu(a: Array) -> tuple[Array, Array, Array]:
    """``a = P @ L @ U`` by Doolittle elimination with partial pivoting (the first largest magnitude),
    one matrix at a time."""
    if a.ndim > 2:
        parts = [reference_lu(m) for m in a.reshape(-1, *a.shape[-2:])]
        return tuple(
            np.stack([p[i] for p in parts]).reshape(*a.shape[:-2], *parts[0][i].shape) for i in range(3)
        )
    m, n = a.shape
    k = min(m, n)
    u = a.astype(np.float64).copy()
    lower = np.zeros((m, k))
    rows = np.arange(m)
    for j in range(k):
        pivot = j + int(np.argmax(np.abs(u[j:, j])))
        u[[j, pivot]] = u[[pivot, j]]
        lower[[j, pivot]] = lower[[pivot, j]]
        rows[[j, pivot]] = rows[[pivot, j]]
        lower[j, j] = 1.0
        if u[j, j] != 0.0:
            lower[j + 1 :, j] = u[j + 1 :, j] / u[j, j]
            u[j + 1 :] -= np.outer(lower[j + 1 :, j], u[j])
    p = np.zeros((m, m))
    p[rows, np.arange(m)] = 1.0
    return p, lower, np.triu(u[:k])


# -- decompositions --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 1, 5, 5)], ids=str)
def test_linalg_det(device: Device, rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, shape, dtype)
    expected = np.linalg.det(f64(x)).reshape(shape[:-2] or (1,))
    check(linalg.det(make(x, device)), expected, dtype, scale=8)


def test_linalg_det_of_singular_and_permutation_matrices(device: Device) -> None:
    singular = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], np.zeros((3, 3))])
    check(linalg.det(make(singular, device)), np.zeros(2))
    swap = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    check(linalg.det(make(swap, device)), np.array([-2.0]))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5), (1, 1)], ids=str)
def test_linalg_lu(device: Device, rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, shape, dtype)
    p, lower, upper = linalg.lu(make(x, device))
    ref_p, ref_l, ref_u = reference_lu(f64(x))
    check(p, ref_p, dtype)
    check(lower, ref_l, dtype, scale=8)
    check(upper, ref_u, dtype, scale=8)


def test_linalg_lu_of_a_singular_matrix_is_finite(device: Device) -> None:
    x = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 6.0]])
    p, lower, upper = (t.to_numpy() for t in linalg.lu(make(x, device)))
    assert np.isfinite(lower).all()
    assert np.isfinite(upper).all()
    np.testing.assert_allclose(p @ lower @ upper, x, atol=1e-12)


@pytest.mark.parametrize("reduced", [True, False], ids=["reduced", "complete"])
@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5), (1, 1)], ids=str)
def test_linalg_qr(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], dtype: DType, reduced: bool
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, shape, dtype)
    ref_q, ref_r = np.linalg.qr(f64(x), mode="reduced" if reduced else "complete")
    q, r = linalg.qr(make(x, device), reduced)
    check(q, ref_q, dtype, scale=8)
    check(r, ref_r, dtype, scale=8)


def test_linalg_qr_of_a_zero_column_is_finite(device: Device) -> None:
    x = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]])
    q, r = (t.to_numpy() for t in linalg.qr(make(x, device)))
    np.testing.assert_allclose(q @ r, x, atol=1e-12)
    np.testing.assert_allclose(q.T @ q, np.eye(2), atol=1e-12)


@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16], ids=str)
def test_linalg_half_precision_is_computed_wide(
    device: Device, rng: np.random.Generator, dtype: DType
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, (2, 3, 3), dtype)
    check(linalg.det(make(x, device)), np.linalg.det(f64(x)), dtype, scale=8)
    q, r = linalg.qr(make(x, device))
    check(q.cast(DType.F32).matmul(r.cast(DType.F32)), f64(x), DType.F32, scale=2000)


# -- matrices and vectors --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [DType.F32, DType.I32], ids=str)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 5), (4, 2), (1, 1)], ids=str)
def test_linalg_diag_and_trace(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], dtype: DType
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, shape, dtype, -5, 5)
    diagonal = np.diagonal(x, 0, -2, -1)
    check(linalg.diag(make(x, device)), diagonal, dtype)
    check(linalg.trace(make(x, device)), diagonal.sum(-1, keepdims=True).astype(dtype.numpy), dtype)


@pytest.mark.parametrize(
    ("x_shape", "y_shape"), [((3,), (4,)), ((2, 3), (2, 5)), ((2, 1, 3), (4, 2))], ids=str
)
def test_linalg_outer(
    device: Device, rng: np.random.Generator, x_shape: tuple[int, ...], y_shape: tuple[int, ...]
) -> None:
    x, y = random_array(rng, x_shape, DType.F64), random_array(rng, y_shape, DType.F64)
    check(linalg.outer(make(x, device), make(y, device)), x[..., :, None] * y[..., None, :])


@pytest.mark.parametrize(
    ("m_shape", "v_shape"), [((3, 4), (4,)), ((2, 3, 4), (2, 4)), ((2, 1, 3, 4), (5, 4))], ids=str
)
def test_linalg_matvec(
    device: Device, rng: np.random.Generator, m_shape: tuple[int, ...], v_shape: tuple[int, ...]
) -> None:
    m, v = random_array(rng, m_shape, DType.F64), random_array(rng, v_shape, DType.F64)
    check(linalg.matvec(make(m, device), make(v, device)), (m @ v[..., None])[..., 0])


# -- norms and similarity --------------------------------------------------------------------------------
NORMS = [2.0, 1.0, 0.0, float("inf"), float("-inf"), 3.0, 0.5, -1.5]


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("p", NORMS, ids=str)
def test_linalg_vector_norm(device: Device, rng: np.random.Generator, p: float, dtype: DType) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, (3, 4, 5), dtype)
    x[0, 0, :2] = 0.0  # zeros count for L0 and give the smallest magnitude
    for dim in (1, -1, (0, 2)):
        axis = dim if isinstance(dim, tuple) else (dim,)
        magnitude = np.abs(f64(x))
        if p == 0.0:
            expected = (magnitude != 0).sum(axis, keepdims=True).astype(np.float64)
        elif p == float("inf"):
            expected = magnitude.max(axis, keepdims=True)
        elif p == float("-inf"):
            expected = magnitude.min(axis, keepdims=True)
        else:
            with np.errstate(divide="ignore"):
                expected = (magnitude**p).sum(axis, keepdims=True) ** (1.0 / p)
        check(linalg.vector_norm(make(x, device), p, dim), expected, dtype, scale=8)


def test_linalg_named_norms_are_vector_norms(device: Device, rng: np.random.Generator) -> None:
    x = make(random_array(rng, (3, 4), DType.F64), device)
    named = {
        linalg.l0_norm: 0.0,
        linalg.l1_norm: 1.0,
        linalg.l2_norm: 2.0,
        linalg.max_abs_norm: float("inf"),
        linalg.min_abs_norm: float("-inf"),
    }
    for function, p in named.items():
        check(function(x, 0), linalg.vector_norm(x, p, 0).to_numpy())
    check(linalg.lp_norm(x, 3.0), linalg.vector_norm(x, 3.0, -1).to_numpy())


def test_linalg_vector_norm_of_zeros(device: Device) -> None:
    check(linalg.vector_norm(make(np.zeros((2, 3)), device), 2.0, 1), np.zeros((2, 1)))


@pytest.mark.parametrize(
    ("shape1", "shape2", "dim"), [((3, 5), (3, 5), 1), ((4, 2, 3), (2, 3), -1), ((3, 1), (3, 4), 0)], ids=str
)
def test_linalg_cosine_similarity(
    device: Device, rng: np.random.Generator, shape1: tuple[int, ...], shape2: tuple[int, ...], dim: int
) -> None:
    x1, x2 = random_array(rng, shape1, DType.F64), random_array(rng, shape2, DType.F64)
    a, b = np.broadcast_arrays(x1, x2)
    norms = np.maximum(np.linalg.norm(a, axis=dim, keepdims=True), 1e-8) * np.maximum(
        np.linalg.norm(b, axis=dim, keepdims=True), 1e-8
    )
    expected = (a * b).sum(dim, keepdims=True) / norms
    check(linalg.cosine_similarity(make(x1, device), make(x2, device), dim), expected)


def test_linalg_cosine_similarity_clamps_each_norm(device: Device) -> None:
    x1, x2 = np.array([[1e-5, 0.0]]), np.array([[3.0, 4.0]])
    # |x1| = 1e-5 is raised to eps = 1e-4: 3e-5 / (1e-4 * 5)
    check(linalg.cosine_similarity(make(x1, device), make(x2, device), eps=1e-4), np.array([[0.06]]))
    check(linalg.cosine_similarity(make(np.zeros((1, 2)), device), make(x2, device)), np.zeros((1, 1)))


# -- errors ----------------------------------------------------------------------------------------------
def test_linalg_errors_name_the_function_and_the_shapes(device: Device) -> None:
    square = Tensor.ones([3, 3], device)
    with pytest.raises(
        ValueError, match=r"det: x must hold square matrices \[\.\.\., n, n\], got shape \[2, 3\]"
    ):
        linalg.det(Tensor.ones([2, 3], device))
    with pytest.raises(ValueError, match=r"lu: x must have rank >= 2"):
        linalg.lu(Tensor.ones([3], device))
    with pytest.raises(TypeError, match=r"qr: x must be a Float tensor"):
        linalg.qr(square.int())
    with pytest.raises(ValueError, match=r"lu: x must hold non-empty matrices, got shape \[2, 0\]"):
        linalg.lu(Tensor.ones([2, 0], device))
    with pytest.raises(TypeError, match=r"l2_norm: x must be a Float tensor"):
        linalg.l2_norm(square.int())
    with pytest.raises(TypeError, match=r"qr: reduced must be a bool"):
        linalg.qr(square, "complete")  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"matvec: matrix \[\.\.\., m, n\] and vector \[\.\.\., n\] must agree"
    ):
        linalg.matvec(square, Tensor.ones([4], device))
    with pytest.raises(ValueError, match=r"vector_norm: dim names a dim twice"):
        linalg.vector_norm(square, 2.0, (0, -2))
    with pytest.raises(TypeError, match=r"vector_norm: p must be a number"):
        linalg.vector_norm(square, "fro")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"cosine_similarity: eps must be a number >= 0"):
        linalg.cosine_similarity(square, square, eps=-1.0)
    with pytest.raises(TypeError, match=r"outer: y has dtype"):
        linalg.outer(Tensor.ones([2], device, DType.F32), Tensor.ones([2], device, DType.F64))
    with pytest.raises(TypeError, match=r"diag: x must be a Float tensor"):
        linalg.diag(square.bool())
