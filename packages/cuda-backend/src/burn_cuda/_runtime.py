"""``CupyRuntime``: what CuPy does its own way under ``burn_backend.array``."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

import numpy as np

from burn_backend import Device, Distribution, DType, IndexingUpdateOp
from burn_backend.array import ArrayRuntime

from . import _cublas, _cupy
from ._cupy import cp
from ._ops import _along_axis, _scatter
from ._transfer import upload

Array = Any
_BF16 = DType.BF16.numpy
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_count: int | None = None


@functools.lru_cache(maxsize=512)
def _constant(build: Callable[..., Any], key: tuple[Any, ...], dtype: Any, device: int) -> Array:
    """``build(*key)`` on GPU ``device`` in ``dtype`` (cached: callers never write to it)."""
    array = build(*key)
    with cp.cuda.Device(device):
        return cp.asarray(array if dtype is None else _host_cast(array, dtype))


def _host_cast(array: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    with np.errstate(all="ignore"):
        return array.astype(dtype)


@functools.cache
def _bernoulli_mask() -> Any:
    """``mask = uniform < probability`` as 1 or 0 in the mask's float dtype."""
    return cp.ElementwiseKernel(
        "D uniform, D probability",
        "M mask",
        "mask = uniform < probability ? (M)1 : (M)0",
        "burn_bernoulli_mask",
    )


class CupyRuntime(ArrayRuntime):
    """CuPy on NVIDIA GPUs: one device per GPU, CuPy's f16 kernels (bf16 computed in f32), device-side
    scatter kernels, windows as strided views, generators per device. Nothing here reads device values
    on the host."""

    native_low_precision: ClassVar[frozenset[np.dtype[Any]]] = frozenset({_F16})

    def __init__(self) -> None:
        super().__init__(cp, {dtype: dtype.numpy for dtype in DType})  # CuPy takes NumPy's dtypes

    def from_host(self, array: np.ndarray[Any, Any], device: Device | None) -> Array:
        return upload(array)

    def to_host(self, array: Array) -> np.ndarray[Any, Any]:
        return cp.asnumpy(array)  # type: ignore[no-any-return]

    def constant(
        self, build: Callable[..., np.ndarray[Any, Any]], *key: Hashable, dtype: Any = None
    ) -> Array:
        # built and copied once per device: a copy from the host at every call would wait for the GPU
        wide = None if dtype is None else np.dtype(dtype)
        return _constant(build, key, wide, int(cp.cuda.runtime.getDevice()))

    def device_index(self, array: Array) -> int:
        return int(array.device.id)

    def move(self, array: Array, index: int) -> Array:
        if array.device.id == index:
            return array
        with cp.cuda.Device(array.device.id):
            source = cp.ascontiguousarray(array)
        with cp.cuda.Device(index):
            out = cp.empty(source.shape, dtype=source.dtype)
            if source.nbytes:
                # a peer copy on the target's stream, ordered after the source's pending work by the sync
                cp.cuda.Device(array.device.id).synchronize()
                out.data.copy_from_device_async(source.data, source.nbytes)
            return out

    def on_device(self, index: int) -> contextlib.AbstractContextManager[Any]:
        return cp.cuda.Device(index)  # type: ignore[no-any-return]

    def device_count(self) -> int:
        global _count
        if _count is None:
            _count = 0 if _cupy.unavailable_reason() is not None else int(cp.cuda.runtime.getDeviceCount())
        return _count

    def synchronize(self, index: int) -> None:
        cp.cuda.Device(index).synchronize()

    def cast(self, array: Array, dtype: Any) -> Array:
        # conversions to and from bf16 go through f32 unless one side is f32, the only one CuPy
        # converts bf16 with in every build
        if array.dtype == dtype:
            return array
        if (array.dtype == _BF16 or dtype == _BF16) and _F32 not in (array.dtype, dtype):
            array = array.astype(_F32)
        return array.astype(dtype)

    def matmul(self, lhs: Array, rhs: Array) -> Array:
        # burn-cuda's own cuBLAS binding (CuPy's cannot be captured into a CUDA graph); a matrix on the
        # right of a stack multiplies the stack as one tall matrix
        if lhs.dtype != rhs.dtype or lhs.dtype not in _cublas.GEMM_DTYPES or min(lhs.ndim, rhs.ndim) < 2:
            return cp.matmul(lhs, rhs)
        if rhs.ndim == 2 and lhs.ndim > 2:
            product = _cublas.matmul(lhs.reshape(-1, lhs.shape[-1]), rhs)
            return product.reshape(*lhs.shape[:-1], rhs.shape[-1])
        if lhs.ndim != rhs.ndim:
            rank = max(lhs.ndim, rhs.ndim)
            lhs = lhs.reshape((1,) * (rank - lhs.ndim) + lhs.shape)
            rhs = rhs.reshape((1,) * (rank - rhs.ndim) + rhs.shape)
        return _cublas.matmul(lhs, rhs)

    def generator(self, seed: int | None) -> Any:
        return cp.random.default_rng(seed)

    def sample(self, generator: Any, shape: tuple[int, ...], distribution: Distribution, dtype: Any) -> Array:
        # the shared code's draws and arithmetic, through CuPy's own ufuncs: an operator between a CuPy
        # array and a scalar goes through NumPy's ufunc dispatch, whose first call imports
        # cupyx.scipy.sparse and SciPy (0.3 - 0.7 s where SciPy is installed; a model's first random
        # initializer made it)
        kind = distribution.kind
        if np.dtype(dtype).kind != "f" or kind not in ("bernoulli", "uniform", "normal"):
            return super().sample(generator, shape, distribution, dtype)
        draw_dtype = np.dtype(np.float64 if dtype == np.float64 else np.float32)
        scalar = draw_dtype.type
        if kind == "normal":
            normal = generator.standard_normal(shape, dtype=draw_dtype)
            samples = cp.add(cp.multiply(normal, scalar(distribution.std)), scalar(distribution.mean))
        elif kind == "uniform":
            low, high = float(distribution.low), float(distribution.high)
            samples = cp.add(
                cp.multiply(generator.random(shape, dtype=draw_dtype), scalar(high - low)), scalar(low)
            )
        else:
            # Bernoulli masks (dropout draws one every step): the comparison writes the float mask in
            # one kernel instead of a bool array and a cast
            uniform = generator.random(shape, dtype=draw_dtype)
            mask = cp.empty(shape, dtype=dtype)
            _bernoulli_mask()(uniform, scalar(float(distribution.probability)), mask)
            return mask
        return self.cast(samples, dtype)

    def windows(self, array: Array, dim: int, size: int, step: int) -> Array:
        shape = list(array.shape)
        strides = list(array.strides)
        count = max(0, (shape[dim] - size) // step + 1)
        window_stride = strides[dim]
        shape[dim] = count
        strides[dim] = window_stride * step
        return cp.lib.stride_tricks.as_strided(array, shape=(*shape, size), strides=(*strides, window_stride))

    def gather(self, array: Array, dim: int, indices: Array) -> Array:
        # one kernel where the indices have the tensor's shape outside ``dim`` (always, from a Tensor)
        if _along_axis.fits(array.shape, dim, indices):
            return _along_axis.gather(array, dim, indices)
        return super().gather(array, dim, indices)

    def scatter(
        self, array: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp
    ) -> Array:
        return _scatter.along_axis(array, dim, indices, values, update)

    def select_update(
        self, array: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp
    ) -> Array:
        return _scatter.select(array, dim, indices, values, update)

    def scatter_nd(self, array: Array, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
        return _scatter.nd(array, indices, values, update)

    def argsort(self, array: Array, dim: int) -> Array:
        # CuPy's sorts are always stable (it takes no ``stable``); f16 is sorted as f32, the same order,
        # which every CuPy build sorts
        return cp.argsort(array.astype(_F32) if array.dtype == _F16 else array, axis=dim)

    def nonzero(self, array: Array) -> Array:
        return cp.argwhere(array)  # reads the count back: the result's shape depends on it
