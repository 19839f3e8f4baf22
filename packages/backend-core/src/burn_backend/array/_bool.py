"""The bool op group over an array namespace: logic, casts, or-updates and ``argwhere``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .._dtype import DType
from .._ops.bool import BoolTensorOps
from .._options import IndexingUpdateOp
from . import _common as c

if TYPE_CHECKING:
    from .._device import Device
    from ._runtime import ArrayRuntime

Array = Any


class ArrayBoolOps(BoolTensorOps):
    """The bool op group written once against ``self.xp``; or-updates are the runtime's add updates
    (for bools, add is or)."""

    runtime: ClassVar[ArrayRuntime]
    xp: ClassVar[Any]

    bool_from_data = c.from_data
    bool_into_data = c.into_data
    bool_device = c.device_of
    bool_to_device = c.to_device
    bool_empty = c.empty
    bool_reshape = c.reshape
    bool_swap_dims = c.swap_dims
    bool_permute = c.permute
    bool_flip = c.flip
    bool_expand = c.expand
    bool_unfold = c.unfold
    bool_cat = c.cat
    bool_repeat_dim = c.repeat_dim
    bool_slice = c.slice_
    bool_slice_assign = c.slice_assign
    bool_gather = c.gather
    bool_scatter = c.scatter
    bool_select = c.select
    bool_gather_nd = c.gather_nd
    bool_scatter_nd = c.scatter_nd
    bool_mask_select = c.mask_select
    bool_mask_where = c.mask_where
    bool_mask_fill = c.mask_fill
    bool_equal = bool_equal_elem = c.equal
    bool_not_equal = bool_not_equal_elem = c.not_equal
    bool_into_int = bool_into_float = c.cast
    bool_any = c.any_
    bool_any_dim = c.any_dim
    bool_all = c.all_
    bool_all_dim = c.all_dim

    def bool_zeros(self, shape: tuple[int, ...], device: Device, dtype: DType) -> Array:
        return c.full(self, shape, False, device, dtype)

    def bool_ones(self, shape: tuple[int, ...], device: Device, dtype: DType) -> Array:
        return c.full(self, shape, True, device, dtype)

    def bool_not(self, tensor: Array) -> Array:
        return self.xp.logical_not(tensor)

    def bool_and(self, lhs: Array, rhs: Array) -> Array:
        return self.xp.logical_and(lhs, rhs)

    def bool_or(self, lhs: Array, rhs: Array) -> Array:
        return self.xp.logical_or(lhs, rhs)

    def bool_xor(self, lhs: Array, rhs: Array) -> Array:
        return self.xp.logical_xor(lhs, rhs)

    def bool_scatter_or(self, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
        return self.runtime.scatter(tensor, dim, indices, values, IndexingUpdateOp.ADD)

    def bool_select_or(self, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
        return self.runtime.select_update(tensor, dim, indices, values, IndexingUpdateOp.ADD)

    def bool_argwhere(self, tensor: Array) -> Array:
        # the result's length is the count of true values: a device backend reads it back here
        return self.runtime.cast(self.runtime.nonzero(tensor), self.runtime.dtype(self.int_dtype))
