"""Padding a tensor's trailing dims (constant, reflect, replicate, circular), composed from slices and
concatenation so that every backend runs it and autodiff differentiates it. Public as
``burn_backend.module.pad``."""

from __future__ import annotations

from collections.abc import Sequence

from ._dtype import Kind
from ._tensor import Tensor

__all__ = ["PAD_MODES", "pad"]

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _along(x: Tensor, dim: int, start: int, stop: int) -> Tensor:
    ranges: list[slice] = [slice(None)] * x.rank
    ranges[dim] = slice(start, stop)
    return x.slice(ranges)


def _pad_dim(x: Tensor, dim: int, left: int, right: int, mode: str, value: float) -> Tensor:
    size = x.dims()[dim]
    if mode == "constant":
        parts = []
        for width in (left, right):
            shape = x.dims()
            shape[dim] = width
            parts.append(Tensor.full(shape, value, x.device, x.dtype))
        pieces = [parts[0], x, parts[1]]
    elif mode == "reflect":
        # the edge value is not repeated: [a b c d] reflected by 2 is [c b a b c d c b]
        pieces = [
            _along(x, dim, 1, left + 1).flip([dim]),
            x,
            _along(x, dim, size - 1 - right, size - 1).flip([dim]),
        ]
    elif mode == "replicate":
        pieces = []
        for start, width in ((0, left), (size - 1, right)):
            shape = x.dims()
            shape[dim] = width
            pieces.append(_along(x, dim, start, start + 1).expand(shape))
        pieces.insert(1, x)
    else:  # circular
        pieces = [_along(x, dim, size - left, size), x, _along(x, dim, 0, right)]
    return Tensor.cat([piece for piece in pieces if piece.dims()[dim] > 0], dim)


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Tensor:
    """``x`` padded on both sides of its trailing dims, as ``torch.nn.functional.pad`` (and Burn's
    ``Tensor::pad``).

    ``pad`` lists ``(left, right)`` widths from the last dim backwards: ``(1, 2)`` pads the last dim by 1
    before and 2 after; ``(1, 1, 2, 2)`` also pads the dim before it by 2 on each side.

    Args:
        x: a Float or Int tensor (Bool too, for ``constant`` with a value of 0 or 1, and the others).
        pad: an even number of widths >= 0, at most two per dim of ``x``.
        mode: ``"constant"`` (``value`` everywhere), ``"reflect"`` (mirrored without repeating the edge;
            each width below the dim's size), ``"replicate"`` (the edge value repeated; a non-empty dim)
            or ``"circular"`` (wrapped around; each width at most the dim's size).
        value: the fill of ``constant`` padding.

    Returns:
        ``x``'s kind and dtype, each padded dim grown by its two widths.

    Example:
        >>> pad(Tensor.from_data([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect").tolist()
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """
    op = "pad"
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if mode not in PAD_MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(map(repr, PAD_MODES))}, got {mode!r}")
    if isinstance(pad, (str, bytes)) or not isinstance(pad, Sequence):
        raise TypeError(f"{op}: pad must be a sequence of ints (left, right, ...), got {pad!r}")
    widths = list(pad)
    if any(isinstance(w, bool) or not isinstance(w, int) for w in widths):
        raise TypeError(f"{op}: pad must hold ints, got {pad!r}")
    if len(widths) % 2 or len(widths) > 2 * x.rank:
        raise ValueError(
            f"{op}: pad needs an even number of widths, at most 2 per dim of x (shape {x.dims()}), "
            f"got {widths}"
        )
    if any(w < 0 for w in widths):
        raise ValueError(f"{op}: pad widths must be >= 0, got {widths}")
    if x.kind is Kind.BOOL and mode == "constant" and value not in (0, 1):
        raise ValueError(f"{op}: a Bool tensor pads with 0 or 1 (False or True), got value {value!r}")
    dims = x.dims()
    for i in range(len(widths) // 2):
        dim = x.rank - 1 - i
        left, right = widths[2 * i], widths[2 * i + 1]
        size = dims[dim]
        if mode == "reflect" and max(left, right) >= size:
            raise ValueError(
                f"{op}: reflect padding needs widths below the size of the dim, got ({left}, {right}) "
                f"for dim {dim} of size {size} (shape {dims})"
            )
        if mode == "circular" and max(left, right) > size:
            raise ValueError(
                f"{op}: circular padding needs widths at most the size of the dim, got ({left}, {right}) "
                f"for dim {dim} of size {size} (shape {dims})"
            )
        if mode == "replicate" and size == 0 and left + right > 0:
            raise ValueError(f"{op}: replicate padding needs a non-empty dim, dim {dim} of shape {dims}")
    out = x
    for i in range(len(widths) // 2):
        left, right = widths[2 * i], widths[2 * i + 1]
        if left or right:
            out = _pad_dim(out, x.rank - 1 - i, left, right, mode, value)
    return out
