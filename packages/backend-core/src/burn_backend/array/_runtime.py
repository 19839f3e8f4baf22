"""``ArrayRuntime``: what array namespaces do differently, behind one small object.

The op code of ``burn_backend.array`` is written once against an array namespace ``xp`` (the Array API
standard's names, which NumPy 2 and CuPy 14 also provide). What the standard does not cover, or what a
library does its own way, goes through a runtime: moving data between the host and the device,
silencing floating-point warnings, indexed updates with duplicate indices (``scatter``'s add, mul,
min, max), sliding windows, dtype conversion, random generators and the low-precision rule. The defaults
here work for any standard namespace (indexed updates through NumPy on the host); a binding overrides
what its library does better.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

import numpy as np

from .._device import Device
from .._distribution import Distribution
from .._dtype import DType, register_dtype
from .._options import IndexingUpdateOp

Array = Any
_F32 = np.dtype(np.float32)
LOW_PRECISION = frozenset({DType.F16.numpy, DType.BF16.numpy})

_UPDATE_UFUNCS: dict[IndexingUpdateOp, Any] = {
    IndexingUpdateOp.ADD: np.add,
    IndexingUpdateOp.MUL: np.multiply,
    IndexingUpdateOp.MIN: np.minimum,
    IndexingUpdateOp.MAX: np.maximum,
}


def along_axis_index(indices: np.ndarray[Any, Any], dim: int) -> tuple[Any, ...]:
    """The NumPy fancy index that addresses ``out[..., indices[...], ...]`` at every position of
    ``indices`` (``dim`` taken from ``indices``, the other dims from the position)."""
    grids: list[Any] = list(np.indices(indices.shape, sparse=True))
    grids[dim] = indices
    return tuple(grids)


def namespace_dtypes(xp: Any) -> dict[DType, Any]:
    """The dtype object of ``xp`` for each DType it has (see ``ArrayRuntime.dtypes``)."""
    if getattr(xp, "float32", None) is np.float32:  # NumPy's dtypes, f16 and bf16 included
        return {dtype: dtype.numpy for dtype in DType}
    named = xp.__array_namespace_info__().dtypes()
    return {DType.of(np.dtype(name)): value for name, value in named.items() if "complex" not in name}


class ArrayRuntime:
    """The namespace-specific half of an array backend.

    Args:
        xp: the array namespace (``numpy``, ``cupy``, ``array_api_strict``, ...).
        dtypes: the namespace's dtype object for each DType it has, where reading them from ``xp``
            must wait (a lazily imported namespace); by default read from ``xp``.

    Attributes:
        native_low_precision: the float dtypes (NumPy dtypes) whose element-wise ops ``xp`` computes
            itself, rounding once per op. Element-wise ops on the other low-precision dtypes (f16,
            bf16) are computed in f32 and rounded once by ``burn_backend.array``.
        dtypes: the namespace's dtype object of each DType it has. A namespace whose ``float32`` is
            NumPy's (NumPy, CuPy) has them all, as NumPy's dtypes; another one has those its
            ``__array_namespace_info__().dtypes()`` lists, and ``DType.of`` learns its dtype objects.

    Example:
        >>> import numpy as np
        >>> runtime = ArrayRuntime(np)
        >>> runtime.to_host(runtime.from_host(np.ones(2), None)).tolist()
        [1.0, 1.0]
    """

    native_low_precision: ClassVar[frozenset[np.dtype[Any]]] = frozenset()

    def __init__(self, xp: Any, dtypes: dict[DType, Any] | None = None) -> None:
        self.xp = xp
        # ``dtypes`` given: a namespace that is imported lazily (CuPy) is not touched here
        self.dtypes: dict[DType, Any] = namespace_dtypes(xp) if dtypes is None else dtypes
        for dtype, value in self.dtypes.items():
            if not isinstance(value, np.dtype):
                register_dtype(value, dtype)
        self._bool = self.dtypes[DType.BOOL]

    # -- host transfer and devices ----------------------------------------------------------------
    def from_host(self, array: np.ndarray[Any, Any], device: Device | None) -> Array:
        """``array`` (host memory) as an array of ``xp`` on ``device``."""
        return self.xp.asarray(array)

    def to_host(self, array: Array) -> np.ndarray[Any, Any]:
        """``array`` as a NumPy array in host memory (no copy where it already is one)."""
        if isinstance(array, np.ndarray):
            return array
        return np.from_dlpack(array)

    def constant(
        self, build: Callable[..., np.ndarray[Any, Any]], *key: Hashable, dtype: Any = None
    ) -> Array:
        """``build(*key)`` (a host array that depends on ``key`` alone: an index table, pooling divisors,
        interpolation weights) as an array of ``xp`` on the current device, cast to ``dtype`` if given.
        Built once and cached (callers never write to it; NumPy's copy is read-only); a binding with
        several devices caches it per device."""
        cache: dict[Any, Array] = self.__dict__.setdefault("_constants", {})
        array = cache.get((build, key, dtype))
        if array is None:
            array = self.from_host(build(*key), None)
            array = array if dtype is None else self.cast(array, dtype)
            if isinstance(array, np.ndarray):
                array.flags.writeable = False
            if len(cache) >= 1024:
                cache.clear()
            cache[build, key, dtype] = array
        return array

    def device_index(self, array: Array) -> int:
        """The index of the device ``array`` lives on."""
        return 0

    def move(self, array: Array, index: int) -> Array:
        """``array`` on device ``index`` (itself where it is there)."""
        return array

    def on_device(self, index: int) -> contextlib.AbstractContextManager[Any]:
        """A context in which new arrays are made on device ``index``."""
        return contextlib.nullcontext()

    def device_count(self) -> int:
        """How many devices the namespace sees."""
        return 1

    def synchronize(self, index: int) -> None:
        """Wait until the work queued on device ``index`` is done."""

    # -- dtypes and numerics ----------------------------------------------------------------------
    def dtype(self, dtype: DType) -> Any:
        """The namespace's dtype object for ``dtype``.

        Raises:
            TypeError: the namespace has no such dtype.
        """
        found = self.dtypes.get(dtype)
        if found is None:
            raise TypeError(f"{self.xp.__name__} has no {dtype} dtype")
        return found

    def cast(self, array: Array, dtype: Any) -> Array:
        """``array`` converted to ``dtype`` (a namespace dtype); itself where it already has it. Values
        beyond the target's range convert as the library converts them (no warning)."""
        if array.dtype == dtype:
            return array
        with self.quiet():
            return self.xp.astype(array, dtype)

    def quiet(self) -> contextlib.AbstractContextManager[Any]:
        """A context without floating-point warnings (overflow gives inf, 0/0 NaN, as in PyTorch). The
        default silences NumPy's, which namespaces built on NumPy (``array_api_strict``) raise, and
        which CuPy raises when it converts a Python scalar operand to f16 on the host."""
        return np.errstate(all="ignore")

    def widen(self, array: Array) -> Array:
        """``array`` in the dtype to compute in: f32 for f16 and bf16, else itself."""
        return self.cast(array, _F32) if array.dtype in LOW_PRECISION else array

    def narrow(self, result: Array, dtype: Any) -> Array:
        """``result`` (computed in ``widen``'s dtype) rounded once back to ``dtype``."""
        return result if result.dtype == dtype else self.cast(result, dtype)

    def matmul(self, lhs: Array, rhs: Array) -> Array:
        """``lhs @ rhs`` (the namespace's ``matmul``): the one place the shared ops multiply matrices, so
        a runtime can route products to its own GEMM (burn-cuda's capture-safe cuBLAS binding)."""
        return self.xp.matmul(lhs, rhs)

    # -- randomness -------------------------------------------------------------------------------
    def generator(self, seed: int | None) -> Any:
        """A new random generator with NumPy's ``Generator`` API, seeded or from OS entropy."""
        return np.random.default_rng(seed)

    def sample(self, generator: Any, shape: tuple[int, ...], distribution: Distribution, dtype: Any) -> Array:
        """Samples of ``distribution`` in ``dtype`` (f32 or f64 drawn directly; other floats through f32)."""
        wanted = DType.of(dtype)
        draw_dtype = wanted.numpy if wanted in (DType.F32, DType.F64) else _F32
        if distribution.kind == "bernoulli":
            samples = _bernoulli(generator, shape, float(distribution.probability), draw_dtype)
        elif distribution.kind == "normal":
            normal = generator.standard_normal(shape, dtype=draw_dtype)
            samples = normal * draw_dtype.type(distribution.std) + draw_dtype.type(distribution.mean)
        else:
            uniform = generator.random(shape, dtype=draw_dtype)
            if distribution.kind == "uniform":
                low, high = float(distribution.low), float(distribution.high)
                uniform = uniform * draw_dtype.type(high - low) + draw_dtype.type(low)
            samples = uniform
        return self.cast(self.from_host(samples, None), dtype)

    # -- what the standard lacks ------------------------------------------------------------------
    def windows(self, array: Array, dim: int, size: int, step: int) -> Array:
        """The windows of ``size`` along ``dim`` every ``step``: ``dim`` becomes the window count and a
        last dim of ``size`` is added (the default gathers them; bindings return views)."""
        xp = self.xp
        count = max(0, (array.shape[dim] - size) // step + 1)
        starts = xp.arange(count) * step
        index = xp.reshape(xp.reshape(starts, (count, 1)) + xp.arange(size), (count * size,))
        taken = xp.take(array, index, axis=dim)
        shape = (*array.shape[:dim], count, size, *array.shape[dim + 1 :])
        return xp.moveaxis(xp.reshape(taken, shape), dim + 1, -1)

    def update(self, array: Array, index: Any, values: Array, update: IndexingUpdateOp) -> Array:
        """A copy of ``array`` with ``values`` combined into the positions of the NumPy fancy
        ``index`` (built by the caller over host arrays); duplicate positions accumulate for add, mul,
        min and max, and the last write wins for assign. The default goes through NumPy on the host."""
        out = np.array(self.to_host(array), copy=True)
        host_values = self.to_host(values) if not np.isscalar(values) else values
        with np.errstate(all="ignore"):
            if update is IndexingUpdateOp.ASSIGN:
                out[index] = host_values
            else:
                _UPDATE_UFUNCS[update].at(out, index, host_values)
        return self.from_host(out, None)

    def gather(self, array: Array, dim: int, indices: Array) -> Array:
        """``gather`` along ``dim``: ``out[..., i, ...] = array[..., indices[..., i, ...], ...]``
        (``indices`` has ``array``'s shape outside ``dim``; the namespace's ``take_along_axis``)."""
        return self.xp.take_along_axis(array, indices, axis=dim)

    def scatter(
        self, array: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp
    ) -> Array:
        """``scatter`` along ``dim``: ``out[..., indices[i], ...] (update)= values[i]``."""
        return self.update(array, along_axis_index(self.to_host(indices), dim), values, update)

    def select_update(
        self, array: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp
    ) -> Array:
        """``select_assign``-style update: whole slices ``indices`` (1-d) of ``dim`` combined with
        ``values``."""
        index = (slice(None),) * dim + (self.to_host(indices),)
        return self.update(array, index, values, update)

    def scatter_nd(self, array: Array, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
        """``scatter_nd``: ``indices[..., k]`` addresses the first ``k`` dims of ``array``."""
        index = tuple(np.moveaxis(self.to_host(indices), -1, 0))
        return self.update(array, index, values, update)

    def nonzero(self, array: Array) -> Array:
        """The coordinates of the true elements of bool ``array``: shape ``[count, rank]``, in row-major
        order."""
        xp = self.xp
        if array.ndim == 0:
            return xp.zeros((int(bool(array)), 0), dtype=xp.int64)
        return xp.stack(xp.nonzero(array), axis=-1)

    def sortable(self, array: Array) -> Array:
        """``array`` in a dtype that sorts and arg-reductions accept, in the same order: bool as u8,
        low-precision floats the namespace does not compute natively as f32; itself otherwise."""
        if array.dtype == self._bool:
            return self.cast(array, self.dtypes[DType.U8])
        if array.dtype in LOW_PRECISION and array.dtype not in self.native_low_precision:
            return self.cast(array, _F32)
        return array

    def argsort(self, array: Array, dim: int) -> Array:
        """The indices that sort ``array`` (of a ``sortable`` dtype) ascending along ``dim``, stably:
        equal values keep their order."""
        return self.xp.argsort(array, axis=dim, stable=True)

    def scan(self, array: Array, dim: int, combine: Any) -> Array:
        """The inclusive scan of ``combine`` (an associative binary function of ``xp`` such as
        ``xp.maximum``) along ``dim``: Hillis and Steele's doubling scan, log2(n) whole-tensor passes."""
        xp = self.xp
        size = array.shape[dim]
        out = array
        shift = 1
        while shift < size:
            head = [slice(None)] * array.ndim
            tail = [slice(None)] * array.ndim
            keep = [slice(None)] * array.ndim
            head[dim] = slice(None, size - shift)
            tail[dim] = slice(shift, None)
            keep[dim] = slice(None, shift)
            out = xp.concat([out[tuple(keep)], combine(out[tuple(head)], out[tuple(tail)])], axis=dim)
            shift *= 2
        return out


def _bernoulli(generator: Any, shape: tuple[int, ...], probability: float, draw_dtype: Any) -> Any:
    """Bernoulli draws: with NumPy's generator, as few random bits per value as ``probability`` needs
    (dropout draws a mask every step): one bit each for 1/2, a byte compared with ``probability * 256``
    where that is a whole number (1/4, 3/8, ...), else 32 bits compared with ``probability * 2**32``
    (twice as fast as drawing floats; one bit is 13x as fast again). With another library's generator,
    uniform floats compared with ``probability``."""
    if not isinstance(generator, np.random.Generator):
        return generator.random(shape, dtype=draw_dtype) < probability
    if probability >= 1.0 or probability <= 0.0:
        return np.full(shape, probability >= 1.0)
    count = math.prod(shape)
    raw = generator.bit_generator.random_raw
    if probability == 0.5:
        bytes_ = raw((count + 63) // 64).view(np.uint8)
        return np.unpackbits(bytes_, bitorder="little")[:count].view(np.bool_).reshape(shape)
    in_bytes = probability * 256.0
    if in_bytes == int(in_bytes):
        return (raw((count + 7) // 8).view(np.uint8)[:count] < np.uint8(in_bytes)).reshape(shape)
    bits = raw((count + 1) // 2).view(np.uint32)[:count]
    return (bits < np.uint32(probability * 2.0**32)).reshape(shape)
