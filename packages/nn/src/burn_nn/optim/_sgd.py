"""``Sgd``: stochastic gradient descent, with optional weight decay and momentum."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burn_backend import SgdOptions, Tensor
from burn_backend.optim import sgd_step

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

    def step_many(
        self,
        lr: float,
        tensors: Sequence[Tensor],
        grads: Sequence[Tensor],
        states: Sequence[OptimizerState | None],
    ) -> list[tuple[Tensor, OptimizerState | None]]:
        """Every parameter's update by the backend's ``float_sgd_step``, one call per device and dtype
        (one launch for up to 32 parameters on Cuda rather than up to five ops each), with ``step``'s
        values. Momentum of 0 keeps ``step``'s rule (a velocity that dampening scales), one at a time."""
        momentum = self.momentum
        if momentum is not None and not momentum.momentum:
            return super().step_many(lr, tensors, grads, states)
        options = SgdOptions(
            lr,
            0.0 if momentum is None else momentum.momentum,
            0.0 if momentum is None else momentum.dampening,
            momentum is not None and momentum.nesterov,
            0.0 if self.weight_decay is None else self.weight_decay.penalty,
        )
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, tensor in enumerate(tensors):
            groups.setdefault((tensor.device, tensor.dtype), []).append(i)
        results: list[tuple[Tensor, OptimizerState | None]] = [None] * len(tensors)  # type: ignore[list-item]
        for members in groups.values():
            velocities: list[Tensor | None] = []
            for i in members:
                state = states[i]
                velocities.append(
                    None if state is None or momentum is None else state_tensor(state, "velocity")
                )
            new_tensors, new_velocities = sgd_step(
                [tensors[i] for i in members], [grads[i] for i in members], velocities, options
            )
            for i, tensor, velocity in zip(members, new_tensors, new_velocities, strict=True):
                results[i] = (tensor, None if velocity is None else {"velocity": velocity})
        return results

    def state_fields(self) -> dict[str, type]:
        """``velocity`` with momentum, nothing without."""
        return {"velocity": Tensor} if self.momentum is not None else {}

    def __repr__(self) -> str:
        return f"Sgd(weight_decay={self.weight_decay!r}, momentum={self.momentum!r})"
