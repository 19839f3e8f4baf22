"""Categorical sampling (``Tensor.multinomial``), written once over the Tensor API's own ops (running
sums, uniform draws, comparisons, logarithms, top-k), so that every backend has it: NdArray, Cuda, Fusion
and Autodiff (no gradient: the result is Int)."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from ._dtype import DType, Kind

if TYPE_CHECKING:
    from ._tensor import Tensor

# the draws with replacement compare each draw with every running sum of its row: at most this many
# elements at once (samples are taken in chunks past it)
_CHUNK_ELEMENTS = 1 << 22


def multinomial(weights: Tensor, num_samples: int, replacement: bool) -> Tensor:
    """``weights.multinomial(num_samples, replacement)``; see ``Tensor.multinomial``."""
    weights._require_kind("multinomial", Kind.FLOAT)
    dims = weights.dims()
    if len(dims) not in (1, 2):
        raise ValueError(
            f"multinomial: expected weights of rank 1 or 2 (the categories along the last dim), got the "
            f"{weights._describe()}"
        )
    if isinstance(num_samples, bool) or not hasattr(num_samples, "__index__"):
        raise TypeError(f"multinomial: num_samples must be an int, got {num_samples!r}")
    num_samples = operator.index(num_samples)
    if not isinstance(replacement, (bool, np.bool_)):
        raise TypeError(f"multinomial: replacement must be a bool, got {replacement!r}")
    categories = dims[-1]
    if categories == 0:
        raise ValueError(f"multinomial: no categories to draw from in the {weights._describe()}")
    if num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be positive, got {num_samples}")
    if not replacement and num_samples > categories:
        raise ValueError(
            f"multinomial: cannot draw {num_samples} samples without replacement from {categories} "
            f"categories; pass replacement=True to draw with replacement"
        )
    rows = weights.detach().reshape([-1, categories])
    if rows.dtype in (DType.F16, DType.BF16):
        rows = rows.float(DType.F32)  # running sums and logarithms in f32
    if weights._device.backend.validates_index_values:
        _check_weights(weights, rows.to_data().to_numpy(), num_samples, replacement)
    drawn = _with_replacement(rows, num_samples) if replacement else _without_replacement(rows, num_samples)
    return drawn if len(dims) == 2 else drawn.reshape([num_samples])


def _check_weights(weights: Tensor, values: Any, num_samples: int, replacement: bool) -> None:
    """Raise unless every row of ``values`` (the weights as rows) is a distribution to draw from."""

    def where(found: Any) -> str:
        row, column = (int(i) for i in np.argwhere(found)[0])
        place = [column] if len(weights.dims()) == 1 else [row, column]
        return f"{values[row, column]} at {place} of the {weights._describe()}"

    if not np.isfinite(values).all():
        raise ValueError(f"multinomial: weights must be finite, got {where(~np.isfinite(values))}")
    if (values < 0).any():
        raise ValueError(f"multinomial: weights must be non-negative, got {where(values < 0)}")
    nonzero = (values > 0).sum(axis=1)
    empty = np.flatnonzero(nonzero == 0)
    if empty.size:
        rows = "the weights are" if len(weights.dims()) == 1 else f"rows {empty.tolist()} are"
        raise ValueError(
            f"multinomial: {rows} all zero, there is nothing to draw (in the {weights._describe()})"
        )
    short = np.flatnonzero(nonzero < num_samples)
    if not replacement and short.size:
        row = int(short[0])
        where_row = "" if len(weights.dims()) == 1 else f"row {row} of "
        raise ValueError(
            f"multinomial: cannot draw {num_samples} samples without replacement: {where_row}the "
            f"{weights._describe()} has {int(nonzero[row])} categories of non-zero weight"
        )


def _with_replacement(rows: Tensor, num_samples: int) -> Tensor:
    """Inverse transform sampling: each draw is a point of ``(0, total]`` of its row, and its category the
    number of running sums below that point."""
    count, categories = rows.dims()
    sums = rows.cumsum(1)
    totals = sums.narrow(1, categories - 1, 1)
    uniform = type(rows).random([count, num_samples], device=rows.device, dtype=rows.dtype)
    # 1 - u lies in (0, 1]: a point never passes the last sum, and a category of zero weight (a running
    # sum equal to the one before) holds no point
    points = (1.0 - uniform) * totals
    chunk = max(1, _CHUNK_ELEMENTS // (count * categories))
    parts = []
    for start in range(0, num_samples, chunk):
        part = points.narrow(1, start, min(chunk, num_samples - start)).unsqueeze_dim(2)
        below = sums.unsqueeze_dim(1).lower(part).int().sum_dim(2).squeeze_dim(2)
        # only weights that the checks refuse (negative ones) put a point past the last sum
        parts.append(below.clamp_max(categories - 1))
    return parts[0] if len(parts) == 1 else type(rows).cat(parts, 1)


def _without_replacement(rows: Tensor, num_samples: int) -> Tensor:
    """An exponential race (the Gumbel top-k trick): each category arrives after an exponential time of
    rate its weight, ``E / w``; the first ``num_samples`` to arrive, in order, are distributed as draws
    one by one without replacement. The largest ``log(w) - log(E)`` arrive first; a zero weight never
    does (its key is -inf)."""
    uniform = rows.random_like()
    tiny = float(np.finfo(rows.dtype.numpy).tiny)
    arrivals = (1.0 - uniform).log().neg().clamp_min(tiny)  # Exp(1) draws, kept above 0 for the log
    return (rows.log() - arrivals.log()).argtopk(num_samples, 1)
