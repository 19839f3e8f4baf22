"""``Adan``: adaptive Nesterov momentum."""

from __future__ import annotations

import math

from burn_backend import Tensor

from ._clipping import GradientClippingConfig
from ._optimizer import Optimizer, OptimizerState, _OptimizerConfig, check_range, state_int, state_tensor

__all__ = ["Adan", "AdanConfig"]


class AdanConfig(_OptimizerConfig):
    """Settings of the ``Adan`` optimizer, as Burn's ``AdanConfig``.

    Args:
        beta_1: the decay of the gradients' mean, in ``[0, 1)``.
        beta_2: the decay of the gradient differences' mean, in ``[0, 1)``.
        beta_3: the decay of the second moment, in ``[0, 1)``.
        epsilon: added to the denominator (>= 0).
        weight_decay: the decay factor ``λ`` (>= 0).
        no_prox: apply the decay as AdamW does (``param * (1 - lr λ)`` before the update) instead of the
            proximal form (``/ (1 + lr λ)`` after it).
        grad_clipping: a ``GradientClippingConfig`` (per parameter or global), or ``None``.
    """

    beta_1: float = 0.98
    beta_2: float = 0.92
    beta_3: float = 0.99
    epsilon: float = 1e-8
    weight_decay: float = 0.0
    no_prox: bool = False
    grad_clipping: GradientClippingConfig | None = None

    def build(self) -> Adan:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return Adan(self)


class Adan(Optimizer):
    """Adan (Xie et al., 2022, arXiv:2208.06677), Burn's and the reference implementation's rule: with
    ``d = g - g_prev`` (zero at the first step),

    - ``m = β1 m + (1 - β1) g``, ``δ = β2 δ + (1 - β2) d``, ``n = β3 n + (1 - β3) (g + β2 d)²``;
    - ``u = (m / (1 - β1^t) + β2 δ / (1 - β2^t)) / (sqrt(n / (1 - β3^t)) + ε)``;
    - ``param = (param - lr u) / (1 + lr λ)``, or with ``no_prox`` ``param (1 - lr λ) - lr u``.

    (The moments start at zero, so the first step's are ``(1 - β1) g``, ``0`` and ``(1 - β3) g²``.)
    """

    def __init__(self, config: AdanConfig) -> None:
        for name in ("beta_1", "beta_2", "beta_3"):
            check_range("AdanConfig", name, getattr(config, name), 0.0, 1.0, high_open=True)
        check_range("AdanConfig", "epsilon", config.epsilon)
        check_range("AdanConfig", "weight_decay", config.weight_decay)
        self.beta_1 = float(config.beta_1)
        self.beta_2 = float(config.beta_2)
        self.beta_3 = float(config.beta_3)
        self.epsilon = float(config.epsilon)
        self.weight_decay = float(config.weight_decay)
        self.no_prox = bool(config.no_prox)

    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One Adan update; the state holds ``time``, ``exp_avg``, ``exp_avg_sq``, ``exp_avg_diff`` and
        ``neg_pre_grad`` (the previous gradient, negated)."""
        b1, b2, b3 = self.beta_1, self.beta_2, self.beta_3
        if state is None:
            time = 1
            exp_avg = grad.mul_scalar(1.0 - b1)
            exp_avg_sq = grad.square().mul_scalar(1.0 - b3)
            exp_avg_diff = grad.zeros_like()
        else:
            time = state_int(state, "time") + 1
            grad_diff = state_tensor(state, "neg_pre_grad").add(grad)
            look_ahead = grad_diff.mul_scalar(b2).add(grad)
            exp_avg = state_tensor(state, "exp_avg").mul_scalar(b1).add(grad.mul_scalar(1.0 - b1))
            exp_avg_diff = (
                state_tensor(state, "exp_avg_diff").mul_scalar(b2).add(grad_diff.mul_scalar(1.0 - b2))
            )
            exp_avg_sq = (
                state_tensor(state, "exp_avg_sq").mul_scalar(b3).add(look_ahead.square().mul_scalar(1.0 - b3))
            )
        denominator = exp_avg_sq.sqrt().div_scalar(math.sqrt(1.0 - b3**time)).add_scalar(self.epsilon)
        update = (
            exp_avg.div_scalar(1.0 - b1**time)
            .div(denominator)
            .add(exp_avg_diff.mul_scalar(b2).div_scalar(1.0 - b2**time).div(denominator))
        )
        delta = update.mul_scalar(lr)
        decay_rate = lr * self.weight_decay
        if self.no_prox:
            updated = (tensor if decay_rate == 0.0 else tensor.mul_scalar(1.0 - decay_rate)).sub(delta)
        else:
            updated = tensor.sub(delta)
            if decay_rate != 0.0:
                updated = updated.div_scalar(1.0 + decay_rate)
        new_state: OptimizerState = {
            "time": time,
            "exp_avg": exp_avg,
            "exp_avg_sq": exp_avg_sq,
            "exp_avg_diff": exp_avg_diff,
            "neg_pre_grad": grad.neg(),
        }
        return updated, new_state

    def state_fields(self) -> dict[str, type]:
        """``time``, ``exp_avg``, ``exp_avg_sq``, ``exp_avg_diff``, ``neg_pre_grad``."""
        return {
            "time": int,
            "exp_avg": Tensor,
            "exp_avg_sq": Tensor,
            "exp_avg_diff": Tensor,
            "neg_pre_grad": Tensor,
        }
