"""NdArray's thread policy: N cores run N busy threads, whoever owns them.

Three kinds of threads compute for NdArray: its own workers (a convolution splits its batch over them),
numba's (the parallel kernels: erf, GELU, Adam, fused blocks) and BLAS's (every matrix product). Each
library sizes itself to the whole machine on its own, so a convolution that split its batch over two
workers, each calling a two-thread BLAS, ran four busy threads on two cores (2 to 5 times slower, and
96x slower than onnxruntime on a ResNet where a third library's threads joined in). The policy grants
``N`` threads to the process and divides them wherever work is split:

- a split over ``W`` workers (``parallel``) runs BLAS with ``N // W`` threads inside the workers, and
  numba kernels called from a worker run on that worker's share too;
- outside a split, a single product gets all ``N`` BLAS threads and a parallel kernel all ``N`` numba
  threads.

``N`` is ``NdArray(num_threads=...)`` where given, else ``BURN_NUM_THREADS``, else ``OMP_NUM_THREADS``
(which a launcher of several processes sets to each one's share, ``burn_train.launch``), else the cores
the process may run on (``os.sched_getaffinity``: under ``taskset -c 2,3`` that is 2, where
``os.cpu_count()`` says 16 and numba would start 16 threads).

BLAS threads are set through threadpoolctl (a dependency of burn-ndarray), which finds the BLAS that
NumPy loaded (its bundled OpenBLAS) and calls that library's own setter (``openblas_set_num_threads``):
environment variables are read only when the library loads, which is before NdArray is imported. The
setting is process-wide, so a product that another Python thread runs while a split is in flight gets
the split's share too. Numba's pool is sized once, when numba loads (``NUMBA_NUM_THREADS`` unless the
environment names it): a later, larger ``N`` is capped there; a smaller one masks threads out with
``numba.set_num_threads``, which is per calling thread, so the policy sets it in each thread before a
kernel runs (``numba_threads``).

OpenBLAS's idle threads spin after a product (up to about 0.1 s of ``sched_yield`` calls before they
sleep; the timeout is read only when the library loads, from ``OPENBLAS_THREAD_TIMEOUT``): a split
that starts right after a multi-threaded product shares the cores with them for that long. The policy
keeps them from being woken again during a split (BLAS at one thread per worker), which is what stops
the fight; ``OPENBLAS_THREAD_TIMEOUT=1`` set before NumPy is imported shortens the spin itself.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

ENV = "BURN_NUM_THREADS"
MAX_WORKERS = 4
"""The most workers one split uses: NumPy's calls release the GIL, but the Python between them does not,
and past four workers on short calls they wait on it more than they compute."""

_lock = threading.Lock()
_granted: list[int] = []  # N, once decided
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_blas: Any = None  # threadpoolctl's controller of the loaded BLAS libraries
_local = threading.local()  # per thread: ``share`` (inside a split), ``numba`` (what numba was set to)
_generation = [0]  # bumped when N changes, so each thread sets numba again


def _parse(value: str, source: str) -> int:
    text = value.strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"burn_ndarray: {source} must be a positive integer (threads), got {value!r}")
    return int(text)


def default_threads() -> int:
    """The thread count the environment asks for: ``BURN_NUM_THREADS``, else ``OMP_NUM_THREADS``, else
    the number of cores this process may run on.

    Raises:
        ValueError: ``BURN_NUM_THREADS`` is set to something other than a positive integer.

    Example:
        >>> default_threads() >= 1
        True
    """
    value = os.environ.get(ENV)
    if value is not None and value.strip():
        return _parse(value, ENV)
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    return max(1, cores)


def num_threads() -> int:
    """The threads NdArray's work may use in this process (``N``), decided on first use."""
    if _granted:
        return _granted[0]
    set_num_threads(None)
    return _granted[0]


def set_num_threads(count: int | None) -> None:
    """Grant ``count`` threads to NdArray's work in this process (``None``: ``default_threads()``), and
    set the loaded BLAS libraries to that many.

    Raises:
        ValueError: ``count`` is not a positive integer, or ``BURN_NUM_THREADS`` is malformed.
    """
    if count is None:
        count = default_threads()
    elif isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"burn_ndarray: num_threads must be a positive integer, got {count!r}")
    count = int(count)
    with _lock:
        changed = not _granted or _granted[0] != count
        _granted[:] = [count]
        if changed:
            _generation[0] += 1
            _set_blas(count)


def _controller(refresh: bool = False) -> Any:
    """threadpoolctl's controller of the BLAS libraries loaded (found again with ``refresh``: a library
    loaded since, such as another package's OpenBLAS, is then set too)."""
    global _blas
    if _blas is None or refresh:
        try:
            from threadpoolctl import ThreadpoolController

            _blas = ThreadpoolController().select(user_api="blas")
        except Exception:  # threadpoolctl missing or unable to inspect this process: BLAS as it is
            _blas = False
    return _blas


def _set_blas(count: int) -> None:
    controller = _controller(refresh=True)
    if controller:
        for library in controller.lib_controllers:
            library.set_num_threads(count)


def _share() -> int:
    """The threads the calling thread may use: its split's share inside a split, else ``N``."""
    share = getattr(_local, "share", None)
    return num_threads() if share is None else int(share)


def numba_threads() -> int:
    """The threads a numba kernel called from this thread may use, set in numba for this thread (numba's
    setting is per thread); at most the size numba's pool was started with."""
    share = _share()
    state = getattr(_local, "numba", None)
    if state is not None and state[0] == share and state[1] == _generation[0]:
        return int(state[2])
    import numba

    granted = max(1, min(share, int(numba.config.NUMBA_NUM_THREADS)))  # type: ignore[attr-defined]
    numba.set_num_threads(granted)
    _local.numba = (share, _generation[0], granted)
    return granted


def prepare_numba() -> None:
    """Before numba is first imported: size its pool to ``N`` unless ``NUMBA_NUM_THREADS`` is set
    (numba reads it once, at import, and would otherwise start ``os.cpu_count()`` threads), and let its
    OpenMP workers sleep between parallel kernels unless ``OMP_WAIT_POLICY`` is set.

    numba's ``omp`` threading layer loads GNU OpenMP on the first parallel kernel, which reads
    ``OMP_WAIT_POLICY`` then; its default (active) leaves each worker spinning after a kernel. With two
    threads on a machine where other work shares the cores, a parallel ReLU of 2M elements took 7.8 ms
    instead of 0.25 and a batch norm backward 7.9 instead of 2.0, and the spinning workers slowed the
    convolutions' workers in between (a ResNet step 381-417 ms against 332). Passive workers cost a
    wake-up per kernel, and the kernels that split are those of 1M elements and more (``_kernels``).
    A GNU OpenMP already loaded (the same library, by another package) keeps its setting; PyTorch's own
    copy is not this one."""
    if "numba" not in sys.modules and "NUMBA_NUM_THREADS" not in os.environ:
        os.environ["NUMBA_NUM_THREADS"] = str(num_threads())
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def workers(parts: int) -> int:
    """How many threads a split into ``parts`` independent parts should run on: at most ``N`` (the
    calling thread's share inside a split), ``MAX_WORKERS`` and ``parts``."""
    return max(1, min(parts, _share(), MAX_WORKERS))


def _forget_pool() -> None:
    # a forked child has none of the parent's threads: it makes its own pool when it needs one
    global _pool, _pool_size
    _pool, _pool_size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _executor(size: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < size:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="burn-ndarray")
            _pool_size = size
            if old is not None:
                old.shutdown(wait=False)
        return _pool


@contextmanager
def _blas_share(share: int) -> Iterator[None]:
    """BLAS at ``share`` threads while a split runs, back to the caller's share after."""
    controller = _controller()
    if not controller:
        yield
        return
    outer = _share()
    for library in controller.lib_controllers:
        library.set_num_threads(share)
    try:
        yield
    finally:
        for library in controller.lib_controllers:
            library.set_num_threads(outer)


def _run(body: Callable[[int], None], index: int, share: int) -> None:
    # NumPy's error state is per thread: IEEE results (inf, NaN) stay silent in the workers too
    previous = getattr(_local, "share", None)
    _local.share = share
    try:
        with np.errstate(all="ignore"):
            body(index)
    finally:
        _local.share = previous


def parallel(body: Callable[[int], None], parts: int) -> None:
    """``body(i)`` for each ``i < parts``, on ``parts`` threads (the calling thread runs part 0), with
    the calling thread's threads divided among them: BLAS and numba get ``share // parts`` each.
    ``parts`` should come from ``workers``; a single part runs here, with the whole share."""
    if parts <= 1:
        _run(body, 0, _share())
        return
    share = max(1, _share() // parts)
    pool = _executor(parts - 1)
    with _blas_share(share):
        futures = [pool.submit(_run, body, index, share) for index in range(1, parts)]
        try:
            _run(body, 0, share)
        finally:
            for future in futures:
                future.result()
