"""NdArray's CTC loss and its gradient on NumPy (PyTorch's ``ctc_loss``, ``reduction='none'``).

The same recursions as the interface's defaults (``burn_backend._ops._ctc``): log-space forward and
backward variables over the extended labels of every sample at once, one step per frame, a sample's
variables frozen past its input length, both started from a virtual frame. They compute in float64 (the
lattice is small next to the log-probabilities it reads) and return the input's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = Any


class _Lattice:
    def __init__(
        self, log_probs: Array, targets: Array, input_lengths: Array, target_lengths: Array, blank: int
    ) -> None:
        self.log_probs = np.asarray(log_probs, dtype=np.float64)
        self.frames, self.batch, self.classes = self.log_probs.shape
        labels_max = targets.shape[1]
        self.states = 2 * labels_max + 1
        n, e = self.batch, self.states
        self.input_lengths = np.asarray(input_lengths).astype(np.int64)
        self.last = 2 * np.asarray(target_lengths).astype(np.int64)  # the state 2L: the final blank
        labels = np.full((n, e), blank, dtype=np.intp)
        labels[:, 1::2] = targets
        # states past 2L hold padding (maybe out of range): read the blank there instead
        labels[np.arange(e)[None, :] > self.last[:, None]] = blank
        self.labels = labels
        self.skip = np.zeros((n, e), dtype=bool)  # state s may be entered from s - 2
        self.skip[:, 2:] = (labels[:, 2:] != blank) & (labels[:, 2:] != labels[:, :-2])
        self.emissions = self.log_probs[:, np.arange(n)[:, None], labels]  # [frames, n, e]
        self.active = np.arange(self.frames)[:, None] < self.input_lengths[None, :]  # [frames, n]

    def alphas(self) -> tuple[Array, Array]:
        """``alpha`` after each frame ``[frames, n, e]``, and after the last one ``[n, e]``."""
        n, e = self.batch, self.states
        alpha = np.full((n, e), -np.inf)
        alpha[:, 0] = 0.0
        out = np.empty((self.frames, n, e))
        shifted = np.full((n, e), -np.inf)
        skipped = np.full((n, e), -np.inf)
        for t in range(self.frames):
            shifted[:, 1:] = alpha[:, :-1]
            skipped[:, 2:] = np.where(self.skip[:, 2:], alpha[:, :-2], -np.inf)
            new = np.logaddexp(np.logaddexp(alpha, shifted), skipped) + self.emissions[t]
            alpha = np.where(self.active[t][:, None], new, alpha)
            out[t] = alpha
        return out, alpha

    def nll(self, alpha: Array) -> Array:
        rows = np.arange(self.batch)
        blank_end = alpha[rows, self.last]
        label_end = np.where(self.last > 0, alpha[rows, np.maximum(self.last - 1, 0)], -np.inf)
        return -np.logaddexp(blank_end, label_end)

    def betas(self) -> Array:
        """``beta`` at each frame ``[frames, n, e]``."""
        n, e = self.batch, self.states
        beta = np.full((n, e), -np.inf)
        beta[np.arange(n), self.last] = 0.0
        out = np.empty((self.frames, n, e))
        shifted = np.full((n, e), -np.inf)
        skipped = np.full((n, e), -np.inf)
        for t in reversed(range(self.frames)):
            shifted[:, :-1] = beta[:, 1:]
            skipped[:, :-2] = np.where(self.skip[:, 2:], beta[:, 2:], -np.inf)
            new = np.logaddexp(np.logaddexp(beta, shifted), skipped) + self.emissions[t]
            beta = np.where(self.active[t][:, None], new, beta)
            out[t] = beta
        return out


def ctc_loss(
    log_probs: Array, targets: Array, input_lengths: Array, target_lengths: Array, blank: int
) -> Array:
    lattice = _Lattice(log_probs, targets, input_lengths, target_lengths, blank)
    _, alpha = lattice.alphas()
    return lattice.nll(alpha).astype(np.asarray(log_probs).dtype)


def ctc_loss_backward(
    log_probs: Array,
    targets: Array,
    input_lengths: Array,
    target_lengths: Array,
    blank: int,
    output_grad: Array,
) -> Array:
    dtype = np.asarray(log_probs).dtype
    lattice = _Lattice(log_probs, targets, input_lengths, target_lengths, blank)
    frames, n, classes = lattice.frames, lattice.batch, lattice.classes
    alphas, alpha = lattice.alphas()
    nll = lattice.nll(alpha)
    impossible = np.isinf(nll)
    shift = np.where(impossible, 0.0, nll)
    # alpha and beta both count frame t's emission: subtract one, normalize by the likelihood
    posterior = np.exp(alphas + lattice.betas() - lattice.emissions + shift[None, :, None])
    posterior[~lattice.active] = 0.0
    rows = (np.arange(frames)[:, None, None] * n + np.arange(n)[None, :, None]) * classes
    where = rows + lattice.labels[None, :, :]
    size = frames * n * classes
    per_class = np.bincount(where.ravel(), weights=posterior.ravel(), minlength=size)
    grad: Array = np.exp(lattice.log_probs) - per_class.reshape(frames, n, classes)
    grad *= np.asarray(output_grad, dtype=np.float64)[None, :, None]
    # PyTorch's gradient of an impossible alignment (infinite loss) is NaN within the input
    grad[lattice.active & impossible[None, :]] = np.nan
    grad[~lattice.active] = 0.0
    return grad.astype(dtype)
