"""``BoolTensorOps``: the bool op group of the backend interface."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._data import TensorData
from .._dtype import DType
from .._options import IndexingUpdateOp
from . import _generic as g

if TYPE_CHECKING:
    from .._device import Device

P = Any
Shape = tuple[int, ...]


class BoolTensorOps(abc.ABC):
    """Ops on bool primitives; the conventions of ``FloatTensorOps`` hold."""

    int_dtype: DType
    float_dtype: DType

    @abc.abstractmethod
    def bool_from_data(self, data: TensorData, device: Device) -> P:
        """A tensor holding ``data`` (bool) on ``device``."""

    @abc.abstractmethod
    def bool_into_data(self, tensor: P) -> TensorData:
        """The tensor's values on the host."""

    @abc.abstractmethod
    def bool_device(self, tensor: P) -> Device:
        """The device the tensor lives on."""

    @abc.abstractmethod
    def bool_to_device(self, tensor: P, device: Device) -> P:
        """The tensor moved to another device of this backend."""

    @abc.abstractmethod
    def bool_empty(self, shape: Shape, device: Device, dtype: DType) -> P:
        """A tensor of ``shape`` with unspecified values (``dtype`` is ``DType.BOOL``)."""

    def bool_zeros(self, shape: Shape, device: Device, dtype: DType) -> P:
        """All false."""
        return g.full(self, "bool", shape, False, device, dtype)

    def bool_ones(self, shape: Shape, device: Device, dtype: DType) -> P:
        """All true."""
        return g.full(self, "bool", shape, True, device, dtype)

    @abc.abstractmethod
    def bool_into_int(self, tensor: P, dtype: DType) -> P:
        """1 for true, 0 for false, as ints of ``dtype``."""

    @abc.abstractmethod
    def bool_into_float(self, tensor: P, dtype: DType) -> P:
        """1.0 for true, 0.0 for false, as floats of ``dtype``."""

    # -- layout -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def bool_reshape(self, tensor: P, shape: Shape) -> P:
        """The same values in C order with another shape."""

    @abc.abstractmethod
    def bool_swap_dims(self, tensor: P, dim1: int, dim2: int) -> P:
        """Dims ``dim1`` and ``dim2`` exchanged."""

    @abc.abstractmethod
    def bool_permute(self, tensor: P, axes: Sequence[int]) -> P:
        """Dims reordered."""

    @abc.abstractmethod
    def bool_flip(self, tensor: P, axes: Sequence[int]) -> P:
        """Values reversed along each dim of ``axes``."""

    @abc.abstractmethod
    def bool_expand(self, tensor: P, shape: Shape) -> P:
        """Broadcast to ``shape``."""

    @abc.abstractmethod
    def bool_unfold(self, tensor: P, dim: int, size: int, step: int) -> P:
        """Windows of ``size`` every ``step`` along ``dim``."""

    def bool_transpose(self, tensor: P) -> P:
        """The last two dims swapped."""
        return g.transpose(self, "bool", tensor)

    def bool_repeat_dim(self, tensor: P, dim: int, times: int) -> P:
        """The tensor repeated ``times`` along ``dim``."""
        return g.repeat_dim(self, "bool", tensor, dim, times)

    def bool_cat(self, tensors: Sequence[P], dim: int) -> P:
        """Tensors joined along ``dim``."""
        return g.cat(self, "bool", tensors, dim)

    # -- indexing ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def bool_slice(self, tensor: P, slices: Sequence[slice]) -> P:
        """The values selected by one canonical slice per dim."""

    @abc.abstractmethod
    def bool_slice_assign(self, tensor: P, slices: Sequence[slice], value: P) -> P:
        """A copy with the sliced region replaced by ``value``."""

    @abc.abstractmethod
    def bool_gather(self, tensor: P, dim: int, indices: P) -> P:
        """Values picked along ``dim`` by ``indices``."""

    @abc.abstractmethod
    def bool_scatter_or(self, tensor: P, dim: int, indices: P, values: P) -> P:
        """A copy with ``values`` or-ed in at ``indices`` along ``dim``."""

    @abc.abstractmethod
    def bool_select(self, tensor: P, dim: int, indices: P) -> P:
        """The slices at 1-d ``indices`` along ``dim``."""

    @abc.abstractmethod
    def bool_select_or(self, tensor: P, dim: int, indices: P, values: P) -> P:
        """A copy with ``values`` or-ed into the slices at ``indices``."""

    @abc.abstractmethod
    def bool_mask_where(self, tensor: P, mask: P, value: P) -> P:
        """``value`` where ``mask`` is true, else ``tensor``."""

    @abc.abstractmethod
    def bool_mask_fill(self, tensor: P, mask: P, value: bool) -> P:
        """``value`` where ``mask`` is true, else ``tensor``."""

    def bool_mask_select(self, tensor: P, mask: P) -> P:
        """The values where ``mask`` is true, in row-major order, as a 1-d tensor."""
        return g.mask_select(self, "bool", tensor, mask)

    def bool_gather_nd(self, tensor: P, indices: P) -> P:
        """``out[i...] = tensor[indices[i..., 0], ..., indices[i..., k - 1]]`` for an int ``indices`` of
        shape ``[..., k]`` (k at most the tensor's rank); the result is ``indices.shape[:-1]`` plus the
        tensor's dims after the first k."""
        return g.gather_nd(self, "bool", tensor, indices)

    def bool_scatter_nd(self, tensor: P, indices: P, values: P, update: IndexingUpdateOp) -> P:
        """A copy of ``tensor`` with ``values`` combined by ``update`` at the positions ``indices``
        (shaped as for ``bool_gather_nd``; ``values`` has the shape ``bool_gather_nd`` would return)."""
        return g.scatter_nd(self, "bool", tensor, indices, values, update)

    def bool_scatter(self, tensor: P, dim: int, indices: P, values: P, update: IndexingUpdateOp) -> P:
        """A copy of ``tensor`` with ``values`` combined by ``update`` at ``indices`` along ``dim``."""
        return g.scatter(self, "bool", tensor, dim, indices, values, update)

    # -- logic ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def bool_equal(self, lhs: P, rhs: P) -> P:
        """``lhs == rhs``."""

    @abc.abstractmethod
    def bool_equal_elem(self, lhs: P, rhs: bool) -> P:
        """``lhs == rhs``."""

    def bool_not_equal(self, lhs: P, rhs: P) -> P:
        """``lhs != rhs``."""
        return self.bool_not(self.bool_equal(lhs, rhs))

    def bool_not_equal_elem(self, lhs: P, rhs: bool) -> P:
        """``lhs != rhs``."""
        return self.bool_not(self.bool_equal_elem(lhs, rhs))

    @abc.abstractmethod
    def bool_not(self, tensor: P) -> P:
        """Logical not."""

    @abc.abstractmethod
    def bool_and(self, lhs: P, rhs: P) -> P:
        """Logical and."""

    @abc.abstractmethod
    def bool_or(self, lhs: P, rhs: P) -> P:
        """Logical or."""

    def bool_xor(self, lhs: P, rhs: P) -> P:
        """Logical exclusive or."""
        return self.bool_not_equal(lhs, rhs)

    # -- reductions -------------------------------------------------------------------------------
    def bool_any(self, tensor: P) -> P:
        """Whether any value is true, shape (1,)."""
        count = self.int_sum(self.bool_into_int(tensor, self.int_dtype))  # type: ignore[attr-defined]
        return self.int_greater_elem(count, 0)  # type: ignore[attr-defined]

    def bool_any_dim(self, tensor: P, dim: int) -> P:
        """Whether any value along ``dim`` is true."""
        count = self.int_sum_dim(self.bool_into_int(tensor, self.int_dtype), dim)  # type: ignore[attr-defined]
        return self.int_greater_elem(count, 0)  # type: ignore[attr-defined]

    def bool_all(self, tensor: P) -> P:
        """Whether every value is true, shape (1,)."""
        return self.bool_not(self.bool_any(self.bool_not(tensor)))

    def bool_all_dim(self, tensor: P, dim: int) -> P:
        """Whether every value along ``dim`` is true."""
        return self.bool_not(self.bool_any_dim(self.bool_not(tensor), dim))

    def bool_argwhere(self, tensor: P) -> P:
        """The indices of the true values, one row each: an int tensor of shape ``[count, rank]``."""
        values = self.bool_into_data(tensor).to_numpy()
        indices = np.argwhere(values).astype(self.int_dtype.numpy)
        return self.int_from_data(TensorData._wrap(indices), self.bool_device(tensor))  # type: ignore[attr-defined]
