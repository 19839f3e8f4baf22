"""Cuda's scaled dot-product attention, forward and backward.

Three paths, the first that serves the case runs (the results are the op's either way; only the speed
differs):

1. f16 and bf16 through cuDNN's fused flash attention (``burn_cuda._cudnn._attention``), where the
   backend may use cuDNN and the case has no mask, bias or softcap (causal is served);
2. strided-batched cuBLAS GEMMs around one fused softmax row kernel (``_attention_kernels``): f32 and
   f64 in their dtype, f16 and bf16 in f32; masks and biases of any broadcasting shape, softcap,
   grouped-query attention, fully masked rows;
3. the shared version (``burn_backend.array``) for anything else (key sequences longer than
   ``_attention_kernels.MAX_KEYS``, other dtypes or ranks).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from burn_backend import AttentionBackward, AttentionOptions
from burn_backend.array import ArrayModuleOps

from .. import _cudnn
from . import _attention_kernels

Array = Any


class AttentionOps:
    """Cuda's overrides of ``ModuleOps.attention`` and ``attention_backward``."""

    runtime: ClassVar[Any]
    use_cudnn: bool

    def _cudnn_serves(
        self, query: Array, key: Array, value: Array, mask: Array | None, attn_bias: Array | None,
        options: AttentionOptions,
    ) -> bool:  # fmt: skip
        return self.use_cudnn and _cudnn.attention_served(query, key, value, mask, attn_bias, options.softcap)

    def attention(
        self,
        query: Array,
        key: Array,
        value: Array,
        mask: Array | None,
        attn_bias: Array | None,
        options: AttentionOptions,
    ) -> Array:
        """Scaled dot-product attention on ``[batch, heads, seq, dim]`` (the interface's
        ``ModuleOps.attention``): cuDNN for f16/bf16 where it serves, else cuBLAS GEMMs around one fused
        softmax kernel, else the shared version (see the module docstring)."""
        if self._cudnn_serves(query, key, value, mask, attn_bias, options):
            scale = _scale(options, query.shape[3])
            out = _cudnn.attention(query, key, value, scale, options.is_causal)
            if out is not None:
                return out
        out = _attention_kernels.attention(self.runtime, query, key, value, mask, attn_bias, options)
        if out is not None:
            return out
        shared: Any = ArrayModuleOps
        return shared.attention(self, query, key, value, mask, attn_bias, options)

    def attention_backward(
        self,
        query: Array,
        key: Array,
        value: Array,
        mask: Array | None,
        attn_bias: Array | None,
        options: AttentionOptions,
        output: Array,
        output_grad: Array,
    ) -> AttentionBackward:
        """The gradients of ``attention`` (the interface's ``ModuleOps.attention_backward``), by the
        same paths as the forward: cuDNN's (which runs the forward again for its softmax statistics),
        the GEMM path's (which recomputes the softmax weights), or the shared version's."""
        if self._cudnn_serves(query, key, value, mask, attn_bias, options):
            scale = _scale(options, query.shape[3])
            grads = _cudnn.attention_backward(
                query, key, value, scale, options.is_causal, output, output_grad
            )
            if grads is not None:
                return AttentionBackward(*grads, None)
        found = _attention_kernels.attention_backward(
            self.runtime, query, key, value, mask, attn_bias, options, output, output_grad
        )
        if found is not None:
            return found
        shared: Any = ArrayModuleOps
        result: AttentionBackward = shared.attention_backward(
            self, query, key, value, mask, attn_bias, options, output, output_grad
        )
        return result


def _scale(options: AttentionOptions, dim: int) -> float:
    return options.scale if options.scale is not None else 1.0 / math.sqrt(dim)
