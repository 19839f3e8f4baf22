"""``Muon``: momentum SGD whose update is orthogonalized by a Newton-Schulz iteration."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence

from burn_backend import Tensor

from ._momentum import Momentum, MomentumConfig
from ._optimizer import Optimizer, OptimizerState, _OptimizerConfig, check_range, state_tensor
from ._weight_decay import WeightDecayConfig

__all__ = ["AdjustLrFn", "Muon", "MuonConfig"]


class AdjustLrFn(enum.Enum):
    """How ``Muon`` scales the learning rate by the shape ``[A, B]`` of a parameter, as Burn's
    ``AdjustLrFn`` (PyTorch's ``adjust_lr_fn``).

    - ``Original`` (Keller Jordan's): ``lr * sqrt(max(1, A / B))``.
    - ``MatchRmsAdamW`` (Moonshot's): ``lr * 0.2 * sqrt(max(A, B))``, so that AdamW's learning rate and
      weight decay carry over.

    The shape is the parameter's as stored: Burn's ``Linear`` weight is ``[d_input, d_output]``, the
    transpose of PyTorch's, so for a non-square ``Linear`` the ``Original`` ratio differs from what
    PyTorch computes for the same layer.
    """

    Original = "original"
    MatchRmsAdamW = "match_rms_adamw"

    def ratio(self, shape: Sequence[int]) -> float:
        """The factor the learning rate is multiplied by for a parameter of ``shape`` (1 below 2 dims)."""
        if len(shape) < 2:
            return 1.0
        rows, cols = float(shape[0]), float(shape[1])
        if self is AdjustLrFn.Original:
            return math.sqrt(max(1.0, rows / cols))
        return 0.2 * math.sqrt(max(rows, cols))


class MuonConfig(_OptimizerConfig):
    """Settings of the ``Muon`` optimizer, as Burn's ``MuonConfig``.

    Muon is meant for the 2-d weights of hidden layers; optimize biases, embeddings and norms with
    another optimizer (AdamW, say). Stepping a module with a non-2-d parameter that has a gradient raises
    ``ValueError`` (Burn panics; PyTorch refuses such parameters when the optimizer is built). Burn's
    Muon has no gradient clipping setting; use ``ModuleOptimizer.with_grad_clipping``.

    Args:
        weight_decay: the decoupled decay factor (the parameter is scaled by ``1 - lr * penalty``, with the
            learning rate before adjustment), or ``None``. PyTorch's default is ``0.1``.
        momentum: momentum settings; by default ``μ = 0.95``, no dampening, Nesterov (PyTorch's rule,
            which scales the update by ``1 - μ``, gives the same step: the update is normalized).
        ns_coefficients: the ``(a, b, c)`` of the quintic Newton-Schulz iteration.
        epsilon: the smallest norm the update is divided by (>= 0).
        ns_steps: the number of Newton-Schulz iterations (0 to 99).
        adjust_lr_fn: how the learning rate scales with the parameter's shape.
    """

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig = MomentumConfig().with_momentum(0.95).with_dampening(0.0).with_nesterov(True)
    ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315)
    epsilon: float = 1e-7
    ns_steps: int = 5
    adjust_lr_fn: AdjustLrFn = AdjustLrFn.Original

    def build(self) -> Muon:
        """The bare update rule."""
        return Muon(self)


class Muon(Optimizer):
    """Muon (Jordan et al., 2024): SGD momentum whose update ``U`` is replaced by an approximation of the
    nearest semi-orthogonal matrix, computed by ``ns_steps`` Newton-Schulz iterations on ``U / ‖U‖``;
    then ``param = param * (1 - lr λ) - adjusted_lr * orthogonalized``.

    Matches ``torch.optim.Muon``, except that the iteration runs in the parameter's dtype where PyTorch
    runs it in bfloat16 (as Burn does).
    """

    def __init__(self, config: MuonConfig) -> None:
        self.momentum = Momentum(config.momentum)
        penalty = None if config.weight_decay is None else config.weight_decay.penalty
        if penalty is not None:
            check_range("MuonConfig", "weight_decay.penalty", penalty)
        self.weight_decay_penalty = None if penalty is None else float(penalty)
        coefficients = tuple(config.ns_coefficients)
        if len(coefficients) != 3:
            raise ValueError(f"MuonConfig: ns_coefficients must be 3 numbers (a, b, c), got {coefficients!r}")
        self.ns_coefficients = (float(coefficients[0]), float(coefficients[1]), float(coefficients[2]))
        check_range("MuonConfig", "epsilon", config.epsilon)
        self.epsilon = float(config.epsilon)
        if isinstance(config.ns_steps, bool) or not isinstance(config.ns_steps, int):
            raise ValueError(f"MuonConfig: ns_steps must be an int, got {config.ns_steps!r}")
        check_range("MuonConfig", "ns_steps", config.ns_steps, 0, 99)
        self.ns_steps = config.ns_steps
        if not isinstance(config.adjust_lr_fn, AdjustLrFn):
            raise ValueError(f"MuonConfig: adjust_lr_fn must be an AdjustLrFn, got {config.adjust_lr_fn!r}")
        self.adjust_lr_fn = config.adjust_lr_fn

    def orthogonalize(self, update: Tensor) -> Tensor:
        """The Newton-Schulz approximation of the nearest semi-orthogonal matrix to 2-d ``update``: a tall
        matrix is transposed first (and back after), divided by its Frobenius norm (at least ``epsilon``),
        then each step computes ``A = X Xᵀ``, ``X = a X + (b A + c A²) X``."""
        tall = update.dims()[0] > update.dims()[1]
        x = update.swap_dims(0, 1) if tall else update
        norm = x.square().sum().sqrt().clamp_min(self.epsilon)
        x = x.div(norm.reshape([1, 1]))
        a, b, c = self.ns_coefficients
        for _ in range(self.ns_steps):
            gram = x.matmul(x.swap_dims(0, 1))
            polynomial = gram.mul_scalar(b).add(gram.matmul(gram).mul_scalar(c))
            x = x.mul_scalar(a).add(polynomial.matmul(x))
        return x.swap_dims(0, 1) if tall else x

    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One Muon update; the state is the momentum's ``velocity``.

        Raises:
            ValueError: the parameter is not 2-d.
        """
        if tensor.rank != 2:
            raise ValueError(
                f"Muon orthogonalizes 2-d parameters only, got shape {tensor.dims()}; optimize the others "
                "with another optimizer (AdamW, say)"
            )
        velocity = None if state is None else state_tensor(state, "velocity")
        update, velocity = self.momentum.transform(grad, velocity)
        orthogonal = self.orthogonalize(update)
        adjusted_lr = lr * self.adjust_lr_fn.ratio(tensor.dims())
        if self.weight_decay_penalty is not None:
            tensor = tensor.mul_scalar(1.0 - lr * self.weight_decay_penalty)
        return tensor.sub(orthogonal.mul_scalar(adjusted_lr)), {"velocity": velocity}

    def state_fields(self) -> dict[str, type]:
        """``velocity``."""
        return {"velocity": Tensor}
