"""Special functions CuPy's core lacks, as element-wise kernels over CUDA's math library."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._cupy import cp

_kernels: dict[str, Any] = {}


def _kernel(name: str, body: str) -> Any:
    kernel = _kernels.get(name)
    if kernel is None:
        kernel = _kernels[name] = cp.ElementwiseKernel("T x", "T y", body, f"burn_cuda_{name}")
    return kernel


def erf(x: Any) -> Any:
    """The error function through CUDA's ``erf`` (f32 and f64); f16 and bf16 compute in f32."""
    if x.dtype in (np.float32, np.float64):
        return _kernel("erf", "y = erf(x)")(x)
    return _kernel("erf", "y = erf(x)")(x.astype(np.float32)).astype(x.dtype)
