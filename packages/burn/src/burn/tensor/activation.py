"""Activation functions on tensors: ``burn_backend.activation``."""

from burn_backend.activation import *  # noqa: F403
from burn_backend.activation import __all__ as __all__
