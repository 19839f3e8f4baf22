"""Module functions on tensors (convolution, pooling, interpolation, attention, ...):
``burn_backend.module``."""

from burn_backend.module import *  # noqa: F403
from burn_backend.module import __all__ as __all__
