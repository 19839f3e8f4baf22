"""``Slice``: Burn's slice of one dimension, and the canonical slices that backends receive."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Slice:
    """A range of one dimension with Burn's semantics: ``start`` to ``end`` (exclusive) by ``step``.

    Negative ``start``/``end`` count from the end of the dimension; ``end=None`` means to the end. A
    negative ``step`` walks the same range backwards: ``Slice(0, 5, -1)`` selects 4, 3, 2, 1, 0 (unlike
    Python's ``slice``, whose bounds swap roles when the step is negative).

    Example:
        >>> Slice(1, None).indices(4)
        slice(1, 4, 1)
        >>> Slice(0, 4, -2).indices(4)
        slice(3, None, -2)
    """

    start: int = 0
    end: int | None = None
    step: int = 1

    def indices(self, size: int) -> slice:
        """The canonical Python slice selecting this range from a dimension of ``size`` elements."""
        if self.step == 0:
            raise ValueError("slice: step must not be zero")
        start = _clamp(self.start, size)
        end = size if self.end is None else _clamp(self.end, size)
        end = max(end, start)
        if self.step > 0:
            return slice(start, end, self.step)
        count = (end - start + (-self.step) - 1) // (-self.step)
        if count == 0:
            return slice(0, 0, 1)
        first = end - 1
        last = first + self.step * (count - 1)
        return slice(first, last - 1 if last >= 1 else None, self.step)


def _clamp(index: int, size: int) -> int:
    if index < 0:
        index += size
    return min(max(index, 0), size)


SliceLike = Slice | slice | int | range
"""What slicing APIs take per dimension: a Slice (Burn semantics), a Python slice or range (Python
semantics), or an int (one index, keeping the dimension)."""


_RANGE_FORMS = "a range is a Slice, a slice, a range or an int"


def _hint(item: object) -> str:
    """The spellings of a tuple ``(start, end)`` that slicing takes."""
    return f", e.g. slice{item!r} or range{item!r}" if isinstance(item, tuple) else ""


def canonical_slices(op: str, shape: Sequence[int], ranges: Sequence[SliceLike]) -> tuple[slice, ...]:
    """One canonical Python slice per dimension (missing trailing dims are taken whole).

    Canonical: ``start`` and ``stop`` are in range and non-negative (``stop`` may be ``None`` for a
    negative step reaching index 0), so a backend can apply them as they are.
    """
    if len(ranges) > len(shape):
        raise IndexError(f"{op}: {len(ranges)} ranges given for a tensor of rank {len(shape)} {list(shape)}")
    out = []
    for dim, (size, item) in enumerate(zip(shape, ranges)):
        if isinstance(item, Slice):
            out.append(item.indices(size))
        elif isinstance(item, (slice, range)):
            if item.step == 0:
                raise ValueError(f"{op}: step must not be zero (dim {dim})")
            r = range(size)[slice(item.start, item.stop, item.step)]
            out.append(slice(r.start, None if r.stop < 0 else r.stop, r.step) if len(r) else slice(0, 0, 1))
        else:
            if isinstance(item, bool) or not hasattr(item, "__index__"):
                raise TypeError(
                    f"{op}: range {dim} is {item!r} ({type(item).__name__}); {_RANGE_FORMS}{_hint(item)}"
                )
            index = operator.index(item)
            if not -size <= index < size:
                raise IndexError(f"{op}: index {index} is out of range for dim {dim} of size {size}")
            index = index + size if index < 0 else index
            out.append(slice(index, index + 1, 1))
    out.extend(slice(0, size, 1) for size in shape[len(ranges) :])
    return tuple(out)


def slice_length(canonical: slice) -> int:
    """The number of elements a canonical slice selects."""
    start: int = canonical.start
    stop: int | None = canonical.stop
    step: int = canonical.step
    if step > 0:
        assert stop is not None
        return max(0, (stop - start + step - 1) // step)
    stop = -1 if stop is None else stop
    return max(0, (start - stop + (-step) - 1) // (-step))
