"""``einsum``: Einstein summation over tensors, composed of diagonal, sum, permute, reshape and matmul,
so that every backend has it, with gradients."""

from __future__ import annotations

import math
import string
from typing import TYPE_CHECKING

from ._dtype import Kind
from ._tensor_base import TensorBase

if TYPE_CHECKING:
    from ._tensor import Tensor

_LETTERS = frozenset(string.ascii_letters)


class _Operand:
    """A tensor and the label of each of its dims."""

    __slots__ = ("labels", "tensor")

    def __init__(self, tensor: Tensor, labels: list[str]) -> None:
        self.tensor = tensor
        self.labels = labels


def _parse(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand and of the output; ``...`` becomes labels of its own (digits, which no
    user label can be), right-aligned across operands as broadcasting aligns dims."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a str, got {type(equation).__name__}")
    spec = equation.replace(" ", "")
    if spec.count("->") > 1:
        raise ValueError(f"einsum: at most one '->' in {equation!r}")
    left, arrow, right = spec.partition("->")
    terms = left.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: {equation!r} names {len(terms)} operands, got {len(ranks)} tensors")
    ellipsis_rank = 0
    parsed: list[tuple[list[str], bool]] = []
    for term, rank in zip(terms, ranks):
        has_ellipsis = "..." in term
        letters = term.replace("...", "", 1)
        bad = [c for c in letters if c not in _LETTERS]
        if bad or term.count("...") > 1:
            raise ValueError(f"einsum: {term!r} in {equation!r}: labels are letters, with one '...' at most")
        if len(letters) > rank or (not has_ellipsis and len(letters) != rank):
            raise ValueError(
                f"einsum: {term!r} labels {len(letters)} dims of an operand of rank {rank} in {equation!r}"
            )
        if has_ellipsis:
            ellipsis_rank = max(ellipsis_rank, rank - len(letters))
        parsed.append((list(term), has_ellipsis))
    broadcast = [str(i) for i in range(ellipsis_rank)]

    def expand(term: str, rank: int | None) -> list[str]:
        before, dots, after = term.partition("...")
        if not dots:
            return list(term)
        count = ellipsis_rank if rank is None else rank - len(before) - len(after)
        return [*before, *broadcast[ellipsis_rank - count :], *after]

    inputs = [expand(term, rank) for term, rank in zip(terms, ranks)]
    if arrow:
        output = expand(right, None)
        if "..." not in right and ellipsis_rank and any("..." in t for t in terms):
            raise ValueError(f"einsum: {equation!r}: the output must keep '...' when the operands have it")
        if any(c not in _LETTERS for c in right.replace("...", "", 1)) or right.count("...") > 1:
            raise ValueError(f"einsum: {right!r} in {equation!r}: labels are letters, with one '...' at most")
        if len(set(output)) != len(output):
            raise ValueError(f"einsum: {right!r} repeats a label in {equation!r}")
        known = {label for labels in inputs for label in labels}
        missing = [label for label in output if label not in known]
        if missing:
            raise ValueError(f"einsum: output labels {missing} appear in no operand of {equation!r}")
    else:  # NumPy's implicit output: the broadcast dims, then labels seen once, in alphabetical order
        counts: dict[str, int] = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        output = broadcast + sorted(c for c, n in counts.items() if n == 1 and c in _LETTERS)
    return inputs, output


def _take_diagonals(operand: _Operand) -> None:
    """Repeated labels of one operand (``ii``) reduced to their diagonal."""
    labels = operand.labels
    for label in dict.fromkeys(labels):
        while labels.count(label) > 1:
            first = labels.index(label)
            second = labels.index(label, first + 1)
            size_a, size_b = operand.tensor.dims()[first], operand.tensor.dims()[second]
            if size_a != size_b:
                raise ValueError(f"einsum: label {label!r} has sizes {size_a} and {size_b} in one operand")
            operand.tensor = operand.tensor.diagonal(0, first, second)
            labels = [x for i, x in enumerate(labels) if i not in (first, second)] + [label]
    operand.labels = labels


def _sum_out(operand: _Operand, keep: set[str]) -> None:
    """Labels of this operand that no other operand nor the output needs, summed away."""
    dims = [i for i, label in enumerate(operand.labels) if label not in keep]
    if dims:
        operand.tensor = operand.tensor.sum_dims(dims).squeeze_dims(dims)
        operand.labels = [label for label in operand.labels if label in keep]


def _arrange(operand: _Operand, order: list[str], sizes: dict[str, int]) -> Tensor:
    """The operand's dims in ``order``, dims of size 1 stretched to the size of their label."""
    tensor = operand.tensor.permute([operand.labels.index(label) for label in order])
    target = [sizes[label] for label in order]
    return tensor if tensor.dims() == target else tensor.expand(target)


def _contract(a: _Operand, b: _Operand, keep: set[str], sizes: dict[str, int]) -> _Operand:
    """The product of two operands as one batched matmul: shared labels that ``keep`` needs are batch
    dims, shared ones it does not are summed."""
    shared = [label for label in a.labels if label in b.labels]
    batch = [label for label in shared if label in keep]
    summed = [label for label in shared if label not in keep]
    only_a = [label for label in a.labels if label not in shared]
    only_b = [label for label in b.labels if label not in shared]
    left = _arrange(a, batch + only_a + summed, sizes)
    right = _arrange(b, batch + summed + only_b, sizes)
    count = math.prod(sizes[label] for label in batch)
    rows = math.prod(sizes[label] for label in only_a)
    inner = math.prod(sizes[label] for label in summed)
    cols = math.prod(sizes[label] for label in only_b)
    product = left.reshape([count, rows, inner]).matmul(right.reshape([count, inner, cols]))
    labels = batch + only_a + only_b
    return _Operand(product.reshape([sizes[label] for label in labels]), labels)


def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Einstein summation (``torch.einsum``, ``np.einsum``): each operand's dims are labelled by a
    letter; labels shared between operands multiply, labels missing from the output are summed.

    ``"ij,jk->ik"`` is a matrix product, ``"bij,bjk->bik"`` a batched one, ``"ij->ji"`` a transpose,
    ``"ii->"`` a trace, ``"ii->i"`` a diagonal, ``"i,j->ij"`` an outer product, ``"...ij,...jk"`` a
    product over any leading dims (which broadcast). Without ``->`` the output is NumPy's: the ``...``
    dims, then the labels seen once, in alphabetical order. Operands are Float or Int tensors of one
    dtype and device; they are combined left to right, each pair as one (batched) matmul.

    Raises:
        ValueError: a malformed equation, a label count that differs from an operand's rank, or a label
            of two different sizes (other than 1, which broadcasts).

    Example:
        >>> a, b = Tensor.ones([2, 3]), Tensor.ones([3, 4])
        >>> Tensor.einsum("ij,jk->ik", a, b).dims()
        [2, 4]
    """
    if not operands:
        raise ValueError("einsum: expected at least one tensor")
    for tensor in operands:
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"einsum: operands must be Tensors, got {type(tensor).__name__}")
        tensor._require_kind("einsum", Kind.FLOAT, Kind.INT)
    for other in operands[1:]:
        operands[0]._check_other("einsum", other)
    inputs, output = _parse(equation, [t.rank for t in operands])
    sizes: dict[str, int] = {}
    for tensor, labels in zip(operands, inputs):
        for label, size in zip(labels, tensor.dims()):
            known = sizes.get(label, 1)
            if size != known and 1 not in (size, known):
                raise ValueError(
                    f"einsum: label {label!r} has sizes {known} and {size} in {equation!r} (operand shapes "
                    f"{[t.dims() for t in operands]})"
                )
            sizes[label] = max(known, size)
    pending = [_Operand(tensor, labels) for tensor, labels in zip(operands, inputs)]
    for operand in pending:
        _take_diagonals(operand)
    result = pending[0]
    for position in range(len(pending)):
        later = {label for operand in pending[position + 1 :] for label in operand.labels}
        keep = later | set(output)
        if position == 0:
            _sum_out(result, keep)
            continue
        operand = pending[position]
        _sum_out(operand, keep | set(result.labels))
        result = _contract(result, operand, keep, sizes)
    _sum_out(result, set(output))
    return _arrange(result, output, sizes)
