"""``Cuda``: the NVIDIA GPU backend on CuPy."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from burn_backend import Device, DType, PendingRead, Tensor, TensorData
from burn_backend.array import ArrayBackend
from burn_backend.kit import (
    FUSED_BLOCK_KINDS,
    ElementwiseBlock,
    ElementwisePlan,
    MatmulBlock,
    ReduceBlock,
    interface_methods,
)

from . import _cudnn, _cupy
from . import _runtime as _cupy_runtime
from ._cupy import cp
from ._fusion import compile_block
from ._fusion_fused import compile_matmul, compile_reduce
from ._graph import CudaStepCapture
from ._ops._collective import CollectiveOps
from ._ops.activation import ActivationOps
from ._ops.attention import AttentionOps
from ._ops.float import FloatOps
from ._ops.module import ModuleOps
from ._ops.norm import NormOps
from ._ops.reduce import ReduceOps
from ._runtime import CupyRuntime
from ._transfer import download_async

_runtime = CupyRuntime()


def _device_index(args: tuple[Any, ...]) -> int | None:
    """The GPU an op's arguments live on: its first array's, else its first device's."""
    for arg in args:
        device = getattr(arg, "device", None)
        if device is not None and hasattr(device, "id"):
            return int(device.id)
        if isinstance(arg, Device):
            return arg.index
        if isinstance(arg, (list, tuple)) and arg:
            found = _device_index(tuple(arg))
            if found is not None:
                return found
    return None


def _on_its_device(method: Any) -> Any:
    """``method`` run with the GPU of its arguments current, so that what it allocates lives there
    (CuPy allocates on, and launches kernels on, the current device). With one GPU it is always
    current, and the method runs as it is."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        count = _cupy_runtime._count  # read, not called: this wrapper runs on every op
        if count is None or count < 2:
            return method(self, *args, **kwargs)
        index = _device_index(args)
        if index is None or index == cp.cuda.runtime.getDevice():
            return method(self, *args, **kwargs)
        with cp.cuda.Device(index):
            return method(self, *args, **kwargs)

    return wrapper


_NOT_WRAPPED = {"device_count", "supports_dtype", "dtype_usage", "ad_enabled"}


def _every_op_on_its_device(cls: type) -> type:
    for name in interface_methods():
        if name not in _NOT_WRAPPED:
            setattr(cls, name, _on_its_device(getattr(cls, name)))
    return cls


@_every_op_on_its_device
class Cuda(NormOps, AttentionOps, ReduceOps, ActivationOps, FloatOps, ModuleOps, CollectiveOps, ArrayBackend):
    """The NVIDIA GPU backend: tensors are CuPy arrays, one device per GPU.

    Matrix products go through cuBLAS with TF32 off (CuPy's default; set ``CUPY_TF32=1`` before CuPy
    is imported to allow it, for cuBLAS and cuDNN alike). Convolutions go through cuDNN where NVIDIA's
    cuDNN frontend is installed (``pip install 'burn-cuda[cudnn13]'``, or ``cudnn12``) and serves the
    case, else through burn-cuda's own kernels. Ops are queued on the device's current stream: nothing
    waits for the GPU except reading values (``into_data``, ``into_scalar``, and ``wait()`` on a
    ``Transaction.execute_async``), ``sync``, and the ops whose result's shape depends on values
    (``argwhere``, ``mask_select``). Copies from the host go through pinned memory and do not wait.
    Without CuPy or a GPU the backend has no devices.

    Args:
        float_dtype: the default float dtype (f32 unless set).
        int_dtype: the default int dtype, also that of returned indices (i64 unless set).
        cudnn: whether convolutions may use cuDNN (where it is installed and serves the case); by
            default yes, unless the environment variable ``BURN_CUDA_CUDNN`` is ``0``.

    Example:
        >>> from burn_backend import Tensor
        >>> device = Cuda().device()  # doctest: +SKIP
        >>> Tensor.from_data([[1.0, 2.0]], device=device).sum().into_scalar()  # doctest: +SKIP
        3.0
        >>> Cuda(cudnn=False).use_cudnn  # burn-cuda's own convolution kernels only
        False
    """

    name: ClassVar[str] = "cuda"
    is_cpu: ClassVar[bool] = False
    validates_index_values: ClassVar[bool] = False  # a check would read indices back: a synchronization
    conformance_exclusions: ClassVar[Mapping[str, str]] = {}
    fused_block_kinds: ClassVar[frozenset[str]] = FUSED_BLOCK_KINDS
    """What the fusion compiler takes on: every kind of ``burn_backend.kit.FUSED_BLOCK_KINDS`` (element-wise
    chains of floats, ints and bools, with casts; reduce blocks of floats; matmul blocks)."""
    runtime = _runtime

    def __init__(
        self,
        float_dtype: DType | str = DType.F32,
        int_dtype: DType | str = DType.I64,
        cudnn: bool | None = None,
    ) -> None:
        super().__init__(float_dtype, int_dtype)
        self.use_cudnn = _cudnn.enabled_by_environment() if cudnn is None else bool(cudnn)

    def settings(self) -> tuple[Any, ...]:
        """The float and int dtypes, and whether convolutions may use cuDNN."""
        return (*super().settings(), self.use_cudnn)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(float_dtype={self.float_dtype}, int_dtype={self.int_dtype}, "
            f"cudnn={self.use_cudnn})"
        )

    def device(self, index: int = 0) -> Device:
        """The handle of GPU ``index``.

        Raises:
            ValueError: there is no such GPU; where there is none at all, the message says why (CuPy
                missing, no driver, no GPU).
        """
        if _runtime.device_count() == 0:
            reason = _cupy.unavailable_reason()
            raise ValueError(f"cuda: no device {index}; this backend has 0 device(s): {reason}")
        return super().device(index)

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        """One CUDA C kernel for the block, generated from the op table and compiled by NVRTC
        (``burn_cuda._fusion``); ``None`` for u64 and bf16 blocks and int powers, which run op by op."""
        self.check_device(device)
        return compile_block(block, device)

    def compile_fused(
        self, block: ElementwiseBlock | ReduceBlock | MatmulBlock, device: Device
    ) -> ElementwisePlan | None:
        """The fusion hook for element-wise blocks with casts (one kernel, ``burn_cuda._fusion``),
        reduce blocks (one CUDA C kernel, a thread block per row) and matmul blocks (cuBLAS, then the
        epilogue's kernel) (``burn_cuda._fusion_fused``); reduce blocks with casts or int values run op
        by op (``None``)."""
        self.check_device(device)
        if isinstance(block, ReduceBlock):
            return compile_reduce(block, device)
        if isinstance(block, MatmulBlock):
            return compile_matmul(self, block, device)
        return compile_block(block, device)

    def tr_execute_async(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> PendingRead[tuple[list[TensorData], list[TensorData], list[TensorData]]]:
        """Queue the copies of every tensor to pinned host memory, each on its GPU's current stream, and
        return at once: ``wait()`` waits for those copies only, not for what was queued after them."""
        reads = [[download_async(array) for array in group] for group in (floats, ints, bools)]

        def finish() -> tuple[list[TensorData], list[TensorData], list[TensorData]]:
            groups = [[TensorData._wrap(read()) for read in group] for group in reads]
            return groups[0], groups[1], groups[2]

        return PendingRead(finish)

    def step_capture(self, device: Device) -> CudaStepCapture:
        """The step-capture hook (``burn_backend.kit.CAPTURE_HOOK``): a CUDA graph of one step with its
        private memory pool (``burn_cuda._graph``), which ``burn_fusion.replay`` records and replays."""
        self.check_device(device)
        return CudaStepCapture(device.index)

    def memory_cleanup(self, device: Device) -> None:
        """Give the cached blocks of CuPy's memory pool on ``device`` back to the driver."""
        self.check_device(device)
        with cp.cuda.Device(device.index):
            cp.get_default_memory_pool().free_all_blocks()


def _check_cuda(device: Device) -> None:
    """Raise unless ``device`` is a GPU of a Cuda backend."""
    if not isinstance(device.backend, Cuda):
        raise ValueError(f"cuda: {device} is not a device of the Cuda backend")
    device.backend.check_device(device)


def memory_stats(device: Device) -> dict[str, int]:
    """Bytes of CuPy's memory pool on ``device``: ``in_use`` by live arrays and ``reserved`` (in use
    plus cached for reuse)."""
    _check_cuda(device)
    with cp.cuda.Device(device.index):
        pool = cp.get_default_memory_pool()
        return {"in_use": int(pool.used_bytes()), "reserved": int(pool.total_bytes())}


_DLPACK_CUDA = 2  # DLPack's device type of CUDA memory (kDLCUDA)


def from_dlpack(source: Any, device: Device | None = None) -> Tensor:
    """A Cuda tensor from any object with ``__dlpack__`` (a PyTorch CUDA tensor, a CuPy array, ...),
    keeping its dtype.

    GPU memory is shared, not copied, where it already lives on ``device`` (by default the GPU it is
    on): the tensor and ``source`` then see the same values, so leave ``source`` unchanged while the
    tensor is in use (Burn's primitives are never written to). Host memory, or memory on another GPU,
    is copied. The other way, ``torch.from_dlpack(tensor)`` shares a Cuda tensor's memory with PyTorch.

    Raises:
        ValueError: ``device`` is not a Cuda device, or there is no GPU.
    """
    kind, index = source.__dlpack_device__()
    if int(kind) != _DLPACK_CUDA:
        target = device if device is not None else Cuda().device(0)
        _check_cuda(target)
        return Tensor.from_dlpack(source, target)
    target = device if device is not None else Cuda().device(int(index))
    _check_cuda(target)
    with cp.cuda.Device(int(index)):
        array = cp.from_dlpack(source)
    if array.device.id != target.index:
        array = _runtime.move(array, target.index)
    return Tensor.from_primitive(array, target)
