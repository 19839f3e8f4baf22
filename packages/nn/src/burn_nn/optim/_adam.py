"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from burn_backend import AdamOptions, Tensor
from burn_backend.optim import adam_step

from ._clipping import GradientClippingConfig
from ._optimizer import (
    Optimizer,
    OptimizerState,
    _OptimizerConfig,
    check_range,
    maximum,
    state_int,
    state_tensor,
)
from ._weight_decay import WeightDecay, WeightDecayConfig

__all__ = ["Adam", "AdamConfig", "AdamW", "AdamWConfig"]


class AdamConfig(_OptimizerConfig):
    """Settings of the ``Adam`` optimizer, as Burn's ``AdamConfig``.

    Args:
        beta_1: the decay of the first moment (mean of gradients), in ``[0, 1)``.
        beta_2: the decay of the second moment (mean of squared gradients), in ``[0, 1)``.
        epsilon: added to the denominator for numerical stability (>= 0). Burn's default, ``1e-5``, is
            larger than PyTorch's ``1e-8``.
        amsgrad: whether to divide by the running maximum of the second moment (AMSGrad).
        weight_decay: an L2 penalty added to the gradient (PyTorch ``Adam``'s ``weight_decay``), or
            ``None``; see ``AdamWConfig`` for decoupled decay.
        grad_clipping: clipping of each parameter's gradient, or ``None``.

    Example:
        >>> optim = AdamConfig().with_weight_decay(WeightDecayConfig(1e-4)).init()
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    amsgrad: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def build(self) -> Adam:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return Adam(self)


class _AdaptiveMomentum:
    """The moment estimates Adam and AdamW share, and the bias-corrected step they give."""

    def __init__(self, owner: str, beta_1: float, beta_2: float, epsilon: float, amsgrad: bool) -> None:
        check_range(owner, "beta_1", beta_1, 0.0, 1.0, high_open=True)
        check_range(owner, "beta_2", beta_2, 0.0, 1.0, high_open=True)
        check_range(owner, "epsilon", epsilon)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)

    def fields(self) -> dict[str, type]:
        fields: dict[str, type] = {"time": int, "moment_1": Tensor, "moment_2": Tensor}
        if self.amsgrad:
            fields["max_moment_2"] = Tensor
        return fields

    def update(self, grad: Tensor, state: OptimizerState | None) -> OptimizerState:
        """The moments after ``grad`` (from zero: the first are ``(1 - β1) g`` and ``(1 - β2) g²``)."""
        b1, b2 = self.beta_1, self.beta_2
        if state is None:
            time = 1
            moment_1 = grad.mul_scalar(1.0 - b1)
            moment_2 = grad.square().mul_scalar(1.0 - b2)
            max_moment_2 = moment_2
        else:
            time = state_int(state, "time") + 1
            moment_1 = state_tensor(state, "moment_1").mul_scalar(b1).add(grad.mul_scalar(1.0 - b1))
            moment_2 = state_tensor(state, "moment_2").mul_scalar(b2).add(grad.square().mul_scalar(1.0 - b2))
            if self.amsgrad:
                max_moment_2 = maximum(state_tensor(state, "max_moment_2"), moment_2)
        new_state: OptimizerState = {"time": time, "moment_1": moment_1, "moment_2": moment_2}
        if self.amsgrad:
            new_state["max_moment_2"] = max_moment_2
        return new_state

    def step_many(
        self,
        lr: float,
        tensors: Sequence[Tensor],
        grads: Sequence[Tensor],
        states: Sequence[OptimizerState | None],
        weight_decay: float,
        decoupled: bool,
    ) -> list[tuple[Tensor, OptimizerState | None]]:
        """Every parameter's update by the backend's ``float_adam_step``, one call per device, dtype and
        step number (the moments and bias corrections of ``update`` and ``change``, the same values)."""
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, (tensor, state) in enumerate(zip(tensors, states, strict=True)):
            time = 1 if state is None else state_int(state, "time") + 1
            groups.setdefault((tensor.device, tensor.dtype, time), []).append(i)
        results: list[tuple[Tensor, OptimizerState | None]] = [None] * len(tensors)  # type: ignore[list-item]
        for (_, _, time), members in groups.items():
            options = AdamOptions(lr, self.beta_1, self.beta_2, self.epsilon, time, weight_decay, decoupled)
            moments_1: list[Tensor | None] = []
            moments_2: list[Tensor | None] = []
            for i in members:
                state = states[i]
                moments_1.append(None if state is None else state_tensor(state, "moment_1"))
                moments_2.append(None if state is None else state_tensor(state, "moment_2"))
            new_tensors, new_moments_1, new_moments_2 = adam_step(
                [tensors[i] for i in members], [grads[i] for i in members], moments_1, moments_2, options
            )
            for i, tensor, moment_1, moment_2 in zip(members, new_tensors, new_moments_1, new_moments_2):
                results[i] = (tensor, {"time": time, "moment_1": moment_1, "moment_2": moment_2})
        return results

    def change(self, state: OptimizerState, lr: float) -> Tensor:
        """``lr m̂ / (sqrt(v̂) + ε)``, the bias-corrected step (with ``v`` the maximum for AMSGrad), in
        PyTorch's arrangement: ``lr / (1 - β1^t)`` times ``m / (sqrt(v) / sqrt(1 - β2^t) + ε)``."""
        time = state_int(state, "time")
        correction_1 = 1.0 - self.beta_1**time
        correction_2 = 1.0 - self.beta_2**time
        moment_2 = state_tensor(state, "max_moment_2" if self.amsgrad else "moment_2")
        denominator = moment_2.sqrt().div_scalar(math.sqrt(correction_2)).add_scalar(self.epsilon)
        return state_tensor(state, "moment_1").div(denominator).mul_scalar(lr / correction_1)


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), optionally AMSGrad (Reddi et al., 2018), with an optional L2 penalty
    added to the gradient. Matches ``torch.optim.Adam`` with the same settings."""

    def __init__(self, config: AdamConfig) -> None:
        self.momentum = _AdaptiveMomentum(
            "AdamConfig", config.beta_1, config.beta_2, config.epsilon, config.amsgrad
        )
        self.weight_decay = None if config.weight_decay is None else WeightDecay(config.weight_decay)

    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One Adam update; the state holds ``time``, ``moment_1``, ``moment_2`` (and ``max_moment_2``)."""
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        new_state = self.momentum.update(grad, state)
        return tensor.sub(self.momentum.change(new_state, lr)), new_state

    def step_many(
        self,
        lr: float,
        tensors: Sequence[Tensor],
        grads: Sequence[Tensor],
        states: Sequence[OptimizerState | None],
    ) -> list[tuple[Tensor, OptimizerState | None]]:
        """Every parameter of a device in one backend op (``burn_backend.optim.adam_step``); with
        AMSGrad, ``step`` on each."""
        if self.momentum.amsgrad:
            return super().step_many(lr, tensors, grads, states)
        decay = 0.0 if self.weight_decay is None else self.weight_decay.penalty
        return self.momentum.step_many(lr, tensors, grads, states, decay, False)

    def state_fields(self) -> dict[str, type]:
        """``time``, ``moment_1``, ``moment_2``, and ``max_moment_2`` with AMSGrad."""
        return self.momentum.fields()


class AdamWConfig(_OptimizerConfig):
    """Settings of the ``AdamW`` optimizer, as Burn's ``AdamWConfig``.

    Args:
        beta_1: the decay of the first moment, in ``[0, 1)``.
        beta_2: the decay of the second moment, in ``[0, 1)``.
        epsilon: added to the denominator (>= 0); Burn's default ``1e-5``, PyTorch's ``1e-8``.
        weight_decay: the decoupled decay factor ``λ`` (>= 0): each step scales the parameter by
            ``1 - lr * λ``. Burn's default is ``1e-4``, PyTorch's ``1e-2``.
        cautious_weight_decay: decay only the values whose sign agrees with the first moment's
            (Cautious Weight Decay, arXiv:2510.12402).
        amsgrad: whether to divide by the running maximum of the second moment.
        grad_clipping: clipping of each parameter's gradient, or ``None``.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    cautious_weight_decay: bool = False
    amsgrad: bool = False
    grad_clipping: GradientClippingConfig | None = None

    def build(self) -> AdamW:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return AdamW(self)


class AdamW(Optimizer):
    """AdamW (Loshchilov & Hutter, 2019): Adam whose weight decay scales the parameter directly,
    ``param = param * (1 - lr λ) - lr m̂ / (sqrt(v̂) + ε)``. Matches ``torch.optim.AdamW`` with the same
    settings (mind the different default ``weight_decay`` and ``epsilon``)."""

    def __init__(self, config: AdamWConfig) -> None:
        self.momentum = _AdaptiveMomentum(
            "AdamWConfig", config.beta_1, config.beta_2, config.epsilon, config.amsgrad
        )
        check_range("AdamWConfig", "weight_decay", config.weight_decay)
        self.weight_decay = float(config.weight_decay)
        self.cautious_weight_decay = bool(config.cautious_weight_decay)

    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One AdamW update; the state is Adam's."""
        new_state = self.momentum.update(grad, state)
        change = self.momentum.change(new_state, lr)
        decay_rate = lr * self.weight_decay
        if decay_rate == 0.0:
            decayed = tensor
        elif self.cautious_weight_decay:
            moment_1 = state_tensor(new_state, "moment_1")
            disagree = tensor.greater_equal_elem(0.0).not_equal(moment_1.greater_equal_elem(0.0))
            decayed = tensor.sub(tensor.mul_scalar(decay_rate).mask_fill(disagree, 0.0))
        else:
            decayed = tensor.mul_scalar(1.0 - decay_rate)
        return decayed.sub(change), new_state

    def step_many(
        self,
        lr: float,
        tensors: Sequence[Tensor],
        grads: Sequence[Tensor],
        states: Sequence[OptimizerState | None],
    ) -> list[tuple[Tensor, OptimizerState | None]]:
        """Every parameter of a device in one backend op (``burn_backend.optim.adam_step``); with AMSGrad
        or cautious weight decay, ``step`` on each."""
        if self.momentum.amsgrad or self.cautious_weight_decay:
            return super().step_many(lr, tensors, grads, states)
        return self.momentum.step_many(lr, tensors, grads, states, self.weight_decay, True)

    def state_fields(self) -> dict[str, type]:
        """``time``, ``moment_1``, ``moment_2``, and ``max_moment_2`` with AMSGrad."""
        return self.momentum.fields()
