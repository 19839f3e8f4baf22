"""The recurrent functions of ``burn_backend.module``: ``lstm`` and ``gru``, one layer in one direction.

Each checks its inputs (Float tensors of one dtype and device, ``x`` ``[batch, seq, d_input]`` with a
non-empty sequence, states ``[batch, hidden]``, weights in Burn's ``[in, out]`` layout with PyTorch's gate
order) and raises an error naming the function, the shapes and dtypes and what was expected; then it runs
the backend's op (``ModuleOps.lstm``, ``ModuleOps.gru``), whose gradient on an autodiff backend is the
backend's backward op (``lstm_backward``, ``gru_backward``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._dtype import Kind
from ._tensor import Tensor


def _float(op: str, name: str, value: object, like: Tensor | None, shape: list[int]) -> Tensor:
    """``value`` checked: a Float tensor of ``shape`` (and of ``like``'s dtype and device)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if value.kind is not Kind.FLOAT:
        raise TypeError(f"{op}: {name} must be a Float tensor, got shape {value.dims()} of {value.dtype}")
    if like is not None:
        if value.dtype is not like.dtype:
            raise TypeError(
                f"{op}: {name} has dtype {value.dtype}, x has {like.dtype}; cast one with .cast(...)"
            )
        like._check_device_of(op, value)
    if value.dims() != shape:
        raise ValueError(f"{op}: {name} has shape {value.dims()}, expected {shape}")
    return value


def _arguments(
    op: str,
    gates: int,
    x: object,
    states: Sequence[tuple[str, object]],
    weight_ih: object,
    weight_hh: object,
    bias_ih: object,
    bias_hh: object,
) -> tuple[Tensor, list[Any]]:
    """``x`` and the primitives of the states, weights and biases (``None`` for an absent bias)."""
    if not isinstance(x, Tensor) or x.kind is not Kind.FLOAT:
        raise TypeError(f"{op}: x must be a Float tensor [batch, seq, d_input], got {x!r:.80}")
    if x.rank != 3 or x.dims()[1] == 0:
        raise ValueError(f"{op}: x must have shape [batch, seq, d_input] with seq >= 1, got {x.dims()}")
    batch, _, d_input = x.dims()
    if not isinstance(weight_hh, Tensor) or weight_hh.rank != 2:
        got = weight_hh.dims() if isinstance(weight_hh, Tensor) else type(weight_hh).__name__
        raise ValueError(f"{op}: weight_hh must be a [hidden, {gates} * hidden] Tensor, got {got}")
    hidden = weight_hh.dims()[0]
    width = gates * hidden
    primitives = [_float(op, name, state, x, [batch, hidden]).primitive for name, state in states]
    primitives.append(_float(op, "weight_ih", weight_ih, x, [d_input, width]).primitive)
    primitives.append(_float(op, "weight_hh", weight_hh, x, [hidden, width]).primitive)
    for name, bias in (("bias_ih", bias_ih), ("bias_hh", bias_hh)):
        primitives.append(None if bias is None else _float(op, name, bias, x, [width]).primitive)
    return x, primitives


def lstm(
    x: Tensor,
    h0: Tensor,
    c0: Tensor,
    weight_ih: Tensor,
    weight_hh: Tensor,
    bias_ih: Tensor | None = None,
    bias_hh: Tensor | None = None,
    reverse: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """One LSTM layer in one direction, as PyTorch's ``nn.LSTM`` with one layer: per step ``a = x_t
    @ weight_ih + bias_ih + h @ weight_hh + bias_hh``, gates ``i, f, g, o`` (sigmoid, sigmoid, tanh,
    sigmoid) in that order along ``a``'s columns, ``c = f * c + i * g``, ``h = o * tanh(c)``.

    Args:
        x: ``[batch, seq, d_input]`` (``seq >= 1``).
        h0: the initial hidden state ``[batch, hidden]``.
        c0: the initial cell state ``[batch, hidden]``.
        weight_ih: ``[d_input, 4 * hidden]`` (the transpose of PyTorch's ``weight_ih_l0``).
        weight_hh: ``[hidden, 4 * hidden]`` (the transpose of PyTorch's ``weight_hh_l0``).
        bias_ih: ``[4 * hidden]`` or ``None``.
        bias_hh: ``[4 * hidden]`` or ``None``.
        reverse: run the sequence from its last step to its first.

    Returns:
        The hidden state of every step ``[batch, seq, hidden]`` (at its step's position), and the final
        hidden and cell states ``[batch, hidden]``.

    Raises:
        TypeError: an argument is not a Float tensor, or the dtypes differ.
        ValueError: a shape differs from the one expected.

    Example:
        >>> from burn_backend import Tensor, module
        >>> x, h = Tensor.ones([2, 5, 3]), Tensor.zeros([2, 4])
        >>> output, h_n, c_n = module.lstm(x, h, h, Tensor.ones([3, 16]), Tensor.ones([4, 16]))
        >>> output.dims(), h_n.dims()
        ([2, 5, 4], [2, 4])
    """
    op = "lstm"
    states = [("h0", h0), ("c0", c0)]
    x, primitives = _arguments(op, 4, x, states, weight_ih, weight_hh, bias_ih, bias_hh)
    backend: Any = x.backend  # the op's arguments are primitives in a list, which mypy cannot count
    result = backend.lstm(x.primitive, *primitives, bool(reverse))
    both = Tensor.from_primitive(result[0], x.device)  # a decorator may hand back a plain tuple
    batch, seq, _ = x.dims()
    hidden = primitives[0].shape[1]
    last = 0 if reverse else seq - 1
    output = both.narrow(2, 0, hidden)
    final = both.narrow(1, last, 1).reshape([batch, 2 * hidden])
    return output, final.narrow(1, 0, hidden), final.narrow(1, hidden, hidden)


def gru(
    x: Tensor,
    h0: Tensor,
    weight_ih: Tensor,
    weight_hh: Tensor,
    bias_ih: Tensor | None = None,
    bias_hh: Tensor | None = None,
    reverse: bool = False,
) -> tuple[Tensor, Tensor]:
    """One GRU layer in one direction, as PyTorch's ``nn.GRU`` with one layer: per step ``p = x_t @
    weight_ih + bias_ih``, ``q = h @ weight_hh + bias_hh``, gates ``r, z, n`` in that order along the
    columns, ``r, z = sigmoid(p_rz + q_rz)``, ``n = tanh(p_n + r * q_n)``, ``h = (1 - z) * n + z * h``.

    Args:
        x: ``[batch, seq, d_input]`` (``seq >= 1``).
        h0: the initial hidden state ``[batch, hidden]``.
        weight_ih: ``[d_input, 3 * hidden]`` (the transpose of PyTorch's ``weight_ih_l0``).
        weight_hh: ``[hidden, 3 * hidden]`` (the transpose of PyTorch's ``weight_hh_l0``).
        bias_ih: ``[3 * hidden]`` or ``None``.
        bias_hh: ``[3 * hidden]`` or ``None``.
        reverse: run the sequence from its last step to its first.

    Returns:
        The hidden state of every step ``[batch, seq, hidden]`` and the final one ``[batch, hidden]``.

    Raises:
        TypeError: an argument is not a Float tensor, or the dtypes differ.
        ValueError: a shape differs from the one expected.

    Example:
        >>> from burn_backend import Tensor, module
        >>> output, h_n = module.gru(Tensor.ones([2, 5, 3]), Tensor.zeros([2, 4]), Tensor.ones([3, 12]),
        ...                          Tensor.ones([4, 12]))
        >>> output.dims(), h_n.dims()
        ([2, 5, 4], [2, 4])
    """
    op = "gru"
    x, primitives = _arguments(op, 3, x, [("h0", h0)], weight_ih, weight_hh, bias_ih, bias_hh)
    backend: Any = x.backend
    result = backend.gru(x.primitive, *primitives, bool(reverse))
    output = Tensor.from_primitive(result[0], x.device)
    last = 0 if reverse else x.dims()[1] - 1
    return output, output.narrow(1, last, 1).reshape([x.dims()[0], output.dims()[2]])
