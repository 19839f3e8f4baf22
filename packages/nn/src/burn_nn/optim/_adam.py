"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from burn_backend import AdamOptions, DType, Kind, Tensor
from burn_backend.optim import adam_step

from ._clipping import GradientClippingConfig
from ._optimizer import (
    Optimizer,
    OptimizerState,
    _OptimizerConfig,
    check_range,
    maximum,
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
        grad_clipping: a ``GradientClippingConfig`` (per parameter or global), or ``None``.
        capturable: keep the step count on the device (an int tensor in the state) and compute the bias
            corrections there, as PyTorch's ``capturable=True``: a step replayed by
            ``burn_fusion.replay`` then advances the count with the rest of its work. The values are
            those of the default; eagerly, each step launches a few more small ops.

    Example:
        >>> optim = AdamConfig().with_weight_decay(WeightDecayConfig(1e-4)).init()
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    amsgrad: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None
    capturable: bool = False

    def build(self) -> Adam:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return Adam(self)


Time = int | Tensor
"""A step count: an int, or (capturable) an int tensor of one element on the parameter's device."""

Scalar = float | Tensor
"""A constant of the update: a float, or (capturable) a one-element tensor broadcast to the parameter."""


class _AdaptiveMomentum:
    """The moment estimates Adam and AdamW share, and the bias-corrected step they give."""

    def __init__(
        self, owner: str, beta_1: float, beta_2: float, epsilon: float, amsgrad: bool, capturable: bool
    ) -> None:
        check_range(owner, "beta_1", beta_1, 0.0, 1.0, high_open=True)
        check_range(owner, "beta_2", beta_2, 0.0, 1.0, high_open=True)
        check_range(owner, "epsilon", epsilon)
        self.owner = owner
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)
        self.capturable = bool(capturable)

    def fields(self) -> dict[str, type]:
        fields: dict[str, type] = {
            "time": Tensor if self.capturable else int,
            "moment_1": Tensor,
            "moment_2": Tensor,
        }
        if self.amsgrad:
            fields["max_moment_2"] = Tensor
        return fields

    def check(self, rule: str, state: OptimizerState) -> OptimizerState:
        """Raise ``ValueError`` unless ``state`` (restored from a record) holds a step count of this
        setting (an int; capturable, an int tensor of one element) and float moments; returns the
        moments (whose shapes ``Optimizer.check_state`` checks)."""
        moments: OptimizerState = {}
        for name, value in state.items():
            if name == "time":
                if isinstance(value, Tensor) != self.capturable or (
                    isinstance(value, Tensor) and (value.dims() != [1] or value.dtype.kind is not Kind.INT)
                ):
                    wanted = "an int tensor of shape [1]" if self.capturable else "an int"
                    got = f"{value.dims()} {value.dtype}" if isinstance(value, Tensor) else repr(value)
                    raise ValueError(
                        f"{rule}: with capturable={self.capturable} the step count is {wanted}, got {got}"
                    )
            else:
                if isinstance(value, Tensor) and value.dtype.kind is not Kind.FLOAT:
                    raise ValueError(f"{rule}: the state entry {name!r} is {value.dtype}, expected floats")
                moments[name] = value
        return moments

    def next_time(self, state: OptimizerState | None, like: Tensor) -> Time:
        """The number of this step: 1 at the first, else the state's plus one (on the device of
        ``like`` when capturable)."""
        if state is None:
            return Tensor.ones([1], like.device, DType.I64) if self.capturable else 1
        time = state["time"]
        if isinstance(time, Tensor) != self.capturable:
            kind = "a tensor" if self.capturable else "an int"
            raise ValueError(
                f"{self.owner}: capturable={self.capturable} keeps the step count as {kind}; the state "
                f"holds {type(time).__name__} {time!r} (from an optimizer with the other setting)"
            )
        if isinstance(time, Tensor):
            if time.device != like.device:
                time = time.to_device(like.device)
            return time.add_scalar(1)
        return time + 1

    def corrections(self, time: Time, lr: float, like: Tensor) -> tuple[Scalar, Scalar]:
        """``sqrt(1 - β2^t)`` and ``lr / (1 - β1^t)``, computed in double precision: floats for an int
        ``time``; for a tensor, one-element tensors of ``like``'s dtype and rank, computed on the
        device."""
        if isinstance(time, int):
            return math.sqrt(1.0 - self.beta_2**time), lr / (1.0 - self.beta_1**time)
        exponent = time.cast(DType.F64)

        def power(beta: float) -> Tensor:  # beta ** time
            return exponent.mul_scalar(math.log(beta)).exp() if beta > 0 else exponent.mul_scalar(0.0)

        root_2 = power(self.beta_2).neg().add_scalar(1.0).sqrt()
        step = power(self.beta_1).neg().add_scalar(1.0).recip().mul_scalar(lr)
        shape = [1] * len(like.shape)
        return root_2.cast(like.dtype).reshape(shape), step.cast(like.dtype).reshape(shape)

    def update(self, grad: Tensor, state: OptimizerState | None, time: Time | None = None) -> OptimizerState:
        """The moments after ``grad`` (from zero: the first are ``(1 - β1) g`` and ``(1 - β2) g²``), at
        step ``time`` (by default ``next_time``)."""
        b1, b2 = self.beta_1, self.beta_2
        time = self.next_time(state, grad) if time is None else time
        if state is None:
            moment_1 = grad.mul_scalar(1.0 - b1)
            moment_2 = grad.square().mul_scalar(1.0 - b2)
            max_moment_2 = moment_2
        else:
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
        step number (the moments and bias corrections of ``update`` and ``change``, the same values);
        capturable, the same arithmetic as tensor ops, with the step counts on the device."""
        if self.capturable:
            return self._step_many_on_device(lr, tensors, grads, states, weight_decay, decoupled)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, (tensor, state) in enumerate(zip(tensors, states, strict=True)):
            time = self.next_time(state, tensor)
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

    def _step_many_on_device(
        self,
        lr: float,
        tensors: Sequence[Tensor],
        grads: Sequence[Tensor],
        states: Sequence[OptimizerState | None],
        weight_decay: float,
        decoupled: bool,
    ) -> list[tuple[Tensor, OptimizerState | None]]:
        """``update`` and ``change`` on each parameter, with the step count and the bias corrections on
        the device; parameters whose states share one step-count tensor (as those this method returns
        do) share its constants."""
        keep = 1.0 - lr * weight_decay if decoupled else 1.0
        times: dict[tuple[Any, ...], Time] = {}
        constants: dict[tuple[Any, ...], tuple[Scalar, Scalar]] = {}
        results: list[tuple[Tensor, OptimizerState | None]] = []
        for tensor, grad, state in zip(tensors, grads, states, strict=True):
            where = (id(None if state is None else state["time"]), tensor.device)
            time = times.get(where)
            if time is None:
                time = times[where] = self.next_time(state, tensor)
            layout = (*where, tensor.dtype, len(tensor.shape))
            if layout not in constants:
                constants[layout] = self.corrections(time, lr, tensor)
            if weight_decay and not decoupled:
                grad = tensor.mul_scalar(weight_decay).add(grad)
            new_state = self.update(grad, state, time)
            kept = tensor if keep == 1.0 else tensor.mul_scalar(keep)
            results.append((kept.sub(self.change(new_state, lr, constants[layout])), new_state))
        return results

    def change(
        self, state: OptimizerState, lr: float, corrections: tuple[Scalar, Scalar] | None = None
    ) -> Tensor:
        """``lr m̂ / (sqrt(v̂) + ε)``, the bias-corrected step (with ``v`` the maximum for AMSGrad), in
        PyTorch's arrangement: ``lr / (1 - β1^t)`` times ``m / (sqrt(v) / sqrt(1 - β2^t) + ε)``
        (``corrections``: those two constants, computed already)."""
        moment_1 = state_tensor(state, "moment_1")
        root_2, step = self.corrections(state["time"], lr, moment_1) if corrections is None else corrections
        moment_2 = state_tensor(state, "max_moment_2" if self.amsgrad else "moment_2")
        denominator = _divide(moment_2.sqrt(), root_2).add_scalar(self.epsilon)
        return _multiply(moment_1.div(denominator), step)


def _divide(tensor: Tensor, by: Scalar) -> Tensor:
    return tensor.div(by) if isinstance(by, Tensor) else tensor.div_scalar(by)


def _multiply(tensor: Tensor, by: Scalar) -> Tensor:
    return tensor.mul(by) if isinstance(by, Tensor) else tensor.mul_scalar(by)


class _MomentRule(Optimizer):
    """What Adam and AdamW share: the moment estimates (``momentum``), their state and its check."""

    momentum: _AdaptiveMomentum

    def state_fields(self) -> dict[str, type]:
        """``time`` (an int tensor when capturable), ``moment_1``, ``moment_2``, and ``max_moment_2``
        with AMSGrad."""
        return self.momentum.fields()

    def check_state(self, state: OptimizerState, tensor: Tensor) -> None:
        """Float moments of the parameter's shape, and a step count as the ``capturable`` setting keeps
        it."""
        super().check_state(self.momentum.check(type(self).__name__, state), tensor)


class Adam(_MomentRule):
    """Adam (Kingma & Ba, 2015), optionally AMSGrad (Reddi et al., 2018), with an optional L2 penalty
    added to the gradient. Matches ``torch.optim.Adam`` with the same settings."""

    def __init__(self, config: AdamConfig) -> None:
        self.momentum = _AdaptiveMomentum(
            "AdamConfig", config.beta_1, config.beta_2, config.epsilon, config.amsgrad, config.capturable
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
        """Every parameter of a device in one backend op (``burn_backend.optim.adam_step``); capturable,
        tensor ops with the step count on the device; with AMSGrad, ``step`` on each."""
        if self.momentum.amsgrad:
            return super().step_many(lr, tensors, grads, states)
        decay = 0.0 if self.weight_decay is None else self.weight_decay.penalty
        return self.momentum.step_many(lr, tensors, grads, states, decay, False)


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
        grad_clipping: a ``GradientClippingConfig`` (per parameter or global), or ``None``.
        capturable: keep the step count on the device, as ``AdamConfig.capturable``.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    cautious_weight_decay: bool = False
    amsgrad: bool = False
    grad_clipping: GradientClippingConfig | None = None
    capturable: bool = False

    def build(self) -> AdamW:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        return AdamW(self)


class AdamW(_MomentRule):
    """AdamW (Loshchilov & Hutter, 2019): Adam whose weight decay scales the parameter directly,
    ``param = param * (1 - lr λ) - lr m̂ / (sqrt(v̂) + ε)``. Matches ``torch.optim.AdamW`` with the same
    settings (mind the different default ``weight_decay`` and ``epsilon``)."""

    def __init__(self, config: AdamWConfig) -> None:
        self.momentum = _AdaptiveMomentum(
            "AdamWConfig", config.beta_1, config.beta_2, config.epsilon, config.amsgrad, config.capturable
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
        """Every parameter of a device in one backend op (``burn_backend.optim.adam_step``); capturable,
        tensor ops with the step count on the device; with AMSGrad or cautious weight decay, ``step`` on
        each."""
        if self.momentum.amsgrad or self.cautious_weight_decay:
            return super().step_many(lr, tensors, grads, states)
        return self.momentum.step_many(lr, tensors, grads, states, self.weight_decay, True)
