"""Multi-head attention (``MultiHeadAttention``): its input, output and autoregressive cache (the masks
it takes are made by ``_masks``)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from burn_backend import AttentionOptions, Device, DType, Kind, Tensor
from burn_backend import activation as A
from burn_backend import module as M

from ._config import Config
from ._dropout import Dropout, DropoutConfig
from ._initializer import Initializer
from ._linear import Linear, LinearConfig
from ._module import Module, is_training

__all__ = [
    "MhaCache",
    "MhaInput",
    "MhaOutput",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "TensorCache",
]


class MultiHeadAttentionConfig(Config):
    """Settings of a ``MultiHeadAttention`` layer.

    Args:
        d_model: the size of the inputs' and output's last dim (and of each projection).
        n_heads: the number of heads; it divides ``d_model`` (each head has ``d_model / n_heads`` dims).
        dropout: the probability of zeroing each attention weight while training.
        min_float: the score given to masked positions before the softmax on the composed path only
            (dropout in effect, or ``quiet_softmax``); Burn's ``-1e4``, and a much lower value may
            overflow to NaN in low precision. There a query whose every key is masked averages the
            values uniformly; the backend's attention op, used otherwise, gives it zeros.
        quiet_softmax: use the quiet softmax ``exp(x) / (1 + sum(exp(x)))``, which lets a head attend
            to nothing.
        initializer: how the weights and biases of the four projections are drawn; the default is
            PyTorch's ``nn.Linear`` rule (uniform on ``±1/sqrt(d_model)``), as in Burn.
        enable_query_bias, enable_key_bias, enable_value_bias, enable_output_bias: whether each
            projection has a bias.
    """

    d_model: int
    n_heads: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False
    initializer: Initializer = Initializer.KaimingUniform(gain=1 / math.sqrt(3.0))
    enable_key_bias: bool = True
    enable_value_bias: bool = True
    enable_query_bias: bool = True
    enable_output_bias: bool = True

    def init(self, device: Device) -> MultiHeadAttention:
        """A ``MultiHeadAttention`` layer on ``device``."""
        return MultiHeadAttention(self, device)


class _Masks:
    """The optional Bool masks of an attention input: padding and attention."""

    __slots__ = ("_mask_attn", "_mask_pad")
    _mask_attn: Tensor | None
    _mask_pad: Tensor | None

    @property
    def padding_mask(self) -> Tensor | None:
        """The padding mask, if any."""
        return self._mask_pad

    @property
    def attention_mask(self) -> Tensor | None:
        """The attention mask, if any."""
        return self._mask_attn


class MhaInput(_Masks):
    """The input of ``MultiHeadAttention.forward``: query, key and value, and optional masks.

    Masks are Bool tensors where ``True`` masks a position out (as Burn and PyTorch's bool masks).

    Args:
        query: ``[batch, seq_q, d_model]``.
        key: ``[batch, seq_k, d_model]``.
        value: ``[batch, seq_k, d_model]``.
        mask_pad: ``[batch, seq_k]``, the padded keys.
        mask_attn: ``[batch, seq_q, seq_k]``, the keys each query may not see.

    Example:
        >>> input = MhaInput.self_attn(x).mask_attn(generate_autoregressive_mask(2, 5, device))
    """

    __slots__ = ("key", "query", "value")

    def __init__(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
    ) -> None:
        self.query = query
        self.key = key
        self.value = value
        self._mask_pad = mask_pad
        self._mask_attn = mask_attn

    @classmethod
    def self_attn(cls, tensor: Tensor) -> MhaInput:
        """Self-attention: ``tensor`` (``[batch, seq, d_model]``) is the query, key and value."""
        return cls(tensor, tensor, tensor)

    def mask_pad(self, mask_pad: Tensor) -> MhaInput:
        """This input with the padding mask ``mask_pad`` (``[batch, seq_k]``, true for padding)."""
        return MhaInput(self.query, self.key, self.value, mask_pad, self._mask_attn)

    def mask_attn(self, mask_attn: Tensor) -> MhaInput:
        """This input with the attention mask ``mask_attn`` (``[batch, seq_q, seq_k]``, true where a
        query may not attend to a key)."""
        return MhaInput(self.query, self.key, self.value, self._mask_pad, mask_attn)


class MhaOutput:
    """The output of ``MultiHeadAttention``.

    ``weights`` may be computed lazily: when the layer ran the backend's fused attention op, the
    ``[batch, n_heads, seq_q, seq_k]`` weights are not materialized until ``weights`` is first read;
    they are then computed from the projected query and key the output keeps (with the same masking,
    so a query whose every key is masked gets zero weights), once, and stay differentiable with
    respect to the layer's inputs and parameters.

    Args:
        weights: the attention weights.
        context: the attended values.

    Attributes:
        weights: ``[batch, n_heads, seq_q, seq_k]``, the attention weights that produced the context
            (after dropout while training).
        context: ``[batch, seq_q, d_model]``, the attended values after the output projection.

    Example:
        >>> out = mha(MhaInput.self_attn(x))
        >>> out.context.dims(), out.weights.dims()  # weights computed here, on first read
        ([2, 5, 16], [2, 4, 5, 5])
    """

    __slots__ = ("_compute", "_context", "_weights")

    def __init__(self, weights: Tensor, context: Tensor) -> None:
        self._weights: Tensor | None = weights
        self._compute: Callable[[], Tensor] | None = None
        self._context = context

    @classmethod
    def _lazy(cls, weights: Callable[[], Tensor], context: Tensor) -> MhaOutput:
        """An output whose weights are ``weights()``, called on the first read."""
        output = cls.__new__(cls)
        output._weights = None
        output._compute = weights
        output._context = context
        return output

    @property
    def weights(self) -> Tensor:
        """``[batch, n_heads, seq_q, seq_k]``, the attention weights (computed on the first read where
        the layer ran the fused op)."""
        if self._weights is None:
            assert self._compute is not None
            self._weights = self._compute()
            self._compute = None  # the query and key it held are no longer needed
        return self._weights

    @property
    def context(self) -> Tensor:
        """``[batch, seq_q, d_model]``, the attended values after the output projection."""
        return self._context

    def __repr__(self) -> str:
        weights = "<not computed>" if self._weights is None else repr(self._weights)
        return f"MhaOutput(weights={weights}, context={self._context!r})"


class TensorCache:
    """One cached tensor of an autoregressive decoding step (Burn's ``TensorCache``): the result of a
    position-wise function over the positions seen so far."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: Tensor | None = None

    @classmethod
    def empty(cls) -> TensorCache:
        """A cache holding nothing yet."""
        return cls()

    def forward_autoregressive(
        self, tensor: Tensor, dim_cat: int, function: Callable[[Tensor], Tensor]
    ) -> Tensor:
        """``function`` over ``tensor`` (``[batch, seq, d]``), computing only its last position when the
        cache holds the ones before it; the result is concatenated along ``dim_cat`` and cached.

        Raises:
            ValueError: the cache holds ``n`` positions and ``tensor`` does not have ``n + 1``.
        """
        if self.value is None:
            result = function(tensor)
        else:
            cached = self.value.dims()[dim_cat]
            seq_length = tensor.dims()[1]
            if seq_length != cached + 1:
                raise ValueError(
                    f"forward_autoregressive: the cache holds {cached} positions, so the input must have "
                    f"{cached + 1}; got shape {tensor.dims()}"
                )
            result = Tensor.cat([self.value, function(tensor.narrow(1, seq_length - 1, 1))], dim_cat)
        self.value = result
        return result

    def forward_full(self, tensor: Tensor, function: Callable[[Tensor], Tensor]) -> Tensor:
        """``function(tensor)``, computed on the first call only (a fixed memory, as in cross-attention)."""
        if self.value is None:
            self.value = function(tensor)
        return self.value


class _LinearCache:
    """The cache of one projection: autoregressive along ``dim`` or computed once (``dim`` None)."""

    __slots__ = ("cache", "dim")

    def __init__(self, dim: int | None) -> None:
        self.cache = TensorCache()
        self.dim = dim

    def forward(self, tensor: Tensor, function: Callable[[Tensor], Tensor]) -> Tensor:
        if self.dim is None:
            return self.cache.forward_full(tensor, function)
        return self.cache.forward_autoregressive(tensor, self.dim, function)


class MhaCache:
    """The cache of ``MultiHeadAttention.forward_cache`` for autoregressive inference: the projections of
    the positions already decoded, so each step projects only the newest one.

    Make one with ``MhaCache.autoregressive()`` (self-attention) or
    ``MhaCache.autoregressive_cross_attention()`` (keys and values from a fixed memory, projected once).
    A cache belongs to one decoding run and one layer; it is updated in place.
    """

    __slots__ = ("key", "output", "query", "value")

    def __init__(
        self, query: _LinearCache, key: _LinearCache, value: _LinearCache, output: _LinearCache
    ) -> None:
        self.query = query
        self.key = key
        self.value = value
        self.output = output

    @classmethod
    def autoregressive(cls) -> MhaCache:
        """A cache for self-attention over a growing sequence."""
        return cls(_LinearCache(2), _LinearCache(2), _LinearCache(2), _LinearCache(1))

    @classmethod
    def autoregressive_cross_attention(cls) -> MhaCache:
        """A cache for attention from a growing sequence to a fixed memory (its keys and values are
        projected on the first step and reused)."""
        return cls(_LinearCache(2), _LinearCache(None), _LinearCache(None), _LinearCache(1))


class MultiHeadAttention(Module):
    """Multi-head attention, as in "Attention Is All You Need" (Burn's ``MultiHeadAttention``).

    The query, key and value are projected by ``query``, ``key`` and ``value`` (``Linear`` layers of
    ``d_model`` to ``d_model``, Burn's ``[d_input, d_output]`` weight layout), split into ``n_heads`` heads
    of ``d_k = d_model / n_heads`` dims, attended with ``softmax(q k^T / sqrt(d_k))``, merged and
    projected by ``output``. Numerically this is PyTorch's ``nn.MultiheadAttention(d_model, n_heads,
    batch_first=True)`` whose packed ``in_proj_weight`` is the transposed query, key and value weights
    stacked.

    The attention itself is the backend's attention op (``burn_backend.module.attention``, a fused
    kernel where the backend has one) with the padding and attention masks merged into one, whenever
    that computes the same thing: no dropout in effect (``dropout`` 0, or evaluating) and no
    ``quiet_softmax``. There a query whose every key is masked gets a zero context before the output
    projection (PyTorch gives NaN), and its weights are zeros. Otherwise the layer composes the product,
    the masking (masked scores set to ``min_float``, so a fully masked query averages every value
    uniformly), the softmax, dropout and the second product. While training (on an autodiff backend),
    dropout zeroes attention weights after the softmax, as PyTorch does. ``MhaOutput.weights`` is
    computed only when read after the fused op.

    Example:
        >>> mha = MultiHeadAttentionConfig(d_model=16, n_heads=4).init(device)
        >>> mha(MhaInput.self_attn(Tensor.ones([2, 5, 16], device))).context.dims()
        [2, 5, 16]
    """

    def __init__(self, config: MultiHeadAttentionConfig, device: Device) -> None:
        d_model, n_heads = config.d_model, config.n_heads
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(
                f"MultiHeadAttention: d_model and n_heads must be positive, got {d_model} and {n_heads}"
            )
        if d_model % n_heads:
            raise ValueError(f"MultiHeadAttention: n_heads ({n_heads}) must divide d_model ({d_model})")

        def projection(bias: bool) -> Linear:
            return LinearConfig(d_model, d_model, bias=bias, initializer=config.initializer).init(device)

        self.query = projection(config.enable_query_bias)
        self.key = projection(config.enable_key_bias)
        self.value = projection(config.enable_value_bias)
        self.output = projection(config.enable_output_bias)
        self.dropout: Dropout = DropoutConfig(config.dropout).init()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.min_float = float(config.min_float)
        self.quiet_softmax = bool(config.quiet_softmax)

    def forward(self, input: MhaInput) -> MhaOutput:
        """Attend from ``input.query`` to ``input.key``/``input.value``.

        Returns:
            ``MhaOutput``: ``context`` ``[batch, seq_q, d_model]`` and ``weights``
            ``[batch, n_heads, seq_q, seq_k]``.

        Raises:
            ValueError: shapes that do not fit (``d_model``, batch, key/value lengths, masks).
            TypeError: a mask that is not a Bool tensor.
        """
        batch, seq_q = self._check("forward", input)
        query = self._split_heads(self.query.forward(input.query))
        key = self._split_heads(self.key.forward(input.key))
        value = self._split_heads(self.value.forward(input.value))
        return self._attend(query, key, value, input, batch, seq_q, self.output.forward)

    def forward_cache(self, input: MhaInput, cache: MhaCache) -> MhaOutput:
        """``forward`` for autoregressive inference: ``input`` holds every position decoded so far (one
        more than the last call), and only the newest one is projected; ``cache`` is updated in place.

        Only the newest position of ``context`` is new: the earlier ones are returned from the cache, so
        the result matches ``forward`` with a causal mask (``generate_autoregressive_mask``).
        """
        batch, seq_q = self._check("forward_cache", input)
        query = cache.query.forward(input.query, lambda x: self._split_heads(self.query.forward(x)))
        key = cache.key.forward(input.key, lambda x: self._split_heads(self.key.forward(x)))
        value = cache.value.forward(input.value, lambda x: self._split_heads(self.value.forward(x)))
        return self._attend(
            query,
            key,
            value,
            input,
            batch,
            seq_q,
            lambda context: cache.output.forward(context, self.output.forward),
        )

    def _attend(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        input: MhaInput,
        batch: int,
        seq_q: int,
        project: Callable[[Tensor], Tensor],
    ) -> MhaOutput:
        if self.quiet_softmax or (self.dropout.prob > 0.0 and is_training(query)):
            return self._attend_composed(query, key, value, input, batch, seq_q, project)
        mask = _merged_mask(input, batch, seq_q)
        scale = 1.0 / math.sqrt(self.d_k)
        context = M.attention(query, key, value, mask, options=AttentionOptions(scale=scale))
        context = context.swap_dims(1, 2).reshape([batch, seq_q, self.d_model])
        return MhaOutput._lazy(lambda: _masked_weights(query, key, mask, scale), project(context))

    def _attend_composed(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        input: MhaInput,
        batch: int,
        seq_q: int,
        project: Callable[[Tensor], Tensor],
    ) -> MhaOutput:
        """Attention as separate ops, for what the attention op lacks: dropout and the quiet softmax."""
        # PyTorch scales the query before the product; doing the same keeps gradients within rounding
        scores = (query * (1.0 / math.sqrt(self.d_k))).matmul(key.swap_dims(2, 3))
        if input.padding_mask is not None:
            mask_pad = input.padding_mask
            scores = scores.mask_fill(mask_pad.unsqueeze_dim(1).unsqueeze_dim(1), self.min_float)
        if input.attention_mask is not None:
            mask_attn = input.attention_mask
            scores = scores.mask_fill(mask_attn.unsqueeze_dim(1), self.min_float)
        weights = A.quiet_softmax(scores, 3) if self.quiet_softmax else A.softmax(scores, 3)
        weights = self.dropout.forward(weights)
        context = weights.matmul(value).swap_dims(1, 2).reshape([batch, seq_q, self.d_model])
        return MhaOutput(weights=weights, context=project(context))

    def _split_heads(self, x: Tensor) -> Tensor:
        """``[batch, seq, d_model]`` to ``[batch, n_heads, seq, d_k]``."""
        batch, seq_length, _ = x.dims()
        return x.reshape([batch, seq_length, self.n_heads, self.d_k]).swap_dims(1, 2)

    def _check(self, op: str, input: MhaInput) -> tuple[int, int]:
        """The batch size and query length of ``input``, after checking every shape."""
        where = f"MultiHeadAttention.{op}"
        if not isinstance(input, MhaInput):
            raise TypeError(f"{where}: expected an MhaInput, got {type(input).__name__}")
        shapes = {}
        for name in ("query", "key", "value"):
            tensor = getattr(input, name)
            if not isinstance(tensor, Tensor) or tensor.kind is not Kind.FLOAT:
                raise TypeError(f"{where}: {name} must be a Float tensor, got {type(tensor).__name__}")
            dims = tensor.dims()
            if len(dims) != 3 or dims[2] != self.d_model:
                raise ValueError(
                    f"{where}: {name} must have shape [batch, seq, d_model={self.d_model}], got {dims}"
                )
            shapes[name] = dims
        batch, seq_q, _ = shapes["query"]
        _, seq_k, _ = shapes["key"]
        if shapes["key"][0] != batch or shapes["value"][:2] != [batch, seq_k]:
            raise ValueError(
                f"{where}: query {shapes['query']}, key {shapes['key']} and value {shapes['value']} must "
                "share the batch size, and key and value the length"
            )
        _check_mask(where, "mask_pad", input.padding_mask, [batch, seq_k], "[batch, seq_k]")
        _check_mask(where, "mask_attn", input.attention_mask, [batch, seq_q, seq_k], "[batch, seq_q, seq_k]")
        return batch, seq_q


def _merged_mask(input: MhaInput, batch: int, seq_q: int) -> Tensor | None:
    """The padding mask ``[batch, seq_k]`` and the attention mask ``[batch, seq_q, seq_k]`` of ``input``
    as one Bool mask broadcasting over the heads: ``[batch, 1, seq_q or 1, seq_k]``, true = masked."""
    pad, attn = input.padding_mask, input.attention_mask
    if attn is not None:
        attn = attn.unsqueeze_dim(1)
    if pad is None:
        return attn
    pad = pad.unsqueeze_dim(1).unsqueeze_dim(1)
    if attn is None:
        return pad
    return pad.expand(attn.dims()).bool_or(attn)


# the lowest finite value of each float dtype: masked scores must stay finite for the softmax's gradient
_LOWEST = {
    DType.F64: float(np.finfo(np.float64).min),
    DType.F32: float(np.finfo(np.float32).min),
    DType.F16: float(np.finfo(np.float16).min),
    DType.BF16: -3.3895313892515355e38,
}


def _masked_weights(query: Tensor, key: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """The weights of the attention op: ``softmax(q k^T * scale)`` with masked keys at zero, and zeros
    on a query whose every key is masked."""
    scores = (query * scale).matmul(key.swap_dims(2, 3))
    if mask is None:
        return A.softmax(scores, 3)
    # a finite fill (not -inf) gives a fully masked row a uniform softmax, not NaN, before the zeroing,
    # so no NaN reaches the gradient either
    scores = scores.mask_fill(mask, _LOWEST[scores.dtype])
    return A.softmax(scores, 3).mask_fill(mask, 0.0)


def _check_mask(where: str, name: str, mask: Tensor | None, expected: list[int], layout: str) -> None:
    if mask is None:
        return
    if not isinstance(mask, Tensor) or mask.kind is not Kind.BOOL:
        got = f"a tensor of dtype {mask.dtype}" if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"{where}: {name} must be a Bool tensor, got {got}")
    if mask.dims() != expected:
        raise ValueError(f"{where}: {name} must have shape {layout} = {expected}, got {mask.dims()}")
