"""The defaults of ``ModuleOps.ctc_loss`` and ``ctc_loss_backward``, built from float, int and bool ops.

The semantics are PyTorch's ``F.ctc_loss`` with ``reduction='none'`` and ``zero_infinity=False``. Each
target ``l`` of length ``L`` is extended to ``l' = [blank, l1, blank, l2, ..., lL, blank]`` (``2L + 1``
states); the forward variables ``alpha`` and backward variables ``beta`` run in log space over the
states of every sample at once, one step per time frame. A sample's frames at or past its input length
leave its variables unchanged, so after the last step ``alpha`` holds each sample's final frame.

Both recursions start from a virtual frame before the first (``alpha``: all mass on state 0) or after
the last (``beta``: all mass on state ``2L``): one step from there gives exactly the usual first frame,
and a sample with no frames keeps the virtual one, whose likelihood is 1 for an empty target and 0
otherwise, as PyTorch has it.
"""

from __future__ import annotations

import math
from typing import Any

from .._dtype import DType

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype

_FINITE_MIN = {DType.F64: -1.7976931348623157e308, DType.F32: -3.4028234663852886e38, DType.F16: -65504.0}
_FINITE_MIN[DType.BF16] = -3.3895313892515355e38


def _logsumexp(b: Any, terms: list[P]) -> P:
    """``log(sum(exp(t)))`` elementwise, exact for all-``-inf`` terms (gives ``-inf``, never NaN)."""
    peak = terms[0]
    for term in terms[1:]:
        peak = b.float_mask_where(peak, b.float_lower(peak, term), term)
    peak = b.float_clamp_min(peak, _FINITE_MIN[DType.of(terms[0].dtype)])
    total = None
    for term in terms:
        part = b.float_exp(b.float_sub(term, peak))
        total = part if total is None else b.float_add(total, part)
    return b.float_add(b.float_log(total), peak)


class _Lattice:
    """The extended labels, the emissions and the allowed skips of one batch."""

    def __init__(
        self, b: Any, log_probs: P, targets: P, input_lengths: P, target_lengths: P, blank: int
    ) -> None:
        self.frames, self.batch, self.classes = log_probs.shape
        labels_max = targets.shape[1]
        self.states = 2 * labels_max + 1
        self.dtype = DType.of(log_probs.dtype)
        self.device = b.float_device(log_probs)
        idt = b.int_dtype
        n, e = self.batch, self.states
        targets = targets if DType.of(targets.dtype) is idt else b.int_cast(targets, idt)
        self.input_lengths = b.int_reshape(
            input_lengths if DType.of(input_lengths.dtype) is idt else b.int_cast(input_lengths, idt), (n, 1)
        )
        target_lengths = b.int_reshape(
            target_lengths if DType.of(target_lengths.dtype) is idt else b.int_cast(target_lengths, idt),
            (n, 1),
        )
        labels = b.int_full((n, e), blank, self.device, idt)
        if labels_max:
            odd = [slice(0, n, 1), slice(1, 2 * labels_max, 2)]
            labels = b.int_slice_assign(labels, odd, targets)
        positions = b.int_reshape(b.int_arange(0, e, self.device, idt), (1, e))
        last = b.int_mul_scalar(target_lengths, 2)  # the state 2L: the final blank
        # states past 2L hold padding (maybe out of range): read the blank there instead
        labels = b.int_mask_fill(labels, b.int_greater(b.int_expand(positions, (n, e)), last), blank)
        self.labels = labels
        self.is_last = b.int_equal(b.int_expand(positions, (n, e)), last)
        self.is_first = b.int_equal_elem(b.int_expand(positions, (n, e)), 0)
        self.last = last
        # a state may be entered from two states back if it is a label unlike the one two back
        if e > 2:
            earlier = b.int_slice(labels, [slice(0, n, 1), slice(0, e - 2, 1)])
            later = b.int_slice(labels, [slice(0, n, 1), slice(2, e, 1)])
            skip = b.bool_and(b.int_not_equal_elem(later, blank), b.int_not_equal(later, earlier))
            self.no_skip = b.bool_not(skip)  # [n, e - 2]: state s + 2 may not be entered from s
        else:
            self.no_skip = None
        indices = b.int_expand(b.int_reshape(labels, (1, n, e)), (self.frames, n, e))
        self.label_indices = indices
        self.emissions = b.float_gather(log_probs, 2, indices)  # [frames, n, e]

    def emission(self, b: Any, t: int) -> P:
        index = [slice(t, t + 1, 1), slice(0, self.batch, 1), slice(0, self.states, 1)]
        return b.float_reshape(b.float_slice(self.emissions, index), (self.batch, self.states))

    def active(self, b: Any, t: int) -> P:
        """``[batch, 1]``: whether frame ``t`` lies within each sample's input."""
        return b.int_greater_elem(self.input_lengths, t)

    def _ninf(self, b: Any, width: int) -> P:
        return b.float_full((self.batch, width), -math.inf, self.device, self.dtype)

    def forward_step(self, b: Any, alpha: P, t: int) -> P:
        n, e = self.batch, self.states
        terms = [alpha]
        if e > 1:
            kept = b.float_slice(alpha, [slice(0, n, 1), slice(0, e - 1, 1)])
            terms.append(b.float_cat([self._ninf(b, 1), kept], 1))
        if self.no_skip is not None:
            kept = b.float_slice(alpha, [slice(0, n, 1), slice(0, e - 2, 1)])
            kept = b.float_mask_fill(kept, self.no_skip, -math.inf)
            terms.append(b.float_cat([self._ninf(b, 2), kept], 1))
        new = b.float_add(_logsumexp(b, terms), self.emission(b, t))
        return b.float_mask_where(alpha, b.bool_expand(self.active(b, t), (n, e)), new)

    def backward_step(self, b: Any, beta: P, t: int) -> P:
        n, e = self.batch, self.states
        terms = [beta]
        if e > 1:
            kept = b.float_slice(beta, [slice(0, n, 1), slice(1, e, 1)])
            terms.append(b.float_cat([kept, self._ninf(b, 1)], 1))
        if self.no_skip is not None:
            kept = b.float_slice(beta, [slice(0, n, 1), slice(2, e, 1)])
            kept = b.float_mask_fill(kept, self.no_skip, -math.inf)
            terms.append(b.float_cat([kept, self._ninf(b, 2)], 1))
        new = b.float_add(_logsumexp(b, terms), self.emission(b, t))
        return b.float_mask_where(beta, b.bool_expand(self.active(b, t), (n, e)), new)

    def start(self, b: Any, at: P) -> P:
        """The virtual frame: log 1 where ``at`` is true, log 0 elsewhere."""
        zeros = b.float_zeros((self.batch, self.states), self.device, self.dtype)
        return b.float_mask_fill(zeros, b.bool_not(at), -math.inf)

    def alphas(self, b: Any) -> list[P]:
        """``alpha`` after each frame (``[batch, states]`` each)."""
        alpha = self.start(b, self.is_first)
        out = []
        for t in range(self.frames):
            alpha = self.forward_step(b, alpha, t)
            out.append(alpha)
        return out

    def nll(self, b: Any, alpha: P) -> P:
        """``-log p(target | input)`` ``[batch]`` from ``alpha`` at each sample's final frame."""
        n = self.batch
        ends = b.int_cat([self.last, b.int_clamp_min(b.int_sub_scalar(self.last, 1), 0)], 1)
        final = b.float_gather(alpha, 1, ends)  # [n, 2]: the final blank and the last label
        blank_end = b.float_slice(final, [slice(0, n, 1), slice(0, 1, 1)])
        label_end = b.float_slice(final, [slice(0, n, 1), slice(1, 2, 1)])
        # an empty target has no last label (its index fell back onto the blank, already counted)
        label_end = b.float_mask_fill(label_end, b.int_equal_elem(self.last, 0), -math.inf)
        return b.float_reshape(b.float_neg(_logsumexp(b, [blank_end, label_end])), (n,))


def ctc_loss(b: Any, log_probs: P, targets: P, input_lengths: P, target_lengths: P, blank: int) -> P:
    """The default of ``ModuleOps.ctc_loss`` on backend ``b``."""
    lattice = _Lattice(b, log_probs, targets, input_lengths, target_lengths, blank)
    alpha = lattice.start(b, lattice.is_first)
    for t in range(lattice.frames):
        alpha = lattice.forward_step(b, alpha, t)
    return lattice.nll(b, alpha)


def ctc_loss_backward(
    b: Any, log_probs: P, targets: P, input_lengths: P, target_lengths: P, blank: int, output_grad: P
) -> P:
    """The default of ``ModuleOps.ctc_loss_backward`` on backend ``b``."""
    lattice = _Lattice(b, log_probs, targets, input_lengths, target_lengths, blank)
    frames, n, e = lattice.frames, lattice.batch, lattice.states
    if not frames:
        return b.float_zeros(tuple(log_probs.shape), lattice.device, lattice.dtype)
    alphas = lattice.alphas(b)
    nll = lattice.nll(b, alphas[-1])
    impossible = b.float_is_inf(nll)
    # an impossible sample's gradient is NaN (below): a finite shift keeps inf - inf out of the way
    shift = b.float_reshape(b.float_mask_fill(nll, impossible, 0.0), (n, 1))
    beta = lattice.start(b, lattice.is_last)
    posteriors: list[P] = []
    for t in reversed(range(frames)):
        beta = lattice.backward_step(b, beta, t)
        # alpha and beta both count frame t's emission: subtract one, normalize by the likelihood
        log_post = b.float_add(b.float_sub(b.float_add(alphas[t], beta), lattice.emission(b, t)), shift)
        posteriors.append(b.float_reshape(b.float_exp(log_post), (1, n, e)))
    posteriors.reverse()
    per_state = b.float_cat(posteriors, 0)  # [frames, n, e]
    zeros = b.float_zeros(tuple(log_probs.shape), lattice.device, lattice.dtype)
    per_class = b.float_scatter_add(zeros, 2, lattice.label_indices, per_state)
    grad = b.float_sub(b.float_exp(log_probs), per_class)
    grad = b.float_mul(grad, b.float_reshape(output_grad, (1, n, 1)))
    full = tuple(log_probs.shape)
    times = b.int_reshape(b.int_arange(0, frames, lattice.device, b.int_dtype), (frames, 1))
    lengths = b.int_reshape(lattice.input_lengths, (1, n))
    inactive = b.bool_reshape(b.int_greater_equal(times, lengths), (frames, n, 1))
    # PyTorch's gradient of an impossible alignment (infinite loss) is NaN within the input
    impossible = b.bool_reshape(impossible, (1, n, 1))
    grad = b.float_mask_fill(
        grad, b.bool_expand(b.bool_and(impossible, b.bool_not(inactive)), full), math.nan
    )
    return b.float_mask_fill(grad, b.bool_expand(inactive, full), 0.0)
