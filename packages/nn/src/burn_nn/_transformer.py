"""Transformers: ``PositionWiseFeedForward``, ``TransformerEncoder`` and ``TransformerDecoder`` (with their
layers, inputs and autoregressive caches), as Burn's ``burn::nn::transformer``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Generic, TypeVar

from burn_backend import Device, Tensor

from ._activation import Activation, ActivationConfig
from ._attention import MhaCache, MhaInput, MultiHeadAttention, MultiHeadAttentionConfig, TensorCache, _Masks
from ._config import Config
from ._dropout import Dropout, DropoutConfig
from ._initializer import Initializer
from ._linear import Linear, LinearConfig
from ._module import Module
from ._norm import LayerNorm, LayerNormConfig

__all__ = [
    "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "TransformerDecoder",
    "TransformerDecoderAutoregressiveCache",
    "TransformerDecoderConfig",
    "TransformerDecoderInput",
    "TransformerDecoderLayer",
    "TransformerDecoderLayerAutoregressiveCache",
    "TransformerEncoder",
    "TransformerEncoderAutoregressiveCache",
    "TransformerEncoderConfig",
    "TransformerEncoderInput",
    "TransformerEncoderLayer",
    "TransformerEncoderLayerAutoregressiveCache",
]

C = TypeVar("C", bound="_LayerCache")

_DEFAULT_INITIALIZER = Initializer.KaimingUniform(gain=1 / math.sqrt(3.0))


def _activation(where: str, activation: object) -> ActivationConfig:
    if not isinstance(activation, ActivationConfig):
        raise TypeError(
            f"{where}: activation must be an ActivationConfig (e.g. ActivationConfig.Relu()), "
            f"got {activation!r}"
        )
    return activation


def _check_sizes(where: str, d_model: int, d_ff: int, n_heads: int, n_layers: int) -> None:
    if min(d_model, d_ff, n_heads) <= 0 or n_layers < 0:
        raise ValueError(
            f"{where}: d_model, d_ff and n_heads must be positive and n_layers non-negative, got "
            f"d_model={d_model}, d_ff={d_ff}, n_heads={n_heads}, n_layers={n_layers}"
        )


# -- position-wise feed-forward ---------------------------------------------------------------------
class PositionWiseFeedForwardConfig(Config):
    """Settings of a ``PositionWiseFeedForward`` network.

    Args:
        d_model: the size of the input's and output's last dim.
        d_ff: the size of the hidden layer.
        dropout: the probability of zeroing each hidden value while training.
        initializer: how both ``Linear`` layers are drawn (default: PyTorch's ``nn.Linear`` rule).
        activation: the hidden activation (default: exact GELU, as Burn).
    """

    d_model: int
    d_ff: int
    dropout: float = 0.1
    initializer: Initializer = _DEFAULT_INITIALIZER
    activation: ActivationConfig = ActivationConfig.Gelu()

    def init(self, device: Device) -> PositionWiseFeedForward:
        """A ``PositionWiseFeedForward`` on ``device``."""
        return PositionWiseFeedForward(self, device)


class PositionWiseFeedForward(Module):
    """``linear_outer(dropout(activation(linear_inner(x))))``: the feed-forward block of a transformer
    layer, applied to each position of ``[..., d_model]`` inputs.

    Example:
        >>> ffn = PositionWiseFeedForwardConfig(d_model=8, d_ff=32).init(device)
        >>> ffn(Tensor.ones([2, 5, 8], device)).dims()
        [2, 5, 8]
    """

    def __init__(self, config: PositionWiseFeedForwardConfig, device: Device) -> None:
        if config.d_model <= 0 or config.d_ff <= 0:
            raise ValueError(
                f"PositionWiseFeedForward: d_model and d_ff must be positive, got {config.d_model} and "
                f"{config.d_ff}"
            )
        activation = _activation("PositionWiseFeedForward", config.activation)
        self.linear_inner: Linear = LinearConfig(
            config.d_model, config.d_ff, initializer=config.initializer
        ).init(device)
        self.linear_outer: Linear = LinearConfig(
            config.d_ff, config.d_model, initializer=config.initializer
        ).init(device)
        self.dropout: Dropout = DropoutConfig(config.dropout).init()
        self.activation: Activation = activation.init(device)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[..., d_model]`` to ``[..., d_model]``."""
        hidden = self.activation(self.linear_inner.forward(input))
        return self.linear_outer.forward(self.dropout.forward(hidden))


# -- encoder --------------------------------------------------------------------------------------------
class TransformerEncoderConfig(Config):
    """Settings of a ``TransformerEncoder``.

    Args:
        d_model: the size of each position's vector.
        d_ff: the hidden size of the feed-forward networks.
        n_heads: the attention heads; they divide ``d_model``.
        n_layers: the number of layers.
        dropout: the dropout probability (attention weights, feed-forward hidden values, residuals).
        attention_dropout, ffn_dropout, residual_dropout: the probability for that stage alone (``None``:
            ``dropout``).
        norm_first: normalize before each block (pre-norm) instead of after each residual (post-norm).
        quiet_softmax: attend with the quiet softmax (see ``MultiHeadAttentionConfig``).
        initializer: how the attention and feed-forward projections are drawn.
        activation: the feed-forward activation (see ``PositionWiseFeedForwardConfig``).
        layer_norm_eps: the layer norms' epsilon.
    """

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    attention_dropout: float | None = None
    ffn_dropout: float | None = None
    residual_dropout: float | None = None
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: Initializer = _DEFAULT_INITIALIZER
    activation: ActivationConfig = ActivationConfig.Gelu()
    layer_norm_eps: float = 1e-5

    def init(self, device: Device) -> TransformerEncoder:
        """A ``TransformerEncoder`` on ``device``."""
        return TransformerEncoder(self, device)


class TransformerEncoderInput(_Masks):
    """The input of ``TransformerEncoder.forward``: ``tensor`` ``[batch, seq, d_model]`` and optional Bool
    masks (true masks out): ``mask_pad`` ``[batch, seq]`` and ``mask_attn`` ``[batch, seq, seq]``.

    Example:
        >>> input = TransformerEncoderInput(x).mask_pad(padding.mask)
    """

    __slots__ = ("tensor",)

    def __init__(
        self, tensor: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None
    ) -> None:
        self.tensor = tensor
        self._mask_pad = mask_pad
        self._mask_attn = mask_attn

    def mask_pad(self, mask_pad: Tensor) -> TransformerEncoderInput:
        """This input with the padding mask ``mask_pad``."""
        return TransformerEncoderInput(self.tensor, mask_pad, self._mask_attn)

    def mask_attn(self, mask_attn: Tensor) -> TransformerEncoderInput:
        """This input with the attention mask ``mask_attn``."""
        return TransformerEncoderInput(self.tensor, self._mask_pad, mask_attn)


def _self_attention_input(tensor: Tensor, mask_pad: Tensor | None, mask_attn: Tensor | None) -> MhaInput:
    return MhaInput(tensor, tensor, tensor, mask_pad, mask_attn)


def _positionwise(slot: TensorCache | None, function: Callable[[Tensor], Tensor], tensor: Tensor) -> Tensor:
    """``function(tensor)``, or with a cache slot, computed for the newest position only."""
    return function(tensor) if slot is None else slot.forward_autoregressive(tensor, 1, function)


def _attend(mha: MultiHeadAttention, input: MhaInput, slot: MhaCache | None) -> Tensor:
    """The attention context, through the cache slot when there is one."""
    return (mha.forward(input) if slot is None else mha.forward_cache(input, slot)).context


def _norm_step(norm: LayerNorm, slot: TensorCache | None) -> Callable[[Tensor], Tensor]:
    """``norm``, computed for the newest position only when there is a cache slot."""
    return lambda tensor: _positionwise(slot, norm.forward, tensor)


def _feed_forward(
    config: TransformerEncoderConfig | TransformerDecoderConfig, dropout: float, device: Device
) -> PositionWiseFeedForward:
    return PositionWiseFeedForwardConfig(
        config.d_model,
        config.d_ff,
        dropout=dropout,
        initializer=config.initializer,
        activation=config.activation,
    ).init(device)


def _attention_config(
    config: TransformerEncoderConfig | TransformerDecoderConfig, dropout: float
) -> MultiHeadAttentionConfig:
    return MultiHeadAttentionConfig(
        config.d_model,
        config.n_heads,
        dropout=dropout,
        quiet_softmax=config.quiet_softmax,
        initializer=config.initializer,
    )


class _ResidualLayer(Module):
    """What encoder and decoder layers share: blocks in residual connections with dropout, each with a
    layer norm before it (pre-norm, ``norm_first``) or after the residual sum (post-norm)."""

    dropout: Dropout
    norm_first: bool

    def _residual(
        self,
        x: Tensor,
        block: Callable[[Tensor], Tensor],
        norm_before: Callable[[Tensor], Tensor],
        norm_after: Callable[[Tensor], Tensor],
    ) -> Tensor:
        """``x + dropout(block(norm_before(x)))`` with ``norm_first``, else
        ``norm_after(x + dropout(block(x)))``."""
        if self.norm_first:
            return x + self.dropout.forward(block(norm_before(x)))
        return norm_after(x + self.dropout.forward(block(x)))


L = TypeVar("L", bound=Module)


class _LayerStack(Module, Generic[L]):
    """What ``TransformerEncoder`` and ``TransformerDecoder`` share: ``n_layers`` layers and the
    settings they were made with."""

    def __init__(
        self,
        config: TransformerEncoderConfig | TransformerDecoderConfig,
        make_layer: Callable[[], L],
    ) -> None:
        name = type(self).__name__
        _check_sizes(name, config.d_model, config.d_ff, config.n_heads, config.n_layers)
        _activation(name, config.activation)
        self.layers: list[L] = [make_layer() for _ in range(config.n_layers)]
        self.d_model = config.d_model
        self.d_ff = config.d_ff
        self.n_heads = config.n_heads
        self.n_layers = config.n_layers
        self.dropout = float(config.dropout)
        self.norm_first = bool(config.norm_first)
        self.quiet_softmax = bool(config.quiet_softmax)

    def _check_cache(self, cache_layers: int) -> None:
        if cache_layers != len(self.layers):
            name = type(self).__name__
            raise ValueError(
                f"{name}.forward_autoregressive_inference: the cache has {cache_layers} "
                f"layers, the {name.removeprefix('Transformer').lower()} {len(self.layers)}"
            )


class _LayerCache:
    """The base of the per-layer autoregressive caches: the slots of the feed-forward network and of the
    first two norms."""

    __slots__ = ("norm_1", "norm_2", "pwff")

    def __init__(self) -> None:
        self.pwff = TensorCache()
        self.norm_1 = TensorCache()
        self.norm_2 = TensorCache()

    @classmethod
    def empty(cls: type[C]) -> C:
        """A cache holding nothing yet."""
        return cls()


class TransformerEncoderLayerAutoregressiveCache(_LayerCache):
    """The cache of one ``TransformerEncoderLayer`` for autoregressive inference (updated in place)."""

    __slots__ = ("mha",)

    def __init__(self) -> None:
        super().__init__()
        self.mha = MhaCache.autoregressive()


class TransformerEncoderAutoregressiveCache:
    """The cache of ``TransformerEncoder.forward_autoregressive_inference``, one per decoding run; make it
    with ``TransformerEncoder.new_autoregressive_cache``."""

    __slots__ = ("layers",)

    def __init__(self, n_layers: int) -> None:
        self.layers = [TransformerEncoderLayerAutoregressiveCache() for _ in range(n_layers)]


class TransformerEncoderLayer(_ResidualLayer):
    """One encoder layer: self-attention and a feed-forward network, each in a residual block.

    Post-norm (``norm_first=False``): ``x = norm_1(x + attn(x))``, ``x = norm_2(x + ffn(x))``. Pre-norm:
    ``x = x + attn(norm_2(x))``, ``x = x + ffn(norm_1(x))``. (Burn's naming: PyTorch's
    ``TransformerEncoderLayer`` calls the attention block's norm ``norm1`` in both orders.) Dropout
    applies to the attention weights, the feed-forward hidden values and each residual branch.
    """

    def __init__(self, config: TransformerEncoderConfig, device: Device) -> None:
        _check_sizes("TransformerEncoderLayer", config.d_model, config.d_ff, config.n_heads, 1)
        dropout = config.dropout
        attention_dropout = dropout if config.attention_dropout is None else config.attention_dropout
        self.mha: MultiHeadAttention = _attention_config(config, attention_dropout).init(device)
        self.pwff: PositionWiseFeedForward = _feed_forward(
            config, dropout if config.ffn_dropout is None else config.ffn_dropout, device
        )
        norm = LayerNormConfig(config.d_model, epsilon=config.layer_norm_eps)
        self.norm_1: LayerNorm = norm.init(device)
        self.norm_2: LayerNorm = norm.init(device)
        self.dropout: Dropout = DropoutConfig(
            dropout if config.residual_dropout is None else config.residual_dropout
        ).init()
        self.norm_first = bool(config.norm_first)

    def forward(
        self, input: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None
    ) -> Tensor:
        """``input`` ``[batch, seq, d_model]`` to ``[batch, seq, d_model]``; masks as
        ``TransformerEncoderInput``'s."""
        return self._forward(input, mask_pad, mask_attn, None)

    def forward_autoregressive_inference(
        self,
        input: Tensor,
        mask_pad: Tensor | None,
        mask_attn: Tensor | None,
        cache: TransformerEncoderLayerAutoregressiveCache,
    ) -> Tensor:
        """``forward`` computing only the newest position (``cache`` holds the others; see
        ``TransformerEncoder.forward_autoregressive_inference``)."""
        return self._forward(input, mask_pad, mask_attn, cache)

    def _forward(
        self,
        x: Tensor,
        mask_pad: Tensor | None,
        mask_attn: Tensor | None,
        cache: TransformerEncoderLayerAutoregressiveCache | None,
    ) -> Tensor:
        norm_1 = _norm_step(self.norm_1, None if cache is None else cache.norm_1)
        norm_2 = _norm_step(self.norm_2, None if cache is None else cache.norm_2)

        def attend(tensor: Tensor) -> Tensor:
            attention_input = _self_attention_input(tensor, mask_pad, mask_attn)
            return _attend(self.mha, attention_input, None if cache is None else cache.mha)

        def feed_forward(tensor: Tensor) -> Tensor:
            return _positionwise(None if cache is None else cache.pwff, self.pwff.forward, tensor)

        x = self._residual(x, attend, norm_2, norm_1)
        return self._residual(x, feed_forward, norm_1, norm_2)


class TransformerEncoder(_LayerStack[TransformerEncoderLayer]):
    """A stack of ``TransformerEncoderLayer``s (Burn's ``TransformerEncoder``; PyTorch's
    ``nn.TransformerEncoder`` with ``batch_first=True`` and no final norm).

    Example:
        >>> encoder = TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=2).init(device)
        >>> encoder(TransformerEncoderInput(Tensor.ones([2, 5, 16], device))).dims()
        [2, 5, 16]
    """

    def __init__(self, config: TransformerEncoderConfig, device: Device) -> None:
        super().__init__(config, lambda: TransformerEncoderLayer(config, device))

    def forward(self, input: TransformerEncoderInput) -> Tensor:
        """Encode ``input.tensor`` ``[batch, seq, d_model]``; returns ``[batch, seq, d_model]``."""
        x = input.tensor
        for layer in self.layers:
            x = layer.forward(x, input.padding_mask, input.attention_mask)
        return x

    def forward_autoregressive_inference(
        self, input: TransformerEncoderInput, cache: TransformerEncoderAutoregressiveCache
    ) -> Tensor:
        """``forward`` for generating one position at a time: ``input.tensor`` holds every position so
        far (one more than the last call with this ``cache``) and only the newest is computed, the
        others coming from ``cache`` (updated in place). The result equals ``forward`` with a causal mask
        (``generate_autoregressive_mask``); no mask is needed here."""
        self._check_cache(len(cache.layers))
        x = input.tensor
        for layer, layer_cache in zip(self.layers, cache.layers):
            x = layer.forward_autoregressive_inference(
                x, input.padding_mask, input.attention_mask, layer_cache
            )
        return x

    def new_autoregressive_cache(self) -> TransformerEncoderAutoregressiveCache:
        """An empty cache for ``forward_autoregressive_inference``."""
        return TransformerEncoderAutoregressiveCache(len(self.layers))


# -- decoder --------------------------------------------------------------------------------------------
class TransformerDecoderConfig(Config):
    """Settings of a ``TransformerDecoder``.

    Args:
        d_model: the size of each position's vector (target and memory).
        d_ff: the hidden size of the feed-forward networks.
        n_heads: the attention heads; they divide ``d_model``.
        n_layers: the number of layers.
        dropout: the dropout probability (attention weights, feed-forward hidden values, residuals).
        norm_first: normalize before each block (pre-norm) instead of after each residual (post-norm).
        quiet_softmax: attend with the quiet softmax (see ``MultiHeadAttentionConfig``).
        initializer: how the attention and feed-forward projections are drawn.
        activation: the feed-forward activation (see ``PositionWiseFeedForwardConfig``).
        layer_norm_eps: the layer norms' epsilon.
    """

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: Initializer = _DEFAULT_INITIALIZER
    activation: ActivationConfig = ActivationConfig.Gelu()
    layer_norm_eps: float = 1e-5

    def init(self, device: Device) -> TransformerDecoder:
        """A ``TransformerDecoder`` on ``device``."""
        return TransformerDecoder(self, device)


class TransformerDecoderInput:
    """The input of ``TransformerDecoder.forward``: ``target`` ``[batch, seq_t, d_model]``, ``memory``
    ``[batch, seq_m, d_model]`` (the encoder's output) and optional Bool masks (true masks out):
    ``target_mask_pad`` ``[batch, seq_t]``, ``target_mask_attn`` ``[batch, seq_t, seq_t]``,
    ``memory_mask_pad`` ``[batch, seq_m]``, ``memory_mask_attn`` ``[batch, seq_t, seq_m]``.

    Example:
        >>> input = TransformerDecoderInput(target, memory).target_mask_attn(
        ...     generate_autoregressive_mask(batch, seq_t, device))
    """

    __slots__ = (
        "_memory_mask_attn",
        "_memory_mask_pad",
        "_target_mask_attn",
        "_target_mask_pad",
        "memory",
        "target",
    )

    def __init__(
        self,
        target: Tensor,
        memory: Tensor,
        target_mask_pad: Tensor | None = None,
        target_mask_attn: Tensor | None = None,
        memory_mask_pad: Tensor | None = None,
        memory_mask_attn: Tensor | None = None,
    ) -> None:
        self.target = target
        self.memory = memory
        self._target_mask_pad = target_mask_pad
        self._target_mask_attn = target_mask_attn
        self._memory_mask_pad = memory_mask_pad
        self._memory_mask_attn = memory_mask_attn

    def _with(self, **changes: Tensor) -> TransformerDecoderInput:
        fields = {
            "target": self.target,
            "memory": self.memory,
            "target_mask_pad": self._target_mask_pad,
            "target_mask_attn": self._target_mask_attn,
            "memory_mask_pad": self._memory_mask_pad,
            "memory_mask_attn": self._memory_mask_attn,
        }
        fields.update(changes)
        return TransformerDecoderInput(**fields)  # type: ignore[arg-type]

    def target_mask_pad(self, mask_pad: Tensor) -> TransformerDecoderInput:
        """This input with the target padding mask."""
        return self._with(target_mask_pad=mask_pad)

    def target_mask_attn(self, mask_attn: Tensor) -> TransformerDecoderInput:
        """This input with the target (self-attention) mask."""
        return self._with(target_mask_attn=mask_attn)

    def memory_mask_pad(self, mask_pad: Tensor) -> TransformerDecoderInput:
        """This input with the memory padding mask."""
        return self._with(memory_mask_pad=mask_pad)

    def memory_mask_attn(self, mask_attn: Tensor) -> TransformerDecoderInput:
        """This input with the memory (cross-attention) mask."""
        return self._with(memory_mask_attn=mask_attn)

    def with_target(self, target: Tensor) -> TransformerDecoderInput:
        """This input with another target (what each decoder layer passes on)."""
        return self._with(target=target)

    @property
    def target_padding_mask(self) -> Tensor | None:
        """The target padding mask, if any."""
        return self._target_mask_pad

    @property
    def target_attention_mask(self) -> Tensor | None:
        """The target attention mask, if any."""
        return self._target_mask_attn

    @property
    def memory_padding_mask(self) -> Tensor | None:
        """The memory padding mask, if any."""
        return self._memory_mask_pad

    @property
    def memory_attention_mask(self) -> Tensor | None:
        """The memory attention mask, if any."""
        return self._memory_mask_attn


class TransformerDecoderLayerAutoregressiveCache(_LayerCache):
    """The cache of one ``TransformerDecoderLayer`` for autoregressive inference (updated in place)."""

    __slots__ = ("cross_attn", "norm_3", "self_attn")

    def __init__(self) -> None:
        super().__init__()
        self.cross_attn = MhaCache.autoregressive_cross_attention()
        self.self_attn = MhaCache.autoregressive()
        self.norm_3 = TensorCache()


class TransformerDecoderAutoregressiveCache:
    """The cache of ``TransformerDecoder.forward_autoregressive_inference``, one per decoding run; make it
    with ``TransformerDecoder.new_autoregressive_cache``."""

    __slots__ = ("layers",)

    def __init__(self, n_layers: int) -> None:
        self.layers = [TransformerDecoderLayerAutoregressiveCache() for _ in range(n_layers)]


class TransformerDecoderLayer(_ResidualLayer):
    """One decoder layer: self-attention over the target, cross-attention to the memory and a
    feed-forward network, each in a residual block.

    Post-norm (``norm_first=False``): ``x = norm_1(x + self_attn(x))``,
    ``x = norm_2(x + cross_attn(x, memory))``, ``x = norm_3(x + ffn(x))``. Pre-norm:
    ``x = x + self_attn(norm_3(x))``, ``x = x + cross_attn(norm_1(x), memory)``, ``x = x + ffn(norm_2(x))``
    (Burn's naming; PyTorch's ``TransformerDecoderLayer`` uses ``norm1``, ``norm2``, ``norm3`` in block
    order both ways).
    """

    def __init__(self, config: TransformerDecoderConfig, device: Device) -> None:
        _check_sizes("TransformerDecoderLayer", config.d_model, config.d_ff, config.n_heads, 1)
        attention = _attention_config(config, config.dropout)
        self.cross_attn: MultiHeadAttention = attention.init(device)
        self.self_attn: MultiHeadAttention = attention.init(device)
        self.pwff: PositionWiseFeedForward = _feed_forward(config, config.dropout, device)
        norm = LayerNormConfig(config.d_model, epsilon=config.layer_norm_eps)
        self.norm_1: LayerNorm = norm.init(device)
        self.norm_2: LayerNorm = norm.init(device)
        self.norm_3: LayerNorm = norm.init(device)
        self.dropout: Dropout = DropoutConfig(config.dropout).init()
        self.norm_first = bool(config.norm_first)

    def forward(self, input: TransformerDecoderInput) -> TransformerDecoderInput:
        """``input`` with its target replaced by this layer's output ``[batch, seq_t, d_model]``."""
        return self._forward(input, None)

    def forward_autoregressive_inference(
        self, input: TransformerDecoderInput, cache: TransformerDecoderLayerAutoregressiveCache
    ) -> TransformerDecoderInput:
        """``forward`` computing only the newest target position (``cache`` holds the others; see
        ``TransformerDecoder.forward_autoregressive_inference``)."""
        return self._forward(input, cache)

    def _forward(
        self, input: TransformerDecoderInput, cache: TransformerDecoderLayerAutoregressiveCache | None
    ) -> TransformerDecoderInput:
        norm_1 = _norm_step(self.norm_1, None if cache is None else cache.norm_1)
        norm_2 = _norm_step(self.norm_2, None if cache is None else cache.norm_2)
        norm_3 = _norm_step(self.norm_3, None if cache is None else cache.norm_3)

        def self_attend(tensor: Tensor) -> Tensor:
            self_input = _self_attention_input(tensor, input.target_padding_mask, input.target_attention_mask)
            return _attend(self.self_attn, self_input, None if cache is None else cache.self_attn)

        def cross_attend(tensor: Tensor) -> Tensor:
            cross_input = MhaInput(
                tensor, input.memory, input.memory, input.memory_padding_mask, input.memory_attention_mask
            )
            return _attend(self.cross_attn, cross_input, None if cache is None else cache.cross_attn)

        def feed_forward(tensor: Tensor) -> Tensor:
            return _positionwise(None if cache is None else cache.pwff, self.pwff.forward, tensor)

        x = self._residual(input.target, self_attend, norm_3, norm_1)
        x = self._residual(x, cross_attend, norm_1, norm_2)
        return input.with_target(self._residual(x, feed_forward, norm_2, norm_3))


class TransformerDecoder(_LayerStack[TransformerDecoderLayer]):
    """A stack of ``TransformerDecoderLayer``s (Burn's ``TransformerDecoder``; PyTorch's
    ``nn.TransformerDecoder`` with ``batch_first=True`` and no final norm).

    Example:
        >>> decoder = TransformerDecoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=2).init(device)
        >>> decoder(TransformerDecoderInput(target, memory)).dims()
        [2, 5, 16]
    """

    def __init__(self, config: TransformerDecoderConfig, device: Device) -> None:
        super().__init__(config, lambda: TransformerDecoderLayer(config, device))

    def forward(self, input: TransformerDecoderInput) -> Tensor:
        """Decode ``input.target`` attending to ``input.memory``; returns ``[batch, seq_t, d_model]``."""
        for layer in self.layers:
            input = layer.forward(input)
        return input.target

    def forward_autoregressive_inference(
        self, input: TransformerDecoderInput, cache: TransformerDecoderAutoregressiveCache
    ) -> Tensor:
        """``forward`` for generating one target position at a time: ``input.target`` holds every
        position so far (one more than the last call with this ``cache``) and only the newest is
        computed, the others (and the memory's keys and values) coming from ``cache`` (updated in place).
        The result equals ``forward`` with a causal target mask."""
        self._check_cache(len(cache.layers))
        for layer, layer_cache in zip(self.layers, cache.layers):
            input = layer.forward_autoregressive_inference(input, layer_cache)
        return input.target

    def new_autoregressive_cache(self) -> TransformerDecoderAutoregressiveCache:
        """An empty cache for ``forward_autoregressive_inference``."""
        return TransformerDecoderAutoregressiveCache(len(self.layers))
