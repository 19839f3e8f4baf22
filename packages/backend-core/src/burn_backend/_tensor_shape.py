"""Shape and layout ops of ``Tensor``: reshape, squeeze, permute, expand, repeat, split, triangles."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from ._shape import normalize_dim
from ._slice import SliceLike
from ._tensor_arith import TensorArithmetic
from ._tensor_base import (
    ShapeLike,
)
from ._tensor_hints import argument_error

if TYPE_CHECKING:
    from ._tensor import Tensor


def _reshape_dims(shape: object) -> list[int]:
    """``reshape``'s target as a list of ints (bools and floats refused)."""
    if type(shape) is not list and type(shape) is not tuple:
        if isinstance(shape, int) and not isinstance(shape, bool):
            return [shape]
        if not isinstance(shape, (Sequence, np.ndarray)) or isinstance(shape, str):
            raise TypeError(f"reshape: expected a shape (a sequence of ints), got {shape!r}")
    dims = list(shape)
    for i, size in enumerate(dims):
        if type(size) is not int:
            if isinstance(size, bool) or not hasattr(size, "__index__"):
                raise TypeError(f"reshape: a shape holds ints, got {size!r} in {dims}")
            dims[i] = operator.index(size)
    return dims


def _int_list(op: str, first: Sequence[int] | int, more: tuple[int, ...]) -> list[int]:
    """A list of ints given as one sequence (Burn's spelling) or as separate ints (PyTorch's)."""
    if more:
        values: list[object] = [first, *more]
    elif isinstance(first, int):
        values = [first]
    else:
        values = list(first)
    for value in values:
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"{op}: expected ints (or one sequence of ints), got {value!r}")
    return [operator.index(v) for v in values]  # type: ignore[arg-type]


class TensorShape(TensorArithmetic):
    """Shape and layout ops."""

    __slots__ = ()

    # == shape =====================================================================================
    def reshape(self, shape: ShapeLike | int, *more: int) -> Tensor:
        """The same values in another shape. ``-1`` infers one dim; ``0`` keeps the input's dim there.

        The shape is one sequence (``reshape([2, 3])``, Burn's spelling) or separate ints
        (``reshape(2, 3)``, as PyTorch's ``reshape`` and ``view``); ``reshape(6)`` flattens to one dim.

        Raises:
            TypeError: ``shape`` is not a sequence of ints (or an int).
            ValueError: the shape does not hold the tensor's number of elements.
        """
        dims = _reshape_dims([shape, *more] if more else shape)
        asked = list(dims)
        current = self._primitive.shape
        for i, size in enumerate(dims):
            if size == 0 and i < len(current) and len(dims) <= len(current) and 0 not in current:
                dims[i] = current[i]
        if dims.count(-1) > 1:
            raise ValueError(f"reshape: at most one -1 in {asked}")
        count = self.num_elements()
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or count % known:
                raise ValueError(f"reshape: cannot reshape {self.dims()} into {asked}")
            dims[dims.index(-1)] = count // known
        if any(d < 0 for d in dims) or math.prod(dims) != count:
            raise ValueError(f"reshape: cannot reshape {self.dims()} ({count} elements) into {asked}")
        if tuple(dims) == tuple(current):
            return cast("Tensor", self)
        return self._new(self._op("reshape")(self._primitive, tuple(dims)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Dims ``start_dim`` to ``end_dim`` (inclusive) merged into one."""
        rank = self.rank
        if rank == 0:
            return self.reshape([1])
        start, end = self._dim("flatten", start_dim), self._dim("flatten", end_dim)
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} is after end_dim {end_dim}")
        dims = self.dims()
        return self.reshape([*dims[:start], math.prod(dims[start : end + 1]), *dims[end + 1 :]])

    def unsqueeze_dim(self, dim: int) -> Tensor:
        """A new dim of size 1 inserted at ``dim`` (negative counts from the end of the result)."""
        dims = self.dims()
        dim = normalize_dim("unsqueeze_dim", dim, len(dims) + 1)
        return self._new(self._op("reshape")(self._primitive, (*dims[:dim], 1, *dims[dim:])))

    def unsqueeze_dims(self, dims: Sequence[int]) -> Tensor:
        """New dims of size 1 at each position of ``dims`` (positions in the result)."""
        out_rank = self.rank + len(dims)
        positions = sorted(normalize_dim("unsqueeze_dims", d, out_rank) for d in dims)
        result = self
        for position in positions:
            result = result.unsqueeze_dim(position)
        return cast("Tensor", result)

    def unsqueeze(self, dim: None = None, *, rank: int | None = None) -> Tensor:
        """Leading dims of size 1: one (the Burn Book's ``unsqueeze()``), or as many as make ``rank`` dims
        (``unsqueeze(rank=4)``, Burn's ``unsqueeze::<4>()``). A new dim elsewhere is ``unsqueeze_dim``.

        Raises:
            TypeError: given a positional dim, PyTorch's ``x.unsqueeze(dim)``: the message names
                ``unsqueeze_dim(dim)``.
            ValueError: ``rank`` is below the tensor's rank.

        Example:
            >>> Tensor.ones([2, 3]).unsqueeze().dims(), Tensor.ones([2, 3]).unsqueeze(rank=4).dims()
            ([1, 2, 3], [1, 1, 2, 3])
        """
        if dim is not None:
            raise argument_error("unsqueeze", dim)
        if rank is None:
            rank = self.rank + 1
        if isinstance(rank, bool) or not hasattr(rank, "__index__"):
            raise TypeError(f"unsqueeze: rank must be an int, got {rank!r}")
        rank = operator.index(rank)
        if rank < self.rank:
            raise ValueError(f"unsqueeze: rank {rank} is below the tensor's rank {self.rank}")
        return self.reshape([1] * (rank - self.rank) + self.dims())

    def squeeze_dim(self, dim: int) -> Tensor:
        """Dim ``dim`` (of size 1) removed."""
        dim = self._dim("squeeze_dim", dim)
        dims = self.dims()
        if dims[dim] != 1:
            raise ValueError(f"squeeze_dim: dim {dim} has size {dims[dim]}, not 1 (shape {dims})")
        return self._new(self._op("reshape")(self._primitive, tuple(dims[:dim] + dims[dim + 1 :])))

    def squeeze_dims(self, dims: Sequence[int]) -> Tensor:
        """The given dims (each of size 1) removed."""
        positions = self._dims("squeeze_dims", dims)
        shape = self.dims()
        for dim in positions:
            if shape[dim] != 1:
                raise ValueError(f"squeeze_dims: dim {dim} has size {shape[dim]}, not 1 (shape {shape})")
        kept = [size for i, size in enumerate(shape) if i not in positions]
        return self._new(self._op("reshape")(self._primitive, tuple(kept)))

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Every dim of size 1 removed (Burn's ``squeeze``); with ``dim``, only that dim, which must
        have size 1 (the Burn Book's ``squeeze(dim)``, Burn's ``squeeze_dim``); with a sequence, those
        dims (``squeeze_dims``).

        Unlike PyTorch's ``squeeze(dim)``, a ``dim`` whose size is not 1 is an error, not a no-op.

        Example:
            >>> Tensor.ones([1, 3, 1]).squeeze().dims(), Tensor.ones([1, 3, 1]).squeeze(0).dims()
            ([3], [3, 1])
        """
        if dim is not None:
            return self.squeeze_dims(dim) if isinstance(dim, Sequence) else self.squeeze_dim(dim)
        return self._new(self._op("reshape")(self._primitive, tuple(d for d in self.dims() if d != 1)))

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        """Dims ``dim1`` and ``dim2`` exchanged."""
        a, b = self._dim("swap_dims", dim1), self._dim("swap_dims", dim2)
        if a == b:
            return cast("Tensor", self)
        return self._new(self._op("swap_dims")(self._primitive, a, b))

    def transpose(self, *dims: int) -> Tensor:
        """The last two dims swapped (rank below 2: unchanged); PyTorch's ``x.mT``.

        Raises:
            TypeError: given dims (PyTorch's ``transpose(d0, d1)``): that is ``swap_dims(d0, d1)``.
        """
        if dims:
            raise argument_error("transpose", list(dims))
        if self.rank < 2:
            return cast("Tensor", self)
        return self._new(self._op("transpose")(self._primitive))

    def t(self) -> Tensor:
        """The last two dims swapped (Burn's ``t``, the same as ``transpose()``).

        Example:
            >>> Tensor.ones([2, 3]).t().dims()
            [3, 2]
        """
        return self.transpose()

    @property
    def T(self) -> Tensor:
        """The last two dims swapped."""
        return self.transpose()

    def permute(self, axes: Sequence[int] | int, *more: int) -> Tensor:
        """Dims reordered: result dim ``i`` is input dim ``axes[i]`` (negative axes count from the end).

        ``axes`` is one sequence (Burn's spelling) or separate ints (``permute(1, 0)``, PyTorch's).
        """
        axes = _int_list("permute", axes, more)
        if len(axes) != self.rank:
            raise ValueError(f"permute: {len(axes)} axes given for a tensor of rank {self.rank}")
        normalized = self._dims("permute", axes)
        if normalized == list(range(self.rank)):
            return cast("Tensor", self)
        return self._new(self._op("permute")(self._primitive, tuple(normalized)))

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """Dims moved from ``source`` to ``destination`` positions, the rest keeping their order."""
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise ValueError(f"movedim: {len(src)} sources for {len(dst)} destinations")
        src, dst = self._dims("movedim", src), self._dims("movedim", dst)
        order = [d for d in range(self.rank) if d not in src]
        for s, d in sorted(zip(dst, src)):
            order.insert(s, d)
        return self.permute(order)

    def flip(self, axes: Sequence[int] | int, *more: int) -> Tensor:
        """Values reversed along each dim in ``axes`` (one sequence, or separate ints)."""
        axes = _int_list("flip", axes, more)
        normalized = self._dims("flip", axes)
        if not normalized:
            return cast("Tensor", self)
        return self._new(self._op("flip")(self._primitive, tuple(normalized)))

    def expand(self, shape: ShapeLike | int, *more: int) -> Tensor:
        """Broadcast to ``shape``: dims of size 1 grow, ``-1`` keeps a dim, new leading dims may be added.

        ``shape`` is one sequence (Burn's spelling) or separate ints (``expand(2, 3)``, PyTorch's).
        """
        shape = _int_list("expand", shape, more)
        target = list(shape)
        current = self.dims()
        if len(target) < len(current):
            raise ValueError(f"expand: cannot expand shape {current} to fewer dims {target}")
        offset = len(target) - len(current)
        for i, size in enumerate(current):
            wanted = target[offset + i]
            if wanted == -1:
                target[offset + i] = size
            elif wanted != size and size != 1:
                raise ValueError(
                    f"expand: dim {i} of size {size} cannot become {wanted} "
                    f"(shape {current} to {list(shape)})"
                )
        if any(d < 0 for d in target):
            raise ValueError(f"expand: new leading dims need explicit sizes, got {list(shape)}")
        if tuple(target) == tuple(current):
            return cast("Tensor", self)
        return self._new(self._op("expand")(self._primitive, tuple(target)))

    def broadcast_to(self, shape: ShapeLike) -> Tensor:
        """The same as ``expand``."""
        return self.expand(shape)

    def repeat_dim(self, dim: int, times: int) -> Tensor:
        """The tensor repeated ``times`` along ``dim``."""
        dim = self._dim("repeat_dim", dim)
        if times < 0:
            raise ValueError(f"repeat_dim: times must be non-negative, got {times}")
        if times == 1:
            return cast("Tensor", self)
        return self._new(self._op("repeat_dim")(self._primitive, dim, times))

    def repeat(self, sizes: Sequence[int] | int, *more: int) -> Tensor:
        """The tensor repeated ``sizes[i]`` times along each dim ``i`` (one sequence, or separate ints as
        PyTorch's ``repeat(2, 3)``)."""
        sizes = _int_list("repeat", sizes, more)
        if len(sizes) != self.rank:
            raise ValueError(f"repeat: {len(sizes)} sizes given for a tensor of rank {self.rank}")
        result = self
        for dim, times in enumerate(sizes):
            result = result.repeat_dim(dim, times)
        return cast("Tensor", result)

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """``length`` elements from ``start`` along ``dim``."""
        dim = self._dim("narrow", dim)
        size = self._primitive.shape[dim]
        if start < 0:
            start += size
        if not 0 <= start <= size or length < 0 or start + length > size:
            raise ValueError(f"narrow: start {start} and length {length} exceed dim {dim} of size {size}")
        ranges: list[SliceLike] = [slice(None)] * self.rank
        ranges[dim] = slice(start, start + length)
        return cast("Tensor", self).slice(ranges)

    def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:
        """At most ``chunks`` pieces along ``dim``, each of ``ceil(size / chunks)`` but the last."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be positive, got {chunks}")
        dim = self._dim("chunk", dim)
        size = self._primitive.shape[dim]
        step = max(1, -(-size // chunks))
        return [self.narrow(dim, start, min(step, size - start)) for start in range(0, size, step)] or [
            cast("Tensor", self)
        ]

    def split(self, split_size: int, dim: int = 0) -> list[Tensor]:
        """Pieces of ``split_size`` along ``dim`` (the last may be smaller).

        Raises:
            TypeError: a list of sizes (PyTorch's ``split([2, 3])``): that is ``split_with_sizes``.
        """
        if not isinstance(split_size, int):
            raise argument_error("split", list(split_size))
        if split_size <= 0:
            raise ValueError(f"split: split_size must be positive, got {split_size}")
        dim = self._dim("split", dim)
        size = self._primitive.shape[dim]
        return [self.narrow(dim, s, min(split_size, size - s)) for s in range(0, size, split_size)] or [
            cast("Tensor", self)
        ]

    def split_with_sizes(self, sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
        """Pieces of the given sizes along ``dim`` (they must add up to the dim's size)."""
        dim = self._dim("split_with_sizes", dim)
        if sum(sizes) != self._primitive.shape[dim] or any(s < 0 for s in sizes):
            raise ValueError(
                f"split_with_sizes: sizes {list(sizes)} do not add up to dim {dim} of {self.dims()}"
            )
        pieces, start = [], 0
        for size in sizes:
            pieces.append(self.narrow(dim, start, size))
            start += size
        return pieces

    def unfold(self, dim: int, size: int, step: int) -> Tensor:
        """Windows of ``size`` every ``step`` along ``dim``: that dim becomes the window count and a new
        last dim holds each window."""
        dim = self._dim("unfold", dim)
        if size <= 0 or step <= 0:
            raise ValueError(f"unfold: size and step must be positive, got {size} and {step}")
        if size > self._primitive.shape[dim]:
            raise ValueError(
                f"unfold: window {size} is larger than dim {dim} of size {self._primitive.shape[dim]}"
            )
        return self._new(self._op("unfold")(self._primitive, dim, size, step))

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two dims (above ``diagonal`` set to zero)."""
        return cast("Tensor", self).mask_fill(self._cls.tril_mask(self.dims(), diagonal, self._device), 0)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two dims (below ``diagonal`` set to zero)."""
        return cast("Tensor", self).mask_fill(self._cls.triu_mask(self.dims(), diagonal, self._device), 0)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The diagonal of the planes spanned by dims ``dim1`` and ``dim2`` (``torch.diagonal``,
        ``np.diagonal``): both dims are removed and the diagonal becomes the last dim. ``offset`` > 0
        picks a diagonal above the main one, < 0 one below.

        Raises:
            ValueError: a rank below 2, or ``dim1`` and ``dim2`` name the same dim.

        Example:
            >>> Tensor.from_data([[1, 2], [3, 4]]).diagonal().tolist()
            [1, 4]
        """
        if self.rank < 2:
            raise ValueError(f"diagonal: needs a rank of at least 2, got shape {self.dims()}")
        a, b = self._dim("diagonal", dim1), self._dim("diagonal", dim2)
        if a == b:
            raise ValueError(f"diagonal: dim1 and dim2 name the same dim {a} (of shape {self.dims()})")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"diagonal: offset must be an int, got {offset!r}")
        moved = self.permute([d for d in range(self.rank) if d not in (a, b)] + [a, b])
        *lead, rows, cols = moved.dims()
        row, col = (0, offset) if offset >= 0 else (-offset, 0)
        length = max(0, min(rows - row, cols - col))
        if length == 0:
            return moved.narrow(-2, 0, 0).narrow(-1, 0, 0).reshape([*lead, 0])
        square = moved.narrow(-2, row, length).narrow(-1, col, length)
        # in the flattened square the diagonal is every (length + 1)-th value
        flat = square.reshape([*lead, length * length])
        return flat.slice([slice(None)] * len(lead) + [slice(0, None, length + 1)])

    def roll_dim(self, shift: int, dim: int) -> Tensor:
        """Values shifted by ``shift`` along ``dim``, wrapping around (Burn's ``roll_dim``;
        ``torch.roll(x, shift, dim)``, ``np.roll``); a negative shift moves toward the start.

        Example:
            >>> Tensor.from_data([1, 2, 3, 4]).roll_dim(1, 0).tolist()
            [4, 1, 2, 3]
        """
        if isinstance(shift, bool) or not isinstance(shift, int):
            raise TypeError(f"roll_dim: shift must be an int, got {shift!r}")
        dim = self._dim("roll_dim", dim)
        size = self._primitive.shape[dim]
        shift = shift % size if size else 0
        if shift == 0:
            return cast("Tensor", self)
        tail, head = self.narrow(dim, size - shift, shift), self.narrow(dim, 0, size - shift)
        return self._cls.cat([tail, head], dim)

    def roll(self, shifts: Sequence[int] | int, dims: Sequence[int] | int | None = None) -> Tensor:
        """Values shifted by ``shifts[i]`` along ``dims[i]``, wrapping around (Burn's ``roll``;
        ``torch.roll``, ``np.roll``). A dim may appear more than once (its shifts add up). With no
        ``dims``, the values are rolled as one flat sequence and keep the shape (as PyTorch and NumPy).

        Raises:
            ValueError: ``shifts`` and ``dims`` differ in length.

        Example:
            >>> Tensor.from_data([[1, 2], [3, 4]]).roll([1, 1], [0, 1]).tolist()
            [[4, 3], [2, 1]]
        """
        shift_list = _int_list("roll", shifts, ())
        if dims is None:
            if len(shift_list) != 1:
                raise ValueError(f"roll: without dims, expected one shift, got {shift_list}")
            return self.reshape([-1]).roll_dim(shift_list[0], 0).reshape(self.dims())
        dim_list = _int_list("roll", dims, ())
        if len(shift_list) != len(dim_list):
            raise ValueError(f"roll: {len(shift_list)} shifts for {len(dim_list)} dims")
        result = cast("Tensor", self)
        for shift, dim in zip(shift_list, dim_list):
            result = result.roll_dim(shift, dim)
        return result
