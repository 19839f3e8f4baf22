"""``NdArray``: the CPU backend on NumPy."""

from __future__ import annotations

from typing import ClassVar

from burn_backend import DType
from burn_backend.array import ArrayBackend

from . import _threads
from ._accelerated import NumbaOps
from ._allocator import keep_freed_memory
from ._ops._attention import AttentionOps
from ._ops._norm import NormOps
from ._ops._quant import QuantOps
from ._ops.module import ModuleOps
from ._runtime import NumpyRuntime


class NdArray(NormOps, AttentionOps, ModuleOps, NumbaOps, QuantOps, ArrayBackend):
    """The CPU backend: tensors are NumPy arrays, matrix products and convolutions use BLAS.

    Args:
        float_dtype: the default float dtype (f32 unless set).
        int_dtype: the default int dtype, also that of returned indices (i64 unless set).
        num_threads: the threads NdArray's work may use in this process, divided among its own workers,
            numba's and BLAS's wherever work is split (``burn_ndarray._threads``); a process-wide
            setting, not part of the backend's identity. Unset: ``BURN_NUM_THREADS``, else
            ``OMP_NUM_THREADS``, else the cores the process may run on.

    Raises:
        ValueError: ``num_threads`` (or ``BURN_NUM_THREADS``) is not a positive integer.

    Example:
        >>> from burn_backend import Tensor
        >>> device = NdArray().device()
        >>> Tensor.from_data([[1.0, 2.0]], device=device).sum().into_scalar()
        3.0
    """

    name: ClassVar[str] = "ndarray"
    is_cpu: ClassVar[bool] = True
    runtime = NumpyRuntime()

    def __init__(
        self,
        float_dtype: DType | str = DType.F32,
        int_dtype: DType | str = DType.I64,
        *,
        num_threads: int | None = None,
    ) -> None:
        super().__init__(float_dtype, int_dtype)
        if num_threads is not None:
            _threads.set_num_threads(num_threads)
        else:
            _threads.num_threads()  # the environment's setting, checked and applied once


keep_freed_memory()
