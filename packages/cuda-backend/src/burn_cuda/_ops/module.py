"""Cuda's module ops: where CuPy does better than ``burn_backend.array``'s shared code."""

from __future__ import annotations

from burn_backend.array import ArrayModuleOps

from . import _conv


class ModuleOps(ArrayModuleOps):
    """Overrides of ``burn_backend.array``'s module ops, each with its reason."""

    # convolutions: im2col/col2im CUDA kernels around strided-batched cuBLAS GEMMs and a one-launch bias
    # (``_conv``), instead of the interface's slice-by-slice lowering
    _convolve = staticmethod(_conv.convolve)
    _convolve_transpose = staticmethod(_conv.convolve_adjoint)
    _convolve_weight_grad = staticmethod(_conv.convolve_weight_grad)
