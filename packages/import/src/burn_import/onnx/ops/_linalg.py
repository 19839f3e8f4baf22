"""Matrix products: ``MatMul``, ``Gemm`` and ``Einsum`` (the integer and quantized ones are in ``_quant``)."""

from __future__ import annotations

import string

import numpy as np

from burn_backend import Kind, Tensor

from ._registry import Context, Value, register
from ._util import same_dtype

__all__ = ["matmul"]


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """NumPy's ``matmul``: 1-d operands gain a dim for the product and lose it after; batch dims
    broadcast."""
    squeeze_a = a.rank == 1
    squeeze_b = b.rank == 1
    if squeeze_a:
        a = a.unsqueeze_dim(0)
    if squeeze_b:
        b = b.unsqueeze_dim(1)
    if a.rank != b.rank:
        rank = max(a.rank, b.rank)
        a, b = a.unsqueeze(rank=rank), b.unsqueeze(rank=rank)
    dims_a, dims_b = a.dims(), b.dims()
    if 0 in dims_a or 0 in dims_b:
        batch = list(np.broadcast_shapes(tuple(dims_a[:-2]), tuple(dims_b[:-2])))
        out = Tensor.zeros([*batch, dims_a[-2], dims_b[-1]], a.device, a.dtype)
    elif a.kind is Kind.BOOL:
        out = a.int("i64").matmul(b.int("i64")).bool()
    elif a.rank > 2 and all(d == 1 for d in dims_b[:-2]):
        # a stack of rows times one matrix (a Linear layer on [batch, tokens, features]) is one GEMM
        # over all the rows: a batched product runs one smaller GEMM per batch entry, each splitting
        # over the BLAS threads and joining again (4x slower on two loaded cores)
        rows = a.reshape([-1, dims_a[-1]]).matmul(b.reshape(dims_b[-2:]))
        out = rows.reshape([*dims_a[:-1], dims_b[-1]])
    else:
        out = a.matmul(b)
    if squeeze_a:
        out = out.squeeze_dim(-2)
    if squeeze_b:
        out = out.squeeze_dim(-1)
    return out


@register("MatMul", host=lambda ctx, a, b: np.asarray(np.matmul(a, b)).astype(a.dtype))
def matmul_op(ctx: Context, a: Value, b: Value) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    return matmul(x, y)


@register("Gemm", attrs=("alpha", "beta", "transA", "transB"))
def gemm(ctx: Context, a: Value, b: Value, c: Value = None) -> Tensor:
    x, y = same_dtype(ctx, a, b)
    if int(ctx.attr("transA", 0)):
        x = x.transpose()
    if int(ctx.attr("transB", 0)):
        y = y.transpose()
    out = matmul(x, y)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if alpha != 1.0:
        out = out.mul_scalar(alpha)
    if c is not None:
        bias = ctx.tensor(c)
        if bias.dtype != out.dtype:
            bias = bias.cast(out.dtype)
        out = out.add(bias.mul_scalar(beta) if beta != 1.0 else bias)
    return out


# -- einsum ---------------------------------------------------------------------------------------
def _parse_einsum(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    equation = equation.replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    used = set(c for c in equation if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    ell_rank = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    ell = "".join(spare[:ell_rank])
    expanded = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            n = rank - len(term.replace("...", ""))
            term = term.replace("...", ell[ell_rank - n :])
        expanded.append(term)
    if "->" not in equation:
        letters = "".join(expanded)
        rhs = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return expanded, rhs


def _einsum_operand(t: Tensor, term: str, order: str) -> Tensor:
    """``t`` (indexed by ``term``) with its dims arranged as ``order``: repeated letters reduced to
    their diagonal, missing letters as size-1 dims."""
    while len(set(term)) < len(term):
        for i, c in enumerate(term):
            j = term.find(c, i + 1)
            if j > 0:
                size = t.dims()[i]
                eye = Tensor.eye(size, t.device, t.dtype if t.kind is Kind.FLOAT else "f64")
                shape = [1] * t.rank
                shape[i], shape[j] = size, size
                mask = eye.reshape(shape)
                product = t.mul(mask) if t.kind is Kind.FLOAT else t.float("f64").mul(mask)
                reduced = product.sum_dim(j).squeeze_dim(j)
                t = reduced if t.kind is Kind.FLOAT else reduced.int(t.dtype)
                term = term[:j] + term[j + 1 :]
                break
    perm = sorted(range(len(term)), key=lambda k: order.index(term[k]))
    t = t.permute(perm) if perm != list(range(len(term))) else t
    placed = "".join(term[k] for k in perm)
    shape = []
    it = iter(t.dims())
    for c in order:
        shape.append(next(it) if c in placed else 1)
    return t.reshape(shape)


@register("Einsum", attrs=("equation",))
def einsum(ctx: Context, *operands: Value) -> Tensor:
    tensors = [ctx.tensor(o) for o in operands]
    terms, out = _parse_einsum(str(ctx.attr("equation")), [t.rank for t in tensors])
    order = out + "".join(sorted(set("".join(terms)) - set(out)))
    arranged = [_einsum_operand(t, term, order) for t, term in zip(tensors, terms)]
    result = arranged[0]
    for other in arranged[1:]:
        result = result.mul(other)
    for k in range(len(order) - 1, len(out) - 1, -1):
        result = result.sum_dim(k)
    return result.reshape(result.dims()[: len(out)])
