"""``Shape``: the dimensions of a tensor."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from typing import Any, NoReturn, SupportsIndex


class Shape(tuple[int, ...]):
    """The dimensions of a tensor: a tuple of non-negative ints.

    Example:
        >>> Shape(2, 3) == Shape([2, 3]) == (2, 3)
        True
        >>> Shape(2, 3).num_elements()
        6
    """

    __slots__ = ()

    def __new__(cls, *dims: int | Iterable[SupportsIndex]) -> Shape:
        values: tuple[Any, ...]
        if len(dims) == 1 and not isinstance(dims[0], int):
            values = tuple(dims[0])
        else:
            values = tuple(dims)
        try:
            checked = tuple(operator.index(d) for d in values)
        except TypeError:
            raise TypeError(f"a shape holds ints, got {values!r}") from None
        if any(d < 0 for d in checked):
            raise ValueError(f"a shape holds non-negative dimensions, got {list(checked)}")
        return super().__new__(cls, checked)

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self)

    def num_elements(self) -> int:
        """The product of the dimensions (1 for rank 0)."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"Shape({list(self)})"


def normalize_dim(op: str, dim: int, rank: int) -> int:
    """``dim`` as a non-negative index into ``rank`` dimensions (negative counts from the end).

    Raises:
        TypeError: ``dim`` is not an int (a bool or a float is refused).
        IndexError: ``dim`` is out of range.
    """
    if type(dim) is not int:
        dim = _dim_index(op, dim)
    if not -rank <= dim < rank:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor of rank {rank}")
    return dim + rank if dim < 0 else dim


def _dim_index(op: str, dim: object) -> int:
    if isinstance(dim, bool) or not hasattr(dim, "__index__"):
        raise TypeError(f"{op}: a dim is an int, got {dim!r} ({type(dim).__name__})")
    return operator.index(dim)


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of an element-wise op's result, by NumPy's rule: dims aligned from the right, each
    set of dims equal or 1; an operand of lower rank is taken as having leading dims of size 1.

    Raises:
        ValueError: the dims at one position are neither equal nor 1.
    """
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]):
        # the common case, two operands of one rank, without the alignment
        out = []
        for a, b in zip(*shapes):
            if a == b or b == 1:
                out.append(a)
            elif a == 1:
                out.append(b)
            else:
                _not_broadcasting(op, shapes)
        return tuple(out)
    rank = max(len(shape) for shape in shapes)
    aligned = [1] * rank
    for shape in shapes:
        offset = rank - len(shape)
        for i, size in enumerate(shape):
            current = aligned[offset + i]
            if size != current and size != 1:
                if current != 1:
                    _not_broadcasting(op, shapes)
                aligned[offset + i] = size
    return tuple(aligned)


def _not_broadcasting(op: str, shapes: tuple[tuple[int, ...], ...]) -> NoReturn:
    listed = [list(shape) for shape in shapes]
    named = ", ".join(map(str, listed[:-1])) + f" and {listed[-1]}"
    raise ValueError(
        f"{op}: shapes {named} do not broadcast: aligned from the right, dimensions must be equal or 1"
    )
