"""``AdaGrad``: per-value learning rates from the sum of squared gradients."""

from __future__ import annotations

from burn_backend import Tensor

from ._clipping import GradientClippingConfig
from ._optimizer import Optimizer, OptimizerState, _OptimizerConfig, check_range, state_int, state_tensor
from ._weight_decay import WeightDecay, WeightDecayConfig

__all__ = ["AdaGrad", "AdaGradConfig"]


class AdaGradConfig(_OptimizerConfig):
    """Settings of the ``AdaGrad`` optimizer, as Burn's ``AdaGradConfig``.

    Args:
        lr_decay: the step ``t`` uses ``lr / (1 + (t - 1) * lr_decay)`` (>= 0).
        epsilon: added to the denominator (>= 0); Burn's default ``1e-5``, PyTorch's ``1e-10``.
        weight_decay: an L2 penalty added to the gradient, or ``None``.
        grad_clipping: a ``GradientClippingConfig`` (per parameter or global), or ``None``.
    """

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def build(self) -> AdaGrad:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return AdaGrad(self)


class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., 2011): ``sum += g²``, ``param -= lr_t * g / (sqrt(sum) + ε)``. Matches
    ``torch.optim.Adagrad`` (with ``initial_accumulator_value=0``)."""

    def __init__(self, config: AdaGradConfig) -> None:
        check_range("AdaGradConfig", "lr_decay", config.lr_decay)
        check_range("AdaGradConfig", "epsilon", config.epsilon)
        self.lr_decay = float(config.lr_decay)
        self.epsilon = float(config.epsilon)
        self.weight_decay = None if config.weight_decay is None else WeightDecay(config.weight_decay)

    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One AdaGrad update; the state holds ``time`` and the ``sum`` of squared gradients."""
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        if state is None:
            time, total = 1, grad.square()
        else:
            time = state_int(state, "time") + 1
            total = state_tensor(state, "sum").add(grad.square())
        decayed_lr = lr / (1.0 + (time - 1) * self.lr_decay)
        update = grad.div(total.sqrt().add_scalar(self.epsilon)).mul_scalar(decayed_lr)
        return tensor.sub(update), {"time": time, "sum": total}

    def state_fields(self) -> dict[str, type]:
        """``time`` and ``sum``."""
        return {"time": int, "sum": Tensor}
