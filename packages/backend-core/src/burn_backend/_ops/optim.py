"""``OptimizerOps``: optimizer updates as backend ops, so that a backend can run one in a single pass over
memory (NdArray: a numba kernel per parameter) or a single launch for every parameter (Cuda: one kernel
over a table of tensors, as PyTorch's multi-tensor ``Adam``). Every method has a default composed of
element-wise ops, which ``Fusion`` records and fuses like any other chain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._options import AdamOptions, SgdOptions

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype


class OptimizerOps:
    """Updates of several parameters at once, each with its gradient and state."""

    def float_adam_step(
        self,
        tensors: Sequence[P],
        grads: Sequence[P],
        moments_1: Sequence[P | None],
        moments_2: Sequence[P | None],
        options: AdamOptions,
    ) -> tuple[list[P], list[P], list[P]]:
        """One Adam or AdamW update of every tensor, in PyTorch's arrangement.

        For each tensor ``p`` with gradient ``g`` and moments ``m``, ``v`` (``None``: zeros, the first
        step), with the constants of ``options.scalars()``:

        - ``g = weight_decay * p + g`` (Adam's L2 penalty, when ``weight_decay`` and not ``decoupled``);
        - ``m = m * beta_1 + g * (1 - beta_1)`` and ``v = v * beta_2 + g * g * (1 - beta_2)``;
        - ``p = p * keep - m / (sqrt(v) / sqrt(1 - beta_2^t) + epsilon) * (lr / (1 - beta_1^t))``, with
          ``keep = 1 - lr * weight_decay`` for AdamW's decoupled decay.

        Each operation rounds to the tensor's dtype in this order, so a kernel that follows it gives the
        default's values bit for bit. Every list is as long as ``tensors``; each gradient and moment has
        its tensor's shape, dtype and device.

        Returns:
            The new tensors, first moments and second moments.
        """
        b: Any = self
        beta_1, rest_1, beta_2, rest_2, root_2, epsilon, step, keep = options.scalars()
        decay = options.weight_decay
        new_tensors, new_moments_1, new_moments_2 = [], [], []
        for p, g, m, v in zip(tensors, grads, moments_1, moments_2, strict=True):
            if decay and not options.decoupled:
                g = b.float_add(b.float_mul_scalar(p, decay), g)
            m = (
                b.float_mul_scalar(g, rest_1)
                if m is None
                else b.float_add(b.float_mul_scalar(m, beta_1), b.float_mul_scalar(g, rest_1))
            )
            square = b.float_mul_scalar(b.float_mul(g, g), rest_2)
            v = square if v is None else b.float_add(b.float_mul_scalar(v, beta_2), square)
            denominator = b.float_add_scalar(b.float_div_scalar(b.float_sqrt(v), root_2), epsilon)
            change = b.float_mul_scalar(b.float_div(m, denominator), step)
            if keep != 1.0:
                p = b.float_mul_scalar(p, keep)
            new_tensors.append(b.float_sub(p, change))
            new_moments_1.append(m)
            new_moments_2.append(v)
        return new_tensors, new_moments_1, new_moments_2

    def float_sgd_step(
        self,
        tensors: Sequence[P],
        grads: Sequence[P],
        velocities: Sequence[P | None],
        options: SgdOptions,
    ) -> tuple[list[P], list[P | None]]:
        """One SGD update of every tensor, in PyTorch's arrangement (``torch.optim.SGD``).

        For each tensor ``p`` with gradient ``g`` and velocity ``v`` (``None``: the first step), with
        ``options``' ``lr``, ``momentum``, ``dampening``, ``nesterov`` and ``weight_decay``:

        - ``g = weight_decay * p + g`` (when ``weight_decay``);
        - with momentum: ``v = g`` at the first step, else ``v = v * momentum + g * (1 - dampening)``;
          the step's direction is ``v * momentum + g`` (Nesterov) or ``v``; without momentum it is ``g``
          and no velocity is kept;
        - ``p = p - direction * lr``.

        Each operation rounds to the tensor's dtype in this order (a factor of exactly 1 is skipped: it
        changes nothing), so a kernel that follows it gives the default's values bit for bit. Every list
        is as long as ``tensors``; each gradient and velocity has its tensor's shape, dtype and device.

        Returns:
            The new tensors and velocities (``None`` each without momentum).
        """
        b: Any = self
        decay, momentum, lr = options.weight_decay, options.momentum, options.lr
        rest = 1.0 - options.dampening
        new_tensors: list[P] = []
        new_velocities: list[P | None] = []
        for p, g, v in zip(tensors, grads, velocities, strict=True):
            if decay:
                g = b.float_add(b.float_mul_scalar(p, decay), g)
            direction = g
            if momentum:
                if v is None:
                    v = g
                else:
                    v = b.float_add(
                        b.float_mul_scalar(v, momentum), g if rest == 1.0 else b.float_mul_scalar(g, rest)
                    )
                direction = b.float_add(b.float_mul_scalar(v, momentum), g) if options.nesterov else v
            else:
                v = None
            new_tensors.append(b.float_sub(p, direction if lr == 1.0 else b.float_mul_scalar(direction, lr)))
            new_velocities.append(v)
        return new_tensors, new_velocities
