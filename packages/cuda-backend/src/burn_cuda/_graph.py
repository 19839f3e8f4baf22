"""``CudaStepCapture``: a step's kernels recorded once as a CUDA graph and replayed.

The step runs on a stream of its own in capture mode (CUDA records the launches, copies and cuBLAS
calls instead of running them), with CuPy's allocations going to a memory pool private to the capture:
the buffers the graph reads and writes are never handed to anything else, so a replay can only write
where the captured step wrote. Replays are launched on the caller's current stream, ordered after its
earlier work. What cannot be captured raises ``CaptureError`` and leaves no graph: a read of a device
value on the host (CuPy refuses device-to-host copies while capturing), a synchronization, CuPy's own
cuBLAS wrappers (burn-cuda's GEMMs use ``burn_cuda._cublas``, which captures).

Random draws capture as they run: CuPy's generators keep their state on the device and advance it in
the drawing kernel, so each replay draws new values, the values the same step run eagerly would draw.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from burn_backend.kit import CaptureError

from ._cupy import cp
from ._fusion import kernel_of
from ._transfer import upload

T = TypeVar("T")
Array = Any


class CudaStepCapture:
    """One step's CUDA graph on one GPU and the private memory pool its buffers live in.

    Args:
        index: the GPU (CuPy device id).
    """

    def __init__(self, index: int) -> None:
        self.index = index
        with cp.cuda.Device(index):
            self.pool = cp.cuda.MemoryPool()
            self.stream = cp.cuda.Stream(non_blocking=True)
        self.graph: Any = None
        self.statics: list[Array] = []
        self.tables: collections.OrderedDict[tuple[tuple[int, int, int], ...], Array] = (
            collections.OrderedDict()
        )
        """The copy tables on the GPU, by their rows: a step's copies repeat (the outputs passed back
        in are the same buffers at every replay, a batch comes back to the few blocks the memory pool
        hands out for it), so a table is uploaded once and reused."""

    def static_copy(self, primitive: Array) -> Array:
        with cp.cuda.Device(self.index), cp.cuda.using_allocator(self.pool.malloc):
            copy = cp.empty(primitive.shape, dtype=primitive.dtype)
            copy[...] = primitive
        self.statics.append(copy)
        return copy

    def output(self, primitive: Array) -> Array:
        # an argument returned as it is, or a view of one: its own buffer, written by the graph
        if any(cp.may_share_memory(primitive, static) for static in self.statics):
            return primitive.copy()
        return primitive

    def record(self, body: Callable[[], T]) -> T:
        if self.graph is not None:
            raise RuntimeError("cuda: this step capture has already recorded its step")
        stream = self.stream
        with cp.cuda.Device(self.index):
            # the captured work reads what the current stream computed before it
            stream.wait_event(cp.cuda.get_current_stream().record())
            with stream, cp.cuda.using_allocator(self.pool.malloc):
                stream.begin_capture()
                try:
                    result = body()
                except BaseException as error:
                    graph = _end_capture(stream)
                    if graph is None or isinstance(error, CaptureError) or _capture_refused(error):
                        reason = f"{type(error).__name__}: {error}"
                        raise CaptureError(
                            f"cuda: the step could not be captured into a CUDA graph ({reason})"
                        ) from error
                    raise
                graph = _end_capture(stream)
            if graph is None:
                raise CaptureError("cuda: the CUDA graph capture was invalidated by an operation of the step")
        self.graph = graph
        return result

    def copy_into(self, targets: Sequence[Array], sources: Sequence[Array]) -> None:
        # contiguous pairs in one launch (a step's arguments are tens of tensors: each copy of its own
        # would cost a host call, and a wait for the GIL where other threads hold it)
        rows = []
        with cp.cuda.Device(self.index):
            for target, source in zip(targets, sources, strict=True):
                if source.flags.c_contiguous and target.flags.c_contiguous:
                    if source.nbytes:
                        rows.append((source.data.ptr, target.data.ptr, source.nbytes))
                else:
                    target[...] = source
            for start in range(0, len(rows), _COPY_PAIRS):
                chunk = tuple(rows[start : start + _COPY_PAIRS])
                table = self.tables.get(chunk)
                if table is None:
                    table = self.tables[chunk] = upload(np.array(chunk, dtype=np.uint64))
                    if len(self.tables) > _COPY_TABLES:
                        self.tables.popitem(last=False)
                else:
                    self.tables.move_to_end(chunk)
                _copy_many(table, chunk)

    def replay(self) -> None:
        if self.graph is None:
            raise RuntimeError("cuda: this step capture has not recorded a step")
        with cp.cuda.Device(self.index):
            self.graph.launch(cp.cuda.get_current_stream())

    def detach(self, primitive: Array) -> Array:
        with cp.cuda.Device(self.index):
            return primitive.copy()

    def close(self) -> None:
        self.graph = None
        self.statics = []
        self.tables.clear()
        self.pool.free_all_blocks()


_COPY_SOURCE = r"""
extern "C" __global__ void burn_copy_many(const unsigned long long* table) {
    const unsigned long long from = table[3 * blockIdx.y], to = table[3 * blockIdx.y + 1];
    const unsigned long long nbytes = table[3 * blockIdx.y + 2];
    const unsigned long long start = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    if (((from | to | nbytes) & 15) == 0) {
        const int4* source = (const int4*)from;
        int4* target = (int4*)to;
        for (unsigned long long i = start; i < nbytes / 16; i += stride) target[i] = source[i];
    } else if (((from | to | nbytes) & 3) == 0) {
        const unsigned int* source = (const unsigned int*)from;
        unsigned int* target = (unsigned int*)to;
        for (unsigned long long i = start; i < nbytes / 4; i += stride) target[i] = source[i];
    } else {
        const unsigned char* source = (const unsigned char*)from;
        unsigned char* target = (unsigned char*)to;
        for (unsigned long long i = start; i < nbytes; i += stride) target[i] = source[i];
    }
}
"""
_COPY_THREADS = 256
_COPY_BLOCKS = 128  # per pair at most: a grid-stride loop covers larger tensors
_COPY_PAIRS = 65535  # per launch: CUDA's largest grid height
_COPY_TABLES = 32  # kept per capture


def _copy_many(table: Array, rows: Sequence[tuple[int, int, int]]) -> None:
    """Copy ``nbytes`` from ``source`` to ``target`` for each ``(source, target, nbytes)`` of ``rows``
    (pointers on the current GPU; at most ``_COPY_PAIRS``), in one launch on the current stream;
    ``table`` holds the rows on the GPU (passed as kernel arguments instead, their numbers would cost
    CuPy a microsecond each to convert)."""
    largest = max(row[2] for row in rows)
    blocks = min(_COPY_BLOCKS, max(1, -(-largest // (16 * _COPY_THREADS))))
    kernel_of(_COPY_SOURCE, "burn_copy_many")((blocks, len(rows)), (_COPY_THREADS,), (table,))


def _end_capture(stream: Any) -> Any:
    """End the capture on ``stream``: the graph, or ``None`` where CUDA invalidated the capture."""
    try:
        return stream.end_capture()
    except Exception:  # cudaErrorStreamCaptureInvalidated and kin: nothing was recorded
        return None


def _capture_refused(error: BaseException) -> bool:
    """Whether ``error`` is CUDA or CuPy refusing an operation during capture (not the step's own bug)."""
    text = str(error).lower()
    return isinstance(error, cp.cuda.runtime.CUDARuntimeError) or "captur" in text
