"""``ModuleOps``: convolution, pooling, interpolation, embedding, attention and normalization kernels.

Every method has a default built from the float, int and bool ops, so a new backend runs them as soon
as its required ops exist; backends override the ones they can do faster. Layouts are channels-first
(``[batch, channels, *spatial]``); weights of convolutions are ``[out, in / groups, *kernel]`` and of
transposed convolutions ``[in, out / groups, *kernel]``, as in Burn and PyTorch.
"""

from __future__ import annotations

from typing import Any

P = Any


class ModuleOps:
    """The module op group. All methods have defaults (see the module docstring)."""

    # -- embedding and linear ---------------------------------------------------------------------
    def embedding(self, weights: P, indices: P) -> P:
        """Rows of ``weights`` ``[n, d]`` picked by int ``indices`` ``[b, s]``: ``[b, s, d]``."""
        raise NotImplementedError

    def embedding_backward(self, weights: P, output_grad: P, indices: P) -> P:
        """The gradient of ``embedding`` with respect to ``weights``."""
        raise NotImplementedError

    def linear(self, x: P, weight: P, bias: P | None) -> P:
        """``x @ weight + bias`` with ``weight`` of shape ``[d_in, d_out]`` (Burn's layout)."""
        raise NotImplementedError
