"""``Shape``: the dimensions of a tensor."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from typing import Any, SupportsIndex


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
    """``dim`` as a non-negative index into ``rank`` dimensions (negative counts from the end)."""
    if not -rank <= dim < rank:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor of rank {rank}")
    return dim + rank if dim < 0 else dim


def broadcast_shapes(op: str, lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of a binary op's result. Burn's rule: equal ranks, each pair of dims equal or one of 1.

    Raises:
        ValueError: the ranks differ, or a pair of dims is neither equal nor 1.
    """
    if len(lhs) != len(rhs):
        raise ValueError(
            f"{op}: shapes {list(lhs)} and {list(rhs)} have different ranks; operands must have the same "
            f"rank (use unsqueeze or reshape), and only dimensions of size 1 broadcast"
        )
    out = []
    for a, b in zip(lhs, rhs):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise ValueError(
                f"{op}: shapes {list(lhs)} and {list(rhs)} do not broadcast: dimensions must be equal or 1"
            )
    return tuple(out)
