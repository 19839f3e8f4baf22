"""The 10-layer MLP (width 256, batch 64, matmul + add + relu) that ``bench_autodiff.py`` and
``bench_fusion.py`` time forward + backward against PyTorch: one problem, built once here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from burn_backend import Device, Tensor
from burn_backend.activation import relu

LAYERS, WIDTH, BATCH = 10, 256, 64


@dataclass
class Mlp:
    """The MLP's host values (``weights``: [in, out], ``biases``: [1, out], ``x``) and both sides' steps."""

    weights: list[np.ndarray[Any, Any]]
    biases: list[np.ndarray[Any, Any]]
    x: np.ndarray[Any, Any]
    ours: Callable[[], None]
    theirs: Callable[[], None]


def mlp(device: Device, read_all: bool) -> Mlp:
    """The MLP on ``device`` and in PyTorch. ``read_all``: our step reads every gradient back (what a lazy
    backend such as Fusion needs to compute anything); otherwise the first weight's gradient handle."""
    rng = np.random.default_rng(0)
    weights = [
        (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32) for _ in range(LAYERS)
    ]
    biases = [(rng.standard_normal((1, WIDTH)) * 0.1).astype(np.float32) for _ in range(LAYERS)]
    x_np = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    params = [(Tensor.from_numpy(w, device).require_grad(), Tensor.from_numpy(c, device).require_grad())
              for w, c in zip(weights, biases)]  # fmt: skip
    x = Tensor.from_numpy(x_np, device)
    torch_params = [(torch.tensor(w, requires_grad=True), torch.tensor(c, requires_grad=True))
                    for w, c in zip(weights, biases)]  # fmt: skip
    tx = torch.tensor(x_np)

    def ours() -> None:
        h = x
        for w, c in params:
            h = relu(h.matmul(w) + c)
        grads = h.sum().backward()
        if not read_all:
            params[0][0].grad(grads)
            return
        for w, c in params:
            w.grad(grads).to_data()  # type: ignore[union-attr]
            c.grad(grads).to_data()  # type: ignore[union-attr]

    def theirs() -> None:
        h = tx
        for w, c in torch_params:
            h = torch.relu(h @ w + c)
            w.grad = None
            c.grad = None
        h.sum().backward()

    return Mlp(weights, biases, x_np, ours, theirs)
