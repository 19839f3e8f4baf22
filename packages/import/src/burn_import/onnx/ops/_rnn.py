"""Recurrent layers: ``RNN``, ``GRU`` and ``LSTM`` (ONNX gate orders, directions, layouts, sequence
lengths, peepholes, clipping and custom activations)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from burn_backend import Tensor
from burn_backend import activation as A

from .._ir import Node
from ._linalg import matmul
from ._registry import Context, Value, register, to_tensor

__all__: list[str] = []

Act = Callable[[Tensor], Tensor]
_ATTRS = (
    "activation_alpha",
    "activation_beta",
    "activations",
    "clip",
    "direction",
    "hidden_size",
    "layout",
)
_DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
_KNOWN = {
    "Sigmoid",
    "Tanh",
    "Relu",
    "HardSigmoid",
    "LeakyRelu",
    "ThresholdedRelu",
    "ScaledTanh",
    "Affine",
    "Elu",
    "Softsign",
    "Softplus",
}


def _activation(name: str, alpha: float | None, beta: float | None) -> Act:
    if name == "Sigmoid":
        return A.sigmoid
    if name == "Tanh":
        return lambda t: t.tanh()
    if name == "Relu":
        return lambda t: t.clamp_min(0.0)
    if name == "HardSigmoid":
        a, b = 0.2 if alpha is None else alpha, 0.5 if beta is None else beta
        return lambda t: t.mul_scalar(a).add_scalar(b).clamp(0.0, 1.0)
    if name == "LeakyRelu":
        return lambda t: A.leaky_relu(t, 0.01 if alpha is None else alpha)
    if name == "ThresholdedRelu":
        return lambda t: A.thresholded_relu(t, 1.0 if alpha is None else alpha)
    if name == "ScaledTanh":
        a, b = 1.0 if alpha is None else alpha, 1.0 if beta is None else beta
        return lambda t: t.mul_scalar(b).tanh().mul_scalar(a)
    if name == "Affine":
        a, b = 1.0 if alpha is None else alpha, 0.0 if beta is None else beta
        return lambda t: t.mul_scalar(a).add_scalar(b)
    if name == "Elu":
        return lambda t: A.elu(t, 1.0 if alpha is None else alpha)
    if name == "Softsign":
        return lambda t: t.div(t.abs().add_scalar(1.0))
    return lambda t: A.softplus(t)


def _check(node: Node) -> str | None:
    names = node.attrs.get("activations") or []
    unknown = [n for n in names if n not in _KNOWN]
    if unknown:
        return f"activation(s) {unknown} are not supported"
    return None


def _activations(ctx: Context, kind: str, directions: int) -> list[list[Act]]:
    names = list(ctx.attr("activations") or _DEFAULTS[kind] * directions)
    per = len(_DEFAULTS[kind])
    if len(names) == per and directions == 2:
        names = names * 2
    alphas = list(ctx.attr("activation_alpha") or [])
    betas = list(ctx.attr("activation_beta") or [])
    acts = [
        _activation(n, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
        for i, n in enumerate(names)
    ]
    return [acts[d * per : (d + 1) * per] for d in range(directions)]


class _Cell:
    """One direction's weights: ``W [G*H, I]``, ``R [G*H, H]`` and the summed biases ``[G*H]``."""

    def __init__(self, w: Tensor, r: Tensor, wb: Tensor | None, rb: Tensor | None) -> None:
        self.wt, self.rt = w.transpose(), r.transpose()
        self.wb, self.rb = wb, rb


def _run(ctx: Context, kind: str, x: Tensor, w: Tensor, r: Tensor, b: Value, lens: Value,
         h0: Value, c0: Value = None, p: Value = None) -> Any:  # fmt: skip
    layout = int(ctx.attr("layout", 0))
    if layout:
        x = x.swap_dims(0, 1)
    seq, batch, _ = x.dims()
    hidden = int(ctx.attr("hidden_size", r.dims()[-1]))
    direction = ctx.attr("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    acts = _activations(ctx, kind, directions)
    clip = ctx.attr("clip")
    bias = None if b is None else ctx.tensor(b)
    lengths = None if lens is None else ctx.ints(lens)
    init_h = None if h0 is None else ctx.tensor(h0)
    init_c = None if c0 is None else ctx.tensor(c0)
    peep = None if p is None else ctx.tensor(p)
    ys, hs, cs = [], [], []
    for d in range(directions):
        reverse = direction == "reverse" or d == 1
        wb = rb = None
        if bias is not None:
            row = bias.narrow(0, d, 1).reshape([-1])
            wb, rb = row.narrow(0, 0, gates * hidden), row.narrow(0, gates * hidden, gates * hidden)
        cell = _Cell(w.narrow(0, d, 1).squeeze_dim(0), r.narrow(0, d, 1).squeeze_dim(0), wb, rb)
        h = (
            init_h.narrow(0, d, 1).squeeze_dim(0)
            if init_h is not None
            else Tensor.zeros([batch, hidden], ctx.device, x.dtype)
        )
        c = init_c.narrow(0, d, 1).squeeze_dim(0) if init_c is not None else h.zeros_like()
        pd = None if peep is None else peep.narrow(0, d, 1).reshape([-1])
        xs = x
        order = None
        if reverse:
            order = _reverse_index(seq, batch, lengths)
            xs = x.gather(0, to_tensor(order, ctx.device).unsqueeze_dim(2).expand(x.dims()))
        projected = matmul(xs, cell.wt)
        if cell.wb is not None:
            projected = projected.add(cell.wb)
        outs = []
        for t in range(seq):
            xt = projected.narrow(0, t, 1).squeeze_dim(0)
            hr = matmul(h, cell.rt)
            if cell.rb is not None:
                hr = hr.add(cell.rb)
            new_h, new_c = _step(kind, ctx, xt, hr, h, c, cell, pd, acts[d], hidden, clip)
            if lengths is not None:
                alive = to_tensor(np.array([[t < n] for n in lengths]), ctx.device)
                new_h = h.mask_where(alive, new_h)
                new_c = c.mask_where(alive, new_c)
                outs.append(new_h.mask_where(alive.bool_not(), new_h.zeros_like()))
            else:
                outs.append(new_h)
            h, c = new_h, new_c
        y = Tensor.stack(outs, 0)
        if reverse and order is not None:
            y = y.gather(0, to_tensor(order, ctx.device).unsqueeze_dim(2).expand(y.dims()))
        ys.append(y)
        hs.append(h)
        cs.append(c)
    y_all = Tensor.stack(ys, 1)
    if layout:
        y_all = y_all.permute([2, 0, 1, 3])
        h_all, c_all = Tensor.stack(hs, 1), Tensor.stack(cs, 1)
    else:
        h_all, c_all = Tensor.stack(hs, 0), Tensor.stack(cs, 0)
    if kind == "LSTM":
        return y_all, h_all, c_all
    return y_all, h_all


def _reverse_index(seq: int, batch: int, lengths: list[int] | None) -> np.ndarray[Any, Any]:
    """``[seq, batch]`` time indices reversing each sequence within its length."""
    index = np.empty((seq, batch), dtype=np.int64)
    for b in range(batch):
        n = seq if lengths is None else lengths[b]
        steps = np.arange(seq)
        index[:, b] = np.where(steps < n, n - 1 - steps, steps)
    return index


def _clip(t: Tensor, clip: Any) -> Tensor:
    return t if clip is None else t.clamp(-float(clip), float(clip))


def _step(kind: str, ctx: Context, xt: Tensor, hr: Tensor, h: Tensor, c: Tensor, cell: _Cell,
          p: Tensor | None, acts: list[Act], hidden: int, clip: Any) -> tuple[Tensor, Tensor]:  # fmt: skip
    if kind == "RNN":
        return acts[0](_clip(xt.add(hr), clip)), c
    if kind == "GRU":
        xz, xr, xh = (xt.narrow(1, i * hidden, hidden) for i in range(3))
        hz, hr_, hh = (hr.narrow(1, i * hidden, hidden) for i in range(3))
        z = acts[0](_clip(xz.add(hz), clip))
        r = acts[0](_clip(xr.add(hr_), clip))
        if int(ctx.attr("linear_before_reset", 0)):
            cand = acts[1](_clip(xh.add(r.mul(hh)), clip))
        else:
            rh = matmul(r.mul(h), cell.rt.narrow(1, 2 * hidden, hidden))
            if cell.rb is not None:
                rh = rh.add(cell.rb.narrow(0, 2 * hidden, hidden))
            cand = acts[1](_clip(xh.add(rh), clip))
        return z.neg().add_scalar(1.0).mul(cand).add(z.mul(h)), c
    gi, go, gf, gc = (xt.add(hr).narrow(1, i * hidden, hidden) for i in range(4))
    if p is not None:
        gi = gi.add(p.narrow(0, 0, hidden).mul(c))
        gf = gf.add(p.narrow(0, 2 * hidden, hidden).mul(c))
    i_gate = acts[0](_clip(gi, clip))
    f_gate = acts[0](_clip(gf, clip))
    if int(ctx.attr("input_forget", 0)):
        f_gate = i_gate.neg().add_scalar(1.0)
    new_c = f_gate.mul(c).add(i_gate.mul(acts[1](_clip(gc, clip))))
    if p is not None:
        go = go.add(p.narrow(0, hidden, hidden).mul(new_c))
    o_gate = acts[0](_clip(go, clip))
    return o_gate.mul(acts[2](new_c)), new_c


@register("RNN", attrs=_ATTRS, check=_check)
def rnn(
    ctx: Context, x: Value, w: Value, r: Value, b: Value = None, lens: Value = None, h0: Value = None
) -> Any:
    return _run(ctx, "RNN", ctx.tensor(x), ctx.tensor(w), ctx.tensor(r), b, lens, h0)


@register("GRU", attrs=(*_ATTRS, "linear_before_reset"), check=_check)
def gru(
    ctx: Context, x: Value, w: Value, r: Value, b: Value = None, lens: Value = None, h0: Value = None
) -> Any:
    return _run(ctx, "GRU", ctx.tensor(x), ctx.tensor(w), ctx.tensor(r), b, lens, h0)


@register("LSTM", attrs=(*_ATTRS, "input_forget"), check=_check)
def lstm(ctx: Context, x: Value, w: Value, r: Value, b: Value = None, lens: Value = None, h0: Value = None,
         c0: Value = None, p: Value = None) -> Any:  # fmt: skip
    return _run(ctx, "LSTM", ctx.tensor(x), ctx.tensor(w), ctx.tensor(r), b, lens, h0, c0, p)
