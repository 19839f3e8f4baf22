"""``Sgd``: stochastic gradient descent, with optional weight decay and momentum."""

from __future__ import annotations

from burn_backend import Tensor

from ._clipping import GradientClippingConfig
from ._momentum import Momentum, MomentumConfig
from ._optimizer import Optimizer, OptimizerState, _OptimizerConfig, state_tensor
from ._weight_decay import WeightDecay, WeightDecayConfig

__all__ = ["Sgd", "SgdConfig"]


class SgdConfig(_OptimizerConfig):
    """Settings of the ``Sgd`` optimizer, as Burn's ``SgdConfig``.

    Args:
        weight_decay: an L2 penalty added to the gradient, or ``None``.
        momentum: momentum settings, or ``None`` for plain gradient descent.
        gradient_clipping: a ``GradientClippingConfig`` (per parameter or global), or ``None`` (Burn
            names this field ``gradient_clipping`` for SGD and ``grad_clipping`` for the other optimizers).

    Example:
        >>> optim = SgdConfig(momentum=MomentumConfig(0.9, 0.0, nesterov=True)).init()
    """

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    gradient_clipping: GradientClippingConfig | None = None
    _clipping_field = "gradient_clipping"

    def build(self) -> Sgd:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return Sgd(self)


class Sgd(Optimizer):
    """Stochastic gradient descent: ``param -= lr * g``, where ``g`` is the gradient plus the weight decay
    term, passed through momentum when configured. Matches ``torch.optim.SGD`` (which, unlike this,
    requires zero dampening for Nesterov momentum)."""

    def __init__(self, config: SgdConfig) -> None:
        self.weight_decay = None if config.weight_decay is None else WeightDecay(config.weight_decay)
        self.momentum = None if config.momentum is None else Momentum(config.momentum)

    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One SGD update; the state is the momentum's ``velocity`` (none without momentum)."""
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        new_state: OptimizerState | None = None
        if self.momentum is not None:
            velocity = None if state is None else state_tensor(state, "velocity")
            grad, velocity = self.momentum.transform(grad, velocity)
            new_state = {"velocity": velocity}
        return tensor.sub(grad.mul_scalar(lr)), new_state

    def state_fields(self) -> dict[str, type]:
        """``velocity`` with momentum, nothing without."""
        return {"velocity": Tensor} if self.momentum is not None else {}

    def __repr__(self) -> str:
        return f"Sgd(weight_decay={self.weight_decay!r}, momentum={self.momentum!r})"
