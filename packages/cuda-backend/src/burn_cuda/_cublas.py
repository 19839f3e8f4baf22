"""cuBLAS's strided-batched GEMM through a thin ctypes binding of the library CuPy loaded.

CuPy's own cuBLAS wrappers refuse to run while a stream is being captured into a CUDA graph ("calling
cuBLAS API during stream capture is currently unsupported"); the library itself captures and replays
GEMMs correctly once its workspace is a buffer set by ``cublasSetWorkspace_v2`` (it then allocates
nothing while capturing). Every GEMM of burn-cuda (``float_matmul`` and the convolutions) goes through
here, captured or not, so a replayed step computes with the very kernels of an eager one.

One handle per (device, thread), its workspace set once; ``cublasSetStream_v2`` resets the workspace
to cuBLAS's own pool, so the workspace is set again whenever the stream changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import threading
from typing import Any

import numpy as np

from ._cupy import cp

Array = Any

WORKSPACE_BYTES = 32 << 20
"""The workspace of each handle (cuBLAS asks for 32 MiB on Hopper)."""

FAST_TF32 = os.environ.get("CUPY_TF32", "0") == "1"
"""Whether f32 products use TF32 tensor cores (CuPy's ``CUPY_TF32``, read once, as CuPy does)."""

# cudaDataType and cublasComputeType_t values (library_types.h, cublas_api.h)
_DATA_TYPES: dict[np.dtype, int] = {
    np.dtype(np.float32): 0,  # CUDA_R_32F
    np.dtype(np.float64): 1,  # CUDA_R_64F
    np.dtype(np.float16): 2,  # CUDA_R_16F
}
GEMM_DTYPES = frozenset(_DATA_TYPES)
"""The dtypes ``gemm_strided_batched`` and ``matmul`` take."""
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32, _COMPUTE_64F = 68, 77, 70
_GEMM_DEFAULT = -1
_OP_N, _OP_T = 0, 1

_library: Any = None
_library_lock = threading.Lock()
_local = threading.local()


class CublasError(RuntimeError):
    """A cuBLAS call returned a status other than success."""


def _load() -> Any:
    """The cuBLAS library CuPy uses (found in this process's mapped libraries once CuPy opened it)."""
    global _library
    if _library is not None:
        return _library
    with _library_lock:
        if _library is None:
            cp.cuda.device.get_cublas_handle()  # makes CuPy open its libcublas
            path = _mapped("libcublas.so") or ctypes.util.find_library("cublas")
            if path is None:
                raise RuntimeError("cuda: cannot find the cuBLAS library CuPy loaded")
            library = ctypes.CDLL(path)
            library.cublasGemmStridedBatchedEx.argtypes = [
                ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ]  # fmt: skip
            library.cublasSetStream_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            library.cublasSetWorkspace_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
            _library = library
    return _library


def _mapped(name: str) -> str | None:
    """The path of a shared library of ``name`` mapped into this process (Linux), else ``None``."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                if name in os.path.basename(path):
                    return path
    except OSError:
        return None
    return None


class _Handle:
    """A cuBLAS handle of one device and thread, with its workspace and the stream it is bound to."""

    def __init__(self, library: Any) -> None:
        handle = ctypes.c_void_p()
        _check(library.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
        self.handle = handle
        self.workspace = cp.empty(WORKSPACE_BYTES, dtype=np.uint8)
        self.stream = -1

    def bind(self, library: Any, stream: int) -> ctypes.c_void_p:
        if stream != self.stream:
            _check(library.cublasSetStream_v2(self.handle, stream), "cublasSetStream")
            workspace = self.workspace
            _check(
                library.cublasSetWorkspace_v2(self.handle, workspace.data.ptr, workspace.nbytes),
                "cublasSetWorkspace",
            )
            self.stream = stream
        return self.handle


def _check(status: int, call: str) -> None:
    if status != 0:
        raise CublasError(f"cuda: {call} failed with cuBLAS status {status}")


def _handle(library: Any) -> ctypes.c_void_p:
    handles: dict[int, _Handle] | None = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    device = cp.cuda.runtime.getDevice()
    entry = handles.get(device)
    if entry is None:
        entry = handles[device] = _Handle(library)
    return entry.bind(library, cp.cuda.get_current_stream().ptr)


def _scalars(dtype: np.dtype) -> np.ndarray:
    """``[1, 0]`` in the scale type cuBLAS reads for ``dtype`` (f64 for f64, else f32)."""
    return np.array([1.0, 0.0], dtype=np.float64 if dtype == np.float64 else np.float32)


_SCALARS = {dtype: _scalars(dtype) for dtype in _DATA_TYPES}
# Per dtype, everything a GEMM call passes that does not depend on its operands, worked out once. Inside
# a training step the host's caches are cold, and every line run per call costs several times its hot
# cost: with cold caches (H100 host) the bare cuBLAS call took 39 us, and this wrapper, when it still made
# its alpha/beta pointers and its error message on every call, 76 us.
_GEMM_ARGUMENTS = {
    dtype: (
        data,
        _COMPUTE_64F
        if dtype == np.float64
        else (_COMPUTE_32F_FAST_TF32 if FAST_TF32 and dtype == np.float32 else _COMPUTE_32F),
        _SCALARS[dtype].ctypes.data,
        _SCALARS[dtype].ctypes.data + _SCALARS[dtype].itemsize,
    )
    for dtype, data in _DATA_TYPES.items()
}


def gemm_strided_batched(
    a: Array,
    b: Array,
    out: Array,
    m: int,
    n: int,
    k: int,
    count: int,
    *,
    a_t: bool = False,
    b_t: bool = False,
    a_step: int,
    b_step: int,
) -> None:
    """``out[i] = op(a[i]) @ op(b[i])`` for ``i < count``, row-major, on the current stream.

    ``op(a[i])`` is ``m x k`` (stored ``k x m`` when ``a_t``), ``op(b[i])`` is ``k x n`` (stored
    ``n x k`` when ``b_t``); ``a_step`` and ``b_step`` are the element strides between batch items (0
    repeats one matrix); ``out`` is contiguous ``[count, m, n]``. f32, f64 and f16 (accumulated in f32);
    all three of one dtype. cuBLAS is column-major, so it computes ``out^T = op(b)^T op(a)^T``.
    """
    data, compute, one, zero = _GEMM_ARGUMENTS[out.dtype]
    library = _library if _library is not None else _load()
    status = library.cublasGemmStridedBatchedEx(
        _handle(library),
        _OP_T if b_t else _OP_N,
        _OP_T if a_t else _OP_N,
        n,
        m,
        k,
        one,
        b.data.ptr,
        data,
        k if b_t else n,
        b_step,
        a.data.ptr,
        data,
        m if a_t else k,
        a_step,
        zero,
        out.data.ptr,
        data,
        n,
        m * n,
        count,
        compute,
        _GEMM_DEFAULT,
    )
    if status != 0:
        _check(status, f"cublasGemmStridedBatchedEx ({count} x [{m}, {k}] @ [{k}, {n}], {out.dtype})")


def _matrix_layout(array: Array, batch: tuple[int, ...]) -> tuple[Array, bool, int] | None:
    """How cuBLAS can read the last two dims of ``array`` (shape ``[*b, r, c]``, ``b`` broadcastable to
    ``batch``) without a copy: ``(array, transposed, batch step)``, or ``None``."""
    shape, strides, itemsize = array.shape, array.strides, array.itemsize
    rows, cols = shape[-2], shape[-1]
    row_stride, col_stride = strides[-2] // itemsize, strides[-1] // itemsize
    if col_stride == 1 and (row_stride == cols or rows == 1):
        transposed = False
    elif row_stride == 1 and (col_stride == rows or cols == 1):
        transposed = True
    else:
        return None
    leading = shape[:-2]
    if all(size == 1 for size in leading):
        return array, transposed, 0 if any(size != 1 for size in batch) else rows * cols
    if tuple(leading) != batch:
        return None
    # the batch dims must be one run of matrices, rows * cols apart
    expected = rows * cols
    for size, stride in zip(reversed(leading), reversed(strides[:-2])):
        if size != 1 and stride // itemsize != expected:
            return None
        expected *= size
    return array, transposed, rows * cols


def matmul(lhs: Array, rhs: Array) -> Array:
    """``lhs @ rhs`` for arrays of equal rank >= 2 whose leading dims broadcast (f32, f64 or f16):
    one strided-batched GEMM, operands read in place where their matrices are contiguous or
    transposed-contiguous and their batch a run of matrices (else copied once)."""
    m, k = lhs.shape[-2], lhs.shape[-1]
    n = rhs.shape[-1]
    batch = tuple(b if a == 1 else a for a, b in zip(lhs.shape[:-2], rhs.shape[:-2], strict=True))
    out = cp.empty((*batch, m, n), dtype=lhs.dtype)
    count = math.prod(batch)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    operands = []
    for array in (lhs, rhs):
        layout = _matrix_layout(array, batch)
        if layout is None:
            array = cp.ascontiguousarray(cp.broadcast_to(array, (*batch, *array.shape[-2:])))
            layout = (array, False, array.shape[-2] * array.shape[-1])
        operands.append(layout)
    (a, a_t, a_step), (b, b_t, b_step) = operands
    gemm_strided_batched(a, b, out, m, n, k, count, a_t=a_t, b_t=b_t, a_step=a_step, b_step=b_step)
    return out
