"""Indexing ops of ``Tensor``: slices, ``[]``, gather and scatter, select, masks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._dtype import Kind
from ._options import IndexingUpdateOp
from ._shape import broadcast_shapes
from ._slice import SliceLike, canonical_slices
from ._tensor_base import (
    Number,
    TensorBase,
)
from ._tensor_shape import TensorShape

if TYPE_CHECKING:
    from ._tensor import Tensor


def _range_list(ranges: Sequence[SliceLike] | SliceLike) -> list[SliceLike]:
    """One range, or a list or tuple of them, as a list."""
    if isinstance(ranges, (list, tuple)):
        return list(ranges)
    return [cast(SliceLike, ranges)]


class TensorIndexing(TensorShape):
    """Indexing ops."""

    __slots__ = ()

    # == indexing ==================================================================================
    def slice(self, ranges: Sequence[SliceLike] | SliceLike) -> Tensor:
        """The values in ``ranges``, one per leading dim (the rest whole); the rank never changes.

        A range is a ``Slice`` (Burn's semantics), a Python ``slice`` or ``range``, or an int ``i``
        (taken as ``i..i+1``).
        """
        slices = canonical_slices("slice", self._primitive.shape, _range_list(ranges))
        return self._new(self._op("slice")(self._primitive, slices))

    def slice_assign(self, ranges: Sequence[SliceLike] | SliceLike, values: Tensor) -> Tensor:
        """A copy with the region in ``ranges`` replaced by ``values`` (of the region's shape)."""
        slices = canonical_slices("slice_assign", self._primitive.shape, _range_list(ranges))
        self._check_other("slice_assign", values)
        region = tuple(len(range(s.start, -1 if s.stop is None else s.stop, s.step)) for s in slices)
        if tuple(values._primitive.shape) != region:
            raise ValueError(
                f"slice_assign: values of shape {values.dims()} for a region of shape {list(region)}"
            )
        return self._new(self._op("slice_assign")(self._primitive, slices, values._primitive))

    def slice_fill(self, ranges: Sequence[SliceLike] | SliceLike, value: Number) -> Tensor:
        """A copy with the region in ``ranges`` set to ``value``."""
        region = self.slice(ranges)
        return self.slice_assign(ranges, region.full_like(value))

    def __getitem__(self, key: Any) -> Tensor:
        """``tensor[...]``: Burn's ``slice`` with Python's index syntax, and NumPy's ``None``, ``...``,
        masks and index tensors.

        - ints and slices: ``slice``; an int keeps its dim (``x[0]`` has shape ``[1, ...]``, as Burn's
          slices never change the rank: ``squeeze_dim`` removes it);
        - ``...`` stands for the dims not named, ``None`` inserts a dim of size 1 (``unsqueeze_dim``);
        - one 1-d Int tensor among them picks those positions along its dim (``select``); alone, an Int
          tensor of any shape picks rows (``x[idx]`` has shape ``idx.shape + x.shape[1:]``);
        - a Bool tensor alone: ``x[mask]`` with the tensor's shape is ``mask_select`` (a 1-d result);
          with the shape of its leading dims, it picks those sub-tensors (``[count, *rest]``, as PyTorch).

        Example:
            >>> x = Tensor.from_data([[1, 2, 3], [4, 5, 6]])
            >>> x[None].dims(), x[..., 0].tolist(), x[x > 2].tolist()
            ([1, 2, 3], [[1], [4]], [3, 4, 5, 6])
        """
        if isinstance(key, TensorBase):
            return self._index_by_tensor(key)
        items = list(key) if isinstance(key, tuple) else [key]
        named = sum(1 for item in items if item is not None and item is not Ellipsis)
        if any(item is Ellipsis for item in items):
            if items.count(Ellipsis) > 1:
                raise IndexError("__getitem__: at most one ellipsis")
            at = items.index(Ellipsis)
            items = items[:at] + [slice(None)] * max(self.rank - named, 0) + items[at + 1 :]
        ranges: list[SliceLike] = []
        new_dims: list[int] = []
        picked: tuple[int, TensorBase] | None = None
        for item in items:
            if item is None:
                new_dims.append(len(ranges) + len(new_dims))
                continue
            if isinstance(item, TensorBase):
                if item.kind is not Kind.INT or item.rank != 1 or picked is not None:
                    raise TypeError(
                        f"__getitem__: among other indices, one 1-d Int tensor at most, got a "
                        f"{item._describe()}; a Bool mask indexes alone (x[mask]), gather_nd takes tuples"
                    )
                picked = (len(ranges), item)
                item = slice(None)
            elif isinstance(item, (list, np.ndarray)):
                raise TypeError(
                    f"__getitem__: {type(item).__name__} indices are not slices; index with a Tensor "
                    "(Tensor.from_data(indices, x.device)) or use select"
                )
            ranges.append(item)
        result = cast("Tensor", self).slice(ranges) if ranges else cast("Tensor", self)
        if picked is not None:
            result = result.select(picked[0], cast("Tensor", picked[1]))
        return result.unsqueeze_dims(new_dims) if new_dims else result

    def _index_by_tensor(self, index: TensorBase) -> Tensor:
        """``x[index]`` for a Bool mask or an Int index tensor (see ``__getitem__``)."""
        this = cast("Tensor", self)
        if index.kind is Kind.INT:
            if index.rank == 1:
                return this.select(0, cast("Tensor", index))
            if self.rank == 0:
                raise IndexError("__getitem__: a tensor of rank 0 has no rows to pick")
            rows = this.select(0, cast("Tensor", index).reshape([-1]))
            return rows.reshape(index.dims() + self.dims()[1:])
        self._check_mask("__getitem__", index)
        shape, mask_shape = self.dims(), index.dims()
        if mask_shape == shape:
            return this.mask_select(cast("Tensor", index))
        if len(mask_shape) < len(shape) and shape[: len(mask_shape)] == mask_shape:
            return this.gather_nd(cast("Tensor", index).argwhere())
        raise IndexError(
            f"__getitem__: a Bool mask of shape {mask_shape} must have the tensor's shape {shape} or the "
            f"shape of its leading dims; mask_select(mask) takes a mask that broadcasts"
        )

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("Tensor is immutable: use slice_assign(ranges, values) or slice_fill(ranges, value)")

    def gather(self, dim: int, indices: Tensor) -> Tensor:
        """``out[..., i, ...] = self[..., indices[..., i, ...], ...]`` along ``dim``; ``indices`` has the
        tensor's shape outside ``dim`` (as Burn requires; nothing broadcasts).

        Raises:
            ValueError: the shape of ``indices`` differs from the tensor's outside ``dim``.
            IndexError: an index is negative or not below the size of ``dim`` (checked where the
                backend ``validates_index_values``; elsewhere such an index gives unspecified values).
        """
        self._check_indices("gather", indices)
        dim = self._dim("gather", dim)
        shape, index_shape = self._primitive.shape, indices._primitive.shape
        if len(index_shape) != len(shape) or any(
            a != b for d, (a, b) in enumerate(zip(shape, index_shape)) if d != dim
        ):
            raise ValueError(
                f"gather: indices of shape {list(index_shape)} must have the shape of the tensor, "
                f"{list(shape)}, outside dim {dim}"
            )
        self._check_index_values("gather", indices, dim)
        return self._new(self._op("gather")(self._primitive, dim, indices._primitive))

    def scatter(
        self, dim: int, indices: Tensor, values: Tensor, update: IndexingUpdateOp | str = IndexingUpdateOp.ADD
    ) -> Tensor:
        """A copy with ``values`` combined in at ``indices`` along ``dim``: by default *added* (Burn's
        scatter: duplicates sum); ``update`` may be ``"assign"``, ``"mul"``, ``"min"`` or ``"max"``."""
        update = IndexingUpdateOp(update)
        dim = self._check_scatter("scatter", dim, indices, values)
        backend = self._device.backend
        p, i, v = self._primitive, indices._primitive, values._primitive
        if update is IndexingUpdateOp.ADD:
            name = "bool_scatter_or" if self.kind is Kind.BOOL else self.kind.prefix + "scatter_add"
            return self._new(getattr(backend, name)(p, dim, i, v))
        return self._new(self._op("scatter")(p, dim, i, v, update))

    def scatter_add(self, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` added at ``indices`` along ``dim`` (duplicates sum)."""
        return self.scatter(dim, indices, values, IndexingUpdateOp.ADD)

    def _check_scatter(self, op: str, dim: int, indices: Tensor, values: Tensor) -> int:
        """Check the operands of a scatter; returns ``dim`` normalized."""
        self._check_indices(op, indices)
        self._check_other(op, values)
        dim = self._dim(op, dim)
        if indices.dims() != values.dims() or indices.rank != self.rank:
            raise ValueError(
                f"{op}: indices {indices.dims()} and values {values.dims()} "
                f"need one shape of rank {self.rank}"
            )
        shape = self._primitive.shape
        if any(b > a for d, (a, b) in enumerate(zip(shape, indices._primitive.shape)) if d != dim):
            raise ValueError(
                f"{op}: indices of shape {indices.dims()} exceed the tensor's shape {list(shape)} "
                f"outside dim {dim}"
            )
        self._check_index_values(op, indices, dim)
        return dim

    def gather_nd(self, indices: Tensor) -> Tensor:
        """Values at the index tuples in the last dim of ``indices`` (shape ``[..., k]``, k at most the
        rank): the result has shape ``indices.shape[:-1] + self.shape[k:]``.

        Raises:
            IndexError: an index is outside the shape (checked where the backend
                ``validates_index_values``; elsewhere such an index gives unspecified values).
        """
        self._check_nd("gather_nd", indices)
        return self._new(self._op("gather_nd")(self._primitive, indices._primitive))

    def scatter_nd(
        self, indices: Tensor, values: Tensor, update: IndexingUpdateOp | str = IndexingUpdateOp.ASSIGN
    ) -> Tensor:
        """A copy with ``values`` combined in at the index tuples of ``indices`` (as ``gather_nd``); by
        default assigned (repeated indices: unspecified winner), or ``"add"``, ``"mul"``, ``"min"``,
        ``"max"``."""
        update = IndexingUpdateOp(update)
        depth = self._check_nd("scatter_nd", indices)
        self._check_other("scatter_nd", values)
        expected = indices.dims()[:-1] + self.dims()[depth:]
        if values.dims() != expected:
            raise ValueError(f"scatter_nd: values of shape {values.dims()}, expected {expected}")
        return self._new(
            self._op("scatter_nd")(self._primitive, indices._primitive, values._primitive, update)
        )

    def _check_nd(self, op: str, indices: Tensor) -> int:
        self._check_indices(op, indices)
        if indices.rank < 1 or not 1 <= indices.dims()[-1] <= self.rank:
            raise ValueError(
                f"{op}: indices of shape {indices.dims()} need a last dim between 1 and the rank {self.rank}"
            )
        depth = indices.dims()[-1]
        if indices.num_elements() and self._device.backend.validates_index_values:
            limits = self.dims()[:depth]
            data = indices.to_numpy().reshape(-1, depth)
            if (data < 0).any() or (data >= np.array(limits)).any():
                raise IndexError(f"{op}: an index is outside the shape {limits} of the first {depth} dims")
        return depth

    def mask_select(self, mask: Tensor) -> Tensor:
        """The values where ``mask`` is true (broadcast to this shape), in row-major order: a 1-d tensor.

        Raises:
            ValueError: ``mask`` does not broadcast to this tensor's shape.
        """
        self._check_mask("mask_select", mask)
        p, m = self._primitive, mask._primitive
        if m.shape != p.shape:
            shape, mask_shape = tuple(p.shape), tuple(m.shape)
            offset = len(shape) - len(mask_shape)
            if offset < 0 or any(s not in (1, shape[offset + i]) for i, s in enumerate(mask_shape)):
                raise ValueError(
                    f"mask_select: a mask of shape {list(m.shape)} does not broadcast to the tensor's shape "
                    f"{list(shape)}"
                )
            m = self._with_rank(m, len(shape), Kind.BOOL)
        return self._new(self._op("mask_select")(p, m))

    def select(self, dim: int, indices: Tensor) -> Tensor:
        """The slices at 1-d Int ``indices`` along ``dim``.

        Raises:
            IndexError: an index is negative or not below the size of ``dim`` (checked where the
                backend ``validates_index_values``).
        """
        self._check_indices("select", indices)
        dim = self._dim("select", dim)
        if indices.rank != 1:
            raise ValueError(f"select: indices must be 1-d, got shape {indices.dims()}")
        self._check_index_values("select", indices, dim)
        return self._new(self._op("select")(self._primitive, dim, indices._primitive))

    def select_assign(self, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` *added* to the slices at ``indices`` along ``dim`` (Burn's
        select_assign: duplicates sum; or-ed for Bool tensors)."""
        self._check_indices("select_assign", indices)
        self._check_other("select_assign", values)
        dim = self._dim("select_assign", dim)
        expected = self.dims()
        if indices.rank != 1:
            raise ValueError(f"select_assign: indices must be 1-d, got shape {indices.dims()}")
        expected[dim] = indices.dims()[0]
        if values.dims() != expected:
            raise ValueError(f"select_assign: values of shape {values.dims()}, expected {expected}")
        self._check_index_values("select_assign", indices, dim)
        name = "bool_select_or" if self.kind is Kind.BOOL else self.kind.prefix + "select_add"
        return self._new(
            getattr(self._device.backend, name)(self._primitive, dim, indices._primitive, values._primitive)
        )

    def mask_where(self, mask: Tensor, values: Tensor) -> Tensor:
        """``values`` where ``mask`` is true, else this tensor's values (the three shapes broadcast)."""
        self._check_mask("mask_where", mask)
        self._check_other("mask_where", values)
        p, m, v = self._primitive, mask._primitive, values._primitive
        if not p.shape == m.shape == v.shape:
            rank = len(broadcast_shapes("mask_where", tuple(p.shape), tuple(m.shape), tuple(v.shape)))
            kind = self.kind
            p, v = self._with_rank(p, rank, kind), self._with_rank(v, rank, kind)
            m = self._with_rank(m, rank, Kind.BOOL)
        return self._new(self._op("mask_where")(p, m, v))

    def mask_fill(self, mask: Tensor, value: Number) -> Tensor:
        """``value`` where ``mask`` is true, else this tensor's values (the two shapes broadcast)."""
        self._check_mask("mask_fill", mask)
        p, m = self._primitive, mask._primitive
        if p.shape != m.shape:
            rank = len(broadcast_shapes("mask_fill", tuple(p.shape), tuple(m.shape)))
            p, m = self._with_rank(p, rank, self.kind), self._with_rank(m, rank, Kind.BOOL)
        return self._new(self._op("mask_fill")(p, m, self._scalar("mask_fill", value)))

    def argwhere(self) -> Tensor:
        """Int indices of the non-zero (true) values, one row per value: shape ``[count, rank]``."""
        mask = self.bool()
        return mask._new(self._device.backend.bool_argwhere(mask._primitive))

    def nonzero(self) -> list[Tensor]:
        """Int indices of the non-zero values, one 1-d tensor per dim."""
        rows = self.argwhere()
        return [rows.narrow(1, d, 1).squeeze_dim(1) for d in range(self.rank)]
