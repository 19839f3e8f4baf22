"""``watch_gradients``: gradients reported while ``backward`` still runs (PyTorch's
``register_post_accumulate_grad_hook``), for data-parallel training that sends each gradient as soon as
it is complete."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from ._backend import AutodiffBackend
from ._tensor import Tensor

__all__ = ["watch_gradients"]


@contextlib.contextmanager
def watch_gradients(tensors: Sequence[Tensor], callback: Callable[[int, Tensor], None]) -> Iterator[None]:
    """While the block runs, each ``backward`` in this thread calls ``callback(i, gradient)`` as soon as
    the gradient of ``tensors[i]`` is complete: no op left in the pass adds to it.

    The gradient is the one the pass returns (on the inner backend, as ``Tensor.grad`` gives it); the
    callback must not change it. Only tensors that require a gradient are reported, once per pass that
    reaches them; the order is the order in which backward completes them (the last layers first).

    Args:
        tensors: Float tensors of one autodiff backend (a model's parameters, say).
        callback: called with the position in ``tensors`` and the gradient.

    Raises:
        TypeError: a tensor that is not a ``Tensor`` of an autodiff backend, or tensors of two backends.

    Example:
        >>> from burn_autodiff import Autodiff
        >>> from burn_ndarray import NdArray
        >>> device = Autodiff(NdArray()).device()
        >>> w = Tensor.from_data([1.0, 2.0], device).require_grad()
        >>> seen = []
        >>> with watch_gradients([w], lambda i, g: seen.append((i, g.tolist()))):
        ...     _ = (w * w).sum().backward()
        >>> seen
        [(0, [2.0, 4.0])]
    """
    backend: AutodiffBackend | None = None
    for position, tensor in enumerate(tensors):
        found = tensor.device.backend if isinstance(tensor, Tensor) else None
        if not isinstance(found, AutodiffBackend):
            what = f"a tensor of {found.name!r}" if found is not None else type(tensor).__name__
            raise TypeError(
                f"watch_gradients: tensors[{position}] must be on an autodiff backend, got {what}"
            )
        if backend is not None and found is not backend:
            raise TypeError(
                f"watch_gradients: tensors of two backends ({backend.name!r} and {found.name!r}); "
                "watch each backend's tensors in its own block"
            )
        backend = found
    if backend is None:
        yield
        return
    devices = [tensor._inner_device() for tensor in tensors]

    def report(position: int, gradient: object) -> None:
        callback(position, Tensor(gradient, devices[position]))

    with backend.watch_gradients([tensor.primitive for tensor in tensors], report):
        yield
