"""NdArray's LSTM and GRU steps (``burn_ndarray._ops._rnn``) against a step loop written in PyTorch
(float64), forward and every gradient: saturated gates (exp overflows to inf), f32 kept f32, both
directions, sequences of 1 and 200 steps; and the recurrent product going through NumPy's BLAS from
Python, where NdArray's thread policy sets its threads."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch

from burn_ndarray._ops import _rnn


@pytest.fixture(autouse=True)
def _torch_on_one_thread() -> Any:
    # the reference's 200 tiny steps: PyTorch's intra-op threads only wait on each other (seconds on a
    # loaded machine)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _torch_lstm(x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, reverse: bool) -> Any:
    outputs = [None] * x.shape[1]
    for t in reversed(range(x.shape[1])) if reverse else range(x.shape[1]):
        i, f, g, o = (x[:, t] @ w_ih + b_ih + h @ w_hh + b_hh).chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outputs[t] = torch.cat([h, c], dim=1)
    return torch.stack(outputs, dim=1)


def _torch_gru(x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, reverse: bool) -> Any:
    outputs = [None] * x.shape[1]
    for t in reversed(range(x.shape[1])) if reverse else range(x.shape[1]):
        x_r, x_z, x_n = (x[:, t] @ w_ih + b_ih).chunk(3, dim=1)
        h_r, h_z, h_n = (h @ w_hh + b_hh).chunk(3, dim=1)
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        h = n + z * (h - n)
        outputs[t] = h
    return torch.stack(outputs, dim=1)


def _operands(gates: int, batch: int, seq: int, d: int, hidden: int, scale: float, cell: bool) -> list[Any]:
    rng = np.random.default_rng(seq * 7 + hidden)
    shapes = [(batch, seq, d), (batch, hidden)] + [(batch, hidden)] * cell
    shapes += [(d, gates * hidden), (hidden, gates * hidden), (gates * hidden,), (gates * hidden,)]
    return [(rng.standard_normal(shape) * scale).astype(np.float32) for shape in shapes]


def _check(ours: Any, reference: Any, tolerance: float) -> None:
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, reference.detach().numpy(), rtol=tolerance, atol=tolerance)


CASES = [  # batch, seq, d, hidden, weight scale, reverse
    (3, 5, 4, 7, 0.4, False),
    (3, 5, 4, 7, 0.4, True),
    (2, 1, 3, 5, 0.4, True),
    (2, 200, 3, 6, 0.3, False),
    (4, 6, 5, 8, 40.0, False),  # saturated: |pre-activation| past 88, exp(-a) is inf in f32
]


@pytest.mark.parametrize(("batch", "seq", "d", "hidden", "scale", "reverse"), CASES)
def test_lstm_matches_torch(batch: int, seq: int, d: int, hidden: int, scale: float, reverse: bool) -> None:
    operands = _operands(4, batch, seq, d, hidden, scale, cell=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning escapes from the saturated gates
        states, workspace = _rnn.lstm(*operands, reverse)
        upstream = np.random.default_rng(1).standard_normal(states.shape).astype(np.float32)
        grads = _rnn.lstm_backward(*operands, reverse, states, workspace, upstream)
    leaves = [torch.tensor(array, dtype=torch.float64, requires_grad=True) for array in operands]
    reference = _torch_lstm(*leaves, reverse)
    expected = torch.autograd.grad(reference, leaves, torch.tensor(upstream, dtype=torch.float64))
    _check(states, reference, 2e-5 if scale < 1 else 1e-4)
    for ours, theirs in zip(grads, expected, strict=True):
        _check(ours, theirs, 2e-4 if scale < 1 else 1e-3)


@pytest.mark.parametrize(("batch", "seq", "d", "hidden", "scale", "reverse"), CASES)
def test_gru_matches_torch(batch: int, seq: int, d: int, hidden: int, scale: float, reverse: bool) -> None:
    operands = _operands(3, batch, seq, d, hidden, scale, cell=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        states, workspace = _rnn.gru(*operands, reverse)
        upstream = np.random.default_rng(2).standard_normal(states.shape).astype(np.float32)
        grads = _rnn.gru_backward(*operands, reverse, states, workspace, upstream)
    leaves = [torch.tensor(array, dtype=torch.float64, requires_grad=True) for array in operands]
    reference = _torch_gru(*leaves, reverse)
    expected = torch.autograd.grad(reference, leaves, torch.tensor(upstream, dtype=torch.float64))
    _check(states, reference, 2e-5 if scale < 1 else 1e-4)
    assert grads.c0_grad is None
    for ours, theirs in zip([g for g in grads if g is not None], expected, strict=True):
        _check(ours, theirs, 2e-4 if scale < 1 else 1e-3)


def test_recurrent_product_runs_through_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    # a product made inside numba calls BLAS past NdArray's thread policy: each step's must be NumPy's
    calls: list[tuple[int, ...]] = []
    dot = np.dot

    def counting(a: Any, b: Any, out: Any = None) -> Any:
        calls.append(a.shape)
        return dot(a, b, out=out)

    monkeypatch.setattr(np, "dot", counting)
    lstm = _operands(4, 2, 9, 3, 5, 0.5, cell=True)
    states, workspace = _rnn.lstm(*lstm, False)
    _rnn.lstm_backward(*lstm, False, states, workspace, np.ones_like(states))
    gru = _operands(3, 2, 9, 3, 5, 0.5, cell=False)
    states, workspace = _rnn.gru(*gru, True)
    _rnn.gru_backward(*gru, True, states, workspace, np.ones_like(states))
    assert calls == [(2, 5)] * 9 + [(2, 20)] * 9 + [(2, 5)] * 9 + [(2, 15)] * 9
