"""LoRA: low-rank adapters on a model's ``Linear`` layers (``Module.apply_lora``), merged back into the
weights by ``Module.merge_lora``."""

from __future__ import annotations

import copy
import fnmatch
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from burn_backend import Tensor
from burn_backend import module as F

from ._config import Config
from ._dropout import dropout
from ._initializer import Initializer
from ._linear import Linear, LinearConfig
from ._module import Module, _items, is_training
from ._param import Param
from ._param_groups import ParamGroup

__all__ = ["LoraConfig", "LoraLinear", "lora_adapters"]

M = TypeVar("M", bound=Module)


class LoraConfig(Config):
    """Settings of LoRA adapters (``Module.apply_lora``), as PEFT's ``LoraConfig``.

    Each targeted ``Linear`` layer becomes a ``LoraLinear`` computing
    ``base(x) + dropout(x) @ A @ B * (alpha / rank)`` with ``A`` of shape ``[d_input, rank]`` (drawn as
    PyTorch draws a linear weight of fan-in ``d_input``: uniform on ``±1/sqrt(d_input)``) and ``B`` of
    ``[rank, d_output]`` (zeros, so that the model's outputs are unchanged at first). ``A`` and ``B`` are
    the transposes of PEFT's ``lora_A.weight`` and ``lora_B.weight``, as Burn's weights are of PyTorch's.

    Args:
        rank: the rank of the update (>= 1).
        alpha: the scale numerator (> 0): the update is multiplied by ``alpha / rank``.
        dropout: the probability of zeroing each input of the adapter while training, in ``[0, 1)``.
        targets: which ``Linear`` layers get adapters, as glob patterns on their dotted paths
            (``"*.query"``, ``"layers.[0-2].*"``); a pattern without ``.`` or wildcards also matches
            the last part of a path, as PEFT's ``target_modules`` names (``"value"`` matches
            ``layers.0.mha.value``). ``None`` (with no ``target_regex``): every ``Linear`` layer.
        target_regex: a regular expression the whole dotted path must match (``re.fullmatch``, as PEFT
            with a string ``target_modules``); layers matched by it or by ``targets`` get adapters.

    Example:
        >>> config = LoraConfig(8, 16.0, targets=("*.query", "*.value"))
        >>> model = model.apply_lora(config)  # doctest: +SKIP
    """

    rank: int
    alpha: float
    dropout: float = 0.0
    targets: tuple[str, ...] | None = None
    target_regex: str | None = None

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"LoraConfig: rank must be >= 1, got {self.rank}")
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError(f"LoraConfig: alpha must be a finite number > 0, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"LoraConfig: dropout must be in [0, 1), got {self.dropout}")
        if self.targets is not None and (not self.targets or any(not t for t in self.targets)):
            raise ValueError(f"LoraConfig: targets must be non-empty patterns, got {self.targets!r}")
        if self.target_regex is not None:
            try:
                re.compile(self.target_regex)
            except re.error as error:
                raise ValueError(f"LoraConfig: invalid target_regex {self.target_regex!r}: {error}") from None

    def targets_path(self, path: str) -> bool:
        """Whether the ``Linear`` layer at dotted ``path`` gets an adapter."""
        if self.targets is None and self.target_regex is None:
            return True
        if self.target_regex is not None and re.fullmatch(self.target_regex, path):
            return True
        return any(
            fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, "*." + pattern)
            for pattern in self.targets or ()
        )


class LoraLinear(Module):
    """A ``Linear`` layer with a low-rank adapter: ``x @ weight + bias + dropout(x) @ lora_a @ lora_b *
    scaling``, made by ``Module.apply_lora``.

    ``weight`` and ``bias`` keep the paths (and ids) they had in the ``Linear`` layer, so that the base
    model's record still fits; ``apply_lora`` freezes them. ``lora_a`` (``[d_input, rank]``) and
    ``lora_b`` (``[rank, d_output]``) train. ``merge()`` folds the adapter into a plain ``Linear``.

    Example:
        >>> layer = LoraLinear(LinearConfig(16, 4).init(device), LoraConfig(2, 4.0))
        >>> layer.lora_a.shape, layer.lora_b.shape, layer.scaling
        (Shape([16, 2]), Shape([2, 4]), 2.0)
    """

    def __init__(self, base: Linear, config: LoraConfig) -> None:
        if not isinstance(base, Linear):
            raise TypeError(f"LoraLinear: expected a Linear layer, got {type(base).__name__}")
        if not isinstance(config, LoraConfig):
            raise TypeError(f"LoraLinear: expected a LoraConfig, got {type(config).__name__}")
        d_input, d_output = base.weight.shape[0], base.weight.shape[1]
        device, dtype = base.weight.device, base.weight.dtype
        self.weight: Param = base.weight
        self.bias: Param | None = base.bias
        self.lora_a: Param = Initializer.KaimingUniform(gain=1 / math.sqrt(3.0)).init(
            [d_input, config.rank], device, fan_in=d_input, fan_out=config.rank, dtype=dtype
        )
        self.lora_b: Param = Initializer.Zeros().init([config.rank, d_output], device, dtype=dtype)
        self.scaling = float(config.alpha) / config.rank
        self.dropout = float(config.dropout)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[..., d_input]`` to ``[..., d_output]``."""
        base = F.linear(input, self.weight.val(), None if self.bias is None else self.bias.val())
        adapted = dropout(input, self.dropout, is_training(input)) if self.dropout > 0.0 else input
        update = F.linear(F.linear(adapted, self.lora_a.val(), None), self.lora_b.val(), None)
        return base + update * self.scaling

    def delta(self) -> Tensor:
        """The adapter's update of the weight, ``lora_a @ lora_b * scaling`` (``[d_input, d_output]``)."""
        return self.lora_a.val().matmul(self.lora_b.val()) * self.scaling

    def merge(self) -> Linear:
        """A plain ``Linear`` layer whose weight is ``weight + delta()`` (same id; its bias is this one's):
        the same function without dropout, at the cost of one matmul. Gradient flags are kept."""
        weight = self.weight.val().detach() + self.delta().detach()
        d_input, d_output = self.weight.shape[0], self.weight.shape[1]
        layer = LinearConfig(d_input, d_output, bias=self.bias is not None).init(self.weight.device)
        layer.weight = Param.initialized(weight, id=self.weight.id, require_grad=self.weight.require_grad)
        layer.bias = self.bias
        return layer


def _linears(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Module]]:
    """The ``Linear`` and ``LoraLinear`` layers of a module tree, by dotted path."""
    if isinstance(value, (Linear, LoraLinear)):
        yield ".".join(path), value
        return
    if isinstance(value, (Module, list, tuple, dict)):
        for name, item in _items(value, tensors=False):
            yield from _linears(item, (*path, name))


def _replace(value: Any, path: tuple[str, ...], swap: Callable[[str, Module], Module | None]) -> Any:
    """``value`` with each module ``swap`` returns a replacement for replaced (copies along the way)."""
    if isinstance(value, Module):
        replacement = swap(".".join(path), value)
        if replacement is not None:
            return replacement
        new = copy.copy(value)
        for name, item in list(_items(value, tensors=False)):
            object.__setattr__(new, name, _replace(item, (*path, name), swap))
        return new
    if isinstance(value, (list, tuple)):
        items = [_replace(item, (*path, str(i)), swap) for i, item in enumerate(value)]
        return items if isinstance(value, list) else type(value)(items)
    if isinstance(value, dict):
        return {key: _replace(item, (*path, str(key)), swap) for key, item in value.items()}
    return value


def _listing(paths: list[str]) -> str:
    shown = ", ".join(paths[:16])
    return shown + (f" (and {len(paths) - 16} more)" if len(paths) > 16 else "")


def apply_lora(module: M, config: object) -> M:
    """``module`` frozen, with its targeted ``Linear`` layers as ``LoraLinear`` (see
    ``Module.apply_lora``)."""
    if not isinstance(config, LoraConfig):
        raise TypeError(f"apply_lora: expected a LoraConfig, got {type(config).__name__}")
    layers = list(_linears(module))
    adapted = [path or "<root>" for path, layer in layers if isinstance(layer, LoraLinear)]
    if adapted:
        raise ValueError(
            f"apply_lora: {type(module).__name__} has LoRA adapters already ({_listing(adapted)}); "
            "merge_lora() them first"
        )
    paths = [path for path, _ in layers]
    targeted = {path for path in paths if config.targets_path(path)}
    if not targeted:
        wanted = ", ".join(
            [repr(t) for t in config.targets or ()]
            + ([f"regex {config.target_regex!r}"] if config.target_regex is not None else [])
        )
        found = f"its Linear layers are {_listing(paths)}" if paths else "it has no Linear layer"
        raise ValueError(f"apply_lora: {wanted} match no Linear layer of {type(module).__name__}; {found}")
    frozen = module.no_grad()

    def swap(path: str, layer: Module) -> Module | None:
        if path in targeted and isinstance(layer, Linear):
            return LoraLinear(layer, config)
        return None

    return _replace(frozen, (), swap)  # type: ignore[no-any-return]


def merge_lora(module: M) -> M:
    """``module`` with every ``LoraLinear`` merged into a plain ``Linear`` (see ``Module.merge_lora``)."""
    adapted = [path for path, layer in _linears(module) if isinstance(layer, LoraLinear)]
    if not adapted:
        raise ValueError(f"merge_lora: {type(module).__name__} has no LoRA adapters (apply_lora adds them)")

    def swap(path: str, layer: Module) -> Module | None:
        return layer.merge() if isinstance(layer, LoraLinear) else None

    return _replace(module, (), swap)  # type: ignore[no-any-return]


def lora_adapters(module: Module) -> ParamGroup:
    """The adapter parameters (``lora_a``, ``lora_b``) of ``module``'s ``LoraLinear`` layers, as a
    ``ParamGroup`` of their paths: it selects the same parameters in any model given the same
    ``apply_lora`` config, so that adapters alone save and load.

    Raises:
        ValueError: the module has no ``LoraLinear`` layer.

    Example:
        >>> record = model.into_record_group(lora_adapters(model))  # doctest: +SKIP
        >>> fresh = base.apply_lora(config)  # doctest: +SKIP
        >>> fresh = fresh.load_record_group(record, lora_adapters(fresh))  # doctest: +SKIP
    """
    paths = [
        f"{path}.{name}" if path else name
        for path, layer in _linears(module)
        if isinstance(layer, LoraLinear)
        for name in ("lora_a", "lora_b")
    ]
    if not paths:
        raise ValueError(
            f"lora_adapters: {type(module).__name__} has no LoRA adapters (apply_lora adds them)"
        )
    return ParamGroup.from_paths(paths)
