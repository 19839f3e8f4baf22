"""Cuda's reductions (burn-cuda's reduction kernels) against PyTorch CUDA eager, side by side in one run:
sum along the last dim, along dim 0 (a bias gradient's shape, ``[rows, 512] -> [1, 512]``), along a
middle dim, the whole-tensor sum and mean, the maxima along the last dim and the argmax along it, on
f32 tensors of 1 MB, 16 MB and 256 MB, through the ``Tensor`` API. At 16 MB, the same ops through
CuPy's generic reductions (the shared ops, what Cuda used before) for comparison.

Each timed call queues ``PIPELINED`` reductions, then waits for the GPU (``device.sync()`` for ours,
``torch.cuda.synchronize()`` for PyTorch); the times are per reduction. A second table gives the read
bandwidth (the input's bytes over the time). The ratio column is our time over PyTorch's.

Without a GPU, CuPy or PyTorch CUDA it prints why and exits 0.

Run: ``python tools/bench/bench_reductions.py [--quick]``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from _harness import Row, arguments, compare, gpu_unavailable, print_table

from burn_backend import Tensor

PIPELINED = 20  # reductions queued before one wait
SIZES = {"1 MB": 1 << 20, "16 MB": 16 << 20, "256 MB": 256 << 20}
WIDTH = 512  # the last dim of the row-wise and bias-gradient cases


def _pipelined(function: Callable[[], object], sync: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        for _ in range(PIPELINED):
            function()
        sync()

    return run


def _per_op(row: Row) -> Row:
    return Row(row.name, row.ours / PIPELINED, row.reference / PIPELINED, row.reference_name, row.target)


def _cases(count: int) -> list[tuple[str, tuple[int, ...], Callable[[Tensor], Any], Callable[[Any], Any]]]:
    """(name, shape, ours, PyTorch's) for ``count`` f32 values."""
    rows = count // WIDTH
    middle = (16, count // (16 * 64), 64)
    return [
        ("sum_dim(-1)", (rows, WIDTH), lambda t: t.sum_dim(1), lambda t: t.sum(1, keepdim=True)),
        (
            "sum_dim(0), bias gradient",
            (rows, WIDTH),
            lambda t: t.sum_dim(0),
            lambda t: t.sum(0, keepdim=True),
        ),
        ("sum_dim(1) of [16, n, 64]", middle, lambda t: t.sum_dim(1), lambda t: t.sum(1, keepdim=True)),
        ("sum()", (count,), lambda t: t.sum(), lambda t: t.sum()),
        ("mean()", (count,), lambda t: t.mean(), lambda t: t.mean()),
        ("max_dim(-1)", (rows, WIDTH), lambda t: t.max_dim(1), lambda t: t.amax(1, keepdim=True)),
        ("argmax(-1)", (rows, WIDTH), lambda t: t.argmax(1), lambda t: t.argmax(1, keepdim=True)),
    ]


def _rows(torch: Any, repeat: int) -> tuple[list[Row], list[tuple[str, float, float]]]:
    from burn_cuda import Cuda

    device = Cuda().device(0)
    sync, tsync = device.sync, torch.cuda.synchronize
    rng = np.random.default_rng(0)
    rows, bandwidth = [], []
    for label, nbytes in SIZES.items():
        count = nbytes // 4
        for name, shape, ours, theirs in _cases(count):
            values = rng.standard_normal(shape, dtype=np.float32)
            x = Tensor.from_data(values, device)
            tx = torch.from_numpy(values).cuda()
            row = _per_op(
                compare(
                    f"{name}, {label}",
                    _pipelined(functools.partial(ours, x), sync),
                    _pipelined(functools.partial(theirs, tx), tsync),
                    "torch",
                    "<= 1.1x",
                    repeat,
                    5,
                )
            )
            rows.append(row)
            bandwidth.append((row.name, values.nbytes / row.ours / 1e9, values.nbytes / row.reference / 1e9))
            if label == "16 MB":
                rows.append(_before(device, x, f"{name}, {label}", ours, tx, theirs, torch, repeat))
            del x, tx
    return rows, bandwidth


@contextlib.contextmanager
def _shared_reductions(backend: Any) -> Iterator[None]:
    """Within: ``backend``'s class reduces through the shared ops (CuPy's generic reductions, what Cuda
    used before its kernels). The class holds its ops itself (each wrapped to run on its GPU)."""
    from burn_backend.array import ArrayFloatOps, ArrayIntOps
    from burn_cuda._ops.reduce import ReduceOps

    cls = type(backend)
    names = [name for name in vars(ReduceOps) if name.startswith(("float_", "int_"))]
    saved = {name: vars(cls)[name] for name in names}
    for name in names:
        setattr(cls, name, getattr(ArrayFloatOps if name.startswith("float_") else ArrayIntOps, name))
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)


def _before(
    device: Any, x: Tensor, name: str, ours: Any, tx: Any, theirs: Any, torch: Any, repeat: int
) -> Row:
    """The op through CuPy's generic reductions, against PyTorch."""
    with _shared_reductions(device.backend):
        row = compare(
            f"{name}, CuPy reductions (before)",
            _pipelined(lambda: ours(x), device.sync),
            _pipelined(lambda: theirs(tx), torch.cuda.synchronize),
            "torch",
            "(before)",
            repeat,
            5,
        )
    return _per_op(row)


def main() -> None:
    args = arguments(__doc__ or "")
    reason = gpu_unavailable()
    if reason is not None:
        print(f"bench_reductions: skipped ({reason})")
        return
    import torch

    rows, bandwidth = _rows(torch, 2 if args.quick else 5)
    print_table("Reductions of f32 on Cuda vs PyTorch CUDA (per reduction)", rows)
    print(f"\n{'read bandwidth':<46} {'ours':>12} {'torch':>12}")
    for name, ours, theirs in bandwidth:
        print(f"{name:<46} {ours:8.0f} GB/s {theirs:8.0f} GB/s")


if __name__ == "__main__":
    main()
