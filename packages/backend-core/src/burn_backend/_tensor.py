"""``Tensor``: the one tensor type of the user API, generic over the backend at run time."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._backend import AutodiffBackend
from ._data import TensorData
from ._device import Device
from ._distribution import Distribution
from ._dtype import DType, Kind
from ._einsum import einsum as _einsum
from ._sampling import multinomial as _multinomial
from ._shape import normalize_dim
from ._tensor_base import (
    DeviceLike,
    DTypeLike,
    Number,
    ShapeLike,
    TensorBase,
    check_same_rank,
    device_difference,
    shape_arg,
)
from ._tensor_data import check_device_exists, resolve
from ._tensor_hints import install_spellings
from ._tensor_quant import TensorQuantization
from .quantization._data import QuantizedData

__all__ = ["DTypeLike", "DeviceLike", "Tensor", "check_device_exists", "resolve"]


class Tensor(TensorQuantization):
    """A tensor on some device of some backend; its kind (Float, Int, Bool) and dtype are properties.

    Tensors are values: every op returns a new tensor and never changes its inputs. Binary ops need
    operands of the same dtype and device; nothing is promoted or moved implicitly. Shapes broadcast as
    NumPy's: dims aligned from the right, dims of size 1 and missing leading dims stretch (the gradient
    of a stretched operand is summed back to its shape).

    The other operand of an arithmetic, comparison or bitwise op may be a Python number or a NumPy
    array: either is taken in this tensor's dtype, on its device (PyTorch takes arrays too, but promotes
    the result to the array's dtype; Burn never promotes). Its kind must fit: ints for Int tensors,
    bools for Bool ones, ints or floats for Float ones; an int beyond the range of an Int tensor's dtype
    is an ``OverflowError`` (comparisons compare it as it is). For another dtype, build the tensor with
    ``Tensor.from_data(array, device, dtype)``.

    Example:
        >>> x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]])
        >>> (x * 2 + 1).sum_dim(1).to_data().tolist()
        [[8.0], [16.0]]
    """

    __slots__ = ()
    __array_priority__ = 1000  # NumPy defers to our operators

    einsum = staticmethod(_einsum)
    """``Tensor.einsum(equation, *operands)``: Einstein summation (``torch.einsum``, ``np.einsum``):
    ``"ij,jk->ik"`` (matmul), ``"bij,bjk->bik"`` (batched), ``"ij->ji"``, ``"ii->"`` (trace),
    ``"ii->i"``, ``"i,j->ij"`` (outer), ``"...ij,...jk"`` (leading dims broadcast); without ``->``,
    NumPy's implicit output. Float or Int operands of one dtype and device; gradients flow on Autodiff."""

    # == creation ==================================================================================
    @classmethod
    def from_primitive(cls, primitive: Any, device: Device) -> Tensor:
        """A tensor around a backend primitive (for backend extensions and custom ops)."""
        return cls(primitive, device)

    @classmethod
    def from_data(cls, data: Any, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor holding ``data``: a ``TensorData``, nested lists or scalars, or a NumPy array.

        Args:
            data: the values.
            device: where to put them (default: the process default device).
            dtype: the element type; by default the device's default dtype for the data's kind (as in
                Burn: float data becomes the backend's float dtype).

        Example:
            >>> Tensor.from_data([1, 2, 3]).kind
            Int
        """
        if isinstance(data, QuantizedData):
            device, _ = resolve(device, None, Kind.FLOAT, "from_data")
            return cls(device.backend.q_from_data(data, device), device)
        if not isinstance(data, TensorData):
            # an explicit dtype takes the values as they are (no detour through f32 for Python floats)
            explicit = dtype is not None and not isinstance(dtype, Kind)
            try:
                data = TensorData(data, dtype if explicit else None)  # type: ignore[arg-type]
            except (TypeError, ValueError) as error:
                raise type(error)(f"from_data: {str(error).removeprefix('TensorData: ')}") from None
        device, target = resolve(device, dtype, data.kind, "from_data")
        data = data.convert(target)
        backend = device.backend
        return cls(getattr(backend, target.kind.prefix + "from_data")(data, device), device)

    @classmethod
    def from_numpy(cls, array: np.ndarray[Any, Any], device: DeviceLike = None) -> Tensor:
        """A tensor with a copy of ``array``'s values, keeping its dtype."""
        data = TensorData.from_numpy(np.asarray(array))
        return cls.from_data(data, device, data.dtype)

    @classmethod
    def from_dlpack(cls, source: Any, device: DeviceLike = None) -> Tensor:
        """A tensor from any object with ``__dlpack__`` (NumPy, PyTorch, CuPy, ...), keeping its dtype."""
        return cls.from_numpy(np.from_dlpack(source), device)

    @classmethod
    def empty(cls, shape: ShapeLike | int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor with unspecified values (Float unless ``dtype`` says otherwise)."""
        shape = shape_arg("empty", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "empty")
        return cls(getattr(device.backend, dtype.kind.prefix + "empty")(shape, device, dtype), device)

    @classmethod
    def zeros(cls, shape: ShapeLike | int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor of zeros (Float unless ``dtype`` says otherwise: ``dtype=Int``, ``DType.I32``, ...)."""
        shape = shape_arg("zeros", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "zeros")
        return cls(getattr(device.backend, dtype.kind.prefix + "zeros")(shape, device, dtype), device)

    @classmethod
    def ones(cls, shape: ShapeLike | int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """A tensor of ones (Float unless ``dtype`` says otherwise)."""
        shape = shape_arg("ones", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "ones")
        return cls(getattr(device.backend, dtype.kind.prefix + "ones")(shape, device, dtype), device)

    @classmethod
    def full(
        cls, shape: ShapeLike | int, fill_value: Number, device: DeviceLike = None, dtype: DTypeLike = None
    ) -> Tensor:
        """A tensor filled with ``fill_value``; the kind follows the value (float, int or bool) unless
        ``dtype`` is given."""
        shape = shape_arg("full", shape)
        kind = (
            Kind.BOOL
            if isinstance(fill_value, bool)
            else Kind.INT
            if isinstance(fill_value, int)
            else Kind.FLOAT
        )
        device, dtype = resolve(device, dtype, kind, "full")
        if dtype.kind is Kind.BOOL:
            return cls(
                device.backend.bool_ones(shape, device, dtype)
                if fill_value
                else device.backend.bool_zeros(shape, device, dtype),
                device,
            )
        if dtype.kind is Kind.INT and isinstance(fill_value, float) and not fill_value.is_integer():
            raise TypeError(f"full: fill value {fill_value} is not an integer, for dtype {dtype}")
        value = float(fill_value) if dtype.kind is Kind.FLOAT else int(fill_value)
        return cls(getattr(device.backend, dtype.kind.prefix + "full")(shape, value, device, dtype), device)

    @classmethod
    def random(
        cls,
        shape: ShapeLike | int,
        distribution: Distribution | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
    ) -> Tensor:
        """Values drawn from ``distribution`` (default: uniform on [0, 1)) with the device's generator.

        Seed the generator with ``device.seed(n)`` for repeatable runs.
        """
        shape = shape_arg("random", shape)
        device, dtype = resolve(device, dtype, Kind.FLOAT, "random")
        if distribution is None:
            distribution = Distribution.default()
        elif not isinstance(distribution, Distribution):
            raise TypeError(
                f"random: distribution must be a Distribution (Distribution.default(), .uniform(low, high), "
                f".normal(mean, std) or .bernoulli(probability)), got {distribution!r}"
            )
        if dtype.kind is Kind.BOOL:
            raise TypeError(
                "random: Bool tensors are drawn with Distribution.bernoulli into Int; use .bool()"
            )
        create = getattr(device.backend, dtype.kind.prefix + "random")
        return cls(create(shape, distribution, device, dtype), device)

    def multinomial(self, num_samples: int, replacement: bool = False) -> Tensor:
        """Categories drawn from the distribution that this tensor's weights give (``torch.multinomial``).

        The weights are the last dim of a 1-D or 2-D Float tensor: non-negative, not necessarily
        normalized (each category's probability is its weight over its row's sum). Draws come from the
        device's generator, as ``Tensor.random``'s: seed it with ``device.seed(n)`` for repeatable runs.

        Args:
            num_samples: how many categories to draw per row.
            replacement: draw with replacement (independent draws); without (the default, as PyTorch's),
                the categories of a row are distinct, in the order drawn, and a zero weight is never
                drawn.

        Returns:
            An Int tensor (the device's int dtype) of shape ``[num_samples]`` for 1-D weights,
            ``[rows, num_samples]`` for 2-D ones. No gradient flows through it.

        Raises:
            TypeError: the tensor is not Float, or ``num_samples`` is not an int.
            ValueError: the weights are not 1-D or 2-D or have no category; ``num_samples`` is not
                positive, or (without replacement) exceeds the categories. Where the backend
                ``validates_index_values`` (NdArray; not the asynchronous GPU backends, where the read
                would wait for the device), also negative or non-finite weights, a row of zeros, and
                fewer non-zero weights than ``num_samples`` without replacement; elsewhere such weights
                give unspecified categories, always in range.

        Example:
            >>> weights = Tensor.from_data([[0.0, 1.0, 3.0], [2.0, 0.0, 0.0]])
            >>> weights.multinomial(2, replacement=True).to_data().to_numpy()[1].tolist()
            [0, 0]
        """
        return _multinomial(self, num_samples, replacement)

    @classmethod
    def arange(
        cls,
        start: int,
        end: int | None = None,
        step: int = 1,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
    ) -> Tensor:
        """The Int tensor ``start, start + step, ...`` up to ``end`` (exclusive); ``arange(n)`` is 0..n."""
        if end is None:
            start, end = 0, start
        for value in (start, end, step):
            operator.index(value)
        if step == 0:
            raise ValueError("arange: step must not be zero")
        device, dtype = resolve(device, dtype, Kind.INT, "arange")
        if dtype.kind is not Kind.INT:
            raise TypeError(f"arange: makes Int tensors, got dtype {dtype}")
        if step == 1:
            return cls(device.backend.int_arange(start, end, device, dtype), device)
        return cls(device.backend.int_arange_step(start, end, step, device, dtype), device)

    @classmethod
    def arange_step(
        cls, start: int, end: int, step: int, device: DeviceLike = None, dtype: DTypeLike = None
    ) -> Tensor:
        """Burn's ``arange_step``: the Int tensor ``start, start + step, ...`` up to ``end``."""
        return cls.arange(start, end, step, device, dtype)

    @classmethod
    def from_floats(cls, values: Any, device: DeviceLike = None) -> Tensor:
        """A Float tensor of ``values`` (the device's float dtype)."""
        return cls.from_data(values, device, Kind.FLOAT)

    @classmethod
    def from_ints(cls, values: Any, device: DeviceLike = None) -> Tensor:
        """An Int tensor of ``values`` (the device's int dtype)."""
        return cls.from_data(values, device, Kind.INT)

    @classmethod
    def from_bools(cls, values: Any, device: DeviceLike = None) -> Tensor:
        """A Bool tensor of ``values``."""
        return cls.from_data(values, device, Kind.BOOL)

    @classmethod
    def linspace(
        cls, start: float, end: float, steps: int, device: DeviceLike = None, dtype: DTypeLike = None
    ) -> Tensor:
        """``steps`` evenly spaced Float values from ``start`` to ``end`` inclusive."""
        if steps < 0:
            raise ValueError(f"linspace: steps must be non-negative, got {steps}")
        device, dtype = resolve(device, dtype, Kind.FLOAT, "linspace")
        if steps == 1:
            return cls.full([1], float(start), device, dtype)
        index = cls.arange(steps, device=device).float(dtype)
        spacing = (end - start) / (steps - 1) if steps > 1 else 0.0
        return index * spacing + float(start)

    @classmethod
    def eye(cls, size: int, device: DeviceLike = None, dtype: DTypeLike = None) -> Tensor:
        """The ``size`` x ``size`` identity matrix (Float unless ``dtype`` says otherwise)."""
        if isinstance(size, bool) or not hasattr(size, "__index__"):
            raise TypeError(f"eye: size must be an int, got {size!r}")
        if operator.index(size) < 0:
            raise ValueError(f"eye: size must be non-negative, got {size}")
        device, dtype = resolve(device, dtype, Kind.FLOAT, "eye")
        return cls.from_data(np.eye(operator.index(size), dtype=dtype.numpy), device, dtype)

    @classmethod
    def cat(cls, tensors: Sequence[Tensor], dim: int) -> Tensor:
        """Tensors of one kind, dtype, device and rank joined along ``dim`` (other dims must match)."""
        tensors = list(tensors)
        check_same_rank("cat", tensors)
        first = tensors[0]
        dim = first._dim("cat", dim)
        for other in tensors[1:]:
            a, b = first._primitive.shape, other._primitive.shape
            if any(x != y for i, (x, y) in enumerate(zip(a, b)) if i != dim):
                raise ValueError(f"cat: shapes {[t.dims() for t in tensors]} differ outside dim {dim}")
        return first._new(first._op("cat")([t._primitive for t in tensors], dim))

    @classmethod
    def stack(cls, tensors: Sequence[Tensor], dim: int) -> Tensor:
        """Tensors of one shape joined along a new dim ``dim``."""
        tensors = list(tensors)
        check_same_rank("stack", tensors)
        shapes = {tuple(t._primitive.shape) for t in tensors}
        if len(shapes) != 1:
            raise ValueError(f"stack: tensors must have the same shape, got {[t.dims() for t in tensors]}")
        dim = normalize_dim("stack", dim, tensors[0].rank + 1)
        return cls.cat([t.unsqueeze_dim(dim) for t in tensors], dim)

    def to_full_precision(self) -> Tensor:
        """This Float tensor in f32 if it is in a lower precision (f16, bf16), else unchanged."""
        self._require_kind("to_full_precision", Kind.FLOAT)
        return self.float(DType.F32) if self.dtype in (DType.F16, DType.BF16) else self

    @classmethod
    def from_full_precision(cls, tensor: Tensor, dtype: DType | str) -> Tensor:
        """``tensor`` (from ``to_full_precision``) back in the lower precision ``dtype``."""
        return tensor.float(dtype)

    def one_hot(self, num_classes: int) -> Tensor:
        """One-hot encoding of class indices: a new last dim of ``num_classes``, 1 at each index.

        The result has this tensor's kind and dtype (Int indices give Int, Float indices give Float).

        Raises:
            ValueError: an index is outside ``[0, num_classes)`` (checked where the backend
                ``validates_index_values``; elsewhere such an index gives a row of zeros).
        """
        self._require_kind("one_hot", Kind.INT, Kind.FLOAT)
        if num_classes <= 0:
            raise ValueError(f"one_hot: num_classes must be positive, got {num_classes}")
        if self.num_elements() and self._device.backend.validates_index_values:
            low, high = self.min().into_scalar(), self.max().into_scalar()
            if low < 0 or high >= num_classes:
                raise ValueError(
                    f"one_hot: indices must lie in [0, {num_classes}), got values in [{low}, {high}]"
                )
        classes = Tensor.arange(num_classes, device=self._device).cast(self.dtype)
        classes = classes.reshape([1] * self.rank + [num_classes])
        return self.unsqueeze_dim(-1).equal(classes).cast(self.dtype)

    @staticmethod
    def _triangle_mask(
        op: str, shape: ShapeLike, keep: Callable[[int, int], Any], device: DeviceLike
    ) -> Tensor:
        shape = shape_arg(op, shape)
        if len(shape) < 2:
            raise ValueError(f"{op}: needs at least two dims, got {list(shape)}")
        kept = keep(shape[-2], shape[-1])
        return Tensor.from_data(np.broadcast_to(~kept, shape), device, DType.BOOL)

    @classmethod
    def tril_mask(cls, shape: ShapeLike, diagonal: int = 0, device: DeviceLike = None) -> Tensor:
        """The mask that ``mask_fill`` uses to keep the lower triangle, as Burn's: true *above*
        ``diagonal`` of the last two dims (the values ``tril`` removes), false on and below it."""
        return cls._triangle_mask(
            "tril_mask", shape, lambda r, c: np.tri(r, c, diagonal, dtype=np.bool_), device
        )

    @classmethod
    def triu_mask(cls, shape: ShapeLike, diagonal: int = 0, device: DeviceLike = None) -> Tensor:
        """The mask that keeps the upper triangle, as Burn's: true *below* ``diagonal`` (the values ``triu``
        removes), false on and above it."""
        return cls._triangle_mask(
            "triu_mask", shape, lambda r, c: ~np.tri(r, c, diagonal - 1, dtype=np.bool_), device
        )

    @classmethod
    def diag_mask(cls, shape: ShapeLike, diagonal: int = 0, device: DeviceLike = None) -> Tensor:
        """The mask that keeps one diagonal, as Burn's: false on ``diagonal`` of the last two dims, true
        everywhere else."""
        return cls._triangle_mask(
            "diag_mask", shape, lambda r, c: np.eye(r, c, diagonal, dtype=np.bool_), device
        )

    @classmethod
    def from_inner(cls, tensor: Tensor, device: Device) -> Tensor:
        """``tensor`` (on an autodiff backend's inner backend) lifted onto the autodiff ``device``.

        Raises:
            TypeError: ``device`` is not an autodiff device, or ``tensor`` is not a Tensor.
            ValueError: ``tensor`` is not on the inner device of ``device`` (say, a tensor of the
                autodiff backend itself, or of another backend).
        """
        if not isinstance(device, Device):
            raise TypeError(f"from_inner: expected a Device, got {device!r}")
        backend = device.backend
        if not isinstance(backend, AutodiffBackend):
            raise TypeError(f"from_inner: {device} is not a device of an autodiff backend")
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"from_inner: expected a Tensor, got {type(tensor).__name__}")
        check_device_exists("from_inner", device)
        inner = backend.inner.device(device.index)
        if tensor._device != inner:
            raise ValueError(
                f"from_inner: the tensor must live on the inner device of {device}, {inner}; "
                f"got one on {tensor._device}{device_difference(tensor._device, inner)}"
            )
        return cls(getattr(backend, tensor.kind.prefix + "from_inner")(tensor._primitive), device)


install_spellings(Tensor)
