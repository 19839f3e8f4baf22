"""Linear algebra on tensors, as Burn's ``burn::linalg``: determinants, LU and QR decompositions,
diagonals and traces, outer and matrix-vector products, vector norms and cosine similarity.

Every function is composed from the public ``Tensor`` API, so it runs on every backend and
differentiates on autodiff ones. Matrices are the last two dims; the dims before them are a batch.
Reductions keep their dim (size 1) as Burn's do. Half-precision inputs (f16, bf16) are computed in f32
and rounded once at the end, as Burn does.

Example:
    >>> from burn_backend import Tensor, linalg
    >>> a = Tensor.from_data([[3.0, 2.0], [4.0, 6.0]])
    >>> linalg.det(a).tolist()
    [10.0]
    >>> linalg.vector_norm(Tensor.from_data([3.0, 4.0]), 2.0, 0).tolist()
    [5.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._dtype import DType, Kind
from ._shape import normalize_dim
from ._tensor import Tensor
from .module import _same, _tensor

__all__ = [
    # decompositions
    "det",
    "lu",
    "qr",
    # matrices and vectors
    "diag",
    "trace",
    "outer",
    "matvec",
    # norms and similarity
    "vector_norm",
    "l0_norm",
    "l1_norm",
    "l2_norm",
    "lp_norm",
    "max_abs_norm",
    "min_abs_norm",
    "cosine_similarity",
]

_HALF = (DType.F16, DType.BF16)


# -- helpers -----------------------------------------------------------------------------------------
def _numeric(op: str, name: str, value: object) -> Tensor:
    """``value`` as a Float or Int tensor (Bool has no arithmetic)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if value.kind is Kind.BOOL:
        return _tensor(op, name, value, Kind.FLOAT)  # raises, naming the kinds
    return value


def _matrices(op: str, x: object, *, square: bool = False) -> Tensor:
    """``x`` as a Float tensor ``[..., rows, cols]`` (square where asked)."""
    tensor = _tensor(op, "x", x, Kind.FLOAT)
    if tensor.rank < 2:
        raise ValueError(f"{op}: x must have rank >= 2 ([..., rows, cols]), got shape {tensor.dims()}")
    rows, cols = tensor.dims()[-2:]
    if square and rows != cols:
        raise ValueError(f"{op}: x must hold square matrices [..., n, n], got shape {tensor.dims()}")
    return tensor


def _widen(x: Tensor) -> Tensor:
    return x.cast(DType.F32) if x.dtype in _HALF else x


def _narrow(x: Tensor, dtype: DType) -> Tensor:
    return x.cast(dtype) if x.dtype is not dtype else x


def _batched(x: Tensor) -> tuple[Tensor, list[int]]:
    """``x`` ``[..., r, c]`` as ``[batch, r, c]``, and the batch dims."""
    dims = x.dims()
    return x.reshape([math.prod(dims[:-2]), dims[-2], dims[-1]]), dims[:-2]


def _safe(x: Tensor) -> Tensor:
    """``x`` with its zeros replaced by ones: a divisor whose zero quotients stay zero (no NaN)."""
    return x.mask_fill(x.equal_elem(0.0), 1.0)


def _l2(x: Tensor, dims: int | Sequence[int]) -> Tensor:
    """The Euclidean norm along ``dims`` (kept), whose gradient at a zero vector is zero (as PyTorch's),
    not the ``0 / 0`` of ``sqrt``'s."""
    squares = _sum_dims(x.square(), [dims] if isinstance(dims, int) else dims)
    zero = squares.equal_elem(0.0)
    return squares.mask_fill(zero, 1.0).sqrt().mask_fill(zero, 0.0)


def _rows(x: Tensor, start: int, stop: int | None = None) -> Tensor:
    """Rows ``start:stop`` of the matrices ``x`` ``[batch, m, n]``."""
    return x.slice([slice(None), slice(start, stop)])


def _cols(x: Tensor, start: int, stop: int | None = None) -> Tensor:
    """Columns ``start:stop`` of the matrices ``x`` ``[batch, m, n]``."""
    return x.slice([slice(None), slice(None), slice(start, stop)])


def _pivot_swap(w: Tensor, column: int) -> tuple[Tensor, Tensor]:
    """Row ``0`` of ``w`` ``[batch, m, c]`` swapped with the row of largest magnitude in ``column`` (the
    first of equal ones): the swapped tensor and the pivot's row index ``[batch, 1, 1]`` (Int)."""
    batch, m, c = w.dims()
    pivot = _cols(w, column, column + 1).abs().argmax(1)
    rows = Tensor.arange(m, device=w.device, dtype=pivot.dtype).reshape([1, m, 1])
    # row 0 takes the pivot row, the pivot row takes row 0, the rest stay
    index = rows.mask_where(rows.equal(pivot), pivot.zeros_like()).mask_where(rows.equal_elem(0), pivot)
    return w.gather(1, index.expand([batch, m, c])), pivot


# -- decompositions ----------------------------------------------------------------------------------
def det(x: Tensor) -> Tensor:
    """The determinant of each square matrix of ``x``, by LU decomposition with partial pivoting
    composed from tensor ops (differentiable; exact zero for a singular matrix).

    Args:
        x: a Float tensor ``[..., n, n]``.

    Returns:
        The determinants, shape ``[...]`` (the batch dims); ``[1]`` for a single matrix, as ``sum()``.

    Example:
        >>> det(Tensor.from_data([[[2.0, 0.0], [0.0, 3.0]], [[0.0, 1.0], [1.0, 0.0]]])).tolist()
        [6.0, -1.0]
    """
    op = "det"
    x = _matrices(op, x, square=True)
    dtype = x.dtype
    w, batch_dims = _batched(_widen(x))
    batch, n, _ = w.dims()
    result = Tensor.ones([batch, 1, 1], w.device, w.dtype)  # an empty matrix has determinant 1
    for _ in range(n):
        w, pivot_row = _pivot_swap(w, 0)
        pivot = _cols(_rows(w, 0, 1), 0, 1)
        result = result * pivot
        result = result.mask_where(pivot_row.not_equal_elem(0), result.neg())
        # the Schur complement of the pivot: the trailing matrix of the next step
        rest = _rows(w, 1)
        factors = _cols(rest, 0, 1) / _safe(pivot)
        w = _cols(rest, 1) - factors * _cols(_rows(w, 0, 1), 1)
    return _narrow(result.reshape(batch_dims or [1]), dtype)


def lu(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The LU decomposition with partial pivoting of each matrix of ``x`` (square or rectangular):
    ``x = P @ L @ U``, as Burn's ``linalg::lu`` and ``torch.linalg.lu``.

    At each step the row of largest magnitude in the current column becomes the pivot (the first of
    equal ones). A zero column (a singular matrix) gives zero multipliers, not NaN.

    Args:
        x: a Float tensor ``[..., m, n]``.

    Returns:
        ``(P, L, U)``: the permutation matrices ``[..., m, m]`` (in ``x``'s dtype), the unit lower
        triangular ``[..., m, k]`` and the upper triangular ``[..., k, n]``, with ``k = min(m, n)``.

    Example:
        >>> p, l, u = lu(Tensor.from_data([[1.0, 2.0], [4.0, 4.0]]))
        >>> p.tolist(), l.tolist(), u.tolist()
        ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.25, 1.0]], [[4.0, 4.0], [0.0, 1.0]])
    """
    op = "lu"
    x = _matrices(op, x)
    dtype = x.dtype
    w, batch_dims = _batched(_widen(x))
    batch, m, n = w.dims()
    if m == 0 or n == 0:
        raise ValueError(f"{op}: x must hold non-empty matrices, got shape {x.dims()}")
    k_max = min(m, n)
    # the row of x each working row came from, carried as a last column through the swaps
    origin = Tensor.arange(m, device=w.device).float(w.dtype).reshape([1, m, 1])
    w = Tensor.cat([w, origin.expand([batch, m, 1])], 2)
    l_rows: list[Tensor] = []
    u_rows: list[Tensor] = []
    perm: list[Tensor] = []
    for k in range(k_max):
        # w: the rows not yet final, [batch, m - k, n + 1]: k multipliers, the trailing matrix, the origin
        w, _ = _pivot_swap(w, k)
        top = _rows(w, 0, 1)
        l_rows.append(
            Tensor.cat(
                [_cols(top, 0, k), _cols(top, 0, 1).ones_like(), _cols(top, k + 1, k_max).zeros_like()], 2
            )
        )
        u_rows.append(Tensor.cat([_cols(top, 0, k).zeros_like(), _cols(top, k, n)], 2))
        perm.append(_cols(top, n))
        rest = _rows(w, 1)
        factors = _cols(rest, k, k + 1) / _safe(_cols(top, k, k + 1))
        trailing = _cols(rest, k + 1, n) - factors * _cols(top, k + 1, n)
        w = Tensor.cat([_cols(rest, 0, k), factors, trailing, _cols(rest, n)], 2)
    if m > k_max:  # a tall matrix: the rows left hold multipliers only
        l_rows.append(_cols(w, 0, k_max))
        perm.append(_cols(w, n))
    lower = Tensor.cat(l_rows, 1)
    upper = Tensor.cat(u_rows, 1)
    rows = Tensor.cat(perm, 1).detach().reshape([batch, m]).round().int()
    # P[j, i] = 1 where row i of L @ U is row j of x
    permutation = rows.one_hot(m).float(w.dtype).swap_dims(1, 2)
    return (
        _narrow(permutation.reshape([*batch_dims, m, m]), dtype),
        _narrow(lower.reshape([*batch_dims, m, k_max]), dtype),
        _narrow(upper.reshape([*batch_dims, k_max, n]), dtype),
    )


def qr(x: Tensor, reduced: bool = True) -> tuple[Tensor, Tensor]:
    """The QR decomposition of each matrix of ``x`` by Householder reflections: ``x = Q @ R`` with
    orthonormal columns in ``Q`` and an upper triangular ``R``, as Burn's ``linalg::qr`` and
    ``torch.linalg.qr`` (LAPACK's sign convention: ``R[j, j] = -sign(x_j[j]) * |x_j|`` for the column
    ``x_j`` being reflected, no reflection of a last single-row column).

    Args:
        x: a Float tensor ``[..., m, n]``.
        reduced: the reduced decomposition (``Q`` ``[..., m, k]``, ``R`` ``[..., k, n]``, ``k = min(m,
            n)``, PyTorch's ``mode="reduced"``) or the complete one (``Q`` ``[..., m, m]``, ``R``
            ``[..., m, n]``, ``mode="complete"``); the same where ``m <= n``.

    Returns:
        ``(Q, R)``.

    Example:
        >>> q, r = qr(Tensor.from_data([[3.0, 0.0], [4.0, 1.0]]))
        >>> [[round(value, 4) for value in row] for row in r.tolist()]
        [[-5.0, -0.8], [0.0, 0.6]]
    """
    op = "qr"
    x = _matrices(op, x)
    if not isinstance(reduced, bool):
        raise TypeError(f"{op}: reduced must be a bool, got {reduced!r}")
    dtype = x.dtype
    r, batch_dims = _batched(_widen(x))
    batch, m, n = r.dims()
    if m == 0 or n == 0:
        raise ValueError(f"{op}: x must hold non-empty matrices, got shape {x.dims()}")
    q = Tensor.eye(m, r.device, r.dtype).reshape([1, m, m]).expand([batch, m, m])
    rows = Tensor.arange(m, device=r.device).reshape([1, m, 1])
    for k in range(min(m - 1, n)):
        column = _cols(r, k, k + 1)  # [batch, m, 1]
        below = column.mask_fill(rows.lower_elem(k), 0.0)
        head = _rows(column, k, k + 1)  # [batch, 1, 1]
        sign = head.sign().mask_fill(head.equal_elem(0.0), 1.0)
        alpha = sign * _l2(below, 1)  # the reflected column is -alpha * e_k
        v = below + alpha * rows.equal_elem(k).float(r.dtype)
        v = v / _safe(_l2(v, 1))  # a zero column reflects nothing (v = 0)
        r = r - v * (v.swap_dims(1, 2).matmul(r) * 2.0)
        q = q - q.matmul(v).matmul(v.swap_dims(1, 2)) * 2.0
    k_max = min(m, n) if reduced else m
    q = _cols(q, 0, k_max)
    r = _rows(r, 0, k_max).triu(0)
    return (
        _narrow(q.reshape([*batch_dims, m, k_max]), dtype),
        _narrow(r.reshape([*batch_dims, k_max, n]), dtype),
    )


# -- matrices and vectors ----------------------------------------------------------------------------
def diag(x: Tensor) -> Tensor:
    """The main diagonal of each matrix of ``x``, as Burn's ``linalg::diag`` (``torch.diagonal(x, 0,
    -2, -1)``).

    Args:
        x: a Float or Int tensor ``[..., m, n]``.

    Returns:
        ``[..., min(m, n)]`` of ``x``'s kind and dtype.

    Example:
        >>> diag(Tensor.from_data([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).tolist()
        [1.0, 5.0]
    """
    op = "diag"
    x = _numeric(op, "x", x)
    if x.rank < 2:
        raise ValueError(f"{op}: x must have rank >= 2 ([..., rows, cols]), got shape {x.dims()}")
    dims = x.dims()
    m, n = dims[-2:]
    size = min(m, n)
    if size == 0:
        return x.reshape([*dims[:-2], m * n]).slice([slice(None)] * (x.rank - 2) + [slice(0, 0)])
    flat = x.reshape([*dims[:-2], m * n])
    # entry (i, i) of the flattened matrix is at i * (n + 1)
    return flat.slice([slice(None)] * (x.rank - 2) + [slice(0, (size - 1) * (n + 1) + 1, n + 1)])


def trace(x: Tensor) -> Tensor:
    """The sum of the main diagonal of each matrix of ``x``, as Burn's ``linalg::trace``.

    Args:
        x: a Float or Int tensor ``[..., m, n]`` (rectangular: ``min(m, n)`` diagonal entries).

    Returns:
        ``[..., 1]``: rank one less than ``x``, the last dim kept as Burn's reductions keep it.

    Example:
        >>> trace(Tensor.from_data([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [5.0]
    """
    return diag(x).sum_dim(-1)


def outer(x: Tensor, y: Tensor) -> Tensor:
    """The outer product of the vectors ``x`` and ``y`` (along their last dim), batched over the leading
    dims (which broadcast): ``out[..., i, j] = x[..., i] * y[..., j]``, as Burn's ``linalg::outer``
    (``torch.outer`` for 1-d inputs).

    Args:
        x: a Float or Int tensor ``[..., m]``.
        y: a tensor ``[..., n]`` of ``x``'s kind, dtype and device.

    Returns:
        ``[..., m, n]``.

    Example:
        >>> outer(Tensor.from_data([1.0, 2.0]), Tensor.from_data([3.0, 4.0, 5.0])).tolist()
        [[3.0, 4.0, 5.0], [6.0, 8.0, 10.0]]
    """
    op = "outer"
    x = _numeric(op, "x", x)
    y = _numeric(op, "y", y)
    _same_kind(op, x, y)
    if x.rank < 1 or y.rank < 1:
        raise ValueError(f"{op}: x and y must have rank >= 1 (vectors), got shapes {x.dims()} and {y.dims()}")
    return x.unsqueeze_dim(-1) * y.unsqueeze_dim(-2)


def matvec(matrix: Tensor, vector: Tensor) -> Tensor:
    """The product of each matrix with each vector, batched over the leading dims (which broadcast):
    ``out[..., i] = sum_j matrix[..., i, j] * vector[..., j]``, as Burn's ``linalg::matvec``
    (``torch.matmul`` of a matrix and a vector).

    Args:
        matrix: a Float tensor ``[..., m, n]``.
        vector: a Float tensor ``[..., n]`` of ``matrix``'s dtype and device.

    Returns:
        ``[..., m]``.

    Example:
        >>> matvec(Tensor.from_data([[1.0, 2.0], [3.0, 4.0]]), Tensor.from_data([1.0, 1.0])).tolist()
        [3.0, 7.0]
    """
    op = "matvec"
    matrix = _tensor(op, "matrix", matrix, Kind.FLOAT)
    vector = _tensor(op, "vector", vector, Kind.FLOAT)
    _same(op, matrix, "vector", vector, "matrix")
    if matrix.rank < 2 or vector.rank < 1:
        raise ValueError(
            f"{op}: matrix must have rank >= 2 ([..., m, n]) and vector rank >= 1 ([..., n]), got shapes "
            f"{matrix.dims()} and {vector.dims()}"
        )
    if matrix.dims()[-1] != vector.dims()[-1]:
        raise ValueError(
            f"{op}: matrix [..., m, n] and vector [..., n] must agree on n, got shapes {matrix.dims()} "
            f"and {vector.dims()}"
        )
    return matrix.matmul(vector.unsqueeze_dim(-1)).squeeze_dim(-1)


def _same_kind(op: str, x: Tensor, y: Tensor) -> None:
    if y.dtype is not x.dtype:
        raise TypeError(f"{op}: y has dtype {y.dtype}, x has {x.dtype}; cast one with .cast(...)")
    x._check_device_of(op, y)


# -- norms and similarity ----------------------------------------------------------------------------
def _dims(op: str, dim: int | Sequence[int], rank: int) -> list[int]:
    items = [dim] if isinstance(dim, int) else list(dim)
    if any(isinstance(item, bool) or not isinstance(item, int) for item in items):
        raise TypeError(f"{op}: dim must be an int or a sequence of ints, got {dim!r}")
    dims = [normalize_dim(op, item, rank) for item in items]
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim names a dim twice, got {dim!r}")
    return dims


def _sum_dims(x: Tensor, dims: Sequence[int]) -> Tensor:
    for dim in dims:
        x = x.sum_dim(dim)
    return x


def vector_norm(x: Tensor, p: float = 2.0, dim: int | Sequence[int] = -1) -> Tensor:
    """The ``p``-norm of the vectors of ``x`` along ``dim`` (kept, size 1), as Burn's
    ``linalg::vector_norm`` (and ``torch.linalg.vector_norm(x, p, dim, keepdim=True)``):

    - ``p = 2``: ``sqrt(sum |x|^2)`` (its gradient at a zero vector is zero, as PyTorch's);
    - ``p = 1``: ``sum |x|``; ``p = 0``: the number of non-zero values (no gradient);
    - ``p = inf`` / ``-inf``: ``max |x|`` / ``min |x|``;
    - any other ``p``: ``(sum |x|^p)^(1 / p)``.

    Args:
        x: a Float tensor.
        p: the order of the norm.
        dim: the dim, or several dims, to reduce (negative counts from the end).

    Returns:
        A tensor of ``x``'s rank and dtype with size 1 along the reduced dims.

    Example:
        >>> vector_norm(Tensor.from_data([[3.0, -4.0]]), float("inf"), 1).tolist()
        [[4.0]]
    """
    return _vector_norm("vector_norm", x, p, dim)


def _vector_norm(op: str, x: Tensor, p: float, dim: int | Sequence[int]) -> Tensor:
    x = _tensor(op, "x", x, Kind.FLOAT)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or math.isnan(p):
        raise TypeError(f"{op}: p must be a number (not NaN), got {p!r}")
    if x.rank < 1:
        raise ValueError(f"{op}: x must have rank >= 1, got a scalar")
    dims = _dims(op, dim, x.rank)
    p = float(p)
    if p == 2.0:
        return _l2(x, dims)
    magnitude = x.abs()
    if p == 1.0:
        return _sum_dims(magnitude, dims)
    if p == 0.0:
        return _sum_dims(magnitude.sign(), dims).detach()
    if math.isinf(p):
        for d in dims:
            magnitude = magnitude.max_dim(d) if p > 0 else magnitude.min_dim(d)
        return magnitude
    return _sum_dims(magnitude.powf_scalar(p), dims).powf_scalar(1.0 / p)


def l0_norm(x: Tensor, dim: int | Sequence[int] = -1) -> Tensor:
    """The number of non-zero values along ``dim`` (kept), as a Float tensor: ``vector_norm(x, 0, dim)``
    (Burn's ``linalg::l0_norm``)."""
    return _vector_norm("l0_norm", x, 0.0, dim)


def l1_norm(x: Tensor, dim: int | Sequence[int] = -1) -> Tensor:
    """``sum |x|`` along ``dim`` (kept): ``vector_norm(x, 1, dim)`` (Burn's ``linalg::l1_norm``)."""
    return _vector_norm("l1_norm", x, 1.0, dim)


def l2_norm(x: Tensor, dim: int | Sequence[int] = -1) -> Tensor:
    """The Euclidean norm along ``dim`` (kept): ``vector_norm(x, 2, dim)`` (Burn's ``linalg::l2_norm``).

    Example:
        >>> l2_norm(Tensor.from_data([[3.0, 4.0]])).tolist()
        [[5.0]]
    """
    return _vector_norm("l2_norm", x, 2.0, dim)


def lp_norm(x: Tensor, p: float, dim: int | Sequence[int] = -1) -> Tensor:
    """``(sum |x|^p)^(1 / p)`` along ``dim`` (kept): ``vector_norm(x, p, dim)`` (Burn's
    ``linalg::lp_norm``)."""
    return _vector_norm("lp_norm", x, p, dim)


def max_abs_norm(x: Tensor, dim: int | Sequence[int] = -1) -> Tensor:
    """``max |x|`` along ``dim`` (kept): ``vector_norm(x, inf, dim)`` (Burn's ``linalg::max_abs_norm``)."""
    return _vector_norm("max_abs_norm", x, math.inf, dim)


def min_abs_norm(x: Tensor, dim: int | Sequence[int] = -1) -> Tensor:
    """``min |x|`` along ``dim`` (kept): ``vector_norm(x, -inf, dim)`` (Burn's ``linalg::min_abs_norm``)."""
    return _vector_norm("min_abs_norm", x, -math.inf, dim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = -1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between the vectors of ``x1`` and ``x2`` along ``dim`` (kept, size 1):
    ``sum(x1 * x2) / (max(|x1|, eps) * max(|x2|, eps))``, as Burn's ``linalg::cosine_similarity`` and
    ``torch.nn.functional.cosine_similarity`` (which clamps each norm).

    Args:
        x1: a Float tensor.
        x2: a Float tensor of ``x1``'s dtype and device; the two shapes broadcast.
        dim: the dim of the vectors (negative counts from the end).
        eps: the smallest norm divided by (>= 0), which keeps zero vectors finite.

    Returns:
        The broadcast shape with size 1 along ``dim``.

    Example:
        >>> x1 = Tensor.from_data([[1.0, 0.0], [0.0, 3.0]])
        >>> cosine_similarity(x1, Tensor.from_data([[2.0, 0.0], [4.0, 0.0]])).tolist()
        [[1.0], [0.0]]
    """
    op = "cosine_similarity"
    x1 = _tensor(op, "x1", x1, Kind.FLOAT)
    x2 = _tensor(op, "x2", x2, Kind.FLOAT)
    _same(op, x1, "x2", x2, "x1")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0.0:
        raise ValueError(f"{op}: eps must be a number >= 0, got {eps!r}")
    rank = max(x1.rank, x2.rank)
    if rank < 1:
        raise ValueError(f"{op}: x1 and x2 must have rank >= 1, got scalars")
    dim = normalize_dim(op, dim, rank)
    product = x1 * x2
    shape = product.dims()
    # the norms are of the broadcast vectors, as PyTorch's
    x1, x2 = x1.expand(shape), x2.expand(shape)
    return product.sum_dim(dim) / (_l2(x1, dim).clamp_min(eps) * _l2(x2, dim).clamp_min(eps))
