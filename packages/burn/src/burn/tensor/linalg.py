"""Linear algebra on tensors (determinant, LU, QR, diagonals, products, norms): ``burn_backend.linalg``."""

from burn_backend.linalg import *  # noqa: F403
from burn_backend.linalg import __all__ as __all__
