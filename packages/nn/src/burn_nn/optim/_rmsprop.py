"""``RmsProp``: gradients divided by a running root mean square."""

from __future__ import annotations

from burn_backend import Tensor

from ._clipping import GradientClippingConfig
from ._optimizer import Optimizer, OptimizerState, _OptimizerConfig, check_range, state_tensor
from ._weight_decay import WeightDecay, WeightDecayConfig

__all__ = ["RmsProp", "RmsPropConfig"]


class RmsPropConfig(_OptimizerConfig):
    """Settings of the ``RmsProp`` optimizer, as Burn's ``RmsPropConfig``.

    Args:
        alpha: the smoothing constant of the running averages, in ``[0, 1)``.
        momentum: the momentum factor (>= 0; ``0`` for none). Burn's default is ``0.9``, PyTorch's ``0``.
        epsilon: added to the denominator (>= 0); Burn's default ``1e-5``, PyTorch's ``1e-8``.
        centered: whether to divide by an estimate of the gradient's variance (the mean square minus
            the squared mean) instead of its mean square.
        weight_decay: an L2 penalty added to the gradient, or ``None``.
        grad_clipping: a ``GradientClippingConfig`` (per parameter or global), or ``None``.
    """

    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def build(self) -> RmsProp:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return RmsProp(self)


class RmsProp(Optimizer):
    """RMSProp (Hinton): ``s = alpha s + (1 - alpha) g²``; ``g / (sqrt(s - ḡ²) + ε)`` when centered
    (``ḡ`` the running mean of gradients), ``g / (sqrt(s) + ε)`` otherwise; then momentum
    ``b = μ b + that`` if ``μ > 0``; ``param -= lr * b``. Matches ``torch.optim.RMSprop``."""

    def __init__(self, config: RmsPropConfig) -> None:
        check_range("RmsPropConfig", "alpha", config.alpha, 0.0, 1.0, high_open=True)
        check_range("RmsPropConfig", "momentum", config.momentum)
        check_range("RmsPropConfig", "epsilon", config.epsilon)
        self.alpha = float(config.alpha)
        self.momentum = float(config.momentum)
        self.epsilon = float(config.epsilon)
        self.centered = bool(config.centered)
        self.weight_decay = None if config.weight_decay is None else WeightDecay(config.weight_decay)

    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One RMSProp update; the state holds ``square_avg``, ``grad_avg`` (centered) and
        ``momentum_buffer`` (with momentum)."""
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        alpha = self.alpha
        square_avg = grad.square().mul_scalar(1.0 - alpha)
        if state is not None:
            square_avg = state_tensor(state, "square_avg").mul_scalar(alpha).add(square_avg)
        new_state: OptimizerState = {"square_avg": square_avg}
        if self.centered:
            grad_avg = grad.mul_scalar(1.0 - alpha)
            if state is not None:
                grad_avg = state_tensor(state, "grad_avg").mul_scalar(alpha).add(grad_avg)
            new_state["grad_avg"] = grad_avg
            mean_square = square_avg.sub(grad_avg.square())
        else:
            mean_square = square_avg
        update = grad.div(mean_square.sqrt().add_scalar(self.epsilon))
        if self.momentum > 0.0:
            if state is not None:
                update = state_tensor(state, "momentum_buffer").mul_scalar(self.momentum).add(update)
            new_state["momentum_buffer"] = update
        return tensor.sub(update.mul_scalar(lr)), new_state

    def state_fields(self) -> dict[str, type]:
        """``square_avg``, with ``grad_avg`` when centered and ``momentum_buffer`` with momentum."""
        fields: dict[str, type] = {"square_avg": Tensor}
        if self.centered:
            fields["grad_avg"] = Tensor
        if self.momentum > 0.0:
            fields["momentum_buffer"] = Tensor
        return fields
