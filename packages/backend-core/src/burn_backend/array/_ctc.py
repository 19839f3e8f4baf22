"""The CTC loss and its gradient over an array namespace (PyTorch's ``ctc_loss``, ``reduction='none'``).

Written once (the interface's default runs it over NumPy on the host), over every sample at once:
log-space forward and backward variables over the extended labels (a blank between labels and at both
ends), one step per frame, a sample's variables frozen past its input length, both started from a
virtual frame. They compute in float64 (the lattice is small next to the log-probabilities it reads)
and return the input's dtype. Each function takes the backend (an ``ArrayBackend``) first.
"""

from __future__ import annotations

import math
from typing import Any

from .._dtype import DType
from .._options import IndexingUpdateOp

Array = Any


class _Lattice:
    """The extended labels of every sample and what the recursions read of them."""

    def __init__(
        self,
        b: Any,
        log_probs: Array,
        targets: Array,
        input_lengths: Array,
        target_lengths: Array,
        blank: int,
    ) -> None:
        xp, runtime = b.xp, b.runtime
        self.xp = xp
        i64 = runtime.dtype(DType.I64)
        self.log_probs = runtime.cast(log_probs, runtime.dtype(DType.F64))
        self.frames, self.batch, self.classes = log_probs.shape
        n, e = self.batch, 2 * targets.shape[1] + 1
        self.states = e
        self.last = 2 * runtime.cast(target_lengths, i64)  # the state 2L: the final blank
        labels = xp.full((n, e), blank, dtype=i64)
        labels[:, 1::2] = runtime.cast(targets, i64)
        # states past 2L hold padding (maybe out of range): read the blank there instead
        state = xp.arange(e, dtype=i64)
        self.labels = xp.where(state[None, :] > self.last[:, None], blank, labels)
        self.skip = xp.zeros((n, e), dtype=runtime.dtype(DType.BOOL))  # state s may be entered from s - 2
        self.skip[:, 2:] = (self.labels[:, 2:] != blank) & (self.labels[:, 2:] != self.labels[:, :-2])
        self.spread = xp.broadcast_to(self.labels[None, ...], (self.frames, n, e))
        self.emissions = xp.take_along_axis(self.log_probs, self.spread, axis=2)  # [frames, n, e]
        frame = xp.arange(self.frames, dtype=i64)
        self.active = frame[:, None] < runtime.cast(input_lengths, i64)[None, :]  # [frames, n]
        self.final = state[None, :] == self.last[:, None]  # [n, e]

    def run(self, start: Array, forward: bool) -> tuple[Array, Array]:
        """The variables after each frame ``[frames, n, e]`` (in time order) and after the last step."""
        xp = self.xp
        n, e = self.batch, self.states
        out = xp.empty((self.frames, n, e), dtype=start.dtype)
        shifted = xp.full((n, e), -math.inf, dtype=start.dtype)
        skipped = xp.full((n, e), -math.inf, dtype=start.dtype)
        state = start
        for t in range(self.frames) if forward else reversed(range(self.frames)):
            if forward:
                shifted[:, 1:] = state[:, :-1]
                skipped[:, 2:] = xp.where(self.skip[:, 2:], state[:, :-2], -math.inf)
            else:
                shifted[:, :-1] = state[:, 1:]
                skipped[:, :-2] = xp.where(self.skip[:, 2:], state[:, 2:], -math.inf)
            new = xp.logaddexp(xp.logaddexp(state, shifted), skipped) + self.emissions[t, ...]
            state = xp.where(self.active[t, :, None], new, state)
            out[t, ...] = state
        return out, state

    def start(self, forward: bool) -> Array:
        """The variables before the first step: 0 (log 1) at the first state, or the final ones."""
        xp = self.xp
        first = xp.arange(self.states)[None, :] == 0 if forward else self.final
        return xp.where(first, 0.0, xp.full((self.batch, self.states), -math.inf, dtype=self.log_probs.dtype))

    def nll(self, alpha: Array) -> Array:
        xp = self.xp
        blank_end = xp.take_along_axis(alpha, self.last[:, None], axis=1)[:, 0]
        label = xp.take_along_axis(alpha, xp.maximum(self.last - 1, 0)[:, None], axis=1)[:, 0]
        return -xp.logaddexp(blank_end, xp.where(self.last > 0, label, -math.inf))


def ctc_loss(
    self: Any, log_probs: Array, targets: Array, input_lengths: Array, target_lengths: Array, blank: int
) -> Array:
    lattice = _Lattice(self, log_probs, targets, input_lengths, target_lengths, blank)
    _, alpha = lattice.run(lattice.start(True), True)
    return self.runtime.cast(lattice.nll(alpha), log_probs.dtype)


def ctc_loss_backward(
    self: Any,
    log_probs: Array,
    targets: Array,
    input_lengths: Array,
    target_lengths: Array,
    blank: int,
    output_grad: Array,
) -> Array:
    xp, runtime = self.xp, self.runtime
    lattice = _Lattice(self, log_probs, targets, input_lengths, target_lengths, blank)
    alphas, alpha = lattice.run(lattice.start(True), True)
    betas, _ = lattice.run(lattice.start(False), False)
    nll = lattice.nll(alpha)
    impossible = xp.isinf(nll)
    # alpha and beta both count frame t's emission: subtract one, normalize by the likelihood
    shift = xp.where(impossible, 0.0, nll)[None, :, None]
    active = lattice.active[:, :, None]
    posterior = xp.where(active, xp.exp(alphas + betas - lattice.emissions + shift), 0.0)
    zeros = xp.zeros(lattice.log_probs.shape, dtype=posterior.dtype)
    per_class = runtime.scatter(zeros, 2, lattice.spread, posterior, IndexingUpdateOp.ADD)
    grad = (xp.exp(lattice.log_probs) - per_class) * runtime.cast(output_grad, posterior.dtype)[None, :, None]
    # PyTorch's gradient of an impossible alignment (infinite loss) is NaN within the input
    grad = xp.where(active & impossible[None, :, None], math.nan, grad)
    return runtime.cast(xp.where(active, grad, 0.0), log_probs.dtype)
