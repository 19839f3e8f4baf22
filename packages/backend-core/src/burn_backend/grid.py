"""Coordinate grids, as Burn's ``burn::tensor::grid``: ``meshgrid`` (the grids of several coordinate
vectors, as ``torch.meshgrid``) and ``affine_grid_2d`` (the sampling grid of an affine transform, also in
``burn_backend.module``).

Example:
    >>> from burn_backend import Tensor, grid
    >>> rows, cols = grid.meshgrid(Tensor.from_data([0, 1]), Tensor.from_data([5, 6, 7]))
    >>> rows.tolist(), cols.tolist()
    ([[0, 0, 0], [1, 1, 1]], [[5, 6, 7], [5, 6, 7]])
"""

from __future__ import annotations

from collections.abc import Sequence

from ._tensor import Tensor
from .module import affine_grid_2d as affine_grid_2d

__all__ = ["affine_grid_2d", "meshgrid"]

_INDEXING = ("ij", "xy")


def meshgrid(*tensors: Tensor | Sequence[Tensor], indexing: str = "ij") -> list[Tensor]:
    """The coordinate grids of the 1-d ``tensors``: grid ``i`` repeats ``tensors[i]`` along every other
    dim, as ``torch.meshgrid`` and ``numpy.meshgrid`` (and Burn's ``meshgrid`` with ``GridIndexing``).

    Args:
        tensors: ``N`` 1-d tensors of sizes ``n_0, ..., n_{N-1}``, of one kind, dtype and device, given
            as arguments or as one sequence.
        indexing: ``"ij"`` (matrix indexing, the default): every grid has shape ``[n_0, n_1, ...]`` and
            grid ``i`` varies along dim ``i``; ``"xy"`` (Cartesian indexing): the first two dims are
            swapped, shape ``[n_1, n_0, n_2, ...]``, so that ``x`` varies along the columns.

    Returns:
        ``N`` tensors of the grid's shape, of the inputs' kind and dtype.

    Example:
        >>> xs, ys = meshgrid(Tensor.from_data([0, 1]), Tensor.from_data([5, 6, 7]), indexing="xy")
        >>> xs.dims()
        [3, 2]
    """
    op = "meshgrid"
    given: list[object] = list(tensors)
    if len(given) == 1 and not isinstance(given[0], Tensor):
        given = list(tensors[0])
    if indexing not in _INDEXING:
        raise ValueError(f"{op}: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not given:
        raise ValueError(f"{op}: needs at least one tensor")
    items: list[Tensor] = []
    for position, tensor in enumerate(given):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{op}: tensors[{position}] must be a Tensor, got {type(tensor).__name__}")
        if tensor.rank != 1:
            raise ValueError(f"{op}: tensors[{position}] must be 1-d, got shape {tensor.dims()}")
        if items and tensor.dtype is not items[0].dtype:
            raise TypeError(
                f"{op}: tensors[{position}] has dtype {tensor.dtype}, tensors[0] has {items[0].dtype}; "
                "cast one with .cast(...)"
            )
        if items:
            items[0]._check_device_of(op, tensor)
        items.append(tensor)
    sizes = [tensor.dims()[0] for tensor in items]
    count = len(items)
    grids = []
    for position, tensor in enumerate(items):
        shape = [1] * count
        shape[position] = sizes[position]
        grid = tensor.reshape(shape).expand(sizes)
        grids.append(grid.swap_dims(0, 1) if indexing == "xy" and count > 1 else grid)
    return grids
