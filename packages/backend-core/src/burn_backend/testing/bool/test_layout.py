"""Layout ops on Bool tensors: reshape, flatten, (un)squeeze, swap_dims, transpose, permute, flip,
expand, unfold, repeat, narrow, chunk, cat, stack, slice, tril and triu."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from burn_backend import Device, DType, Slice, Tensor
from burn_backend.testing import check, make, random_array
from burn_backend.testing.core._common import LAYOUTS, laid_out

SHAPE = (3, 4, 2)

OPS: dict[str, tuple[Callable[[Tensor], Tensor], Callable[[np.ndarray], Any]]] = {
    "reshape": (lambda t: t.reshape([-1, 6]), lambda a: a.reshape(-1, 6)),
    "reshape-keep": (lambda t: t.reshape([0, 0, -1]), lambda a: a),
    "flatten": (lambda t: t.flatten(), lambda a: a.reshape(-1)),
    "unsqueeze_dim": (lambda t: t.unsqueeze_dim(1), lambda a: a[:, None]),
    "squeeze_dim": (lambda t: t[:, 1].squeeze_dim(1), lambda a: a[:, 1]),
    "swap_dims": (lambda t: t.swap_dims(0, -1), lambda a: np.swapaxes(a, 0, -1)),
    "transpose": (lambda t: t.transpose(), lambda a: np.swapaxes(a, -1, -2)),
    "permute": (lambda t: t.permute([2, 0, 1]), lambda a: np.transpose(a, (2, 0, 1))),
    "flip": (lambda t: t.flip([1, 2]), lambda a: np.flip(a, (1, 2))),
    "expand": (lambda t: t[:, 0:1].expand([3, 5, 2]), lambda a: np.broadcast_to(a[:, 0:1], (3, 5, 2))),
    "unfold": (lambda t: t.unfold(1, 3, 1), lambda a: sliding_window_view(a, 3, axis=1)),
    "repeat_dim": (lambda t: t.repeat_dim(0, 2), lambda a: np.tile(a, (2, 1, 1))),
    "repeat": (lambda t: t.repeat([1, 2, 2]), lambda a: np.tile(a, (1, 2, 2))),
    "narrow": (lambda t: t.narrow(1, 1, 3), lambda a: a[:, 1:4]),
    "cat": (lambda t: Tensor.cat([t, ~t], 2), lambda a: np.concatenate([a, ~a], 2)),
    "stack": (lambda t: Tensor.stack([t, t, ~t], 1), lambda a: np.stack([a, a, ~a], 1)),
    "slice": (lambda t: t.slice([Slice(0, 3, -1), slice(None, None, 3)]), lambda a: a[::-1, ::3]),
    "getitem": (lambda t: t[..., -1], lambda a: a[..., -1:]),
    "tril": (lambda t: t.tril(), lambda a: np.tril(a)),
    "triu": (lambda t: t.triu(-1), lambda a: np.triu(a, -1)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", list(OPS))
def test_layout(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    method, reference = OPS[op]
    a = random_array(rng, SHAPE, DType.BOOL)
    check(method(laid_out(a, device, layout)), reference(a), DType.BOOL)


def test_chunk_and_split(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (7, 2), DType.BOOL)
    pieces = make(a, device).chunk(3, 0)
    assert [p.dims() for p in pieces] == [[3, 2], [3, 2], [1, 2]]
    check(Tensor.cat(pieces, 0), a, DType.BOOL)
    pieces = make(a, device).split_with_sizes([2, 5], 0)
    check(pieces[1], a[2:], DType.BOOL)


def test_iteration_and_movedim(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (2, 3, 4), DType.BOOL)
    for row, expected in zip(make(a, device), a):
        check(row, expected, DType.BOOL)
    check(make(a, device).movedim(0, 2), np.moveaxis(a, 0, 2), DType.BOOL)


def test_empty_bool_tensors(device: Device) -> None:
    empty = Tensor.zeros([0, 3], device, DType.BOOL)
    check(empty.reshape([3, 0]), np.zeros((3, 0), bool), DType.BOOL)
    check(Tensor.cat([empty, Tensor.ones([1, 3], device, DType.BOOL)], 0), np.ones((1, 3), bool), DType.BOOL)
    check(empty.T, np.zeros((3, 0), bool), DType.BOOL)
